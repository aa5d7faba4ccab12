"""The console's poller process (issue 30): real processes, real pipes, the real simulator in the child.

What crosses the boundary: every node's polls, numbered and in order (a lost or reordered one is
refused, not folded); a node's unchanged diagnosis as its moved fields only, rebuilt exactly; a poll
pause that holds there (acknowledged only once no poll of the node runs); a simulated node's action
run where its simulator lives, through the session, audited; and a process that is gone refuses
and leaves every node unknown. How the process ends with the console: tests/tmux/test_e2e_poller_exit.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import pickle
import signal
import time
from collections import defaultdict

import pytest

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.backends.via_poller import PollerHeldBackend
from nvls_tui.model import Verdict
from nvls_tui.poll import wire
from nvls_tui.poll.client import PollerClient, PollerFailed, PollerGone
from nvls_tui.poll.poller import NodePoller, PollResult
from nvls_tui.poll.worker import UpdateEncoder
from nvls_tui.poller.process import PollerSpec, console_poller
from nvls_tui.runbook.session import Session
from nvls_tui.settings import Settings
from nvls_tui.sim.fleet import load_fleet
from nvls_tui.targets import resolve_backends

DCGM = "nvidia-dcgm.service"


def unit(result: PollResult, name: str = DCGM) -> str | None:
    """The unit's ActiveState as the poll read it."""
    return next((u.active for u in result.state.services if u.name == name), None)


async def until(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


def running(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def settings(target: str = "sim:seed-incident", **kwargs) -> Settings:
    return Settings(command="console", targets=(target,), **kwargs)


class Collected:
    """Every poll the client hands on, per node, in the order it came."""

    def __init__(self) -> None:
        self.by_host: dict[str, list[PollResult]] = defaultdict(list)
        self.batches = 0

    def __call__(self, results: list[PollResult]) -> None:
        self.batches += 1
        for result in results:
            self.by_host[result.state.host].append(result)


@pytest.fixture
async def started():
    """Start a client for a spec; closed (and its process reaped) whatever the test does."""
    clients: list[PollerClient] = []

    async def start(spec: PollerSpec, client: PollerClient | None = None) -> tuple[PollerClient, Collected]:
        client = client or PollerClient(spec)
        clients.append(client)
        got = Collected()
        await client.start(got)
        return client, got

    yield start
    for client in clients:
        await client.close()
        if client.pid is not None:
            assert not os.path.exists(f"/proc/{client.pid}") or "zombie" in open(f"/proc/{client.pid}/status").read()


# ---- what crosses the pipe ------------------------------------------------------------------------
async def test_every_poll_of_every_node_arrives_numbered_in_order_from_the_process(started):
    client, got = await started(PollerSpec(settings(), interval=0.3, poll_timeout=10.0))
    assert client.hosts == tuple(f"gpu0{i}" for i in range(1, 9))
    assert client.pid is not None and client.pid != os.getpid()
    await until(lambda: all(len(got.by_host[h]) >= 4 for h in client.hosts), 30, "four polls of every node")
    for host in client.hosts:
        polls = got.by_host[host]
        assert client.seq[host] == len(polls)  # each one numbered 1, 2, 3... and none skipped (resolve checks)
        stamps = [p.state.polled_at for p in polls]
        assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
    assert got.by_host["gpu05"][-1].diagnosis.verdict is Verdict.BROKEN
    assert got.by_host["gpu01"][-1].diagnosis.verdict is Verdict.HEALTHY
    assert got.batches < client.polls  # batched: several polls fold in one go


async def test_an_update_out_of_its_nodes_order_is_refused_not_folded():
    fleet = load_fleet("sim:seed-incident/gpu01")
    poller = NodePoller(sim_backends(fleet)[0], interval=None, timeout=10.0)
    first, second, third = [await poller.poll_once() for _ in range(3)]
    encoder, client = UpdateEncoder(), PollerClient(None)
    one, two, three = encoder.encode(first), encoder.encode(second), encoder.encode(third)
    assert (one.seq, two.seq, three.seq) == (1, 2, 3)
    client.resolve(one)
    with pytest.raises(wire.WireError, match="poll 3 came after poll 1"):
        client.resolve(three)  # poll 2 was lost
    with pytest.raises(wire.WireError, match="a change came before any poll"):
        PollerClient(None).resolve(wire.Update("gpu01", 1, None, {"polled_at": 1.0}))  # nothing to apply it to


async def test_an_unchanged_node_travels_as_its_moved_fields_and_is_rebuilt_exactly():
    fleet = load_fleet("sim:seed-incident/gpu01,gpu05")
    encoder, client = UpdateEncoder(), PollerClient(None)
    for backend in sim_backends(fleet):
        poller = NodePoller(backend, interval=None, timeout=10.0)
        for n in range(3):
            result = await poller.poll_once()
            update = encoder.encode(result)
            if n == 0:
                assert update.result is result  # the first poll of a node travels whole
            else:
                assert update.result is None and "polled_at" in update.changes
                assert "gpus" not in update.changes  # the GPU table did not move: not sent again
                assert len(wire.encode(update)) < len(wire.encode(wire.Update(backend.host, 1, result))) / 5
            rebuilt = client.resolve(wire.Update(update.host, update.seq, update.result, update.changes, update.ok))
            assert rebuilt.state == result.state and rebuilt.diagnosis == result.diagnosis
            await asyncio.sleep(0.01)


async def test_a_batch_that_cannot_be_sent_ends_the_worker_instead_of_polling_unheard():
    from nvls_tui.model import NodeState
    from nvls_tui.model.node import Diagnosis
    from nvls_tui.poll.worker import PollWorker

    to_worker_r, to_worker_w = os.pipe()
    from_worker_r, from_worker_w = os.pipe()
    reader, writer = await wire.open_pipes(to_worker_r, from_worker_w)
    console, _ = await wire.open_pipes(from_worker_r, to_worker_w)
    worker = PollWorker({})
    serving = asyncio.create_task(worker.serve(reader, writer))
    assert isinstance(await wire.receive(console), wire.Hello)
    # A state that cannot be pickled stands for any bug on the way out: the batch is never sent.
    worker.post(PollResult(NodeState("gpu01", error=lambda: None), Diagnosis((), Verdict.UNREACHABLE), False))  # type: ignore[arg-type]
    with pytest.raises((pickle.PicklingError, AttributeError)):
        await asyncio.wait_for(serving, 5)
    writer.close()


# ---- the pause ------------------------------------------------------------------------------------
async def test_a_pause_holds_the_nodes_polls_in_the_process_until_it_is_resumed(started):
    client, got = await started(PollerSpec(settings(), interval=0.2, poll_timeout=10.0))
    await until(lambda: len(got.by_host["gpu05"]) >= 2, 20, "gpu05 polled twice")
    async with client.paused("gpu05"):
        held = len(got.by_host["gpu05"])
        others = len(got.by_host["gpu01"])
        client.poke("gpu05")
        await asyncio.sleep(1.5)  # seven intervals and a poke: nothing of gpu05 may poll
        await until(lambda: len(got.by_host["gpu01"]) >= others + 3, 10, "gpu01 to keep polling")
        assert len(got.by_host["gpu05"]) <= held + 1  # at most the poll already sent before the hold
        during = len(got.by_host["gpu05"])
        await asyncio.sleep(0.5)
        assert len(got.by_host["gpu05"]) == during
    client.poke("gpu05")
    await until(lambda: len(got.by_host["gpu05"]) > during, 10, "gpu05 to poll again after the resume")


async def test_the_pause_is_acknowledged_only_after_the_poll_in_flight_has_finished(started):
    # sim:wedged's node hangs in nvidia-smi: its poll takes the whole per-command timeout (2 s here).
    spec = PollerSpec(settings("sim:wedged/gpu-wedged01", timeout=2.0), interval=None, poll_timeout=30.0)
    client, got = await started(spec)
    began = time.monotonic()
    async with client.paused("gpu-wedged01"):
        waited = time.monotonic() - began
        arrived = len(got.by_host["gpu-wedged01"])
    assert waited >= 1.5, "the hold must wait for the poll that was reading the node"
    await until(lambda: len(got.by_host["gpu-wedged01"]) >= 1, 5, "the wedged poll")
    assert arrived <= 1


async def test_a_pause_given_up_before_its_acknowledgement_holds_nothing(started):
    spec = PollerSpec(settings("sim:wedged/gpu-wedged01", timeout=1.0), interval=None, poll_timeout=30.0)
    client, got = await started(spec)

    async def act() -> None:
        async with client.paused("gpu-wedged01"):
            pytest.fail("the hold was given up before it was acknowledged")

    waiting = asyncio.create_task(act())
    await asyncio.sleep(0.3)  # the first poll is still stuck in nvidia-smi
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    await until(lambda: len(got.by_host["gpu-wedged01"]) == 1, 10, "the first poll")
    client.poke("gpu-wedged01")
    await until(lambda: len(got.by_host["gpu-wedged01"]) == 2, 10, "a poll after the abandoned hold")


async def test_no_pause_and_no_call_once_the_process_is_gone(started):
    client, _ = await started(PollerSpec(settings(), interval=1.0, poll_timeout=10.0))
    assert client.pid is not None
    os.kill(client.pid, signal.SIGKILL)
    reason = await asyncio.wait_for(client.wait_closed(), 10)
    assert "the poller process ended (exit status -9)" in reason
    with pytest.raises(PollerGone, match="exit status -9"):
        async with client.paused("gpu05"):
            pytest.fail("an action must not start while its node's polls cannot be held")
    with pytest.raises(PollerGone):
        await client.call("gpu05", "run", ("nvidia-smi",))


async def test_a_target_the_process_cannot_build_is_one_line_not_a_traceback(started):
    with pytest.raises(PollerFailed) as failed:
        await started(PollerSpec(settings("sim:no-such-scenario"), interval=1.0, poll_timeout=10.0))
    assert "unknown simulated scenario 'no-such-scenario'" in str(failed.value)
    assert "Traceback" not in str(failed.value) and "\n" not in str(failed.value)


# ---- actions on simulated nodes: through the session, run where the simulator lives ----------------
async def test_a_unit_stopped_through_the_session_is_audited_and_seen_by_the_process_polls(started, tmp_path):
    s = settings(poll_interval=0.3)
    backends, client = console_poller(s, resolve_backends(s), interval=0.3, poll_timeout=10.0)
    by_host = {b.host: b for b in backends}
    assert isinstance(by_host["gpu05"], PollerHeldBackend)
    _, got = await started(client.spec, client)
    await until(lambda: got.by_host["gpu05"], 20, "gpu05's first poll")
    assert unit(got.by_host["gpu05"][-1]) == "active"
    paused: list[str] = []

    def pause(host: str):
        paused.append(host)
        return client.paused(host)

    session = Session(by_host, audit_dir=str(tmp_path), pause=pause)
    outcome = await session.unit("gpu05", "stop", DCGM)
    await session.close()
    assert outcome.ok, outcome.message
    assert paused == ["gpu05"]
    records = [json.loads(line) for p in tmp_path.glob("session-*.jsonl") for line in p.read_text().splitlines()]
    assert ["systemctl", "stop", DCGM] in [r.get("argv") for r in records]
    client.poke("gpu05")
    await until(lambda: unit(got.by_host["gpu05"][-1]) == "inactive", 10,
                "the process's poll to read the unit the action stopped")


async def test_a_simulated_nodes_stream_and_signal_refusal_come_from_the_process(started):
    s = settings()
    backends, client = console_poller(s, resolve_backends(s), interval=None, poll_timeout=10.0)
    gpu05 = {b.host: b for b in backends}["gpu05"]
    await started(client.spec, client)
    here = sim_backends(load_fleet("sim:seed-incident/gpu05"))[0]
    want = [line async for line in here.stream(("nvidia-smi", "-L"))]
    lines = [line async for line in gpu05.stream(("nvidia-smi", "-L"))]
    assert lines == want and len(lines) == 8
    assert gpu05.last_exit_status == 0
    result = await gpu05.run(("systemctl", "is-active", DCGM))
    assert result.stdout.strip() == "active" and result.exit_status == 0
    from nvls_tui.backends.base import ProcessGone, ProcessIdentity

    with pytest.raises(ProcessGone, match="process 999999 on gpu05 is gone"):
        await gpu05.signal(999999, signal.SIGTERM, ProcessIdentity(999999, "Mon Aug 10 10:00:00 2026", "x"))


async def test_a_process_that_cannot_be_started_is_one_line(started):
    with pytest.raises(PollerFailed, match="the poller process did not start: .*no-such-python"):
        await started(None, PollerClient(PollerSpec(settings(), 1.0, 10.0), python="/nonexistent/no-such-python"))


async def test_a_frozen_simulated_clock_moved_in_the_console_moves_in_the_process_too(started):
    s = settings(sim_speed=0.0)  # frozen: only the runbook's waits move it, in the console
    backends, client = console_poller(s, resolve_backends(s), interval=None, poll_timeout=10.0)
    gpu05 = {b.host: b for b in backends}["gpu05"]
    await started(client.spec, client)
    before = int((await gpu05.run(("date", "-u", "+%s"))).stdout)
    assert before == int(gpu05.fleet.clock.now())  # both processes read the same simulated time
    gpu05.fleet.clock.advance(3600)  # what a runbook's sleep does on a frozen clock
    after = int((await gpu05.run(("date", "-u", "+%s"))).stdout)
    assert after == before + 3600


async def test_the_process_polls_the_nodes_the_console_read_even_when_the_hosts_file_is_gone(started, tmp_path):
    hosts = tmp_path / "hosts"
    hosts.write_text("sim:seed-incident/gpu05\nsim:seed-incident/gpu06\n")
    s = Settings(command="console", hosts_file=str(hosts))
    backends, client = console_poller(s, resolve_backends(s), interval=None, poll_timeout=10.0)
    hosts.unlink()  # (or a pipe already read, or a file changed since): the console's nodes are these
    _, got = await started(client.spec, client)
    assert client.hosts == ("gpu05", "gpu06") == tuple(b.host for b in backends)
    await until(lambda: len(got.by_host) == 2, 20, "both nodes polled")


async def test_a_process_that_polls_other_nodes_than_the_console_shows_is_refused(started):
    client = PollerClient(PollerSpec(settings(), interval=None, poll_timeout=10.0), expect=("gpu05", "gpu01"))
    with pytest.raises(PollerFailed, match="polls other nodes than the console shows"):
        await started(client.spec, client)
    assert client.pid is not None and not running(client.pid)


# ---- the console on it ----------------------------------------------------------------------------
async def test_poll_now_in_the_console_reaches_the_process():
    from nvls_tui.console.app import NvlsApp
    from tests.waiting import first_poll

    app = NvlsApp.from_settings(settings(poll_interval=60.0))  # nothing polls again on its own for a minute
    async with app.run_test(size=(160, 48)):
        await first_poll(app, 30)
        assert app.poller is not None
        before = dict(app.poller.seq)
        app.poll_now("gpu05")
        await until(lambda: app.poller.seq["gpu05"] > before["gpu05"], 10, "gpu05 polled on request")
        assert {h: n for h, n in app.poller.seq.items() if h != "gpu05"} == {h: n for h, n in before.items()
                                                                             if h != "gpu05"}
        app.poll_now()
        await until(lambda: all(app.poller.seq[h] > before[h] for h in before if h != "gpu05"), 10, "every node")


async def test_the_console_polls_through_its_process_and_shows_every_node_unknown_when_it_dies():
    from nvls_tui.console.app import NvlsApp
    from tests.waiting import first_poll

    app = NvlsApp.from_settings(settings(poll_interval=0.5))
    assert app.poller is not None and app.pollers == {}
    async with app.run_test(size=(160, 48)):
        await first_poll(app, 30)
        assert app.verdict("gpu05") is Verdict.BROKEN and app.verdict("gpu01") is Verdict.HEALTHY
        pid = app.poller.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        await until(lambda: app.verdict("gpu01") is Verdict.UNREACHABLE, 10, "the nodes to read unknown")
        assert all(app.verdict(h) is Verdict.UNREACHABLE for h in app.backends)
        state = app.fleet.get("gpu01")
        assert state is not None and not state.reachable and "poller process ended" in (state.error or "")
        outcome = await app.session.unit("gpu05", "stop", DCGM)
        assert not outcome.ok and "poller process" in outcome.message
    assert not os.path.exists(f"/proc/{pid}")


# ---- SSH nodes: the process holds the connections, verifies the host keys; rounds for check --watch -----
def rig_settings(rig, known_hosts: str | None = None) -> Settings:
    from nvls_tui.settings import SshSettings

    ssh = SshSettings(identity=(str(rig.client_key),), known_hosts=known_hosts or str(rig.known_hosts),
                      ssh_config=str(rig.ssh_config))
    return Settings(command="check", targets=tuple(rig.targets()), ssh=ssh, timeout=10.0)


def connections(rig) -> set[int]:
    """The PIDs of the rig's per-connection sshd processes (``sshd: USER@notty``)."""
    return {p.pid for p in rig.session_processes() if "@" in " ".join(p.cmdline()) and "sshd" in p.name()}


async def test_rounds_over_ssh_read_every_node_once_each_over_the_connections_kept(rigs, started):
    from nvls_tui.poll.client import Rounds

    rig = rigs({"gpu01": ("seed-incident", "gpu01"), "gpu05": ("seed-incident", "gpu05")})
    client = PollerClient(PollerSpec(rig_settings(rig), interval=None, poll_timeout=30.0))
    rounds = Rounds(client)
    await client.start(rounds)
    first = await asyncio.wait_for(rounds.next(), 60)
    assert [r.state.host for r in first] == list(client.hosts) == rig.targets()
    verdicts = {r.state.host: r.diagnosis.verdict for r in first}
    assert verdicts == {rig.target("gpu01"): Verdict.HEALTHY, rig.target("gpu05"): Verdict.BROKEN}
    kept = connections(rig)
    assert len(kept) == 2
    second = await asyncio.wait_for(rounds.next(), 60)
    assert all(b.state.polled_at > a.state.polled_at for a, b in zip(first, second, strict=True))
    assert client.seq == dict.fromkeys(rig.targets(), 2)  # one poll of each node per round, no more
    assert connections(rig) == kept  # the same two connections: nothing reconnected between rounds
    await client.close()
    with pytest.raises(PollerGone):
        await rounds.next()


async def test_the_process_verifies_host_keys_as_the_console_does(rigs, started, tmp_path):
    rig = rigs({"gpu01": ("seed-incident", "gpu01")})
    strangers = tmp_path / "known_hosts"
    strangers.write_text("")  # no key of the rig is known: every node must be refused
    client, got = await started(PollerSpec(rig_settings(rig, str(strangers)), interval=None, poll_timeout=30.0))
    await until(lambda: got.by_host[rig.target("gpu01")], 60, "the refused poll")
    result = got.by_host[rig.target("gpu01")][0]
    assert not result.state.reachable and result.diagnosis.verdict is Verdict.UNREACHABLE
    assert "host key" in (result.state.error or "").lower()
