"""Issue 39 item 1: ``check --metrics-textfile FILE`` and ``check --watch --metrics-listen [ADDR:]PORT``.

The textfile is node_exporter's format, written whole after each round (temporary file, then rename: no
partial file, nothing left beside it), with no sample timestamps; the endpoint serves the same round
while the watch runs. A bad address or a folder that cannot take the file is one line and exit 2,
before any node is polled.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from nvls_tui.headless.metrics_out import parse_listen
from tests.waiting import scaled, until_sync

NVLS_TUI = [sys.executable, "-m", "nvls_tui.cli"]


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*NVLS_TUI, *args], capture_output=True, text=True, timeout=scaled(120))


def _values(text: str, name: str) -> dict[str, float]:
    """hostname -> value of ``name``'s samples; every sample checked to carry no timestamp."""
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            assert sample.timestamp is None, sample
            if sample.name == name:
                out[sample.labels["hostname"]] = sample.value
    return out


def test_one_check_writes_the_textfile_whole(tmp_path):
    target = tmp_path / "nvls.prom"
    run = _run("check", "sim:seed-incident", "--metrics-textfile", str(target), "--audit-dir", str(tmp_path / "audit"))
    assert run.returncode == 1, run.stderr  # gpu05 and gpu06 are broken
    text = target.read_text()
    assert _values(text, "nvls_fm_active") == {f"gpu0{i}": (0.0 if i == 5 else 1.0) for i in range(1, 9)}
    assert _values(text, "nvls_poll_success") == {f"gpu0{i}": 1.0 for i in range(1, 9)}
    assert os.listdir(tmp_path) == ["nvls.prom"]  # the temporary file was renamed, not left
    assert not re.search(r"^nvls_\S+ \S+ \S+$", text, re.M)  # value only: no timestamp column


@pytest.mark.parametrize(("args", "says"), [
    (["--metrics-textfile", "/nonexistent-dir/nvls.prom"], "the folder /nonexistent-dir does not exist"),
    (["--metrics-textfile", "/proc/nvls.prom"], "the folder /proc is not writable"),
    (["--metrics-textfile", "{tmp}/nvls.txt"], "the name must end in .prom"),
    (["--watch", "5", "--metrics-listen", "gpu05:9464"], "'gpu05' is not an IP address"),
    (["--watch", "5", "--metrics-listen", "127.0.0.1:99999"], "is not [ADDRESS:]PORT"),
    (["--metrics-listen", "9464"], "--metrics-listen serves the metrics while --watch runs"),
])
def test_bad_metrics_options_are_one_line_and_exit_2(tmp_path, args, says):
    run = _run("check", "sim:healthy", *[a.replace("{tmp}", str(tmp_path)) for a in args])
    assert run.returncode == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and "Traceback" not in run.stderr, run.stderr
    assert run.stdout == ""  # nothing polled, no table


def test_an_address_in_use_is_one_line():
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        run = _run("check", "sim:healthy", "--watch", "5", "--metrics-listen", f"127.0.0.1:{port}")
    assert run.returncode == 2
    assert run.stderr.strip() == f"nvls-tui: --metrics-listen 127.0.0.1:{port}: cannot listen there (Address already in use)"


def test_listen_defaults_to_loopback():
    assert parse_listen("9464") == ("127.0.0.1", 9464)
    assert parse_listen("[::1]:9464") == ("::1", 9464)
    assert parse_listen("0.0.0.0:9100") == ("0.0.0.0", 9100)


def _scrape(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:  # noqa: S310 - loopback, the test's own server
        return response.read().decode()


def test_the_watch_serves_and_writes_the_same_rounds(tmp_path):
    target = tmp_path / "nvls.prom"
    proc = subprocess.Popen([*NVLS_TUI, "check", "sim:seed-incident", "--watch", "1", "--metrics-listen", "0",
                             "--metrics-textfile", str(target), "--audit-dir", str(tmp_path / "audit")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+/metrics", line)
        assert url, line
        served = until_sync(lambda: (t := _scrape(url.group(0))) and "nvls_node_verdict" in t and t,
                            scaled(60), "the endpoint serves a round")
        assert isinstance(served, str)
        assert _values(served, "nvls_fm_active")["gpu05"] == 0.0
        until_sync(target.exists, scaled(60), "the textfile is written")
        assert _values(target.read_text(), "nvls_fm_active") == _values(served, "nvls_fm_active")
        assert "process_cpu_seconds_total" not in served and "python_info" not in served  # a registry of its own
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=scaled(60))
    assert proc.returncode == 1  # the last round's status: gpu05 broken


def test_a_repair_runs_outcome_reaches_the_metrics_through_its_audit_log(tmp_path):
    """The repairs come from the audit log: what a repair run wrote, the next check's textfile counts (its dry
    run changed nothing and is not counted)."""
    audit = tmp_path / "audit"
    audit.mkdir(mode=0o700)
    env = {**os.environ, "NVLS_TUI_SIM_SPEED": "1000"}  # the simulated waits (FM's start, the smoke test) pass fast
    for mode in ("--yes", "--dry-run"):
        ran = subprocess.run([*NVLS_TUI, "repair", "sim:seed-incident/gpu05", mode, "--audit-dir", str(audit)],
                             capture_output=True, text=True, timeout=scaled(120), env=env)
        assert ran.returncode == 0, ran.stderr
    target = tmp_path / "nvls.prom"
    run = _run("check", "sim:seed-incident/gpu05", "--metrics-textfile", str(target), "--audit-dir", str(audit))
    assert run.returncode == 1, run.stderr  # a fresh simulated gpu05: its FM is dead again
    text = target.read_text()
    assert _values(text, "nvls_repairs_total") == {"gpu05": 1.0}
    assert 'nvls_repairs_total{hostname="gpu05",result="repaired"} 1.0' in text
    assert _values(text, "nvls_repair_left_out_of_service") == {"gpu05": 0.0}
