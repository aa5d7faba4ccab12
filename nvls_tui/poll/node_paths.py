"""Where nvls-tui keeps what it leaves on a node: plain constants, no imports.

:mod:`nvls_tui.poll.probe` names them for the product; the simulator and the lab's stand-ins (a Python process
started for each ``nvidia-smi`` or ``journalctl -k`` on a lab node, and for each of its daemons) import them from
here, without the probe's parsers and models: that import was most of each stand-in's start-up CPU.
"""

STATE_DIR = "/var/lib/nvls-tui"
RECORD_FILE = f"{STATE_DIR}/repair.json"
SMOKE_FILE = f"{STATE_DIR}/last-smoke.json"
# A simulated node (shims behind a real sshd) carries this file, so it is labelled as simulated.
SIMULATED_MARKER = f"{STATE_DIR}/SIMULATED"
LOCK_DIR = f"{STATE_DIR}/lock"
