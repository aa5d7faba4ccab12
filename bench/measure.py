"""Run one client as a child process and measure it: wall time, CPU (user+sys) and peak RSS.

CPU and peak RSS come from the child's rusage (``wait4``): on Linux it covers the child *and* every
descendant it waited for (pdsh's and clush's ssh processes, ansible's forks), so the CPU column is
what the whole client side cost. ``ru_maxrss`` is the largest single process of that tree, not the
sum (pdsh runs 256 ssh clients of a few MB each; nvls-tui is one process).

The child is started through GNU ``time`` (``/usr/bin/time``, a small C program) rather than
straight from this Python process: Linux keeps the pre-``exec`` high-water RSS of a forked child,
so a tool forked from a 45 MB Python driver would report at least 45 MB whatever it used.

A client may print one JSON line starting with ``BENCH `` on stderr to report a phase it timed
itself (the re-poll drivers time their second round); that phase then replaces the wall and CPU
figures.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass, field


@dataclass
class Sample:
    """One measured run of one tool.

    Attributes:
        tool: tool name (table row).
        n: number of nodes.
        wall: seconds (the self-timed phase when the client reported one).
        cpu: client CPU seconds, user+sys (the phase's own when self-timed).
        rss_mb: peak resident set of the largest client process, MiB.
        status: exit status (negative: killed by that signal; -999: timed out).
        out_bytes: bytes the client printed on stdout.
        answered: nodes whose probe came back complete (counted by the tool's checker).
        extra: anything the client reported.
    """

    tool: str
    n: int
    wall: float
    cpu: float
    rss_mb: float
    status: int
    out_bytes: int = 0
    answered: int = 0
    extra: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        """JSON-ready form."""
        return asdict(self)


TIMED_OUT = -999
GNU_TIME = "/usr/bin/time"


def _read_time(path: str) -> tuple[float | None, float | None]:
    """(user+sys seconds, max RSS KiB) from GNU time's ``-o`` file; Nones when it wrote nothing.

    GNU time writes "Command exited with non-zero status N" first when the tool failed.
    """
    try:
        words = open(path).read().split("\n")
    except OSError:
        return None, None
    for line in reversed(words):
        parts = line.split()
        if len(parts) == 4:
            try:
                _, user, system, rss = (float(p) for p in parts)
            except ValueError:
                continue
            return user + system, rss
    return None, None


def run_child(tool: str, n: int, argv: list[str], *, env: dict[str, str] | None = None,
              timeout: float = 180.0, cwd: str | None = None) -> tuple[Sample, bytes, str]:
    """Run ``argv`` to completion (killed after ``timeout``) and measure it.

    Returns:
        The sample, the child's stdout and its stderr (text).
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile("r", suffix=".time") as usage_file:
        started = time.perf_counter()
        timed = [GNU_TIME, "-f", "%e %U %S %M", "-o", usage_file.name, "--", *argv]
        proc = subprocess.Popen(timed, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env, cwd=cwd,
                                start_new_session=True)
        deadline = started + timeout
        status = None
        usage = None
        while status is None:
            pid, raw, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                status = os.waitstatus_to_exitcode(raw)
                break
            if time.perf_counter() > deadline:
                # The whole session: pdsh/ansible children must not outlive the run.
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                _, raw, usage = os.wait4(proc.pid, 0)
                status = TIMED_OUT
                break
            time.sleep(0.01)  # polling our own child; bounded by ``timeout`` above
        wall = time.perf_counter() - started
        proc.returncode = status  # already reaped by wait4: keep Popen from waiting again
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read().decode(errors="replace")
        cpu, rss_kb = _read_time(usage_file.name)
    sample = Sample(tool=tool, n=n, wall=wall, cpu=cpu if cpu is not None else usage.ru_utime + usage.ru_stime,
                    rss_mb=(rss_kb if rss_kb is not None else usage.ru_maxrss) / 1024.0, status=status,
                    out_bytes=len(stdout))
    for line in stderr.splitlines():
        if line.startswith("BENCH "):
            report = json.loads(line[6:])
            sample.extra.update(report)
            sample.wall = float(report.get("wall", sample.wall))
            sample.cpu = float(report.get("cpu", sample.cpu))
    return sample, stdout, stderr


def self_report(**values) -> None:
    """Print the ``BENCH {json}`` line that :func:`run_child` reads (from a client script)."""
    import sys

    sys.stderr.write("BENCH " + json.dumps(values) + "\n")
    sys.stderr.flush()


def cpu_now() -> float:
    """This process's CPU seconds so far (user+sys, threads included)."""
    t = os.times()
    return t.user + t.system
