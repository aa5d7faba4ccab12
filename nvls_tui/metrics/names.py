"""Every metric nvls-tui exports: name, type, labels and meaning, as data (docs/metrics.md lists the same).

The names are a stable interface (docs/contract.md): one ``nvls_`` prefix, base units (seconds, bytes per
second), ``_total`` for counters (prometheus_client adds it to a counter's family name), ``_info`` for
versions. A per-GPU series carries dcgm-exporter's labels (``gpu``, ``UUID``, ``pci_bus_id``,
``modelName``, with ``hostname``) so that an operator joins it to DCGM's series on them.
"""

from __future__ import annotations

from dataclasses import dataclass

GAUGE = "gauge"
COUNTER = "counter"
INFO = "info"

HOST = ("hostname",)
GPU = ("hostname", "gpu", "UUID", "pci_bus_id", "modelName")


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """One metric family: its name (without ``_total`` for a counter, ``_info`` for info), type and labels."""

    name: str
    kind: str
    help: str
    labels: tuple[str, ...]

    @property
    def exposed(self) -> str:
        """The name of its samples in the exposition (``_total`` / ``_info`` added by the type)."""
        return self.name + {COUNTER: "_total", INFO: "_info"}.get(self.kind, "")


def _spec(name: str, kind: str, labels: tuple[str, ...], text: str) -> MetricSpec:
    return MetricSpec(name, kind, text, labels)


BUILD_INFO = _spec("nvls_build", INFO, ("version",), "The nvls-tui that wrote these metrics.")
ROUND_DURATION = _spec("nvls_round_duration_seconds", GAUGE, (),
                       "Seconds the last round took: every node polled and diagnosed.")
ROUND_END = _spec("nvls_round_end_timestamp_seconds", GAUGE, (),
                  "When the last round ended (seconds since the epoch, the bastion's clock).")
NODES = _spec("nvls_nodes", GAUGE, (), "Nodes in the last round, read or not.")

NODE_INFO = _spec("nvls_node", INFO, ("hostname", "driver", "fm_version", "platform", "simulated"),
                  "Versions of a node that answered: driver, Fabric Manager, board family; simulated marks "
                  "sim: and lab nodes.")
VERDICT = _spec("nvls_node_verdict", GAUGE, ("hostname", "verdict"),
                "1 for the node's verdict (healthy, degraded, broken, unreachable), 0 for each other.")
POLL_SUCCESS = _spec("nvls_poll_success", GAUGE, HOST,
                     "1 when the last poll read the node, 0 when it could not (the node is unknown, never healthy).")
FINDINGS = _spec("nvls_findings", GAUGE, ("hostname", "code", "severity"),
                 "Findings of the node's diagnosis by code (contract.md) and severity; a code absent is none.")
MISSING = _spec("nvls_evidence_missing", GAUGE, ("hostname", "section"),
                "1 for each poll section of a read node that could not be read (unknown, never fine).")
# State and status on one series: half the per-GPU series (the bulk of a node's), and one query sees both.
FABRIC_STATE = _spec("nvls_gpu_fabric_state", GAUGE, (*GPU, "state", "status"),
                     "1 for the GPU's fabric registration: state (completed, in_progress, not_started, other) and "
                     "status (success, insufficient_resources, ..., other).")
NVSWITCH = _spec("nvls_nvswitch_present", GAUGE, ("hostname", "nvswitch"),
                 "1 for each NVSwitch device the node shows.")
FM_ACTIVE = _spec("nvls_fm_active", GAUGE, HOST,
                  "1 when the host Fabric Manager unit is active, 0 when not; only on nodes that need a host FM.")
FM_STARTS = _spec("nvls_fm_starts_last_hour", GAUGE, HOST,
                  "Fabric Manager starts in the last hour, counted by the start times seen (not NRestarts, which "
                  "reset-failed clears).")
FM_START_TIME = _spec("nvls_fm_start_timestamp_seconds", GAUGE, HOST,
                      "When the active Fabric Manager started (the node's clock, seconds since the epoch).")
OUT_OF_SYNC = _spec("nvls_fabric_out_of_sync_events", COUNTER, HOST,
                    "The kernel's fabric out-of-sync lines (NV_ERR_FABRIC_STATE_OUT_OF_SYNC) in this boot.")
NVLINK_XID = _spec("nvls_nvlink_xid_events", COUNTER, ("hostname", "xid"),
                   "NVLink Xid lines in this boot, by Xid (those NVIDIA's catalogue names NVLINK).")
HOLDERS = _spec("nvls_holders", GAUGE, ("hostname", "kind"),
                "Processes holding /dev/nvidia* files, by kind (dcgm-exporter, cuda-app, ...).")
SMOKE_BUSBW = _spec("nvls_smoke_busbw_bytes_per_second", GAUGE, HOST,
                    "Average bus bandwidth of the node's last NVLS smoke test (bytes per second).")
SMOKE_PASSED = _spec("nvls_smoke_passed", GAUGE, HOST, "1 when the node's last NVLS smoke test passed, else 0.")
SMOKE_TIME = _spec("nvls_smoke_timestamp_seconds", GAUGE, HOST,
                   "When the node's last NVLS smoke test ended (the node's clock, seconds since the epoch).")
REPAIRS = _spec("nvls_repairs", COUNTER, ("hostname", "result"),
                "Repair runs of the node by result (repaired, failed, aborted, refused, skipped, restored, "
                "other), from the audit logs; dry runs are not counted.")
REPAIR_LAST = _spec("nvls_repair_last_result", GAUGE, ("hostname", "result"),
                    "1 for the result of the node's last repair run in the audit logs.")
REPAIR_LAST_TIME = _spec("nvls_repair_last_timestamp_seconds", GAUGE, HOST,
                         "When the node's last repair run ended (seconds since the epoch).")
REPAIR_LEFT_OUT = _spec("nvls_repair_left_out_of_service", GAUGE, HOST,
                        "1 when the node's last repair run left it cordoned or drained, else 0.")

# The autopilot's (``autopilot --metrics-textfile`` / ``--metrics-listen``): its own families only, so that its
# textfile and check's sit side by side in node_exporter's folder without a series in both.
# name, kind, labels, meaning: one row each.
AUTOPILOT_METRICS: tuple[MetricSpec, ...] = tuple(_spec(*row) for row in (
    ("nvls_autopilot_decisions", COUNTER, ("action", "reason"),
     "The autopilot's decision records since it started, by action (skip, repair, escalate, repaired, ...) and "
     "reason (the limit that bound, ...), each on its audit log first."),
    ("nvls_autopilot_breaker_tripped", GAUGE, (),
     "1 while the autopilot's circuit breaker is tripped (only an operator closes it), else 0."),
    ("nvls_autopilot_breaker_repairs_in_window", GAUGE, (),
     "Repairs the autopilot started in the breaker's sliding window (since it was last closed)."),
    ("nvls_autopilot_breaker_bound", GAUGE, (),
     "Repairs the breaker allows in its window: the lower of --breaker-nodes and --breaker-percent of the nodes "
     "watched, never below 1."),
    ("nvls_autopilot_budget_left", GAUGE, HOST,
     "Repairs left in the node's budget (--budget in --budget-days); 0: the next need escalates it."),
    ("nvls_autopilot_escalated", GAUGE, HOST,
     "1 for each node the autopilot escalated to a person (its budget spent): it stays out of service."),
    ("nvls_autopilot_paused", GAUGE, (), "1 while the autopilot's pause file is there (no new repair), else 0."),
    ("nvls_autopilot_round_end_timestamp_seconds", GAUGE, (),
     "When the autopilot's last round ended (seconds since the epoch, the bastion's clock)."),
))
(AP_DECISIONS, AP_BREAKER_TRIPPED, AP_BREAKER_REPAIRS, AP_BREAKER_BOUND, AP_BUDGET_LEFT, AP_ESCALATED, AP_PAUSED,
 AP_ROUND_END) = AUTOPILOT_METRICS

#: check's (and the console's) families; every metric nvls-tui exports is in :data:`METRICS`.
FLEET_METRICS: tuple[MetricSpec, ...] = (
    BUILD_INFO, ROUND_DURATION, ROUND_END, NODES, NODE_INFO, VERDICT, POLL_SUCCESS, FINDINGS, MISSING,
    FABRIC_STATE, NVSWITCH, FM_ACTIVE, FM_STARTS, FM_START_TIME, OUT_OF_SYNC, NVLINK_XID, HOLDERS,
    SMOKE_BUSBW, SMOKE_PASSED, SMOKE_TIME, REPAIRS, REPAIR_LAST, REPAIR_LAST_TIME, REPAIR_LEFT_OUT,
)
METRICS: tuple[MetricSpec, ...] = FLEET_METRICS + AUTOPILOT_METRICS

__all__ = ["AUTOPILOT_METRICS", "COUNTER", "FLEET_METRICS", "GAUGE", "INFO", "METRICS", "MetricSpec"]
