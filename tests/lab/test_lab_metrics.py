"""Issue 39's real parts, on a lab node: real systemd, real SSH, a real repair, and the metrics read back
through a real node_exporter (the textfile collector) and a real Prometheus, before and after the repair.

gpu05's Fabric Manager is killed by SIGKILL (as in the incident); ``check --metrics-textfile`` over SSH writes
what it read; Prometheus must see FM down and the node broken. ``repair --yes`` brings it back; the next
``check`` (reading the same audit directory) must make Prometheus see FM active, the node healthy, and the
repair's outcome from its audit log.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.lab.test_lab_golden import kill_fm
from tests.prometheus.test_scrape import NODE_EXPORTER, PROMETHEUS, Prom, _free_port, _stop
from tests.waiting import scaled, until_sync

pytestmark = [
    pytest.mark.lab,
    pytest.mark.xdist_group("lab"),
    pytest.mark.skipif(NODE_EXPORTER is None or PROMETHEUS is None,
                       reason="Debian's prometheus and prometheus-node-exporter are not installed"),
]


def _cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "nvls_tui.cli", *args], capture_output=True, text=True,
                          timeout=scaled(timeout), check=False)


def test_a_lab_node_before_and_after_a_repair_as_prometheus_sees_it(lab, tmp_path):
    folder, nodes = lab
    ssh = ("--ssh-config", str(folder / "ssh_config"))
    textfiles, audit = tmp_path / "textfile", tmp_path / "audit"
    textfiles.mkdir()
    audit.mkdir(mode=0o700)
    write = ("--metrics-textfile", str(textfiles / "nvls.prom"), "--audit-dir", str(audit))
    kill_fm(nodes["gpu05"])
    before = _cli("check", *ssh, *write, "gpu05")
    assert before.returncode == 1, before.stdout + before.stderr  # broken: FM is dead
    procs: list[subprocess.Popen] = []
    try:
        exporter_port, prom_port = _free_port(), _free_port()
        procs.append(subprocess.Popen([NODE_EXPORTER, f"--web.listen-address=127.0.0.1:{exporter_port}",
                                       "--collector.disable-defaults", "--collector.textfile",
                                       f"--collector.textfile.directory={textfiles}"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        config = tmp_path / "prometheus.yml"
        config.write_text(json.dumps({
            "global": {"scrape_interval": "1s"},
            "scrape_configs": [{"job_name": "node", "static_configs": [{"targets": [f"127.0.0.1:{exporter_port}"]}]}],
        }))
        procs.append(subprocess.Popen([PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'data'}",
                                       f"--web.listen-address=127.0.0.1:{prom_port}"],
                                      stdout=subprocess.DEVNULL, stderr=(tmp_path / "prometheus.log").open("w")))
        prom = Prom(prom_port, 0)
        until_sync(prom.ready, scaled(60), "Prometheus is ready")
        until_sync(lambda: prom.values('nvls_fm_active{hostname="gpu05"}') == {"gpu05": 0.0}, scaled(60),
                   "Prometheus sees gpu05's FM down")
        assert prom.values('nvls_node_verdict{hostname="gpu05"} == 1') == {"gpu05": 1.0}
        assert {r["metric"]["verdict"] for r in prom.query('nvls_node_verdict{hostname="gpu05"} == 1')} == {"broken"}
        assert prom.values('nvls_findings{hostname="gpu05",code="FM_NOT_RUNNING",severity="error"} > 0') == \
            {"gpu05": 1.0}
        assert prom.query('nvls_repair_last_result{hostname="gpu05"}') == []  # no repair in this audit dir yet

        repair = _cli("repair", "--yes", "--json", *ssh, "--audit-dir", str(audit), "gpu05")
        (node,) = json.loads(repair.stdout)["nodes"]
        assert node["result"] == "repaired", repair.stderr[-3000:]
        after = _cli("check", *ssh, *write, "gpu05")
        assert after.returncode == 0, after.stdout + after.stderr

        until_sync(lambda: prom.values('nvls_fm_active{hostname="gpu05"}') == {"gpu05": 1.0}, scaled(60),
                   "Prometheus sees gpu05's FM active again")
        assert {r["metric"]["verdict"] for r in prom.query('nvls_node_verdict{hostname="gpu05"} == 1')} == {"healthy"}
        assert prom.values('nvls_repair_last_result{hostname="gpu05",result="repaired"}') == {"gpu05": 1.0}
        assert prom.values('nvls_repairs_total{hostname="gpu05",result="repaired"}') == {"gpu05": 1.0}
        assert prom.values('nvls_repair_left_out_of_service{hostname="gpu05"}') == {"gpu05": 0.0}
        assert prom.values('nvls_smoke_busbw_bytes_per_second{hostname="gpu05"}')["gpu05"] > 0  # the repair's proof
        assert prom.values('node_textfile_scrape_error{job="node"}') == {"node": 0.0}
    finally:
        for proc in reversed(procs):
            _stop(proc)
        kill_fm(nodes["gpu05"])  # the shared lab as this test found it: gpu05's FM dead, as the seed incident has it

