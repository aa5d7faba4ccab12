"""``nvls-tui check`` with the fixes that docs/performance.md proposes, applied as patches at run time.

The benchmark may not edit nvls_tui/ (other work is going on there), so the fixes the profile
points at are tried here first, to measure what each would gain before anyone changes the
package. Each patch keeps the behaviour of the function it replaces:

- ``known_hosts``: ``ssh_pool.load_known_hosts`` parses the known_hosts file once per
  (path, mtime, size) instead of once per connection (256 nodes x 256 entries = 65,536 key decodes).
- ``kernel``: ``kernel_log.classify_kernel_line`` skips a line at once unless it holds one of the
  words any of its patterns needs (most of a 300-line kernel tail is benign driver chatter).
- ``csv``: ``QueryCsv.key`` remembers the column found for a (header, field) pair.
- ``json``: ``check --json`` output without indentation (json's C encoder only runs without indent).

Usage::

    NVLS_BENCH_PATCHES=known_hosts,kernel,csv,json python -m bench.patched_check [check arguments]
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys

PATCHES = ("known_hosts", "kernel", "csv", "json")


def patch_known_hosts() -> None:
    """Cache parsed known_hosts per (paths, mtimes, sizes): edits are still honoured."""
    from nvls_tui.backends import ssh_pool

    original = ssh_pool.load_known_hosts
    cache: dict[tuple, tuple] = {}

    def load_known_hosts(options):
        paths = ([os.path.expanduser(options.known_hosts)] if options.known_hosts else
                 [os.path.expanduser(p) for p in ssh_pool.DEFAULT_KNOWN_HOSTS])
        try:
            stamp = tuple((p, os.stat(p).st_mtime_ns, os.stat(p).st_size) for p in paths if os.path.exists(p))
        except OSError:
            return original(options)
        if stamp not in cache:
            cache.clear()
            cache[stamp] = original(options)
        return cache[stamp]

    ssh_pool.load_known_hosts = load_known_hosts


def patch_kernel() -> None:
    """A one-regex pre-filter in front of the per-line classifier (same results)."""
    from nvls_tui.parsers import kernel_log

    original = kernel_log.classify_kernel_line
    # Every pattern of classify_kernel_line needs one of these words (SXid contains Xid).
    needed = re.compile(r"out of sync|fabric manager is not loaded|xid|NV_ERR_", re.IGNORECASE)

    def classify_kernel_line(line: str):
        if not needed.search(line):
            return None
        return original(line)

    kernel_log.classify_kernel_line = classify_kernel_line


def patch_csv() -> None:
    """Memoize the header lookup of QueryCsv.key (the header is a tuple, so it can key a cache)."""
    from nvls_tui.parsers.nvidia_smi_csv import QueryCsv

    original = QueryCsv.key

    @functools.lru_cache(maxsize=1024)
    def lookup(header: tuple[str, ...], field: str):
        return original(QueryCsv(header=header), field)

    def key(self, field: str):
        return lookup(self.header, field)

    QueryCsv.key = key


def patch_json() -> None:
    """``json.dump`` in headless/check without indentation (the C encoder)."""
    from nvls_tui.headless import check

    class _Json:
        @staticmethod
        def dump(doc, fp, indent=None, **kw):
            return json.dump(doc, fp, **kw)

        loads, dumps = staticmethod(json.loads), staticmethod(json.dumps)

    check.json = _Json


def apply(names: list[str]) -> None:
    """Apply the named patches (unknown names are an error)."""
    for name in names:
        if name not in PATCHES:
            raise SystemExit(f"unknown patch {name!r}; known: {', '.join(PATCHES)}")
        globals()[f"patch_{name}"]()


if __name__ == "__main__":
    wanted = [p for p in os.environ.get("NVLS_BENCH_PATCHES", ",".join(PATCHES)).split(",") if p]
    apply(wanted)
    from nvls_tui.cli import main

    sys.exit(main(["check", *sys.argv[1:]]))
