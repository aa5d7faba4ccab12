"""FM_RESTARTER (issue 26 item 2): what restarts Fabric Manager behind the operator, read, said and held off.

The forms are the real tools' where they run here: GNU grep reads needrestart's configuration (Debian
bookworm's own file, tests/fixtures/restarters/needrestart.conf), apt-config dumps APT::Periodic, and
perl evaluates the same configuration the way needrestart's ``eval`` does, to check the parser's reading.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from nvls_tui.backends.base import CommandResult
from nvls_tui.backends.simulated import sim_backends
from nvls_tui.diagnosis import diagnose
from nvls_tui.diagnosis.restarters import carry_fm_restarts, restarter_findings
from nvls_tui.model import NodeState, Restarters, ServiceState, Verdict
from nvls_tui.parsers.restarters import (
    PREVENTION_FILE,
    PREVENTION_LINE,
    parse_apt_periodic,
    parse_needrestart,
    unattended_upgrades_on,
)
from nvls_tui.parsers.systemctl import parse_show
from nvls_tui.poll.assemble import restarters
from nvls_tui.poll.probe import APT_PERIODIC_ARGV, NEEDRESTART_ARGV, SECTIONS
from nvls_tui.runbook import RepairOptions, Runbook
from nvls_tui.runbook.changes import UnitChange
from nvls_tui.runbook.outcome import NodeOutcome
from nvls_tui.runbook.plan import fill_steps, plan_commands, plan_entries
from nvls_tui.runbook.restore import restore_actions, startable
from nvls_tui.runbook.steps import unit_states
from nvls_tui.sim.commands import execute
from nvls_tui.sim.faults import AUTO_UPGRADES, NEEDRESTART_AUTO
from nvls_tui.sim.fleet import load_fleet
from nvls_tui.sim.scenarios import SCENARIOS
from nvls_tui.views.plan_summary import what_it_does

DEBIAN_CONF = (Path(__file__).parents[1] / "fixtures" / "restarters" / "needrestart.conf").read_text()
FM = "nvidia-fabricmanager.service"
FAST = RepairOptions(poll_interval=0.01, term_grace=0.5, holder_timeout=3.0, fm_timeout=3.0, smoke_timeout=30.0,
                     transient_pause=0.01, restore_attempts=3)
needs_perl = pytest.mark.skipif(shutil.which("perl") is None, reason="perl is not installed")


def etc(tmp_path: Path, snippets: dict[str, str], main: str | None = DEBIAN_CONF) -> Path:
    """A root with /etc/needrestart as given (main None: needrestart not installed)."""
    conf = tmp_path / "etc" / "needrestart"
    if main is not None:
        (conf / "conf.d").mkdir(parents=True)
        (conf / "needrestart.conf").write_text(main)
        (conf / "conf.d" / "README.needrestart").write_text("Files ending with .conf are parsed.\n")
    for name, text in snippets.items():
        (conf / "conf.d" / name).write_text(text)
    return tmp_path


def real_grep(root: Path) -> CommandResult:
    """The probe's grep, for real, over ``root``'s /etc/needrestart, printed as on the node (root cut off)."""
    argv = [a if not a.startswith("/etc/") else f"{root}{a}" for a in NEEDRESTART_ARGV]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    return CommandResult(NEEDRESTART_ARGV, done.returncode, (done.stdout + done.stderr).replace(str(root), ""))


PERL_DECIDES = r"""
our %nrconf = (restart => 'i', ui_mode => 'a', defno => 0, override_rc => {}, blacklist_rc => []);
our $LOGPREF = '';
for my $fn (@ARGV) { eval do { local $/; open my $fh, '<', $fn or die; <$fh> }; die "$fn: $@" if $@; }
my $mode = $nrconf{ui_mode} eq 'e' ? 'l' : $nrconf{restart};
for my $rc ('nvidia-fabricmanager.service', 'nvidia-persistenced.service', 'nvidia-dcgm.service') {
    next if grep { $rc =~ /$_/ } @{$nrconf{blacklist_rc}};
    my $restart = !$nrconf{defno};
    foreach my $re (keys %{$nrconf{override_rc}}) { next unless $rc =~ /$re/; $restart = $nrconf{override_rc}->{$re}; last; }
    print "$rc\n" if $restart;
}
print "mode=$mode\n";
"""


def perl_says(root: Path, snippets: dict[str, str]) -> tuple[str, tuple[str, ...]]:
    """Perl's own reading of the configuration: the mode and the units it picks (main file, then conf.d sorted).

    The main file's own conf.d loop is left out (it reads the real /etc): the snippets are passed in its order.
    """
    main = root / "etc/needrestart/needrestart.conf"
    alone = main.with_name("main-only.pl")
    alone.write_text(main.read_text().split("# Read additional config snippets.")[0])
    files = [str(alone), *(str(root / "etc/needrestart/conf.d" / n) for n in sorted(snippets))]
    out = subprocess.run(["perl", "-e", PERL_DECIDES, *files], capture_output=True, text=True, check=True).stdout
    lines = out.split()
    return lines[-1].removeprefix("mode="), tuple(lines[:-1])


CONFIGS = {
    "debian-default": {},
    "automatic": {"50-auto.conf": NEEDRESTART_AUTO},
    "automatic-with-prevention": {"50-auto.conf": NEEDRESTART_AUTO, "nvidia.conf": PREVENTION_LINE + "\n"},
    "list-only": {"list.conf": "$nrconf{restart} = 'l';\n"},
    "easy-ui": {"ui.conf": "$nrconf{restart} = 'a';\n$nrconf{ui_mode} = 'e';\n"},
    "blacklisted": {"a.conf": "$nrconf{restart} = 'a';\npush @{$nrconf{blacklist_rc}}, qr(^nvidia-fabric);\n"},
    "defno": {"a.conf": "$nrconf{restart} = \"a\";\n$nrconf{defno} = 1;\n"},
    "override-arrow": {"a.conf": "$nrconf{restart} = 'a';\n$nrconf{override_rc}->{qr(^nvidia-(fabric|dcgm))} = 0;\n"},
    "override-replaced": {"a.conf": "$nrconf{restart} = 'a';\n$nrconf{override_rc} = {\n    qr(^nvidia) => 0, # all\n};\n"},
    "case-insensitive": {"a.conf": "$nrconf{restart} = 'a';\n$nrconf{override_rc}{qr(^NVIDIA-)i} = 0;\n"},
}


@needs_perl
@pytest.mark.parametrize("name", CONFIGS)
def test_the_parser_reads_needrestarts_configuration_as_perl_does(tmp_path, name):
    snippets = CONFIGS[name]
    root = etc(tmp_path, snippets)
    parsed = parse_needrestart(real_grep(root).output)
    assert parsed.warnings == () and parsed.value is not None and parsed.value.uncertain == ()
    mode, picked = perl_says(root, snippets)
    assert parsed.value.mode == mode
    ours = tuple(u for u in ("nvidia-fabricmanager.service", "nvidia-persistenced.service", "nvidia-dcgm.service")
                 if parsed.value.selects(u))
    assert ours == picked


def test_the_debian_default_asks_and_the_prevention_line_takes_fm_out(tmp_path):
    default = parse_needrestart(real_grep(etc(tmp_path / "a", {})).output).value
    assert default is not None and default.mode == "i" and default.selects(FM)
    prevented = parse_needrestart(real_grep(etc(tmp_path / "b", {"nvidia.conf": PREVENTION_LINE})).output).value
    assert prevented is not None and not prevented.selects(FM) and not prevented.selects("nvidia-dcgm.service")
    assert prevented.selects("cron.service")
    assert PREVENTION_FILE == "/etc/needrestart/conf.d/nvidia.conf"


def test_without_needrestart_grep_says_no_such_file_and_that_is_an_answer(tmp_path):
    result = real_grep(etc(tmp_path, {}, main=None))
    assert result.exit_status == 2 and "No such file or directory" in result.output
    assert parse_needrestart(result.output).value is None
    found: list = []
    state = restarters({"needrestart": result, "apt": CommandResult(APT_PERIODIC_ARGV, 0, "")}, (), found, [])
    assert found == [] and state == Restarters(needrestart=False, unattended_upgrades=False)


def test_a_statement_it_cannot_read_makes_fm_count_as_restarted(tmp_path):
    odd = {"a.conf": "$nrconf{restart} = 'a';\n$nrconf{override_rc} = get_overrides();\n"}
    config = parse_needrestart(real_grep(etc(tmp_path, odd)).output).value
    assert config is not None and config.mode == "a" and config.selects(FM)
    assert config.uncertain == ("a statement about $nrconf{override_rc} that was not understood",)


def test_keys_that_match_and_disagree_count_as_restarted():
    text = ("/etc/needrestart/needrestart.conf:$nrconf{restart} = 'a';\n"
            "/etc/needrestart/needrestart.conf:$nrconf{override_rc} = { qr(^nvidia) => 0, qr(fabric) => 1 };\n")
    config = parse_needrestart(text).value
    assert config is not None and config.selects(FM) and not config.selects("nvidia-dcgm.service")


def test_apt_config_says_whether_unattended_upgrades_run(tmp_path):
    if shutil.which("apt-config") is None:
        pytest.skip("apt-config is not installed")
    base = subprocess.run(["apt-config", "dump", "APT::Periodic"], capture_output=True, text=True, check=True)
    if base.stdout.strip():
        pytest.skip("this machine's own apt configuration sets APT::Periodic")
    assert parse_apt_periodic(base.stdout).value == {}
    conf = tmp_path / "20auto-upgrades"
    conf.write_text(AUTO_UPGRADES)
    on = subprocess.run(["apt-config", "-c", str(conf), "dump", "APT::Periodic"], capture_output=True, text=True,
                        check=True).stdout
    periodic = parse_apt_periodic(on)
    assert periodic.warnings == () and periodic.value == {"Update-Package-Lists": "1", "Unattended-Upgrade": "1"}
    assert unattended_upgrades_on(periodic.value)
    assert not unattended_upgrades_on({"Unattended-Upgrade": "0"})
    assert not unattended_upgrades_on({"Unattended-Upgrade": "1", "Enable": "0"})


def test_the_simulated_grep_and_apt_config_print_what_the_real_ones_do(tmp_path):
    node = SCENARIOS["fm-restarters"].build_node("gpu-nr01", 1.8e9)
    root = tmp_path
    for path, text in node.files.items():
        if path.startswith("/etc/"):
            (root / path[1:]).parent.mkdir(parents=True, exist_ok=True)
            (root / path[1:]).write_text(text)
    sim = execute(node, NEEDRESTART_ARGV, 1.8e9)
    real = real_grep(root)
    assert (sim.exit_status, sim.stdout + sim.stderr) == (real.exit_status, real.output)
    bare = SCENARIOS["healthy"].build_node("hgx01", 1.8e9)
    sim = execute(bare, NEEDRESTART_ARGV, 1.8e9)
    real = real_grep(tmp_path / "nothing")
    assert (sim.exit_status, sim.stdout + sim.stderr) == (real.exit_status, real.output)
    if shutil.which("apt-config") is not None:
        sim = execute(node, APT_PERIODIC_ARGV, 1.8e9)
        conf = root / "etc/apt/apt.conf.d/20auto-upgrades"
        real_apt = subprocess.run(["apt-config", "-c", str(conf), *APT_PERIODIC_ARGV[1:]], capture_output=True,
                                  text=True, check=True)
        assert (sim.exit_status, sim.stdout) == (real_apt.returncode, real_apt.stdout)


def test_systemctl_show_nrestarts_is_read_for_services_and_absent_for_timers():
    text = ("Type=simple\nRestart=on-failure\nMainPID=4242\nResult=success\nNRestarts=3\nId=nvidia-fabricmanager.service\n"
            "LoadState=loaded\nActiveState=active\nSubState=running\n\n"
            "Result=success\nId=apt-daily.timer\nLoadState=loaded\nActiveState=active\nSubState=waiting\n")
    fm, timer = parse_show(text).value
    assert (fm.restarts, timer.restarts) == (3, None)
    assert "NRestarts" in next(s.argv for s in SECTIONS if s.name == "units")[4].split(",")


def poll(spec: str, **faults) -> NodeState:
    fleet = load_fleet(spec, speed=2000.0)
    backend = sim_backends(fleet)[0]
    node = fleet.node(backend.host)
    for key, value in faults.items():
        setattr(node, key, value)
    return asyncio.run(backend.snapshot())


def test_check_names_each_cause_with_its_prevention_on_the_fm_restarters_node():
    state = poll("sim:fm-restarters")
    assert state.restarters == Restarters(needrestart=True, needrestart_mode="a",
                                          needrestart_units=(FM, "nvidia-persistenced.service", "nvidia-dcgm.service"),
                                          unattended_upgrades=True)
    assert state.service(FM).restarts == 3
    words = [f.message for f in diagnose(state).findings if f.code == "FM_RESTARTER"]
    assert len(words) == 3
    assert words[0].startswith("needrestart restarts nvidia-fabricmanager, nvidia-persistenced and nvidia-dcgm "
                               "automatically after package upgrades")
    assert f"`{PREVENTION_LINE}` in {PREVENTION_FILE}" in words[0]
    assert words[1].startswith("unattended-upgrades installs upgrades on its own (apt-daily-upgrade.timer active")
    assert "and needrestart then restarts nvidia-fabricmanager" in words[1]
    assert words[2].startswith("systemd restarted nvidia-fabricmanager 3 times (NRestarts) since it was last started "
                               "by hand: it keeps exiting")
    assert all(f.severity.value == "warning" for f in diagnose(state).findings if f.code == "FM_RESTARTER")


def test_check_json_says_what_restarts_fm(capsys):
    from nvls_tui.cli import main

    assert main(["check", "sim:fm-restarters", "sim:healthy/hgx01", "--json"]) == 1
    nodes = {n["host"]: n for n in json.loads(capsys.readouterr().out)["nodes"]}
    assert nodes["gpu-nr01"]["restarters"] == {
        "needrestart": {"mode": "a", "units": [FM, "nvidia-persistenced.service", "nvidia-dcgm.service"],
                        "uncertain": []},
        "unattended_upgrades": True, "fm_restarts": 3}
    assert nodes["gpu-nr01"]["services"]["apt-daily-upgrade.timer"] == "active"
    assert nodes["hgx01"]["restarters"] == {"needrestart": False, "unattended_upgrades": False,
                                                        "fm_restarts": 0}


def test_a_healthy_node_without_restarters_has_no_finding_and_reads_every_section():
    state = poll("sim:healthy/hgx01")
    assert state.restarters == Restarters(needrestart=False, unattended_upgrades=False)
    assert not state.missing and diagnose(state).verdict is Verdict.HEALTHY


def test_needrestart_that_only_asks_is_a_finding_that_says_so():
    state = NodeState("n", services=(ServiceState(FM, "active"),),
                      restarters=Restarters(needrestart=True, needrestart_mode="i", needrestart_units=(FM,),
                                            unattended_upgrades=False))
    (finding,) = restarter_findings(state)
    assert finding.message.startswith("needrestart offers to restart nvidia-fabricmanager after an interactive apt "
                                      "upgrade, pre-selected (one Enter restarts it)")
    listed = state.replace(restarters=Restarters(needrestart=True, needrestart_mode="l", needrestart_units=(FM,)))
    assert restarter_findings(listed) == []


def test_unattended_upgrades_with_its_timer_stopped_is_no_finding():
    on = Restarters(needrestart=False, unattended_upgrades=True)
    timer = ServiceState("apt-daily-upgrade.timer", "inactive")
    assert restarter_findings(NodeState("n", services=(timer,), restarters=on)) == []
    running = NodeState("n", services=(ServiceState("apt-daily-upgrade.timer", "active"),), restarters=on)
    (finding,) = restarter_findings(running)
    assert "hold them (`apt-mark hold` the nvidia packages)" in finding.message


def test_fm_restarts_climbing_between_polls_reads_as_flapping_now():
    first = NodeState("n", services=(ServiceState(FM, "active", restarts=3),))
    later = carry_fm_restarts(first, NodeState("n", services=(ServiceState(FM, "active", restarts=5),)))
    assert later.fm_restarts_before == 3
    (finding,) = restarter_findings(later)
    assert "3 times" not in finding.message
    assert "restarted nvidia-fabricmanager 5 times (NRestarts) since it was last started by hand, 2 more " \
           "restarts since the last poll: it is flapping now" in finding.message
    steady = carry_fm_restarts(later, NodeState("n", services=(ServiceState(FM, "active", restarts=5),)))
    assert "flapping now" not in restarter_findings(steady)[0].message
    assert restarter_findings(NodeState("n", services=(ServiceState(FM, "active", restarts=0),))) == []


@pytest.mark.parametrize(("fault", "reason"), [({"missing_tools": ["grep"]}, "tool missing")])
def test_needrestart_not_read_is_missing_evidence_and_the_node_is_not_healthy(fault, reason):
    state = poll("sim:healthy/hgx01", **fault)
    (missing,) = [m for m in state.missing if m.section == "needrestart"]
    assert missing.reason == reason
    diag = diagnose(state)
    assert diag.verdict is not Verdict.HEALTHY
    assert [f.section for f in diag.findings if f.code == "EVIDENCE_MISSING"] == ["needrestart"]


def test_grep_denied_is_missing_evidence_not_absent():
    denied = CommandResult(NEEDRESTART_ARGV, 2, "grep: /etc/needrestart/needrestart.conf: Permission denied\n")
    lost: list = []
    found = restarters({"needrestart": denied, "apt": CommandResult(APT_PERIODIC_ARGV, 0, "")}, (), lost, [])
    assert [(m.section, m.reason) for m in lost] == [("needrestart", "permission denied")]
    assert found == Restarters(unattended_upgrades=False)  # only apt was read


def test_no_apt_config_means_no_apt_and_unreadable_units_leave_unattended_unknown():
    no_apt = CommandResult(APT_PERIODIC_ARGV, 127, "sh: 1: apt-config: not found\n")
    absent = CommandResult(NEEDRESTART_ARGV, 2, "grep: /etc/needrestart/needrestart.conf: No such file or directory\n"
                                                "grep: /etc/needrestart/conf.d: No such file or directory\n")
    lost: list = []
    assert restarters({"needrestart": absent, "apt": no_apt}, None, lost, []) == Restarters(
        needrestart=False, unattended_upgrades=False)
    on = CommandResult(APT_PERIODIC_ARGV, 0, 'APT::Periodic "";\nAPT::Periodic::Unattended-Upgrade "1";\n')
    assert restarters({"needrestart": absent, "apt": on}, None, lost, []).unattended_upgrades is None
    assert lost == []


def test_the_plan_holds_apts_timers_first_and_starts_them_again_last():
    state = poll("sim:fm-restarters")
    plan = plan_commands(state)
    note = ("held for the repair, started again after: no unattended upgrade (nor the needrestart it runs) meanwhile")
    assert plan["quiesce"][:2] == [f"systemctl stop apt-daily.timer  # {note}",
                                   f"systemctl stop apt-daily-upgrade.timer  # {note}"]
    starts = [c for c in plan["restore"] if c.startswith("systemctl start ")]
    assert starts[-2:] == ["systemctl start apt-daily-upgrade.timer", "systemctl start apt-daily.timer"]
    assert not any("unattended-upgrades" in c for c in plan["quiesce"] + plan["restore"])


def test_the_plan_summary_says_the_timers_are_held():
    outcome = fill_steps(NodeOutcome("gpu-nr01", dry_run=True, result="planned"),
                         plan_entries(poll("sim:fm-restarters")))
    assert ("apt-daily.timer and apt-daily-upgrade.timer stopped for the repair, started after: no unattended "
            "upgrade, nor the needrestart it runs, restarts Fabric Manager meanwhile; an `apt` run by hand still runs "
            "needrestart: run none until the repair ends") in what_it_does(outcome)
    assert "stops apt-daily.timer, apt-daily-upgrade.timer, nvidia-snapshot.timer" in " ".join(what_it_does(outcome))


def test_restore_starts_apts_timers_and_a_record_naming_them_is_honoured():
    assert startable("apt-daily.timer") and startable("apt-daily-upgrade.timer")
    assert not startable("unattended-upgrades.service") and not startable("apt-daily-upgrade.service")
    prior = {"apt-daily.timer": "active", "apt-daily-upgrade.timer": "inactive", FM: "active"}
    actions = restore_actions(prior, {}, {"apt-daily.timer": "inactive", FM: "active"}, {})
    assert actions == [UnitChange("start", "apt-daily.timer")]
    assert actions[0].argv() == ("systemctl", "start", "apt-daily.timer")


async def test_a_repair_leaves_apts_units_as_they_were_and_none_ran_during_the_reset():
    fleet = load_fleet("sim:fm-restarters", speed=2000.0)
    (backend,) = sim_backends(fleet)
    before = unit_states(await backend.snapshot())
    outcome = await Runbook(backend, FAST).run()
    assert outcome.result == "repaired", outcome.message
    after = unit_states(await backend.snapshot())
    apt = ("apt-daily.timer", "apt-daily-upgrade.timer", "apt-daily.service", "apt-daily-upgrade.service",
           "unattended-upgrades.service")
    assert {u: after[u] for u in apt} == {u: before[u] for u in apt} == {
        "apt-daily.timer": "active", "apt-daily-upgrade.timer": "active", "apt-daily.service": "inactive",
        "apt-daily-upgrade.service": "inactive", "unattended-upgrades.service": "active"}
    log = [" ".join(argv) for _, argv in fleet.node(backend.host).cmdlog]
    reset = log.index("nvidia-smi -r")
    for timer in ("apt-daily.timer", "apt-daily-upgrade.timer"):
        assert log.index(f"systemctl stop {timer}") < reset < log.index(f"systemctl start {timer}")
    assert log.index("systemctl stop apt-daily.timer") < min(i for i, c in enumerate(log) if c.startswith("kill"))
    changed = [c for c in log if c.split()[:2] in (["systemctl", "start"], ["systemctl", "stop"], ["systemctl", "restart"])]
    assert not any(c.endswith(("apt-daily.service", "apt-daily-upgrade.service", "unattended-upgrades.service"))
                   for c in changed)


async def test_preflight_refuses_while_an_unattended_upgrade_runs_and_changes_nothing():
    fleet = load_fleet("sim:fm-restarters", speed=2000.0)
    (backend,) = sim_backends(fleet)
    node = fleet.node(backend.host)
    node.units["apt-daily-upgrade.service"].active = "activating"
    node.units["apt-daily-upgrade.service"].sub = "start"
    outcome = await Runbook(backend, FAST).run()
    assert outcome.result == "refused"
    assert ("apt-daily-upgrade.service is running (apt's daily run: an upgrade, and the needrestart after it, can "
            "restart nvidia-* units mid-repair") in outcome.message
    assert not any(argv[:2] == ["systemctl", "stop"] for _, argv in node.cmdlog)


def test_text_from_the_nodes_configuration_reaches_the_finding_as_data():
    hostile = CommandResult(NEEDRESTART_ARGV, 0, "/etc/needrestart/needrestart.conf:$nrconf{restart} = 'a';\n"
                                                 "/etc/needrestart/needrestart.conf:$nrconf{override_rc}{qr([bold\x1b[2J)} = 0;\n")
    found = restarters({"needrestart": hostile, "apt": CommandResult(APT_PERIODIC_ARGV, 0, "")}, (), [], [])
    assert found is not None and found.needrestart_units == (FM, "nvidia-persistenced.service", "nvidia-dcgm.service")
    state = NodeState("n", services=(ServiceState(FM, "active"),), restarters=found)
    (finding,) = restarter_findings(state)
    assert "\x1b" not in finding.message
    # The escape never reached the parser (CommandResult cleans what a node prints); the rest is quoted as data.
    assert "(its configuration was not read whole: the regex '[bold' could not be read)" in finding.message
