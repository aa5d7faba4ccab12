"""Issue 39's real parts: a real node_exporter reading ``check --metrics-textfile``'s file and a real
Prometheus scraping it and ``--metrics-listen``'s endpoint on loopback, for ``sim:`` fleets; PromQL over
Prometheus' HTTP API asserts the values, the dashboard's queries and the alert rules.

Each process gets a free loopback port and a temporary folder, and is ended by its own PID.
Run under ``flock /tmp/nvls-heavy.lock`` with the suite's other heavy tiers.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from tests.unit.test_contrib_prometheus import RULES, dashboard_exprs
from tests.waiting import scaled, until_sync

NODE_EXPORTER = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")
PROMETHEUS = shutil.which("prometheus")
ALERTMANAGER = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")
# One group: --dist loadgroup keeps the module on one worker, so the stack is started once.
pytestmark = [
    pytest.mark.prometheus,
    pytest.mark.xdist_group("prometheus"),
    pytest.mark.skipif(NODE_EXPORTER is None or PROMETHEUS is None or ALERTMANAGER is None,
                       reason="Debian's prometheus, prometheus-node-exporter and prometheus-alertmanager are not installed"),
]
# gpu05 FM dead, gpu06 out of sync; two nodes with smoke records; gpu-silent01 never answers (unknown)
FLEET = ("sim:seed-incident", "sim:clock-step", "sim:no-answer")
NODES = 11


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:  # noqa: S310 - loopback, the test's own servers
        return response.read().decode()


class Prom:
    """The test's Prometheus, asked through its HTTP API."""

    def __init__(self, port: int, alertmanager: int) -> None:
        self.base = f"http://127.0.0.1:{port}"
        self.alertmanager = f"http://127.0.0.1:{alertmanager}"

    def query(self, expr: str) -> list[dict]:
        doc = json.loads(_get(f"{self.base}/api/v1/query?" + urllib.parse.urlencode({"query": expr})))
        assert doc["status"] == "success", (expr, doc)
        return doc["data"]["result"]

    def values(self, expr: str) -> dict[str, float]:
        """hostname (or the job, for a series without one) -> value."""
        return {r["metric"].get("hostname", r["metric"].get("job", "")): float(r["value"][1]) for r in self.query(expr)}

    def ready(self) -> bool:
        try:
            return "Ready" in _get(f"{self.base}/-/ready")
        except OSError:
            return False


def _stop(proc: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout=scaled(30))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    """``check --watch`` on the fleet with both outputs, node_exporter on its textfile, Prometheus on both."""
    root: Path = tmp_path_factory.mktemp("prom")
    textfiles, audit = root / "textfile", root / "audit"
    textfiles.mkdir()
    audit.mkdir(mode=0o700)
    # A repair run of gpu05 that failed and left it drained, in the audit log the watch reads.
    record = {"time": "2026-12-02T04:01:39.616+00:00", "operator": "root", "dry_run": False, "node": "gpu05",
              "step": None, "event": "run-finished", "result": "failed",
              "message": "smoke failed; gpu05 stays drained in Slurm (nvls-tui: repair failed at smoke-test)"}
    (audit / "repair-test.jsonl").write_text(json.dumps(record) + "\n")
    # The autopilot's textfile beside check's (issue 40): two rounds over the seed incident with a bound of one
    # repair trip its breaker (gpu05 repaired, gpu06 past the bound), on the simulator's frozen clock.
    subprocess.run([sys.executable, "-m", "nvls_tui.cli", "autopilot", "sim:seed-incident", "--mode", "auto",
                    "--rounds", "2", "--every", "0.01", "--breaker-nodes", "1", "--state-dir", str(root / "autopilot"),
                    "--metrics-textfile", str(textfiles / "nvls-autopilot.prom")],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env={**os.environ, "NVLS_TUI_SIM_SPEED": "0"}, timeout=scaled(120))
    procs: list[subprocess.Popen] = []
    try:
        watch = subprocess.Popen([sys.executable, "-m", "nvls_tui.cli", "check", *FLEET, "--watch", "2", "--timeout", "2",
                                  "--metrics-textfile", str(textfiles / "nvls.prom"), "--metrics-listen", "0",
                                  "--audit-dir", str(audit)],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        procs.append(watch)
        assert watch.stderr is not None
        said = watch.stderr.readline()
        endpoint = re.search(r"http://(127\.0\.0\.1:\d+)/metrics", said)
        assert endpoint, said
        exporter_port, prom_port, am_port = _free_port(), _free_port(), _free_port()
        am_config = root / "alertmanager.yml"
        am_config.write_text(json.dumps({"route": {"receiver": "nobody"}, "receivers": [{"name": "nobody"}]}))
        procs.append(subprocess.Popen([ALERTMANAGER, f"--config.file={am_config}", f"--storage.path={root / 'am'}",
                                       f"--web.listen-address=127.0.0.1:{am_port}", "--cluster.listen-address="],
                                      stdout=subprocess.DEVNULL, stderr=(root / "alertmanager.log").open("w")))
        procs.append(subprocess.Popen([NODE_EXPORTER, f"--web.listen-address=127.0.0.1:{exporter_port}",
                                       "--collector.disable-defaults", "--collector.textfile",
                                       f"--collector.textfile.directory={textfiles}"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        config = root / "prometheus.yml"
        config.write_text(json.dumps({
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(RULES)],
            "alerting": {"alertmanagers": [{"static_configs": [{"targets": [f"127.0.0.1:{am_port}"]}]}]},
            "scrape_configs": [
                {"job_name": "node", "static_configs": [{"targets": [f"127.0.0.1:{exporter_port}"]}]},
                {"job_name": "nvls", "static_configs": [{"targets": [endpoint.group(1)]}]},
            ],
        }))
        procs.append(subprocess.Popen([PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={root / 'data'}",
                                       f"--web.listen-address=127.0.0.1:{prom_port}"],
                                      stdout=subprocess.DEVNULL, stderr=(root / "prometheus.log").open("w")))
        prom = Prom(prom_port, am_port)
        until_sync(prom.ready, scaled(60), "Prometheus is ready")
        until_sync(lambda: len(prom.query('nvls_poll_success{job="node"}')) == NODES
                   and len(prom.query('nvls_poll_success{job="nvls"}')) == NODES,
                   scaled(120), "both jobs' series are scraped")
        yield prom
    finally:
        for proc in reversed(procs):
            _stop(proc, signal.SIGINT if proc is procs[0] else signal.SIGTERM)


def test_the_textfile_through_node_exporter_and_the_endpoint_say_the_same(stack):
    for job in ("node", "nvls"):
        assert stack.values(f'nvls_fm_active{{job="{job}",hostname=~"gpu0[1-8]"}}') == \
            {f"gpu0{i}": (0.0 if i == 5 else 1.0) for i in range(1, 9)}
        assert stack.values(f'nvls_node_verdict{{job="{job}",verdict="broken"}} == 1').keys() == \
            {"gpu05", "gpu06", "gpu-ntp01", "gpu-ahead01"}
        assert stack.values(f'nvls_poll_success{{job="{job}"}} == 1').keys() >= {"gpu01", "gpu05", "gpu-ntp01"}
        assert stack.values(f'nvls_fabric_out_of_sync_events_total{{job="{job}",hostname="gpu06"}}')["gpu06"] > 0
        assert stack.values(f'nvls_smoke_busbw_bytes_per_second{{job="{job}"}}') == \
            {"gpu-ntp01": 292.1e9, "gpu-ahead01": 292.1e9}
        assert stack.values(f'nvls_repair_last_result{{job="{job}",result="failed"}}') == {"gpu05": 1.0}
        assert stack.values(f'nvls_repair_left_out_of_service{{job="{job}"}}') == {"gpu05": 1.0}
        # the node that never answers is unknown: its verdict and poll say so, and nothing reads as fine
        assert stack.values(f'nvls_poll_success{{job="{job}",hostname="gpu-silent01"}}') == {"gpu-silent01": 0.0}
        assert stack.values(f'nvls_node_verdict{{job="{job}",hostname="gpu-silent01",verdict="unreachable"}}') == \
            {"gpu-silent01": 1.0}
        # (nvls-tui's own series only: Prometheus' ALERTS carry the node's labels too, once NvlsNodeUnknown is pending)
        assert stack.query(f'{{job="{job}",hostname="gpu-silent01",__name__=~"nvls_.*",'
                           '__name__!~"nvls_node_verdict|nvls_poll_success"}') == []
    # node_exporter read the file without complaint (a timestamp or a bad line would set this to 1)
    assert stack.values('node_textfile_scrape_error{job="node"}') == {"node": 0.0}
    # a registry of its own: the endpoint carries no process or Python metrics
    assert stack.query('{job="nvls",__name__=~"process_.*|python_.*"}') == []


def test_the_autopilots_textfile_beside_checks_and_its_breaker_alert(stack):
    """node_exporter reads both textfiles without a duplicate series (node_textfile_scrape_error stays 0, as the
    test above asserts), and the tripped breaker pages."""
    assert stack.values('nvls_autopilot_breaker_tripped{job="node"}') == {"node": 1.0}
    assert stack.values('nvls_autopilot_decisions_total{job="node",action="skip",reason="breaker"}') == {"node": 1.0}
    assert stack.values('nvls_autopilot_budget_left{job="node"}')["gpu05"] == 2.0
    assert stack.values('node_textfile_scrape_error{job="node"}') == {"node": 0.0}

    def firing():
        doc = json.loads(_get(f"{stack.base}/api/v1/alerts"))
        return {a["labels"]["alertname"] for a in doc["data"]["alerts"] if a["state"] == "firing"}

    until_sync(lambda: "NvlsAutopilotBreakerTripped" in firing(), scaled(60), "the breaker's alert fires")


def test_each_dashboard_panel_shows_this_fleet(stack):
    shown = [expr for expr in dashboard_exprs() if stack.query(expr)]  # each runs (status success) ...
    # ... and each panel has data for this fleet but the FM-flapping and NVLink-Xid queries (none here)
    assert set(dashboard_exprs()) - set(shown) == {"nvls_fm_starts_last_hour >= 3",
                                                   "sum by (hostname, xid) (nvls_nvlink_xid_events_total)"}
    verdicts = {r["metric"]["verdict"]: float(r["value"][1])
                for r in stack.query('sum by (verdict) (nvls_node_verdict{job="nvls"})')}
    assert verdicts == {"broken": 4.0, "healthy": 6.0, "degraded": 0.0, "unreachable": 1.0}
    assert stack.values('sum(1 - nvls_poll_success{job="nvls"})') == {"": 1.0}  # the "nodes not read" panel
    codes = {r["metric"]["code"] for r in stack.query('count by (code) (nvls_findings{severity=~"error|warning"} > 0)')}
    assert {"FM_NOT_RUNNING", "FABRIC_OUT_OF_SYNC"} <= codes


def test_the_alert_rules_fire_on_the_real_series(stack):
    def firing():
        doc = json.loads(_get(f"{stack.base}/api/v1/alerts"))
        return {(a["labels"]["alertname"], a["labels"].get("hostname")) for a in doc["data"]["alerts"]}

    got = until_sync(lambda: (f := firing()) >= {("NvlsFabricOutOfSync", "gpu06"), ("NvlsRepairFailed", "gpu05")} and f,
                     scaled(60), "the out-of-sync and failed-repair alerts are active")
    assert isinstance(got, set)
    assert not {host for name, host in got if name == "NvlsFabricOutOfSync"} & {"gpu01", "gpu02", "gpu03"}


def test_the_alerts_reach_a_real_alertmanager(stack):
    """Prometheus sends the rules' alerts on: Alertmanager holds the out-of-sync node's, with its labels."""
    def received():
        alerts = json.loads(_get(f"{stack.alertmanager}/api/v2/alerts"))
        return {(a["labels"]["alertname"], a["labels"].get("hostname"), a["labels"].get("severity")) for a in alerts}

    got = until_sync(lambda: (r := received()) >= {("NvlsFabricOutOfSync", "gpu06", "critical")} and r,
                     scaled(90), "Alertmanager holds NvlsFabricOutOfSync for gpu06")
    assert isinstance(got, set)
    assert not {host for _, host, _ in got} & {"gpu01", "gpu02", "gpu03", "gpu04"}  # the healthy nodes page no one
