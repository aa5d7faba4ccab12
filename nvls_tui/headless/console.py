"""``nvls-tui [TARGET ...]``: start the full-screen console."""

from __future__ import annotations

import argparse


def run(args: argparse.Namespace) -> int:
    """Start the Textual console on the given targets (the demo fleet when none)."""
    from nvls_tui.app import NvlsApp

    app = NvlsApp.from_args(args)
    app.run()
    return app.return_code or 0
