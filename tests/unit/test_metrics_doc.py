"""docs/metrics.md describes every metric (name, type, labels) and contract.md names each as stable."""

from __future__ import annotations

from pathlib import Path

from nvls_tui.metrics.names import METRICS

DOCS = Path(__file__).parents[2] / "docs"


def test_every_metric_has_its_row_in_the_reference():
    rows = {line.split("|")[1].strip().strip("`"): line for line in (DOCS / "metrics.md").read_text().splitlines()
            if line.startswith("| `nvls_")}
    assert set(rows) == {m.exposed for m in METRICS}
    for m in METRICS:
        cells = [c.strip() for c in rows[m.exposed].split("|")[1:-1]]
        assert cells[1] == m.kind
        assert cells[2] == (", ".join(f"`{label}`" for label in m.labels) or "-")


def test_the_contract_names_every_metric():
    contract = (DOCS / "contract.md").read_text()
    assert "## Metrics" in contract
    for m in METRICS:
        assert f"`{m.exposed}`" in contract, m.exposed
