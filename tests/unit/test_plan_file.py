"""``repair --plan FILE`` (issue item 9): a malformed plan is one usage line (exit 2), never an "internal
error" or an exit 1 after the node was read; a plan is bound to the options it was approved with."""

from __future__ import annotations

import json

import pytest

from nvls_tui.backends.simulated import sim_backends
from nvls_tui.cli import main
from nvls_tui.sim.fleet import load_fleet

SPEED = 400.0
NODE = "sim:seed-incident/gpu05"


@pytest.fixture
def fleet():
    """gpu05 of the seed incident, one node for the dry run and the repair (each command its own backend)."""
    return load_fleet(NODE, speed=SPEED)


def on(fleet):
    """``main``'s ``connect``: the backends of ``fleet``'s nodes, whatever the targets say."""
    return lambda settings: sim_backends(fleet)


def dry_run(fleet, tmp_path, capsys, *options: str) -> dict:
    """``repair --dry-run --json`` with ``options``, parsed."""
    assert main(["repair", NODE, "--dry-run", "--json", "--audit-dir", str(tmp_path), *options], connect=on(fleet)) == 0
    return json.loads(capsys.readouterr().out)


def apply(fleet, tmp_path, capsys, plan: object, *options: str) -> tuple[int, str]:
    """``repair --plan FILE`` of ``plan`` (JSON, or text or bytes as they are); returns (exit status, stderr)."""
    path = tmp_path / "plan.json"
    if isinstance(plan, bytes):
        path.write_bytes(plan)
    else:
        path.write_text(plan if isinstance(plan, str) else json.dumps(plan))
    code = main(["repair", NODE, "--plan", str(path), "--audit-dir", str(tmp_path), *options], connect=on(fleet))
    return code, capsys.readouterr().err


def node_changed(fleet) -> bool:
    return any(argv[:2] in (["nvidia-smi", "-r"], ["systemctl", "stop"]) or argv[:1] == ["kill"]
               for _, argv in fleet.node("gpu05").cmdlog)


def _set(path: str, value):
    """A change to a plan: ``path`` (dot-separated keys and list indexes) set to ``value``."""
    def change(plan: dict) -> None:
        *parents, last = path.split(".")
        here = plan
        for key in parents:
            here = here[int(key)] if isinstance(here, list) else here[key]
        if isinstance(here, list):
            here[int(last)] = value
        else:
            here[last] = value
    return change


def _drop(path: str):
    def change(plan: dict) -> None:
        *parents, last = path.split(".")
        here = plan
        for key in parents:
            here = here[int(key)] if isinstance(here, list) else here[key]
        del here[last]
    return change


MALFORMED = {
    "not JSON": ("not json", "is not JSON"),
    "a list": ("[1, 2]", "is not the JSON of `repair --dry-run --json`"),
    "null": ("null", "is not the JSON of `repair --dry-run --json`"),
    "nodes not a list": ('{"nodes": "gpu05", "options": {}}', "is not the JSON of `repair --dry-run --json`"),
    "nested junk": ('{"nodes": ' + "[" * 200_000 + "]" * 200_000 + "}", "nested too deeply"),
    "not UTF-8": (b"\xff\xfe{", "is not UTF-8 text"),
}

BROKEN_FIELDS = {
    "a node that is a number": (_set("nodes.0", 5), "nodes[0] is not a node's plan"),
    "a host that is a number": (_set("nodes.0.host", 5), "nodes[0] is not a node's plan"),
    "no basis": (_drop("nodes.0.basis"), "gpu05's basis is null, not an object"),
    "a basis that is a list": (_set("nodes.0.basis", [1]), "gpu05's basis is a list, not an object"),
    "gpus as a string": (_set("nodes.0.basis.gpus", "8"), "gpu05's basis.gpus is a string, not a whole number"),
    "gpus as a boolean": (_set("nodes.0.basis.gpus", True), "basis.gpus is a boolean"),
    "no units": (_drop("nodes.0.basis.units"), "gpu05's basis has no 'units'"),
    "units as a list": (_set("nodes.0.basis.units", ["fm"]), "basis.units is a list"),
    "a unit state that is an object": (_set("nodes.0.basis.units", {"kubelet.service": {"x": 1}}), "basis.units"),
    "holders as an object": (_set("nodes.0.basis.holders", {"pid": 1}), "basis.holders is an object, not a list"),
    "a holder that is a number": (_set("nodes.0.basis.holders", [1]), "basis.holders[0] is a number"),
    "a holder pid as a string": (_set("nodes.0.basis.holders", [{"pid": "1", "start_time": None, "kind": "app",
                                                                  "command": "x"}]), "holders[0].pid is a string"),
    "a record flag that is a string": (_set("nodes.0.basis.record", "no"), "basis.record is a string"),
    "no dry_run": (_drop("nodes.0.dry_run"), "is not a dry run's"),
    "a result that is a list": (_set("nodes.0.result", ["planned"]), "did not plan a repair of gpu05"),
    "the node twice": (lambda p: p["nodes"].append(dict(p["nodes"][0])), "plans gpu05 twice"),
    "no options": (_drop("options"), "records no options"),
    "options as a list": (_set("options", []), "options is a list, not an object"),
    "sigkill as a string": (_set("options.sigkill", "no"), "options.sigkill is a string"),
    "an unknown strategy": (_set("options.strategy", "yolo"), "options.strategy is a string, not parallel"),
    "wait_pods as a string": (_set("options.wait_pods", "60"), "options.wait_pods is a string, not a number of 0"),
    "wait_pods below 0": (_set("options.wait_pods", -1), "options.wait_pods is a number, not a number of 0 or more"),
    "wait_pods null": (_set("options.wait_pods", None), "options.wait_pods is null, not a number of 0 or more"),
    # The steps are what the operator read and approved: a plan without them approved nothing.
    "no steps": (_drop("nodes.0.steps"), "gpu05's steps are null, not the 8 steps"),
    "steps as a string": (_set("nodes.0.steps", "x"), "gpu05's steps are a string, not the 8 steps"),
    "no step at all": (_set("nodes.0.steps", []), "gpu05's steps are not preflight, quiesce"),
    "a step missing": (lambda p: p["nodes"][0]["steps"].pop(3), "gpu05's steps are not preflight, quiesce"),
    "a step that is a number": (_set("nodes.0.steps.2", 7), "gpu05's steps[2] is a number, not an object"),
    "a step already run": (_set("nodes.0.steps.4.status", "ok"), "gpu05's steps[4].status is a string, not planned"),
    "commands as a string": (_set("nodes.0.steps.0.commands", "rm -rf /"), "steps[0].commands is a string"),
    "a command that is a list": (_set("nodes.0.steps.0.commands", [["mkdir"]]), "steps[0].commands is a list"),
}


@pytest.mark.parametrize("name", list(MALFORMED))
def test_a_plan_file_that_is_not_a_plan_is_one_usage_line_and_touches_nothing(name, fleet, tmp_path, capsys):
    text, words = MALFORMED[name]
    code, err = apply(fleet, tmp_path, capsys, text)
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and words in err, err[:500]
    assert "Traceback" not in err and "internal error" not in err
    assert fleet.node("gpu05").cmdlog == []


@pytest.mark.parametrize("name", list(BROKEN_FIELDS))
def test_a_plan_with_a_missing_or_mistyped_field_is_one_usage_line_and_touches_nothing(name, fleet, tmp_path,
                                                                                       capsys):
    plan = dry_run(fleet, tmp_path, capsys)
    before = len(fleet.node("gpu05").cmdlog)
    change, words = BROKEN_FIELDS[name]
    change(plan)
    code, err = apply(fleet, tmp_path, capsys, plan)
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and words in err, err[:500]
    assert "Traceback" not in err and "internal error" not in err
    assert len(fleet.node("gpu05").cmdlog) == before  # not even read again


def test_a_dry_run_records_the_options_a_repair_is_held_to(fleet, tmp_path, capsys):
    plan = dry_run(fleet, tmp_path, capsys, "--strategy", "serial", "--sigkill", "--smoke-threshold", "200")
    assert plan["options"] == {"strategy": "serial", "sigkill": True, "smoke_threshold": 200.0, "wait_jobs": 0.0,
                               "keep_drained": False, "sudo": False, "wait_pods": 0.0, "stop_kubelet": False}


def test_a_dry_run_records_wait_pods(fleet, tmp_path, capsys):
    plan = dry_run(fleet, tmp_path, capsys, "--wait-pods", "90")
    assert plan["options"]["wait_pods"] == 90.0


@pytest.mark.parametrize(("planned", "applied", "words"), [
    ((), ("--sigkill",), "--sigkill (the plan: without it; this run: with it)"),
    ((), ("--strategy", "canary"), "--strategy (the plan: parallel; this run: canary)"),
    (("--smoke-threshold", "200"), (), "--smoke-threshold (the plan: 200 GB/s; this run: the GPU model's default)"),
    (("--keep-drained",), (), "--keep-drained"),
    ((), ("--wait-jobs", "60"), "--wait-jobs (the plan: 0 s; this run: 60 s)"),
    ((), ("--wait-pods", "120"), "--wait-pods (the plan: 0 s; this run: 120 s)"),
    (("--wait-pods", "120"), (), "--wait-pods (the plan: 120 s; this run: 0 s)"),
    ((), ("--stop-kubelet",), "--stop-kubelet (the plan: without it; this run: with it)"),
])
def test_a_plan_applied_with_other_options_is_refused_naming_the_difference(planned, applied, words, fleet, tmp_path,
                                                                           capsys):
    plan = dry_run(fleet, tmp_path, capsys, *planned)
    code, err = apply(fleet, tmp_path, capsys, plan, *applied)
    assert code == 2
    line = err.strip()
    assert "\n" not in line and "approved with other options" in line and words in line, line
    assert not node_changed(fleet)


def test_a_plan_applied_with_its_own_options_runs(fleet, tmp_path, capsys):
    plan = dry_run(fleet, tmp_path, capsys, "--sigkill", "--strategy", "serial")
    code, err = apply(fleet, tmp_path, capsys, plan, "--strategy", "serial", "--sigkill")
    assert code == 0, err
    assert node_changed(fleet)


def test_a_plan_made_before_wait_pods_existed_is_held_to_the_default(fleet, tmp_path, capsys):
    """A plan file without ``wait_pods`` (made before the option existed) counts as ``--wait-pods 0``: applied
    without the option it runs; applied with another value it is refused, naming the difference."""
    plan = dry_run(fleet, tmp_path, capsys)
    del plan["options"]["wait_pods"]
    code, err = apply(fleet, tmp_path, capsys, plan, "--wait-pods", "30")
    assert code == 2
    assert "--wait-pods (the plan: 0 s; this run: 30 s)" in err and "\n" not in err.strip(), err
    assert not node_changed(fleet)
    code, err = apply(fleet, tmp_path, capsys, plan)
    assert code == 0, err
    assert node_changed(fleet)
