"""Ways of reaching a node, behind one interface (base.Backend)."""
