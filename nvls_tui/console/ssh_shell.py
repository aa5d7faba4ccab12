"""``S`` in the console: the operator's own ``ssh`` to a node, with the console's SSH options.

The console reaches nodes through asyncssh (:mod:`nvls_tui.backends.ssh`); an interactive shell is
OpenSSH's ``ssh``, run as an argv list (no shell between) while the console is suspended. Its options
are the transport's, so the shell reaches the node the console polls and trusts the same host keys:

- ``--ssh-config`` -> ``-F``; ``-i`` -> ``-i`` (and ``IdentitiesOnly``, as asyncssh offers only those keys);
- ``--known-hosts`` -> that file alone (``GlobalKnownHostsFile=/dev/null``), as the transport reads it;
  else ssh reads the config's or its default files, as the transport does;
- those paths read as given (:func:`literal`): ssh expands ``%`` tokens and ``${VAR}`` in identity and
  known-hosts files, asyncssh does not, so ``%h`` in a path would make the shell trust another file;
- ``StrictHostKeyChecking=yes`` always: the console never connects to an unknown or changed host key,
  whatever the config says (options on the command line win over the config file);
- the target's user (or ``--user``) -> ``-l``, its port -> ``-p``;
- ``--jump`` -> a ``ProxyCommand`` running this same ``ssh`` with the same options to the jump host
  (``ssh -J`` would drop ``-i`` and the known_hosts file for the jump).

A node the console does not reach over SSH (simulated, this machine, a replay) has no shell to open:
:class:`NoShell` says why in one sentence. ``--read-only`` keeps the key: the shell is the operator's.
"""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Sequence

from nvls_tui.backends.base import Backend, BackendOptions, InvalidArgument
from nvls_tui.backends.ssh.backend import SshBackend
from nvls_tui.backends.ssh.pool import identities
from nvls_tui.backends.ssh.targets import SshTarget, parse_target

# The variable a path's "${" is written through (literal): ssh expands "${NVLS_TUI_DOLLAR}" to "$".
DOLLAR = "NVLS_TUI_DOLLAR"


class NoShell(Exception):
    """The node has no shell to open from here; ``str()`` is one sentence for the operator."""


def _option_value(text: str) -> str:
    """A value for ``-o Key=value``: ssh splits an option's value on blanks unless it is in double quotes."""
    if any(c.isspace() for c in text) or '"' in text:
        if '"' in text:
            raise NoShell(f"the path {text!r} holds a double quote, which ssh's -o cannot carry")
        return f'"{text}"'
    return text


def literal(path: str) -> str:
    """``path`` written so that ssh's expansion of ``IdentityFile`` and ``UserKnownHostsFile`` gives it back.

    ssh turns ``%%`` into ``%``; ``${`` has no escape, but what a variable expands to is not expanded
    again, so ``${`` is written ``${NVLS_TUI_DOLLAR}{`` with :data:`DOLLAR` set to ``$`` in ssh's
    environment (:func:`ssh_argv` runs it through ``env``; a ProxyCommand's ssh inherits it).
    """
    return path.replace("%", "%%").replace("${", "${" + DOLLAR + "}{")


def reach_options(options: BackendOptions, user: str | None, port: int | None) -> list[str]:
    """The ``ssh`` options (no host) that match the transport's: config, identity, host keys, user, port."""
    argv: list[str] = []
    if options.ssh_config:
        argv += ["-F", os.path.expanduser(options.ssh_config)]  # -F is read as given
    keys = identities(options)
    for key in keys:
        # -i checks the file as given before it expands it: a path to escape goes as IdentityFile.
        argv += ["-i", key] if literal(key) == key else ["-o", f"IdentityFile={_option_value(literal(key))}"]
    if keys:
        argv += ["-o", "IdentitiesOnly=yes"]
    if options.known_hosts:
        path = literal(os.path.expanduser(options.known_hosts))
        argv += ["-o", f"UserKnownHostsFile={_option_value(path)}", "-o", "GlobalKnownHostsFile=/dev/null"]
    argv += ["-o", "StrictHostKeyChecking=yes"]
    if user:
        argv += ["-l", user]
    if port is not None:
        argv += ["-p", str(port)]
    return argv


def _jump(ssh: str, options: BackendOptions) -> list[str]:
    """``-o ProxyCommand=...``: the same ssh, the same options, to the jump host (``-W`` to the node)."""
    jumps = parse_target(options.jump or "")
    if len(jumps) != 1:
        raise NoShell(f"the jump host {options.jump!r} names {len(jumps)} hosts; give exactly one")
    jump = jumps[0]
    words = [ssh, *reach_options(options, jump.user or options.user, jump.port), "-W", "[%h]:%p", "--", jump.host]
    # ssh expands %-tokens in ProxyCommand and runs it with the operator's shell: every word but -W's is
    # quoted for the shell and has its % doubled.
    line = " ".join(w if w == "[%h]:%p" else shlex.quote(w).replace("%", "%%") for w in words)
    return ["-o", f"ProxyCommand={line}"]


def ssh_argv(target: SshTarget, options: BackendOptions, ssh: str = "ssh") -> list[str]:
    """The argv of an interactive ``ssh`` to ``target`` with the transport's options (``--`` before the host).

    Raises:
        NoShell: the jump host cannot be used, or a path cannot be passed to ssh.
    """
    argv = [ssh, *reach_options(options, target.user or options.user, target.port)]
    if options.jump:
        try:
            argv += _jump(ssh, options)
        except InvalidArgument as exc:
            raise NoShell(str(exc)) from None
    if any(DOLLAR in word for word in argv):  # a path holds ${ (literal): ssh must have the variable
        argv = [shutil.which("env") or "env", f"{DOLLAR}=$", *argv]
    return [*argv, "--", target.host]


def why_no_shell(backend: Backend) -> str:
    """Why ``backend``'s node has no shell to open with ssh (one sentence)."""
    host = backend.host
    kind = type(backend).__name__
    if backend.simulated:
        return f"{host} is simulated: there is no machine to ssh to (the simulator answers inside nvls-tui)."
    if kind == "LocalBackend":
        return f"{host} is this machine, read through NVML and /proc: there is nothing to ssh to."
    if kind == "RecordedBackend":
        return f"{host} is a replay of a captured probe output: it reaches no machine."
    return f"{host} is not reached over SSH: there is no shell to open."


def shell_for(backend: Backend, which: str | None = None) -> list[str]:
    """The argv of an interactive ``ssh`` to ``backend``'s node.

    Args:
        backend: the console's backend of the node.
        which: the ``ssh`` binary (default: found on PATH).

    Raises:
        NoShell: the node is not reached over SSH, or there is no ``ssh`` on this machine.
    """
    if not isinstance(backend, SshBackend):
        raise NoShell(why_no_shell(backend))
    ssh = which or shutil.which("ssh")
    if not ssh:
        raise NoShell("there is no ssh on this machine (the OpenSSH client, apt package openssh-client).")
    return ssh_argv(backend.target, backend.options, ssh)


def shown(argv: Sequence[str]) -> str:
    """The argv as one line to show the operator (as typed in a shell)."""
    return shlex.join(argv)


__all__ = ["DOLLAR", "NoShell", "literal", "reach_options", "shell_for", "shown", "ssh_argv", "why_no_shell"]
