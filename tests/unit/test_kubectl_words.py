"""A kubectl call's words, read back in one place (X3 item 3; issue 36: kube/words.py is gone).

The plan's summary and the confirmation read the typed changes (runbook/kube_summary.py) and parse no kubectl
line; the incident report, whose audit log holds argvs, reads them back into those changes with
``changes.read_cluster_change``, beside their rendering; where kubectl's own words begin is
``kube/client.global_flags_end``, the inverse of :meth:`~nvls_tui.kube.client.Kubectl.argv`.
"""

from __future__ import annotations

import importlib.util

from nvls_tui.kube.client import Kubectl, global_flags_end, shown
from nvls_tui.report import cluster
from nvls_tui.runbook import changes as ch
from nvls_tui.runbook.changes import read_cluster_change
from nvls_tui.views import plan_summary

KUBECTL = tuple(Kubectl(kubeconfig="/etc/k 8s/config", context="prod", timeout=15).argv())
KEY = "nvidia.com/gpu.deploy.dcgm-exporter"


def test_the_words_after_the_global_flags_as_kubectl_argv_builds_them():
    argv = [*KUBECTL, "cordon", "gpu06"]
    assert argv[global_flags_end(argv):] == ["cordon", "gpu06"]
    argv = ["/usr/local/bin/kubectl", "--kubeconfig=/x", "get", "nodes", "-o", "json"]
    assert argv[global_flags_end(argv):] == ["get", "nodes", "-o", "json"]
    # After the verb every word stays, flags included.
    argv = ["kubectl", "delete", "pod", "-n", "ns", "p", "--wait=false"]
    assert argv[global_flags_end(argv):] == argv[1:]
    assert shown([*KUBECTL, "label", "node", "gpu06", f"{KEY}-"]) == f"kubectl label node gpu06 {KEY}-"


def test_every_cluster_change_is_read_back_from_the_argv_it_rendered():
    changes = [ch.Cordon("gpu06", KUBECTL), ch.Uncordon("gpu06", KUBECTL), ch.Annotate("gpu06", "reset", KUBECTL),
               ch.Annotate("gpu06", None, KUBECTL), ch.EvictPod("ml", "vllm-0", KUBECTL, body_file="/tmp/e/ml.json"),
               ch.DeleteDriverPod("gpu-operator", "nvidia-driver-x", KUBECTL),
               ch.SetOperandLabel("gpu06", KEY, ch.PAUSED, None, KUBECTL, resource_version="812")]
    for change in changes:
        read = read_cluster_change(change.argv())
        assert read is not None and read.argvs() == change.argvs(), change
    back = read_cluster_change(ch.SetOperandLabel("gpu06", KEY, None, ch.PAUSED, KUBECTL, resource_version="9").argv())
    assert isinstance(back, ch.SetOperandLabel) and back.key == KEY and back.value is None and not back.pauses
    blind = read_cluster_change(ch.SetOperandLabel("gpu06", KEY, "true", ch.PAUSED, KUBECTL, conditioned=False).argv())
    assert isinstance(blind, ch.SetOperandLabel) and not blind.conditioned and blind.value == "true"


def test_reads_waits_and_other_commands_are_no_cluster_change():
    for argv in ([*KUBECTL, "get", "nodes", "-o", "json"], [*KUBECTL, "wait", "--for=delete", "pod/p", "-n", "ns"],
                 ["ssh", "kubectl", "cordon", "x"], [], [*KUBECTL, "annotate", "node", "gpu06", "other=1"],
                 [*KUBECTL, "create", "--raw", "/api/v1/namespaces/ns/pods/p/log"]):
        assert read_cluster_change(argv) is None, argv


def test_no_module_keeps_a_second_kubectl_parser():
    assert importlib.util.find_spec("nvls_tui.kube.words") is None
    assert not {"kubectl_words", "KUBECTL_GLOBALS", "kubectl_line_args", "kubectl_args"} & set(vars(plan_summary))
    assert not {"kubectl_args", "_VALUED", "_calls"} & set(vars(cluster))
