"""nvls-tui's fabric health and repair outcomes as Prometheus metrics (issue 39, docs/metrics.md).

A pure core: :mod:`names` holds every metric's name, type, labels and meaning as data, :mod:`labels` the
rules that keep label values bounded, :mod:`repairs` reads repair outcomes from the audit logs,
:mod:`fm_starts` counts Fabric Manager's starts by their start times, and :mod:`build` turns a round's
node states and diagnoses into a ``prometheus_client`` registry of its own (no process metrics). Writing
the textfile and serving ``/metrics`` are the entry point's (``nvls_tui.headless.metrics_out``).
"""
