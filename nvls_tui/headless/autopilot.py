"""``nvls-tui autopilot TARGET ... [--mode observe|ask|auto] [limits] [--rounds N] [--json]``: issue 40.

Each round polls every target as ``check --watch`` does (over SSH, one poller process keeps each node's
connection and kernel-log cursor from one round to the next; simulated fleets, kept in this process so that a
repair's changes are seen, are polled here, carried across rounds; the cluster's views folded in and each node
diagnosed as ``check`` does), judges each node by the policy
(:mod:`nvls_tui.autopilot.policy`), and lets the limits decide (:mod:`nvls_tui.autopilot.decide`). In
``auto`` mode the chosen nodes get the same repair as ``repair --yes`` (one
:class:`~nvls_tui.runbook.session.Session`, the same door and audit log), and only a passing NVLS smoke test
counts as success. Every decision, the breaker's state each round, a trip, an escalation, a pause, a closing
of the breaker, is a record of the autopilot's audit log (``autopilot-RUN.jsonl``) and, with ``--json``,
a line on stdout. The state (breaker, budgets) is saved after every change, so a restart keeps both.

A pause file (``STATE_DIR/pause``) or SIGUSR1 (which writes that file) stops new repairs at once: a wave
not started yet does not start; repairs already running finish, restores and resumes included. Removing
the file resumes. SIGTERM (``systemctl stop``) ends the autopilot after the round in progress, its repairs
finished (restores and resumes included): a repair is never cut short by a stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import signal
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nvls_tui import paths
from nvls_tui.audit.log import AuditLog
from nvls_tui.autopilot.decide import Autopilot, Limits
from nvls_tui.autopilot.pilot import PAUSE_FILE, Drainer, Pilot, Polled, Repairer, smoke_passed
from nvls_tui.autopilot.policy import Policy, PolicyError, load_policy
from nvls_tui.autopilot.state import StateError, StateStore
from nvls_tui.backends.base import InvalidArgument
from nvls_tui.metrics.autopilot import AutopilotRound
from nvls_tui.poll.after_poll import AfterPoll
from nvls_tui.settings import AutopilotSettings, Settings

if TYPE_CHECKING:
    from nvls_tui.headless.polled_rounds import PolledRounds


def round_metrics(pilot: Pilot, hosts: Sequence[str]) -> AutopilotRound:
    """The autopilot as its metrics show it after a round of ``hosts`` (what ``--metrics-textfile`` and
    ``--metrics-listen`` publish)."""
    ap, now = pilot.autopilot, pilot.clock()
    return AutopilotRound(decided=dict(pilot.decided), tripped=ap.state.breaker.tripped,
                          in_window=len(ap.in_window(now)), bound=ap.limits.breaker_bound(len(hosts)),
                          budget_left={h: ap.limits.budget - ap.budget_used(h, now) for h in hosts},
                          paused=pilot.paused(), escalated=frozenset(ap.state.escalated), ended=time.time())


def _limits(a: AutopilotSettings) -> Limits:
    given: dict[str, Any] = {k: (int(v) if k in ("breaker_nodes", "max_parallel", "budget", "fm_starts") else float(v))
                             for k, v in a.limits.items()}
    return Limits(**given)


class _RoundsHere:
    """A round of ``check`` (:func:`~nvls_tui.headless.check.poll_round`) in this process: every target polled
    (fresh connections), carried, folded with the cluster's views (Slurm's too, where a cluster is configured),
    diagnosed. For simulated fleets (kept here, so a repair's changes are seen), ``--via slurm`` and a test's
    ``connect`` hook."""

    def __init__(self, settings: Settings, slurm) -> None:
        self.settings, self.slurm, self.after = settings, slurm, AfterPoll()

    def __call__(self) -> Polled:
        from nvls_tui.headless.check import poll_round

        results, _ = poll_round(self.settings, self.slurm, self.after)
        return results

    def close(self) -> None:
        """Nothing is kept between rounds."""


class _KeptRounds:
    """The rounds over one poller process (``headless/polled_rounds.py``, as ``check --watch``): a round after
    the first re-polls every node over the connection and from the kernel-log cursor the last round left,
    instead of a new SSH connection to every node every round. A process that ended is started again once,
    at the round that found it gone (that round then polls afresh); ended twice, the round raises.
    """

    def __init__(self, settings: Settings, slurm) -> None:
        self.settings, self.slurm, self.after = settings, slurm, AfterPoll()
        self.loop = asyncio.new_event_loop()
        self.rounds: PolledRounds | None = None

    def __call__(self) -> Polled:
        return self.loop.run_until_complete(self._next())

    async def _next(self) -> Polled:
        from nvls_tui.poll.client import PollerGone

        try:
            return await self._polled()
        except PollerGone as exc:
            _say(f"the poller process ended ({exc}); this round is read by a new one")
            await self._end()
            return await self._polled()

    async def _polled(self) -> Polled:
        from nvls_tui.headless.polled_rounds import PolledRounds

        if self.rounds is None:
            self.rounds = PolledRounds(self.settings, self.slurm, self.after)
            try:
                await self.rounds.start()
            except BaseException:
                await self._end()
                raise
        return await self.rounds.next(sys.stderr)

    async def _end(self) -> None:
        rounds, self.rounds = self.rounds, None
        if rounds is not None:
            await rounds.close()

    def close(self) -> None:
        """End the poller process (every exit path of the autopilot comes here)."""
        try:
            self.loop.run_until_complete(self._end())
        finally:
            self.loop.close()


def _poller(settings: Settings) -> _RoundsHere | _KeptRounds:
    """How the autopilot reads its rounds: over one poller process where every target is reached over SSH,
    else here, round by round."""
    from nvls_tui.targets import scheduler_from_settings

    slurm = scheduler_from_settings(settings)
    if settings.via == "slurm" or settings.connect is not None:
        return _RoundsHere(settings, slurm)
    return _KeptRounds(settings, slurm)


def _repairer(settings: Settings, audit_dir: str) -> Repairer:
    """``repair --yes`` of the chosen hosts: the same Session, door and audit log; success only where the
    outcome is repaired (or left alone) with a passing smoke test."""
    from nvls_tui.headless.repair import run_options
    from nvls_tui.runbook.session import Session
    from nvls_tui.targets import kube_from_settings, resolve_backends, scheduler_from_settings

    def repair(hosts: Sequence[str]) -> dict[str, bool]:
        backends = [b for b in resolve_backends(settings) if b.host in hosts]
        options = run_options(settings, backends)
        slurm = scheduler_from_settings(settings)
        schedulers = {b.host: slurm.hook(b.host) for b in backends if not b.simulated} if slurm else {}
        fleet = kube_from_settings(settings, backends)
        kubes = {b.host: k for b in backends if fleet is not None and (k := fleet.for_host(b.host)) is not None}
        session = Session({b.host: b for b in backends}, audit_dir=settings.audit_dir or audit_dir, options=options,
                          schedulers=schedulers, kube=kubes)

        async def run() -> list:
            try:
                started = session.start_repair(list(hosts), "parallel")
                return await session.repair(started, options, kind="repair")
            finally:
                await asyncio.gather(*(b.close() for b in backends), return_exceptions=True)

        outcomes = asyncio.run(run())
        return {o.host: smoke_passed(o) for o in outcomes}

    return repair


def _keep_simulated_fleets(settings: Settings) -> Settings:
    """``settings`` whose ``sim:`` fleets are loaded once and kept: every round polls, and every repair
    repairs, the same simulated nodes (a fleet loaded anew each round would forget each repair)."""
    if settings.connect is not None or not any(w.startswith("sim:") for w in settings.targets):
        return settings
    from nvls_tui.backends.simulated import sim_backends
    from nvls_tui.sim.fleet import load_fleet
    from nvls_tui.targets import resolve_backends

    fleets = [load_fleet(w, speed=settings.sim_speed) for w in settings.targets if w.startswith("sim:")]
    others = tuple(w for w in settings.targets if not w.startswith("sim:"))

    def connect(s: Settings) -> list:
        out: list = []
        for fleet in fleets:
            out += sim_backends(fleet, timeout=s.timeout, max_output=s.max_output)
        if others:
            out += resolve_backends(dataclasses.replace(s, targets=others, connect=None))
        return out

    return dataclasses.replace(settings, connect=connect)


def _drainer(settings: Settings, audit_dir: str) -> Drainer | None:
    """Takes a node whose budget is spent out of service for a person (:func:`nvls_tui.autopilot.take_out.escalate`):
    Slurm's drain and, on a Kubernetes cluster, the cordon and nvls-tui's annotation with the reason, each a typed
    change through the runbook's door under the node's lock, in its own audit log (``escalate-RUN.jsonl``). None
    where the targets are in neither a Slurm nor a Kubernetes cluster. Returns None where all was done, else what
    was not (in words)."""
    from nvls_tui.autopilot.take_out import escalate
    from nvls_tui.headless.repair import run_options
    from nvls_tui.runbook.engine import new_run_id
    from nvls_tui.runbook.lock import whoami
    from nvls_tui.targets import kube_from_settings, resolve_backends, scheduler_from_settings

    slurm = scheduler_from_settings(settings)
    if slurm is None and kube_from_settings(settings, resolve_backends(settings)) is None:
        return None

    def drain(host: str, reason: str) -> str | None:
        backend = next((b for b in resolve_backends(settings) if b.host == host), None)
        if backend is None:
            return f"{host} is not one of the targets now"
        hook = slurm.hook(host) if slurm is not None and not backend.simulated else None
        fleet = kube_from_settings(settings, [backend])
        kube = fleet.for_host(host) if fleet is not None else None
        if hook is None and kube is None:
            return "neither Slurm nor Kubernetes knows this node: a person takes it out of service"

        async def run() -> tuple[list[str], list[str], str]:
            try:
                return await escalate(backend, run_options(settings, [backend]), audit_dir=settings.audit_dir or audit_dir,
                                      run_id=new_run_id(), operator=f"nvls-tui autopilot ({whoami()})", reason=reason,
                                      scheduler=hook, kube=kube)
            finally:
                await backend.close()

        _, failed, _ = asyncio.run(run())
        return "; ".join(failed) if failed else None

    return drain


class _MetricsOut:
    """``--metrics-textfile`` and ``--metrics-listen``: the autopilot's families after every round (the same
    textfile and endpoint machinery as ``check``'s, ``headless/metrics_out.py``)."""

    def __init__(self, settings: Settings) -> None:
        from nvls_tui.headless.metrics_out import check_textfile, parse_listen, serve
        from nvls_tui.metrics.autopilot import LatestDecisions
        from nvls_tui.metrics.build import registry_of

        self.textfile = check_textfile(settings.metrics_textfile) if settings.metrics_textfile else None
        self.latest = LatestDecisions()
        self.registry = registry_of(self.latest)
        self._server: Any = None
        if settings.metrics_listen:
            self._server, _ = serve(*parse_listen(settings.metrics_listen), self.registry, "autopilot")

    def publish(self, pilot: Pilot, hosts: list[str]) -> None:
        from prometheus_client import write_to_textfile

        from nvls_tui.headless.metrics_out import MetricsSetupError

        self.latest.update(round_metrics(pilot, hosts))
        if self.textfile is not None:
            try:
                write_to_textfile(str(self.textfile), self.registry)
            except OSError as exc:
                raise MetricsSetupError(f"--metrics-textfile {self.textfile}: could not be written "
                                        f"({exc.strerror or exc})") from None

    def close(self) -> None:
        from nvls_tui.headless.metrics_out import stop

        if self._server is not None:
            stop(self._server)
            self._server = None


def _unusable(what: str, folder: str | Path, exc: OSError, verb: str = "") -> str:
    """One line naming the folder the autopilot needs and why it cannot have it (not a bare ``[Errno ..]``)."""
    where = f" ({exc.filename})" if exc.filename and str(exc.filename) != str(folder) else ""
    return (f"{what} {folder}{' ' + verb if verb else ''}: {exc.strerror or exc}{where}; --state-dir "
            f"(or --audit-dir) names another")


def _say(text: str) -> None:
    print(f"nvls-tui autopilot: {text}", file=sys.stderr, flush=True)


def run(settings: Settings) -> int:
    """The autopilot's rounds (or ``--close-breaker``). Exit: 0 stopped cleanly, 2 usage."""
    from nvls_tui.targets import read_targets

    a = settings.autopilot or AutopilotSettings()
    try:
        limits = _limits(a)
        policy = load_policy(a.policy) if a.policy else Policy()
    except (ValueError, PolicyError) as exc:
        _say(str(exc))
        return 2
    state_dir = Path(a.state_dir).expanduser() if a.state_dir else paths.state_dir() / "autopilot"
    store = StateStore(state_dir)
    try:
        state = store.load()
    except StateError as exc:
        _say(f"{exc}; refusing to start with a state it cannot read (a tripped breaker could be lost)")
        return 2
    audit_dir = settings.audit_dir or str(state_dir / "audit")
    run_id = f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"
    autopilot = Autopilot(limits, state)
    if a.close_breaker:
        try:
            created = AuditLog.create(audit_dir, run_id, kind="autopilot")
        except OSError as exc:
            _say(_unusable("the audit log cannot be written in", audit_dir, exc))
            return 2
        with created as audit:
            was = state.breaker.reason
            autopilot.close_breaker(time.time())
            audit.write({"event": "autopilot", "node": None, "action": "breaker-closed", "reason": "operator",
                         "message": f"closed by the operator (was: {was or 'not tripped'})"})
            store.save(state)
        _say(f"breaker closed (was: {was or 'not tripped'}); audit log: {audit.path}")
        return 0
    if settings.read_only and a.mode == "auto":
        _say("--read-only forbids --mode auto (observe or ask decide without changing a node)")
        return 2
    try:
        words, _ = read_targets(settings)
    except InvalidArgument as exc:
        _say(str(exc))
        return 2
    settings = _keep_simulated_fleets(dataclasses.replace(settings, targets=tuple(words), hosts_file=None,
                                                          demo=False))
    try:
        state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        _say(_unusable("the state directory", state_dir, exc, "cannot be made"))
        return 2
    pause_path = state_dir / PAUSE_FILE

    def pause_now() -> None:  # SIGUSR1: the pause file, so the pause outlives this process and is undone by rm
        pause_path.touch(mode=0o600)

    from nvls_tui.headless.metrics_out import MetricsSetupError

    try:  # a folder that cannot be written or an address in use: refused before any poll
        out = _MetricsOut(settings) if settings.metrics_textfile or settings.metrics_listen else None
    except MetricsSetupError as exc:
        _say(str(exc))
        return 2
    stop: list[str] = []  # SIGTERM (systemctl stop): end after the round in progress, its repairs finished
    before = signal.signal(signal.SIGUSR1, lambda *_: pause_now())
    before_term = signal.signal(signal.SIGTERM, lambda *_: stop.append("SIGTERM"))
    try:
        return _rounds(settings, a, autopilot, policy, store, audit_dir, run_id, limits, stop,
                       out.publish if out is not None else None)
    finally:
        signal.signal(signal.SIGUSR1, before)
        signal.signal(signal.SIGTERM, before_term)
        if out is not None:
            out.close()


def _rounds(settings: Settings, a: AutopilotSettings, autopilot: Autopilot, policy: Policy, store: StateStore,
            audit_dir: str, run_id: str, limits: Limits, stop: list[str],
            publish: Callable[[Pilot, list[str]], None] | None = None) -> int:
    """Round after round until ``--rounds`` (or a signal) ends them."""
    state = autopilot.state
    emit = (lambda r: print(json.dumps(r, default=str), flush=True)) if settings.json else _print_line
    poll = _poller(settings)
    with contextlib.ExitStack() as ending:
        ending.callback(poll.close)  # the poller process ends with the autopilot, however it ends
        try:
            audit = ending.enter_context(AuditLog.create(audit_dir, run_id, kind="autopilot"))
        except OSError as exc:
            _say(_unusable("the audit log cannot be written in", audit_dir, exc))
            return 2
        _say(f"audit log: {audit.path}")  # stderr: --json's stdout stays one record per line
        pilot = Pilot(autopilot, policy, store, audit, mode=a.mode, poll=poll,
                      repair=_repairer(settings, audit_dir), emit=emit, drain=_drainer(settings, audit_dir),
                      publish=publish)
        pilot.record({"node": None, "action": "started", "reason": "start", "message": f"limits {limits.words()}; policy "
                      f"{policy.source}; breaker {'tripped' if state.breaker.tripped else 'closed'}"})
        if a.mode == "auto":
            for host in autopilot.interrupted(time.time()):
                pilot.record({"node": host, "action": "repair-failed", "reason": "interrupted", "message":
                              "an earlier autopilot stopped during this repair: counted as failed"})
            pilot.save()
        pilot.flush()
        while (a.rounds is None or pilot.number < a.rounds) and not stop:
            began = time.monotonic()
            pilot.round()
            if a.rounds is not None and pilot.number >= a.rounds:
                break
            deadline = began + a.every
            while not stop and (left := deadline - time.monotonic()) > 0:
                time.sleep(min(left, 1.0))  # a SIGTERM ends the wait within a second
        if stop:
            pilot.record({"node": None, "action": "stopped", "reason": stop[0], "message": "stopped after the round "
                          "in progress; no repair was cut short"})
            pilot.flush()
    return 0


def _print_line(record: dict[str, Any]) -> None:
    """A decision as one line of text (node words are data: one_line)."""
    from nvls_tui.textsafe import one_line

    if record.get("action") == "round" and not record.get("running") and record.get("reason") == "breaker-closed":
        return  # a quiet round says nothing in text; --json and the audit log keep it
    node = f" {record['node']}" if record.get("node") else ""  # a record of the whole fleet names no node
    print(one_line(f"round {record['round']}{node}: {record['action']} ({record['reason']}) {record['message']}"),
          flush=True)


__all__ = ["PAUSE_FILE", "Pilot", "run", "smoke_passed"]
