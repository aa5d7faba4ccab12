#!/usr/bin/env bash
# Create .venv and install nvls-tui with its test extras. Idempotent and quiet when nothing changed.
set -euo pipefail
cd "$(dirname "$0")/.."

# The interpreter: $PYTHON when set; else the distribution's /usr/bin/python3 when it is 3.11 or newer and can make a
# venv; else python3 on PATH. Debian's and Ubuntu's CPython are built with profile-guided and link-time
# optimisation, pyenv's default build is not: on this project's two-core machines the same `make test-fast` took
# 295 cpu-s on Debian's 3.11 against 340-356 on a pyenv 3.11 (docs/performance.md).
new_enough() { "$1" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; }
if [ ! -x .venv/bin/python ]; then
    made=""
    if [ -z "${PYTHON:-}" ] && [ -x /usr/bin/python3 ] && new_enough /usr/bin/python3; then
        /usr/bin/python3 -m venv .venv 2>/dev/null && made=1 || rm -rf .venv   # no python3-venv: the next one
    fi
    if [ -z "$made" ]; then
        "${PYTHON:-python3}" -m venv .venv
    fi
fi
stamp=.venv/.nvls-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    .venv/bin/python -m pip install -q --upgrade pip >/dev/null
    .venv/bin/python -m pip install -q -e '.[test]'
    touch "$stamp"
fi
# Hypothesis builds its Unicode tables at the first text a process draws (~1.3 s of CPU) and keeps them in
# .hypothesis/unicode_data: built once here, not by each of the suite's workers at once on a fresh clone.
if [ ! -d .hypothesis/unicode_data ]; then
    .venv/bin/python - <<'PY'
from hypothesis import given, settings, strategies as st


@settings(max_examples=1, database=None)
@given(st.text(max_size=1))
def draw(_):
    pass


draw()
PY
fi
