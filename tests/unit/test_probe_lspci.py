"""The poll's lspci: NVIDIA's functions by number only (issue 37 item 5: no name lookups on the node)."""

from __future__ import annotations

import pytest

from nvls_tui.sim.fleet import load_fleet


@pytest.mark.parametrize("scenario", ["seed-incident", "gpu-missing", "gpu-fell-off"])
def test_lspci_is_asked_for_numbers_only_and_the_node_reads_the_same_as_with_names(scenario):
    """-n, not -nn: the poll reads NVSwitches by id and GPUs by class, never by name, and -n looks up no names
    (pci.ids or udev's hwdb: a cost on every poll of a node with NVIDIA devices)."""
    import asyncio

    from nvls_tui.backends.simulated import SimulatedBackend
    from nvls_tui.poll.assemble import assemble_node_state
    from nvls_tui.poll.probe import section_argv

    assert "-n" in section_argv("nvswitches") and "-nn" not in section_argv("nvswitches")
    fleet = load_fleet(f"sim:{scenario}", speed=0)
    for name in fleet.names:
        sections = asyncio.run(SimulatedBackend(fleet, name).read_sections())
        named = fleet.sh(name, *[("-nn" if a == "-n" else a) for a in section_argv("nvswitches")])
        with_names = {**sections, "nvswitches": type(sections["nvswitches"])(section_argv("nvswitches"), 0,
                                                                             named.stdout)}
        a, b = (assemble_node_state(name, s, simulated=True) for s in (sections, with_names))
        assert (a.nvswitches, a.pci_gpus, a.missing) == (b.nvswitches, b.pci_gpus, b.missing)
        assert a.pci_gpus and (a.nvswitches or not fleet.node(name).switches)  # GPUs by class, switches by id
