"""The node's repair lock, with an owner and a heartbeat.

The lock is the directory ``/var/lib/nvls-tui/lock``: ``mkdir`` is atomic, so of two runs only one takes
it. Right after, the winner names itself in ``lock/owner.json`` (run id, bastion host, operator, tool
PID, since when, heartbeat), written to a temporary file and renamed. While the run lives it rewrites
the heartbeat every ``heartbeat_interval`` seconds (30), also while it waits for holders or for a long
reset, after checking that the owner named there is still itself.

Another run that finds the lock taken reads the owner and judges it (:func:`judge`) on **the node's own
clock**: the heartbeat's age is the node's ``date +%s`` less the owner file's modification time
(``stat -c %Y``), both read on the node, so no bastion's clock takes part (two bastions whose clocks
differ by minutes judge a lock alike):

* **live**: the owner file was rewritten less than ``lock_stale_after`` (5 minutes) ago on the node's
  clock and its process is not known to be gone. Nothing overrides it, not even ``--force``.
* **stale**: the owner file is older than that, or the owner ran on this very bastion (same host name,
  boot and PID namespace) and its process is gone. ``repair --restore --force`` takes it over: the
  owner file is replaced by the restorer's, and the take-over is a warning in the audit log naming
  the owner it replaced.
* **cannot be judged**: the file's time or the node's clock could not be read, or the file is dated
  in the node's future (the node's clock stepped back). Without ``--force`` it is refused, saying so;
  ``--force`` watches the owner file for two heartbeat intervals and takes the lock over only if it
  did not change meanwhile (a live run rewrites it every interval), else refuses it as live.
* **no owner** (an older nvls-tui's anonymous lock, or a run between its ``mkdir`` and its owner
  file): counts as stale only with ``--force`` and only if it still names no owner after one
  command timeout, the time a run has to name itself.

Judging is only half of it: a run whose lock was taken over (a paused run, a run behind a link that
stalled for minutes) must not go on. So every command a lock holder sends goes out behind the lock's
fence (:mod:`nvls_tui.poll.fence`, :meth:`NodeContext.run`): the node runs it only while the owner
file still names the run. The first refusal stops the run (``LockLost``), and it changes nothing more.
The lock's own commands go out unfenced: taking it, reading and judging its owner. The heartbeat's
rename and the release's removal of the owner file are fenced by the run's own lock, so neither can
touch an owner file that names another run.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import getpass
import json
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from nvls_tui.backends.base import BackendError, CommandResult
from nvls_tui.poll.fence import OWNER_FILE
from nvls_tui.poll.probe import LOCK_DIR
from nvls_tui.runbook.changes import (
    OWNER_TMP,
    GiveBackLock,
    Read,
    ReleaseLock,
    TakeLock,
    WriteOwner,
    lock_age_reads,
    read_owner,
)
from nvls_tui.runbook.context import LockLost, NodeContext, Refused
from nvls_tui.runbook.door import perform
from nvls_tui.runbook.outcome import NodeOutcome
from nvls_tui.textsafe import clean_deep, one_line

# How a run takes the lock and lets it go, as values: the run's program lists them (runbook/program.py), and
# :meth:`NodeLock.take` and :meth:`NodeLock.release` make them (the owner file's content filled in by the run).
TAKING: tuple[TakeLock, WriteOwner] = (TakeLock(), WriteOwner())
RELEASING: tuple[Read, ReleaseLock] = (read_owner(), ReleaseLock())

# The heartbeat's age on the node's clock: the owner file's mtime, then the node's time (seconds).
AGE_READS = lock_age_reads()
AGE_ARGVS = tuple(read.argv for read in AGE_READS)
# A file dated less than this into the node's future is a rounding of the two reads, not a clock step.
FUTURE_SLACK = 5.0
# The step name the heartbeat's commands carry: views and progress lines leave them out (the audit keeps them).
HEARTBEAT_STEP = "lock-heartbeat"

LIVE = "live"
STALE = "stale"
UNJUDGED = "cannot be judged"

# (node, run id) of every lock this process holds now: an owner naming this very process is alive exactly
# when it is here (a run that ended without releasing its lock, its link gone, is provably dead).
_HELD: set[tuple[str, str]] = set()


def _utc(now: dt.datetime | None = None) -> str:
    return (now or dt.datetime.now(dt.UTC)).isoformat(timespec="seconds")


def bastion_id() -> str:
    """This machine's boot and PID namespace ("" when unreadable): a PID means this process only here."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as handle:
            boot = handle.read().strip()
        return f"{boot}/{os.stat('/proc/self/ns/pid').st_ino}"
    except OSError:
        return ""


@dataclass(frozen=True, slots=True)
class LockOwner:
    """Who holds a node's lock (``lock/owner.json``).

    Attributes:
        run_id: the holding run's id.
        bastion: the host name of the machine nvls-tui runs on.
        operator: who runs it.
        tool_pid: the nvls-tui process (on the bastion).
        since: when it took the lock (UTC, ISO 8601, the bastion's clock).
        heartbeat: when it last said it is alive (same clock).
        bastion_id: the bastion's boot id and PID namespace (a PID is only checked where they match).
        beat: how many heartbeats the run has written (each rewrite of the file differs, even within a
            second: a watcher of a lock that cannot be judged sees every one).
    """

    run_id: str
    bastion: str
    operator: str
    tool_pid: int | None
    since: str
    heartbeat: str
    bastion_id: str = ""
    beat: int = 0

    def to_json(self) -> str:
        """The owner file's text."""
        return json.dumps({"tool": "nvls-tui", "run_id": self.run_id, "bastion": self.bastion,
                           "operator": self.operator, "tool_pid": self.tool_pid, "since": self.since,
                           "heartbeat": self.heartbeat, "bastion_id": self.bastion_id, "beat": self.beat},
                          indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> LockOwner | None:
        """Read an owner file (node text: cleaned); None when it is not one."""
        try:
            data: Any = clean_deep(json.loads(text))
        except (ValueError, TypeError):
            return None
        if not isinstance(data, dict) or not isinstance(data.get("run_id"), str) or not data["run_id"]:
            return None
        pid, beat = data.get("tool_pid"), data.get("beat")
        return cls(run_id=data["run_id"], bastion=str(data.get("bastion", "?")), operator=str(data.get("operator", "?")),
                   tool_pid=pid if isinstance(pid, int) and not isinstance(pid, bool) else None,
                   since=str(data.get("since", "?")), heartbeat=str(data.get("heartbeat", "")),
                   bastion_id=str(data.get("bastion_id", "")),
                   beat=beat if isinstance(beat, int) and not isinstance(beat, bool) else 0)

    def fields(self, status: str) -> dict[str, Any]:
        """The owner as ``repair --json``'s ``lock_owner`` (``status``: live or stale)."""
        return {"run_id": self.run_id, "bastion": self.bastion, "operator": self.operator, "tool_pid": self.tool_pid,
                "since": self.since, "heartbeat": self.heartbeat, "status": status}

    def words(self) -> str:
        """``run R (operator kim on bastion b1, nvls-tui PID 4242) since 2026-...``, one line."""
        return one_line(f"run {self.run_id} (operator {self.operator} on bastion {self.bastion}, nvls-tui PID "
                        f"{self.tool_pid if self.tool_pid is not None else '?'}) since {self.since}")


def me(run_id: str, operator: str, now: dt.datetime | None = None) -> LockOwner:
    """The owner this process writes for ``run_id``."""
    stamp = _utc(now)
    return LockOwner(run_id=run_id, bastion=socket.gethostname(), operator=operator, tool_pid=os.getpid(),
                     since=stamp, heartbeat=stamp, bastion_id=bastion_id())


def whoami() -> str:
    """The operator's login name ("unknown" when there is none)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` exists on this machine (a process we may not signal exists too)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # EPERM: it exists; anything else: cannot tell, so it may be alive
    return True


def gone_from_here(owner: LockOwner, node: str, here: str, here_id: str,
                   alive: Callable[[int], bool] = pid_alive) -> bool:
    """True when the owner of ``node``'s lock provably ran on this bastion and its process is gone (or,
    when that process is this one, its run no longer holds the lock)."""
    if not here_id or owner.bastion != here or owner.bastion_id != here_id or owner.tool_pid is None:
        return False
    if owner.tool_pid == os.getpid():
        return (node, owner.run_id) not in _HELD
    return not alive(owner.tool_pid)


def judge(age: float | None, stale_after: float, *, gone: bool, owner: LockOwner | None = None) -> tuple[str, str]:
    """Whether a lock's owner is live, stale or cannot be judged, and why, in words.

    Args:
        age: seconds since the owner file was last written, on the node's own clock (None: unreadable).
        stale_after: seconds without a heartbeat after which a lock is stale.
        gone: its process is provably gone (:func:`gone_from_here`).
        owner: the owner (only for the words).

    Returns:
        ``(LIVE|STALE|UNJUDGED, why)``. An age that cannot be read, or lies in the node's future, never
        makes a lock stale: a guard that cannot see refuses (``--force`` then watches for a heartbeat).
    """
    if gone:
        return STALE, f"its nvls-tui process {owner.tool_pid if owner else '?'} is gone from this bastion"
    if age is None:
        return UNJUDGED, "the age of its heartbeat could not be read on the node"
    if age < -FUTURE_SLACK:
        return UNJUDGED, (f"its owner file is dated {int(-age)} s in the future of the node's clock (the clock "
                          "stepped back?)")
    if age > stale_after:
        return STALE, (f"no heartbeat for {int(age // 60)} min {int(age % 60)} s on the node's clock "
                       f"(stale after {stale_after:g} s)")
    return LIVE, f"last heartbeat {max(0, int(age))} s ago on the node's clock"


def parse_age(stat: CommandResult, date: CommandResult) -> float | None:
    """The heartbeat's age from ``stat -c %Y`` and ``date +%s`` (None: either could not be read)."""
    try:
        if not stat.ok or not date.ok:
            return None
        return float(int(date.stdout.strip()) - int(stat.stdout.strip()))
    except ValueError:
        return None


class LockHeld(Refused):
    """The lock is taken. ``owner`` (None: it names no owner), ``status`` LIVE or STALE, ``why`` in words."""

    def __init__(self, message: str, owner: LockOwner | None, status: str, why: str) -> None:
        super().__init__(message)
        self.owner, self.status, self.why = owner, status, why


def _missing(result: CommandResult) -> bool:
    """The command's path is not there (coreutils' words; exit 1)."""
    return not result.ok and "No such file or directory" in (result.stderr or result.stdout)


class NodeLock:
    """One run's hold on one node's lock.

    Args:
        ctx: the run's context (the lock's own commands are its commands: announced and audited). While
            the lock is held, ``ctx.fence`` names this run, so every other command of the run is fenced.
        run_id: the run.
        operator: who runs it.
        on_lost: called once, with a sentence, when a heartbeat finds the lock is no longer this run's.
    """

    def __init__(self, ctx: NodeContext, run_id: str, operator: str,
                 on_lost: Callable[[str], None] | None = None) -> None:
        self.ctx = ctx
        self.run_id = run_id
        self.operator = operator
        self.on_lost = on_lost
        self.owner: LockOwner | None = None
        self.lost: str | None = None
        self._beating: asyncio.Task | None = None

    @property
    def held(self) -> bool:
        """This run took the lock and has not released it."""
        return self.owner is not None

    # ---- reading ---------------------------------------------------------------------------------------
    async def read_owner(self, ctx: NodeContext | None = None) -> tuple[bool, LockOwner | None]:
        """``(there, owner)``: whether an owner file is there and what it says (None: not an owner file).

        Raises:
            Refused: it cannot be read (a guard that cannot see refuses).
            BackendError: the node cannot be reached.
        """
        text = await self._owner_text(ctx)
        return text is not None, LockOwner.from_json(text) if text is not None else None

    async def _owner_text(self, ctx: NodeContext | None = None) -> str | None:
        """The owner file's text as it is now (None: not there).

        Raises:
            Refused: it cannot be read.
            BackendError: the node cannot be reached.
        """
        found = await (ctx or self.ctx).run(read_owner().argv, privileged=True, abortable=False, fenced=False,
                                            bookkeeping=True)
        if _missing(found):
            return None
        if not found.ok:
            raise Refused(f"the lock's owner file could not be read: {one_line(found.output.strip())[:200]}")
        return found.stdout

    async def read_age(self) -> float | None:
        """The heartbeat's age on the node's clock (None: unreadable)."""
        stat_read, date_read = AGE_READS
        try:
            stat = await self.ctx.run(stat_read.argv, privileged=True, abortable=False, fenced=False,
                                      bookkeeping=stat_read.bookkeeping)
            date = await self.ctx.run(date_read.argv, abortable=False, fenced=False, bookkeeping=date_read.bookkeeping)
        except BackendError:
            return None
        return parse_age(stat, date)

    async def held_by(self, owner: LockOwner | None) -> LockHeld:
        """The refusal that names the holder of the lock and says whether it is live (judged on the node)."""
        host = self.ctx.host
        if owner is None:
            return LockHeld(f"the lock of {host} ({LOCK_DIR}) names no owner (an older nvls-tui took it, or a run is "
                            f"taking it this moment); if no repair of {host} runs anywhere, "
                            f"`nvls-tui repair --restore --force {host}` takes it over", None, STALE, "no owner")
        gone = gone_from_here(owner, host, socket.gethostname(), bastion_id())
        age = None if gone else await self.read_age()
        status, why = judge(age, self.ctx.options.lock_stale_after, gone=gone, owner=owner)
        if status == LIVE:
            return LockHeld(f"another run holds the lock of {host}: {owner.words()}; {why}: that run is alive, so "
                            "this was refused (--force never overrides a live run)", owner, LIVE, why)
        if status == UNJUDGED:
            watch = 2 * self.ctx.options.heartbeat_interval + self.ctx.options.command_timeout
            return LockHeld(f"another run holds the lock of {host}: {owner.words()}; whether that run still runs cannot "
                            f"be judged: {why}; if no repair of {host} runs anywhere, `nvls-tui repair --restore --force "
                            f"{host}` watches the lock for {watch:g} s and takes it over only if no heartbeat "
                            "comes", owner, UNJUDGED, why)
        return LockHeld(f"another run holds the lock of {host}: {owner.words()}; the lock is stale ({why}); if that "
                        "run is gone, "
                        f"`nvls-tui repair --restore --force {host}` takes the lock over and puts back what it "
                        "stopped", owner, STALE, why)

    def refuse(self, held: LockHeld) -> LockHeld:
        """``held``, with its owner written into the run's outcome for the JSON (scripts read fields)."""
        self.ctx.outcome.lock_owner = held.owner.fields(held.status) if held.owner is not None else \
            {"run_id": None, "bastion": None, "operator": None, "tool_pid": None, "since": None, "heartbeat": None,
             "status": held.status}
        return held

    # ---- taking --------------------------------------------------------------------------------------
    async def take(self) -> None:
        """Take the lock and name this run as its owner; start the heartbeat.

        Raises:
            LockHeld: another run holds it (the message names the owner and whether it is live).
            Refused: the lock could not be taken or this run could not be named its owner.
        """
        made = await perform(self.ctx, TAKING[0])
        if not made.ok:
            if "File exists" not in made.output:
                raise Refused(f"the lock {LOCK_DIR} could not be taken: {one_line(made.output.strip())[:200]}")
            _, owner = await self.read_owner()
            raise self.refuse(await self.held_by(owner))
        mine = me(self.run_id, self.operator)
        if not await self._write(mine, self.ctx):
            # An empty lock no one owns would look like an older nvls-tui's: give it back at once.
            await perform(self.ctx, GiveBackLock(), abortable=False)
            raise Refused(f"this run could not name itself the owner of {LOCK_DIR}, so nothing was changed")
        self._hold(mine)

    async def take_over(self, held: LockHeld) -> None:
        """Replace a stale owner with this run (``--force``), after reading the owner once more.

        A lock that cannot be judged is watched first: two heartbeat intervals (and a command timeout)
        with no change to its owner file, else it is live.

        Raises:
            LockHeld: the lock is live now, or its owner changed since it was judged stale.
            Refused: the owner file could not be written.
        """
        if held.status not in (STALE, UNJUDGED):
            raise self.refuse(held)
        why = held.why
        if held.status == UNJUDGED:
            why = await self._watch(held)
        elif held.owner is None:
            # A run names itself within a command or two of its mkdir: give it one command timeout.
            await self.ctx.options.sleep(self.ctx.options.command_timeout)
        _, owner = await self.read_owner()
        again = await self.held_by(owner) if held.status == STALE else held
        if owner != held.owner or again.status != held.status:
            raise self.refuse(again if owner == held.owner else await self.held_by(owner))
        made = await perform(self.ctx, TakeLock(again=True), abortable=False)
        if not made.ok and "File exists" not in made.output:  # made.ok: released meanwhile, now ours plainly
            raise Refused(f"the lock {LOCK_DIR} could not be taken: {one_line(made.output.strip())[:200]}")
        mine = me(self.run_id, self.operator)
        if not await self._write(mine, self.ctx):
            raise Refused(f"this run could not name itself the owner of {LOCK_DIR}")
        self.ctx.note(f"took over the {held.status if held.status == STALE else 'unjudgeable'} lock of "
                      f"{self.ctx.host} from {owner.words() if owner else 'no named owner'} ({why}): --force",
                      "warning")
        self._hold(mine)

    async def _watch(self, held: LockHeld) -> str:
        """Watch a lock that cannot be judged for a heartbeat; the reason to take it over if none came.

        Raises:
            LockHeld: its owner file changed meanwhile (a live run beats): refused as live.
        """
        options = self.ctx.options
        watch = 2 * options.heartbeat_interval + options.command_timeout
        before = await self._owner_text()
        self.ctx.note(f"the lock of {self.ctx.host} cannot be judged ({held.why}): watching its owner file "
                      f"for {watch:g} s for a heartbeat before taking it over", "warning")
        await options.sleep(watch)
        after = await self._owner_text()
        if before != after:  # every heartbeat rewrites the file with a new beat count
            now = LockOwner.from_json(after or "")
            live = LockHeld(f"another run holds the lock of {self.ctx.host}: "
                            f"{now.words() if now else 'no readable owner'}; its owner file changed while it was "
                            f"watched for {watch:g} s: that run is alive, so this was refused", now, LIVE,
                            "its owner file changed while watched")
            raise self.refuse(live)
        return f"{held.why}; no heartbeat in {watch:g} s of watching"

    def _hold(self, mine: LockOwner) -> None:
        self.owner = mine
        self.ctx.fence = self.run_id  # from now on every command of the run is fenced by this lock
        self.ctx.whose_lock = self.whose
        _HELD.add((self.ctx.host, self.run_id))
        self._beating = asyncio.ensure_future(self._beat_forever())

    @staticmethod
    async def _write(owner: LockOwner, ctx: NodeContext) -> bool:
        """Write the owner file through the door; its rename goes out behind the fence where ``ctx`` holds one
        (the heartbeat's), so only while the file still names this run."""
        return (await perform(ctx, replace(TAKING[1], content=owner.to_json()), abortable=False)).ok

    # ---- the heartbeat -------------------------------------------------------------------------------
    def _heartbeat_context(self) -> NodeContext:
        """The heartbeat's commands: audited like the run's, but under a step of their own."""
        ctx = NodeContext(self.ctx.backend, self.ctx.options, self.ctx.emit, NodeOutcome(host=self.ctx.host),
                          durable=self.ctx.durable)
        ctx.step = HEARTBEAT_STEP
        ctx.fence = self.run_id
        return ctx

    async def beat(self, ctx: NodeContext | None = None) -> str | None:
        """Refresh the heartbeat if the lock is still this run's; else say what became of it.

        The new owner file replaces the old one only behind the fence, so a beat never overwrites an
        owner file that names another run (a take-over between the read and the write).

        Raises:
            BackendError: the node cannot be reached (the next beat tries again).
        """
        ctx = ctx or self._heartbeat_context()
        try:
            there, owner = await self.read_owner(ctx)
        except Refused:
            return None  # cannot see: keep beating; the fence stops the run's next command if it is gone
        if self.owner is None or owner is None or owner.run_id != self.run_id:
            return self._whose_words(there, owner)
        self.owner = replace(self.owner, heartbeat=_utc(), beat=self.owner.beat + 1)
        try:
            await self._write(self.owner, ctx)
        except LockLost:
            _, owner = await self.read_owner(ctx)
            return (f"the lock of {self.ctx.host} now belongs to {owner.words()}" if owner is not None else
                    f"the lock of {self.ctx.host} is no longer this run's")
        return None

    def _whose_words(self, there: bool, owner: LockOwner | None) -> str:
        return (f"the lock of {self.ctx.host} now belongs to {owner.words()}" if owner is not None else
                f"the lock of {self.ctx.host} names no readable owner now" if there else
                f"the lock of {self.ctx.host} is gone")

    async def whose(self) -> str | None:
        """Whose the lock is now, in words, where it is no longer this run's (None while it still is).

        Raises:
            Refused: the owner file cannot be read.
            BackendError: the node cannot be reached.
        """
        there, owner = await self.read_owner(self._heartbeat_context())
        return None if owner is not None and owner.run_id == self.run_id else self._whose_words(there, owner)

    async def _beat_forever(self) -> None:
        ctx = self._heartbeat_context()
        while True:
            await asyncio.sleep(self.ctx.options.heartbeat_interval)  # real seconds: the staleness is too
            try:
                lost = await self.beat(ctx)
            except (BackendError, Refused):
                continue  # a dropped link: the next beat tries again; silence long enough reads stale
            if lost:
                self.lost = lost
                _HELD.discard((self.ctx.host, self.run_id))
                self.ctx.lose_lock(f"{lost}")
                if self.on_lost is not None:
                    self.on_lost(lost)
                return

    async def stop_beating(self) -> None:
        """End the heartbeat (before the release, so no beat rewrites an owner file being removed)."""
        task, self._beating = self._beating, None
        _HELD.discard((self.ctx.host, self.run_id))  # no heartbeat, no live owner: this run is over
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, BackendError, Refused):
                await task

    # ---- releasing -----------------------------------------------------------------------------------
    async def other_owner(self) -> LockOwner | None:
        """The run that owns the lock now if it is not this one (None: this run, nobody, or unknown)."""
        try:
            _, owner = await self.read_owner()
        except (Refused, BackendError):
            return None
        return owner if owner is not None and owner.run_id != self.run_id else None

    async def release(self, attempts: int = 1) -> str | None:
        """Remove the lock if it is still this run's. Returns what could not be done (None: all well).

        A lock already gone is fine; one that now names another run is left to that run (with a note).
        The owner file is removed behind the fence, so never once it names another run.
        """
        await self.stop_beating()
        if self.owner is None:
            return None
        for attempt in range(max(attempts, 1)):
            try:
                found = await self.ctx.run(RELEASING[0].argv, privileged=True, abortable=False, fenced=False,
                                           bookkeeping=True)
                if _missing(found):
                    self.ctx.note(f"the lock of {self.ctx.host} was already gone: nothing to release")
                    self._let_go()
                    return None
                owner = LockOwner.from_json(found.stdout) if found.ok else None
                if owner is None or owner.run_id != self.run_id:
                    whose = owner.words() if owner else "no readable owner"
                    self.ctx.note(f"the lock of {self.ctx.host} now belongs to {whose}: left to it", "warning")
                    self._let_go()
                    return None
                try:
                    gone = await perform(self.ctx, RELEASING[1], abortable=False)
                except LockLost:
                    self.ctx.note(f"the lock of {self.ctx.host} was taken over as it was being released: left to "
                                  "its new owner", "warning")
                    self._let_go()
                    return None
                if gone.ok or _missing(gone):
                    self._let_go()
                    return None
                return f"the per-node lock ({one_line(gone.output.strip())[:120]})"
            except BackendError as exc:
                self.ctx.note(f"releasing the lock did not get through ({exc}); attempt {attempt + 1} of {attempts}",
                              "warning")
                await self.ctx.options.sleep(self.ctx.options.poll_interval)
        return "the per-node lock (the node could not be reached)"

    async def abandon(self) -> None:
        """Stop holding a lock that is no longer this run's, touching nothing on the node (it is another's)."""
        await self.stop_beating()
        self._let_go()

    def _let_go(self) -> None:
        """This run holds no lock any more: nothing of it is fenced now."""
        self.owner = None
        self.ctx.fence = None
        self.ctx.whose_lock = None


__all__ = ["AGE_ARGVS", "HEARTBEAT_STEP", "LIVE", "OWNER_FILE", "STALE", "UNJUDGED", "LockHeld", "LockOwner",
           "NodeLock", "OWNER_TMP", "RELEASING", "TAKING", "bastion_id", "gone_from_here", "judge", "me", "parse_age", "whoami"]
