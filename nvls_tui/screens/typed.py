"""``self.nvls``: the console (:class:`~nvls_tui.app.NvlsApp`), typed, for screens and widgets.

Textual types ``self.app`` as ``App[object]``, so every use of the console's own attributes
(``fleet``, ``session``, ``backend_for``) read as an error to mypy, and an override of ``app``
cannot be typed (``App`` is invariant in its return type). Screens inherit :class:`OnConsole` and
say ``self.nvls`` instead; it is ``self.app``, cast once, here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, cast

if TYPE_CHECKING:
    from textual.app import App

    from nvls_tui.app import NvlsApp


class _HasApp(Protocol):
    @property
    def app(self) -> App[Any]: ...


class OnConsole:
    """Mixin for the console's screens and widgets."""

    @property
    def nvls(self: _HasApp) -> NvlsApp:
        """The running console."""
        return cast("NvlsApp", self.app)


__all__ = ["OnConsole"]
