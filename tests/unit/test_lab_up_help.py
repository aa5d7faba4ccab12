"""``lab up --help`` names every scenario the lab acts (k8s-incident was missing)."""

from __future__ import annotations

import re

from nvls_tui.cli import main
from nvls_tui.lab.acts import SCENARIOS


def test_lab_up_help_names_every_scenario(capsys):
    assert main(["lab", "up", "--help"]) == 0
    # argparse wraps the help, also after a hyphen ("fm-in-" then "container"): words, not lines.
    text = re.sub(r"-\s+", "-", " ".join(capsys.readouterr().out.split()))
    missing = [name for name in SCENARIOS if not re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text)]
    assert missing == []
    assert "k8s-incident (" in text
