"""The metrics core (issue 39): names and labels by the conventions, unknown never 0 = healthy, bounded
labels, repairs from the audit log, FM starts by start time, and promtool's own check of the exposition."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from nvls_tui.diagnosis import diagnose_guarded
from nvls_tui.metrics import names
from nvls_tui.metrics.build import Round
from nvls_tui.metrics.fm_starts import FmStarts
from nvls_tui.metrics.repairs import AuditTally
from nvls_tui.model import NodeState, ServiceState
from nvls_tui.model.node import MissingEvidence
from tests.metrics_rig import PROMTOOL, exposition, promtool, samples, sim_results

AUDIT_V1 = Path(__file__).resolve().parents[1] / "fixtures" / "audit-v1"
FREE_TEXT_LABELS = {"hostname", "UUID", "pci_bus_id", "modelName", "driver", "fm_version", "version"}


def _by_host(text: str, host: str) -> list[tuple[str, dict[str, str], float]]:
    return [s for s in samples(text) if s[1].get("hostname") == host]


def _value(text: str, name: str, **labels: str) -> float:
    found = [v for n, lab, v in samples(text) if n == name and all(lab.get(k) == w for k, w in labels.items())]
    assert len(found) == 1, f"{name}{labels}: {found}"
    return found[0]


@pytest.fixture(scope="module")
def incident() -> str:
    return exposition(Round(sim_results("sim:seed-incident"), 0.25))


def test_the_dead_fm_node_says_so_and_its_verdict_is_one_hot(incident):
    assert _value(incident, "nvls_fm_active", hostname="gpu05") == 0
    assert _value(incident, "nvls_fm_active", hostname="gpu01") == 1
    assert _value(incident, "nvls_findings", hostname="gpu05", code="FM_NOT_RUNNING", severity="error") == 1
    verdicts = {lab["verdict"]: v for n, lab, v in samples(incident) if n == "nvls_node_verdict" and lab["hostname"] == "gpu05"}
    assert verdicts == {"broken": 1, "unreachable": 0, "degraded": 0, "healthy": 0}
    assert _value(incident, "nvls_fabric_out_of_sync_events_total", hostname="gpu06") > 0
    assert _value(incident, "nvls_holders", hostname="gpu06", kind="watch") == 1


def test_every_exposed_name_is_in_the_spec_with_its_labels(incident):
    specs = {s.exposed: s for s in names.METRICS}
    for name, labels, _ in samples(incident):
        spec = specs[name]
        if spec.kind != names.INFO:
            assert set(labels) == set(spec.labels), name
        assert name.startswith("nvls_")


def test_a_node_never_read_is_unknown_never_zero_healthy():
    never = NodeState(host="GPU09", reachable=False, error="connection refused")
    text = exposition(Round([(never, diagnose_guarded(never))], 1.0))
    mine = _by_host(text, "gpu09")  # lowercase, as dcgm-exporter names nodes
    assert {n for n, _, _ in mine} == {"nvls_node_verdict", "nvls_poll_success"}
    assert _value(text, "nvls_poll_success", hostname="gpu09") == 0
    assert _value(text, "nvls_node_verdict", hostname="gpu09", verdict="unreachable") == 1
    assert _value(text, "nvls_node_verdict", hostname="gpu09", verdict="healthy") == 0


def test_a_section_not_read_leaves_its_series_out_and_says_it_is_missing():
    results = sim_results("sim:healthy/hgx01")
    state, _ = results[0]
    state = state.replace(missing=(MissingEvidence("holders", "permission denied", "fuser: denied"),
                                   MissingEvidence("units", "timed out", "systemctl show timed out")))
    text = exposition(Round([(state, diagnose_guarded(state))], 1.0))
    got = {n for n, _, _ in _by_host(text, "hgx01")}
    assert "nvls_holders" not in got and "nvls_fm_active" not in got and "nvls_fm_starts_last_hour" not in got
    assert _value(text, "nvls_evidence_missing", hostname="hgx01", section="holders") == 1
    assert _value(text, "nvls_evidence_missing", hostname="hgx01", section="units") == 1
    assert _value(text, "nvls_node_verdict", hostname="hgx01", verdict="healthy") == 0


def test_no_label_carries_a_nodes_free_words():
    """sim:hostile's process names, Xid lines and record are markup and escapes: none becomes a label value
    outside the labels that name the node, its GPUs and its versions (cleaned, cut)."""
    text = exposition(Round(sim_results("sim:hostile"), 1.0))
    words = {v for _, labels, _ in samples(text) for k, v in labels.items() if k not in FREE_TEXT_LABELS}
    bounded = re.compile(r"^[A-Za-z0-9_.\-]+$")
    assert words and all(bounded.match(w) and len(w) <= 40 for w in words), sorted(words)
    for _, labels, _ in samples(text):
        assert all("\x1b" not in v and "[" not in v for v in labels.values()), labels


def test_series_per_8_gpu_node_stay_under_100(incident):
    for host in ("gpu01", "gpu05", "gpu06"):
        assert 20 < len(_by_host(incident, host)) < 100, host


def test_repairs_come_from_the_audit_log_by_result(tmp_path):
    for log in AUDIT_V1.glob("*.jsonl"):
        (tmp_path / log.name).write_bytes(log.read_bytes())
    dry = {"event": "run-finished", "node": "gpu05", "result": "planned", "dry_run": True, "time": "2026-12-02T05:00:00+00:00"}
    (tmp_path / "repair-dry.jsonl").write_text(json.dumps(dry) + "\n")
    tallies = AuditTally(tmp_path).read()
    assert tallies is not None
    assert tallies["gpu05"].counts.get("repaired") == 1 and "planned" not in tallies["gpu05"].counts
    assert tallies["gb200-n01"].counts == {"refused": 1} and tallies["gb200-n01"].last_result == "refused"
    kept = {"event": "run-finished", "node": "gpu07", "result": "failed", "dry_run": False,
            "time": "2026-12-03T01:00:00+00:00",
            "message": "smoke failed; gpu07 stays drained in Slurm (nvls-tui: repair failed at smoke-test)"}
    (tmp_path / "repair-kept.jsonl").write_text(json.dumps(kept) + "\n")
    state = NodeState(host="gpu07", reachable=False)
    text = exposition(Round([(state, diagnose_guarded(state))], 1.0, repairs=AuditTally(tmp_path).read()))
    assert _value(text, "nvls_repairs_total", hostname="gpu07", result="failed") == 1
    assert _value(text, "nvls_repair_last_result", hostname="gpu07", result="failed") == 1
    assert _value(text, "nvls_repair_left_out_of_service", hostname="gpu07") == 1


def _fm_at(start: str, clock: float) -> NodeState:
    fm = ServiceState("nvidia-fabricmanager.service", "active", since=start, restarts=0)
    return NodeState(host="gpu01", services=(fm,), node_clock=clock, boot_id="b")


def test_fm_starts_are_counted_by_start_time_not_nrestarts():
    starts = FmStarts()
    now = 1_800_001_800.0  # 2027-01-15T08:30:00Z
    seen = [starts.see(_fm_at(f"2027-01-15T08:{m:02d}:00+00:00", now), now) for m in (0, 10, 20)]
    assert seen == [1, 2, 3]  # NRestarts says 0 (reset-failed), the start times say 3
    later = now + 2700  # 09:15: only the 08:20 start is in the last hour
    assert starts.see(_fm_at("2027-01-15T08:20:00+00:00", later), later) == 1


@pytest.mark.skipif(PROMTOOL is None, reason="promtool is not installed (Debian's prometheus package)")
def test_promtool_checks_the_exposition(incident):
    """promtool parses it; its only lint words are about dcgm-exporter's camelCase ``modelName`` (kept so a
    query joins DCGM's series on it, as issue 39 asks)."""
    run = promtool("check", "metrics", stdin=incident)
    problems = [line for line in (run.stdout + run.stderr).splitlines() if line.strip()]
    assert run.returncode in (0, 3), problems
    assert all(re.fullmatch(r"nvls_gpu_fabric_state label names should be written in 'snake_case' not "
                            r"'camelCase'", p) for p in problems), problems
