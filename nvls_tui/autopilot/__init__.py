"""The autopilot's core (issue 40): which findings are safe to repair unattended (``policy``), and the limits
that decide whether a repair starts now (``decide``), with what survives a restart (``state``). Those three are
pure: standard library, the model and NVIDIA's catalogues only, no poll, no repair, no clock of their own (every
call takes ``now``), so each limit is tested alone. ``take_out`` is the one module here that changes a node: a
node whose budget is spent, taken out of service through the runbook's door, under its lock."""
