"""Issue 40's real parts: the autopilot as a service on a lab bastion, under real systemd, over real SSH, with
the lab's real Slurm.

The lab here is this file's own (``aplab*`` in the session's tmp folder, on 127.0.25.x and Slurm's ports of
that subnet): gpu05 and gpu06 with a Slurm cluster over them (the session's lab has none, and a drained node
is what the budget must end in), and the lab's bastion (:mod:`nvls_tui.lab.bastion`), where
``contrib/systemd/nvls-tui-autopilot.service`` is installed as it is and an operator's drop-in sets its
``ExecStart`` (targets and limits) and ``User=root`` (why: :data:`USER`). Faults are injected on the nodes
(FM SIGKILLed, as in the seed incident); every wait is on the state itself (the audit log the service
writes, systemd's and Slurm's own words), with deadlines only.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nvls_tui.lab import bastion as lab_bastion
from nvls_tui.lab.machine import LabNode, node_run
from tests.conftest import LAB_COMMAND_TIMEOUT
from tests.lab.own_lab import own_lab
from tests.lab.test_lab_golden import kill_fm
from tests.waiting import scaled, until_sync

pytestmark = [pytest.mark.lab, pytest.mark.xdist_group("lab-autopilot")]

NODES = ("gpu05", "gpu06")
UNIT = lab_bastion.UNIT
HOSTS_FILE = "/etc/nvls-tui/autopilot-hosts"
USER = "root"
"""The drop-in's ``User=``: the unit's own ``nvls-tui`` cannot drain or resume a node in a Slurm cluster without
accounting (slurmctld takes ``scontrol update`` only from root and SlurmUser there: "slurm_update error: Invalid
user id", seen on this bastion), and a Python installed under the host's ``/root`` (a pyenv) is not the
bastion's to run as another user. docs/autopilot.md says what a site does instead."""
FM_STARTS = 100
"""``--fm-starts``: this file starts FM by hand on the same nodes, test after test, to kill it (and each repair
starts it): FM flapping is a limit of its own (tests/unit), not what these tests are about."""
REPAIR_TIMEOUT = 240.0
"""One lab repair (about 30 s on a quiet machine) and the rounds around it, before :func:`scaled`."""


@pytest.fixture(scope="module")
def aplab(tmp_path_factory):
    """``(folder, {name: LabNode})``: gpu05 and gpu06 acting the seed incident, Slurm over them, the bastion."""
    with own_lab(tmp_path_factory, "aplab", list(NODES), "seed-incident", slurm=True, bastion=True) as (folder, machines):
        yield folder, {m.name: m for m in machines}


class Service:
    """The autopilot unit on the bastion, as an operator drives it, and what it wrote."""

    def __init__(self, bastion: LabNode, state: str) -> None:
        self.bastion = bastion
        self.state_dir = f"{lab_bastion.STATE_DIR}/{state}"  # each test's own state (breaker, budgets) and audit

    def configure(self, hosts: tuple[str, ...], *limits: str) -> None:
        """The operator's drop-in: the unit's ExecStart with this test's targets and limits."""
        Path(self.bastion.root, HOSTS_FILE.lstrip("/")).write_text("".join(f"{h}\n" for h in hosts))
        lab_bastion.configure_autopilot(self.bastion, [
            "--hosts-file", HOSTS_FILE, "--ssh-config", lab_bastion.SSH_CONFIG, "--mode", "auto",
            "--state-dir", self.state_dir, "--every", "2", "--timeout", f"{scaled(LAB_COMMAND_TIMEOUT):.0f}",
            "--cooldown", "0", "--fm-starts", str(FM_STARTS), *limits], user=USER)

    def systemctl(self, *argv: str, check: bool = True) -> str:
        return node_run(self.bastion, "systemctl", *argv, timeout=scaled(REPAIR_TIMEOUT), check=check).stdout.strip()

    def show(self, prop: str) -> str:
        return self.systemctl("show", "-p", prop, "--value", UNIT)

    def host_path(self, path: str) -> Path:
        return Path(self.bastion.root, path.lstrip("/"))

    def runs(self) -> list[list[dict]]:
        """The autopilot's records, one list per run (per start of the unit), oldest run first; a line being
        written is left out."""
        out = []
        for log in sorted(self.host_path(self.state_dir + "/audit").glob("autopilot-*.jsonl")):
            records = []
            for line in log.read_text().splitlines():
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if record.get("event") == "autopilot":
                    records.append(record)
            out.append(records)
        return out

    def records(self) -> list[dict]:
        return [r for run in self.runs() for r in run]

    def repair_records(self, host: str) -> list[dict]:
        """The records of the (last) repair of ``host`` the service ran (``repair-RUN.jsonl``), none yet: empty;
        a line being written is left out."""
        last: list[dict] = []
        for log in sorted(self.host_path(self.state_dir + "/audit").glob("repair-*.jsonl")):
            records = []
            for line in log.read_text().splitlines():
                try:
                    records.append(json.loads(line))
                except ValueError:
                    continue
            if any(r.get("node") == host for r in records):
                last = records
        return last

    def repair_log(self, host: str) -> list[dict]:
        """The records of the (last) repair of ``host`` the service ran, which must be there."""
        log = self.repair_records(host)
        assert log, f"no repair log of {host}"
        return log

    def saved_state(self) -> dict:
        return json.loads(self.host_path(self.state_dir + "/autopilot-state.json").read_text())

    def stop(self) -> None:
        """``systemctl stop``: the autopilot ends after its round (a repair in progress finishes first)."""
        self.systemctl("stop", UNIT, check=False)
        self.systemctl("reset-failed", UNIT, check=False)


def wait_for(service: Service, what: str, match, timeout: float = REPAIR_TIMEOUT) -> dict:
    """The first of the service's records that ``match``es, waited for; a unit that stopped fails at once."""
    def found():
        state = service.show("ActiveState")
        assert state in ("active", "activating", "deactivating"), \
            f"the unit is {state} while waiting for {what}: {service.systemctl('status', UNIT, '--no-pager', check=False)}"
        return next((r for r in service.records() if match(r)), None)

    return until_sync(found, scaled(timeout), what, every=0.5)


def action(record: dict, node: str | None, act: str, reason: str | None = None) -> bool:
    return record.get("node") == node and record.get("action") == act and (reason is None or record.get("reason") == reason)


def slurm_node(bastion: LabNode, node: str) -> str:
    """``scontrol show node`` on the bastion, as its operator reads it."""
    return node_run(bastion, "scontrol", "show", "node", node).stdout


@pytest.fixture
def service(aplab, request):
    """The autopilot unit with this test's own state directory; stopped at the end, every node resumed in Slurm."""
    _folder, machines = aplab
    bastion = machines[lab_bastion.NAME]
    made = Service(bastion, request.node.name.removeprefix("test_")[:40])
    yield made
    made.stop()
    for node in NODES:
        node_run(bastion, "scontrol", "update", f"NodeName={node}", "State=RESUME", check=False)


def test_the_bastion_runs_the_projects_unit_file_as_it_is_and_a_usage_error_stays_failed(service):
    """The unit is the project's file, byte for byte; a refusal (exit 2: here a limit out of range) leaves it
    failed for a person (RestartPreventExitStatus=2), never restarted every 30 s into the same refusal."""
    installed = service.host_path(f"/etc/systemd/system/{UNIT}").read_text()
    assert installed == lab_bastion.unit_source().read_text()
    service.configure(NODES, "--breaker-percent", "0")
    service.systemctl("start", UNIT, check=False)
    until_sync(lambda: service.show("Result") == "exit-code" or service.show("ActiveState") == "failed",
               scaled(60), "the autopilot refused its options")
    assert service.show("ActiveState") == "failed", service.systemctl("status", UNIT, "--no-pager", check=False)
    assert service.show("ExecMainStatus") == "2" and service.show("NRestarts") == "0"
    journal = node_run(service.bastion, "journalctl", "-u", UNIT, "--no-pager", "-o", "cat").stdout
    assert "argument --breaker-percent: '0' is not a positive finite number" in journal, journal


def test_the_breaker_trips_at_its_bound_the_repair_before_it_restores_and_resumes_and_it_holds_across_a_restart(
        aplab, service):
    _folder, machines = aplab
    bastion = service.bastion
    for node in NODES:
        kill_fm(machines[node])
    service.configure(NODES, "--breaker-nodes", "1", "--max-parallel", "2")
    service.systemctl("start", UNIT)
    tripped = wait_for(service, "the breaker to trip", lambda r: action(r, None, "breaker-tripped", "breaker"))
    (first,) = [r for r in service.records() if r.get("action") == "repair"]
    repaired, other = first["node"], next(n for n in NODES if n != first["node"])
    # The bound is 1 repair in the window: the second node, in the same round, trips the breaker instead.
    assert any(action(r, other, "skip", "breaker") and r["round"] == first["round"]
               and "tripped the breaker" in r["message"] for r in service.records())
    assert tripped["round"] == first["round"] and "past the bound of 1" in tripped["message"]

    # The repair chosen before the trip runs to its end while the breaker is tripped: restore, Slurm resume.
    done = wait_for(service, f"{repaired}'s repair to end", lambda r: r.get("node") == repaired
                    and r.get("action") in ("repaired", "repair-failed", "repair-error"))
    assert done["action"] == "repaired", done
    log = service.repair_log(repaired)
    trip_time = tripped["time"]
    restore = [r for r in log if r.get("step") == "restore"]
    assert any(r.get("event") == "step-finished" and r.get("status") == "ok" for r in restore), restore
    resume = [r for r in restore if r.get("event") == "command-finished" and "State=RESUME" in (r.get("argv") or [])]
    assert resume and resume[0]["exit_status"] == 0 and resume[0]["time"] > trip_time, resume
    assert log[-1]["event"] == "run-finished" and log[-1]["result"] == "repaired"
    shown = slurm_node(bastion, repaired)
    assert "State=IDLE" in shown and "DRAIN" not in shown, shown

    # Tripped on disk; a restart of the service keeps it tripped, and the other node is still refused.
    assert service.saved_state()["breaker"]["tripped"] is True
    runs_before = len(service.runs())
    service.systemctl("restart", UNIT)
    until_sync(lambda: len(service.runs()) > runs_before and service.runs()[-1], scaled(60), "the restarted run's records")
    started = service.runs()[-1][0]
    assert started["action"] == "started" and "breaker tripped" in started["message"], started
    refused = until_sync(lambda: next((r for r in service.runs()[-1] if action(r, other, "skip", "breaker")), None),
                         scaled(REPAIR_TIMEOUT), f"the restarted autopilot to refuse {other} by the breaker")
    assert "the breaker is tripped" in refused["message"]
    assert not [r for r in service.runs()[-1] if r.get("action") in ("repair", "breaker-closed")]

    # Until an operator closes it (the service stopped first: docs/autopilot.md), audited.
    service.stop()
    closed = node_run(bastion, lab_bastion.NVLS_TUI, "autopilot", "--close-breaker", "--state-dir", service.state_dir,
                      timeout=scaled(60))
    assert "breaker closed" in closed.stderr
    assert any(action(r, None, "breaker-closed", "operator") for r in service.records())
    assert service.saved_state()["breaker"]["tripped"] is False


def test_a_node_whose_budget_is_spent_ends_drained_in_slurm_with_the_reason(aplab, service):
    _folder, machines = aplab
    bastion, node = service.bastion, machines["gpu05"]
    kill_fm(node)
    service.configure(("gpu05",), "--budget", "1", "--budget-days", "7")
    service.systemctl("start", UNIT)
    done = wait_for(service, "gpu05's first repair to end",
                    lambda r: action(r, "gpu05", "repaired") or action(r, "gpu05", "repair-failed"))
    assert done["action"] == "repaired", done
    assert "State=IDLE" in slurm_node(bastion, "gpu05")
    kill_fm(node)  # the fault comes back: the one repair of the budget did not hold
    escalated = wait_for(service, "gpu05 escalated", lambda r: action(r, "gpu05", "escalate", "budget"))
    assert "hardware ticket" in escalated["message"]
    drained = wait_for(service, "gpu05 drained", lambda r: r.get("node") == "gpu05"
                       and r.get("action") in ("drained", "drain-failed", "not-drained"))
    assert drained["action"] == "drained", drained
    shown = slurm_node(bastion, "gpu05")
    state = next(w for w in shown.split() if w.startswith("State="))
    assert "DRAIN" in state, shown
    assert "Reason=nvls-tui autopilot: hardware ticket: 1 repairs in 7 days did not hold" in shown, shown
    assert [r["action"] for r in service.records() if r.get("node") == "gpu05"].count("repair") == 1

    # The spent budget is on disk: a restart leaves the node to a person, still drained.
    runs_before = len(service.runs())
    service.systemctl("restart", UNIT)
    until_sync(lambda: len(service.runs()) > runs_before and service.runs()[-1], scaled(60), "the restarted run")
    left = until_sync(lambda: next((r for r in service.runs()[-1] if action(r, "gpu05", "skip", "escalated")), None),
                      scaled(REPAIR_TIMEOUT), "the restarted autopilot to leave gpu05 escalated")
    assert "hardware ticket" in left["message"]
    assert "DRAIN" in next(w for w in slurm_node(bastion, "gpu05").split() if w.startswith("State="))


def test_sigusr1_pauses_the_wave_between_nodes_and_removing_the_pause_file_resumes_it(aplab, service):
    _folder, machines = aplab
    for node in NODES:
        kill_fm(machines[node])
    # Bound 2 of 2 nodes and two at once: the round's wave is both nodes, the canary first, the other once the
    # canary passed its smoke test; only the pause stands between them.
    service.configure(NODES, "--breaker-nodes", "5", "--breaker-percent", "100", "--max-parallel", "2")
    service.systemctl("start", UNIT)
    canary = wait_for(service, "the wave to be chosen", lambda r: r.get("action") == "repair")
    wave = [r["node"] for r in service.records() if r.get("action") == "repair" and r["round"] == canary["round"]]
    assert sorted(wave) == sorted(NODES), wave
    first, second = wave
    until_sync(lambda: service.repair_records(first), scaled(60), f"the canary's repair of {first} to start")
    # The operator's signal, to the autopilot's own process only (docs/autopilot.md: --kill-whom=main).
    service.systemctl("kill", "--kill-whom=main", "-s", "SIGUSR1", UNIT)
    pause = service.host_path(service.state_dir + "/pause")
    until_sync(pause.exists, scaled(30), "the SIGUSR1 to write the pause file")
    done = wait_for(service, f"{first}'s repair to end", lambda r: r.get("node") == first
                    and r.get("action") in ("repaired", "repair-failed", "repair-error"))
    assert done["action"] == "repaired", done  # the repair in progress was not cut short
    # The rest of the wave does not start: held by the pause, between the nodes.
    held = wait_for(service, f"{second} held by the pause", lambda r: action(r, second, "skip", "paused"))
    assert held["round"] == canary["round"], held
    # Two more rounds past it, still held: the pause holds every round, not one.
    until_sync(lambda: any(r.get("action") == "round" and r["round"] >= held["round"] + 2 for r in service.records()),
               scaled(REPAIR_TIMEOUT), "two more rounds")
    later = [r for r in service.records() if r.get("node") == second and r["round"] > held["round"]]
    assert later and all((r["action"], r["reason"]) == ("skip", "paused") for r in later), later
    assert service.repair_records(second) == []  # never started
    assert all(r.get("paused") for r in service.records() if r.get("action") == "round" and r["round"] >= held["round"])

    pause.unlink()  # the operator resumes: the node the pause held is repaired
    done = wait_for(service, f"{second}'s repair after the pause", lambda r: action(r, second, "repaired")
                    or action(r, second, "repair-failed") or action(r, second, "repair-error"))
    assert done["action"] == "repaired" and done["round"] > held["round"], done


GATE = "/var/lib/nvls-lab-scontrol-gate"
"""Where the test opens the gate: the bastion's own root (its /run and /tmp are tmpfs the host path does not reach)."""
SLOW_SCONTROL = f"""#!/bin/sh
# nvls-tui lab test: a slow controller. A resume waits until the test opens the gate, then the real scontrol.
case "$*" in *State=RESUME*) while [ ! -e {GATE} ]; do sleep 0.1; done;; esac
exec /usr/bin/scontrol "$@"
"""


def test_systemctl_stop_during_a_repair_lets_its_resume_finish(aplab, service):
    """``systemctl stop`` while the repair's Slurm resume is running: the autopilot ends after its round, and the
    resume (a child process of the service) is not ended by the stop's SIGTERM; the node is back in Slurm."""
    _folder, machines = aplab
    kill_fm(machines["gpu05"])
    wrapper = service.host_path("/usr/local/bin/scontrol")
    wrapper.write_text(SLOW_SCONTROL)
    wrapper.chmod(0o755)
    gate = service.host_path(GATE)
    try:
        service.configure(("gpu05",))
        service.systemctl("start", UNIT)

        def resume_started() -> bool:
            return any(r.get("event") == "command-started" and "State=RESUME" in (r.get("argv") or [])
                       for r in service.repair_records("gpu05"))

        wait_for(service, "gpu05's repair to reach its resume", lambda _r: resume_started())
        service.systemctl("stop", "--no-block", UNIT)
        until_sync(lambda: service.show("ActiveState") != "active", scaled(30), "the stop to begin")
        gate.touch()  # the controller answers only now, after the stop's SIGTERM
        until_sync(lambda: service.show("ActiveState") in ("inactive", "failed"), scaled(REPAIR_TIMEOUT),
                   "the autopilot to end")
        log = service.repair_records("gpu05")
        (resumed,) = [r for r in log if r.get("event") == "command-finished" and "State=RESUME" in (r.get("argv") or [])]
        assert resumed["exit_status"] == 0, json.dumps(resumed)
        assert log[-1]["event"] == "run-finished" and log[-1]["result"] == "repaired", log[-1]
        assert [r["action"] for r in service.records()][-2:] == ["round", "stopped"]
        assert any(action(r, "gpu05", "repaired") for r in service.records())
        assert service.show("ActiveState") == "inactive" and service.show("Result") == "success"
        shown = slurm_node(service.bastion, "gpu05")
        assert "State=IDLE" in shown and "DRAIN" not in shown, shown
    finally:
        gate.touch()
        wrapper.unlink()
        gate.unlink(missing_ok=True)
