"""SSH targets as operators write them: ``host``, ``user@host:port``, ``[::1]:22`` and node sets.

Everything is validated here, before any of it can reach a command line or a connection: a target
that could smuggle shell syntax or an option (``-oProxyCommand=...``) is refused with one sentence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from ClusterShell.NodeSet import NodeSet, NodeSetException

from nvls_tui.backends.base import InvalidArgument, validate_host
from nvls_tui.backends.nodesets import MAX_TARGETS, nodeset_size

_USER_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,31}$")
# What a host part may hold before node-set expansion: names, dots, commas and ``[01-04]`` ranges.
# ClusterShell's other operators (``!``, ``&``, ``^``, ``@group``) stay out on purpose.
_NODESET_RE = re.compile(r"^[A-Za-z0-9_.,\[\]-]+$")
_IPV6_RE = re.compile(r"^[0-9A-Fa-f:.]+$")
MAX_EXPANDED = MAX_TARGETS
# A hosts-file line longer than this is not a target (it is read no further).
MAX_LINE = 1024


@dataclass(frozen=True, slots=True)
class SshTarget:
    """One node reached over SSH.

    Attributes:
        host: host name or address (IPv6 without brackets).
        user: remote user, or None for the SSH config's or the local default.
        port: TCP port, or None for the SSH config's or 22.
    """

    host: str
    user: str | None = None
    port: int | None = None

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host and self.port is not None else self.host
        text = f"{self.user}@{host}" if self.user else host
        return f"{text}:{self.port}" if self.port is not None else text


def _refuse(text: str, reason: str) -> InvalidArgument:
    return InvalidArgument(f"refusing target {text!r}: {reason}")


def _split_user(text: str) -> tuple[str | None, str]:
    if "@" not in text:
        return None, text
    user, rest = text.split("@", 1)
    if not _USER_RE.match(user):
        raise _refuse(text, "the user name may hold only letters, digits and _.- and must not start with -")
    return user, rest


def _split_port(text: str, rest: str) -> tuple[str, int | None, bool]:
    """``rest`` -> (host part, port, bracketed IPv6)."""
    if rest.startswith("[") and "]" in rest and ":" in rest[1 : rest.index("]")]:
        host, after = rest[1:].split("]", 1)
        if not _IPV6_RE.match(host):
            raise _refuse(text, "the bracketed part is not an IPv6 address")
        if not after:
            return host, None, True
        if not after.startswith(":"):
            raise _refuse(text, "expected :PORT after the IPv6 address")
        return host, _port(text, after[1:]), True
    if rest.count(":") > 1:  # a bare IPv6 address has no port
        if not _IPV6_RE.match(rest):
            raise _refuse(text, "it is neither a host name nor an IPv6 address")
        return rest, None, True
    if ":" in rest:
        host, port_text = rest.rsplit(":", 1)
        return host, _port(text, port_text), False
    return rest, None, False


def _port(text: str, port_text: str) -> int:
    if not port_text.isdecimal() or not 0 < int(port_text) < 65536:
        raise _refuse(text, f"port {port_text!r} is not a number from 1 to 65535")
    return int(port_text)


def _expand(text: str, hostpart: str) -> list[str]:
    if not hostpart:
        raise _refuse(text, "no host name")
    if not _NODESET_RE.match(hostpart):
        raise _refuse(text, "it contains spaces or shell characters a host name cannot have")
    if "[" not in hostpart and "," not in hostpart:
        return [hostpart]
    size = nodeset_size(hostpart)  # counted from its ranges: NodeSet would build every name first
    if size is None:
        raise _refuse(text, "not a valid node set (names, commas and [a-b] ranges)")
    if size > MAX_EXPANDED:
        raise _refuse(text, f"the node set names {size:,} nodes (at most {MAX_EXPANDED:,})")
    try:
        nodes = NodeSet(hostpart)
    except (NodeSetException, ValueError) as exc:
        raise _refuse(text, f"not a valid node set ({exc})") from None
    return list(nodes)


def parse_target(text: str) -> list[SshTarget]:
    """Parse one target (possibly a node set) into SSH targets.

    Args:
        text: ``host``, ``user@host``, ``user@host:port``, ``[::1]:22``, ``gpu[01-64]`` or
            ``user@gpu[01-04]:2222``.

    Returns:
        One target per node, in node-set order.

    Raises:
        InvalidArgument: the text holds spaces, shell characters, a leading ``-`` or a bad port.
    """
    if not text or text != text.strip() or any(c.isspace() for c in text):
        raise _refuse(text, "it is empty or contains spaces")
    if text.startswith("-"):
        raise _refuse(text, "it starts with '-' and would be read as an option")
    user, rest = _split_user(text)
    host, port, ipv6 = _split_port(text, rest)
    hosts = [host] if ipv6 else _expand(text, host)
    targets = []
    for name in hosts:
        if name.startswith("-") or name.startswith("."):
            raise _refuse(text, f"host {name!r} starts with '{name[0]}'")
        try:
            validate_host(name)
        except InvalidArgument as exc:
            raise _refuse(text, str(exc)) from None
        targets.append(SshTarget(name, user, port))
    return targets


def parse_targets(texts: list[str]) -> list[SshTarget]:
    """Parse every target of the command line (or a hosts file), dropping repeats, keeping order.

    Raises:
        InvalidArgument: on the first target that is not valid (the message names it).
    """
    seen: dict[SshTarget, None] = {}
    for text in texts:
        for target in parse_target(text):
            seen.setdefault(target, None)
    return list(seen)


def read_hosts_file(path: str | Path) -> list[str]:
    """The targets of a hosts file: one per line; ``#`` starts a comment; blank lines are skipped.

    Raises:
        InvalidArgument: the file cannot be read (one sentence naming it).
    """
    try:
        with open(path, encoding="utf-8") as handle:
            return _hosts_lines(handle, str(path))
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidArgument(f"cannot read hosts file {str(path)!r}: {getattr(exc, 'strerror', None) or exc}") from None


def _hosts_lines(handle: TextIO, path: str) -> list[str]:
    """The target lines of an open hosts file, read no further than the cap (a line or the file)."""
    targets: list[str] = []
    number = 0
    while line := handle.readline(MAX_LINE + 1):
        number += 1
        if len(line) > MAX_LINE and not line.endswith("\n"):
            raise InvalidArgument(f"hosts file {path!r}: line {number} is longer than {MAX_LINE} characters")
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if len(targets) == MAX_TARGETS:  # every line names one target at least
            raise InvalidArgument(f"hosts file {path!r} names more targets than one run takes "
                                  f"(at most {MAX_TARGETS:,}); split the fleet into several runs")
        targets.append(line)
    return targets

