"""Keys typed ahead of the widget they are meant for, held until that widget has the focus.

Textual hands every key to whatever has the focus when the App takes the key off its queue. A key that
opens something (``r`` opens the repair plan, whose typed confirmation appears only once the dry run has
read the nodes) leaves the keys behind it with the old focus: ``r`` + ``gpu05`` in one burst (a paste, a
laggy SSH link) sent ``g`` and ``p`` to the fleet (cursor to the top, poll every node) and left the
confirmation empty. The opener starts a :class:`KeyHold`; the App keeps every key that arrives until the
hold's ``ready`` says the widget has the focus, then hands them to it in order (or drops them when it
will never come). ``docs/textual-key-order.md`` has the other half: keys that reach an Input together.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from textual import events

from nvls_tui.words import count, verb

Ready = Callable[[], bool | None]
"""``True``: the widget has the focus, replay the keys; ``False``: it will never come, drop them;
``None``: keep holding."""


@dataclass
class KeyHold:
    """Keys held for a widget that is not there yet.

    Attributes:
        ready: whether the widget has the focus (see :data:`Ready`).
        what: the widget in the operator's words, for the notice when keys are dropped.
        stop_at: keys that end what is replayed: they and every key after them are dropped (an Enter
            typed before the plan was on screen must not approve it).
        cancel: keys that end the hold at once: what was held is dropped and the key goes on (Esc leaves
            a plan still reading its nodes, as it always did).
        keys: what was held, in the order typed.
    """

    ready: Ready
    what: str
    stop_at: frozenset[str] = frozenset()
    cancel: frozenset[str] = frozenset({"escape", "ctrl+q"})
    keys: list[events.Key] = field(default_factory=list)

    @property
    def cancelled(self) -> bool:
        """A cancel key is among the keys held."""
        return any(k.key in self.cancel for k in self.keys)


def after_cancel(keys: Sequence[events.Key], cancel: frozenset[str]) -> tuple[list[events.Key], list[events.Key]]:
    """The keys to replay and the keys dropped once a cancel key goes on: it and what follows, and what
    came before it (typed for the widget it cancels)."""
    for i, key in enumerate(keys):
        if key.key in cancel:
            return list(keys[i:]), list(keys[:i])
    return [], list(keys)


def split_replay(keys: Sequence[events.Key], stop_at: frozenset[str]) -> tuple[list[events.Key], list[events.Key]]:
    """The keys to replay and the keys dropped: everything before the first ``stop_at`` key, and the rest."""
    for i, key in enumerate(keys):
        if key.key in stop_at:
            return list(keys[:i]), list(keys[i:])
    return list(keys), []


def dropped_notice(hold: KeyHold, dropped: Sequence[events.Key], delivered: bool) -> str:
    """The one sentence that says which typed keys were not used, and why.

    Args:
        hold: the hold that ended.
        dropped: the keys not used.
        delivered: True when the widget came (``dropped`` starts at a ``stop_at`` key), False when it never did.
    """
    if delivered:
        first = dropped[0].key.capitalize()
        after = f" (nor {count(len(dropped) - 1, 'key')} after it)" if len(dropped) > 1 else ""
        return f"{first} was typed before {hold.what} was shown, so it was not used{after}: read it, then press {first}."
    return f"{count(len(dropped), 'key')} typed for {hold.what} {verb(len(dropped), 'was')} not used: it was not shown."


__all__ = ["KeyHold", "Ready", "after_cancel", "dropped_notice", "split_replay"]
