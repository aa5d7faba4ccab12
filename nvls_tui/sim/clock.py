"""Simulated time: a wall clock that can run faster than real time, or only when told to.

Simulated time is ``start + (real elapsed) * speed + manual offset``. Node state never ticks on its
own: it advances lazily to ``clock.now()`` whenever a command runs, so an idle fleet costs nothing.
``speed=0`` freezes the clock; tests then move it with :meth:`SimClock.advance`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

# The demo's simulated "now": a few days after the FM unit of gpu05 was SIGKILLed (incident-writeup).
DEFAULT_START = 1786810200.0  # 2026-08-15 16:10:00 UTC


@dataclass
class SimClock:
    """A clock for one simulated fleet.

    Attributes:
        speed: simulated seconds per real second (0 freezes the clock).
        start: simulated epoch seconds at ``real_start``.
        real_start: real epoch seconds when the clock was created (wall time, so the clock survives
            being saved to a file and read back by another process, as the shims do).
        offset: simulated seconds added by :meth:`advance`.
    """

    speed: float = 1.0
    start: float = DEFAULT_START
    real_start: float = field(default_factory=time.time)
    offset: float = 0.0

    def now(self) -> float:
        """Simulated epoch seconds."""
        return self.start + (time.time() - self.real_start) * self.speed + self.offset

    def advance(self, seconds: float) -> None:
        """Move simulated time forward by ``seconds`` (tests, frozen clocks)."""
        self.offset += max(0.0, seconds)

    def real_seconds(self, sim_seconds: float) -> float:
        """How long ``sim_seconds`` of simulated time take in real time (0 for a frozen clock)."""
        return sim_seconds / self.speed if self.speed > 0 else 0.0

    async def sleep(self, sim_seconds: float) -> None:
        """Wait ``sim_seconds`` of simulated time (a frozen clock advances instead of waiting)."""
        import asyncio  # here, not above: each simulated command behind the sshd imports this module

        if self.speed > 0:
            await asyncio.sleep(sim_seconds / self.speed)
        else:
            self.advance(sim_seconds)
            await asyncio.sleep(0)

    def to_dict(self) -> dict:
        """JSON form (the shims persist the clock beside the node)."""
        return {"speed": self.speed, "start": self.start, "real_start": self.real_start, "offset": self.offset}

    @classmethod
    def from_dict(cls, data: dict) -> SimClock:
        """Inverse of :meth:`to_dict`."""
        return cls(**{k: float(data[k]) for k in ("speed", "start", "real_start", "offset") if k in data})
