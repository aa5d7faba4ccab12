"""Recognising the logs of NVIDIA's services around the fabric (issue 35, item 4), by their own lines.

DCGM's own logs, ``dcgmi health``, the GPU Operator's containers, NVIDIA's Kubernetes GPU plugins,
nvidia-persistenced, and the wrappers that start Fabric Manager (Talos's ``nvidia-fabricmanager-wrapper``, FM's
config check): each kind's pattern lives with its parser; :mod:`nvls_tui.parsers.detect` tries these after its own
rules, so a text that is one of its kinds (a kernel log, an FM journal) stays that kind.
"""

from __future__ import annotations

import re

from nvls_tui.parsers import dcgm_log, dcgmi_health, gpu_operator_log, gpu_plugin_log, persistenced_log

# Fabric Manager's wrappers: Talos's start wrapper (and the NVLSM it runs), FM's refusal of a config item.
_FM_WRAPPER = re.compile(r"(?:^|\s)nvidia-fabricmanager-wrapper: |\bfabric manager config file item: \S+ has an invalid "
                         r"value", re.M | re.I)

#: (kind, pattern) tried in order over a whole text, after detect's own rules.
SERVICE_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("dcgmi-health", dcgmi_health.DETECT),
    ("fabricmanager-log", _FM_WRAPPER),
    ("gpu-operator-log", gpu_operator_log.DETECT),
    ("k8s-device-plugin-log", gpu_plugin_log.DETECT),
    ("persistenced-log", persistenced_log.DETECT),
    ("dcgm-log", dcgm_log.DETECT),
)

#: (kind, pattern) for one line of a paste read line by line: the services whose lines come in a journal beside
#: the driver's and Fabric Manager's.
SERVICE_LINE_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("persistenced-log", persistenced_log.DETECT),
)

__all__ = ["SERVICE_LINE_RULES", "SERVICE_RULES"]
