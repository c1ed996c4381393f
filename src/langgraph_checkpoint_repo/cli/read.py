"""Read commands: threads, history, show, diff, tasks.

An import that only one of them (or one option: ``--since``, ``--from REV``) needs stays
in its function, so the others start without it (cli/registry.py imports this module for
each of them); the rest are at the top."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from ..core.errors import BadInputError, InstallationError, NotFoundError, RepoCheckpointError
from ..core.plans import parse_ts
from ..readmodel.diff import ChannelChange, diff_trees
from ..readmodel.overview import Overview, metadata_trees, overviews
from ..readmodel.reader import HistoryRow, Reader, StateView, ThreadSummary, is_selector, names_a_checkpoint
from ..readmodel.tasks import is_internal
from .app import (
    CheckpointOpt,
    JsonOpt,
    NsOpt,
    ThreadArg,
    open_reader,
    parse_date,
    require_root,
    settings_of,
)
from .output import (
    Text,
    print_json,
    print_table,
    relative_to_root,
    report_broken,
)
from .shape import change_json, history_json, state_json, summary_json, task_json

if TYPE_CHECKING:
    from datetime import datetime


def _meta_pairs(pairs: list[str]) -> list[tuple[str, str]]:
    out = []
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise BadInputError(f"bad --meta {pair!r}: use key=value")
        out.append((key, value))
    return out


def _meta_matches(tree: Any, raw: str) -> bool:
    if tree == raw:
        return True
    try:
        return bool(json.loads(raw) == tree)
    except ValueError:
        return False


def threads(
    ctx: typer.Context,
    waiting_at: Annotated[
        str | None,
        typer.Option(
            "--waiting-at", metavar="NODE", help="Only threads with a next task or interrupt at NODE."
        ),
    ] = None,
    has: Annotated[
        str | None, typer.Option("--has", metavar="KEY", help="Only threads whose state holds channel KEY.")
    ] = None,
    meta: Annotated[
        list[str] | None,
        typer.Option(
            "--meta", metavar="KEY=VALUE", help="Only threads with a checkpoint whose metadata has KEY=VALUE."
        ),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option("--since", metavar="DATE", help="Only threads updated on or after DATE (ISO)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """One row per thread: namespaces, checkpoints, latest step, last update, forks, waiting interrupts."""
    settings = settings_of(ctx)
    require_root(settings.root)
    reader = Reader(settings.root, snapshots=True)  # a row knows the files it is made of (overview.py)
    pairs = _meta_pairs(meta or [])
    after = parse_date(since) if since else None
    broken: list[tuple[str, RepoCheckpointError]] = []
    rows = _matching_threads(reader, waiting_at, has, pairs, after, broken)
    if as_json:
        print_json([{**summary_json(o.summary), "unsettled_heads": o.unsettled} for o in rows])
    elif rows:
        print_table(
            settings.out,
            _threads_table([o.summary for o in rows], {o.summary.thread_id: o.unsettled for o in rows}),
        )
    elif not broken:
        settings.err.print(
            f"no threads under {relative_to_root(reader.root)}"
            + (" match the filters" if (waiting_at or has or pairs or after) else "")
        )
    report_broken(settings, broken)


def _matching_threads(
    reader: Reader,
    waiting_at: str | None,
    has: str | None,
    pairs: list[tuple[str, str]],
    after: datetime | None,
    broken: list[tuple[str, RepoCheckpointError]],
) -> list[Overview]:
    """The rows of the threads that pass ``threads``' filters (overview.py: from the roster, a
    thread's files read again only where they changed); a thread that cannot be read goes to
    ``broken`` instead of stopping the others."""
    rows: list[Overview] = []
    for tid, got in overviews(reader, metadata=bool(pairs)):
        if isinstance(got, RepoCheckpointError):  # one broken thread: said on its own line
            broken.append((tid, got))
            continue
        s = got.summary
        if (
            waiting_at is not None
            and waiting_at not in s.next
            and all(i.task_name != waiting_at for i in s.waiting)
        ):
            continue
        if has is not None and has not in s.channels:
            continue
        if pairs and not _any_metadata_matches(reader, tid, s.namespaces[0], pairs, broken):
            continue
        if after is not None:
            when = parse_ts(s.last_updated)
            if when is None or when < after:
                continue
        rows.append(got)
    return rows


def _any_metadata_matches(
    reader: Reader,
    tid: str,
    ns: str,
    pairs: list[tuple[str, str]],
    broken: list[tuple[str, RepoCheckpointError]],
) -> bool:
    """Whether a checkpoint of the namespace has every KEY=VALUE of ``--meta``."""
    try:
        return any(
            all(k in md and _meta_matches(md[k], v) for k, v in pairs)
            for md in metadata_trees(reader, tid, ns)
        )
    except InstallationError:
        raise
    except RepoCheckpointError as exc:
        broken.append((tid, exc))
        return False


def _threads_table(rows: list[ThreadSummary], forked: dict[str, dict[str, list[str]]] | None = None) -> Table:
    """``forked``: per thread, its namespaces with unsettled heads (column ``unsettled``: how many
    heads wait for a choice, docs/forks.md)."""
    from . import present

    table = Table(box=None, header_style="bold", pad_edge=False)
    for col in (
        "thread",
        "namespaces",
        "checkpoints",
        "step",
        "last updated (UTC)",
        "forks",
        "unsettled",
        "next",
        "waiting",
    ):
        table.add_column(
            col,
            justify="right" if col in ("namespaces", "checkpoints", "step", "forks", "unsettled") else "left",
        )
    for s in rows:
        waiting = ", ".join(f"{i.task_name}: {present.inline(i.value, 40)}" for i in s.waiting)
        heads = sum(len(ids) for ids in (forked or {}).get(s.thread_id, {}).values())
        table.add_row(
            Text(s.thread_id, style="bold"),
            str(len(s.namespaces)),
            str(s.checkpoints),
            "" if s.latest_step is None else str(s.latest_step),
            present.short_time(s.last_updated),
            str(s.forks),
            Text(str(heads), style="bold red") if heads else "-",
            ", ".join(s.next) or "-",
            Text(waiting or "-", style="yellow" if waiting else ""),
        )
    return table


def history(
    ctx: typer.Context,
    thread: ThreadArg,
    ns: NsOpt = "",
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Show only the newest N.")] = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            metavar="REV",
            help="Only the checkpoints a git revision does not have (--since main; --since main... "
            "from where HEAD left main).",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Checkpoints newest first: step, source, the node(s) whose writes made it, parent; forks as a tree."""
    settings = settings_of(ctx)
    reader = open_reader(ctx)
    ns = reader.resolve_ns(thread, ns) if ns else reader.namespaces(thread)[0]
    rows = reader.history(thread, ns)
    if since is not None:
        old = _ids_at_revision(reader, thread, ns, since)
        rows = [r for r in rows if r.checkpoint_id not in old]
    shown = rows[:limit] if limit else rows
    if as_json:
        print_json(
            {
                "thread_id": thread,
                "checkpoint_ns": ns,
                "checkpoints": [history_json(r) for r in shown],
            }
        )
        return
    table = _history_table(rows, shown)
    title = f"thread {thread}" + (f" namespace {ns}" if ns else "") + f": {len(rows)} checkpoints"
    leaves = sum(1 for r in rows if not r.children)
    if leaves > 1:
        title += f", {leaves - 1} fork{'s' if leaves > 2 else ''}"
    settings.out.print(Text(title, style="bold"))
    print_table(settings.out, table)
    if limit and len(rows) > limit:
        settings.out.print(
            Text(f"… {len(rows) - limit} older checkpoints (drop --limit to see them)", style="dim")
        )


def _history_table(rows: list[HistoryRow], shown: list[HistoryRow]) -> Table:
    """``history``'s table of the rows shown (the newest of ``rows`` in bold)."""
    from . import present

    table = Table(box=None, header_style="bold", pad_edge=False)
    for col in ("", "checkpoint", "step", "source", "written by", "parent", "time (UTC)"):
        table.add_column(col, justify="right" if col == "step" else "left", no_wrap=col != "written by")
    for r in shown:
        parent = r.parent_id or "-"
        if r.parent_id and not r.parent_present:
            parent += " (absent)"
        table.add_row(
            Text(r.graph, style="cyan"),
            Text(r.checkpoint_id, style="bold" if r is rows[0] else ""),
            "" if r.step is None else str(r.step),
            r.source or "",
            ", ".join(r.writers),
            Text(parent, style="dim"),
            present.short_time(r.ts),
        )
    return table


def show(
    ctx: typer.Context,
    thread: ThreadArg,
    checkpoint: CheckpointOpt = None,
    ns: NsOpt = "",
    show_all: Annotated[bool, typer.Option("--all", help="Also show LangGraph's own channels.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """The state at a checkpoint: values for a person, next tasks, pending writes, interrupts."""
    from . import views

    settings = settings_of(ctx)
    reader = open_reader(ctx, revive=True)
    namespaces = reader.namespaces(thread)
    ns = reader.resolve_ns(thread, ns) if ns else namespaces[0]
    cid = reader.resolve(thread, ns, checkpoint)
    view = reader.state(thread, ns, cid)
    channels = [c for c in sorted(view.trees) if show_all or not is_internal(c)]
    subgraphs = [n for n in namespaces if n != ns and n.startswith(f"{ns}|" if ns else "")]
    if as_json:
        print_json(state_json(thread, ns, cid, view, channels, subgraphs))
        return
    out = settings.out
    views._header(out, view)
    views._section(out, "State")
    if not channels:
        out.print(Text("(empty)", style="dim"))
    for c in channels:
        views._value_block(out, c, view.values[c])
    views._section(out, "Next tasks")
    if view.tasks:
        print_table(out, views._tasks_table(view))
    else:
        out.print(Text("none: the graph has finished at this checkpoint", style="dim"))
    if view.interrupts:
        views._section(out, "Interrupts (waiting for an answer)")
        for i in view.interrupts:
            views._interrupt_block(out, i)
    views._section(out, "Pending writes")
    if not view.writes:
        out.print(Text("none", style="dim"))
    else:
        print_table(out, views._writes_table(view))
    if subgraphs:
        views._section(out, "Subgraph namespaces (see them with --ns)")
        for n in subgraphs:
            out.print("  " + n)
    views._print_stored_json(out, view, channels)
    views.print_not_revived(out, reader)


def _diff_base(reader: Reader, thread: str, ns: str, new: StateView, from_id: str | None) -> str | None:
    """The older checkpoint of ``diff``: ``--from``, else the parent of the newer one (if kept)."""
    old_id: str | None
    if from_id is not None:
        old_id = reader.resolve(thread, ns, from_id)
    else:
        parent = new.parent_id
        old_id = parent if parent in set(reader.checkpoint_ids(thread, ns)) else None
    return old_id


def _ids_at_revision(reader: Reader, thread: str, ns: str, rev: str) -> set[str]:
    """The checkpoint ids of a namespace that git revision ``rev`` has (from ``git ls-tree``;
    ``REV...``: where HEAD left it, which a ``REV`` that moved on and pruned may not have)."""
    from ..review.revisions import git, git_top, resolve_base

    top = git_top(reader.root)
    commit, _ = resolve_base(top, rev)
    folder = reader.layout.checkpoints_dir(thread, ns).resolve().relative_to(top.resolve()).as_posix()
    names = git(top, "ls-tree", "--name-only", "-z", commit, "--", folder + "/").split("\0")
    ids = set(reader.checkpoint_ids(thread, ns))
    name = reader.layout.checkpoint_path
    return {cid for cid in ids if f"{folder}/{name(thread, ns, cid).name}" in names}


def _a_revision(reader: Reader, name: str) -> bool:
    """Whether git knows ``name`` as a revision of the work tree holding the root."""
    from ..review.revisions import git_top, resolve

    try:
        resolve(git_top(reader.root), name)
    except (NotFoundError, BadInputError):
        return False
    return True


def _at_revision(
    reader: Reader, thread: str, ns: str, rev: str, not_a_checkpoint: Exception
) -> tuple[str, dict[str, Any], str]:
    """The checkpoint that continued ``thread`` at git revision ``rev`` (``REV...``: where
    HEAD left it), its stored trees, read from git's objects (that thread only), and what to
    know when ``rev`` moved on since; the error of a bad checkpoint id when ``rev`` is no
    revision either (outside git, ``not_a_checkpoint`` itself: there is no revision to mean)."""
    from ..review.revisions import git_top, materialize, resolve_base

    try:
        top = git_top(reader.root)
    except NotFoundError:
        raise not_a_checkpoint from None
    folder = reader.layout.thread_dir(thread).relative_to(reader.root).as_posix()
    rel = reader.root.resolve().relative_to(top.resolve()).as_posix()
    try:
        commit, moved = resolve_base(top, rev, f"{rel}/{folder}" if rel != "." else folder)
    except NotFoundError:
        if names_a_checkpoint(rev) and not isinstance(not_a_checkpoint, NotFoundError):
            raise not_a_checkpoint from None  # ambiguous, too far back: its own words
        said = f"{rev!r} is neither a checkpoint of thread {thread!r} nor a git revision"
        raise BadInputError(said) from None
    note = ""
    if moved:
        note = f"{rev} moved on since HEAD left it: its new work shows as removed here; "
        note += f"--from {rev}... compares with where HEAD left it"
    with tempfile.TemporaryDirectory(prefix="langgraph-diff-") as tmp:
        root = materialize(top, commit, rel, [folder], Path(tmp)).root
        then = Reader(root)
        if not (root / folder).is_dir() or ns not in then.namespaces(thread):
            return f"{rev} (no such thread then)", {}, note
        cid = then.resolve(thread, ns, None)
        return cid, then.state(thread, ns, cid, revive=False).trees, note


def diff(
    ctx: typer.Context,
    thread: ThreadArg,
    from_id: Annotated[
        str | None,
        typer.Option(
            "--from",
            metavar="ID|REV",
            help="Older checkpoint (as --checkpoint: latest~2), or a git revision (the checkpoint that "
            "continued the thread there: --from main; --from main... where HEAD left main). Default: the "
            "parent of --to.",
        ),
    ] = None,
    to_id: Annotated[
        str | None,
        typer.Option("--to", metavar="ID", help="Newer checkpoint, as --checkpoint (default: latest)."),
    ] = None,
    ns: NsOpt = "",
    show_all: Annotated[bool, typer.Option("--all", help="Also compare LangGraph's own channels.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """What changed between two checkpoints, by channel: items added or removed, keys changed,
    values removed."""
    settings = settings_of(ctx)
    reader = open_reader(ctx, revive=True)
    ns = reader.resolve_ns(thread, ns) if ns else reader.namespaces(thread)[0]
    new_id = reader.resolve(thread, ns, to_id)
    new = reader.state(thread, ns, new_id, revive=False)
    old_id, old_trees, note = _older(reader, thread, ns, new, from_id)
    changes = diff_trees(old_trees, new.trees, internal=show_all)
    if as_json:
        print_json(
            {
                "thread_id": thread,
                "checkpoint_ns": ns,
                "from": old_id,
                "to": new_id,
                "changes": [change_json(c) for c in changes],
                **({"note": note} if note else {}),
            }
        )
        return
    _print_diff(settings.out, reader, (thread, old_id, new_id), note, changes, show_all)


def _older(
    reader: Reader, thread: str, ns: str, new: StateView, from_id: str | None
) -> tuple[str | None, dict[str, Any], str]:
    """The older side of ``diff``: its checkpoint id, its stored trees, and what to know about
    it; ``--from`` a git revision when it names no checkpoint (``--from main``)."""
    if from_id is not None and is_selector(from_id) and _a_revision(reader, from_id):
        raise BadInputError(
            f"--from {from_id!r} names a checkpoint (docs/cli.md) and a git revision: give the "
            f"revision as refs/tags/{from_id} or refs/heads/{from_id}, or the checkpoint by its id"
        )
    try:
        old_id = _diff_base(reader, thread, ns, new, from_id)
        return old_id, reader.state(thread, ns, old_id, revive=False).trees if old_id else {}, ""
    except (BadInputError, NotFoundError) as not_a_checkpoint:
        if from_id is None:
            raise
        return _at_revision(reader, thread, ns, from_id, not_a_checkpoint)


def _print_diff(
    out: Console,
    reader: Reader,
    sides: tuple[str, str | None, str],
    note: str,
    changes: list[ChannelChange],
    show_all: bool,
) -> None:
    """``diff``'s text: which checkpoints (``sides``: thread, older, newer), then each change."""
    from .views import print_change, print_not_revived

    thread, old_id, new_id = sides
    out.print(
        Text.assemble(
            ("thread ", "dim"),
            (thread, "bold"),
            ("  from ", "dim"),
            old_id or "(empty state)",
            ("  to ", "dim"),
            new_id,
        )
    )
    if note:
        out.print(Text(note, style="yellow"))
    if not changes:
        out.print(
            Text(
                "no changes" + ("" if show_all else " (--all compares LangGraph's own channels too)"),
                style="dim",
            )
        )
    for c in changes:
        print_change(out, c, reader.readable)
    print_not_revived(out, reader)


def tasks(
    ctx: typer.Context,
    thread: ThreadArg,
    ns: NsOpt = "",
    as_json: JsonOpt = False,
) -> None:
    """Recovery view of the latest checkpoint: which tasks are done, failed, interrupted or not started,
    which run again on resume, and which may have run without their writes being saved."""
    from .views import print_not_revived, print_recovery

    settings = settings_of(ctx)
    reader = open_reader(ctx)
    namespaces = reader.namespaces(thread)
    root_ns = reader.resolve_ns(thread, ns) if ns else namespaces[0]
    live = reader.live_states(thread, namespaces, root_ns)
    views = [reader.state(thread, n, s.checkpoint_id) for n, s in live.items()]
    if as_json:
        print_json(
            {
                "thread_id": thread,
                "namespaces": [
                    {
                        "checkpoint_ns": v.ns,
                        "checkpoint_id": v.checkpoint_id,
                        "step": v.step,
                        "tasks": [task_json(t, v.ns) for t in v.tasks],
                    }
                    for v in views
                ],
            }
        )
        return
    out = settings.out
    for n, view in enumerate(views):
        if n:
            out.print()
        print_recovery(out, thread, view)
    print_not_revived(out, reader)
