"""A GPU's fabric health in check --json is built from FabricHealth's fields directly: the same dict
dataclasses.asdict gave (docs/performance.md, 2026-12-07: asdict deep-copied every word of every GPU)."""

from __future__ import annotations

import dataclasses

from hypothesis import given
from hypothesis import strategies as st

from nvls_tui.model import GpuState
from nvls_tui.model.jsonout import gpu_json
from nvls_tui.model.node import FabricHealth, FabricInfo

_WORDS = st.one_of(st.none(), st.text(max_size=20))


@given(st.builds(FabricHealth, **{f.name: _WORDS for f in dataclasses.fields(FabricHealth)}))
def test_the_health_is_what_asdict_gave(health):
    gpu = GpuState(index=0, bus_id="00000000:18:00.0", name="NVIDIA H100 80GB HBM3", uuid="GPU-1",
                   fabric=FabricInfo(state="Completed", status="Success", health=health))
    shown = gpu_json(gpu)["fabric"]["health"]
    assert shown == dataclasses.asdict(health)
    assert list(shown) == list(dataclasses.asdict(health))  # the same keys in the same order


def test_no_health_is_an_empty_object():
    gpu = GpuState(index=0, bus_id="b", name="n", uuid="u", fabric=FabricInfo())
    assert gpu_json(gpu)["fabric"]["health"] == {}
