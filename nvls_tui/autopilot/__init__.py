"""The autopilot's pure core (issue 40): which findings are safe to repair unattended, and the limits that
decide whether a repair starts now. Standard library, the model and NVIDIA's catalogues only: no poll, no
repair, no clock of its own (every call takes ``now``), so each limit is tested alone."""
