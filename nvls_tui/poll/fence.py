"""The lock's fence: a command that runs on the node only while the node's lock still names its run.

A run that holds a node's lock (``/var/lib/nvls-tui/lock``) sends every command behind a fence: a few
words of ``sh`` that read the lock's owner file and ``exec`` the command only if that file still names
the run. The check and the command are one remote command, so no take-over can land between them: once
another run has replaced the owner file (``repair --restore --force`` after the owner looked stale), the
old run's next command is not run, and the run that sent it stops (``runbook.lock.LockLost``).

The owner file is JSON written by :meth:`nvls_tui.runbook.lock.LockOwner.to_json` (``json.dumps``'s
``": "`` separator), so the run id appears in it as ``"run_id": "<id>"``. A run id is a generated token of
letters, digits and ``._:-`` (never a quote), and ``case`` compares it literally (a quoted pattern is no
glob). Anything else (the file missing, unreadable, hand-edited into another shape) does not match: the
fence fails closed.

This module sits in the poll layer beside the node's file layout (``poll.probe``) so that the simulator,
which plays the node's ``sh`` for this one script, reads the very same words.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from nvls_tui.poll.node_paths import LOCK_DIR

OWNER_FILE = f"{LOCK_DIR}/owner.json"
# sh's $0 for the fence: what `ps` shows while a fenced command starts.
FENCE_NAME = "nvls-tui-fence"
# The fence's exit status when it refused (EX_TEMPFAIL), with MARK first on its stderr: both must be seen.
FENCE_STATUS = 75
MARK = "nvls-tui fence:"
# $1 the owner file, $2 the run id, then the command. Only `cat` and shell built-ins: the same on every node.
FENCE_SCRIPT = ('case "$(cat -- "$1" 2>/dev/null)" in *"\\"run_id\\": \\"$2\\""*) shift 2; exec "$@";; esac; '
                f'echo "{MARK} $1 does not name run $2: not run" >&2; exit {FENCE_STATUS}')

_TOKEN = re.compile(r"[A-Za-z0-9._:-]{1,128}")


def valid_token(run_id: str) -> bool:
    """True for a run id the fence can compare literally (no quote, no space, not empty)."""
    return bool(_TOKEN.fullmatch(run_id))


def fence_prefix(run_id: str, owner_file: str = OWNER_FILE) -> tuple[str, ...]:
    """The argv that goes before a command to fence it by ``run_id``'s lock.

    Raises:
        ValueError: ``run_id`` is no token the fence can compare (a run id is generated, never typed).
    """
    if not valid_token(run_id):
        raise ValueError(f"a run id the lock's fence cannot compare: {run_id[:40]!r}")
    return ("sh", "-c", FENCE_SCRIPT, FENCE_NAME, owner_file, run_id)


def fenced(run_id: str, argv: Sequence[str]) -> tuple[str, ...]:
    """``argv`` behind the fence of ``run_id``."""
    return (*fence_prefix(run_id), *argv)


def names_run(owner_text: str, run_id: str) -> bool:
    """What the fence's ``case`` decides: the owner file's text names ``run_id``."""
    return valid_token(run_id) and f'"run_id": "{run_id}"' in owner_text


def unfence(argv: Sequence[str]) -> tuple[str, str, tuple[str, ...]] | None:
    """``(owner file, run id, command)`` of a fenced argv (sudo and env prefixes already taken off), else None."""
    if len(argv) >= 6 and list(argv[:4]) == ["sh", "-c", FENCE_SCRIPT, FENCE_NAME]:
        return argv[4], argv[5], tuple(argv[6:])
    return None


def refusal(run_id: str, owner_file: str = OWNER_FILE) -> str:
    """The fence's words on stderr when it did not run the command."""
    return f"{MARK} {owner_file} does not name run {run_id}: not run\n"


def refused(exit_status: int | None, output: str) -> bool:
    """True when a command's result is the fence's refusal (its status and its mark, both)."""
    return exit_status == FENCE_STATUS and MARK in output


__all__ = ["FENCE_NAME", "FENCE_SCRIPT", "FENCE_STATUS", "MARK", "OWNER_FILE", "fence_prefix", "fenced",
           "names_run", "refusal", "refused", "unfence", "valid_token"]
