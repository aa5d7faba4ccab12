"""``nvls-tui report AUDIT_LOG [-o FILE]``: the Markdown incident report of one audit log."""

from __future__ import annotations

import sys

from nvls_tui.localfiles import write_private
from nvls_tui.report.markdown import NotAnAuditLog, report_from_file
from nvls_tui.settings import Settings


def run(settings: Settings) -> int:
    """Print (or write to ``-o FILE``) the report. Exit 0, or 2 when the log cannot be read or written."""
    try:
        text = report_from_file(settings.log or "")
    except OSError as exc:
        print(f"nvls-tui: cannot read audit log {settings.log}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except NotAnAuditLog as exc:
        print(f"nvls-tui: {exc}", file=sys.stderr)
        return 2
    if not settings.output:
        sys.stdout.write(text)
        return 0
    try:
        write_private(settings.output, text)  # 0600; a link planted at the path is replaced, not followed
    except OSError as exc:
        print(f"nvls-tui: cannot write {settings.output}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    return 0
