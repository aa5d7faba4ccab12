"""``nvls-tui check`` and streaming over a real sshd serving many (simulated) nodes."""

from __future__ import annotations

import contextlib
import json
import time

import pytest

from nvls_tui.cli import main
from tests.sshd_rig import backend_for

pytestmark = pytest.mark.ssh

IGNORED = ("host", "simulated")


def check_json(capsys, args: list[str]) -> tuple[int, dict]:
    """Run ``nvls-tui check --json ARGS`` in process and parse what it printed."""
    status = main(["check", "--json", *args])
    out = capsys.readouterr().out
    return status, json.loads(out)


def test_check_reaches_sixty_four_simulated_nodes_behind_the_loopback_sshd_in_one_run(sshd_fleet, capsys):
    # Static shims (pre-rendered outputs, no Python per command) answer as fast as real nodes.
    names = [f"gpu{i:03d}" for i in range(1, 65)]
    rig = sshd_fleet(names, scenario="fleet-256", static=True)
    # No wall-clock bound here (a loaded CI machine is slow, not wrong): bench/ measures the speed.
    status, report = check_json(capsys, [*rig.targets(), *rig.cli_args(), "--timeout", "30"])
    nodes = report["nodes"]
    assert [n["host"] for n in nodes] == rig.targets()
    bad = {n["host"]: (n["reachable"], n.get("error"), len(n["gpus"]), [m["section"] for m in n.get("missing", [])])
           for n in nodes if not (n["reachable"] and n["simulated"] and len(n["gpus"]) == 8)}
    assert bad == {}
    holders = [h for n in nodes for h in n["holders"]]
    assert holders and all(h["start_time"] and h["user"] for h in holders)  # ps answered for every holder
    broken = {names[i] for i, n in enumerate(nodes) if n["verdict"] == "broken"}
    assert broken == {"gpu017", "gpu042"}  # the scenario's broken nodes among the first 64
    assert status == 1


async def test_sixty_four_backends_sharing_a_limiter_all_run_the_poll_script(sshd_fleet):
    import asyncio

    rig = sshd_fleet(64)
    limiter = asyncio.Semaphore(16)
    backends = [backend_for(rig, name, limiter=limiter, timeout=30) for name in rig.nodes]
    try:
        results = await asyncio.gather(*(b.read_sections() for b in backends))
    finally:
        await asyncio.gather(*(b.close() for b in backends))
    assert len(results) == 64
    assert all(r["gpus"].exit_status == 127 and "processes" in r for r in results)


def test_check_of_a_node_with_an_unknown_host_key_reports_it_unreachable_with_the_reason(
    sshd_fleet, capsys, tmp_path
):
    rig = sshd_fleet(2)
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    status, report = check_json(
        capsys, [rig.target("gpu01"), "--known-hosts", str(empty), "-i", str(rig.client_key),
                 "--ssh-config", str(rig.ssh_config)],
    )
    (node,) = report["nodes"]
    assert status == 2 and node["reachable"] is False and node["verdict"] == "unreachable"
    assert any("host key" in f["message"] for f in node["findings"])


# ----- with the simulator's shims (skipped until nvls_tui.sim.shims exists) ------------------
def test_check_over_eight_shimmed_nodes_matches_the_built_in_simulated_fleet(sshd_fleet, capsys, monkeypatch):
    # Both fleets frozen at the scenario's start: a live clock lets short-lived holders (the snapshot
    # timer's nvidia-smi) come and go between two polls, as they do on a real node.
    monkeypatch.setenv("NVLS_TUI_SIM_SPEED", "0")
    rig = sshd_fleet(8, scenario="seed-incident", speed=0)
    _, over_ssh = check_json(capsys, [*rig.targets(), *rig.cli_args()])
    _, in_process = check_json(capsys, ["sim:seed-incident"])

    def strip(report):
        return [{k: v for k, v in node.items() if k not in IGNORED} for node in report["nodes"]]

    assert len(over_ssh["nodes"]) == 8
    differing = {(a["host"], key): (a[key], b[key])
                 for a, b in zip(over_ssh["nodes"], in_process["nodes"], strict=True)
                 for key in a if key not in IGNORED and a[key] != b.get(key)}
    assert differing == {}
    assert strip(over_ssh) == strip(in_process)


async def test_all_reduce_perf_rows_stream_one_by_one_from_a_shimmed_node(sshd_fleet):
    rig = sshd_fleet(8, scenario="seed-incident")
    backend = backend_for(rig, "gpu01", timeout=30)
    argv = ["all_reduce_perf", "-b", "8M", "-e", "128M", "-f", "2", "-g", "8"]
    rows = []
    start = time.monotonic()
    try:
        async with contextlib.aclosing(
            backend.stream(argv, env={"NCCL_NVLS_ENABLE": "1", "NCCL_ALGO": "NVLS"})
        ) as lines:
            async for line in lines:
                fields = line.split()
                if fields and fields[0].isdigit() and len(fields) > 5:
                    rows.append((int(fields[0]), time.monotonic() - start))
    finally:
        await backend.close()
    assert [size for size, _ in rows][:2] == [8388608, 16777216]
    arrivals = [t for _, t in rows]
    assert arrivals[-1] - arrivals[0] > 0.05 * (len(rows) - 1), f"rows arrived in one burst: {rows}"
