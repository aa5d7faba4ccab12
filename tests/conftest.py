"""Shared pytest fixtures. The loopback sshd rig itself lives in tests/sshd_rig.py."""

from __future__ import annotations

import gc
import signal

import pytest

from tests.sshd_rig import SshdRig, find_sshd, node_names

# A suite started in the background by a shell without job control (`make test &`, a CI script's `cmd &`) inherits
# SIGINT ignored, and so would every process a test starts: the tests that press Ctrl-C on a child (`check --watch`,
# an interrupted repair) then waited out the child's own timeout and failed, unless an earlier test in the same worker
# happened to reset the handler (an in-process repair's asyncio signal handlers do). A test's child is a terminal's
# foreground job: Ctrl-C reaches it.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

SSHD_FIXTURES = {"rigs", "sshd_fleet", "private_sshd"}
"""Fixtures that start a loopback sshd: a test that takes one is in the SSH tier, marked or not."""


def _needs(item, what: str) -> bool:
    """Whether a ``skipif`` of ``item`` names ``what`` (a test that needs tmux says so in its reason)."""
    return any(what in str(mark.kwargs.get("reason", "")) for mark in item.iter_markers("skipif"))


def _tier_marks(item) -> set[str]:
    """The tiers ``item`` belongs to, from its markers and what it uses: a test that starts the loopback
    sshd is ``ssh`` and one that drives a real terminal is ``tmux`` even where its file does not say so,
    so that ``-m "not lab and not ssh and not tmux and not prometheus"`` (``make test-fast``) leaves every one of them out."""
    marks = {m.name for m in item.iter_markers()} & {"lab", "ssh", "tmux", "prometheus"}
    if SSHD_FIXTURES & set(getattr(item, "fixturenames", ())) or _needs(item, "openssh-server"):
        marks.add("ssh")
    if getattr(getattr(item, "module", None), "Tmux", None) is not None or _needs(item, "tmux"):
        marks.add("tmux")
    return marks


def _weight(marks: set[str]) -> int:
    """How early a module's tests are handed out: lab first, then the SSH and real-terminal tiers, then the rest."""
    if "lab" in marks:
        return 0
    if marks & {"ssh", "tmux", "prometheus"}:
        return 1
    return 2


SHARED_LABS = {"lab": "lab", "healthy_lab": "lab-healthy"}
"""``{fixture: xdist group}``: the labs booted once for the tests of several files (tests/lab/conftest.py), each
by the one worker that runs its group. The other lab tests boot a lab of their file's own, in a group of their
own (``lab-<name>``)."""


def lab_group_problem(marks: set[str], groups: set[str], fixtures: set[str]) -> str | None:
    """Why a test's xdist group would have two workers boot one lab at once, or None.

    A ``lab`` test names one group, ``lab`` or ``lab-<name>`` (pytest-xdist hands an ungrouped test to any
    worker, and each worker would boot its module's lab on the same addresses; the lab groups go out first),
    and a test that takes a shared lab (:data:`SHARED_LABS`, its fixture closure) is in that lab's group.
    """
    if "lab" not in marks:
        return None
    if len(groups) != 1 or not all(g == "lab" or g.startswith("lab-") for g in groups):
        return f"a lab test names one xdist group, 'lab' or 'lab-<name>', not {sorted(groups) or 'none'}"
    for fixture, group in SHARED_LABS.items():
        if fixture in fixtures and group not in groups:
            return f"it takes the shared lab {fixture!r}: its xdist group is {group!r}, not {sorted(groups)[0]!r}"
    return None


def pytest_addoption(parser):
    parser.addoption("--lab-slots", type=int, default=None, metavar="N",
                     help="with --dist loadgroup: at most N workers in lab groups at once, the others run the rest "
                          "(tests/lab_slots.py; scripts/test.sh sets it)")


def pytest_xdist_make_scheduler(config, log):
    """``--lab-slots N``: loadgroup scheduling that keeps the other workers on the CPU-bound tiers while N run labs."""
    slots = config.getoption("lab_slots")
    if slots is None or config.getoption("dist") != "loadgroup":
        return None
    from tests.lab_slots import LabSlotScheduling

    return LabSlotScheduling(config, log, slots=slots)


def pytest_collection_finish(session):
    """Freeze what the run holds once its tests are collected (the imports, the collected tests, pytest's own).

    Every full collection walked that whole heap again, and each console a test starts settled the collector
    with one at its first poll (about 0.15 s of CPU each in a worker's heap). Frozen, those objects leave every
    later collection; a console then finds the process's own freeze and leaves it in place
    (``console.app.settle_garbage_collector``), so its garbage is collected among the young objects only.
    """
    gc.collect()
    gc.freeze()


def pytest_collection_modifyitems(config, items):
    """Marks each test with its tiers, then hands out long tests first and short ones last, so that the
    workers (``pytest -n 4 --lab-slots 2`` in scripts/test.sh) stay busy to the end.

    ``--dist loadgroup`` hands each xdist group to one worker as a whole, the groups with the most tests
    first (the lab's: ``lab`` and one ``lab-<name>`` per file with a lab of its own, so labs boot side by
    side; :func:`lab_group_problem` holds every lab test to them), and every other test out one by one in
    this order: with the SSH tier's repairs (tens of seconds each) spread through the
    alphabet, one worker could run the last of them alone while the other had nothing left. Modules move
    as a whole (a module-scoped fixture is set up once) and keep their order within a weight, except the tests
    marked ``long`` (seconds each), which go first of their weight: late in the alphabet (the 1,024-node fleet of
    tests/unit/test_sim_scenarios.py, the 300 examples of test_report_bad_lines.py) they were the last tests
    running, one worker busy for 5-10 s after the others had finished.
    """
    module_marks: dict[str, set[str]] = {}
    problems = []
    for item in items:
        marks = _tier_marks(item)
        for name in marks - {m.name for m in item.iter_markers()}:
            item.add_marker(name)
        module_marks.setdefault(item.nodeid.split("::")[0], set()).update(marks)
        groups = {str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in item.iter_markers("xdist_group")}
        problem = lab_group_problem(marks, groups, set(getattr(item, "fixturenames", ())))
        if problem:
            problems.append(f"{item.nodeid}: {problem}")
    if problems:
        raise pytest.UsageError("\n".join(problems))
    items.sort(key=lambda item: hand_out_order(module_marks[item.nodeid.split("::")[0]],
                                               item.get_closest_marker("long") is not None))


def hand_out_order(module_marks: set[str], long: bool) -> tuple[int, bool]:
    """The sort key of a test: its module's weight (:func:`_weight`), then a ``long`` test before the rest."""
    return _weight(module_marks), not long


@pytest.fixture(autouse=True)
def _private_state_home(tmp_path, monkeypatch):
    """Audit logs of tests that name no audit directory land in the test's own folder, never in ~; no
    config file of the operator's is read (a test that wants one writes it under XDG_CONFIG_HOME)."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    # kubectl's discovery cache: one folder per API server it met, and every stand-in listens on a port of its
    # own (thousands of folders, 100 MB, in ~/.kube/cache after a few runs of the suite).
    monkeypatch.setenv("KUBECACHEDIR", str(tmp_path / "kube-cache"))


LAB_COMMAND_TIMEOUT = 60.0
"""The per-command timeout of the nvls-tui commands a lab test runs (before :func:`scaled`): the
product's default (20 s) bounds a hung command on an idle machine; the lab's containers share the
test machine's cores, and under load a command over SSH took longer than that just to start."""


@pytest.fixture(autouse=True)
def _patient_lab_commands(request, _private_state_home, tmp_path):
    """A test marked ``lab`` gets a config file whose per-command timeout scales with the machine's
    load: every nvls-tui it runs (a subprocess or ``main()`` in this process) reads it through
    ``XDG_CONFIG_HOME``. A test that gives ``--timeout`` itself still wins."""
    if request.node.get_closest_marker("lab") is None:
        return
    from tests.waiting import scaled

    config = tmp_path / "xdg-config" / "nvls-tui" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f"timeout = {scaled(LAB_COMMAND_TIMEOUT):.0f}\n")


def _shim_writer(scenario: str, speed: float | None = None, static: bool = False):
    """``populate(name, dir)`` writing the simulator's shims for ``scenario`` (skip if not built yet)."""
    try:
        from nvls_tui.sim.shims import write_shims
    except ImportError:
        pytest.skip("the simulator's shims (nvls_tui.sim.shims.write_shims) are not available yet")

    def populate(name, node_dir):
        write_shims(node_dir, scenario, name, static=static, speed=speed)

    return populate


def _need_sshd() -> None:
    if find_sshd() is None:
        pytest.skip("openssh-server is not installed (scripts/test.sh installs it)")


@pytest.fixture(scope="session")
def sshd_fleet(tmp_path_factory):
    """Factory: ``sshd_fleet(nodes, scenario=None, speed=None, static=False) -> SshdRig``, one running sshd per distinct request.

    ``nodes`` is a count (``gpu01``..) or a list of names. With a scenario, each node's shims are
    written first; without one, nodes only get an empty bin directory (plain commands work).
    Rigs are shared across the session and stopped (by PID) at its end.
    """
    rigs: dict[tuple, SshdRig] = {}

    def make(nodes: int | list[str] = 1, scenario: str | None = None, speed: float | None = None,
             static: bool = False) -> SshdRig:
        _need_sshd()
        names = node_names(nodes) if isinstance(nodes, int) else list(nodes)
        key = (tuple(names), scenario, speed, static)
        if key not in rigs:
            populate = _shim_writer(scenario, speed, static) if scenario else None
            rigs[key] = SshdRig(tmp_path_factory.mktemp("sshd"), names, populate).start()
        return rigs[key]

    yield make
    for rig in rigs.values():
        rig.stop()


@pytest.fixture
def private_sshd(tmp_path):
    """A one-node sshd of the test's own, for tests that kill or restart it."""
    _need_sshd()
    rig = SshdRig(tmp_path / "sshd", ["gpu01"]).start()
    yield rig
    rig.stop()


@pytest.fixture
def rigs(tmp_path):
    """Factory: ``rigs({name: (scenario, scenario node)}, static=False) -> SshdRig`` of the test's own
    (its repairs change the nodes' shim state), all stopped (by PID) at its end."""
    from tests.sshd.test_faults_ssh import make_rig

    started: list[SshdRig] = []

    def make(nodes: dict[str, tuple[str, str]], *, static: bool = False) -> SshdRig:
        _need_sshd()
        rig = make_rig(tmp_path / f"rig{len(started)}", nodes, static=static)
        started.append(rig)
        return rig

    yield make
    for rig in started:
        rig.stop()


TEST_SUBNET = 6
"""The test suite's lab listens on 127.0.6.x: never on an operator's own lab (127.0.5.x). Every other lab of
the suite has a subnet of its own too (tests/lab/own_lab.py, ``SUBNETS``)."""
