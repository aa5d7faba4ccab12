"""The one table of key bindings, without Textual: ids, default keys, scopes, and the keymap check.

Every action the console offers is a :class:`BindingSpec` here, with a stable id (the name a user
remaps in ``config.toml``), a default key, a short description for the footer, a tooltip, and a
``destructive`` flag: destructive actions change a node, so ``--read-only`` hides and refuses them.
The table is pure data so that the config file can be checked against it wherever it is read
(:mod:`nvls_tui.settings`, for every subcommand); :mod:`nvls_tui.console.bindings` turns it into Textual bindings.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class BindingSpec:
    """One action of the console.

    Attributes:
        id: stable binding id (``node.sigterm``); the key used in the config file's ``[keymap]``.
        key: default key (Textual key names, comma-separated for several).
        action: the action method name without ``action_`` (``sigterm``), on the scope's screen.
        description: short words for the footer and help (``SIGTERM``).
        tooltip: one sentence saying what happens, for the footer tooltip and the help screen.
        scope: ``app``, ``fleet``, ``node``, ``runbook``, ``search`` (keys of a screen that can be searched) or
            ``logs`` (the node's logs screen).
        destructive: True when the action changes a node (hidden and refused in read-only mode).
        show: shown in the footer.
        palette: the palette title (``topic: verb object``; ``{host}`` is filled in), or None.
        priority: run as the key arrives, before the keys behind it are handed out: for keys that open
            the widget those keys are meant for (``/`` the filter box, ``r`` the plan's typed names).
            Its action raises ``SkipAction`` where the key is text (the filter box has the focus).
    """

    id: str
    key: str
    action: str
    description: str
    tooltip: str
    scope: str
    destructive: bool = False
    show: bool = True
    palette: str | None = None
    priority: bool = False


SPECS: tuple[BindingSpec, ...] = (
    # app: reachable from every screen
    BindingSpec("app.help", "question_mark", "help", "Help", "Every key, what it does, and its binding id.",
                "app", palette="app: Show help"),
    BindingSpec("app.back", "escape", "back", "Back", "Close this screen and go back to the previous one.",
                "app", show=False),
    BindingSpec("app.quit", "q", "quit", "Quit",
                "Leave the console (asks first while an action is still running).", "app",
                palette="app: Quit"),
    # fleet screen
    BindingSpec("fleet.open", "enter", "open_node", "Open", "Open the node under the cursor: GPUs, units, "
                "holders, findings.", "fleet"),
    BindingSpec("fleet.filter", "slash", "filter", "Filter", "Show only nodes whose host, verdict or "
                "finding codes contain the text typed.", "fleet", palette="fleet: Filter nodes", priority=True),
    BindingSpec("fleet.sort", "v", "toggle_sort", "Sort", "Toggle between fleet order and verdict order "
                "(broken nodes first); from any other order, back to verdict order.", "fleet",
                palette="fleet: Toggle sort by verdict"),
    BindingSpec("fleet.command", "colon", "command", "Command", "The command line (as k9s's): :node HOST, :logs "
                "HOST, :sort COLUMN, :filter TEXT, :help, :q, with completion (Tab).", "fleet", show=False,
                palette="fleet: Command line", priority=True),
    BindingSpec("fleet.sort_by", "O", "sort_by", "Sort by", "Sort the fleet by any column shown (a picker); "
                "the same column again reverses it; the top line says the order.", "fleet", show=False,
                palette="fleet: Sort by a column"),
    BindingSpec("fleet.columns", "c", "choose_columns", "Columns", "Show or hide the grid's optional columns "
                "(FM unit, versions, holders, kernel, smoke, age ...) for this session.", "fleet", show=False,
                palette="fleet: Choose the grid's columns"),
    BindingSpec("fleet.poll", "p", "poll_all", "Poll", "Poll every node now instead of waiting.", "fleet",
                palette="fleet: Poll every node now"),
    BindingSpec("fleet.select", "space", "toggle_node", "Select", "Select or unselect the node under the "
                "cursor for a repair (marked ●), then moves the cursor down: space, space picks the next nodes "
                "too, so check the names the plan asks you to type.", "fleet", palette=None),
    BindingSpec("fleet.down", "j", "cursor_down", "Down", "Move the cursor down a node (as ↓).", "fleet", show=False),
    BindingSpec("fleet.up", "k", "cursor_up", "Up", "Move the cursor up a node (as ↑).", "fleet", show=False),
    BindingSpec("fleet.top", "g,home", "cursor_top", "Top", "Move the cursor to the first node.", "fleet",
                show=False),
    BindingSpec("fleet.bottom", "G,end", "cursor_bottom", "Bottom", "Move the cursor to the last node.", "fleet",
                show=False),
    BindingSpec("fleet.next_broken", "n", "next_broken", "Next broken", "Jump to the next broken or unreachable "
                "node (wraps around).", "fleet", palette="fleet: Jump to the next broken node"),
    BindingSpec("fleet.prev_broken", "N", "prev_broken", "Prev broken", "Jump to the previous broken or "
                "unreachable node (wraps around).", "fleet", show=False),
    BindingSpec("fleet.repair", "r", "repair", "Repair", "Dry-run the repair of the selected nodes, then type "
                "their names to run it.", "fleet",
                destructive=True, palette="fleet: Repair selected nodes", priority=True),
    BindingSpec("fleet.approve", "a", "approve", "Approve", "Autopilot ask mode (--autopilot ask): open the plan of "
                "the repair the autopilot proposes for the node under the cursor (marked ⚑); typing its name runs "
                "it, counted in the autopilot's budget and breaker. Nothing runs without this.", "fleet",
                destructive=True, palette="autopilot: Approve the proposed repair under the cursor"),
    BindingSpec("fleet.proposals", "P", "proposals", "Proposals", "Autopilot ask mode: every node the autopilot "
                "proposes, holds by a limit (which) or leaves to a person, one line each, with the breaker; Enter "
                "goes to the node (a approves there).", "fleet", show=False,
                palette="autopilot: Show the proposals"),
    BindingSpec("fleet.yank", "y", "yank", "Yank", "Copy the host under the cursor to the clipboard (OSC 52); "
                "a toast says what was copied.", "fleet", show=False),
    BindingSpec("fleet.ssh", "S", "ssh", "ssh", "Suspend the console and ssh to the node under the cursor with "
                "the console's own SSH options (config, known_hosts, user, port, identity, jump); leave the shell "
                "to come back. Read-only mode keeps it: the shell is the operator's own.", "fleet", show=False,
                palette="fleet: ssh to the node under the cursor"),
    # node screen
    BindingSpec("node.select", "space", "toggle_holder", "Select", "Select or unselect the holder under "
                "the cursor.", "node", palette=None),
    BindingSpec("node.select_all", "a", "select_all", "All", "Select every holder, or clear the selection "
                "when all are selected.", "node", palette="holders: Select all on {host}"),
    BindingSpec("node.sigterm", "t", "sigterm", "SIGTERM", "Send SIGTERM to the selected holders after a "
                "confirmation; each PID is re-checked first.", "node", destructive=True,
                palette="holders: SIGTERM selected on {host}"),
    BindingSpec("node.unit_stop", "s", "stop_unit", "Stop", "Stop the unit under the cursor in the "
                "units table (confirmed).", "node", destructive=True),
    BindingSpec("node.unit_start", "u", "start_unit", "Start", "Start the unit under the cursor in "
                "the units table (confirmed).", "node", destructive=True),
    BindingSpec("node.poll", "p", "poll_node", "Poll", "Poll this node now.", "node",
                palette="node: Poll {host} now"),
    BindingSpec("node.reset", "R", "reset_gpus", "Reset", "nvidia-smi -r, refused while a device is held "
                "(type the node name to confirm).", "node",
                destructive=True, palette="node: Reset GPUs of {host}"),
    BindingSpec("node.fm_restart", "F", "restart_fm", "FM restart", "Restart Fabric Manager, watch the GPUs register "
                "(type the node name).", "node", destructive=True,
                palette="node: Restart Fabric Manager on {host}"),
    BindingSpec("node.smoke", "T", "smoke_test", "Smoke test", "NVLS all_reduce_perf with a live bandwidth plot "
                "(confirmed).", "node", destructive=True,
                palette="node: Run the NVLS smoke test on {host}"),
    BindingSpec("node.restore", "U", "restore_repair", "Restore", "Put back every unit and setting an "
                "interrupted repair changed, from the record on the node (confirmed).", "node",
                destructive=True, palette="node: Restore the interrupted repair on {host}"),
    BindingSpec("node.yank", "y", "yank", "Yank", "Copy to the clipboard (OSC 52): the holder's command where the "
                "holders table has the focus, else the host; the palette's yank: entries copy a finding, the audit "
                "path or the --restore command.", "node"),
    BindingSpec("node.describe", "d", "describe", "Describe", "The node's Kubernetes side in full (readiness, "
                "taints, labels, annotations, every pod on it) and its Slurm side (state, reason, jobs). Read-only.",
                "node", show=False, palette="node: Describe {host}"),
    BindingSpec("node.xray", "x", "xray", "X-ray", "node → GPU → holder → pod, job or unit, as a tree: which process "
                "holds which GPU, on behalf of what. Read-only.", "node", show=False,
                palette="node: X-ray of {host}"),
    BindingSpec("node.logs", "l", "logs", "Logs", "The node's logs in three tabs: Fabric Manager's journal of "
                "this boot, the kernel log since the boot (the ring buffer where the journal falls short) and the "
                "node's past repairs as reports. Read-only reads.", "node",
                palette="node: Show the logs of {host}"),
    BindingSpec("node.ssh", "S", "ssh", "ssh", "Suspend the console and ssh to this node with the console's own "
                "SSH options (config, known_hosts, user, port, identity, jump); leave the shell to come back. "
                "Read-only mode keeps it: the shell is the operator's own.", "node",
                palette="node: ssh to {host}"),
    # runbook screen (a repair in progress or finished)
    BindingSpec("runbook.abort", "a", "abort", "Abort node", "Abort the repair of the node whose column has "
                "the focus (confirmed); it is put back as it was, the others go on.", "runbook",
                palette="repair: Abort this node and restore it"),
    BindingSpec("runbook.abort_all", "A", "abort_all", "Abort all", "Abort the repair of every node still "
                "running (confirmed); each is put back as it was.", "runbook",
                palette="repair: Abort every node and restore them"),
    BindingSpec("runbook.sigterm", "t", "sigterm_holders", "SIGTERM", "SIGTERM the holders selected at "
                "verify-no-holders (identity re-checked).", "runbook", destructive=True),
    BindingSpec("runbook.report", "e", "report", "Report", "Write the Markdown incident report next to the "
                "audit log.", "runbook", palette="repair: Write the incident report"),
)

SEARCH = (
    # search inside a screen that has one (the node screen, the repair screen, the help): these come
    # before the screen's own keys, and n/N/Esc answer only while a search is on; without one they are
    # the screen's (Esc goes back). The node screen's smoke test is T, not n: a key that takes a node's
    # GPUs for minutes never shares a key with stepping through matches.
    BindingSpec("search.start", "slash", "search", "Search", "Search this screen as you type (tables, output, "
                "findings); Enter keeps the search, n/N step through the matches, Esc ends it.", "search",
                priority=True),
    BindingSpec("search.next", "n", "search_next", "Next match", "While a search is on: the next match "
                "(wraps around); the border says which of how many (3/7).", "search"),
    BindingSpec("search.prev", "N", "search_prev", "Prev match", "While a search is on: the previous match "
                "(wraps around).", "search"),
    BindingSpec("search.end", "escape", "search_end", "End search", "While a search is on: end it; the "
                "focus goes back where it was.", "search", show=False),
)
SPECS = SPECS + SEARCH

LOGS = (
    # the logs screen (``l`` in the node screen): three tabs of read-only reads, searched with the search keys.
    BindingSpec("logs.fm", "1", "show_fm", "FM journal", "Fabric Manager's journal of this boot "
                "(journalctl -u nvidia-fabricmanager -b).", "logs"),
    BindingSpec("logs.kernel", "2", "show_kernel", "Kernel", "The kernel log since the boot (journalctl -k "
                "-b) with its coverage; the ring buffer (dmesg) too where the journal falls short or is missing.",
                "logs"),
    BindingSpec("logs.past", "3", "show_past", "Past repairs", "The node's past repairs: the audit logs "
                "that name it, newest first, each opened as its incident report.", "logs"),
    BindingSpec("logs.reread", "p", "reread", "Read again", "Read the three logs again.", "logs",
                palette="logs: Read the logs of {host} again"),
    BindingSpec("logs.follow", "f", "follow", "Follow", "Follow the tab shown (FM's journal or the kernel log): read "
                "it again every few seconds, its newest lines in view, until f again.", "logs",
                palette="logs: Follow the logs of {host}"),
)
SPECS = SPECS + LOGS

SCOPES = ("app", "fleet", "node", "runbook", "search", "logs")


def spec(binding_id: str) -> BindingSpec:
    """The spec with id ``binding_id`` (KeyError when there is none)."""
    for s in SPECS:
        if s.id == binding_id:
            return s
    raise KeyError(binding_id)


def spec_of_action(scope: str, action: str) -> BindingSpec | None:
    """The spec of ``scope`` whose action is ``action`` (None when the scope binds no such action)."""
    return next((s for s in SPECS if s.scope == scope and s.action == action), None)


def specs_for(scope: str) -> tuple[BindingSpec, ...]:
    """The specs of one scope, in table order."""
    return tuple(s for s in SPECS if s.scope == scope)


def destructive_actions(scope: str | None = None) -> frozenset[str]:
    """Action names that change a node (of one scope, or of every scope)."""
    return frozenset(s.action for s in SPECS if s.destructive and (scope is None or s.scope == scope))


def keys_of(keys: str) -> tuple[str, ...]:
    """The keys of one binding (``"g,home"`` -> ``("g", "home")``)."""
    return tuple(k.strip() for k in keys.split(",") if k.strip())


def keymap_problem(keymap: dict[str, object]) -> str | None:
    """The first thing wrong with a user's ``[keymap]`` as one sentence, or None when it can be applied.

    Wrong: an id that names no binding, a key that is not a non-empty string, and a key that two bindings
    answer to on one screen (a screen's binding shadows the app's: ``"fleet.sort" = "q"`` would leave
    the fleet screen without a way to quit).
    """
    known = {s.id for s in SPECS}
    for binding_id, keys in keymap.items():
        if binding_id not in known:
            return f"unknown binding id {binding_id!r} in [keymap] (`?` in the console lists the ids)"
        if not isinstance(keys, str) or not keys_of(keys):
            return f"[keymap] {binding_id!r} needs a key name such as \"k\" or \"ctrl+k\""
    for scope in SCOPES:
        # The app's bindings answer on every screen, so each screen's keys share one space with them. The
        # search keys answer only while a search is on, before the screen's and the app's: they may share
        # a key with those (n is the fleet's next broken node), never with each other.
        active = specs_for(scope) if scope in ("app", "search") else specs_for("app") + specs_for(scope)
        owner: dict[str, str] = {}
        for s in active:
            for key in keys_of(str(keymap.get(s.id, s.key))):
                if key in owner:
                    return (f"[keymap]: {key!r} is taken by both {owner[key]} and {s.id} "
                            f"(on the {scope} screen); give one of them another key")
                owner[key] = s.id
    return None


def current_key(binding_id: str, keymap: dict[str, str]) -> str:
    """The key a binding answers to once the user's keymap is applied."""
    return keymap.get(binding_id, spec(binding_id).key)
