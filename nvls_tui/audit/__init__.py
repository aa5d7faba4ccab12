"""The audit log: every node-changing action, one JSON line each, written before it runs."""
