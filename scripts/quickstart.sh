#!/usr/bin/env bash
# Set everything up, run the quick-start study (runs/quickstart.toml), write its report and say
# where it is. Extra arguments go to `manylab run` (e.g. -j 2).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
"$here/scripts/setup.sh" --quickstart
"$here/.venv/bin/manylab" run "$here/runs/quickstart.toml" "$@"
page=$("$here/.venv/bin/manylab" report "$here/runs/quickstart")
echo "quickstart: open $page in a browser (report.md beside it is the same in Markdown)"
