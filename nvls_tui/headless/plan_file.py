"""``repair --plan FILE``: a saved ``repair --dry-run --json`` read back, checked field by field, and bound
to the options it was made with.

The file is whatever a pipeline hands over, so every field the repair will lean on is type-checked
here (a wrong type used to surface later as an "internal error" in preflight's drift check, or as
an exit 1 "refused"); anything wrong is one sentence naming the field, a usage error. The plan also
records the options that change what a repair does (``plan_options``): a plan approved without
``--sigkill`` is not applied with it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from nvls_tui.settings import Settings

# A plan of 10,000 nodes is a few tens of MB; more than this is not a plan.
MAX_PLAN_BYTES = 256 * 1024 * 1024


class PlanError(ValueError):
    """The plan file cannot be used; ``str()`` is one sentence."""


def plan_options(settings: Settings) -> dict[str, Any]:
    """The options that change what a repair does to a node, as a plan records them (plain JSON)."""
    repair = settings.repair
    return {
        "strategy": repair.strategy,
        "sigkill": repair.sigkill,
        "smoke_threshold": repair.smoke_threshold,
        "wait_jobs": float(repair.wait_jobs),
        "keep_drained": repair.keep_drained,
        "sudo": settings.sudo,
        "wait_pods": float(repair.wait_pods),
        "stop_kubelet": repair.stop_kubelet,
    }


# Options a plan made before they existed lacks: such a plan was approved with the option's default.
_ADDED_LATER: dict[str, Any] = {"wait_pods": 0.0, "stop_kubelet": False}


# Each option: how the command line writes it, and the plain words for a value of it.
_OPTION_WORDS: dict[str, tuple[str, Callable[[Any], str]]] = {
    "strategy": ("--strategy", str),
    "sigkill": ("--sigkill", lambda v: "with it" if v else "without it"),
    "smoke_threshold": ("--smoke-threshold", lambda v: "the GPU model's default" if v is None else f"{v:g} GB/s"),
    "wait_jobs": ("--wait-jobs", lambda v: f"{v:g} s"),
    "keep_drained": ("--keep-drained", lambda v: "with it" if v else "without it"),
    "sudo": ("--sudo", lambda v: "--sudo" if v else "--no-sudo"),
    "wait_pods": ("--wait-pods", lambda v: f"{v:g} s"),
    "stop_kubelet": ("--stop-kubelet", lambda v: "with it" if v else "without it"),
}


def option_mismatches(planned: Mapping[str, Any], now: Mapping[str, Any]) -> list[str]:
    """``--sigkill: the plan was made without it, this run has it with it``, one per option that differs."""
    changes = []
    for key, (flag, words) in _OPTION_WORDS.items():
        if planned.get(key) != now.get(key):
            changes.append(f"{flag} (the plan: {words(planned.get(key))}; this run: {words(now.get(key))})")
    return changes


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)) and value == value  # not nan


def _optional_str(value: object) -> bool:
    return value is None or isinstance(value, str)


_OPTION_TYPES: dict[str, tuple[Callable[[object], bool], str]] = {
    "strategy": (lambda v: v in ("parallel", "serial", "canary"), "parallel, serial or canary"),
    "sigkill": (lambda v: isinstance(v, bool), "true or false"),
    "smoke_threshold": (lambda v: v is None or (_is_number(v) and v > 0), "a positive number or null"),  # type: ignore[operator]
    "wait_jobs": (lambda v: _is_number(v) and v >= 0, "a number of 0 or more"),  # type: ignore[operator]
    "keep_drained": (lambda v: isinstance(v, bool), "true or false"),
    "sudo": (lambda v: isinstance(v, bool), "true or false"),
    "wait_pods": (lambda v: _is_number(v) and v >= 0, "a number of 0 or more"),  # type: ignore[operator]
    "stop_kubelet": (lambda v: isinstance(v, bool), "true or false"),
}

_BASIS_TYPES: dict[str, tuple[Callable[[object], bool], str]] = {
    "platform": (lambda v: isinstance(v, str), "a string"),
    "driver": (_optional_str, "a string or null"),
    "fm_version": (_optional_str, "a string or null"),
    "gpus": (lambda v: _is_int(v) and v >= 0, "a whole number"),  # type: ignore[operator]
    "nvswitches": (lambda v: _is_int(v) and v >= 0, "a whole number"),  # type: ignore[operator]
    "units": (lambda v: isinstance(v, dict) and all(isinstance(k, str) and isinstance(s, str) for k, s in v.items()),
              "an object of unit names to states"),
    "holders": (lambda v: isinstance(v, list), "a list"),
    "record": (lambda v: isinstance(v, bool), "true or false"),
}

_HOLDER_TYPES: dict[str, tuple[Callable[[object], bool], str]] = {
    "pid": (lambda v: _is_int(v) and v > 0, "a process id"),  # type: ignore[operator]
    "start_time": (_optional_str, "a string or null"),
    "kind": (lambda v: isinstance(v, str), "a string"),
    "command": (lambda v: isinstance(v, str), "a string"),
}


def _check_fields(where: str, value: object, types: Mapping[str, tuple[Callable[[object], bool], str]]) -> None:
    """Every key of ``types`` present in the object ``value`` and of its type (PlanError names the first wrong)."""
    if not isinstance(value, dict):
        raise PlanError(f"{where} is {_kind(value)}, not an object")
    for key, (ok, wanted) in types.items():
        if key not in value:
            raise PlanError(f"{where} has no {key!r}")
        if not ok(value[key]):
            raise PlanError(f"{where}.{key} is {_kind(value[key])}, not {wanted}")


def _kind(value: object) -> str:
    """What a JSON value is, in a few words (never the value itself: it may be long or hostile)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object"


_STEP_TYPES: dict[str, tuple[Callable[[object], bool], str]] = {
    "status": (lambda v: v == "planned", "planned"),
    "commands": (lambda v: isinstance(v, list) and all(isinstance(c, str) for c in v), "a list of command lines"),
}


def _check_steps(host: str, steps: object) -> None:
    """The node's steps are what a dry run plans: contract.md's steps in order, each planned, each with its
    command lines (what the operator read and approved; a plan without them approved nothing)."""
    from nvls_tui.runbook.steps import STEPS

    if not isinstance(steps, list):
        raise PlanError(f"{host}'s steps are {_kind(steps)}, not the {len(STEPS)} steps of a dry run")
    for i, step in enumerate(steps):
        if not isinstance(step, dict):
            raise PlanError(f"{host}'s steps[{i}] is {_kind(step)}, not an object")
    if [step.get("name") for step in steps] != list(STEPS):
        raise PlanError(f"{host}'s steps are not {', '.join(STEPS)}, in that order")
    for i, step in enumerate(steps):
        _check_fields(f"{host}'s steps[{i}]", step, _STEP_TYPES)


def _host_word(host: object) -> str:
    from nvls_tui.textsafe import one_line

    return one_line(str(host), 60)


def check_plan(data: object, hosts: list[str], options: Mapping[str, Any]) -> dict[str, dict]:
    """The approved basis of each of ``hosts`` from a parsed plan, every field checked. Pure.

    Raises:
        PlanError: a field missing or of the wrong type, a host without a plan or whose plan is a
            refusal, or options that differ from the plan's (one sentence naming what).
    """
    if not isinstance(data, dict) or not isinstance(data.get("nodes"), list):
        raise PlanError("it is not the JSON of `repair --dry-run --json` (no \"nodes\" list)")
    plans: dict[str, dict] = {}
    for i, node in enumerate(data["nodes"]):
        if not isinstance(node, dict) or not isinstance(node.get("host"), str):
            raise PlanError(f"nodes[{i}] is not a node's plan (no host name)")
        if node["host"] in plans:
            raise PlanError(f"it plans {_host_word(node['host'])} twice")
        plans[node["host"]] = node
    bases: dict[str, dict] = {}
    for host in hosts:
        node = plans.get(host)
        if node is None:
            raise PlanError(f"it has no plan for {host}")
        if node.get("dry_run") is not True:
            raise PlanError(f"its entry for {host} is not a dry run's")
        if node.get("result") != "planned":
            from nvls_tui.textsafe import one_line

            said = node.get("message")
            raise PlanError(f"it did not plan a repair of {host} ({_host_word(node.get('result'))}: "
                            f"{one_line(said if isinstance(said, str) else '', 200)})")
        _check_steps(host, node.get("steps"))
        _check_fields(f"{host}'s basis", node.get("basis"), _BASIS_TYPES)
        for j, holder in enumerate(node["basis"]["holders"]):
            _check_fields(f"{host}'s basis.holders[{j}]", holder, _HOLDER_TYPES)
        bases[host] = node["basis"]
    if "options" not in data:
        raise PlanError("it records no options (made by an older nvls-tui?): make it again with "
                        "`repair --dry-run --json` and the options the repair will use")
    recorded = data["options"]
    if isinstance(recorded, dict):
        recorded = {**_ADDED_LATER, **recorded}
    _check_fields("options", recorded, _OPTION_TYPES)
    changes = option_mismatches(recorded, options)
    if changes:
        raise PlanError("it was approved with other options than this run's: " + "; ".join(changes)
                        + " (run the repair with the plan's options, or plan again)")
    return bases


def read_plan(path: str, hosts: list[str], options: Mapping[str, Any]) -> dict[str, dict]:
    """Read ``path`` (a saved ``repair --dry-run --json``) and check it (:func:`check_plan`).

    Raises:
        PlanError: it is too big, not JSON, nested past reading, or fails :func:`check_plan`;
            the sentence names the file.
        OSError: it cannot be read.
    """
    with open(path, "rb") as handle:
        raw = handle.read(MAX_PLAN_BYTES + 1)
    try:
        if len(raw) > MAX_PLAN_BYTES:
            raise PlanError(f"it is over {MAX_PLAN_BYTES // 2 ** 20} MB")
        try:
            data = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError:
            raise PlanError("it is not UTF-8 text") from None
        except RecursionError:
            raise PlanError("it is nested too deeply to be a plan") from None
        except ValueError as exc:
            raise PlanError(f"it is not JSON ({exc})") from None
        return check_plan(data, hosts, options)
    except PlanError as exc:
        raise PlanError(f"the plan {path}: {exc}") from None


__all__ = ["MAX_PLAN_BYTES", "PlanError", "check_plan", "option_mismatches", "plan_options", "read_plan"]
