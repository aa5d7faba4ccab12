"""``lab up --slurm``: a real Slurm cluster (Debian's slurm-wlm 22.05, munge) over two lab nodes.

The lab here is this file's own (``slurmlab*`` in the session's tmp folder, on 127.0.8.x: the suite's
lab is on 127.0.6.x, test_lab.py's one-node lab on 127.0.7.x), booted once for the file and torn down
by the last test. Slurm's own clients run on the host with ``SLURM_CONF=DIR/slurm.conf``, as an
operator runs them; the nodes are reached over real SSH. States are waited for with deadlines only.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from nvls_tui.lab import lifecycle
from nvls_tui.lab import slurm as lab_slurm
from nvls_tui.lab.machine import missing_requirements, mounted_under
from tests.lab.own_lab import SUBNETS, own_lab
from tests.lab.test_lab import cli, poll  # the lab's own helpers: real processes, deadlines only

pytestmark = [pytest.mark.lab, pytest.mark.xdist_group("lab-slurm")]

SUBNET = SUBNETS["slurmlab"]
"""This file's lab's subnet (tests/lab/own_lab.py): 127.0.8.x and Slurm's ports of it are its alone."""
NODES = ["gpu05", "gpu06"]


def slurm(folder: Path, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """A Slurm client on the host, as an operator runs it: only SLURM_CONF says which cluster."""
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, check=False, cwd="/",
                          env={**os.environ, "SLURM_CONF": str(folder / "slurm.conf")})


def ssh(folder: Path, node: str, command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ssh", "-F", str(folder / "ssh_config"), node, command], capture_output=True, text=True,
                          timeout=60, check=False)


def states(folder: Path) -> dict[str, str]:
    out = slurm(folder, "sinfo", "-h", "-N", "-o", "%N %T").stdout
    return dict(line.split() for line in out.splitlines() if len(line.split()) == 2)


def lab_processes(folder: Path) -> list[str]:
    """Every process on this machine (the nodes' too: their PID namespaces are children of this one)
    whose command line names the lab's folder: munged, slurmctld, slurmd."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if str(folder) in cmd and state != "Z":
            found.append(f"{entry.name} {cmd.strip()}")
    return found


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


@pytest.fixture(scope="module")
def slurm_lab(tmp_path_factory):
    """gpu05 and gpu06 acting the seed incident, with the lab's Slurm cluster over them: the folder."""
    with own_lab(tmp_path_factory, "slurmlab", NODES, "seed-incident", slurm=True) as (folder, _nodes):
        yield folder


def test_lab_up_slurm_says_what_to_install_when_slurm_is_missing(tmp_path, monkeypatch, capsys):
    problem = missing_requirements()
    if problem:
        pytest.skip(f"the lab cannot boot here: {problem}")
    from nvls_tui import cli as cli_module

    monkeypatch.setattr(lab_slurm, "program", lambda name: None if name in ("munged", "slurmctld") else f"/x/{name}")

    def no_boot(*_a, **_k):  # a guard: nothing may be mounted when Slurm is missing
        raise AssertionError("lab up went on without Slurm")

    monkeypatch.setattr(lifecycle, "mount_overlay", no_boot)
    folder = tmp_path / "lab"
    assert cli_module.main(["lab", "up", "--slurm", "--dir", str(folder)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "install Debian's slurm-wlm munge" in err and "apt-get install" in err, err
    assert not folder.exists()


def test_every_node_is_idle_in_sinfo_and_scontrol_from_the_host(slurm_lab):
    folder = slurm_lab
    poll(lambda: states(folder) == {"gpu05": "idle", "gpu06": "idle"}, 60, "both nodes idle in sinfo")
    conf = (folder / "slurm.conf").read_text()
    assert "ClusterName=nvlslab" in conf and f"AuthInfo=socket={folder}/munge/munge.socket" in conf
    assert (folder / "munge.key").stat().st_mode & 0o777 == 0o400
    shown = slurm(folder, "scontrol", "show", "node", "-o", "gpu05,gpu06")  # 22.05 takes one node argument
    assert shown.returncode == 0, shown.stderr
    lines = {line.split()[0]: line for line in shown.stdout.splitlines()}
    assert "State=IDLE " in lines["NodeName=gpu05"] and "State=IDLE " in lines["NodeName=gpu06"]
    assert f"NodeAddr=127.0.{SUBNET}.10 " in lines["NodeName=gpu05"]
    assert "Partitions=gpu " in lines["NodeName=gpu05"] and "Gres=gpu:8 " in lines["NodeName=gpu05"]
    # Each node runs its own slurmd and munged as real units (its own /etc/slurm/slurm.conf links to the lab's).
    for node in NODES:
        done = ssh(folder, node, "systemctl is-active munge.service slurmd.service; sinfo -h -n $(hostname) -o %T")
        assert done.stdout.split() == ["active", "active", "idle"], done.stdout + done.stderr
    status = cli("lab", "status", "--dir", str(folder)).stdout.splitlines()
    assert any(line.startswith("slurmctld\t") and "\trunning (pid " in line for line in status), status
    assert "slurm\tgpu05\tidle" in status and "slurm\tgpu06\tidle" in status


def test_srun_runs_a_command_on_the_node_it_names(slurm_lab):
    done = slurm(slurm_lab, "srun", "-w", "gpu06", "hostname", timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "gpu06"
    # One task per node, labelled (as `check --via slurm` runs its probe).
    both = slurm(slurm_lab, "srun", "--quiet", "--label", "-N", "2", "--ntasks-per-node=1", "-w", "gpu05,gpu06",
                 "hostname", timeout=120)
    assert both.returncode == 0, both.stderr
    assert sorted(both.stdout.split("\n")[:-1]) == ["0: gpu05", "1: gpu06"]


def test_a_job_holds_the_nodes_gpus_until_scancel_ends_it(slurm_lab):
    folder = slurm_lab
    # Two of gpu05's GPUs from Slurm (CUDA_VISIBLE_DEVICES=0,1), held as a CUDA job holds them.
    submitted = slurm(folder, "sbatch", "--parsable", "-w", "gpu05", "--gres=gpu:2", "-J", "hold", "-o", "/dev/null",
                      "--wrap", "exec /usr/local/bin/nvls-lab-hold")
    assert submitted.returncode == 0, submitted.stderr
    job = submitted.stdout.strip().split(";")[0]

    def job_state() -> str:
        return slurm(folder, "squeue", "-h", "-j", job, "-o", "%T %N").stdout.strip()

    poll(lambda: job_state() == "RUNNING gpu05", 90, f"job {job} running on gpu05")
    # The job's own process (as slurmd knows it) holds the GPUs read-write and mapped, as CUDA does.
    pids = poll(lambda: [w.split()[0] for w in ssh(folder, "gpu05", f"scontrol listpids {job}").stdout.splitlines()
                         if w.split()[:1] != ["PID"] and w.split()], 60, "the job's processes")
    held = poll(lambda: (lambda out: out if "nvls-lab-hold" in out else "")(
        ssh(folder, "gpu05", "fuser -v /dev/nvidia0 /dev/nvidia1 2>&1").stdout), 60, "the job's hold on the GPUs")
    holder = [line.split() for line in held.splitlines() if "nvls-lab-hold" in line]
    assert all(words[-3] in pids and words[-2] == "F...m" for words in holder), (held, pids)
    assert len(holder) == 2  # /dev/nvidia0 and /dev/nvidia1, not the others
    assert ssh(folder, "gpu05", "fuser /dev/nvidia2 2>&1").stdout.split().count(holder[0][-3] + "m") == 0
    # One CPU of the node's: "mixed", unless the node has only that one ("allocated").
    cpus = next(int(w.split("=")[1]) for w in slurm(folder, "scontrol", "show", "node", "-o", "gpu05").stdout.split()
                if w.startswith("CPUTot="))
    busy = "allocated" if cpus == 1 else "mixed"
    assert poll(lambda: states(folder).get("gpu05") == busy, 30, f"gpu05 {busy} in sinfo")

    cancelled = slurm(folder, "scancel", job)
    assert cancelled.returncode == 0, cancelled.stderr
    poll(lambda: job_state() in ("", "CANCELLED gpu05", "COMPLETED gpu05"), 90, f"job {job} ended")
    poll(lambda: ssh(folder, "gpu05", "pgrep -x nvls-lab-hold").stdout.strip() == "", 60, "the hold gone")
    assert "nvls-lab-hold" not in ssh(folder, "gpu05", "fuser -v /dev/nvidia0 2>&1").stdout
    poll(lambda: states(folder).get("gpu05") == "idle", 60, "gpu05 idle again")


# ---- nvls-tui around the real Slurm (issue 15's acceptance) -----------------------------------
def nvls(folder: Path, *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """nvls-tui against the lab over real SSH, with the lab's Slurm named by --slurm-conf."""
    return cli(*args, "--ssh-config", str(folder / "ssh_config"), "--slurm-conf", str(folder / "slurm.conf"),
               "--audit-dir", str(folder.parent / f"{folder.name}-audit"), timeout=timeout)


def node_line(folder: Path, node: str) -> str:
    return slurm(folder, "scontrol", "show", "node", "-o", node).stdout


def audit_commands(report: dict) -> list[str]:
    """The commands of one repair's audit log, as command lines."""
    path = report["nodes"][0]["audit_log"]
    records = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    return [" ".join(r["argv"]) for r in records if r.get("event") == "command-started"]


def test_check_via_slurm_equals_check_over_ssh(slurm_lab):
    folder = slurm_lab
    poll(lambda: states(folder) == {"gpu05": "idle", "gpu06": "idle"}, 60, "both nodes idle")
    over_ssh = json.loads(nvls(folder, "check", "--json", "gpu[05-06]").stdout)
    via = nvls(folder, "check", "--json", "--via", "slurm", "gpu[05-06]")
    via_slurm = json.loads(via.stdout)
    # Apart from how a node was reached (srun's own job allocates the nodes for a moment) and what
    # lives seconds on a lab node (the watch loop's and the snapshot timer's nvidia-smi), the same facts.
    ignored = {"scheduler", "holders", "services", "findings"}

    def facts(report):
        return [{k: v for k, v in n.items() if k not in ignored} for n in report["nodes"]]

    def lasting(node):
        return sorted((h["pid"], h["command"]) for h in node["holders"] if h["kind"] != "nvidia-smi")

    def units(node):
        return {k: v for k, v in node["services"].items() if not k.startswith("nvidia-snapshot")}

    assert facts(via_slurm) == facts(over_ssh), via.stderr
    assert [lasting(n) for n in via_slurm["nodes"]] == [lasting(n) for n in over_ssh["nodes"]]
    assert [units(n) for n in via_slurm["nodes"]] == [units(n) for n in over_ssh["nodes"]]
    assert [n["verdict"] for n in via_slurm["nodes"]] == ["broken", "broken"]  # the seed incident, both ways


def test_a_job_on_the_node_is_seen_and_refuses_the_repair_until_it_is_cancelled(slurm_lab):
    folder = slurm_lab
    poll(lambda: states(folder).get("gpu05") == "idle", 60, "gpu05 idle")
    # The whole node (--exclusive): Slurm calls it allocated (a job on some of its CPUs is "mixed").
    submitted = slurm(folder, "sbatch", "--parsable", "--exclusive", "-w", "gpu05", "--gres=gpu:2", "-J", "train",
                      "-o", "/dev/null", "--wrap", "exec /usr/local/bin/nvls-lab-hold")
    assert submitted.returncode == 0, submitted.stderr
    job = int(submitted.stdout.strip().split(";")[0])
    poll(lambda: "nvls-lab-hold" in ssh(folder, "gpu05", "fuser -v /dev/nvidia0 2>&1").stdout, 90, "the job's hold")

    checked = nvls(folder, "check", "--json", "gpu05")
    (node,) = json.loads(checked.stdout)["nodes"]
    assert node["scheduler"]["kind"] == "slurm" and node["scheduler"]["state"] == "allocated", node["scheduler"]
    assert [j["id"] for j in node["scheduler"]["jobs"]] == [job]
    held = [h for h in node["holders"] if h["job"] is not None]
    assert held and {h["job"]["id"] for h in held} == {job} and held[0]["job"]["name"] == "train"

    refused = nvls(folder, "repair", "--yes", "--json", "gpu05")
    (outcome,) = json.loads(refused.stdout)["nodes"]
    assert refused.returncode == 1 and outcome["result"] == "refused", outcome
    assert f"still runs 1 Slurm job: {job} (root/train)" in outcome["message"]
    commands = audit_commands(json.loads(refused.stdout))
    assert "nvidia-smi -r" not in commands
    assert any(c.startswith("scontrol update NodeName=gpu05 State=DRAIN") for c in commands)
    assert "scontrol update NodeName=gpu05 State=RESUME" in commands
    shown = node_line(folder, "gpu05")
    assert "DRAIN" not in shown and "nvls-tui" not in shown, shown  # no DRAIN it did not have

    assert slurm(folder, "scancel", str(job)).returncode == 0
    poll(lambda: ssh(folder, "gpu05", "pgrep -x nvls-lab-hold").stdout.strip() == "", 60, "the hold gone")
    poll(lambda: states(folder).get("gpu05") == "idle", 60, "gpu05 idle again")
    repaired = nvls(folder, "repair", "--yes", "--json", "gpu05")
    report = json.loads(repaired.stdout)
    assert report["nodes"][0]["result"] == "repaired", report["nodes"][0]
    commands = audit_commands(report)
    drain = next(i for i, c in enumerate(commands) if c.startswith("scontrol update NodeName=gpu05 State=DRAIN"))
    resume = commands.index("scontrol update NodeName=gpu05 State=RESUME")
    assert drain < commands.index("nvidia-smi -r") < resume
    shown = node_line(folder, "gpu05")
    assert "DRAIN" not in shown and "nvls-tui" not in shown, shown


def test_a_failed_repair_leaves_the_node_drained_with_the_step_it_failed_at(slurm_lab):
    import asyncio

    from nvls_tui.cli import build_parser, build_settings
    from nvls_tui.runbook import Runbook
    from nvls_tui.runbook.steps import RepairOptions
    from nvls_tui.scheduler.slurm import Slurm
    from nvls_tui.sim.store import NodeStore
    from nvls_tui.targets import resolve_backends

    folder = slurm_lab
    poll(lambda: states(folder).get("gpu06") == "idle", 60, "gpu06 idle")
    # gpu06's fabric now never registers (the simulated hardware; its systemd, FM daemon, sshd are real).
    with NodeStore(folder / "nodes" / "gpu06" / "hw").locked(write=True) as (node, _clock):
        node.stuck_in_progress = True
    args = build_parser().parse_args(["repair", "--ssh-config", str(folder / "ssh_config"), "gpu06"])
    (backend,) = resolve_backends(build_settings(args))
    hook = Slurm(str(folder / "slurm.conf")).hook("gpu06")
    options = RepairOptions(fm_timeout=15.0, poll_interval=1.0, recheck_transient=False)

    async def run():
        try:
            return await Runbook(backend, options, scheduler=hook).run()
        finally:
            await backend.close()

    outcome = asyncio.run(run())
    assert outcome.result == "failed", outcome.message
    failed = next(st.name for st in outcome.steps if st.status == "failed" and st.name != "restore")
    shown = node_line(folder, "gpu06")
    assert "DRAIN" in shown and f"Reason=nvls-tui: repair failed at {failed}" in shown, shown
    with NodeStore(folder / "nodes" / "gpu06" / "hw").locked(write=True) as (node, _clock):
        node.stuck_in_progress = False
    assert slurm(folder, "scontrol", "update", "NodeName=gpu06", "State=RESUME").returncode == 0


# ---- job names of any characters; a node busy with no job read (item B) ------------------------
# `sbatch -J` takes any of these and squeue prints them as they are; nvls-tui shows each less its control
# characters (text is data).
ODD_NAMES = {"gpu05": {"llama|finetune": "llama|finetune", "new\nline|x": "new\nline|x"},
             "gpu06": {"tr \"7b\" 'q' ünï 訓練": "tr \"7b\" 'q' ünï 訓練", "\x1b[31mred\x07|": "red|"}}


def submit(folder: Path, node: str, name: str) -> int:
    """A job of one CPU on ``node`` whose process holds no GPU (a job between its steps)."""
    done = slurm(folder, "sbatch", "--parsable", "-w", node, "-J", name, "-o", "/dev/null", "--wrap", "exec sleep 900")
    assert done.returncode == 0, done.stderr
    return int(done.stdout.strip().split(";")[0])


def job_states(folder: Path, jobs: list[int]) -> dict[int, str]:
    out = slurm(folder, "squeue", "-h", "-j", ",".join(map(str, jobs)), "-o", "%A %T").stdout
    return {int(w[0]): w[1] for w in (line.split() for line in out.splitlines()) if len(w) == 2}


def end_jobs(folder: Path, jobs: list[int]) -> None:
    slurm(folder, "scancel", *map(str, jobs))
    poll(lambda: states(folder) == {"gpu05": "idle", "gpu06": "idle"}, 120, "both nodes idle again")


def test_jobs_named_with_any_characters_are_read_and_a_reset_under_them_is_refused(slurm_lab):
    folder = slurm_lab
    poll(lambda: states(folder) == {"gpu05": "idle", "gpu06": "idle"}, 90, "both nodes idle")
    # gpu05's Fabric Manager is dead (the seed incident's, or killed again after an earlier test's repair):
    # the node needs a GPU reset, which must never run under a job.
    fm = "nvidia-fabricmanager.service"
    killed = ssh(folder, "gpu05", f"if systemctl is-active -q {fm}; then systemctl kill -s KILL --kill-whom=main {fm}; fi")
    assert killed.returncode == 0, killed.stderr
    poll(lambda: ssh(folder, "gpu05", f"systemctl is-active {fm}").stdout.strip() != "active", 30, "FM dead")
    jobs = {node: {submit(folder, node, name): shown for name, shown in names.items()}
            for node, names in ODD_NAMES.items()}
    ids = [j for by_id in jobs.values() for j in by_id]
    try:
        poll(lambda: set(job_states(folder, ids).values()) == {"RUNNING"}, 90, "every job running")
        # A suspended job holds its node as much as a running one (squeue -t RUNNING did not list it).
        suspended = next(iter(jobs["gpu06"]))
        assert slurm(folder, "scontrol", "suspend", str(suspended)).returncode == 0
        poll(lambda: job_states(folder, [suspended]) == {suspended: "SUSPENDED"}, 60, "the job suspended")

        checked = json.loads(nvls(folder, "check", "--json", "gpu[05-06]").stdout)
        for node in checked["nodes"]:
            sched = node["scheduler"]
            assert sched["error"] is None and sched["state"] in ("mixed", "allocated"), sched
            assert sorted((j["id"], j["name"]) for j in sched["jobs"]) == sorted(jobs[node["host"]].items())

        refused = nvls(folder, "repair", "--yes", "--json", "--wait-jobs", "0", "gpu05")
        report = json.loads(refused.stdout)
        (outcome,) = report["nodes"]
        assert refused.returncode == 1 and outcome["result"] == "refused", outcome
        assert "gpu05 still runs 2 Slurm jobs" in outcome["message"] and "llama|finetune" in outcome["message"]
        commands = audit_commands(report)
        assert "nvidia-smi -r" not in commands
        assert "scontrol update NodeName=gpu05 State=RESUME" in commands
        assert "DRAIN" not in node_line(folder, "gpu05")

        # The squeue stand-in of the unit tests prints what the real one prints, byte for byte.
        from nvls_tui.parsers.slurm import _END, squeue_format
        from nvls_tui.scheduler.slurm import JOB_STATES
        from tests.slurm_clients import QueuedJob, render_squeue

        fmt = squeue_format("nvls0123456789ab")
        for node, by_id in jobs.items():
            for job, _shown in by_id.items():
                real = slurm(folder, "squeue", "-h", "-j", str(job), "-t", JOB_STATES, "-o", fmt)
                assert real.returncode == 0, real.stderr
                name = next(n for n, s in ODD_NAMES[node].items() if s == by_id[job])
                state = "SUSPENDED" if job == suspended else "RUNNING"
                # The end time (%e) is the one field that is the real job's own: NONE, or its start plus its time
                # limit (Slurm gives an unlimited job a year); the parser reads either (parsers/slurm._END).
                mark_id, user, end, rest = real.stdout.split("|", 3)
                assert _END.fullmatch(end), real.stdout
                shown = render_squeue(fmt, [QueuedJob(job, "root", name, state, node)]).split("|", 3)
                assert [mark_id, user, rest] == [shown[0], shown[1], shown[3]]
    finally:
        end_jobs(folder, ids)


def test_a_node_slurm_calls_busy_with_no_job_read_is_refused_by_the_headless_repair(slurm_lab, monkeypatch,
                                                                                     capsys):
    from nvls_tui import cli as cli_module
    from nvls_tui.scheduler import slurm as scheduler_slurm

    folder = slurm_lab
    poll(lambda: states(folder) == {"gpu05": "idle", "gpu06": "idle"}, 90, "both nodes idle")
    job = submit(folder, "gpu05", "unseen")
    try:
        poll(lambda: job_states(folder, [job]) == {job: "RUNNING"}, 90, "the job running")
        # The real squeue, asked for pending jobs only, lists none of gpu05's: as a job squeue could not
        # show. Slurm's own word that gpu05 is busy is enough to refuse.
        monkeypatch.setattr(scheduler_slurm, "JOB_STATES", "PENDING")
        argv = ["--ssh-config", str(folder / "ssh_config"), "--slurm-conf", str(folder / "slurm.conf"),
                "--audit-dir", str(folder.parent / f"{folder.name}-audit")]
        capsys.readouterr()
        cli_module.main(["check", "--json", *argv, "gpu05"])  # its exit status is the node's verdict
        (node,) = json.loads(capsys.readouterr().out)["nodes"]
        assert node["scheduler"]["jobs"] == [] and node["verdict"] != "healthy"
        missing = [f for f in node["findings"] if f["code"] == "EVIDENCE_MISSING" and f.get("section") == "scheduler"]
        assert missing and "but no job on it was read" in missing[0]["message"], node["findings"]
        code = cli_module.main(["repair", "--yes", "--json", "--wait-jobs", "0", *argv, "gpu05"])
        report = json.loads(capsys.readouterr().out)
        (outcome,) = report["nodes"]
        assert code == 1 and outcome["result"] == "refused", outcome
        assert "but no job on it could be read" in outcome["message"]
        assert "nvidia-smi -r" not in audit_commands(report)
        assert "DRAIN" not in node_line(folder, "gpu05")
    finally:
        end_jobs(folder, [job])


# ---- a job's process that leaves the job's tree (issue 37 item 6) -------------------------------
ESCAPE = "/usr/local/bin/nvls-lab-hold --daemonize 3; exec sleep 900"
"""A job whose python daemonizes (double fork, own session) holding /dev/nvidia3, while the script sleeps."""


def escaped_holder(folder: Path, job: int) -> int:
    """The PID of the job's daemonized holder of /dev/nvidia3 (its parent is the node's init)."""
    def found() -> int:
        out = ssh(folder, "gpu05", "for p in $(pgrep -x nvls-lab-hold); do echo $p $(ps -o ppid= -p $p); done").stdout
        pids = [int(w[0]) for w in (line.split() for line in out.splitlines()) if w[1:] == ["1"]]
        return pids[0] if len(pids) == 1 else 0
    pid = poll(found, 90, f"job {job}'s holder, daemonized out of its tree")
    held = ssh(folder, "gpu05", "fuser /dev/nvidia3 2>/dev/null").stdout.split()  # the PIDs (access on stderr)
    assert str(pid) in held, (pid, held)
    return pid


def holders_of_gpu3(folder: Path) -> list[tuple[int, str]]:
    """What nvls-tui's check reads as holding gpu05's GPU 3 (its own read, over real SSH)."""
    (node,) = json.loads(nvls(folder, "check", "--json", "gpu05").stdout)["nodes"]
    return sorted((h["pid"], h["command"]) for h in node["holders"] if "nvls-lab-hold" in h["command"])


def test_a_job_process_that_leaves_the_jobs_tree_is_ended_by_scancel_under_cgroup_tracking(slurm_lab):
    folder = slurm_lab
    if lab_slurm.host_tracking() != "cgroup":
        pytest.skip("this host has no cgroup v1 freezer to give the lab's nodes: the lab tracks jobs by parents")
    assert lab_slurm.tracking_of(folder) == "cgroup"
    assert "ProctrackType=proctrack/cgroup" in (folder / "slurm.conf").read_text()
    poll(lambda: states(folder).get("gpu05") == "idle", 90, "gpu05 idle")
    job = submit_wrap(folder, "escape", ESCAPE)
    pid = escaped_holder(folder, job)
    # Slurm counts the daemonized holder as the job's (it is in the job's freezer cgroup), and nvls-tui
    # reads it as the job's holder.
    listed = ssh(folder, "gpu05", f"scontrol listpids {job}").stdout.split()
    assert str(pid) in listed, listed
    assert [p for p, _c in holders_of_gpu3(folder)] == [pid]

    assert slurm(folder, "scancel", str(job)).returncode == 0
    poll(lambda: job_states(folder, [job]) == {}, 90, f"job {job} ended")
    poll(lambda: ssh(folder, "gpu05", "pgrep -x nvls-lab-hold").stdout.strip() == "", 60, "the escaped holder ended")
    assert holders_of_gpu3(folder) == []  # nvls-tui's next read finds no holder left
    poll(lambda: states(folder).get("gpu05") == "idle", 60, "gpu05 idle again")
    # ... and so does the repair's own read before its reset: nothing of the job's is left to refuse on.
    repaired = nvls(folder, "repair", "--yes", "--json", "--wait-jobs", "0", "gpu05")
    (outcome,) = json.loads(repaired.stdout)["nodes"]
    assert outcome["result"] == "repaired", outcome
    assert "nvls-lab-hold" not in json.dumps(outcome)


def test_under_tracking_by_parents_the_escaped_holder_outlives_scancel_and_the_repair_stops_at_it(slurm_lab):
    """The lab as it ran before (proctrack/linuxproc): the escape a real cluster's cgroups would catch
    is left to nvls-tui, whose repair must see the holder and reset nothing."""
    from nvls_tui.lab.machine import load_state
    from nvls_tui.runbook.steps import RepairOptions

    folder = slurm_lab
    nodes = load_state(folder)[1]
    poll(lambda: states(folder) == {"gpu05": "idle", "gpu06": "idle"}, 90, "both nodes idle")
    lab_slurm.set_tracking(folder, nodes, "linuxproc")
    pid = 0
    try:
        assert lab_slurm.tracking_of(folder) == "linuxproc"
        job = submit_wrap(folder, "escape", ESCAPE)
        pid = escaped_holder(folder, job)
        assert str(pid) not in ssh(folder, "gpu05", f"scontrol listpids {job}").stdout.split()
        assert slurm(folder, "scancel", str(job)).returncode == 0
        poll(lambda: job_states(folder, [job]) == {}, 90, f"job {job} ended")
        poll(lambda: states(folder).get("gpu05") == "idle", 60, "gpu05 idle in Slurm")
        # Slurm says the node is free; the holder is still there, and nvls-tui reads it.
        assert [p for p, _c in holders_of_gpu3(folder)] == [pid]
        # gpu05's Fabric Manager dies: the node needs the GPU reset that the holder must stop.
        fm = "nvidia-fabricmanager.service"
        killed = ssh(folder, "gpu05", f"if systemctl is-active -q {fm}; then systemctl kill -s KILL --kill-whom=main {fm}; fi")
        assert killed.returncode == 0, killed.stderr
        poll(lambda: ssh(folder, "gpu05", f"systemctl is-active {fm}").stdout.strip() != "active", 30, "FM dead")
        # The repair stops what it may, then finds the holder still there at verify-no-holders: it fails
        # there, resets nothing, and leaves the node drained (waiting 15 s for the holder, not 2 min).
        outcome = repair_in_process(folder, "gpu05", RepairOptions(holder_timeout=15.0, recheck_transient=False))
        failed = [st.name for st in outcome.steps if st.status == "failed"]
        assert outcome.result == "failed" and failed == ["verify-no-holders"], (outcome.result, failed, outcome.message)
        assert f"1 process still holds /dev/nvidia* after 0:15: {pid} (" in outcome.message, outcome.message
        assert not any("nvidia-smi -r" in c for st in outcome.steps for c in st.commands)
        shown = node_line(folder, "gpu05")
        assert "Reason=nvls-tui: repair failed at verify-no-holders" in shown, shown
    finally:
        if pid:
            ssh(folder, "gpu05", f"kill {pid}")
            poll(lambda: ssh(folder, "gpu05", "pgrep -x nvls-lab-hold").stdout.strip() == "", 60, "the holder ended")
        slurm(folder, "scontrol", "update", "NodeName=gpu05", "State=RESUME")
        lab_slurm.set_tracking(folder, nodes, lab_slurm.host_tracking())


def repair_in_process(folder: Path, node: str, options):
    """One node's repair as the CLI runs it, with ``options`` the CLI does not offer (shorter waits)."""
    import asyncio

    from nvls_tui.cli import build_parser, build_settings
    from nvls_tui.runbook import Runbook
    from nvls_tui.scheduler.slurm import Slurm
    from nvls_tui.targets import resolve_backends

    args = build_parser().parse_args(["repair", "--ssh-config", str(folder / "ssh_config"), node])
    (backend,) = resolve_backends(build_settings(args))

    async def run():
        try:
            return await Runbook(backend, options, scheduler=Slurm(str(folder / "slurm.conf")).hook(node)).run()
        finally:
            await backend.close()

    return asyncio.run(run())


def submit_wrap(folder: Path, name: str, script: str) -> int:
    """A job of one GPU on gpu05 running ``script``."""
    done = slurm(folder, "sbatch", "--parsable", "-w", "gpu05", "--gres=gpu:1", "-J", name, "-o", "/dev/null",
                 "--wrap", script)
    assert done.returncode == 0, done.stderr
    return int(done.stdout.strip().split(";")[0])


def test_lab_down_stops_every_slurm_daemon_and_leaves_nothing(slurm_lab):
    folder = slurm_lab
    state = json.loads((folder / "lab.json").read_text())
    record, cgroups = state["slurm"], [c for n in state["nodes"] for c in n["cgroups"]]
    assert cgroups and all(Path(c).is_dir() for c in cgroups)
    # A job left running: lab down ends it with the rest.
    left = slurm(folder, "sbatch", "--parsable", "-w", "gpu06", "-o", "/dev/null", "--wrap",
                 "exec /usr/local/bin/nvls-lab-hold 3")
    assert left.returncode == 0, left.stderr
    poll(lambda: "RUNNING" in slurm(folder, "squeue", "-h", "-o", "%T").stdout, 90, "the left job running")
    daemons = lab_processes(folder)
    for name in ("slurmctld", "slurmd", "munged"):
        assert any(f"/{name} " in p for p in daemons), (name, daemons)
    done = cli("lab", "down", "--dir", str(folder))
    assert done.returncode == 0, done.stderr
    assert lab_processes(folder) == []
    for key in ("slurmctld_pid", "munged_pid"):  # this process started them (the fixture's lab up)
        pid = record[key]
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        assert not alive(pid), (key, pid)
    assert mounted_under(folder) == []
    assert [c for c in cgroups if Path(c).exists()] == []
    assert sorted(p.name for p in folder.iterdir()) == []
    assert lab_slurm.node_states(folder) is None  # no slurm.conf, no cluster
