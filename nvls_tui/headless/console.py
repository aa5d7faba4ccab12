"""``nvls-tui [TARGET ...]``: start the full-screen console."""

from __future__ import annotations

from nvls_tui.settings import Settings


def run(settings: Settings) -> int:
    """Start the Textual console on the given targets (the demo fleet when none)."""
    import sys

    if not (sys.stdout.isatty() and sys.stdin.isatty()):
        print("nvls-tui: the console needs a terminal (stdin or stdout is not one): `nvls-tui check` prints "
              "text, `--json` for scripts", file=sys.stderr)
        return 2
    from nvls_tui.console.app import NvlsApp

    app = NvlsApp.from_settings(settings)
    app.run()
    return app.return_code or 0
