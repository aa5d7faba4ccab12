"""The live bandwidth plot of an NVLS smoke test: bus bandwidth against message size.

Drawn by ``textual-plotext`` (a maintained Plotext widget for Textual), never by hand: two series,
out-of-place and in-place, gain a point as each all_reduce_perf row arrives; the pass threshold is a
horizontal line; once the run is judged, the title carries the average and the verdict. The x axis
is the sweep's sizes on a log-2 scale, fixed from the start so points land where they belong.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from textual_plotext import PlotextPlot

from nvls_tui.model import SmokeResult

# The smoke test's sweep (-b 8M -e 128M -f 2): the axis is laid out for it before the first row.
SWEEP = tuple(2**k * 1024 * 1024 for k in range(3, 8))
OOP_COLOUR = (95, 175, 255)
IP_COLOUR = (255, 175, 0)
THRESHOLD_COLOUR = (255, 95, 95)


def size_label(size: int) -> str:
    """``8M``, ``128M``, ``1G``: the sizes as all_reduce_perf's ``-b``/``-e`` write them."""
    for unit, div in (("G", 1024**3), ("M", 1024**2), ("K", 1024)):
        if size >= div and size % div == 0:
            return f"{size // div}{unit}"
    return str(size)


class BandwidthPlot(PlotextPlot):
    """Bus bandwidth (GB/s) against message size for one all_reduce_perf run.

    Attributes:
        rows: (size, out-of-place busbw, in-place busbw) in arrival order.
        threshold: the pass threshold in GB/s (drawn as a line), if known.
        result: the judged run, once it ended.
    """

    def __init__(self, *, threshold: float | None = 250.0, sizes: Sequence[int] = SWEEP, **kwargs) -> None:
        super().__init__(**kwargs)
        self.rows: list[tuple[int, float | None, float | None]] = []
        self.threshold = threshold
        self.sizes = tuple(sizes)
        self.result: SmokeResult | None = None
        self.caption = "waiting for the first row"

    def on_mount(self) -> None:
        """Lay the axes out before any row arrives."""
        super().on_mount()
        self.replot()

    def reset(self, caption: str = "waiting for the first row") -> None:
        """Start over for a new run."""
        self.rows, self.result, self.caption = [], None, caption
        self.replot()

    def set_rows(self, rows: Sequence[tuple[int, float | None, float | None]], result: SmokeResult | None = None,
                 caption: str | None = None) -> None:
        """Show ``rows`` (and the verdict when ``result`` is given)."""
        self.rows = list(rows)
        self.result = result
        if result is not None and result.threshold is not None:
            self.threshold = result.threshold
        if caption is not None:
            self.caption = caption
        self.replot()

    def add_row(self, size: int, oop: float | None, ip: float | None) -> None:
        """One more all_reduce_perf row."""
        self.rows.append((size, oop, ip))
        self.replot()

    def title_text(self) -> str:
        """The plot's title: the progress while running, the average and the verdict at the end."""
        if self.result is not None:
            avg = f"{self.result.avg_busbw:.1f} GB/s" if self.result.avg_busbw is not None else "no average"
            verdict = "PASSED" if self.result.passed else "FAILED"
            return f"avg busbw {avg} · {verdict}"
        if not self.rows:
            return self.caption
        return f"{self.caption} · {len(self.rows)}/{len(self.sizes)} sizes"

    def replot(self) -> None:
        """Rebuild the figure from the rows (Plotext figures are cheap; this runs once per row)."""
        plt = self.plt
        plt.clear_figure()
        xs_all = [math.log2(s) for s in self.sizes]
        top = max([v for _, o, i in self.rows for v in (o, i) if v is not None] + [self.threshold or 0.0, 100.0])
        plt.xlim(xs_all[0] - 0.25, xs_all[-1] + 0.25)
        values = [v for _, o, i in self.rows for v in (o, i) if v is not None]
        low = min(values + ([self.threshold] if self.threshold is not None else []), default=0.0)
        # Start the axis a little under the lowest point (or at 0): a few terminal rows must still
        # show the difference between 240 and 330 GB/s.
        floor = max(0, math.floor((low - 100) / 50) * 50)
        ceiling = math.ceil(top * 1.1 / 50) * 50
        plt.ylim(floor, ceiling)
        step = 50 if ceiling - floor <= 400 else 100  # round GB/s on the axis, not Plotext's sixths
        plt.yticks(list(range(floor, ceiling + 1, step)))
        plt.xticks(xs_all, [size_label(s) for s in self.sizes])
        plt.title(self.title_text())
        plt.xlabel("message size")
        plt.ylabel("busbw GB/s")
        if self.threshold is not None:
            plt.hline(self.threshold, THRESHOLD_COLOUR)
            plt.text(f"pass ≥ {self.threshold:.0f}", xs_all[0], self.threshold, color=THRESHOLD_COLOUR,
                     alignment="left")
        for index, label, colour in ((1, "out-of-place", OOP_COLOUR), (2, "in-place", IP_COLOUR)):
            points = [(math.log2(row[0]), row[index]) for row in self.rows if row[index] is not None and row[0] > 0]
            if points:
                plt.plot([p[0] for p in points], [p[1] for p in points], label=label, color=colour,
                         marker="braille")
                plt.scatter([p[0] for p in points], [p[1] for p in points], color=colour, marker="●")
        self.refresh()
