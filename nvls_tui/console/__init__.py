"""The console: the Textual App and what it alone uses (commands, messages, bindings, notifications, yank,
export, the `S` shell's argv, the signals it answers). Screens and widgets sit beside it; nothing outside
the console wing imports this package (the layers and forbidden contracts in pyproject.toml hold it)."""
