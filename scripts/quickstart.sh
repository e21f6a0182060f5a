#!/usr/bin/env bash
# Set everything up, then run the quick-start study (runs/quickstart.toml).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
"$here/scripts/setup.sh"
exec "$here/.venv/bin/manylab" run "$here/runs/quickstart.toml" "$@"
