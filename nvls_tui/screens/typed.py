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
    from textual.message import Message

    from nvls_tui.app import NvlsApp


class _HasApp(Protocol):
    @property
    def app(self) -> App[Any]: ...


class _Posts(_HasApp, Protocol):
    @property
    def is_attached(self) -> bool: ...

    def post_message(self, message: Message) -> bool: ...


class OnConsole:
    """Mixin for the console's screens and widgets."""

    @property
    def nvls(self: _HasApp) -> NvlsApp:
        """The running console."""
        return cast("NvlsApp", self.app)

    def tell(self: _Posts, message: Message) -> None:
        """Post a past-tense message from here: this screen's handlers see it, then it bubbles to the app.

        A screen the operator already left posts it to the app itself: how an action ended is still said.
        """
        if not (self.is_attached and self.post_message(message)):
            self.app.post_message(message)


__all__ = ["OnConsole"]
