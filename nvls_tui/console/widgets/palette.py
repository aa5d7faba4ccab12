"""The console's colour roles: named here, coloured in ``styles/palette.tcss``.

Rich ``Text`` (DataTable cells, RichLog lines, Static content) cannot take CSS classes, so each
role is a Textual component class (``nvls--bad``) of the console's App, and :func:`load` reads the
Rich style of every role from the stylesheet once, when the console mounts. Code that builds
``Text`` looks the role up in :data:`STYLE` when it draws, never at import time, so it always gets
the loaded style. Until :func:`load` runs (pure unit tests that never start an app) every role is
the null style: text comes out uncoloured and nothing fails.

The roles belong to the App rather than to a mixin of the screens: Textual collects
``COMPONENT_CLASSES`` only along a class's DOMNode bases, so a plain mixin's would never be seen,
and one owner that is there before any screen is all the reading needs.

Roles carry the colour; emphasis that means "this matters more here" (bold, reverse) is added in
Python with Rich ``Style`` arithmetic (:func:`bold`), the way uncoloured text already is. The
verdict roles and ``selected`` are bold (and reversed) in the stylesheet itself: that is how a
verdict and a picked node always look.

Not to be confused with Textual's command palette (``ctrl+p``, :mod:`nvls_tui.console.commands`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.style import Style

if TYPE_CHECKING:
    from textual.dom import DOMNode

ROLES = (
    # A node's verdict (bold) and the grid before its first poll.
    "broken", "unreachable", "degraded", "healthy", "polling",
    # A cell's state: fine, worth a look, wrong, nothing to say, from a poll that is no longer current.
    "ok", "warn", "bad", "idle", "stale",
    # What is going on now (running steps, spinners), a command line, secondary words, quoted output.
    "accent", "command", "muted", "note",
    # A node picked for a repair in the fleet grid's host column.
    "selected",
)
PREFIX = "nvls--"
COMPONENT_CLASSES = {PREFIX + role for role in ROLES}

BOLD = Style(bold=True)
REVERSE = Style(reverse=True)

STYLE: dict[str, Style] = dict.fromkeys(ROLES, Style.null())
"""Role -> Rich style; filled in place by :func:`load` (so every importer sees the loaded styles)."""


def load(node: DOMNode) -> None:
    """Read every role's style from the stylesheet, through ``node``'s component classes.

    The roles are literal colours, not theme variables, so one reading holds for the whole session.

    Args:
        node: the console's App (it declares :data:`COMPONENT_CLASSES`; Textual applies its CSS,
            component classes included, before it is mounted).
    """
    # partial: the role's own colour and text style only, not merged with anything around it.
    STYLE.update({role: node.get_component_styles(PREFIX + role).partial_rich_style for role in ROLES})


def bold(role: str) -> Style:
    """The style of ``role``, in bold."""
    return STYLE[role] + BOLD


__all__ = ["BOLD", "COMPONENT_CLASSES", "PREFIX", "REVERSE", "ROLES", "STYLE", "bold", "load"]
