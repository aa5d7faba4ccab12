"""nvidia-persistenced's journal (or syslog): its own lines and systemd's about its unit. Pure.

A healthy daemon says it started, registers each GPU ("device 0000:3d:00.0 - registered") and, when stopped,
"Received signal 15" and "Shutdown (PID)": nothing wrong. A daemon that cannot start says why in its own words
("NUMA: Failed to ...", "nvidia-persistenced failed to initialize") and systemd says its unit failed.
"""

from __future__ import annotations

import re

from nvls_tui.parsers.base import Parsed
from nvls_tui.parsers.unread import says_wrong

# "Mon DD HH:MM:SS host nvidia-persistenced[PID]: message" (also without the PID, as syslog wrote it).
_OWN = re.compile(r"(?:^|\s)nvidia-persistenced(?:\[\d+\])?: (?P<msg>.*)$")
_SYSTEMD = re.compile(r"\ssystemd\[\d+\]: (?P<msg>.*(?:nvidia-persistenced|NVIDIA Persistence Daemon).*)$")
#: Detection (nvls_tui.parsers.detect_services): a line of the daemon's own, or systemd's about its unit.
DETECT = re.compile(r"(?:^|\s)nvidia-persistenced(?:\[\d+\])?: |\ssystemd\[\d+\]: [^\n]*(?:nvidia-persistenced\.service|"
                    r"NVIDIA Persistence Daemon)", re.M)
_REGISTERED = re.compile(r"^device (?P<bus>\S+) - registered")


def persistenced_messages(text: str) -> list[tuple[str, str]]:
    """``(line, message)`` for each line of the daemon's or of systemd's about its unit."""
    out = []
    for line in text.splitlines():
        if m := _OWN.search(line) or _SYSTEMD.search(line):
            out.append((line.strip(), m["msg"].strip()))
    return out


def parse_persistenced_log(text: str) -> Parsed[dict]:
    """``registered[]`` (the GPUs it registered), ``problems[]`` (its or systemd's lines that say something went
    wrong, as printed)."""
    messages = persistenced_messages(text)
    registered = list(dict.fromkeys(m["bus"] for _, msg in messages if (m := _REGISTERED.match(msg))))
    problems = [line for line, msg in messages if says_wrong(msg)]
    return Parsed({"registered": registered, "problems": problems},
                  () if messages else ("no nvidia-persistenced lines were found",))


__all__ = ["DETECT", "parse_persistenced_log", "persistenced_messages"]
