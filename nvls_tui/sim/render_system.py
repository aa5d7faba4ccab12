"""``systemctl`` and ``journalctl`` as systemd 249 (Ubuntu 22.04, the incident's nodes) prints them."""

from __future__ import annotations

import datetime as dt
import re
import time
from zoneinfo import ZoneInfo

from nvls_tui.sim import systemd
from nvls_tui.sim.journal_cursor import SEEK_FAILED, cursor_of, parse_cursor, seek
from nvls_tui.sim.processes import SNAPSHOT_PERIOD
from nvls_tui.sim.state import LogLine, Node, Unit

# systemctl show prints the type-specific properties (Service/Timer) before the Unit ones.
# systemd 249-252 print NRestarts after Result (and before the ExecMain* ones): the Service interface's order.
SERVICE_PROPS = ("Type", "Restart", "MainPID", "ControlPID", "Result", "NRestarts", "ExecMainStartTimestamp",
                 "ExecMainExitTimestamp", "ExecMainPID", "ExecMainCode", "ExecMainStatus")
TIMER_PROPS = ("Unit", "NextElapseUSecRealtime", "Result")
UNIT_PROPS = ("Id", "Names", "Description", "LoadState", "ActiveState", "FreezerState", "SubState",
              "FragmentPath", "UnitFileState", "UnitFilePreset", "StateChangeTimestamp", "ActiveEnterTimestamp",
              "ActiveExitTimestamp", "InactiveEnterTimestamp", "InactiveExitTimestamp", "CanStart", "CanStop")
JOURNAL_HINT = ("Hint: You are currently not seeing messages from other users and the system.\n"
                "      Users in groups 'adm', 'systemd-journal' can see all messages.\n"
                "      Pass -q to turn off this notice.\n")
STATUS_MARK = {"active": "●", "activating": "●", "failed": "×", "inactive": "○", "deactivating": "●"}
EXEC_CODES = {"exited": 1, "killed": 2, "dumped": 3}


def sd_time(ts: float | None, node: Node | None = None) -> str:
    """``Mon 2026-08-10 15:45:34 UTC`` (on ``node``'s clock, in its zone: ``... EST``); empty for never."""
    if not ts:
        return ""
    if node is None:
        return time.strftime("%a %Y-%m-%d %H:%M:%S UTC", time.gmtime(ts))
    return node.local_time(ts).strftime("%a %Y-%m-%d %H:%M:%S %Z")


def relative(seconds: float, future: bool = False) -> str:
    """systemd's ``5 days ago`` / ``3h 2min ago`` / ``14s ago`` / ``35s left``."""
    s = int(max(0, seconds))
    d, rem = divmod(s, 86400)
    h, rem = divmod(rem, 3600)
    m, sec = divmod(rem, 60)
    if d:
        text = f"{d} day{'s' if d > 1 else ''}" + (f" {h}h" if h else "")
    elif h:
        text = f"{h}h" + (f" {m}min" if m else "")
    elif m:
        text = f"{m}min" + (f" {sec}s" if sec else "")
    else:
        text = f"{sec}s"
    return text + (" left" if future else " ago")


def _props(node: Node, unit: Unit | None, name: str, now: float) -> dict[str, str]:
    full = node.unit_name(name)
    if unit is None:
        values = {"Id": full, "Names": full, "Description": full, "LoadState": "not-found",
                  "ActiveState": "inactive", "FreezerState": "running", "SubState": "dead", "FragmentPath": "",
                  "UnitFileState": "", "UnitFilePreset": "", "MainPID": "0", "Result": "success",
                  "Type": "simple", "Restart": "no", "NRestarts": "0", "ControlPID": "0", "ExecMainPID": "0",
                  "ExecMainCode": "0", "ExecMainStatus": "0", "CanStart": "no", "CanStop": "no",
                  # systemd 252 names these empty for a unit it does not know when -p asks for them
                  # (checked against a lab node's real systemctl: tests/lab/test_lab_fm_container.py).
                  "ActiveEnterTimestamp": "", "InactiveEnterTimestamp": ""}
        return values
    since = sd_time(unit.since, node)
    active = unit.active in ("active", "activating")
    status = unit.exec_status
    values = {
        "Id": unit.name, "Names": unit.name, "Description": unit.description, "LoadState": unit.load,
        "ActiveState": unit.active, "FreezerState": "running", "SubState": unit.sub,
        "FragmentPath": "/dev/null" if unit.load == "masked" else unit.path,
        "UnitFileState": unit.enabled, "UnitFilePreset": "enabled", "StateChangeTimestamp": since,
        "ActiveEnterTimestamp": sd_time(unit.active_enter, node), "ActiveExitTimestamp": "" if active else since,
        "InactiveEnterTimestamp": "" if active else since, "InactiveExitTimestamp": since if active else "",
        "CanStart": "no" if unit.load == "masked" else "yes", "CanStop": "yes",
        "Result": unit.result,
    }
    if unit.name.endswith(".timer"):
        nxt = (int(now // SNAPSHOT_PERIOD) + 1) * SNAPSHOT_PERIOD if active else None
        values.update({"Unit": unit.name.replace(".timer", ".service"), "NextElapseUSecRealtime": sd_time(nxt, node)})
    else:
        values.update({"Type": "forking" if "fabricmanager" in unit.name else
                       ("oneshot" if "snapshot" in unit.name else "simple"),
                       "Restart": unit.restart_policy or ("always" if unit.name == "kubelet.service" else "no"),
                       "NRestarts": str(unit.restarts),
                       "MainPID": str(unit.main_pid), "ControlPID": "0",
                       "ExecMainPID": str(unit.main_pid or unit.last_pid),
                       "ExecMainCode": str(EXEC_CODES.get(unit.exec_code, 0)),
                       "ExecMainStatus": status.split("/")[0] if status[:1].isdecimal()
                       else str(_signo(status)) if status else "0"})
    return values


def _signo(name: str) -> int:
    import signal as _s

    try:
        return int(_s.Signals[f"SIG{name}"])
    except KeyError:
        return 0


def show(node: Node, names: list[str], props: list[str] | None, now: float) -> str:
    """``systemctl show [-p A,B] UNIT...``: blocks separated by a blank line."""
    blocks = []
    for name in names:
        unit = node.unit(name)
        values = _props(node, unit, name, now)
        is_timer = node.unit_name(name).endswith(".timer")
        order = (TIMER_PROPS if is_timer else SERVICE_PROPS) + UNIT_PROPS
        wanted = [p for p in order if props is None or p in props]
        blocks.append("".join(f"{p}={values[p]}\n" for p in dict.fromkeys(wanted) if p in values))
    return "\n".join(blocks)


def _journal_lines(node: Node, entries: list[LogLine], iso: bool = False) -> list[str]:
    """Entries as journalctl prints them: on the node's clock when each was logged, in its zone;
    short-iso with the offset as systemd 252 writes it (``+0000``, ``-0500``: the lab's real journalctl)."""
    out = []
    for e in entries:
        stamp = node.local_time(e.ts).strftime("%Y-%m-%dT%H:%M:%S%z" if iso else "%b %d %H:%M:%S")
        who = e.ident if e.pid is None else f"{e.ident}[{e.pid}]"
        head = f"{stamp} {node.name} {who}: "
        # A message of several lines: journalctl indents the later ones under the first (systemd 252).
        out.append(head + e.text.replace("\n", "\n" + " " * len(head)))
    return out


def status(node: Node, names: list[str], now: float, lines: int = 10) -> tuple[int, str, str]:
    """``systemctl status UNIT...``: (exit, stdout, stderr); 0 all active, 3 some not, 4 unknown unit."""
    blocks, err, code = [], "", 0
    for name in names:
        unit = node.unit(name)
        full = node.unit_name(name)
        if unit is None or unit.load == "not-found":
            err += f"Unit {full} could not be found.\n"
            code = 4
            continue
        if unit.active != "active":
            code = max(code, 3)
        blocks.append(_status_block(node, unit, now, lines))
    return code, "\n".join(blocks), err


def _status_block(node: Node, unit: Unit, now: float, lines: int) -> str:
    if unit.load == "masked":
        return (f"○ {unit.name}\n     Loaded: masked (Reason: Unit {unit.name} is masked.)\n"
                "     Active: inactive (dead)\n")
    out = [f"{STATUS_MARK.get(unit.active, '○')} {unit.name} - {unit.description}",
           f"     Loaded: {unit.load} ({unit.path}; {unit.enabled}; vendor preset: enabled)"]
    since = f" since {sd_time(unit.since, node)}; {relative(now - unit.since)}" if unit.since else ""
    if unit.active == "failed":
        out.append(f"     Active: failed (Result: {unit.result}){since}")
    else:
        out.append(f"     Active: {unit.active} ({unit.sub}){since}")
    if unit.name.endswith(".timer"):
        if unit.active == "active":
            nxt = (int(now // SNAPSHOT_PERIOD) + 1) * SNAPSHOT_PERIOD
            out.append(f"    Trigger: {sd_time(nxt, node)}; {relative(nxt - now, future=True)}")
        else:
            out.append("    Trigger: n/a")
        out.append(f"   Triggers: ● {unit.name.replace('.timer', '.service')}")
    elif unit.main_pid and unit.main_pid in node.procs:
        proc = node.procs[unit.main_pid]
        members = sorted((p for p in node.procs.values() if p.unit == unit.name), key=lambda p: p.pid)
        out += [f"   Main PID: {unit.main_pid} ({proc.comm})",
                f"      Tasks: {8 + 2 * len(members)} (limit: 629145)", "     Memory: 39.8M",
                f"        CPU: {unit.cpu or '1.204s'}", f"     CGroup: /system.slice/{unit.name}"]
        for i, member in enumerate(members):
            branch = "└─" if i == len(members) - 1 else "├─"
            out.append(f"             {branch}{member.pid} {member.args}")
    elif unit.last_pid:
        how = (f"code=killed, signal={unit.exec_status}" if unit.exec_code == "killed"
               else f"code=exited, status={unit.exec_status or '0/SUCCESS'}")
        out.append(f"   Main PID: {unit.last_pid} ({how})")
        if unit.cpu:
            out.append(f"        CPU: {unit.cpu}")
    entries = [e for e in node.journal if e.unit == unit.name and e.ts <= now][-lines:] if lines else []
    if entries:
        out.append("")
        out += _journal_lines(node, entries)
    return "\n".join(out) + "\n"


def _active_states(node: Node, names: list[str]) -> list[str]:
    """Each unit's ActiveState, ``inactive`` for a unit systemd does not know."""
    states = []
    for name in names:
        unit = node.unit(name)
        states.append("inactive" if unit is None or unit.load == "not-found" else unit.active)
    return states


def is_active(node: Node, names: list[str]) -> tuple[int, str]:
    """``systemctl is-active UNIT...``: one state per line; 0 when at least one is active."""
    states = _active_states(node, names)
    return (0 if "active" in states else 3), "".join(s + "\n" for s in states)


def is_failed(node: Node, names: list[str]) -> tuple[int, str]:
    """``systemctl is-failed UNIT...``: one state per line; 0 when at least one is failed (golden: systemd 252)."""
    states = _active_states(node, names)
    return (0 if "failed" in states else 1), "".join(s + "\n" for s in states)


def is_enabled(node: Node, names: list[str]) -> tuple[int, str, str]:
    """``systemctl is-enabled UNIT...``: exit 1 when a unit is unknown, whatever the others (golden: systemd 252)."""
    out, err, code, unknown = "", "", 1, False
    for name in names:
        unit = node.unit(name)
        if unit is None or unit.load == "not-found":
            err += f"Failed to get unit file state for {node.unit_name(name)}: No such file or directory\n"
            unknown = True
            continue
        state = "masked" if unit.load == "masked" else unit.enabled
        out += state + "\n"
        if state == "enabled":
            code = 0
    return (1 if unknown else code), out, err


def systemctl(node: Node, args: list[str], now: float) -> tuple[int, str, str]:
    """Dispatch one ``systemctl`` command line."""
    props: list[str] | None = None
    lines, rest, i = 10, [], 0
    while i < len(args):
        a = args[i]
        if a in ("-p", "--property") and i + 1 < len(args):
            props = (props or []) + args[i + 1].split(",")
            i += 1
        elif a.startswith("--property="):
            props = (props or []) + a.split("=", 1)[1].split(",")
        elif a.startswith("-p") and len(a) > 2:
            props = (props or []) + a[2:].split(",")
        elif a in ("-n", "--lines") and i + 1 < len(args):
            lines = int(args[i + 1]) if args[i + 1].isdecimal() else 10
            i += 1
        elif a.startswith("--lines="):
            lines = int(a.split("=", 1)[1] or 10)
        elif a in ("--no-pager", "-l", "--full", "-q", "--quiet", "--no-block", "--no-legend", "--plain",
                   "--value", "--system", "--now"):
            pass
        elif a.startswith("-"):
            return 1, "", f"systemctl: unrecognized option '{a}'\n"
        else:
            rest.append(a)
        i += 1
    if not rest:
        return 1, "", "Too few arguments.\n"
    verb, names = rest[0], rest[1:]
    if verb in ("start", "stop", "restart", "reset-failed", "status", "is-active", "is-enabled", "is-failed") and not names \
            and verb != "reset-failed":
        return 1, "", "Too few arguments.\n"
    if verb == "show":
        return 0, show(node, names, props, now), ""
    if verb == "status":
        return status(node, names, now, lines)
    if verb == "is-active":
        code, out = is_active(node, names)
        return code, out, ""
    if verb == "is-enabled":
        return is_enabled(node, names)
    if verb == "is-failed":
        code, out = is_failed(node, names)
        return code, out, ""
    if verb in ("start", "stop", "restart", "reset-failed"):
        code, err = 0, ""
        for name in names:
            if verb == "start":
                c, e = systemd.start(node, name, now)
            elif verb == "stop":
                c, e = systemd.stop(node, name, now)
            elif verb == "restart":
                c, e = systemd.stop(node, name, now)
                if c == 0:
                    c, e = systemd.start(node, name, now)
            else:
                c, e = systemd.reset_failed(node, name)
            code, err = max(code, c), err + e
        return code, "", err
    return 1, "", f"Unknown command verb {verb}.\n"


def _parse_since(text: str, node: Node) -> float | None:
    """``--since``/``--until``: ``@EPOCH``, or a time in the node's zone (as journalctl reads it)."""
    if text.startswith("@") and text[1:].replace(".", "", 1).isdecimal():
        return float(text[1:])
    for fmt in ("%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d"):
        try:
            return dt.datetime.strptime(text, fmt).replace(tzinfo=ZoneInfo(node.tz)).timestamp()
        except ValueError:
            continue
    return None


def _grep(entries: list[LogLine], pattern: str | None) -> list[LogLine]:
    """The entries ``--grep`` prints (all of them without a pattern)."""
    return [e for e in entries if re.search(pattern, e.text)] if pattern else entries


def journalctl(node: Node, args: list[str], now: float) -> tuple[int, str, str]:
    """``journalctl -k|-u UNIT [-b] [--since ...] [-n N] [-g RE] [-o short-iso] [--show-cursor]
    [--cursor=C|--after-cursor=C] [-q] [--no-pager]`` (cursors: :mod:`nvls_tui.sim.journal_cursor`)."""
    if node.journal_access == "denied":
        return 1, "", "No journal files were opened due to insufficient permissions.\n"
    if node.journal_access == "hint":
        # systemd prints this to a user outside the adm/systemd-journal groups and exits 0.
        return 0, "-- No entries --\n", JOURNAL_HINT
    kernel, units, since, until, count, iso, grep = False, [], None, None, None, False, None
    this_boot, show_cursor, quiet, seek_to, after = False, False, False, None, False
    expanded: list[str] = []
    for a in args:  # split clusters like -xeu / -kb
        if a.startswith("-") and not a.startswith("--") and len(a) > 2 and a[1] in "kbxequ" and a[1:].isalpha():
            expanded += [f"-{c}" for c in a[1:]]
        else:
            expanded.append(a)
    i = 0
    while i < len(expanded):
        a = expanded[i]
        nxt = expanded[i + 1] if i + 1 < len(expanded) else None
        if a in ("-k", "--dmesg"):
            kernel = this_boot = True  # -k is this boot's kernel log (journalctl sets --boot with it)
        elif a in ("-u", "--unit") and nxt is not None:
            units.append(node.unit_name(nxt))
            i += 1
        elif a.startswith("--unit="):
            units.append(node.unit_name(a.split("=", 1)[1]))
        elif a in ("--since", "-S", "--until", "-U") and nxt is not None or a.startswith(("--since=", "--until=")):
            value = a.split("=", 1)[1] if "=" in a else nxt
            stamp = _parse_since(value or "", node)
            if stamp is None:
                return 1, "", f"Failed to parse timestamp: {value}\n"
            if a.startswith(("--since", "-S")):
                since = stamp
            else:
                until = stamp
            i += 0 if "=" in a else 1
        elif a in ("-n", "--lines") and nxt is not None and nxt.lstrip("+").isdecimal():
            count = int(nxt.lstrip("+"))
            i += 1
        elif a.startswith("--lines="):
            count = int(a.split("=", 1)[1])
        elif a in ("-o", "--output") and nxt is not None:
            iso = nxt == "short-iso"
            i += 1
        elif a.startswith("--output="):
            iso = a.endswith("short-iso")
        elif a in ("-g", "--grep") and nxt is not None:
            grep = nxt
            i += 1
        elif a == "-e":
            count = count or 1000
        elif a in ("-b", "--boot"):
            this_boot = True
        elif a == "--show-cursor":
            show_cursor = True
        elif a in ("-q", "--quiet"):
            quiet = True
        elif a.startswith(("--cursor=", "--after-cursor=")) or a in ("-c", "--cursor", "--after-cursor") and nxt:
            after = a.startswith("--after-cursor")
            seek_to = a.split("=", 1)[1] if "=" in a else nxt
            i += 0 if "=" in a else 1
        elif a in ("--no-pager", "-x", "--catalog", "--no-hostname", "-a", "--all", "--pager-end"):
            pass
        else:
            return 1, "", f"journalctl: invalid option -- '{a.lstrip('-')}'\n"
        i += 1
    if kernel:
        entries = list(node.kernel)
    elif units:
        entries = [e for e in node.journal if e.unit in units]
    else:
        entries = sorted(node.kernel + node.journal, key=lambda e: (e.ts, e.seq))
    # --since/--until compare the node's clock when each entry was logged (a stepped clock shows).
    if node.journal_since is not None:  # rotated or vacuumed away
        entries = [e for e in entries if e.ts >= node.journal_since]
    entries = [e for e in entries if e.ts <= now and (since is None or node.clock(e.ts) >= since)
               and (until is None or node.clock(e.ts) <= until) and (not this_boot or e.ts >= node.boot)]
    visited: LogLine | None = None
    if seek_to is not None:
        cursor = parse_cursor(seek_to)
        if cursor is None:
            return 1, "", SEEK_FAILED
        start, visited = seek(node, entries, cursor, after)
        entries = entries[start:]
        shown = _grep(entries, grep)
        if count is not None:
            # From a cursor, -n counts forward: the first N, and the last one shown is the last visited;
            # -n 0 shows none and stays where the seek landed.
            shown = shown[:count]
            if shown:
                entries = entries[: entries.index(shown[-1]) + 1]
            elif count == 0:
                entries = entries[:1]
    else:
        shown = _grep(entries, grep)
        if count is not None:
            shown = shown[-count:] if count else []
    if entries:
        visited = entries[-1]
    out = "\n".join(_journal_lines(node, shown, iso)) + "\n" if shown else ("" if quiet else "-- No entries --\n")
    if show_cursor and visited is not None:
        out += f"-- cursor: {cursor_of(node, visited)}\n"
    # --grep exits 1 when nothing matched, as grep does; --show-cursor when it visited no entry (no cursor to
    # print: sd_journal_get_cursor's error is journalctl's exit status), both systemd 252.
    return (1 if grep and not shown or show_cursor and visited is None else 0), out, ""


DMESG_TRY = "Try 'dmesg --help' for more information.\n"


def dmesg(node: Node, args: list[str], now: float) -> tuple[int, str, str]:
    """util-linux 2.38 ``dmesg`` (no options) over the node's kernel ring buffer: ``[seconds] message``,
    seconds since the boot padded to five places, the later lines of a multi-line record indented under
    the first (checked against the real ``dmesg --file`` in tests/sshd/test_kernel_coverage.py).

    The buffer holds this boot's lines from ``ring_since`` on (it wraps on a busy node). A user the journal
    refuses is refused the ring buffer too (``kernel.dmesg_restrict=1``, Debian's and Ubuntu's default).
    """
    if node.journal_access != "ok":
        return 1, "", "dmesg: read kernel buffer failed: Operation not permitted\n"
    if args:
        arg = args[0]
        said = (f"dmesg: unrecognized option '{arg}'\n" if arg.startswith("--")
                else f"dmesg: invalid option -- '{arg.lstrip('-')[:1]}'\n")
        return 1, "", said + DMESG_TRY
    lines = []
    for e in node.kernel:
        if e.ts < node.boot or e.ts > now or (node.ring_since is not None and e.ts < node.ring_since):
            continue
        us = round(max(0.0, e.ts - node.boot) * 1e6)
        stamp = f"[{us // 1000000:5d}.{us % 1000000:06d}] "
        lines.append(stamp + e.text.replace("\n", "\n" + " " * len(stamp)) + "\n")
    return 0, "".join(lines), ""
