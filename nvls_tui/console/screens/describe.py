"""``d`` and ``x`` on the node screen: the node's Kubernetes and Slurm sides in full (as k9s's describe), and its
x-ray, node → GPU → holder → pod, job or unit (``views.describe``). Read-only; Esc goes back."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import RichLog, Static, Tree

from nvls_tui.console.services import ConsoleServices
from nvls_tui.console.widgets.settled_footer import SettledFooter
from nvls_tui.kube.client import KubeError
from nvls_tui.model.kube import NodeEvents
from nvls_tui.views.describe import HEADING, NOTE, XrayNode, describe_lines, xray

STYLES = {HEADING: "bold", NOTE: "dim"}


class DescribeScreen(Screen[None]):
    """The node's Kubernetes side (readiness, taints, labels, annotations, every pod, its newest events) and Slurm
    side, in full. The events are read from the cluster when the view opens (the poll rounds do not read them: one
    more kubectl a node a round, for a view opened now and then)."""

    BINDINGS = [Binding("escape", "app.back", "Back", tooltip="Back to the node.")]

    def __init__(self, host: str, services: ConsoleServices) -> None:
        super().__init__()
        self.host = host
        self.services = services
        self.lines: list[str] = []
        self.events: NodeEvents | None = None

    def compose(self) -> ComposeResult:
        """A title, the lines, the footer."""
        yield Static(Text(f"Describe {self.host}: its Kubernetes and Slurm sides (as last read) · Esc back",
                          style="bold"), id="describe-header")
        yield RichLog(id="describe-log", wrap=True, markup=False, highlight=False)
        yield SettledFooter(compact=True)

    def on_mount(self) -> None:
        """Draw what the console last read of the node, and read its events from its cluster."""
        self._draw()
        self.query_one(RichLog).focus()
        state = self.services.live.fleet.get(self.host)
        kubectl = self.services.live.cluster_of(self.host)
        if state is not None and state.k8s is not None and state.k8s.found and kubectl is not None:
            self.run_worker(self._read_events(kubectl, state.k8s.node), group="describe", exit_on_error=False)

    async def _read_events(self, kubectl, node: str) -> None:
        """The node's events, or why they could not be read (unknown, never "no events"); then draw again."""
        try:
            self.events = NodeEvents(await kubectl.events_of(node), read_at=self.services.clock())
        except KubeError as exc:
            self.events = NodeEvents(error=str(exc), read_at=self.services.clock())
        self._draw()

    def _draw(self) -> None:
        state = self.services.live.fleet.get(self.host)
        log = self.query_one(RichLog)
        log.clear()
        if state is None:
            self.lines = [f"{self.host} has not been polled yet"]
            log.write(Text(self.lines[0]))
            return
        self.lines = []
        for text, kind in describe_lines(state, self.events):
            self.lines.append(text)
            log.write(Text(text, style=STYLES.get(kind, "")))


class XrayScreen(Screen[None]):
    """node → GPU → holder → pod, job or unit, as a tree (Enter folds and unfolds)."""

    BINDINGS = [Binding("escape", "app.back", "Back", tooltip="Back to the node.")]

    def __init__(self, host: str, services: ConsoleServices) -> None:
        super().__init__()
        self.host = host
        self.services = services

    def compose(self) -> ComposeResult:
        """A title, the tree, the footer."""
        yield Static(Text(f"X-ray of {self.host}: which process holds which GPU, for which pod, job or unit · "
                          "Enter folds · Esc back", style="bold"), id="xray-header")
        yield Tree(Text(self.host), id="xray-tree")
        yield SettledFooter(compact=True)

    def on_mount(self) -> None:
        """Build the tree from what the console last read of the node, every branch open."""
        tree = self.query_one(Tree)
        state = self.services.live.fleet.get(self.host)
        if state is None:
            tree.root.set_label(Text(f"{self.host} has not been polled yet"))
            return
        root = xray(state)
        tree.root.set_label(Text(root.label))

        def add(parent, node: XrayNode) -> None:
            if node.children:
                branch = parent.add(Text(node.label), expand=True)
                for child in node.children:
                    add(branch, child)
            else:
                parent.add_leaf(Text(node.label))

        for child in root.children:
            add(tree.root, child)
        tree.root.expand()
        tree.focus()


__all__ = ["DescribeScreen", "XrayScreen"]
