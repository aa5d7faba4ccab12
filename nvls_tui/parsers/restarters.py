"""What may restart ``nvidia-*`` units behind the operator: needrestart's configuration and apt's periodic runs.

needrestart runs from apt's ``DPkg::Post-Invoke`` hook after every package change and restarts the
services whose binaries map outdated libraries (a libc update: Fabric Manager among them). Its
configuration is Perl, read with ``eval``: ``/etc/needrestart/needrestart.conf``, then
``/etc/needrestart/conf.d/*.conf`` in sorted order. Only what decides whether a unit is restarted is
read here, just enough of the language for that:

- ``$nrconf{restart}``: ``a`` restarts automatically (unattended upgrades too), ``i`` asks on a terminal
  (and only lists when nobody can be asked), ``l`` only lists; ``$nrconf{ui_mode} = 'e'`` only lists too;
- ``$nrconf{override_rc}``: regexes over the unit name, 0 to leave it alone (the first key that matches
  wins, in Perl's hash order: random, so keys that match and disagree are uncertain);
- ``$nrconf{blacklist_rc}``: regexes of units it ignores completely;
- ``$nrconf{defno}``: with no override, 1 leaves a unit alone.

A statement about these keys that is not understood makes the answer uncertain (fail closed: a unit
it may restart is counted as restarted). ``apt-config dump APT::Periodic`` says whether apt's daily
runs install upgrades unattended (``APT::Periodic::Unattended-Upgrade``). Pure; never raises.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from nvls_tui.parsers.base import Parsed

NEEDRESTART_CONF = "/etc/needrestart/needrestart.conf"
NEEDRESTART_CONF_D = "/etc/needrestart/conf.d"
# apt's timers and the services they start, and unattended-upgrades' unit (installed with its package).
APT_TIMERS = ("apt-daily.timer", "apt-daily-upgrade.timer")
APT_SERVICES = ("apt-daily.service", "apt-daily-upgrade.service")
UNATTENDED_UNIT = "unattended-upgrades.service"
RESTARTER_UNITS = (*APT_TIMERS, *APT_SERVICES, UNATTENDED_UNIT)
# The one-line prevention the finding gives (a conf.d snippet needrestart reads after its own file).
PREVENTION_FILE = f"{NEEDRESTART_CONF_D}/nvidia.conf"
PREVENTION_LINE = "$nrconf{override_rc}{qr(^nvidia-)} = 0;"

# needrestart's own defaults (the script's %nrconf), before any configuration file is read.
_DEFAULT_MODE, _DEFAULT_UI = "i", "a"
_KEYS = frozenset({"restart", "ui_mode", "defno", "override_rc", "blacklist_rc"})
# Perl's quote-like delimiters and their closing partners.
_CLOSE = {"(": ")", "{": "}", "[": "]", "<": ">"}
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


@dataclass(frozen=True, slots=True)
class NeedrestartConfig:
    """What needrestart's configuration decides for restarts.

    Attributes:
        mode: the restart mode in effect: ``a`` (automatic), ``i`` (asks on a terminal), ``l`` (lists only).
        defno: with no override, a unit is left alone (``$nrconf{defno}``).
        override: ``(regex, restart?)`` pairs of ``$nrconf{override_rc}``.
        blacklist: regexes of ``$nrconf{blacklist_rc}``.
        uncertain: what in the configuration could not be read (each makes a unit it may touch count as restarted).
    """

    mode: str = _DEFAULT_MODE
    defno: bool = False
    override: tuple[tuple[str, bool], ...] = ()
    blacklist: tuple[str, ...] = ()
    uncertain: tuple[str, ...] = ()

    def selects(self, unit: str) -> bool:
        """Whether needrestart would pick ``unit`` (``nvidia-fabricmanager.service``) once its binary is outdated:
        restart it in mode ``a``, offer it pre-selected in mode ``i``. Fail closed: a regex that cannot be read
        never takes a unit out (blacklist, override 0), and may put it in (override 1)."""
        if any(_search(rx, unit) is True for rx in self.blacklist):
            return False
        said = {restart for rx, restart in self.override
                if (found := _search(rx, unit)) is True or (found is None and restart)}
        if not said:
            return not self.defno
        return True in said  # keys that match and disagree: Perl's hash order decides; count it restarted


def _search(regex: str, unit: str) -> bool | None:
    """Perl's ``$unit =~ /regex/`` as far as Python's re reads the same regex (None: it could not)."""
    try:
        return re.search(regex, unit) is not None
    except re.error:
        return None


@dataclass(frozen=True, slots=True)
class _Tok:
    kind: str  # var (name: the nrconf key or the variable), rx, str, num, word, punct
    text: str


def _quoted(text: str, i: int) -> tuple[str, int] | None:
    """The body of a quote-like construct whose opening delimiter is at ``i``, and the index after it."""
    if i >= len(text):
        return None
    opener = text[i]
    if opener.isalnum() or opener.isspace() or opener == "_":
        return None
    closer = _CLOSE.get(opener, opener)
    depth, j, body = 1, i + 1, []
    while j < len(text):
        c = text[j]
        if c == "\\" and j + 1 < len(text):
            body.append(text[j:j + 2])
            j += 2
            continue
        if c == closer and opener != closer:
            depth -= 1
            if depth == 0:
                return "".join(body), j + 1
        elif c == opener and opener != closer:
            depth += 1
        elif c == closer:
            return "".join(body), j + 1
        body.append(c)
        j += 1
    return None


def _lex(text: str) -> tuple[list[_Tok], list[str]]:
    """Perl tokens, as far as needrestart's configuration needs them; comments dropped."""
    toks: list[_Tok] = []
    problems: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c.isspace():
            i += 1
        elif c == "#":
            end = text.find("\n", i)
            i = len(text) if end < 0 else end
        elif c == "$":
            m = re.compile(r"\$nrconf\s*\{\s*(?:'([^']*)'|\"([^\"]*)\"|(\w+))\s*\}").match(text, i)
            if m:
                toks.append(_Tok("var", next(g for g in m.groups() if g is not None)))
                i = m.end()
            else:
                m2 = re.compile(r"\$(?:\w+|.)").match(text, i)
                toks.append(_Tok("word", m2.group(0) if m2 else "$"))
                i = m2.end() if m2 else i + 1
        elif c in "'\"":
            q = _quoted(text, i)
            if q is None:
                problems.append("a string that does not end")
                break
            toks.append(_Tok("str", q[0]))
            i = q[1]
        elif c.isalpha() or c == "_":
            m = re.compile(r"\w+").match(text, i)
            assert m is not None
            word = m.group(0)
            i = m.end()
            if word in ("qr", "q", "qq", "m"):
                j = i
                while j < len(text) and text[j].isspace() and word != "qr":
                    j += 1
                q = _quoted(text, j if word != "qr" else i) if not (j < len(text) and text[j] in "=,;") else None
                if q is not None:
                    body, i = q
                    flags = re.compile(r"[msixpodualngcer]*").match(text, i)
                    mods = flags.group(0) if flags else ""
                    i += len(mods)
                    if word in ("qr", "m"):
                        py = "".join(ch for ch in mods if ch in "imsx")
                        toks.append(_Tok("rx", f"(?{py}){body}" if py else body))
                    else:
                        toks.append(_Tok("str", body))
                    continue
            toks.append(_Tok("word", word))
        elif _NUMBER.match(text, i):
            m = _NUMBER.match(text, i)
            assert m is not None
            toks.append(_Tok("num", m.group(0)))
            i = m.end()
        elif text.startswith("=>", i) or text.startswith("->", i):
            toks.append(_Tok("punct", text[i:i + 2]))
            i += 2
        else:
            toks.append(_Tok("punct", c))
            i += 1
    return toks, problems


def _truthy(tok: _Tok | None) -> bool | None:
    """Perl truth of a literal (None: not a literal)."""
    if tok is None or tok.kind not in ("num", "str"):
        return None
    if tok.kind == "num":
        return float(tok.text) != 0
    return tok.text not in ("", "0")


class _Reader:
    """Walks the tokens and applies the statements about the keys that matter to a config."""

    def __init__(self, toks: list[_Tok]) -> None:
        self.toks = toks
        self.i = 0
        self.mode, self.ui, self.defno = _DEFAULT_MODE, _DEFAULT_UI, False
        self.override: dict[str, bool] = {}
        self.blacklist: list[str] = []
        self.uncertain: list[str] = []

    def peek(self, k: int = 0) -> _Tok | None:
        return self.toks[self.i + k] if self.i + k < len(self.toks) else None

    def is_punct(self, text: str, k: int = 0) -> bool:
        tok = self.peek(k)
        return tok is not None and tok.kind == "punct" and tok.text == text

    def run(self) -> None:
        while self.i < len(self.toks):
            tok = self.toks[self.i]
            if tok.kind == "var" and tok.text in _KEYS:
                start = self.i
                if not self._statement(tok.text):
                    self._unsure(tok.text, start)
            elif tok.kind == "word" and tok.text in ("push", "unshift") and self._push():
                continue
            else:
                self.i += 1

    def _unsure(self, key: str, start: int) -> None:
        """A statement about ``key`` that is not understood: skip to its end, and say so."""
        before = self.toks[start - 1] if start > 0 else None
        if key not in ("override_rc", "blacklist_rc", "restart", "ui_mode", "defno"):
            return
        # A read (`$nrconf{restart} eq 'a'`) changes nothing; anything else might.
        nxt = self.toks[start + 1] if start + 1 < len(self.toks) else None
        if nxt is not None and nxt.kind == "punct" and nxt.text in (")", ";", ">", "<", "!") and \
                (before is None or before.text != "delete"):
            self.i = start + 1
            return
        self.uncertain.append(f"a statement about $nrconf{{{key}}} that was not understood")
        self.i = start + 1
        while self.i < len(self.toks) and not self.is_punct(";"):
            self.i += 1

    def _statement(self, key: str) -> bool:
        """``$nrconf{key} = VALUE;`` or ``$nrconf{key}{K} = V;`` (also ``->{K}``): True when applied."""
        self.i += 1
        if self.is_punct("->") and self.is_punct("{", 1):
            self.i += 1
        if self.is_punct("{"):
            sub = self.peek(1)
            if sub is None or not self.is_punct("}", 2) or not self.is_punct("=", 3):
                return False
            value = _truthy(self.peek(4))
            if key != "override_rc" or value is None or sub.kind not in ("rx", "str", "word", "num"):
                return False
            self.override[sub.text] = value
            self.i += 5
            return True
        if not self.is_punct("="):
            return False
        self.i += 1
        if key in ("restart", "ui_mode", "defno"):
            tok = self.peek()
            if tok is None or tok.kind not in ("str", "num"):
                return False
            if key == "defno":
                self.defno = bool(_truthy(tok))
            elif key == "restart":
                if tok.text not in ("a", "i", "l"):
                    self.uncertain.append(f"$nrconf{{restart}} is {tok.text!r}, not one of a, i, l")
                self.mode = tok.text
            else:
                self.ui = tok.text
            self.i += 1
            return True
        if key == "override_rc":
            pairs = self._hash()
            if pairs is None:
                return False
            self.override = dict(pairs)
            return True
        items = self._list()
        if items is None:
            return False
        self.blacklist = items
        return True

    def _hash(self) -> list[tuple[str, bool]] | None:
        """``{ K => V, ... }``."""
        if not self.is_punct("{"):
            return None
        self.i += 1
        pairs: list[tuple[str, bool]] = []
        while not self.is_punct("}"):
            key, arrow, value = self.peek(), self.is_punct("=>", 1), _truthy(self.peek(2))
            if key is None or not arrow or value is None or key.kind not in ("rx", "str", "word", "num"):
                return None
            pairs.append((key.text, value))
            self.i += 3
            if self.is_punct(","):
                self.i += 1
        self.i += 1
        return pairs

    def _list(self) -> list[str] | None:
        """``[ RX, ... ]``."""
        if not self.is_punct("["):
            return None
        self.i += 1
        items: list[str] = []
        while not self.is_punct("]"):
            tok = self.peek()
            if tok is None or tok.kind not in ("rx", "str"):
                return None
            items.append(tok.text)
            self.i += 1
            if self.is_punct(","):
                self.i += 1
        self.i += 1
        return items

    def _push(self) -> bool:
        """``push @{$nrconf{blacklist_rc}}, RX, ...;`` (True when it was one; other pushes are skipped)."""
        start = self.i
        self.i += 1
        if self.is_punct("("):
            self.i += 1
        if not (self.is_punct("@") and self.is_punct("{", 1)):
            self.i = start + 1
            return True
        var = self.peek(2)
        if var is None or var.kind != "var" or not self.is_punct("}", 3):
            self.i = start + 1
            return True
        self.i += 4
        added: list[str] = []
        while self.is_punct(","):
            tok = self.peek(1)
            if tok is None or tok.kind not in ("rx", "str"):
                break
            added.append(tok.text)
            self.i += 2
        if var.text == "blacklist_rc":
            self.blacklist += added
        elif var.text in _KEYS:
            self.uncertain.append(f"a push onto $nrconf{{{var.text}}} that was not understood")
        return True


def read_needrestart_config(text: str) -> NeedrestartConfig:
    """Apply the Perl of needrestart's configuration files (already in needrestart's order) to its defaults."""
    toks, problems = _lex(text)
    reader = _Reader(toks)
    reader.run()
    mode = "l" if reader.ui == "e" else reader.mode
    uncertain = [*problems, *reader.uncertain]
    for rx in [*reader.override, *reader.blacklist]:
        if _search(rx, "") is None:
            uncertain.append(f"the regex {rx!r} could not be read")
    return NeedrestartConfig(mode=mode if mode in ("a", "i", "l") else "a", defno=reader.defno,
                             override=tuple(reader.override.items()), blacklist=tuple(reader.blacklist),
                             uncertain=tuple(dict.fromkeys(uncertain)))


_GREP_LINE = re.compile(r"^(?P<path>/etc/needrestart/[^:]*):(?P<text>.*)$")
_GREP_ERROR = re.compile(r"^grep: (?P<path>[^:]+): (?P<why>.+)$")


def parse_needrestart(text: str) -> Parsed[NeedrestartConfig | None]:
    """``grep -rH --include=*.conf ^ /etc/needrestart/needrestart.conf /etc/needrestart/conf.d`` (stderr merged).

    Returns:
        The configuration in effect, or None when needrestart's configuration file is not there (it is not
        installed). Warnings name the lines that are neither a file's line nor grep's "No such file".
    """
    files: dict[str, list[str]] = {}
    warnings: list[str] = []
    absent: set[str] = set()
    for line in text.splitlines():
        if m := _GREP_LINE.match(line):
            files.setdefault(m.group("path"), []).append(m.group("text"))
        elif m := _GREP_ERROR.match(line):
            if m.group("why") == "No such file or directory":
                absent.add(m.group("path"))
            else:
                warnings.append(f"grep: {m.group('path')}: {m.group('why')}"[:200])
        elif line.strip():
            warnings.append(f"not a line of needrestart's configuration: {line[:120]}")
    if NEEDRESTART_CONF not in files:
        if NEEDRESTART_CONF not in absent and NEEDRESTART_CONF_D not in absent:
            warnings.append(f"{NEEDRESTART_CONF} was neither read nor reported absent")
        return Parsed(None, tuple(warnings))
    # needrestart.conf first, then conf.d/*.conf as Perl's sort orders them (by bytes).
    snippets = sorted((p for p in files if p.startswith(NEEDRESTART_CONF_D + "/") and p.endswith(".conf")),
                      key=lambda p: p.encode())
    text_in_order = "\n".join("\n".join(files[p]) for p in [NEEDRESTART_CONF, *snippets])
    return Parsed(read_needrestart_config(text_in_order), tuple(warnings))


_APT_LINE = re.compile(r'^(?P<key>[\w:.+-]+)\s+"(?P<value>[^"]*)";\s*$')


def parse_apt_periodic(text: str) -> Parsed[dict[str, str]]:
    """``apt-config dump APT::Periodic``: ``{"Unattended-Upgrade": "1", ...}`` (the names under APT::Periodic)."""
    values: dict[str, str] = {}
    warnings: list[str] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        m = _APT_LINE.match(line.strip())
        if m is None:
            warnings.append(f"not an apt-config line: {line[:120]}")
            continue
        key = m.group("key")
        if key.startswith("APT::Periodic::"):
            values[key.removeprefix("APT::Periodic::")] = m.group("value")
    return Parsed(values, tuple(warnings))


def unattended_upgrades_on(periodic: dict[str, str]) -> bool:
    """Whether apt's daily run (``apt.systemd.daily install``) runs unattended-upgrade: its interval is set and
    not 0, and ``APT::Periodic::Enable`` does not turn the daily runs off."""
    if periodic.get("Enable", "1").strip() == "0":
        return False
    value = periodic.get("Unattended-Upgrade", "0").strip()
    return value not in ("", "0")


__all__ = [
    "APT_SERVICES",
    "APT_TIMERS",
    "RESTARTER_UNITS",
    "UNATTENDED_UNIT",
    "NEEDRESTART_CONF",
    "NEEDRESTART_CONF_D",
    "PREVENTION_FILE",
    "PREVENTION_LINE",
    "NeedrestartConfig",
    "parse_apt_periodic",
    "parse_needrestart",
    "read_needrestart_config",
    "unattended_upgrades_on",
]
