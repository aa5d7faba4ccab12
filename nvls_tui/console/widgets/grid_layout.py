"""Which columns the fleet grid shows at a given width: pure, so every width can be tested.

The grid once had fixed columns: at 80 columns the findings were gone and at 160 they were cut at the
panel edge. Now the host, the verdict, the GPUs and the node's story always show; the other columns
join in order of what an operator needs next, as long as the story keeps room to say something; the
GPU and NVSwitch cells fold into one column each when one cell per device would starve the story.
Driver and FM versions are columns only when they differ somewhere (else one line above the grid).
"""

from __future__ import annotations

from dataclasses import dataclass

# DataTable pads every cell by one on each side.
PAD = 2
# The grid's border (2) and its vertical scrollbar (1).
CHROME = 3
# Below this the story says too little to be worth a column: an optional column gives way first.
STORY_MIN = 24
# With at least this much left for the story ("FM killed 5 days ago; reset + FM start needed" and a
# count), one cell per GPU and NVSwitch is worth its width.
STORY_WIDE = 50

# (key, label, width) of the optional columns, most wanted first.
OPTIONAL = (
    ("fm", "FM unit", 8),
    ("sched", "sched", 5),  # the scheduler's state (idle / alloc / mix / drain / drng / down)
    ("k8s", "k8s", 8),  # the Kubernetes node (Ready / NotReady / cordoned), where a cluster is configured
    ("driver", "driver", 10),  # 580.159.04: a driver version is 9-10 wide
    ("fmver", "FM ver", 11),  # with the mismatch sign: ≠580.159.04
    ("holders", "hold", 4),
    ("smoke", "smoke GB/s", 10),
    ("kernel", "kern", 5),
    ("switches", "NVSw", 4),
    ("age", "age", 4),
)
VERSION_KEYS = ("driver", "fmver")
# Columns that show only when the fleet has what they show: versions that differ, a scheduler.
WHEN = {"driver": "versions", "fmver": "versions", "sched": "scheduler", "k8s": "kube"}


@dataclass(frozen=True, slots=True)
class Column:
    """One grid column: its key (what ``update_cell`` addresses), header and content width."""

    key: str
    label: str
    width: int


@dataclass(frozen=True, slots=True)
class GridLayout:
    """The columns in order; ``compact`` when the GPUs (and NVSwitches) share one cell each."""

    columns: tuple[Column, ...]
    compact: bool

    @property
    def keys(self) -> tuple[str, ...]:
        """Column keys in order."""
        return tuple(c.key for c in self.columns)

    def width_of(self, key: str) -> int | None:
        """The content width of column ``key`` (None when it is not shown)."""
        return next((c.width for c in self.columns if c.key == key), None)


def _device_columns(kind: str, n: int, compact: bool) -> list[Column]:
    if compact:
        label, key = ("GPUs", "gpus") if kind == "g" else ("NVSw", "switches")
        return [Column(key, label, max(4, n))]
    return [Column(f"{kind}{i}", f"{kind}{i}", 2) for i in range(n)]


def _cost(columns: list[Column]) -> int:
    return sum(c.width + PAD for c in columns)


def _try(width: int, host_width: int, gpus: int, switches: int, shown: frozenset[str], compact: bool,
         hidden: frozenset[str] = frozenset()) -> GridLayout:
    """The columns that fit beside a story of at least STORY_MIN, wanted ones first."""
    room = width - CHROME
    base = [Column("host", "host", host_width), Column("verdict", "verdict", 13),
            *_device_columns("g", gpus, compact)]
    chosen: dict[str, list[Column]] = {}
    left = room - _cost(base) - PAD  # the story's own padding
    for key, label, w in OPTIONAL:
        if (key in WHEN and WHEN[key] not in shown) or key in hidden:
            continue
        cols = _device_columns("s", switches, compact) if key == "switches" else [Column(key, label, w)]
        if left - _cost(cols) >= STORY_MIN:
            chosen[key] = cols
            left -= _cost(cols)
    order = ["host", "verdict", "fm", "sched", "k8s", "driver", "fmver", "gpus", "switches", "holders", "kernel", "smoke", "age"]
    by_key = {c.key: [c] for c in base}
    by_key.update(chosen)
    if not compact:  # one column per device: keep them together where the compact cell would be
        by_key["gpus"] = [c for c in base if c.key.startswith("g") and c.key[1:].isdecimal()]
    columns = [c for key in order for c in by_key.get(key, [])]
    return GridLayout((*columns, Column("note", "story", max(STORY_MIN, left))), compact)


def grid_layout(width: int, host_width: int, *, gpus: int = 8, switches: int = 4,
                versions: bool = True, scheduler: bool = False, kube: bool = False,
                hidden: frozenset[str] = frozenset()) -> GridLayout:
    """The fleet grid's columns for a screen ``width`` cells wide.

    Args:
        width: the screen's width.
        host_width: the host column's width (the longest host name and the selection mark).
        gpus, switches: device columns (one per GPU index and per NVSwitch).
        versions: show the driver and FM version columns (they differ somewhere in the fleet).
        scheduler: show the scheduler's state column (a scheduler was found).
        kube: show the Kubernetes column (a cluster is configured for some node).
        hidden: optional columns the operator chose to hide (their room goes to the story).
    """
    shown = frozenset(name for name, on in (("versions", versions), ("scheduler", scheduler), ("kube", kube)) if on)
    wide = _try(width, host_width, gpus, switches, shown, compact=False, hidden=hidden)
    wanted = [k for k, _, _ in OPTIONAL if (k not in WHEN or WHEN[k] in shown) and k not in hidden]
    has_all = all(k in wide.keys or (k == "switches" and "s0" in wide.keys) for k in wanted)
    if has_all and (wide.width_of("note") or 0) >= STORY_WIDE:
        return wide
    return _try(width, host_width, gpus, switches, shown, compact=True, hidden=hidden)

__all__ = ["Column", "GridLayout", "grid_layout"]
