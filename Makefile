# The README's two commands: `make demo` and `make test`. Everything else is for developers.
.PHONY: demo test test-fast bench venv lab lab-down

demo: venv
	.venv/bin/nvls-tui --demo

test:
	bash scripts/test.sh

# The edit loop: every test but the lab's, the loopback sshd's, the real terminal's and the real Prometheus'
# (tests/conftest.py marks each test with its tiers), on six workers: at two, half the two cores idled while tests
# waited (371 s against 231 s), and at four still 60 of 420 cpu-s (docs/performance.md). `make test` runs them all,
# with the linters.
# Byte-code may be written here (PYTHONDONTWRITEBYTECODE unset): pytest then keeps the rewritten test modules
# and plugins it would otherwise rebuild in each worker at every run (scripts/test.sh says more).
test-fast: venv
	env -u PYTHONDONTWRITEBYTECODE .venv/bin/python -m pytest -q -n 6 -m "not lab and not ssh and not tmux and not prometheus"

bench: venv
	bash scripts/bench.sh

venv:
	bash scripts/bootstrap.sh

# The console on two lab nodes over real SSH (root: systemd-nspawn containers); `make lab-down` after.
lab: venv
	.venv/bin/nvls-tui lab up
	.venv/bin/nvls-tui --ssh-config $${XDG_STATE_HOME:-$$HOME/.local/state}/nvls-tui/lab/ssh_config 'gpu[05-06]'

lab-down: venv
	.venv/bin/nvls-tui lab down
