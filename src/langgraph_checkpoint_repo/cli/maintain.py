"""Commands that change the state: delete, copy, prune, migrate (they ask first).

Each works on the files (core/plans.py, core/documents.py) under the thread's lock, as the
saver's own methods do; none constructs a value or imports LangGraph. Their needs differ
(plans, migrations, the checks), so each imports its own where it runs and the others start
without it (cli/registry.py imports this module for any of them)."""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..core.errors import BadInputError
from .app import (
    DryRunOpt,
    JsonOpt,
    Settings,
    ThreadArg,
    ThreadsArg,
    YesOpt,
    open_reader,
    parse_age,
    parse_date,
    progress_bar,
    require_root,
    settings_of,
)
from .exits import INTERRUPTED, REFUSED, CliError
from .output import (
    Text,
    print_json,
    relative_to_root,
    screen,
)

if TYPE_CHECKING:
    from ..core.plans import PrunePlan
    from ..readmodel.reader import Reader
    from ..readmodel.retention import Retention


def _confirm(settings: Settings, question: str, yes: bool) -> None:
    """Ask before destroying anything; EOF or no is a refusal (exit 5)."""
    if yes:
        return
    try:
        ok = typer.confirm(screen(question), default=False, err=True)
    except typer.Abort:
        ok = False
    if not sys.stdin.isatty():
        settings.err.print()  # the answer came from a pipe: end the prompt's line
    if not ok:
        raise CliError("not confirmed: nothing was changed (pass --yes to skip the question)", REFUSED)


def delete(
    ctx: typer.Context,
    thread: ThreadArg,
    yes: YesOpt = False,
) -> None:
    """Delete a thread and all its files."""
    settings = settings_of(ctx)
    reader = open_reader(ctx)
    summary = reader.summary(thread)
    files = reader.thread_files(thread)
    note = ""
    if summary.waiting:
        note = f" It waits on an interrupt at {', '.join(sorted({i.task_name for i in summary.waiting}))}."
    _confirm(
        settings,
        f"Delete thread {thread!r}: {summary.checkpoints} checkpoints, {len(files)} files in "
        f"{relative_to_root(reader.layout.thread_dir(thread))}?{note}",
        yes,
    )
    store = reader.store
    with store.thread_lock(thread, exclusive=True):
        store.files.remove_tree(store.layout.thread_dir(thread))
        store.forget_thread(thread)
    settings.out.print(f"deleted thread {thread!r} ({summary.checkpoints} checkpoints, {len(files)} files)")


def copy(
    ctx: typer.Context,
    source: Annotated[str, typer.Argument(help="Thread to copy.")],
    target: Annotated[str, typer.Argument(help="New thread id (must not exist).")],
) -> None:
    """Copy a thread, every checkpoint and file, to a new thread id."""
    from ..core.plans import copy_thread_files
    from ..readmodel.reader import check_thread_id

    settings = settings_of(ctx)
    reader = open_reader(ctx)
    summary = reader.summary(source)
    check_thread_id(target)
    if reader.layout.thread_dir(target).exists():
        raise CliError(f"thread {target!r} already exists: delete it first or choose another id", REFUSED)
    if source == target:
        raise BadInputError("source and target are the same thread")
    try:
        copy_thread_files(reader.store, source, target)
    except KeyboardInterrupt:
        raise CliError(
            f"interrupted: thread {target!r} is not whole; remove it (langgraph-repo delete "
            f"{shlex.quote(target)}) and copy again",
            INTERRUPTED,
        ) from None
    settings.out.print(f"copied thread {source!r} to {target!r} ({summary.checkpoints} checkpoints)")


GrowthOpt = Annotated[
    bool,
    typer.Option(
        "--allow-growth", help="Also prune a thread whose kept checkpoints need more written first than goes."
    ),
]


TtlOpt = Annotated[
    str | None,
    typer.Option(
        "--ttl",
        metavar="AGE",
        help="Delete whole threads last written more than AGE ago (30d, 12h), as LangGraph's "
        "checkpointer.ttl; never one waiting at an interrupt or with an unfinished step.",
    ),
]
RetentionOpt = Annotated[
    bool,
    typer.Option(
        "--retention",
        help="Apply the project's retention: checkpointer.ttl of langgraph.json, else the "
        "[tool.langgraph-repo.ttl] table (what the Agent Server's sweeper does).",
    ),
]
AtOpt = Annotated[
    str | None, typer.Option("--at", metavar="TIME", help="Judge ages at this time (ISO 8601), not now.")
]


def prune(
    ctx: typer.Context,
    thread_ids: ThreadsArg = None,
    keep_last: Annotated[
        int | None,
        typer.Option("--keep-last", min=1, metavar="N", help="Keep the newest N checkpoints per namespace."),
    ] = None,
    older_than: Annotated[
        str | None,
        typer.Option(
            "--older-than", metavar="AGE", help="Remove only checkpoints older than AGE (30d, 12h)."
        ),
    ] = None,
    ttl: TtlOpt = None,
    retention: RetentionOpt = False,
    at: AtOpt = None,
    allow_growth: GrowthOpt = False,
    dry_run: DryRunOpt = False,
    yes: YesOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Remove old checkpoints. With --ttl or --retention, also expired threads, whole. Never a
    thread waiting on an interrupt, never what a DeltaChannel or an appended list still needs,
    never a hole in the middle of a history, and never (unless --allow-growth) a thread the
    removal would make bigger."""
    from .shape import plan_json
    from .views import print_plan

    settings = settings_of(ctx)
    reader = open_reader(ctx)
    rule = _rule(settings, keep_last, older_than, ttl, retention, at, allow_growth)
    ids = list(thread_ids or [])
    for tid in ids:
        reader.namespaces(tid)  # unknown thread: exit 3 before anything else
    ids = ids or reader.thread_ids()
    plans = [_plan(reader, t, rule) for t in ids]
    doing = [p for p in plans if p.doomed]
    if dry_run or not doing:
        if as_json:
            print_json({"dry_run": dry_run, "threads": [plan_json(p) for p in plans]})
        else:
            for plan in plans:
                print_plan(settings.out, plan, "would remove")
        return
    if not as_json:
        for plan in plans:
            print_plan(settings.out, plan, "removes")
    files = sum(len(p.removed) for p in doing)
    _confirm(settings, f"Remove {files} files from {len(doing)} thread{'s' if len(doing) != 1 else ''}?", yes)
    results, changed = _run_plans(settings, reader, plans, rule, as_json)
    if as_json:
        print_json({"dry_run": False, "threads": results})
    if changed:
        raise CliError(
            f"thread {', '.join(changed)} changed while asking; nothing removed there, run prune again",
            REFUSED,
        )


@dataclass(frozen=True)
class _Rule:
    """What ``prune`` was asked: the same for the plan printed and the one carried out."""

    keep_last: int | None
    age: float | None
    now: datetime
    allow_growth: bool
    retention: Retention | None = None  # --ttl or --retention: readmodel/retention.py's rules


def _rule(
    settings: Settings,
    keep_last: int | None,
    older_than: str | None,
    ttl: str | None,
    retention: bool,
    at: str | None,
    allow_growth: bool,
) -> _Rule:
    """The options as one rule, refusing what they cannot mean together."""
    from ..readmodel.retention import Retention

    now = parse_date(at) if at else datetime.now(timezone.utc)
    if retention:
        if keep_last is not None or older_than is not None or ttl is not None:
            raise BadInputError(
                "--retention applies the project's settings: give no --keep-last, --older-than or --ttl"
            )
        return _Rule(None, None, now, allow_growth, _project_retention(settings))
    if ttl is not None:
        if older_than is not None:
            raise BadInputError("--ttl judges whole threads, --older-than checkpoints: give one of them")
        policy = Retention(default_ttl=parse_age(ttl) / 60, keep_last=keep_last)
        return _Rule(keep_last, None, now, allow_growth, policy)
    if keep_last is None and older_than is None:
        raise BadInputError("give --keep-last N, --older-than AGE, --ttl AGE or --retention")
    age = parse_age(older_than) if older_than is not None else None
    return _Rule(keep_last, age, now, allow_growth)


def _project_retention(settings: Settings) -> Retention:
    """The root's project's retention settings (project_types.project_retention), or a refusal."""
    from ..project_types import project_retention

    found = project_retention(settings.root)
    if found is None:
        raise BadInputError(
            "no retention settings: neither a langgraph.json beside the root with checkpointer.ttl "
            "nor a [tool.langgraph-repo.ttl] table (docs/reliability.md, Retention)"
        )
    return found.policy


def _plan(reader: Reader, thread_id: str, rule: _Rule) -> PrunePlan:
    """``prune``'s plan for one thread; a thread waiting on an interrupt is left whole."""
    from ..core.plans import plan_prune
    from ..readmodel.retention import plan_retention

    if rule.retention is not None:
        return plan_retention(reader, thread_id, rule.retention, rule.now, allow_growth=rule.allow_growth)
    waits = [i.task_name for i in reader.summary(thread_id).waiting]
    return plan_prune(
        reader.store,
        thread_id,
        keep_last=rule.keep_last,
        older_than=rule.age,
        now=rule.now,
        waits_at=waits,
        allow_growth=rule.allow_growth,
    )


def _run_plans(
    settings: Settings,
    reader: Reader,
    plans: list[PrunePlan],
    rule: _Rule,
    as_json: bool,
) -> tuple[list[dict[str, Any]], list[str]]:
    """Carry out ``prune``'s confirmed plans, the very ones printed: each under its thread's
    lock and only if the thread still plans the same (files and contents); the JSON of each
    (what was removed and written, as found on disk) and the threads that changed meanwhile."""
    from ..core.plans import carry_out, plan_bytes
    from .shape import plan_json

    results: list[dict[str, Any]] = []
    changed: list[str] = []
    for plan in plans:
        if not plan.doomed:
            results.append(plan_json(plan))
            continue
        with reader.store.thread_lock(plan.thread_id, exclusive=True):
            if _plan(reader, plan.thread_id, rule) != plan:
                changed.append(plan.thread_id)
                continue
            before = set(reader.thread_files(plan.thread_id))
            carry_out(reader.store, plan)
            after = set(reader.thread_files(plan.thread_id))
        removed, written = sorted(before - after), sorted(after - before)
        gone, wrote = plan_bytes(plan)
        results.append({**plan_json(plan, written), "remove": [str(p) for p in removed]})
        if not as_json:
            settings.out.print(
                Text(
                    f"thread {plan.thread_id}: removed {len(removed)} files ({gone:,} bytes), "
                    f"wrote {len(written)} ({wrote:,} bytes)",
                    style="green",
                )
            )
    return results, changed


def migrate(
    ctx: typer.Context,
    dry_run: DryRunOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Upgrade files written by an older format version to this release's (docs/format.md).

    Every file is upgraded and validated before any is replaced; each is then replaced
    atomically under its thread's lock, so an interrupted run is finished by running it again.
    """
    from ..core.checks import count_files
    from ..core.format.migrations import migrate_root
    from ..core.format.validation import SCHEMA_VERSION

    settings = settings_of(ctx)
    require_root(settings.root)
    with progress_bar(settings, "migrating", 2 * count_files(settings.root)) as advance:
        report = migrate_root(settings.root, dry_run=dry_run, progress=advance)
    if json_out:
        print_json(report.to_json())
        return
    out = settings.out
    olds = ", ".join(f"{n} from version {v}" for v, n in sorted(report.from_versions.items()))
    if not report.changed:
        out.print(f"nothing to migrate: {report.files} files, all at version {SCHEMA_VERSION}")
    elif dry_run:
        out.print(f"would migrate {len(report.changed)} files to version {SCHEMA_VERSION} ({olds}):")
        for rel in report.changed:
            out.print(f"  {rel}")
    else:
        out.print(
            f"migrated {len(report.changed)} files to version {SCHEMA_VERSION} ({olds}); "
            f"{report.current} were already at it"
        )
