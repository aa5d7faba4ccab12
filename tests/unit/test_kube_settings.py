"""Finding the Kubernetes cluster (issue 29): --kubeconfig / --kube-context / KUBECONFIG / ~/.kube/config /
[kubernetes], --no-kubernetes, and a kubeconfig that cannot be used said in one sentence.

The kubeconfigs are checked by the real kubectl (``kubectl config view --minify``); no server is reached.
"""

from __future__ import annotations

import argparse
import json
import shutil
from dataclasses import dataclass

import pytest

from nvls_tui.backends.base import InvalidArgument
from nvls_tui.cli import build_parser, main
from nvls_tui.config import ConfigError, parse_config
from nvls_tui.settings import COMMAND_LINE, settings_from
from nvls_tui.targets import kube_from_settings

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")

KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "http://127.0.0.1:1"}
contexts:
- name: prod
  context: {cluster: c, user: u}
- name: lab
  context: {cluster: c, user: u}
current-context: prod
users:
- name: u
  user: {token: abc}
"""


@dataclass
class RealNode:
    """What kube_from_settings asks of a backend: its host and that it is not simulated."""

    host: str
    simulated: bool = False


@pytest.fixture
def home(tmp_path, monkeypatch):
    """An operator with no kubeconfig anywhere (HOME without ~/.kube/config, no KUBECONFIG)."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("SLURM_CONF", raising=False)
    (tmp_path / "home").mkdir()
    return tmp_path / "home"


def settings(*argv: str, config_text: str | None = None, tmp=None):
    args = build_parser().parse_args(["check", *argv])
    config = parse_config(__import__("tomllib").loads(config_text), tmp) if config_text is not None else None
    return settings_from(args, config)


def test_no_kubeconfig_anywhere_is_no_cluster(home):
    assert kube_from_settings(settings("gpu05"), [RealNode("gpu05")]) is None


def test_the_default_kubeconfig_is_found_where_kubectl_is_installed(home):
    (home / ".kube").mkdir()
    (home / ".kube" / "config").write_text(KUBECONFIG)
    fleet = kube_from_settings(settings("gpu05"), [RealNode("root@gpu05.dc1:22")])
    assert fleet is not None
    kubectl = fleet.for_host("root@gpu05.dc1:22")
    assert kubectl is not None
    assert (kubectl.kubeconfig, kubectl.context) == (str(home / ".kube" / "config"), None)
    assert kubectl.node_name("root@gpu05.dc1:22") == "gpu05"  # the short host name


def test_kubeconfig_env_is_taken_and_no_kubernetes_ignores_it(home, tmp_path, monkeypatch):
    path = tmp_path / "kc"
    path.write_text(KUBECONFIG)
    monkeypatch.setenv("KUBECONFIG", str(path))
    fleet = kube_from_settings(settings("gpu05"), [RealNode("gpu05")])
    assert fleet is not None and fleet.for_host("gpu05").kubeconfig == str(path)
    assert kube_from_settings(settings("--no-kubernetes", "gpu05"), [RealNode("gpu05")]) is None


def test_the_command_line_kubeconfig_and_context_are_passed_to_every_kubectl(home, tmp_path):
    path = tmp_path / "kc"
    path.write_text(KUBECONFIG)
    s = settings("--kubeconfig", str(path), "--kube-context", "lab", "gpu05")
    assert s.source("kubernetes.kubeconfig") == COMMAND_LINE
    kubectl = kube_from_settings(s, [RealNode("gpu05")]).for_host("gpu05")
    assert kubectl.argv("get", "nodes", "-o", "json") == [
        "kubectl", "--kubeconfig", str(path), "--context", "lab", "--request-timeout=19s", "get", "nodes", "-o", "json"]


def test_a_simulated_fleet_not_on_kubernetes_is_in_no_cluster(home, tmp_path):
    path = tmp_path / "kc"
    path.write_text(KUBECONFIG)
    assert kube_from_settings(settings("--kubeconfig", str(path), "sim:healthy"), [RealNode("hgx01", True)]) is None


@pytest.mark.parametrize(("text", "said"), [
    (None, ": No such file or directory"),  # no file at all
    ("clusters: [", "cannot be used: error loading config file"),  # not YAML: kubectl's own words
    ("apiVersion: v1\nkind: Config\n", "cannot be used: current-context must exist in order to minify"),
])
def test_a_kubeconfig_that_cannot_be_used_is_one_sentence_before_any_node_is_polled(home, tmp_path, capsys, text,
                                                                                    said):
    path = tmp_path / "kc"
    if text is not None:
        path.write_text(text)
    # 127.0.0.1:1 refuses at once; the kubeconfig is refused before it is tried (exit 2, one line).
    assert main(["check", "--kubeconfig", str(path), "127.0.0.1:1"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert f"--kubeconfig {path}" in err and said in err, err


def test_a_context_the_kubeconfig_lacks_is_refused(home, tmp_path):
    path = tmp_path / "kc"
    path.write_text(KUBECONFIG)
    with pytest.raises(InvalidArgument, match="cannot be used: cannot locate context nope"):
        kube_from_settings(settings("--kubeconfig", str(path), "--kube-context", "nope", "gpu05"),
                           [RealNode("gpu05")])


def test_a_context_without_any_kubeconfig_is_refused(home):
    with pytest.raises(InvalidArgument, match="names a context but no kubeconfig was found"):
        kube_from_settings(settings("--kube-context", "prod", "gpu05"), [RealNode("gpu05")])


def test_the_config_files_kubernetes_section_and_node_map(home, tmp_path):
    path = tmp_path / "kc"
    path.write_text(KUBECONFIG)
    text = (f'[kubernetes]\nkubeconfig = "{path}"\ncontext = "lab"\n'
            '[kubernetes.nodes]\n"gpu05.dc1.example" = "dc1-gpu05"\n')
    s = settings("gpu05.dc1.example", "gpu06", config_text=text, tmp=tmp_path / "config.toml")
    assert s.source("kubernetes.kubeconfig").startswith("config file")
    kubectl = kube_from_settings(s, [RealNode("gpu05.dc1.example"), RealNode("gpu06")]).for_host("gpu06")
    assert (kubectl.kubeconfig, kubectl.context) == (str(path), "lab")
    assert kubectl.node_name("gpu05.dc1.example") == "dc1-gpu05" and kubectl.node_name("gpu06") == "gpu06"


def test_a_node_map_file_wins_and_a_bad_line_is_one_sentence(home, tmp_path):
    path = tmp_path / "kc"
    path.write_text(KUBECONFIG)
    node_map = tmp_path / "map"
    node_map.write_text("# target node\ngpu05 k8s-gpu-05\n")
    s = settings("--kubeconfig", str(path), "--kube-node-map", str(node_map), "gpu05")
    assert kube_from_settings(s, [RealNode("gpu05")]).for_host("gpu05").node_name("gpu05") == "k8s-gpu-05"
    node_map.write_text("gpu05\n")
    with pytest.raises(InvalidArgument, match=r":1: expected 'TARGET K8S_NODE'"):
        kube_from_settings(s, [RealNode("gpu05")])


@pytest.mark.parametrize(("text", "said"), [
    ('[kubernetes]\nkubecfg = "x"\n', "unknown [kubernetes] option 'kubecfg'"),
    ("[kubernetes]\ncontext = 3\n", "kubernetes.context must be a str"),
    ('[kubernetes]\ncontext = ""\n', "kubernetes.context must not be empty"),
    ("[kubernetes.nodes]\ngpu05 = 5\n", "kubernetes.nodes.gpu05 must be a str"),
])
def test_the_kubernetes_section_is_checked_whole(text, said):
    with pytest.raises(ConfigError, match=__import__("re").escape(said)):
        parse_config(__import__("tomllib").loads(text))


def test_without_a_cluster_check_json_is_as_before(home, capsys):
    assert main(["check", "--json", "sim:seed-incident/gpu06"]) == 1
    node = json.loads(capsys.readouterr().out)["nodes"][0]
    assert node["k8s"] is None
    pods = [h["pod"] for h in node["holders"] if h["pod"] is not None]
    assert pods and all(isinstance(p, str) and p.startswith("pod") for p in pods)


def test_help_names_the_kubernetes_options(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["check", "--help"])
    out = capsys.readouterr().out
    for option in ("--kubeconfig FILE", "--kube-context NAME", "--kube-node-map FILE", "--no-kubernetes"):
        assert option in out
    assert isinstance(build_parser().parse_args(["check", "--no-kubernetes"]), argparse.Namespace)
