"""The console settles the garbage collector once, when most of its fleet has answered its first poll, and
gives back at its end what that settle made (console/app.py; tests/unit/test_collector_settle.py holds what a
settle and a release do to the collector)."""

from __future__ import annotations

from nvls_tui.console import app as console_app
from nvls_tui.console.app import NvlsApp
from tests.test_console_fakes import FakeBackend, fixed_clock, make_node
from tests.waiting import first_poll


async def test_the_first_poll_settles_the_collector_once_and_the_end_releases_what_it_froze(monkeypatch):
    calls: list[tuple[str, object]] = []

    def settle() -> bool:
        calls.append(("settle", None))
        return True   # as in a process of its own: the settle froze the heap

    monkeypatch.setattr(console_app, "settle_garbage_collector", settle)
    monkeypatch.setattr(console_app, "release_garbage_collector", lambda froze: calls.append(("release", froze)))
    backends = [FakeBackend(make_node(f"gpu0{i}")) for i in range(1, 5)]
    app = NvlsApp(backends, poll_interval=None, clock=fixed_clock)
    async with app.run_test(size=(100, 30)) as pilot:
        await first_poll(app)
        await pilot.pause()
        app.poll_now("gpu01")               # a later poll settles nothing more
        await first_poll(app)
        await pilot.pause()
        assert calls == [("settle", None)]
    assert calls == [("settle", None), ("release", True)]
