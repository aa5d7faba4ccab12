"""The headless commands: one module per subcommand, each with ``run(args) -> int``."""
