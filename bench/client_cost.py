"""What one node-poll costs the bastion's CPU, the SSH transport left out: a captured probe read back N times.

Usage::

    python -m bench.client_cost [N] [--capture FILE]

Starts a rig of one static node (as ``make bench``'s, ~51 KB of probe), polls it once over SSH the way
``nvls-tui check`` does and keeps the raw stream the probe script printed; then, with no network, reads that
stream back as N nodes would: the probe script written, the stream split into sections, the kernel tail and
the configuration cache, the node's state assembled, diagnosed and rendered as ``check --json`` renders it
(a cold check's node); and a second poll of each of them, answered from its last state and diagnosed (an
unchanged re-poll's node, as ``bench.nvls_repoll`` reads it). Prints the best of five rounds in ms of CPU a
node. On two cores shared with other work this is steadier than the rig's client CPU, whose sshd and
asyncssh costs swing with the load; it is how docs/performance.md's 2026-12-07 cuts were measured before
and after (each tree run on the same capture, in the same minutes).
``--capture FILE`` reuses (or, when missing, writes) a captured stream, so two trees read the same bytes.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from pathlib import Path


def capture() -> dict:
    """One cold poll of one rig node over SSH: the nonce and the chunks its probe printed."""
    from bench.rig import BenchRig
    from bench.tools import _nvls_args
    from nvls_tui.cli import main as cli_main
    from nvls_tui.poll import probe_output

    chunks: list[dict] = []
    reader_init, reader_feed = probe_output.SectionReader.__init__, probe_output.SectionReader.feed

    def init(self, nonce, *args, **kwargs):
        chunks.append({"nonce": nonce, "chunks": []})
        reader_init(self, nonce, *args, **kwargs)

    def feed(self, chunk):
        chunks[-1]["chunks"].append(chunk)
        return reader_feed(self, chunk)

    probe_output.SectionReader.__init__, probe_output.SectionReader.feed = init, feed  # type: ignore[method-assign]
    try:
        with tempfile.TemporaryDirectory() as work, BenchRig(1) as rig, contextlib.redirect_stdout(io.StringIO()):
            cli_main(["check", "--json", *_nvls_args(rig, 1, Path(work))])
    finally:
        probe_output.SectionReader.__init__, probe_output.SectionReader.feed = reader_init, reader_feed  # type: ignore[method-assign]
    return chunks[0]


class _Node:
    """One simulated node of the read-back: its own tail, configuration cache and last state, as a backend's."""

    def __init__(self, host: str, stream: dict) -> None:
        from nvls_tui.poll.assemble import LastAssembly
        from nvls_tui.poll.config_cache import ConfigCache
        from nvls_tui.poll.kernel_tail import KernelTail

        self.host, self.stream = host, stream
        self.tail, self.config, self.last = KernelTail(), ConfigCache(), LastAssembly()

    def poll(self):
        """What SshBackend.read_sections and build_state do with the stream (the transport left out)."""
        from nvls_tui.model import CommandResult
        from nvls_tui.poll.once import ProbeReading, build_state
        from nvls_tui.poll.probe import SECTION_CAP, SECTION_NAMES, journal_hung, new_nonce, section_argv
        from nvls_tui.poll.probe_output import SectionReader
        from nvls_tui.poll.probe_script import probe_script

        asked = self.tail.cursor
        probe_script(False, new_nonce(), only=tuple(SECTION_NAMES), kernel_cursor=asked, cap=SECTION_CAP,
                     journal_hung=journal_hung({}), config_stamp=self.config.stamp)
        reader = SectionReader(self.stream["nonce"], SECTION_CAP)
        for chunk in self.stream["chunks"]:
            reader.feed(chunk)
        sections = {name: CommandResult(argv=section_argv(name), exit_status=-1 if status is None else status,
                                        stdout=text, truncated=reader.over_cap(name))
                    for name, (status, text) in reader.finish().items()}
        sections = self.config.take(sections, reader.unchanged)
        if (kernel := sections.get("kernel")) is not None:
            sections["kernel"] = self.tail.take(kernel, asked)
        return build_state(self.host, ProbeReading(sections, polled_at=time.time()), self.last)


def _round(nodes: list[_Node], *, rendered: bool = True) -> str:
    """Every node polled and diagnosed, and (``rendered``) rendered as check --json renders it; a re-poll is
    diagnosed only, as bench.nvls_repoll's second round (the console's case)."""
    from nvls_tui.model.jsonout import node_json
    from nvls_tui.poll.after_poll import AfterPoll

    results = AfterPoll().read_round([node.poll() for node in nodes])
    return json.dumps({"nodes": [node_json(state, diagnosis) for state, diagnosis in results]}) if rendered else ""


def _best(run, rounds: int = 5) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = time.process_time()
        run()
        best = min(best, time.process_time() - started)
    return best


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("n", nargs="?", type=int, default=256)
    p.add_argument("--capture", type=Path, help="a captured stream to read (written first when missing)")
    args = p.parse_args()
    if args.capture is not None and args.capture.exists():
        stream = json.loads(args.capture.read_text())
    else:
        stream = capture()
        if args.capture is not None:
            args.capture.write_text(json.dumps(stream))
    cold = _best(lambda: _round([_Node(f"gpu{i:04d}", stream) for i in range(args.n)]))
    kept = [_Node(f"gpu{i:04d}", stream) for i in range(args.n)]
    _round(kept)
    again = _best(lambda: _round(kept, rendered=False))
    unchanged = sum(node.last.hits for node in kept)
    print(f"client CPU a node-poll, {args.n} nodes, {sum(map(len, stream['chunks']))} bytes of probe each: "
          f"cold {cold / args.n * 1000:.3f} ms, unchanged re-poll {again / args.n * 1000:.3f} ms "
          f"({unchanged} answers from the last state), best of 5")
    return 0


if __name__ == "__main__":
    sys.exit(main())
