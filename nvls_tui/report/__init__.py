"""The Markdown incident report, read back from an audit log."""
