"""The CUDA errors an application's output names (issue 35, the client side). Pure.

PyTorch, JAX, vLLM, SGLang, gpu-burn and the like print a failed CUDA call's error in one of three ways; each is
read through the same row of the CUDA error catalogue (nvls_tui/catalogues/cuda_error.csv), never by a pattern per
message:

- by number beside an error word: ``Error 802: ...`` (PyTorch's cudaGetDeviceCount), ``error=802`` (THCudaCheck),
  ``cuda runtime error (802)``, ``CUDA error 802``, ``Cuda failure 802`` (NCCL), ``non-zero status: 401
  cuMemMap failed`` (NVSHMEM). The number counts where the line
  also holds the catalogue's words for it or names CUDA (a number the catalogue does not list is still read);
- by name: ``cudaErrorSystemNotReady`` (the runtime's), ``CUDA_ERROR_SYSTEM_NOT_READY`` (the driver API's, JAX);
- by the runtime's own words after a colon or a quote (``Error (gpu_burn-drv.cpp:298): system not yet
  initialized``, ``CUDA error: an illegal memory access was encountered``). Words of four or more count anywhere;
  shorter ones (``invalid argument``, ``unknown error``) only on a line that names CUDA: alone they are anyone's.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from nvls_tui import catalogues

# A line that names CUDA: the word, or a CUDA API call (cuInit, cuMemMap, cudaGetDeviceCount).
_NAMES_CUDA = re.compile(r"(?i:cuda)|\bcu[A-Z]\w")
_BY_NUMBER = re.compile(r"(?:\bError |\berror=|\bcuda runtime error \(|\bCUDA error |\bCuda failure |"
                        r"\bnon-zero status: )(\d{1,5})\b")
_BY_NAME = re.compile(r"\b(cudaError[A-Z]\w{1,60}|CUDA_ERROR_[A-Z_]{2,60})\b")
_SHORT = 4  # words: the catalogue's words shorter than this count only on a line that names CUDA
_CAP = 1000  # lines kept: a log of the same failure from every rank says no more after that
_QUOTED = "`"  # a Markdown code span: prose (a README, a ticket) quoting an error, not an application printing it


@dataclass(frozen=True, slots=True)
class CudaErrorLine:
    """One line that names a CUDA error.

    Attributes:
        code: the error's number (None where only a name the catalogue does not list was given).
        entry: the catalogue's row, or None where it lists no such code.
        said: how the line named it, as printed (``802``, ``CUDA_ERROR_SYSTEM_NOT_READY``, the words).
        line: the line, stripped.
        strong: the line names it as only an application's output does: by name, by number with the catalogue's
            words for it, or by those words alone; and not in a Markdown code span. An unlisted number beside
            "CUDA" is read in an application's output but does not make a text one.
    """

    code: int | None
    entry: catalogues.CudaError | None
    said: str
    line: str
    strong: bool = True


@functools.cache
def _by_words() -> re.Pattern[str]:
    """The catalogue's words after a colon or a quote, longest first (so "...not supported on this OS" is not cut)."""
    texts = sorted((e.text for e in catalogues.cuda_errors().values()), key=len, reverse=True)
    return re.compile(r"[:'\"]\s*(" + "|".join(re.escape(t) for t in texts) + r")(?![\w/-])")


def _in_line(line: str) -> CudaErrorLine | None:
    """The CUDA error ``line`` names (module doc), or None."""
    stripped = line.strip()
    prose = _QUOTED in line
    if m := _BY_NAME.search(line):
        entry = catalogues.cuda_error(m.group(1))
        return CudaErrorLine(entry.code if entry else None, entry, m.group(1), stripped, not prose)
    for m in _BY_NUMBER.finditer(line):
        code = int(m.group(1))
        entry = catalogues.cuda_error(code)
        worded = entry is not None and entry.text in line
        if worded or _NAMES_CUDA.search(line):
            return CudaErrorLine(code, entry, m.group(1), stripped, worded and not prose)
    for m in _by_words().finditer(line):
        entry = catalogues.cuda_error(m.group(1))
        if entry is not None and (len(entry.text.split()) >= _SHORT or _NAMES_CUDA.search(line)):
            return CudaErrorLine(entry.code, entry, entry.text, stripped, not prose)
    return None


def cuda_errors_in(text: str) -> list[CudaErrorLine]:
    """Every line of ``text`` that names a CUDA error (the first error each names), in order, at most 1000."""
    found: list[CudaErrorLine] = []
    for line in text.splitlines():
        if (error := _in_line(line)) is not None:
            found.append(error)
            if len(found) >= _CAP:
                break
    return found


@functools.cache
def line_pattern() -> re.Pattern[str]:
    """A line that names a CUDA error strongly (above) as one search: a name, a number before the catalogue's words
    for some code, or words of four or more after a colon or a quote (a paste's lines are sorted by it). NCCL's own
    forms are NCCL's: the line rules ask NCCL's first, and NCCL's "Cuda failure N" trailer is not asked here."""
    texts = sorted((e.text for e in catalogues.cuda_errors().values()), key=len, reverse=True)
    words = "|".join(re.escape(t) for t in texts)
    long_words = "|".join(re.escape(t) for t in texts if len(t.split()) >= _SHORT)
    # (Not NCCL's "Cuda failure 802 '...'" nor "Cuda failure '...'": NCCL's trailer, "Last error:" in a torch
    # traceback, is NCCL's run.)
    by_number = _BY_NUMBER.pattern.replace(r"(\d{1,5})", r"\d{1,5}").replace(r"|\bCuda failure ", "")
    by_number = by_number.replace(r"|\bnon-zero status: ", "")  # (NVSHMEM's: NVSHMEM's run)
    return re.compile(_BY_NAME.pattern + r"|" + by_number
                      + r"\)?\s?:?\s?'?(?:" + words + r")|(?<!\d )(?<!failure )[:'\"]\s*(?:" + long_words + r")(?![\w/-])")


def names_a_cuda_error(text: str) -> bool:
    """Whether ``text`` is an application's output by its CUDA errors: some line names one strongly (above)."""
    return any(error.strong for error in cuda_errors_in(text))


__all__ = ["CudaErrorLine", "cuda_errors_in", "line_pattern", "names_a_cuda_error"]
