#!/usr/bin/env bash
# The whole test suite from a fresh clone: system packages, the venv, then pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/system-deps.sh
bash scripts/bootstrap.sh
exec .venv/bin/python -m pytest -q -n 2 "$@"
