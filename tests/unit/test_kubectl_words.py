"""One parser of a kubectl call's words, the incident report's (X3 item 3; issue 36: the plan's summary reads
the typed changes instead, runbook/kube_summary.py, and parses no kubectl line).

report/cluster.kubectl_args is kube/words.py's, the inverse of :meth:`~nvls_tui.kube.client.Kubectl.argv`.
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


def test_the_report_uses_the_one_parser_and_the_summary_none():
    assert cluster.kubectl_args is words.kubectl_args
    assert not hasattr(words, "kubectl_line_args")
    assert not {"kubectl_words", "KUBECTL_GLOBALS", "kubectl_line_args", "kubectl_args"} & set(vars(plan_summary))
    assert not hasattr(cluster, "_VALUED")
