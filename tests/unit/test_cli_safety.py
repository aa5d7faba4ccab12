"""The command line fails safely (issue 14, 2): a typo is a usage error with a suggestion, never a host;
a repair names its targets; the console needs a terminal; argparse errors are one sentence."""

from __future__ import annotations

import subprocess
import sys

import pytest


def cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess[str]:
    """The real command line, with no terminal (stdin, stdout and stderr are pipes)."""
    return subprocess.run([sys.executable, "-m", "nvls_tui.cli", *args], capture_output=True, text=True,
                          timeout=60, check=False, stdin=subprocess.DEVNULL, env=env)


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    return lines[0]


@pytest.mark.parametrize("args", [("repair", "--yes"), ("repair",), ("repair", "--dry-run")])
def test_a_repair_without_a_target_is_a_usage_error_and_touches_nothing(args, tmp_path):
    done = cli(*args, "--audit-dir", str(tmp_path / "audit"))
    assert done.returncode == 2
    assert one_line(done.stderr).startswith("nvls-tui: repair needs a TARGET")
    assert done.stdout == ""
    assert not (tmp_path / "audit").exists()


@pytest.mark.parametrize(("word", "suggestion"), [("chek", "check"), ("repiar", "repair"), ("analyse", "analyze")])
def test_a_mistyped_command_is_a_usage_error_with_a_suggestion(word, suggestion):
    done = cli(word)
    assert done.returncode == 2
    line = one_line(done.stderr)
    assert f"unknown command {word!r}" in line and f"did you mean {suggestion!r}?" in line


def test_a_word_that_is_neither_a_command_nor_a_host_is_a_usage_error():
    done = cli("frobnicate")
    assert done.returncode == 2
    assert "'frobnicate' is neither a command nor a host" in one_line(done.stderr)


def test_the_console_without_a_terminal_says_so_instead_of_drawing_into_a_pipe():
    done = cli("--demo")
    assert done.returncode == 2
    assert "the console needs a terminal" in one_line(done.stderr)
    assert done.stdout == ""


def test_an_argparse_error_is_one_sentence_naming_the_help():
    done = cli("check", "--timeout", "soon", "sim:healthy")
    assert done.returncode == 2
    line = one_line(done.stderr)
    assert "--timeout" in line and "'soon'" in line and "nvls-tui check --help" in line


def test_headless_repair_output_says_simulated_for_simulated_nodes(tmp_path):
    done = cli("repair", "--dry-run", "--audit-dir", str(tmp_path), "sim:seed-incident/gpu05")
    assert done.returncode == 0, done.stderr
    assert "SIMULATED" in done.stdout


def test_a_reader_that_stops_early_is_not_an_error_message():
    # `nvls-tui analyze --json FILE | head`: the pipe closes; no "[Errno 32] Broken pipe" on stderr.
    from pathlib import Path

    capture = Path(__file__).parents[1] / "fixtures"
    files = sorted(str(p) for p in capture.rglob("*.txt"))[:40]
    proc = subprocess.Popen([sys.executable, "-m", "nvls_tui.cli", "analyze", "--json", *files],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    proc.stdout.read(10)
    proc.stdout.close()
    _, err = proc.communicate(timeout=60)
    assert b"Broken pipe" not in err and b"Traceback" not in err


def test_report_of_a_file_that_is_not_an_audit_log_is_a_usage_error(tmp_path):
    other = tmp_path / "notes.jsonl"
    other.write_text('{"x": 1}\nhello\n')
    done = cli("report", str(other))
    assert done.returncode == 2 and done.stdout == ""
    assert "is not an nvls-tui audit log" in one_line(done.stderr)


def test_check_prints_the_reason_of_every_warning():
    done = cli("check", "sim:gb200-no-fm")
    assert "gb200-n01 PLATFORM_UNSUPPORTED:" in done.stdout
    assert "no host Fabric Manager" in done.stdout
