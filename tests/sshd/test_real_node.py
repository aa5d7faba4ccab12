"""nvls-tui against a node of real processes over a real sshd (tests/realnode.py): real PIDs, parents,
users, start times, cgroups (a GPU Operator pod in a kubepods path), full command lines, real ps,
fuser, kill and watch. Only the NVIDIA tools and the systemd/journal answers are stand-ins.

Before the fail-closed work, holders over SSH on every real node lost their start time, parent,
cgroup and full command line (procps refused the probe's PID list), and a node without fuser read
as healthy and was reset.
"""

from __future__ import annotations

import asyncio
import json
import signal

import pytest

from nvls_tui.backends.base import ProcessChanged, ProcessIdentity
from nvls_tui.backends.ssh import SshBackend
from nvls_tui.backends.ssh.targets import parse_target
from nvls_tui.cli import main
from nvls_tui.diagnosis import diagnose
from nvls_tui.model import HolderKind, Verdict
from nvls_tui.runbook import RepairOptions
from nvls_tui.runbook.context import NodeContext, StepFailed
from nvls_tui.runbook.outcome import NodeOutcome
from nvls_tui.runbook.quiesce import read_holders, verify_no_holders, watch_parents
from tests.realnode import H200_ABSENT, OPERATOR, POD_UID, WORKLOAD_ARGS, RealNode, available
from tests.sshd_rig import options_for

pytestmark = [pytest.mark.ssh, pytest.mark.skipif(available() is not None, reason=available() or "")]


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    real = RealNode(tmp_path_factory.mktemp("realnode"), {"full": set(), "no-fuser": {"fuser"}}).start()
    yield real
    real.stop()


def backend(node: RealNode, variant: str = "full", user: str = "root") -> SshBackend:
    (target,) = parse_target(node.target(variant, user))
    return SshBackend(target, options_for(node.rig, timeout=20))


async def poll(node: RealNode, variant: str = "full", user: str = "root"):
    b = backend(node, variant, user)
    try:
        return await b.snapshot()
    finally:
        await b.close()


async def on_node(node: RealNode, *argv: str) -> str:
    b = backend(node)
    try:
        return (await b.run(list(argv))).stdout
    finally:
        await b.close()


async def test_holders_over_ssh_carry_pid_parent_start_time_cgroup_full_command_line_and_kind(node):
    state = await poll(node)
    by_pid = {h.pid: h for h in state.holders}
    pids = node.pids
    assert {pids["dcgm-exporter"], pids["nv-hostengine"], pids["workload"]} <= set(by_pid)
    pod, dcgm, work = by_pid[pids["dcgm-exporter"]], by_pid[pids["nv-hostengine"]], by_pid[pids["workload"]]
    assert (pod.kind, pod.pod, pod.user) == (HolderKind.DCGM_EXPORTER, f"pod{POD_UID}", "root")
    assert (dcgm.kind, dcgm.unit) == (HolderKind.NV_HOSTENGINE, "nvidia-dcgm.service")
    assert (work.kind, work.user, work.ppid) == (HolderKind.CUDA_APP, "nobody", 1)
    assert work.command.endswith(" ".join(WORKLOAD_ARGS))  # the whole command line, not "python3"
    for holder in (pod, dcgm, work):
        real = await on_node(node, "ps", "-o", "lstart=", "-p", str(holder.pid))
        assert " ".join(holder.start_time.split()) == " ".join(real.split())  # what the real ps says
    assert not state.missing and diagnose(state).verdict is Verdict.HEALTHY


async def test_the_local_proc_scan_inside_the_node_reads_the_same_holders_as_ssh(node):
    scan = ("import json; from nvls_tui.backends.local import scan_holders; from nvls_tui.parsers.holders import "
            "build_holders; f, e, why = scan_holders(True); print(json.dumps([[h.pid, h.ppid, h.user, "
            "' '.join((h.start_time or '').split()), h.command, str(h.kind), h.unit, h.pod, list(h.devices)] "
            "for h in build_holders(f, e)]))")
    import sys
    from pathlib import Path

    root = str(Path(__file__).parents[2])
    local = json.loads(await on_node(node, "env", f"PYTHONPATH={root}", sys.executable, "-c", scan))
    state = await poll(node)
    ssh = [[h.pid, h.ppid, h.user, " ".join((h.start_time or "").split()), h.command, str(h.kind), h.unit, h.pod,
            list(h.devices)] for h in state.holders]
    steady = {node.pids["dcgm-exporter"], node.pids["nv-hostengine"], node.pids["workload"]}
    # The watch loop's nvidia-smi comes and goes between two reads: compare the holders that stay.
    assert [h for h in local if h[0] in steady] == [h for h in ssh if h[0] in steady]
    assert len([h for h in ssh if h[0] in steady]) == 3


async def test_the_watch_loop_behind_a_short_lived_nvidia_smi_is_found_by_the_runbook(node):
    for _ in range(20):  # its nvidia-smi holds the GPUs about 0.8 s of every 1.8 s: a few polls at most
        state = await poll(node)
        # ...and still alive when ps reads it: one that exits between fuser and ps has no identity.
        smi = [h for h in state.holders if h.kind is HolderKind.NVIDIA_SMI and h.start_time]
        if smi:
            break
        await asyncio.sleep(0.3)
    else:
        pytest.fail("the watch loop's nvidia-smi never showed up as a holder in 20 polls")
    assert smi[0].start_time and smi[0].ppid  # a real, identified process: watch runs it through `sh -c`
    b = backend(node)
    try:
        ctx = NodeContext(b, RepairOptions(), None, NodeOutcome(host=b.host))
        loops = await watch_parents(ctx, state.holders)
    finally:
        await b.close()
    assert [(w.pid, w.kind, w.command) for w in loops] == [(node.pids["watch"], HolderKind.WATCH,
                                                            "watch -n 1 nvidia-smi")]


async def test_without_fuser_the_node_is_not_healthy_and_names_the_missing_tool(node):
    state = await poll(node, "no-fuser")
    missing = state.missing_section("holders")
    assert missing is not None and missing.reason == "tool missing" and "psmisc" in missing.detail
    assert state.holders == ()
    assert diagnose(state).verdict is Verdict.BROKEN  # a guard of the repair needs it: an error, not a shrug


async def test_a_non_root_login_without_sudo_says_it_cannot_see_every_holder(node):
    state = await poll(node, "full", OPERATOR)
    missing = state.missing_section("holders")
    assert missing is not None and missing.reason == "permission denied" and "--sudo" in missing.detail
    # The real fuser, as operator1, saw none of root's or nobody's holders: believing it would read "none".
    raw = await on_node(node, "sh", "-c", "fuser -v /dev/nvidia* 2>&1; echo rc=$?")
    b = backend(node, "full", OPERATOR)
    try:
        as_operator = (await b.run(["sh", "-c", "fuser -v /dev/nvidia* 2>&1; echo rc=$?"])).stdout
    finally:
        await b.close()
    assert "dcgm-exporter" in raw or "sleep" in raw
    assert as_operator.strip().endswith("rc=1")  # nothing found, no error: the silent gap the probe now names
    assert diagnose(state).verdict is not Verdict.HEALTHY


def test_without_fuser_a_repair_is_refused_and_nvidia_smi_r_never_runs(node, tmp_path, capsys):
    code = main(["repair", node.target("no-fuser"), "--yes", "--json", "--audit-dir", str(tmp_path),
                 *node.rig.cli_args()])
    out = json.loads(capsys.readouterr().out)["nodes"][0]
    assert code == 1 and out["result"] == "refused" and "fuser" in out["message"]
    assert not any(call.split()[:1] == ["-r"] for call in node.nvidia_smi_calls())


async def test_a_signal_goes_out_only_to_the_process_that_was_selected(tmp_path):
    real = RealNode(tmp_path / "node", {"full": set()}).start()
    try:
        state = await poll(real)
        work = next(h for h in state.holders if h.pid == real.pids["workload"])
        b = backend(real)
        try:
            stale = ProcessIdentity(work.pid, "Mon Jan  1 00:00:00 2024", work.command)
            with pytest.raises(ProcessChanged):
                await b.signal(work.pid, signal.SIGTERM, stale)
            assert str(work.pid) in await on_node(real, "ps", "-o", "pid=", "-p", str(work.pid))  # untouched
            outcome = await b.signal(work.pid, signal.SIGTERM, ProcessIdentity(work.pid, work.start_time, work.command))
            assert outcome.signalled
        finally:
            await b.close()
        for _ in range(50):
            if not (await on_node(real, "ps", "-o", "pid=", "-p", str(work.pid))).strip():
                break
            await asyncio.sleep(0.1)
        else:
            pytest.fail("the SIGTERMed workload is still alive after 5 s")
    finally:
        real.stop()


# ---- a node without some of the "fixed" device files (the real H200 has no nvidia-modeset, nvidia-nvlink
# or nvidia-nvswitchctl) ------------------------------------------------------------------------------------
# The runbook's fuser used to name all six whether they existed or not: with no holder left, the real
# fuser then exits 1 saying only "Specified filename ... does not exist.", which read as unparseable, so
# verify-no-holders failed on every run and such a node could never be repaired.


@pytest.fixture(scope="module")
def h200_like(tmp_path_factory):
    """An idle node (nothing holds a device) whose /dev is shaped like the real H200's; one port lacks find."""
    real = RealNode(tmp_path_factory.mktemp("h200-like"), {"full": set(), "no-find": {"find"}}, absent=H200_ABSENT,
                    idle=True).start()
    yield real
    real.stop()


def context_on(node: RealNode, variant: str = "full") -> tuple[SshBackend, NodeContext]:
    b = backend(node, variant)
    return b, NodeContext(b, RepairOptions(holder_timeout=10, poll_interval=0.2), None, NodeOutcome(host=b.host))


def fuser_lines(ctx: NodeContext) -> list[str]:
    return [c for step in ctx.outcome.steps for c in step.commands if c.startswith("fuser ")]


async def test_verify_no_holders_passes_with_the_real_fuser_on_a_node_without_some_fixed_device_files(h200_like):
    state = await poll(h200_like)
    assert state.holders == () and state.missing_section("holders") is None
    b, ctx = context_on(h200_like)
    ctx.step = "verify-no-holders"
    try:
        await verify_no_holders(ctx, state)  # raised StepFailed ("fuser said: Specified filename ...") before
    finally:
        await b.close()
    (fuser,) = fuser_lines(ctx)
    named = fuser.split()[2:]
    assert "/dev/nvidia0" in named and "/dev/nvidiactl" in named and "/dev/nvidia-nvswitch3" in named
    assert not set(named) & set(H200_ABSENT)  # only the files the node has


async def test_a_holder_on_a_node_without_some_fixed_device_files_is_still_found(tmp_path):
    real = RealNode(tmp_path / "node", {"full": set()}, absent=H200_ABSENT).start()
    try:
        state = await poll(real)
        b, ctx = context_on(real)
        ctx.step = "verify-no-holders"
        try:
            found = await read_holders(ctx, state)
        finally:
            await b.close()
    finally:
        real.stop()
    pids = real.pids
    assert {pids["dcgm-exporter"], pids["nv-hostengine"], pids["workload"]} <= {h.pid for h in found}


async def test_without_a_listing_of_the_device_files_verify_no_holders_refuses(h200_like):
    state = await poll(h200_like)
    b, ctx = context_on(h200_like, "no-find")
    ctx.step = "verify-no-holders"
    try:
        with pytest.raises(StepFailed, match="cannot prove that no process holds a GPU device.*find"):
            await read_holders(ctx, state)
    finally:
        await b.close()
    assert fuser_lines(ctx) == []  # no fuser on a guess of which files exist
