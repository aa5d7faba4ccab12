"""A node in words: the node screen's header and captions, and its holders' columns (no widgets here).

Pure text from a ``NodeState``: the node screen draws these into its tables, and the fleet screen's
preview shows the same header. Kept beside the widgets, apart from the screens that lay them out,
as k9s keeps its renderers apart from its views.
"""

from __future__ import annotations

import datetime as dt

from rich.text import Text

from nvls_tui.console.widgets import cells
from nvls_tui.diagnosis.story import when
from nvls_tui.model import Holder, NodeState, Verdict
from nvls_tui.model.node import ZERO_UUID, Diagnosis
from nvls_tui.textsafe import one_line
from nvls_tui.views.describe import pod_uid_words
from nvls_tui.words import count


def kernel_message(line: str) -> str:
    """A kernel line without journalctl's time and host (the "when" column has the time)."""
    head, sep, rest = line.strip().partition(" kernel: ")
    return rest if sep and " " in head and head[:4].isdecimal() else line.strip()


def _clock(stamp: str, like: str | None) -> str:
    """``HH:MM`` of a node time, on the offset of ``like`` (the journal's, the node's own) when given."""
    try:
        at = dt.datetime.fromisoformat(stamp)
        if like is not None:
            offset = dt.datetime.fromisoformat(like).tzinfo
            at = at.astimezone(offset) if offset is not None and at.tzinfo is not None else at
    except ValueError:
        return one_line(stamp)
    return at.strftime("%H:%M")


def coverage_line(state: NodeState) -> str | None:
    """The kernel log's coverage in a line, where it matters: ``kernel log since 03:12 (30 min ago); the
    journal starts at 03:40, earlier lines rotated away; ring buffer read as well``.

    None when the journal alone covers the whole boot (nothing to say) or the poll did not say.
    """
    cov = state.kernel_coverage
    if cov is None or (cov.complete_since_boot and "dmesg" not in cov.sources):
        return None
    if cov.complete_since_boot:
        said = "kernel log since the boot"
    elif cov.since is not None:
        age = when(cov.since, state)
        said = f"kernel log since {_clock(cov.since, cov.journal_since)}" + (f" ({age})" if age else "")
    else:
        said = "kernel log: from when it covers this boot is unknown"
    # The ring buffer is read only where the journal falls short of the boot (or cannot be read).
    if "journal" not in cov.sources:
        journal = "no journal read"
    elif cov.journal_since is not None:
        journal = f"the journal starts at {_clock(cov.journal_since, None)}, earlier lines rotated away"
    else:
        journal = "the journal holds no kernel line of this boot"
    ring = "ring buffer read as well" if "dmesg" in cov.sources else "ring buffer not read"
    return "; ".join(part for part in (said, journal, ring) if part)


def compact_devices(devices: tuple[str, ...]) -> str:
    """``gpu0-7 ctl uvm`` and ``nvswitch0-3,ctl ctl`` rather than a dozen ``/dev/nvidia*`` paths.

    Numbered devices of one family (``/dev/nvidiaN``, ``/dev/nvidia-nvswitchN``) become a range (or a
    list where it has gaps), the family's control file joins it as ``,ctl``; the rest keep their short name.
    """
    families: dict[str, list[str]] = {}
    others: list[str] = []
    for device in devices:
        name = device.removeprefix("/dev/nvidia").lstrip("-")
        family = name.rstrip("0123456789")
        if name[len(family):] and family in ("", "nvswitch"):
            families.setdefault(family or "gpu", []).append(name[len(family):])
        elif name == "nvswitchctl":
            families.setdefault("nvswitch", []).append("ctl")
        else:
            others.append(name)
    parts: list[str] = []
    for family, members in families.items():
        numbers = sorted(int(m) for m in members if m.isdecimal())
        said: list[str] = []
        if numbers:
            contiguous = numbers == list(range(numbers[0], numbers[-1] + 1))
            said = [f"{numbers[0]}-{numbers[-1]}"] if contiguous and len(numbers) > 1 else [str(n) for n in numbers]
        said += [m for m in members if not m.isdecimal()]
        parts.append(family + ",".join(said))
    return " ".join(parts + others)


def short_cluster(uuid: str | None) -> Text:
    """The all-zero ClusterUUID of a single-node board is normal (fixtures README): say so, briefly."""
    if uuid is None:
        return Text("–")
    if uuid == ZERO_UUID:
        return Text("all-zero", style="dim")
    return Text(uuid)


def owner_text(h: Holder) -> str:
    """The job (``job 1234 alice/train``), the unit, or the pod shortened (``pod f1b0f602…``)."""
    if h.job is not None:
        # A job's name is anyone's text (newlines too): one line here.
        return f"job {h.job.id} {one_line(h.job.user)}/{one_line(h.job.name)}" if h.job.name else f"job {h.job.id}"
    if h.unit:
        return h.unit
    if h.pod_ref is not None:  # the cluster named the pod: ns/pod here, the container and owner on demand
        ref = h.pod_ref
        return middle_cut(one_line(f"{ref.namespace}/{ref.name}"), POD_CELL)
    if h.pod:
        uid = h.pod.removeprefix("pod")
        return f"pod {uid[:8]}…" if len(uid) > 12 and h.pod.startswith("pod") else h.pod
    return "–"


# The most a pod's ``ns/pod`` takes of the holders table: long names (a Deployment's pod, an operator's
# DaemonSet pod) pushed the start time and the command off the table at 160 columns (issue 38 item 3).
POD_CELL = 40


def middle_cut(text: str, width: int) -> str:
    """``text`` in ``width`` cells, its middle replaced by ``…`` (a pod's namespace and its hash both tell)."""
    if len(text) <= width:
        return text
    keep = width - 1
    return text[: keep - keep // 2] + "…" + text[len(text) - keep // 2:]


def holder_detail(h: Holder) -> str:
    """Everything the holders table has no room for, in one line: the pod's container and owner, the job, the
    unit, when it started and the whole command (the line under the table, for the holder under the cursor)."""
    parts = [f"PID {h.pid}", one_line(h.user or "?"), h.kind.value]
    if h.pod_ref is not None:
        ref = h.pod_ref
        owner = f"{ref.owner_kind} {ref.owner_name}" if ref.owner_kind and ref.owner_name else "a bare pod (no owner)"
        parts.append(one_line(f"pod {ref.namespace}/{ref.name}, container {ref.container or '?'}, owned by {owner}"))
    elif h.pod:
        parts.append(one_line(pod_uid_words(h.pod)))
    if h.job is not None:
        parts.append(owner_text(h))
    elif h.unit:
        parts.append(one_line(h.unit))
    parts.append(f"started {short_start(h.start_time)}")
    return " · ".join(parts) + f"\n{one_line(h.command)}"


def short_start(lstart: str | None) -> str:
    """``Sun Jul 12 16:10:50 2026`` (ps's lstart) as ``Jul 12 16:10``, so the command column keeps its room."""
    if not lstart:
        return "–"
    words = lstart.split()
    if len(words) == 5 and words[3].count(":") == 2:
        return f"{words[1]} {words[2]} {words[3][:5]}"
    return lstart


def unread_subtitle(state: NodeState, section: str, otherwise: str) -> str:
    """A panel's subtitle: ``unknown (why)`` when the poll could not read its section, else ``otherwise``.

    A panel must never read "none" for something that could not be seen (fail closed).
    """
    missing = state.missing_section(section)
    return f"unknown: {missing.reason}" if missing is not None else otherwise


def gpu_summary(state: NodeState, diagnosis: Diagnosis | None) -> str:
    """The GPU table's caption: what the registrations say, and whether NVLS can use them.

    ``8/8 Completed/Success`` alone misled on an out-of-sync node (registered, yet every NVLS bind
    fails) and read "0/1" on a GPU with no fabric at all.
    """
    if (unread := state.missing_section("gpus")) is not None:
        return f"? GPUs: unknown: {unread.reason}"  # never "0/0": nvidia-smi could not say
    if state.gpus and not any(g.fabric.supported for g in state.gpus):
        return f"{len(state.gpus)} GPU{'s' if len(state.gpus) != 1 else ''}: no NVLink fabric ({state.platform.value})"
    ok = sum(g.fabric.completed_ok for g in state.gpus)
    caption = f"{ok}/{len(state.gpus)} Completed/Success"
    codes = {f.code for f in diagnosis.findings} if diagnosis else set()
    if ok and "FABRIC_OUT_OF_SYNC" in codes:
        caption = f"✔ {ok}/{len(state.gpus)} registered, ✖ NVLS unusable: the driver's fabric state is out of sync"
    return caption


def _driver_version(state: NodeState) -> str:
    """The driver's version; ``?`` where the GPUs were not read, ``–`` where nvidia-smi named none."""
    return "?" if state.missing_section("gpus") is not None else state.driver or "–"  # nvidia-smi's word


def _fm_version(state: NodeState) -> str:
    """FM's version; ``?`` where it was not read (a node never read is no GB200 without host FM)."""
    return "?" if state.missing_section("fm_version") else state.fm_version or "–"


def versions_line(state: NodeState) -> str:
    """``driver 580.82.07 · FM 580.82.07``: what a narrow header leaves to the GPUs panel's title."""
    return f"driver {_driver_version(state)} · FM {_fm_version(state)}"


def header_text(state: NodeState, diagnosis: Diagnosis | None, age: float | None, *, versions: bool = True) -> Text:
    """`` gpu05  ✖ broken  hgx-h100 · driver … · FM … (failed) · polled 3s ago``.

    Args:
        state: the node.
        diagnosis: its diagnosis (None: not yet).
        age: seconds since its poll (None: never polled).
        versions: False for a narrow screen: ``· FM failed`` with no driver or FM version
            (:func:`versions_line` says them elsewhere), so the header stays on one line at 80 columns.
    """
    text = Text()
    text.append(f" {state.host} ", style="bold reverse")
    text.append("  ")
    verdict = diagnosis.verdict if diagnosis else None
    text.append_text(cells.verdict_text(verdict if state.reachable else Verdict.UNREACHABLE))
    # " · " rather than blanks: where the header wraps after the verdict, or a copy joins its lines,
    # the verdict and the platform still read apart (not "▲ degradedno-nvswitch").
    text.append(f" · {state.platform.value}" + (f" · driver {_driver_version(state)}" if versions else ""))
    fm = state.service("nvidia-fabricmanager")
    if state.read_anything and not state.platform.has_host_fm and fm is None and not state.fm_version:
        text.append(" · no host Fabric Manager")  # not "FM – ( –)": there is none to show
    elif state.fm_place is not None and state.fm_place.in_container:
        # No host unit to show: FM lives in the GPU Operator's driver pod (restart the pod, not a unit).
        text.append(f" · FM in the GPU Operator's driver pod {one_line(state.fm_place.pod_words)}")
    elif versions:
        text.append(f" · FM {_fm_version(state)} (")
        text.append_text(cells.unknown_text() if state.missing_section("units") else cells.unit_text(fm))
        text.append(")")
    else:
        text.append(" · FM ")
        text.append_text(cells.unknown_text() if state.missing_section("units") else cells.unit_text(fm))
    if state.scheduler is not None:
        sched = state.scheduler
        text.append(" · Slurm ")
        text.append_text(cells.scheduler_text(sched))
        if sched.reason:
            text.append(f" ({one_line(sched.reason)})")
        if sched.jobs:
            text.append(f", {count(len(sched.jobs), 'job')}: " + ", ".join(
                f"{j.id} {one_line(j.user)}/{one_line(j.name, 80)}" + (f" until {j.end}" if j.end else "")
                for j in sched.jobs[:3]))
    text.append(" · polled ")
    text.append_text(cells.age_text(age, exact=True))
    text.append(" ago")
    if not state.reachable:
        text.append(f"   stale: {state.error}", style=cells.STYLE["unreachable"])
    return text


__all__ = ["compact_devices", "coverage_line", "gpu_summary", "header_text", "kernel_message", "holder_detail", "middle_cut", "owner_text", "short_cluster", "short_start", "unread_subtitle",
           "versions_line"]
