"""The console screens' mixin: the services they were given, and how they tell what happened.

A screen gets its :class:`~nvls_tui.console.services.ConsoleServices` when it is made (the App makes
them; a screen passes them on to the screens it opens) and reads the fleet, the session and the
settings there, never through ``self.app``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from textual.app import App
    from textual.message import Message

    from nvls_tui.console.services import ConsoleServices


class _Posts(Protocol):
    @property
    def app(self) -> App[Any]: ...

    @property
    def is_attached(self) -> bool: ...

    def post_message(self, message: Message) -> bool: ...


class OnConsole:
    """Mixin for the console's screens.

    Attributes:
        services: what the screen was given when it was made.
    """

    services: ConsoleServices

    def tell(self: _Posts, message: Message) -> None:
        """Post a past-tense message from here: this screen's handlers see it, then it bubbles to the app.

        A screen the operator already left posts it to the app itself: how an action ended is still said.
        """
        if not (self.is_attached and self.post_message(message)):
            self.app.post_message(message)


__all__ = ["OnConsole"]
