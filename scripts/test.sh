#!/usr/bin/env bash
# The whole test suite from a fresh clone: system packages, the venv, the linters, then pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/system-deps.sh
bash scripts/bootstrap.sh
echo "ruff: $(.venv/bin/ruff --version)"
.venv/bin/ruff check nvls_tui tests scripts snapshots bench
echo "mypy: $(.venv/bin/mypy --version)"
.venv/bin/mypy
exec .venv/bin/python -m pytest -q -n 2 "$@"
