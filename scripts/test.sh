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
# Byte-code for the package once, before the tests: every simulated command behind the loopback sshd is a
# fresh `python -m nvls_tui.sim.shim_main` (hundreds per repair test), and where PYTHONDONTWRITEBYTECODE is set
# (as on the machines that build this project) each of them compiled the simulator from source again.
.venv/bin/python -m compileall -q nvls_tui >/dev/null
exec .venv/bin/python -m pytest -q -n 2 "$@"
