"""The commands of ``langgraph-repo``: each name, the function that runs it and the line
``--help`` lists for it, so a run imports the module of the command it runs and no other.

The app's groups (``app._Group``) list their commands from here and build one only when it
is run or its own help is asked for; ``--help`` prints the lines below without importing a
command module. tests/test_cli_registry.py checks the table against the functions: each
entry resolves, and its help line is the first sentence of its function's docstring (all
that click's listing ever shows of it, at any terminal width).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Command:
    """A command: ``target`` is ``module:function``, the module one of ``cli/``'s; ``group``
    the sub-group it belongs to (``store``, ``server``), None at the top."""

    name: str
    target: str
    help: str
    group: str | None = None


@dataclass(frozen=True)
class Group:
    """A group of subcommands under the top app (``store ls``); ``help`` is its whole help."""

    name: str
    help: str


#: every command, in the order ``--help`` lists them (a group's: those naming it)
COMMANDS: tuple[Command, ...] = (
    Command(
        "threads",
        "read:threads",
        "One row per thread: namespaces, checkpoints, latest step, last update, forks, waiting interrupts.",
    ),
    Command(
        "history",
        "read:history",
        "Checkpoints newest first: step, source, the node(s) whose writes made it, parent; forks as a tree.",
    ),
    Command(
        "show",
        "read:show",
        "The state at a checkpoint: values for a person, next tasks, pending writes, interrupts.",
    ),
    Command(
        "diff",
        "read:diff",
        "What changed between two checkpoints, by channel: items added or removed, keys changed, "
        "values removed.",
    ),
    Command(
        "tasks",
        "read:tasks",
        "Recovery view of the latest checkpoint: which tasks are done, failed, interrupted or not "
        "started, which run again on resume, and which may have run without their writes being saved.",
    ),
    Command(
        "validate",
        "health:validate",
        "Check every file against its schema, every reference, names against contents, and that no "
        "string looks like an API key or token.",
    ),
    Command(
        "fsck",
        "health:fsck_command",
        "Find leftover temp files, orphaned writes, values and large values, and stale derived files.",
    ),
    Command(
        "render",
        "render:render",
        "A Markdown view of a thread for a pull request or a person; made on demand, never stored.",
    ),
    Command("delete", "maintain:delete", "Delete a thread and all its files."),
    Command("copy", "maintain:copy", "Copy a thread, every checkpoint and file, to a new thread id."),
    Command("prune", "maintain:prune", "Remove old checkpoints."),
    Command(
        "migrate",
        "maintain:migrate",
        "Upgrade files written by an older format version to this release's (docs/format.md).",
    ),
    Command(
        "migrate-state",
        "migratestate:migrate_state",
        "Migrate the state of every thread (or those named) to your new schema: one new checkpoint each "
        "continuing the latest, as update_state writes one, metadata naming the migration; threads "
        "already migrated or unchanged are left alone.",
    ),
    Command(
        "import",
        "transfer:import_command",
        "Copy threads from another checkpointer into the repo files (docs/migrating.md).",
    ),
    Command(
        "export",
        "transfer:export",
        "Copy threads from the repo files into another checkpointer (docs/migrating.md).",
    ),
    Command(
        "heads",
        "heads:heads_command",
        "Heads of a namespace (checkpoints nothing continues) newest first, settled or not, with their "
        "last message, the one that continues first (the newest that no choice passed over).",
    ),
    Command(
        "review",
        "review:review",
        "What changed in the state between two git revisions, per thread: the new turns in order "
        "(messages, tool calls and results, interrupts and answers, edits), other channels old -> new, "
        "memories (store items), heads still to settle, and what validate finds in the changed files; "
        "a verdict line first.",
    ),
    Command(
        "edit",
        "edit:edit",
        "Edit the state as a new checkpoint, as update_state does: readable values in $EDITOR (or "
        "--file), the changes written with new versions; validate passes and the graph goes on from it.",
    ),
    Command(
        "git-setup",
        "gitsetup:git_setup",
        "Make pull requests and git show the state readably: mark the root's files generated in the "
        "top-level .gitattributes (GitHub and GitLab collapse them) and register a textconv driver in "
        "this repository's git config (git diff, log -p and show print each file as a few lines), and a "
        "merge driver for RepoStore items (two branches' changes to different fields merge).",
    ),
    Command(
        "sync",
        "server:sync",
        "Create on the server the threads of the root it does not know, under their ids.",
        group="server",
    ),
    Command(
        "ls",
        "store:ls",
        "The namespaces that hold items, sorted ('*' in a prefix or suffix matches any label).",
        group="store",
    ),
    Command(
        "get",
        "store:get",
        "One item: its value as JSON (with --json: its namespace, key, times and file too).",
        group="store",
    ),
    Command(
        "search",
        "store:search",
        "Items under a namespace prefix that pass a filter, newest updated_at first (no semantic "
        "search here: that needs the embedder, in Python).",
        group="store",
    ),
    Command(
        "put",
        "store:put",
        "Write an item (its created_at kept when it replaces one); secrets are redacted first.",
        group="store",
    ),
    Command(
        "delete",
        "store:delete",
        "Remove an item (and its namespace's folders, once empty).",
        group="store",
    ),
    Command(
        "sweep",
        "store:sweep",
        "Remove every item whose TTL has run out (RepoStore.sweep_ttl).",
        group="store",
    ),
)

#: the groups of subcommands, listed after the top's own commands (``--help``'s order)
GROUPS: tuple[Group, ...] = (
    Group("server", "A running Agent Server that uses RepoSaver: sync tells it the committed threads."),
    Group(
        "store", "RepoStore's long-term memory: one JSON file per item under <root>/store/ (docs/store.md)."
    ),
)

Entry = Command | Group


def entries(group: str | None) -> list[Entry]:
    """What a group lists, in order: its commands, then (at the top) the groups."""
    commands: list[Entry] = [c for c in COMMANDS if c.group == group]
    return commands + list(GROUPS) if group is None else commands


def find(group: str | None, name: str) -> Entry | None:
    """The entry a group runs for ``name``; None when it has no such command."""
    return next((e for e in entries(group) if e.name == name), None)


def load(command: Command) -> Callable[..., Any]:
    """The function of a command, its module imported now (the only one a run imports)."""
    module, _, function = command.target.partition(":")
    found = getattr(importlib.import_module(f"{__package__}.{module}"), function)
    if not callable(found):
        raise TypeError(f"{command.target} is not a function")
    return found  # type: ignore[no-any-return]
