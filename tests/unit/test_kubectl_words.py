"""One parser of a kubectl call's words, shared by the plan's summary and the incident report (X3 item 3).

views/plan_summary.kubectl_words repeated report/cluster.kubectl_args; both now read kube/words.py, the
inverse of :meth:`~nvls_tui.kube.client.Kubectl.argv`.
"""

from __future__ import annotations

from nvls_tui.kube import words
from nvls_tui.kube.client import Kubectl
from nvls_tui.report import cluster
from nvls_tui.views import plan_summary


def test_the_words_after_the_global_flags_as_kubectl_argv_builds_them():
    kube = Kubectl(kubeconfig="/etc/k 8s/config", context="prod", timeout=15)
    assert words.kubectl_args(kube.argv("cordon", "gpu06")) == ["cordon", "gpu06"]
    assert words.kubectl_args(["/usr/local/bin/kubectl", "--kubeconfig=/x", "get", "nodes", "-o", "json"]) \
        == ["get", "nodes", "-o", "json"]
    # After the verb every word stays, flags included.
    assert words.kubectl_args(["kubectl", "delete", "pod", "-n", "ns", "p", "--wait=false"]) \
        == ["delete", "pod", "-n", "ns", "p", "--wait=false"]
    assert words.kubectl_args(["ssh", "kubectl", "cordon"]) is None
    assert words.kubectl_args([]) is None


def test_a_plan_line_is_split_as_the_shell_would_and_its_comment_dropped():
    line = "kubectl --kubeconfig '/etc/k 8s/config' --request-timeout=14s cordon gpu06  # no new pod lands"
    assert words.kubectl_line_args(line) == ["cordon", "gpu06"]
    assert words.kubectl_line_args("kubectl label node 'gpu06") is None  # an unbalanced quote: not a call
    assert words.kubectl_line_args("# gpu06 is cordoned already") is None
    assert words.kubectl_line_args("systemctl stop kubelet.service") is None


def test_the_report_and_the_summary_use_the_one_parser():
    assert cluster.kubectl_args is words.kubectl_args
    assert not hasattr(plan_summary, "kubectl_words") and not hasattr(plan_summary, "KUBECTL_GLOBALS")
    assert not hasattr(cluster, "_VALUED")
