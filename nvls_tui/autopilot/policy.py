"""What the autopilot may repair unattended: by finding code and by NVIDIA's resolution bucket.

A node is *repairable* when every error finding on it is one the policy marks safe and, where the finding
carries NVIDIA's bucket (an Xid, a recovery action, a driver status), that bucket is one whose move is the
repair's reset (:data:`nvls_tui.catalogues.BUCKETS`, ``reset_fixes``). Anything else is for a person: a
hardware ticket (``CONTACT_SUPPORT``, ``CHECK_MECHANICALS``, a lost GPU), a package to fix (a version
mismatch), a reboot. A node that could not be read whole is *unknown*, never repairable and never healthy.
A policy file may narrow or widen the safe sets, but never to the codes and buckets of :data:`NEVER_CODES`
and :data:`NEVER_BUCKETS`.
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum

from nvls_tui.catalogues import BUCKETS
from nvls_tui.model import Severity
from nvls_tui.model.node import Diagnosis, Finding

#: Finding codes a repair is the move for: FM not running, the fabric not formed or out of sync, FM missing
#: from the driver's view, a failed NVLS smoke test; and the findings read through NVIDIA's catalogues,
#: which are safe only where their bucket is (see :data:`DEFAULT_SAFE_BUCKETS`).
DEFAULT_SAFE_CODES = frozenset({
    "FM_NOT_RUNNING", "FABRIC_NOT_COMPLETED", "FABRIC_STATUS_ERROR", "FABRIC_OUT_OF_SYNC",
    "FABRIC_MANAGER_NOT_PRESENT", "NVLS_SMOKE_FAILED", "XID", "GPU_RECOVERY_ACTION", "DRIVER_ERROR",
})
#: NVIDIA's buckets whose move is the repair's GPU reset (``reset_fixes`` True in the catalogue's reading).
DEFAULT_SAFE_BUCKETS = frozenset(name for name, bucket in BUCKETS.items() if bucket.reset_fixes is True)
#: Never unattended, whatever a policy file says: a lost GPU and a version mismatch are not fixed by a reset,
#: an interrupted repair needs its restore first, and a diagnosis that failed or evidence that is missing is
#: unknown.
NEVER_CODES = frozenset({"GPU_LOST", "FM_VERSION_MISMATCH", "INTERRUPTED_REPAIR", "DIAGNOSIS_FAILED",
                         "EVIDENCE_MISSING", "UNREACHABLE", "FABRIC_HOST_SIDE"})
#: NVIDIA's buckets that mean a person and the hardware: never unattended.
NEVER_BUCKETS = frozenset({"CONTACT_SUPPORT", "CHECK_MECHANICALS", "RESTART_BM", "RESTART_VM", "UPDATE_SWFW",
                           "RECOVER_IMEX_DOMAIN"})
#: Codes that say the node could not be judged: the node is unknown.
UNKNOWN_CODES = frozenset({"UNREACHABLE", "EVIDENCE_MISSING", "DIAGNOSIS_FAILED"})


class PolicyError(ValueError):
    """A policy file that cannot be used; ``str()`` is one sentence naming it."""


class Judgement(Enum):
    """What the policy makes of one node in one round."""

    HEALTHY = "healthy"
    REPAIRABLE = "repairable"
    UNSAFE = "unsafe"  # wrong, and not for the autopilot: a person decides
    UNKNOWN = "unknown"  # not read whole: neither recovery nor failure


@dataclass(frozen=True, slots=True)
class Judged:
    """One node's judgement and why (the codes that made it, ``CODE`` or ``CODE/BUCKET``), and Fabric Manager's
    starts in the flapping limit's window (``poll/fm_starts.fm_starts_in``; None: they could not be read, so
    whether FM flaps is unknown: such a node is never repaired unattended)."""

    host: str
    judgement: Judgement
    why: tuple[str, ...] = ()
    fm_starts: int | None = None


@dataclass(frozen=True, slots=True)
class Policy:
    """The safe finding codes and buckets (defaults: :data:`DEFAULT_SAFE_CODES`, :data:`DEFAULT_SAFE_BUCKETS`)."""

    safe_codes: frozenset[str] = DEFAULT_SAFE_CODES
    safe_buckets: frozenset[str] = DEFAULT_SAFE_BUCKETS
    source: str = field(default="built-in", compare=False)

    def __post_init__(self) -> None:
        if bad := sorted(self.safe_codes & NEVER_CODES):
            raise PolicyError(f"policy {self.source}: {', '.join(bad)} can never be repaired unattended")
        if bad := sorted(self.safe_buckets & NEVER_BUCKETS):
            raise PolicyError(f"policy {self.source}: NVIDIA's bucket {', '.join(bad)} can never be repaired "
                              "unattended")
        if bad := sorted(self.safe_buckets - set(BUCKETS)):
            raise PolicyError(f"policy {self.source}: {', '.join(bad)} is not a bucket of NVIDIA's catalogues")

    def judge(self, host: str, reachable: bool, diagnosis: Diagnosis, fm_starts: int | None = None) -> Judged:
        """The judgement of one node's round (its reachability and diagnosis; FM's starts in the window, which
        the limits weigh, carried along)."""
        judged = self._judge(host, reachable, diagnosis)
        return judged if fm_starts is None else dataclasses.replace(judged, fm_starts=fm_starts)

    def _judge(self, host: str, reachable: bool, diagnosis: Diagnosis) -> Judged:
        errors = [f for f in diagnosis.findings if f.severity is Severity.ERROR]
        unknown = [f.code for f in diagnosis.findings if f.code in UNKNOWN_CODES and f.severity is Severity.ERROR]
        if not reachable or unknown:
            return Judged(host, Judgement.UNKNOWN, tuple(unknown) or ("UNREACHABLE",))
        # A bucket-carrying finding that is not an error (an Xid NVIDIA files under RESTART_APP) still counts
        # when its bucket is one of the never buckets: the catalogue's word outranks the severity.
        never = [_name(f) for f in diagnosis.findings
                 if f.code in NEVER_CODES - UNKNOWN_CODES or f.action in NEVER_BUCKETS]
        if never:
            return Judged(host, Judgement.UNSAFE, tuple(never))
        if not errors:
            return Judged(host, Judgement.HEALTHY)
        unsafe = [_name(f) for f in errors if not self._safe(f)]
        if unsafe:
            return Judged(host, Judgement.UNSAFE, tuple(unsafe))
        return Judged(host, Judgement.REPAIRABLE, tuple(_name(f) for f in errors))

    def _safe(self, finding: Finding) -> bool:
        if finding.code not in self.safe_codes:
            return False
        if finding.action is not None:
            return finding.action in self.safe_buckets
        # A catalogue finding with no bucket (an Xid NVIDIA lists without an action) is unknown: not safe.
        return finding.code not in {"XID", "GPU_RECOVERY_ACTION", "DRIVER_ERROR"}


def _name(finding: Finding) -> str:
    return f"{finding.code}/{finding.action}" if finding.action else finding.code


def _names(value: object, key: str, path: str) -> frozenset[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise PolicyError(f"policy {path}: {key} must be a list of names")
    return frozenset(value)


def load_policy(path: str) -> Policy:
    """The policy of a TOML file: ``safe_codes`` and ``safe_buckets`` (lists that replace the defaults), or
    ``add_codes``/``remove_codes`` and ``add_buckets``/``remove_buckets`` (changes to them).

    Raises:
        PolicyError: unreadable, not TOML, an unknown key, or a code or bucket that is never safe.
    """
    try:
        with open(path, "rb") as fh:
            doc = tomllib.load(fh)
    except OSError as exc:
        raise PolicyError(f"policy {path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise PolicyError(f"policy {path}: not TOML ({exc})") from None
    known = {"safe_codes", "safe_buckets", "add_codes", "remove_codes", "add_buckets", "remove_buckets"}
    if bad := sorted(set(doc) - known):
        raise PolicyError(f"policy {path}: unknown key {bad[0]!r} (known: {', '.join(sorted(known))})")
    codes = _names(doc["safe_codes"], "safe_codes", path) if "safe_codes" in doc else DEFAULT_SAFE_CODES
    buckets = _names(doc["safe_buckets"], "safe_buckets", path) if "safe_buckets" in doc else DEFAULT_SAFE_BUCKETS
    codes = (codes | _names(doc.get("add_codes", []), "add_codes", path)) - _names(
        doc.get("remove_codes", []), "remove_codes", path)
    buckets = (buckets | _names(doc.get("add_buckets", []), "add_buckets", path)) - _names(
        doc.get("remove_buckets", []), "remove_buckets", path)
    return Policy(codes, buckets, source=path)


def judge_all(policy: Policy, rounds: Iterable[tuple[str, bool, Diagnosis]]) -> list[Judged]:
    """The judgement of every node of a round (host, reachable, diagnosis)."""
    return [policy.judge(host, reachable, diagnosis) for host, reachable, diagnosis in rounds]


__all__ = ["DEFAULT_SAFE_BUCKETS", "DEFAULT_SAFE_CODES", "NEVER_BUCKETS", "NEVER_CODES", "Judged", "Judgement",
           "Policy", "PolicyError", "judge_all", "load_policy"]
