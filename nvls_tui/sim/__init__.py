"""The simulated fleet: HGX nodes whose commands print exactly what the real tools print.

Entry points: :func:`nvls_tui.sim.fleet.load_fleet` (``sim:NAME[/NODESET]``), the scenarios in
:mod:`nvls_tui.sim.scenarios`, and :func:`nvls_tui.sim.shims.write_shims` for serving a node over a real sshd.
"""
