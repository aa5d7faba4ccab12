"""Input limits and validation (issue items 8, 10, 11): sizes are checked before anything is expanded,
one cap holds the total number of targets, a known_hosts FIFO is refused, and every number on the
command line is a finite number in its range. Each is a one-line usage error (exit 2).

A node set that is too big is tried in a subprocess with a memory limit and a time bound, so the code
that expanded it first fails the test instead of eating the machine.
"""

from __future__ import annotations

import concurrent.futures
import os
import resource
import subprocess
import sys

import pytest

from nvls_tui.backends.base import InvalidArgument
from nvls_tui.backends.nodesets import MAX_TARGETS, nodeset_size
from nvls_tui.backends.ssh.targets import parse_targets, read_hosts_file
from nvls_tui.cli import build_parser
from nvls_tui.headless.check import slurm_nodes
from nvls_tui.settings import Settings, SshSettings
from nvls_tui.targets import target_words

# What the CLI process may map: far above what Python and the console's imports need, far below
# what 30 million node names take.
MEMORY_LIMIT = 1536 * 1024 * 1024
# A bound for a hang (the FIFO) or a runaway expansion, not a latency expectation.
BOUND_S = 60


def _limited() -> None:  # pragma: no cover - runs in the child
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The real command line in a child with a memory limit; a child that outlives BOUND_S fails the test."""
    try:
        return subprocess.run([sys.executable, "-m", "nvls_tui.cli", *args], capture_output=True, text=True,
                              timeout=BOUND_S, check=False, stdin=subprocess.DEVNULL, preexec_fn=_limited)
    except subprocess.TimeoutExpired:
        pytest.fail(f"nvls-tui {' '.join(args)} did not end within {BOUND_S} s")


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    return lines[0]


# -- 8: sizes before expansion, one cap on the total ----------------------------------------------

@pytest.mark.parametrize(("text", "size"), [
    ("gpu05", 1), ("gpu[01-08]", 8), ("gpu[01-08,10]", 9), ("gpu[1-4],gpu9", 5), ("r[1-2]n[1-4]", 8),
    ("gpu[1-10/2]", 5), ("gpu[1-30000000]", 30_000_000), ("r[1-100000]n[1-100000]", 10_000_000_000),
])
def test_a_node_sets_size_is_counted_from_its_ranges(text, size):
    assert nodeset_size(text) == size


@pytest.mark.parametrize("text", ["gpu[1-4]!gpu2", "@rack1", "gpu[1-4", "gpu1-4]", "gpu[[1-2]]", "gpu[a-b]",
                                  "gpu[1-4]&gpu[2-3]", ""])
def test_node_set_syntax_that_cannot_be_counted_has_no_size(text):
    assert nodeset_size(text) is None


@pytest.mark.parametrize("target", ["gpu[1-30000000]", "root@gpu[1-30000000]:2222", "sim:fleet-256/gpu[1-30000000]"])
def test_a_node_set_of_thirty_million_is_refused_before_it_is_expanded(target):
    done = cli("check", "--json", target)
    assert done.returncode == 2, done.stderr[-2000:]
    line = one_line(done.stderr)
    assert "30,000,000 targets" in line and f"at most {MAX_TARGETS:,}" in line
    assert done.stdout == ""


def test_thirty_million_slurm_nodes_are_refused_before_srun(tmp_path):
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=lab\n")
    done = cli("check", "--via", "slurm", "--slurm-conf", str(conf), "gpu[1-30000000]")
    assert done.returncode == 2, done.stderr[-2000:]
    assert f"at most {MAX_TARGETS:,}" in one_line(done.stderr)


def args_of(targets=(), hosts_file=None, known_hosts=None) -> Settings:
    """The settings of a command line naming ``targets`` (and a hosts file, a known_hosts file)."""
    return Settings(targets=tuple(targets), hosts_file=hosts_file, ssh=SshSettings(known_hosts=known_hosts))


def test_the_cap_holds_the_total_across_every_target_not_each_one():
    words = [f"rack{r}-gpu[1-{MAX_TARGETS // 4}]" for r in range(5)]  # each under the cap, the sum over it
    with pytest.raises(InvalidArgument, match=f"{MAX_TARGETS * 5 // 4:,} targets.*at most {MAX_TARGETS:,}"):
        target_words(args_of(targets=words))


def test_exactly_the_cap_is_accepted():
    assert target_words(args_of(targets=[f"gpu[1-{MAX_TARGETS}]"])) == [f"gpu[1-{MAX_TARGETS}]"]


def test_a_hosts_file_of_two_hundred_thousand_lines_is_refused_at_the_cap(tmp_path):
    hosts = tmp_path / "hosts"
    hosts.write_text("".join(f"gpu{i}\n" for i in range(200_000)))
    with pytest.raises(InvalidArgument) as info:
        target_words(args_of(hosts_file=str(hosts)))
    assert f"at most {MAX_TARGETS:,}" in str(info.value) and str(hosts) in str(info.value)


def test_hosts_file_lines_and_command_line_targets_share_the_cap(tmp_path):
    hosts = tmp_path / "hosts"
    hosts.write_text(f"gpu[1-{MAX_TARGETS // 2}]\n")
    with pytest.raises(InvalidArgument, match=f"at most {MAX_TARGETS:,}"):
        target_words(args_of(targets=[f"node[1-{MAX_TARGETS // 2 + 1}]"], hosts_file=str(hosts)))


def test_a_hosts_file_line_without_end_is_refused_without_reading_it_whole(tmp_path):
    hosts = tmp_path / "hosts"
    hosts.write_text("gpu" + "1" * 100_000)
    with pytest.raises(InvalidArgument, match="line 1 is longer than"):
        read_hosts_file(hosts)


def test_via_slurm_is_capped_like_ssh_targets():
    with pytest.raises(InvalidArgument, match=f"at most {MAX_TARGETS:,}"):
        slurm_nodes(args_of(targets=[f"gpu[1-{MAX_TARGETS + 1}]"]))


def test_via_slurm_keeps_each_node_once_in_first_seen_order():
    assert slurm_nodes(args_of(targets=["gpu[3-4]", "gpu[1-3]", "gpu4"])) == ["gpu3", "gpu4", "gpu1", "gpu2"]


def test_via_slurm_refuses_node_set_operators_it_does_not_count():
    with pytest.raises(InvalidArgument, match="not a Slurm node name or node set"):
        slurm_nodes(args_of(targets=["gpu[1-4]!gpu2"]))


def test_an_ssh_node_set_over_the_cap_is_refused_by_the_parser_too():
    with pytest.raises(InvalidArgument, match=f"{MAX_TARGETS + 1:,} nodes"):
        parse_targets([f"gpu[1-{MAX_TARGETS + 1}]"])


# -- 10: --known-hosts (and --ssh-config, read the same way) must be a regular file ----------------

@pytest.mark.parametrize("option", ["--known-hosts", "--ssh-config"])
def test_a_fifo_for_a_file_read_before_connecting_is_refused_at_once_with_a_sentence(tmp_path, option):
    # asyncssh reads both files before any connection: a FIFO hung every node.
    fifo = tmp_path / option.lstrip("-")
    os.mkfifo(fifo)
    done = cli("check", "--json", option, str(fifo), "127.0.0.1:1")
    assert done.returncode == 2, done.stderr[-2000:]
    line = one_line(done.stderr)
    assert option in line and "not a regular file" in line and str(fifo) in line


def test_a_known_hosts_directory_is_refused(tmp_path):
    from nvls_tui.targets import resolve_backends

    with pytest.raises(InvalidArgument, match="not a regular file"):
        resolve_backends(args_of(targets=["127.0.0.1:1"], known_hosts=str(tmp_path)))


def test_the_pool_reads_no_known_hosts_fifo_either(tmp_path):
    # Defence in depth: a config path that reached the pool unchecked still cannot hang the loop.
    from nvls_tui.backends.base import BackendOptions
    from nvls_tui.backends.ssh.pool import HostKeyRejected, load_known_hosts

    fifo = tmp_path / "kh"
    os.mkfifo(fifo)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        reading = pool.submit(load_known_hosts, BackendOptions(known_hosts=str(fifo)))
        try:
            with pytest.raises(HostKeyRejected, match="not a regular file"):
                reading.result(timeout=BOUND_S)
        except concurrent.futures.TimeoutError:
            # It blocked opening the FIFO: give it a writer that ends at once, so the thread ends too.
            os.close(os.open(fifo, os.O_WRONLY))
            pytest.fail(f"load_known_hosts blocked on a FIFO for {BOUND_S} s")


# -- 11: numbers are finite and in range ----------------------------------------------------------

def parse_error(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as info:
        build_parser().parse_args(argv)
    assert info.value.code == 2
    return one_line(capsys.readouterr().err)


@pytest.mark.parametrize("value", ["nan", "-1", "0", "inf", "-inf", "1e999"])
@pytest.mark.parametrize("command", [["check"], ["repair", "--dry-run"], ["console"]])
def test_a_timeout_is_a_positive_finite_number_of_seconds(command, value, capsys):
    line = parse_error([*command, "sim:healthy", f"--timeout={value}"], capsys)
    assert "--timeout" in line and "positive" in line


@pytest.mark.parametrize(("argv", "option"), [
    (["console", "--poll=nan"], "--poll"), (["console", "--poll=0"], "--poll"), (["console", "--poll=-5"], "--poll"),
    (["repair", "--dry-run", "--smoke-threshold=nan"], "--smoke-threshold"),
    (["repair", "--dry-run", "--smoke-threshold=-1"], "--smoke-threshold"),
    (["repair", "--dry-run", "--smoke-threshold=inf"], "--smoke-threshold"),
    (["repair", "--yes", "--wait-jobs=nan"], "--wait-jobs"), (["repair", "--yes", "--wait-jobs=-1"], "--wait-jobs"),
    (["check", "--concurrency=0"], "--concurrency"), (["check", "--concurrency=-4"], "--concurrency"),
])
def test_every_number_on_the_command_line_is_finite_and_in_range(argv, option, capsys):
    assert option in parse_error([*argv, "sim:healthy"], capsys)


def test_the_simulated_clock_speed_is_finite_and_not_negative(capsys):
    for value in ("nan", "-2", "inf"):
        assert "--speed" in parse_error(["sim", "shims", "/tmp/x", "--node", "gpu05", f"--speed={value}"], capsys)


def test_good_numbers_still_parse():
    args = build_parser().parse_args(["repair", "--dry-run", "sim:healthy", "--timeout", "2.5", "--smoke-threshold",
                                      "300", "--wait-jobs", "0", "--concurrency", "8"])
    assert (args.timeout, args.smoke_threshold, args.wait_jobs, args.concurrency) == (2.5, 300.0, 0.0, 8)
    assert build_parser().parse_args(["console", "--poll", "0.5"]).poll == 0.5
    assert build_parser().parse_args(["sim", "shims", "/tmp/x", "--node", "gpu05", "--speed", "0"]).speed == 0.0


@pytest.mark.parametrize(("toml", "words"), [
    ("timeout = nan", "timeout must be a finite number"), ("timeout = -1", "timeout must be a finite number"),
    ("timeout = inf", "timeout must be a finite number"), ("poll_interval = nan", "poll_interval must be a finite"),
    ("[ssh]\nconcurrency = 0", "ssh.concurrency must be 1 or more"),
])
def test_the_config_files_numbers_are_finite_and_in_range_too(toml, words):
    import tomllib

    from nvls_tui.config import ConfigError, parse_config

    with pytest.raises(ConfigError, match=words):
        parse_config(tomllib.loads(toml))


def test_the_consoles_filter_does_not_expand_a_node_set_over_the_cap():
    # The fleet filter (`/gpu[1-30000000]`) built the whole NodeSet on the console's loop.
    code = ("from nvls_tui.console.screens.fleet import _nodeset; "
            "print(len(_nodeset('gpu[1-30000000]')), sorted(_nodeset('gpu[05-06]')))")
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=BOUND_S,
                              check=False, preexec_fn=_limited)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the filter did not answer within {BOUND_S} s")
    assert done.returncode == 0, done.stderr[-500:]
    assert done.stdout.strip() == "0 ['gpu05', 'gpu06']"


def test_lab_up_counts_its_node_set_before_expanding_it(tmp_path):
    done = cli("lab", "up", "--nodes", "gpu[1-30000000]", "--dir", str(tmp_path / "lab"))
    assert done.returncode == 2, done.stderr[-2000:]
    assert "between 1 and 64 lab nodes" in one_line(done.stderr)


def test_a_bare_word_is_not_looked_up_in_an_ssh_config_fifo(tmp_path):
    # Before the command line is parsed, a first word that is no subcommand is looked up as a Host alias
    # in the SSH config: a FIFO there blocked that read forever.
    fifo = tmp_path / "ssh_config"
    os.mkfifo(fifo)
    done = cli("bastionalias", "--ssh-config", str(fifo))
    assert done.returncode == 2, done.stderr[-2000:]
    assert "bastionalias" in one_line(done.stderr)
