"""Reading a node: the read-only probe (one remote script), its sections, the evidence of each, the
assembly into a NodeState, and the poll loop. Nothing here knows a screen."""
