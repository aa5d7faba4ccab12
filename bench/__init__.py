"""Benchmarks of nvls-tui against the tools operators use (see bench/README.md)."""
