"""View models of the console: plain state a screen draws from, folded from runbook events (no Textual)."""
