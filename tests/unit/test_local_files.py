"""nvls-tui's files on the bastion: private (0600 in 0700), fresh, never written through a planted link,
and never in a directory another user owns or may write into."""

from __future__ import annotations

import os
import stat

import pytest

from nvls_tui import cli
from nvls_tui.audit.log import AuditLog
from nvls_tui.localfiles import UnsafeLocation, private_dir, write_private

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="chown needs root")


def mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_a_report_written_over_a_planted_symlink_replaces_the_link_and_spares_its_target(tmp_path, capsys):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    log = tmp_path / "audit" / "repair-x.jsonl"
    with AuditLog(log, operator="kim") as audit:
        audit.write({"event": "run-started", "node": "gpu05", "run_id": "x"})
    out = tmp_path / "incident.md"
    out.symlink_to(victim)
    assert cli.main(["report", str(log), "-o", str(out)]) == 0
    assert victim.read_text() == "precious\n"
    assert not out.is_symlink() and out.read_text().startswith("# NVLS repair incident report")
    assert mode(out) == 0o600


def test_audit_logs_are_0600_in_a_0700_directory_and_a_link_in_their_place_is_refused(tmp_path):
    log = AuditLog.create(tmp_path / "audit", "run1")
    log.close()
    assert mode(log.path) == 0o600 and mode(log.path.parent) == 0o700
    planted = tmp_path / "audit" / "repair-run2.jsonl"
    planted.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(OSError):
        AuditLog.create(tmp_path / "audit", "run2")
    assert not (tmp_path / "elsewhere").exists()


def test_a_world_writable_audit_directory_is_refused_with_one_line(tmp_path, capsys):
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o777)
    code = cli.main(["repair", "sim:seed-incident/gpu05", "--yes", "--json", "--audit-dir", str(folder)])
    captured = capsys.readouterr()
    assert code == 2 and "others may write into it" in captured.err and captured.err.count("\n") == 1
    assert captured.out == ""  # nothing ran, so no JSON
    assert list(folder.iterdir()) == []  # no log, no run


@needs_root
def test_an_audit_directory_owned_by_someone_else_is_refused(tmp_path):
    folder = tmp_path / "theirs"
    folder.mkdir(mode=0o700)
    os.chown(folder, 65534, 65534)
    with pytest.raises(UnsafeLocation, match="belongs to uid 65534"):
        private_dir(folder)


def test_a_symlinked_audit_directory_is_refused(tmp_path):
    (tmp_path / "real").mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(UnsafeLocation, match="symbolic link"):
        private_dir(tmp_path / "link")


def test_write_private_leaves_no_temporary_file_behind(tmp_path):
    write_private(tmp_path / "r.md", "x")
    assert [p.name for p in tmp_path.iterdir()] == ["r.md"]


def test_a_crash_log_is_private(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))

    def boom(_args):
        raise RuntimeError("a bug")

    monkeypatch.setattr("nvls_tui.headless.check.run", boom)
    assert cli.main(["check", "--demo"]) == 2
    err = capsys.readouterr().err
    path = err.rsplit("details in ", 1)[1].strip()
    assert "internal error" in err and mode(path) == 0o600 and mode(os.path.dirname(path)) == 0o700
    assert "RuntimeError: a bug" in open(path).read()



def test_every_directory_nvls_tui_creates_in_a_fresh_state_home_is_0700_under_umask_022(tmp_path, monkeypatch, capsys):
    """The state directory (crash logs) and the audit directory under it, and the XDG directory above
    them where it was missing, are private whatever the umask. Before: the audit log's directory was
    made with its parents, and the parents (the state directory itself) came out 0755."""
    fresh = tmp_path / "home" / ".local" / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(fresh))

    def boom(_args):
        raise RuntimeError("a bug")

    old = os.umask(0o022)
    try:
        assert cli.main(["repair", "sim:seed-incident/gpu05", "--dry-run", "--json"]) == 0
        monkeypatch.setattr("nvls_tui.headless.check.run", boom)
        assert cli.main(["check", "--demo"]) == 2
    finally:
        os.umask(old)
    err = capsys.readouterr().err
    crash = err.rsplit("details in ", 1)[1].strip()
    made = [tmp_path / "home", *(p for p in (tmp_path / "home").rglob("*") if p.is_dir())]
    assert {str(p.relative_to(tmp_path)) for p in made} == {
        "home", "home/.local", "home/.local/state", "home/.local/state/nvls-tui", "home/.local/state/nvls-tui/audit"}
    assert {str(p.relative_to(tmp_path)): oct(mode(p)) for p in made} == {
        str(p.relative_to(tmp_path)): oct(0o700) for p in made}
    assert os.path.dirname(crash) == str(fresh / "nvls-tui") and mode(crash) == 0o600
