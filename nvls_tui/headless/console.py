"""``nvls-tui [TARGET ...]``: start the full-screen console."""

from __future__ import annotations

from nvls_tui.settings import Settings


def run(settings: Settings) -> int:
    """Start the Textual console on the given targets (the demo fleet when none)."""
    import sys

    if settings.autopilot is not None and settings.autopilot.mode != "ask":
        print("nvls-tui: --state-dir, --policy and the limits are the autopilot's: give --autopilot ask with them",
              file=sys.stderr)
        return 2
    if not (sys.stdout.isatty() and sys.stdin.isatty()):
        print("nvls-tui: the console needs a terminal (stdin or stdout is not one): `nvls-tui check` prints "
              "text, `--json` for scripts", file=sys.stderr)
        return 2
    from nvls_tui.console.app import NvlsApp

    app = NvlsApp.from_settings(settings)
    served = console_metrics(app, settings) if settings.metrics_listen else None  # refused before the screen
    try:
        app.run()
    finally:
        if served is not None:
            served.close()
    return app.return_code or 0


def console_metrics(app, settings: Settings):
    """``--metrics-listen`` for the console: ``/metrics`` from the fleet the console's poller keeps, each node
    with its latest diagnosis (a node not polled yet: what its empty state diagnoses, unknown)."""
    from nvls_tui.diagnosis import diagnose_guarded
    from nvls_tui.headless.metrics_out import LiveMetrics

    def results():
        diagnoses = app.diagnoses  # the console's own dict: read one node at a time, never iterated here
        return [(state, diagnoses.get(state.host) or diagnose_guarded(state)) for state in app.fleet.nodes]

    return LiveMetrics(settings, results)
