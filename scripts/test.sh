#!/usr/bin/env bash
# Set everything up, then run the whole test suite: Rust crates, then Python (unit + end-to-end).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
"$here/scripts/setup.sh"
for crate in plugin pcmsim; do
  if [ -f "$here/$crate/Cargo.toml" ]; then
    echo "test: cargo test in $crate" >&2
    (cd "$here/$crate" && cargo test --release -q)
  fi
done
cd "$here"
exec "$here/.venv/bin/pytest" -q -ra "$@"
