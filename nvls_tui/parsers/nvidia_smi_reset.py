"""``nvidia-smi -r`` (GPU reset) and ``nvidia-smi -pm 0|1`` (persistence mode) outputs.

Reset output seen in the field:

- success, one line per GPU: ``GPU 00000000:0F:00.0 was successfully reset.``; on NVSwitch systems
  then ``Note: The operation has successfully reset all GPUs and NVSwitches. ...`` and ``All done.``
- refusal: ``The following GPUs could not be reset:`` followed by indented
  ``GPU 00000000:1A:00.0: In use by another client`` lines, then a paragraph that nvidia-smi (or
  the terminal) may wrap: ``N devices are currently being used by one or more other processes
  (e.g. Fabric Manager, ...`` (``1 device is ...``; some drivers write ``e.g.,``). Older drivers say
  ``GPU 00000000:C1:00.0 is currently in use by another process.`` instead of the list.
- lines that are not nvidia-smi's (shell prompts, ``exit=255`` added by a script, the incident's
  ``GPU reset exit code: 0``) are skipped without a warning.

The same words reach operators in other wrappings, read here too: journal lines of a unit that ran the
reset (``gpu05 nvidia-smi[4242]: ...``), mig-parted's log line with the output's newlines escaped
(``level=error msg="\\nThe following GPUs could not be reset:\\n  GPU ...``), a transcript of several runs
(the last run decides; an earlier refusal is said), and text shortened by hand (a GPU list cut to a few
lines, ``... 4 devices are currently being used ...``): the summary line's count then stands for the list.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from nvls_tui.parsers.base import Parsed
from nvls_tui.parsers.nvidia_smi_q import BUS_ID

_RESET_OK = re.compile(rf"^GPU\s+({BUS_ID})\s+was successfully reset\.?", re.IGNORECASE)
_FAILED_ITEM = re.compile(rf"^GPU\s+({BUS_ID})\s*:\s*(.+?)\s*$")
_IN_USE_OLD = re.compile(rf"^(?:GPU\s+)?({BUS_ID})\s+is currently (?:in use|being used) by (.+?)\.?\s*$", re.IGNORECASE)
_CANNOT = re.compile(rf"^(?:Unable to reset|Resetting)\s+GPU\s+({BUS_ID})\s*[:,]?\s*(.*?)\.?\s*$", re.IGNORECASE)
_IN_USE_COUNT = re.compile(r"^(\d{1,6})\s+devices?\s+(?:is|are)\s+currently being used", re.IGNORECASE)
_NOTE = re.compile(r"^Note:\s*The operation has successfully reset all GPUs and NVSwitches", re.IGNORECASE)
_FAILED_HEADER = re.compile(r"^The following GPUs could not be reset:?", re.IGNORECASE)
_ALL_DONE = re.compile(r"^All done\.?$", re.IGNORECASE)
# What other tools put in front of nvidia-smi's lines: a journal's time stamp, host and identifier
# (short, short-iso, short-precise, short-monotonic), and an operator's ellipsis where they cut the text.
_JOURNAL_PREFIX = re.compile(
    r"^(?:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)?|\d{4}-\d\d-\d\dT[\d:.,]+(?:Z|[+-]\d\d:?\d\d)?"
    r"|\[\s*\d+\.\d+\])\s+\S+\s+[^\s:\[]+(?:\[\d+\])?:(?: |$)"
    r"|^[\w.@-]{1,64}\[\d{1,10}\]:(?: |$)")  # the identifier alone, as a paste that cut the stamp and host has it
_ELLIPSIS = re.compile(r"^\s*(?:\.\.\.|…|\[\.\.\.\]|\[…\])\s*")

# A shell prompt that runs nvidia-smi, as in pasted transcripts (``$ nvidia-smi -r -i <uuid>``).
_PROMPT = re.compile(r"^\S*[$#]\s+(?:sudo\s+(?:-\S+\s+)*)?\S*nvidia-smi\b(.*)$")
_RESET_FLAGS = re.compile(r"(?:^|\s)(?:-r|--gpu-reset)(?:\s|$)")
_PM_FLAGS = re.compile(r"(?:^|\s)(?:-pm|--persistence-mode)(?:[\s=]|$)")

_PM_SET = re.compile(rf"(Enabled|Disabled)\s+(?:Legacy\s+)?persistence mode for GPU\s+({BUS_ID})", re.IGNORECASE)
_PM_ALREADY = re.compile(rf"Persistence mode is already\s+(Enabled|Disabled)\s+for GPU\s+({BUS_ID})", re.IGNORECASE)
_PM_PROBLEM = re.compile(rf"(?:Unable to set|Setting|Failed to set)\s.*persistence mode.*?({BUS_ID})(.*)$",
                         re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class ResetResult:
    """What ``nvidia-smi -r`` reported.

    Attributes:
        reset: bus ids reported as successfully reset, in output order.
        failed: ``(bus_id, reason)`` for each GPU that could not be reset (``In use by another client``).
        nvswitches_reset: True when nvidia-smi said it reset all GPUs **and NVSwitches**.
        in_use_devices: N of "N devices are currently being used ..." (None when not printed).
        all_done: True when the output ends its work with ``All done.``
        message: nvidia-smi's explanation joined into one line (the refusal paragraph, else the Note).
        exit_status: the command's exit status when the caller knew it.
    """

    reset: tuple[str, ...] = ()
    failed: tuple[tuple[str, str], ...] = ()
    nvswitches_reset: bool = False
    in_use_devices: int | None = None
    all_done: bool = False
    message: str | None = None
    exit_status: int | None = None

    @property
    def succeeded(self) -> bool:
        """True when something was reset, nothing failed or was in use, and the exit status (if known) is 0."""
        return (
            bool(self.reset or self.nvswitches_reset)
            and not self.failed
            and self.in_use_devices is None
            and self.exit_status in (None, 0)
        )


def _own_lines(text: str, flags: re.Pattern[str]) -> list[str]:
    """The lines nvidia-smi printed for the command of interest.

    A pasted transcript with shell prompts (``$ nvidia-smi -pm 0 ...`` then ``$ nvidia-smi -r ...``)
    is cut at its prompts and only the output of the prompts whose arguments match ``flags`` is kept,
    so ``-pm 0``'s ``All done.`` is not taken for the reset's. Text without prompts is kept whole.
    """
    lines = text.splitlines()
    prompts = [(i, m) for i, line in enumerate(lines) if (m := _PROMPT.match(line.strip()))]
    if not prompts:
        return lines
    kept: list[str] = []
    for n, (at, m) in enumerate(prompts):
        end = prompts[n + 1][0] if n + 1 < len(prompts) else len(lines)
        if flags.search(m.group(1)):
            kept.extend(lines[at + 1:end])
    return kept


def _unwrapped(text: str) -> str:
    """nvidia-smi's own lines out of the wrappings they arrive in (module docstring): escaped newlines
    turned back into lines where no line of the text is nvidia-smi's, journal prefixes and ellipses dropped."""
    if "\\n" in text and not any(_is_own(line) for line in text.splitlines()):
        text = text.replace("\\r", "").replace("\\n", "\n").replace('\\"', '"')
    return "\n".join(_ELLIPSIS.sub("", _JOURNAL_PREFIX.sub("", line)) for line in text.splitlines())


def _is_own(line: str) -> bool:
    line = line.strip()
    return any(p.match(line) for p in (_RESET_OK, _FAILED_HEADER, _IN_USE_COUNT, _NOTE, _IN_USE_OLD))


def _runs(text: str) -> list[list[str]]:
    """The output of each ``nvidia-smi -r`` run of a transcript (cut at its shell prompts), in order; the
    whole text as one run when it has no prompt."""
    lines = text.splitlines()
    prompts = [(i, m) for i, line in enumerate(lines) if (m := _PROMPT.match(line.strip()))]
    if not prompts:
        return [lines]
    return [lines[at + 1:(prompts[n + 1][0] if n + 1 < len(prompts) else len(lines))]
            for n, (at, m) in enumerate(prompts) if _RESET_FLAGS.search(m.group(1))]


def _ends_paragraph(line: str) -> bool:
    return (
        not line
        or line.startswith(("exit=", "$ ", "#"))
        or any(p.match(line) for p in (_RESET_OK, _FAILED_HEADER, _ALL_DONE, _NOTE, _IN_USE_COUNT))
    )


def _paragraph(lines: list[str], start: int) -> tuple[str, int]:
    """The (possibly wrapped) paragraph starting at ``lines[start]`` joined into one line, and the
    index after it. It ends at a blank line or at a line of nvidia-smi's that means something else."""
    parts = [lines[start].strip()]
    i = start + 1
    while i < len(lines) and not _ends_paragraph(lines[i].strip()):
        parts.append(lines[i].strip())
        i += 1
    return " ".join(parts), i


def _parse_reset(text: str, exit_status: int | None, warnings: list[str]) -> ResetResult:
    runs = [_parse_run(lines, exit_status) for lines in _runs(_unwrapped(text))]
    read = [r for r in runs if r.reset or r.failed or r.nvswitches_reset or r.all_done or r.in_use_devices is not None]
    result = read[-1] if read else (runs[-1] if runs else ResetResult(exit_status=exit_status))
    refused_before = [r for r in read[:-1] if r.failed or r.in_use_devices is not None]
    if refused_before:
        n = refused_before[-1].in_use_devices or len(refused_before[-1].failed)
        warnings.append(f"an earlier nvidia-smi -r in this text was refused ({n} device{'' if n == 1 else 's'} in use); "
                        "the last one is read")
    if result.in_use_devices is not None and 0 < len(result.failed) < result.in_use_devices:
        warnings.append(f"nvidia-smi named {len(result.failed)} of the {result.in_use_devices} devices it could not "
                        "reset")
    if exit_status not in (None, 0) and not result.failed and result.in_use_devices is None:
        warnings.append(f"nvidia-smi -r exited with status {exit_status} without naming a GPU that failed.")
    if exit_status == 0 and (result.failed or result.in_use_devices is not None):
        warnings.append("nvidia-smi -r exited with status 0 but reported GPUs it could not reset.")
    if not read:
        warnings.append("No nvidia-smi -r output was recognised.")
    return result


def _parse_run(lines: list[str], exit_status: int | None) -> ResetResult:
    """One run's output (its lines, a transcript's prompts cut away) as a :class:`ResetResult`."""
    reset: list[str] = []
    failed: list[tuple[str, str]] = []
    nvswitches = all_done = False
    in_use: int | None = None
    refusal: str | None = None
    note: str | None = None
    in_failed_list = False
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        i += 1
        if not line:
            in_failed_list = False
            continue
        if m := _RESET_OK.match(line):
            reset.append(m.group(1))
        elif _FAILED_HEADER.match(line):
            in_failed_list = True
        elif in_failed_list and (m := _FAILED_ITEM.match(line)):
            failed.append((m.group(1), m.group(2)))
        elif (m := _IN_USE_OLD.match(line)) or (m := _CANNOT.match(line)):
            failed.append((m.group(1), _reason(m.group(2))))
        elif m := _IN_USE_COUNT.match(line):
            in_use = int(m.group(1))
            refusal, i = _paragraph(lines, i - 1)
        elif _NOTE.match(line):
            nvswitches = True
            note, i = _paragraph(lines, i - 1)
        elif _ALL_DONE.match(line):
            all_done = True
    return ResetResult(
        reset=tuple(reset),
        failed=tuple(failed),
        nvswitches_reset=nvswitches,
        in_use_devices=in_use,
        all_done=all_done,
        message=refusal or note,
        exit_status=exit_status,
    )


def _reason(text: str) -> str:
    """``another process`` -> ``In use by another process``; other reasons as printed (or a default)."""
    text = text.strip().rstrip(".")
    if text.lower().startswith(("another", "some other", "one or more")):
        return f"In use by {text}"
    return text or "Could not be reset"


def parse_reset(text: str, exit_status: int | None = None) -> Parsed[ResetResult]:
    """Parse ``nvidia-smi -r`` output. Never raises.

    Args:
        text: stdout and stderr of the command, in order.
        exit_status: its exit status, when known (kept in the result; a mismatch with the text warns).

    Returns:
        The reset and failed GPUs, whether the NVSwitches were reset, the in-use device count and
        nvidia-smi's message.
    """
    if not isinstance(text, str):
        return Parsed(ResetResult(exit_status=exit_status), (f"Expected text, got {type(text).__name__}.",))
    warnings: list[str] = []
    try:
        return Parsed(_parse_reset(text, exit_status, warnings), tuple(warnings))
    except Exception as exc:  # the never-raise promise
        return Parsed(ResetResult(exit_status=exit_status), (f"Could not read nvidia-smi -r output: {exc!r}"[:200],))


def parse_persistence(text: str) -> Parsed[dict[str, bool]]:
    """Parse ``nvidia-smi -pm 0|1`` output into each GPU's persistence mode afterwards. Never raises.

    Reads ``Enabled persistence mode for GPU <bus>.``, ``Disabled persistence mode for GPU <bus>.``
    (also ``Enabled Legacy persistence mode ...``) and ``Persistence mode is already Enabled for GPU
    <bus>.``; a GPU whose mode could not be set is left out and warned about.

    Returns:
        ``{bus_id: True if enabled}`` in output order.
    """
    if not isinstance(text, str):
        return Parsed({}, (f"Expected text, got {type(text).__name__}.",))
    modes: dict[str, bool] = {}
    warnings: list[str] = []
    try:
        recognised = False
        for raw in _own_lines(text, _PM_FLAGS):
            line = raw.strip()
            if m := (_PM_ALREADY.search(line) or _PM_SET.search(line)):
                modes[m.group(2)] = m.group(1).lower() == "enabled"
                recognised = True
            elif m := _PM_PROBLEM.search(line):
                warnings.append(f"Persistence mode of GPU {m.group(1)} was not changed: {line[:160]}")
                recognised = True
            elif _ALL_DONE.match(line):
                recognised = True
        if not recognised:
            warnings.append("No nvidia-smi -pm output was recognised.")
    except Exception as exc:  # the never-raise promise
        warnings.append(f"Could not read nvidia-smi -pm output: {exc!r}"[:200])
    return Parsed(modes, tuple(warnings))


__all__ = ["ResetResult", "parse_persistence", "parse_reset"]
