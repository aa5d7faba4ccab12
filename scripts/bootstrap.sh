#!/usr/bin/env bash
# Create .venv and install nvls-tui with its test extras. Idempotent and quiet when nothing changed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
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
