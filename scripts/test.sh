#!/usr/bin/env bash
# The whole test suite from a fresh clone: system packages, the venv, the linters, then pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/system-deps.sh
bash scripts/bootstrap.sh
# pytest rewrites the asserts of every test module and of its plugins' packages (hypothesis, syrupy, ...)
# when it imports them, and caches the result only where Python may write byte-code: where
# PYTHONDONTWRITEBYTECODE is set (as on the machines that build this project) each of the two workers redid
# it at every run, about 10 s of CPU each before its first test. One collection writes the cache, on the
# second core while mypy has the first; the workers then read it.
env -u PYTHONDONTWRITEBYTECODE .venv/bin/python -m pytest --collect-only -q >/dev/null 2>&1 &
warm=$!
echo "ruff: $(.venv/bin/ruff --version)"
.venv/bin/ruff check nvls_tui tests scripts snapshots bench
echo "mypy: $(.venv/bin/mypy --version)"
.venv/bin/mypy
# Byte-code for the package once, before the tests: every simulated command behind the loopback sshd is a
# fresh `python -m nvls_tui.sim.shim_main` (hundreds per repair test), and where PYTHONDONTWRITEBYTECODE is set
# (as on the machines that build this project) each of them compiled the simulator from source again. The
# tests' own helpers (tests/waiting.py, tests/sshd_rig.py, ...) too: every worker and nested pytest imports them.
.venv/bin/python -m compileall -q nvls_tui tests snapshots bench >/dev/null
wait "$warm" || true  # a collection error shows in the run itself
# Four workers on two cores, at most two of them in lab groups at a time (tests/lab_slots.py): the lab tier is mostly
# waiting (boots, systemd, Slurm), and with every worker in a lab (loadgroup hands the big groups out first) a quarter
# of the CPU went idle; the other two workers run the CPU-bound tiers beside the labs (docs/performance.md).
exec env -u PYTHONDONTWRITEBYTECODE .venv/bin/python -m pytest -q -n 4 --lab-slots 2 "$@"
