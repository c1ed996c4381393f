"""``migrate-state``: your own state migration across threads (statemigration.py,
docs/migrating.md, "Migrating your state schema").

Reading state never runs the checkout's code; a migration is code only where the user names
it on the command line: ``--rules FILE`` (renames and defaults in JSON or TOML) runs none,
``--function module:name`` imports that module alone (from the installed packages, then the
current folder and its ``src``, as ``--allow`` does) and calls that function. Values are
constructed as ``edit`` constructs them (LangGraph's safe types and ``--allow``)."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..core.errors import BadInputError
from .app import DryRunOpt, JsonOpt, Settings, ThreadsArg, require_root, settings_of
from .exits import REFUSED
from .output import Text, print_json

if TYPE_CHECKING:
    from ..statemigration import StateMigration, ThreadMigration


RulesOpt = Annotated[
    Path | None,
    typer.Option(
        "--rules",
        metavar="FILE",
        help="Renames and defaults of channels and fields (JSON, or TOML by its .toml suffix): "
        'name, rename {"old": "new", "channel.field": "new_field"}, default {"channel.field": '
        "value}. Runs no code.",
    ),
]
FunctionOpt = Annotated[
    str | None,
    typer.Option(
        "--function",
        metavar="MODULE:NAME",
        help="Your function from old state (channel -> value) to new state; imports MODULE "
        "(installed, or from the current folder or its src), nothing else.",
    ),
]
NameOpt = Annotated[
    str | None,
    typer.Option(
        "--name",
        help="The migration's name, written in each new checkpoint's metadata (default: the "
        "rules' name, else the file's stem, else MODULE:NAME).",
    ),
]
MigrateNsOpt = Annotated[
    str,
    typer.Option(
        "--ns",
        help="The checkpoint namespace to migrate, exactly (a subgraph whose state is kept across "
        "calls); default: the root, as update_state (docs/migrating.md).",
    ),
]
WaitingOpt = Annotated[
    bool,
    typer.Option(
        "--include-waiting",
        help="Migrate threads that wait too (an interrupt, scheduled tool calls, saved writes): "
        "the new checkpoint does not carry them, as update_state does (the interrupted task asks "
        "again); else refused, naming them.",
    ),
]


def migrate_state(
    ctx: typer.Context,
    thread_ids: ThreadsArg = None,
    rules: RulesOpt = None,
    function: FunctionOpt = None,
    name: NameOpt = None,
    ns: MigrateNsOpt = "",
    include_waiting: WaitingOpt = False,
    dry_run: DryRunOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Migrate the state of every thread (or those named) to your new schema: one new
    checkpoint each continuing the latest, as update_state writes one, metadata naming the
    migration; threads already migrated or unchanged are left alone."""
    from ..statemigration import migrate_threads

    settings = settings_of(ctx)
    require_root(settings.root)
    migration = _migration(rules, function, name)
    saver = settings.saver()
    report = migrate_threads(
        saver, migration, thread_ids or None, ns=ns, dry_run=dry_run, include_waiting=include_waiting
    )
    if json_out:
        print_json(
            {"migration": migration.name, "dry_run": dry_run, "threads": [r.to_json() for r in report]}
        )
    else:
        _print(settings, migration.name, report, dry_run)
    if any(r.status == "refused" for r in report):
        raise typer.Exit(REFUSED)


def _migration(rules: Path | None, function: str | None, name: str | None) -> StateMigration:
    """The migration the options name: the rules file's declarations, the function, or both."""
    from ..statemigration import StateMigration

    if rules is None and function is None:
        raise BadInputError("migrate-state needs --rules FILE or --function MODULE:NAME (or both)")
    called = _load_function(function) if function is not None else None
    if rules is not None:
        return StateMigration.from_file(rules, name, called)
    assert function is not None
    return StateMigration(name or function, called)


def _load_function(spec: str) -> Any:
    """The function ``module:name`` names: importing ``module`` runs its code, the choice the
    user made by naming it (the current folder and its ``src`` are looked in after the
    installed packages, as for ``--allow``)."""
    from ..project_types import importable

    module, sep, attr = spec.partition(":")
    if not sep or not module or not attr:
        raise BadInputError(f"--function {spec!r}: expected module:name (e.g. myapp.migrations:v2)")
    importable(Path.cwd())
    try:
        found = getattr(importlib.import_module(module), attr)
    except Exception as exc:  # the user's module failed to import: say so, in one line
        raise BadInputError(f"--function {spec!r}: cannot load it: {type(exc).__name__}: {exc}") from None
    if not callable(found):
        raise BadInputError(f"--function {spec!r}: is a {type(found).__name__}, not a function")
    return found


def _print(settings: Settings, name: str, report: list[ThreadMigration], dry_run: bool) -> None:
    """The summary line, then a line per thread migrated (or to be) or refused."""
    out = settings.out
    counts: dict[str, int] = {}
    for r in report:
        counts[r.status] = counts.get(r.status, 0) + 1
    done = counts.get("migrate" if dry_run else "migrated", 0)
    rest = ", ".join(
        f"{counts[s]} {s}"
        for s in ("already migrated", "unchanged", "refused", "no namespace")
        if counts.get(s)
    )
    if done:
        verb = "would migrate" if dry_run else "migrated"
        line = (
            f"{verb} {done} thread{'s' if done > 1 else ''} with migration {name!r} (one new checkpoint each)"
        )
    else:
        line = f"nothing to migrate with migration {name!r}"
    out.print(Text(line + (f"; {rest}" if rest else "")))
    for r in report:
        if r.status in ("migrate", "migrated"):
            at = f" {r.new_checkpoint}" if r.new_checkpoint else ""
            out.print(Text(f"  {r.thread_id}{at}: {'; '.join(r.changes)}"))
        elif r.status == "refused":
            out.print(Text(f"  {r.thread_id}: refused: {r.reason}", style="yellow"))
