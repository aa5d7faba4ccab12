"""The probe as one POSIX sh script: every section of ``poll/probe.py`` read in one SSH command.

The script prints each section between begin and end markers carrying the poll's nonce (read back by
``poll/probe_output.py``); it uses shell builtins wherever it can, since each process it starts costs the
node (docs/performance.md); the sections it holds in shell variables are capped on the node.
"""

from __future__ import annotations

import functools
import re
import shlex

from nvls_tui.poll.evidence import TIMED_OUT_STATUS
from nvls_tui.poll.kernel_tail import (
    CURSOR,
    FIRST_LINE,
    KERNEL_LINES,
    KERNEL_PATTERN,
    NOTE_LINES,
    RING_FIRST,
    RING_NEEDED,
    RING_SKIPPED,
    VISITED_LINE,
    kernel_argv,
)
from nvls_tui.poll.probe import (
    CONFIG_SECTIONS,
    CONFIG_STAMP,
    CONFIG_STAMP_ARGV,
    CONFIG_STAMP_MAX,
    DERIVED_SECTIONS,
    FILE_SECTIONS,
    FILE_STATUS_WORD,
    FM_LOG_NOT_RUN_LINE,
    FM_UNIT_NAME,
    JOURNAL_DIRS,
    JOURNAL_HUNG_EXIT,
    JOURNAL_HUNG_LINE,
    JOURNAL_NO_FILES_LINE,
    JOURNAL_NONE_EXIT,
    JOURNAL_NONE_LINE,
    JOURNAL_NONE_NOT_RUN,
    JOURNAL_ROOT_ENV,
    JOURNAL_SECTIONS,
    MARK,
    NEWLINE_ADDED,
    OVER_CAP_WORD,
    PICK,
    PS_FORMAT,
    QUICK,
    RING_ARGV,
    SECTION_CAP,
    SECTION_NAMES,
    SECTIONS,
    UNCHANGED_WORD,
)

# fuser -v rows: "... USER PID ACCESS COMMAND"; each PID once, joined by commas (procps's list syntax).
# Shell builtins only (read, set, case): an awk here cost the node a process per poll. Globbing is off
# while the node's own text is split into words, so a command named "*" stays a word.
_PID_LIST = (
    "pids=; set -f",
    "while IFS= read -r l; do set -- $l; while [ $# -gt 1 ]; do",
    "  case $1 in ''|*[!0-9]*) ;; *) case $2 in [.FfRrCcEeMm][.FfRrCcEeMm][.FfRrCcEeMm][.FfRrCcEeMm][.FfRrCcEeMm])",
    # A PID as a number: "007" is 7 (the bastion's parser reads it so), never a second PID; "0" is none.
    '    p=${1#"${1%%[!0]*}"}; case ,$pids, in *,$p,*) ;; *) [ -n "$p" ] && pids=$pids${pids:+,}$p;; esac;;',
    "  esac;; esac; shift",
    "done; done <<NVLS_HOLDERS",
    "$holders",
    "NVLS_HOLDERS",
)
# Their parents (init and the PIDs themselves left out), joined the same way, and then every one's cgroup:
# read with the shell's own `read` from /proc/PID/stat (the PPID after the name, whose parentheses may
# hold anything: cut at the last ") ") and /proc/PID/cgroup, no process for them (they were two `ps` of
# ~4 ms each on an H100). A PID whose file cannot be read (it exited, or /proc hides it) gives no parent
# and no cgroup line: unknown, as ps leaves a PID it cannot see. ``${NVLS_TUI_PROC:-/proc}``: a shell
# serving a simulated node reads the simulator's process files there (nvls_tui/sim/proc_files.py).
_PARENT_LIST = (
    'pr=${NVLS_TUI_PROC:-/proc}; ppids=; IFS=,; for p in $pids; do unset IFS',
    '  s=; read -r s 2>/dev/null < "$pr/$p/stat"; set -- ${s##*) }',
    "  case $2 in ''|*[!0-9]*|0|1) ;; *) case ,$pids,$ppids, in *,$2,*) ;; *) ppids=$ppids${ppids:+,}$2;; esac;; esac",
    "done; unset IFS; set +f",
)
# procps's `cgroup` column: the entries whose path is not the root, joined by commas; `-` when none is
# (parsers.ps.cgroup_column). A file that gave no line could not be read (the kernel's always has one: a
# folder, a read error and EOF look alike to `read`): no line for it, never "-". Exit 1 where no PID's
# file could be read, as ps exits where it finds none.
_CGROUP_LIST = (
    'rc=0; [ -n "$all" ] && rc=1; IFS=,; for p in $all; do unset IFS; cg=; n=',
    "  while IFS= read -r c; do n=1; case $c in *:/|'') ;; *) cg=$cg${cg:+,}$c;; esac; done 2>/dev/null < \"$pr/$p/cgroup\"",
    "  [ -n \"$n\" ] && { printf '%s %s\\n' \"$p\" \"${cg:--}\"; rc=0; }",
    "done; unset IFS",
)
# The kernel log, filtered and bounded on the node in one awk that runs journalctl itself (a pipeline
# would cost a subshell more, to keep journalctl's exit status): journal lines that match the pattern
# (the last KERNEL_LINES of them), journalctl's own messages (its errors and permission hints, at most
# NOTE_LINES), the cursor journalctl ended at, how many entries it visited and whether the first and
# the last of them matched (see nvls_tui.poll.kernel_tail), and the end marker with journalctl's exit
# status: close() gives it (mawk and gawk >= 4.2; older gawk gives it times 256). filter_journal() is
# the same filter in Python. It exits JOURNAL_HUNG_EXIT where journalctl timed out (coreutils timeout's 124):
# the ring buffer is read all the same, and the poll asks no other journalctl. Where the script reads the
# ring section too, this awk reads it as well right after its own end marker (``rcmd``, the ring's dmesg,
# with _RING_FN), whenever it exits non-zero: no second awk for the ring. Where the node keeps no journal
# (``nj``, see _NO_JOURNAL) it starts no journalctl: it takes JOURNAL_NO_FILES_LINE as journalctl's message
# and 1 as its status (what journalctl answers there, "No journal files were found.") and goes on as for them.
_KERNEL_AWK = (
    "function take(s) {if (s ~ /^[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T/) {v++; h = (s ~ /" + KERNEL_PATTERN
    + "/); if (v == 1) {f = h; ft = s; sub(/ .*/, \"\", ft); fb = (index(s, \"kernel: Linux version \") > 0)}"
    " l = h; if (h) {r[n % " + str(KERNEL_LINES) + "] = s; n++}; pe = 1}"
    " else if (pe && s ~ /^[ \\t]/) {if (l && n) r[(n - 1) % " + str(KERNEL_LINES) + "] = r[(n - 1) % "
    + str(KERNEL_LINES) + "] \"\\n\" s}"
    " else if (index(s, \"-- cursor: \") == 1) {cur = s; pe = 0} else if (index(s, \"-- \") == 1) pe = 0;"
    " else {pe = 0; if (e < " + str(NOTE_LINES) + ") msg[e++] = s}}"
    " BEGIN {if (nj) {msg[e++] = \"" + JOURNAL_NO_FILES_LINE + "\"; st = 1} else {while ((cmd | getline s) > 0) take(s);"
    " st = close(cmd); if (st >= 256 && st % 256 == 0) st = st / 256}"
    " for (i = 0; i < e; i++) print msg[i]; for (i = (n > " + str(KERNEL_LINES) + " ? n - " + str(KERNEL_LINES)
    + " : 0); i < n; i++) print r[i % " + str(KERNEL_LINES) + "]; if (cur != \"\") print cur;"
    " if (v) print \"" + FIRST_LINE + "\" ft \" \" fb;"
    " print \"" + VISITED_LINE + "\" v + 0 \" first \" f + 0 \" last \" l + 0; print m \" end kernel \" st;"
    " code = st == 124 ? " + str(JOURNAL_HUNG_EXIT) + " : ((st != 0 || (whole && !(v && fb))) ? " + str(RING_NEEDED)
    + " : 0); for (i = 0; i < e; i++) if (st != 0 && (msg[i] == \"" + JOURNAL_NONE_LINE + "\" || msg[i] == \""
    + JOURNAL_NO_FILES_LINE + "\")) none = 1;"
    + "{RING}" + " exit (none ? " + str(JOURNAL_NONE_EXIT) + " : code)}"
)
# Whether the node keeps a journal at all (JOURNAL_DIRS, under $NVLS_TUI_JOURNAL_ROOT where a shell serving a
# simulated node sets it): builtins only (test, a glob). ``nojf PATH`` is true only where PATH surely holds no
# file: it is absent and its parent a folder the shell can search (a parent that is absent itself is asked the
# same), or it is a folder the shell can read and search with no entry in it, hidden ones included. Anything
# else (a folder it cannot read, a parent it cannot search, a link, a file) is false: journalctl runs, as
# before (fail closed). Where both are true ($nj) the kernel awk does not start journalctl (see _KERNEL_AWK).
_NO_JOURNAL = (
    'nojf() { if [ -e "$1" ] || [ -L "$1" ]; then [ -d "$1" ] && [ -r "$1" ] && [ -x "$1" ] || return 1',
    # One loop per pattern: a bash told to fail on a glob that matches nothing (failglob) skips that loop only.
    '  for jf in "$1"/*; do { [ -e "$jf" ] || [ -L "$jf" ]; } && return 1; done',
    '  for jf in "$1"/.[!.]*; do { [ -e "$jf" ] || [ -L "$jf" ]; } && return 1; done',
    '  for jf in "$1"/..?*; do { [ -e "$jf" ] || [ -L "$jf" ]; } && return 1; done; return 0; fi',
    '  jp=${1%/*}; [ -d "${jp:-/}" ] && [ -x "${jp:-/}" ] && return 0',
    '  [ -n "$jp" ] && ! [ -e "$jp" ] && ! [ -L "$jp" ] && nojf "$jp"; }',
    f'jr=${{{JOURNAL_ROOT_ENV}:-}}; nj=; ' + ' && '.join(f'nojf "$jr{d}"' for d in JOURNAL_DIRS) + ' && nj=1',
)
# Where the script reads the ring too (only then is _RING_FN in the program: awk refuses a call to a
# function it does not define, even one never made).
_KERNEL_RING_CALL = " if (code != 0) {print m \" begin ring\"; ring(rcmd)};"
# The kernel ring buffer, read only where the journal does not cover the boot (the kernel awk exits
# RING_NEEDED): dmesg's own messages, where the buffer starts (its first stamp, and whether that line is
# the boot's first), and the matching lines with the indented lines of their records, bounded as the
# kernel section's. filter_ring() is the same filter in Python.
# As a function of its own names (the kernel awk calls it too, after its own section): ring(CMD) reads
# CMD's output and prints the section's text and its end marker.
_RING_FN = (
    "function ring(c) {while ((c | getline rs) > 0) {if (rs ~ /^\\[ *[0-9]+\\.[0-9]+\\] /) {if (rf == \"\") {rt = rs;"
    " sub(/^\\[ */, \"\", rt); sub(/\\].*/, \"\", rt); rx = rs; sub(/^\\[[^]]*\\] /, \"\", rx);"
    " rf = \"" + RING_FIRST + "\" rt \" \" (index(rx, \"Linux version \") == 1 ? 1 : 0)}"
    " rk = (rs ~ /" + KERNEL_PATTERN + "/); if (rk) {RR[rn % " + str(KERNEL_LINES) + "] = rs; rn++}}"
    " else if (rs ~ /^[ \\t]/ && rs ~ /[^ \\t]/) {if (rk && rn) RR[(rn - 1) % " + str(KERNEL_LINES) + "] = RR[(rn - 1) % "
    + str(KERNEL_LINES) + "] \"\\n\" rs}"
    " else if (rs ~ /[^ \\t]/) {rk = 0; if (re < " + str(NOTE_LINES) + ") RM[re++] = rs}}"
    " rst = close(c); if (rst >= 256 && rst % 256 == 0) rst = rst / 256;"
    " for (ri = 0; ri < re; ri++) print RM[ri]; if (rf != \"\") print rf;"
    " for (ri = (rn > " + str(KERNEL_LINES) + " ? rn - " + str(KERNEL_LINES) + " : 0); ri < rn; ri++) print RR[ri % "
    + str(KERNEL_LINES) + "]; print m \" end ring \" rst}"
)
_RING_AWK = _RING_FN + " BEGIN {ring(cmd)}"
# The poll's user from the shell's own /proc/self/status (effective uid): no process for it; `id -u`
# only where /proc cannot say.
_IDENTITY = ('u=; while read -r k r e _; do [ "$k" = Uid: ] && u=$e; done < /proc/self/status 2>/dev/null',
             'if [ -n "$u" ]; then echo "$u"; rc=0; else id -u 2>&1; rc=$?; fi')

_CAPPED = (
    "nl='\n'",
    "capped() { c=$1; shift; out=$({ \"$@\" 2>&1; printf '\\n%s' \"$?\"; } | head -c $((c + 5)); echo .)",
    f"  if [ ${{#out}} -gt $((c + 5)) ]; then out=; rc={OVER_CAP_WORD}; else out=${{out%.}}; rc=${{out##*\"$nl\"}}",
    f"    out=${{out%\"$nl\"*}}; if [ ${{#out}} -gt \"$c\" ]; then out=; rc={OVER_CAP_WORD}; fi",
    # The newlines after the last line, one at a time behind a `case` on the last character: bash took ~10 s
    # of CPU to test "${out%"$nl"}" != "$out" once on a 1 MiB section (dash: milliseconds).
    "    while :; do case $out in *\"$nl\") out=${out%?};; *) break;; esac; done; fi; }",
)
# A capped section's text (none when it was cut) before its end marker.
_PUT_OUT = f"[ \"$rc\" = {OVER_CAP_WORD} ] || printf '%s\\n' \"$out\""

_CONFIG_BLOCK = (
    "cs=$({bound}{find} 2>&1); cr=$?; ck=; case $cr in 0|1) [ -n \"$cs\" ] && ck=1;; esac; r=$cs$nl",
    'while [ -n "$r" ]; do l=${{r%%"$nl"*}}; r=${{r#*"$nl"}}',
    '  case $l in "f "*|*"find: "*": No such file or directory") ;; *) ck=;; esac; done',
)


def _glob_safe_join(argv: tuple[str, ...]) -> str:
    """shlex.join, except that a fixed ``/dev/nvidia*`` glob is left for the remote shell."""
    return " ".join(a if a == "/dev/nvidia*" else shlex.quote(a) for a in argv)


# What changes from one node or one poll to the next (the nonce, the node's journal cursor, its configuration
# stamp) goes into a script written once per kind of poll (these stand-ins, each valid where it stands, so the
# script is written exactly as for a real value), cut at the stand-ins, and joined with each poll's values: the
# script's own text (about 60 us of quoting and joining) was written again for every node of every poll
# (docs/performance.md, 2026-12-07). tests/unit/test_probe_script_written_once.py holds that the result is the
# script written whole.
_NONCE_STAND_IN = "NVLSTUINONCESTANDIN"
_CURSOR_STAND_IN = f"s={'e' * 32};i=e;b={'e' * 32};m=e;t=e;x=e"
_STAMP_STAND_IN = "NVLSTUISTAMPSTANDIN"
_STAND_INS = re.compile("(" + "|".join(re.escape(s) for s in (_NONCE_STAND_IN, _CURSOR_STAND_IN, _STAMP_STAND_IN)) + ")")


def probe_script(sudo: bool = False, nonce: str = "0", only: tuple[str, ...] | None = None,
                 kernel_cursor: str | None = None, cap: int = SECTION_CAP, section_timeout: float | None = None,
                 journal_hung: str | None = None, config_stamp: str | None = None) -> str:
    """The whole poll as one POSIX sh script (see :func:`written_script` for the arguments).

    The script of this kind of poll is written once (:func:`_written_once`); this poll's nonce, cursor and
    stamp are put into it in one pass, so what they hold is never read as a stand-in.
    """
    if not nonce.isalnum():
        raise ValueError("the probe nonce must be letters and digits")
    cursor = kernel_cursor if kernel_cursor is not None and CURSOR.fullmatch(kernel_cursor) else None
    stamp = config_stamp if config_stamp and len(config_stamp) <= CONFIG_STAMP_MAX else None
    pieces = _written_once(sudo, None if only is None else tuple(only), cursor is not None, cap, section_timeout,
                           journal_hung, stamp is not None)
    values = {_NONCE_STAND_IN: nonce, _CURSOR_STAND_IN: cursor or "", _STAMP_STAND_IN: shlex.quote(stamp or "")}
    # The text between the stand-ins, and each stand-in's value: what a value holds is never read again.
    return "".join(values[piece] if i % 2 else piece for i, piece in enumerate(pieces))


@functools.lru_cache(maxsize=64)
def _written_once(sudo: bool, only: tuple[str, ...] | None, cursor: bool, cap: int, section_timeout: float | None,
                  journal_hung: str | None, stamp: bool) -> tuple[str, ...]:
    """:func:`written_script` with the stand-ins in place of the nonce, the cursor and the stamp, cut at them:
    the text before the first, the first stand-in, the text up to the next, and so on."""
    return tuple(_STAND_INS.split(written_script(sudo, _NONCE_STAND_IN, only, _CURSOR_STAND_IN if cursor else None, cap,
                                                 section_timeout, journal_hung, _STAMP_STAND_IN if stamp else None)))


def written_script(sudo: bool = False, nonce: str = "0", only: tuple[str, ...] | None = None,
                   kernel_cursor: str | None = None, cap: int = SECTION_CAP, section_timeout: float | None = None,
                   journal_hung: str | None = None, config_stamp: str | None = None) -> str:
    """The whole poll as one POSIX sh script, written out (:func:`probe_script` gives the same text).

    Args:
        sudo: prefix the privileged commands with ``sudo -n`` (never prompts).
        nonce: the marker suffix of this poll (letters and digits: :func:`new_nonce`).
        only: the section names to read (default: all); ``processes``/``cgroups`` need ``holders``.
        kernel_cursor: where the node's kernel log was read to (journalctl's cursor); the kernel
            section then reads only what came since. Anything but journalctl's own form is ignored.
        cap: characters a section may print (the bastion's ``--max-output``); the sections held in
            shell variables are cut on the node to fit it (see :data:`OVER_CAP_WORD`).
        section_timeout: seconds each command may run, bounded on the node by coreutils ``timeout``
            (exit 124: the section timed out, the rest still read; no fallback after it). For a
            script nobody watches section by section (one srun); over SSH the bastion ends a hung
            section itself. A node without ``timeout`` runs its commands unbounded: the caller's own
            deadline then ends the whole poll, and the node reads unreachable (unknown, never healthy).
        journal_hung: the section whose journalctl timed out earlier in this poll (an earlier script
            the bastion ended there): the journal sections of this script are not run and read timed
            out, saying so. Within one script the same happens after a journalctl that timed out.
        config_stamp: the stamp of needrestart's and apt's files the bastion saw with its last complete
            answer (the CONFIG_STAMP section of an earlier poll): where the files still match it, their
            sections end in :data:`UNCHANGED_WORD` without being read, and the bastion answers them
            from that poll. None (the first poll, or nothing kept): they are read.

    Returns:
        The script; each section prints ``@@nvls-tui-NONCE begin NAME``, its output (stderr merged)
        and ``@@nvls-tui-NONCE end NAME STATUS`` (STATUS ``over-cap``: cut on the node, nothing kept).
    """
    if not nonce.isalnum():
        raise ValueError("the probe nonce must be letters and digits")
    if journal_hung is not None and journal_hung not in SECTION_NAMES:
        raise ValueError("journal_hung must name a section of the probe")
    mark = f"{MARK}-{nonce}"
    wanted = set(SECTION_NAMES if only is None else only)
    # What a capped section prints is its text and a newline: that must fit the bastion's reader.
    limit = max(int(cap) - 1, 0)
    lines = ["export LC_ALL=C", f"m={mark}", f"jh={journal_hung or ''}", "jn=", *_CAPPED]
    skipped = "printf '%s\\n' \"" + JOURNAL_HUNG_LINE.format("$jh") + f"\"; rc={TIMED_OUT_STATUS}"
    bound, no_retry = "", OVER_CAP_WORD
    done: set[str] = set()
    if section_timeout is not None:
        # Exported: the kernel section's command line is run by awk's own sh, which expands it too.
        lines += [f'NVLS_TO=; command -v timeout >/dev/null 2>&1 && NVLS_TO="timeout -k 2 {float(section_timeout):.3f}"',
                  "export NVLS_TO"]
        bound, no_retry = "$NVLS_TO ", f"{OVER_CAP_WORD}|124"  # the same tool would hang again
    for section in SECTIONS:
        if section.name not in wanted or section.name in done:
            continue
        if section.name in FILE_SECTIONS:
            names = [n for n in FILE_SECTIONS if n in wanted]
            lines += _files_read(names, bound)
            done.update(names)
            continue
        if section.name in CONFIG_SECTIONS:
            names = [n for n in CONFIG_SECTIONS if n in wanted]
            done.update(names)
            lines += [line.format(bound=bound, find=_glob_safe_join(CONFIG_STAMP_ARGV)) for line in _CONFIG_BLOCK]
            same = (f'[ -n "$ck" ] && [ "$cs" = {shlex.quote(config_stamp)} ]'
                    if config_stamp and len(config_stamp) <= CONFIG_STAMP_MAX else "false")
            lines.append(f"if {same}; then "
                         + " ".join(f'echo "$m begin {n}"; echo "$m end {n} {UNCHANGED_WORD}";' for n in names)
                         + " else")
            for name in names:
                argv = next(s.argv for s in SECTIONS if s.name == name)
                lines += [f'echo "$m begin {name}"', f"{bound}{_glob_safe_join(argv)} 2>&1", "rc=$?",
                          f'echo "$m end {name} $rc"']
            lines += [f'[ -n "$ck" ] && {{ echo "$m begin {CONFIG_STAMP}"; printf \'%s\\n\' "$cs"; '
                      f'echo "$m end {CONFIG_STAMP} 0"; }}', "fi"]
            continue
        prefix = bound + ("sudo -n " if sudo and section.privileged else "")
        argv = kernel_argv(kernel_cursor) if section.name == "kernel" else section.argv
        cmd = f"{prefix}{_glob_safe_join(argv)} 2>&1"
        begin, end = f'echo "$m begin {section.name}"', f'echo "$m end {section.name} $rc"'
        if section.fallback:
            first = f"{prefix}{_glob_safe_join(section.argv)}"
            again = f"{prefix}{_glob_safe_join(section.fallback)}"
            # Only one of the two outputs is kept: a rejected query prints its complaint on stdout.
            lines += [begin, f"capped {limit} {first}; case $rc in 0|{no_retry}) ;; *) capped {limit} {again};; esac",
                      _PUT_OUT, end]
        elif section.name == "holders":
            # Kept in a variable: the ps steps below read the PIDs from this same table (none from a cut one).
            lines += [begin, f"capped {limit} {prefix}{_glob_safe_join(argv)}; holders=$out; hrc=$rc", _PUT_OUT, end]
        elif section.name == "kernel":
            # awk -v takes backslash escapes: the command has none (fixed words, a hex cursor).
            whole = 0 if kernel_cursor is not None and CURSOR.fullmatch(kernel_cursor) else 1
            ring = ""
            if "ring" in wanted:  # the ring is read by this awk where it is needed (see _KERNEL_AWK)
                ring_prefix = bound + ("sudo -n " if sudo else "")
                ring = f"-v {shlex.quote('rcmd=exec ' + ring_prefix + _glob_safe_join(RING_ARGV) + ' 2>&1')} "
            program = (_RING_FN + " " if ring else "") + _KERNEL_AWK.replace("{RING}", _KERNEL_RING_CALL if ring else "")
            # awk runs its command through `sh -c`, which dash forks once more for it: `exec` spares that.
            lines += [*_NO_JOURNAL, begin,
                      f"awk -v m=\"$m\" -v whole={whole} -v nj=\"$nj\" -v {shlex.quote('cmd=exec ' + cmd)} {ring}"
                             f"{shlex.quote(program)}; rk=$?",
                      f"case $rk in {JOURNAL_HUNG_EXIT}) jh=kernel; rk={RING_NEEDED};; "
                      f"{JOURNAL_NONE_EXIT}) jn=1; rk={RING_NEEDED};; esac"]
        elif section.name == "ring" and "kernel" in wanted:
            # Read by the kernel section's awk where it was needed; said to be skipped otherwise.
            lines.append(f'[ "$rk" = {RING_NEEDED} ] || {{ {begin}; echo {shlex.quote(RING_SKIPPED)}; '
                         'echo "$m end ring 0"; }')
        elif section.name == "ring":
            # Without the kernel section's word (it ran in an earlier script, or not at all): read.
            lines += [begin, f'if [ "${{rk:-{RING_NEEDED}}}" = {RING_NEEDED} ]; then '
                             f"awk -v m=\"$m\" -v {shlex.quote('cmd=exec ' + cmd)} {shlex.quote(_RING_AWK)}; "
                             f'else echo {shlex.quote(RING_SKIPPED)}; echo "$m end ring 0"; fi']
        elif section.name == "identity":
            lines += [begin, *_IDENTITY, end]
        elif section.name == "units" and "fm_log" in wanted:
            # Held in the shell (one process as before: dash execs the lone command of a `$(...)`) to see
            # whether systemd knows FM's unit (fm_unit_absent): a fixed property list of fixed units, so
            # its answer is bounded, unlike nvidia-smi's or fuser's (those are `capped`).
            fm, nf = f"Id={FM_UNIT_NAME}", "LoadState=not-found"
            lines += [begin, f"u=$({cmd}); rc=$?; [ -z \"$u\" ] || printf '%s\\n' \"$u\"", end,
                      f'nofm=; case "${{nl}}$u${{nl}}" in *"${{nl}}{fm}${{nl}}"*) a=${{u%%"{fm}"*}}; a=${{a##*"${{nl}}${{nl}}"}}; '
                      f'z=${{u#*"{fm}"}}; z=${{z%%"${{nl}}${{nl}}"*}}',
                      f'  case "${{nl}}$a$z${{nl}}" in *"${{nl}}{nf}${{nl}}"*) [ "$rc" = 0 ] && nofm=1;; esac;; esac; u=']
        elif section.name == "fm_log":
            # Not read where systemd has no FM unit (FM_LOG_NOT_RUN_LINE), where the kernel section's
            # journalctl found no journal at all (JOURNAL_NONE_NOT_RUN), nor once a journalctl of this
            # poll timed out.
            lines += [begin, f'if [ -n "$nofm" ]; then echo {shlex.quote(FM_LOG_NOT_RUN_LINE)}; rc=0; '
                             f'elif [ -n "$jn" ]; then echo {shlex.quote(JOURNAL_NONE_NOT_RUN)}; rc=0; '
                             f'elif [ -n "$jh" ]; then {skipped}; else {cmd}; rc=$?; '
                             f"case $rc in {TIMED_OUT_STATUS}) jh={section.name};; esac; fi", end]
        elif section.name in JOURNAL_SECTIONS:
            # Not asked once a journalctl of this poll timed out; one that times out here stops the next.
            lines += [begin, f'if [ -n "$jh" ]; then {skipped}; else {cmd}; rc=$?; '
                             f"case $rc in {TIMED_OUT_STATUS}) jh={section.name};; esac; fi", end]
        elif section.name in NEWLINE_ADDED:
            lines += [begin, cmd, "rc=$?", "echo", end]
        else:
            lines += [begin, cmd, "rc=$?", end]
    if wanted & set(DERIVED_SECTIONS) and "holders" in wanted:
        # The PIDs from the table (a here-document: a delimiter in the text cannot end it, the shell
        # expands $holders after it has read the script), then their parents too: a `watch
        # nvidia-smi` loop holds nothing itself but keeps spawning holders. A table cut on the node
        # names no PID: the sections read by them are left out (not run), as the bastion leaves them.
        lines += [f'if [ "$hrc" != {OVER_CAP_WORD} ]; then', *_PID_LIST, *_PARENT_LIST, 'all=$pids${ppids:+,$ppids}']
        if "processes" in wanted:
            # Printed as ps prints them, not held in the shell (a `capped` read cost three processes
            # more): the bastion's reader bounds them as every other section. -q's refusal (an older
            # procps) is not printed, only -p's answer after it; one that timed out is not asked again
            # (the same ps would hang again). ps, not /proc: its start time and command line are the
            # identity a signal is checked against (backends/ssh/backend.signal_script reads them so).
            quick, pick = (f'{bound}ps -ww -o {PS_FORMAT} {flag} "$all"' for flag in (QUICK, PICK))
            retry_on = "0|124" if bound else "0"
            lines += ['echo "$m begin processes"',
                      f'if [ -n "$pids" ]; then {quick} 2>/dev/null; rc=$?; '
                      f'case $rc in {retry_on}) ;; *) {pick} 2>&1; rc=$?;; esac; else rc=0; fi',
                      'echo "$m end processes $rc"']
        if "cgroups" in wanted:
            lines += ['echo "$m begin cgroups"', *_CGROUP_LIST, 'echo "$m end cgroups $rc"']
        if "jobs" in wanted:
            sudo_prefix = bound + ("sudo -n " if sudo else "")
            lines += ['echo "$m begin jobs"',
                      f'if [ -n "$pids" ] && command -v scontrol >/dev/null 2>&1; then {sudo_prefix}scontrol '
                      'listpids 2>&1; rc=$?; else rc=0; fi',
                      'echo "$m end jobs $rc"']
        lines.append("fi")
    return "\n".join(lines) + "\n"


def _files_read(names: list[str], bound: str) -> list[str]:
    """The file sections ``names`` (in order) read by one ``cat``: each file is followed by a here-document
    (/proc/self/fd/3, 4, ...) that ends its section (after one newline more for NEWLINE_ADDED) and begins the next."""
    paths: list[str] = []
    docs: list[str] = []
    redirections: list[str] = []
    for i, name in enumerate(names):
        fd = 3 + i
        paths += [*next(s.argv for s in SECTIONS if s.name == name)[1:], f"/proc/self/fd/{fd}"]
        redirections.append(f"{fd}<<NVLS_F{fd}")
        docs += ([""] if name in NEWLINE_ADDED else []) + [f"$m end {name} {FILE_STATUS_WORD}"]
        if i + 1 < len(names):
            docs.append(f"$m begin {names[i + 1]}")
        docs.append(f"NVLS_F{fd}")
    return [f'echo "$m begin {names[0]}"',
            f"{bound}cat {' '.join(shlex.quote(p) for p in paths)} 2>&1 {' '.join(redirections)}", *docs]


__all__ = ["probe_script", "written_script"]
