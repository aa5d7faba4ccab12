"""Textual bindings from the one table of key bindings (:mod:`nvls_tui.binding_table`).

The table feeds BINDINGS, the footer, the help screen and the palette. Screens take their
``BINDINGS`` from :func:`bindings_for`; nothing else declares keys.
"""

from __future__ import annotations

from dataclasses import replace

from textual.binding import Binding, BindingsMap, BindingType

from nvls_tui.binding_table import (
    SCOPES,
    SPECS,
    BindingSpec,
    current_key,
    destructive_actions,
    keymap_problem,
    spec,
    spec_of_action,
    specs_for,
)


def bindings_for(scope: str) -> list[BindingType]:
    """Textual ``Binding`` objects for a screen's (or the app's) ``BINDINGS``."""
    return [
        Binding(s.key, s.action, s.description, show=s.show, tooltip=s.tooltip, id=s.id, priority=s.priority)
        for s in specs_for(scope)
    ]


def relabel(bindings: BindingsMap, action: str, description: str) -> None:
    """Give every binding of ``action`` in ``bindings`` (a screen's own map) the footer label ``description``: a
    key that does something else in this mode says so (read-only: ``r`` shows the dry run, ``Dry run``)."""
    for key, found in bindings.key_to_bindings.items():
        bindings.key_to_bindings[key] = [replace(b, description=description) if b.action == action else b
                                         for b in found]


def back_shown() -> BindingType:
    """Esc Back in a screen's own footer (the app's binding is hidden: the fleet, the first screen, has no back);
    the same binding id, so a keymap that moves it moves this one too."""
    s = next(spec for spec in SPECS if spec.id == "app.back")
    return Binding(s.key, f"app.{s.action}", s.description, show=True, tooltip=s.tooltip, id=s.id)


def help_first() -> BindingType:
    """``?`` Help as a screen's own first binding: a footer lists the focused widget's and the screen's
    keys before the app's, so at 80 columns the app's ``? Help`` was cut off the end."""
    s = next(spec for spec in SPECS if spec.id == "app.help")
    return Binding(s.key, f"app.{s.action}", s.description, show=s.show, tooltip=s.tooltip, id=s.id)


__all__ = ["SCOPES", "SPECS", "BindingSpec", "back_shown", "bindings_for", "current_key", "destructive_actions", "help_first",
           "keymap_problem", "relabel", "spec", "spec_of_action", "specs_for"]
