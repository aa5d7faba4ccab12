# The README's two commands: `make demo` and `make test`. Everything else is for developers.
.PHONY: demo test bench venv

demo: venv
	.venv/bin/nvls-tui --demo

test:
	bash scripts/test.sh

bench: venv
	bash scripts/bench.sh

venv:
	bash scripts/bootstrap.sh
