"""``heads``: the heads of a thread's namespace, and choosing which one continues
(docs/forks.md). The rule is core/heads.py's and the choice the saver's; this module only
shows them. Listing heads constructs nothing; ``--choose`` writes through the saver."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from ..core.errors import BadInputError
from ..core.format.versions import for_langgraph
from ..core.heads import scan, unsettled
from ..readmodel.reader import Reader
from ..readmodel.tasks import is_internal
from . import present
from .app import JsonOpt, NsOpt, Settings, ThreadArg, open_reader, settings_of
from .output import Text, print_json, print_table

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig


def last_message(reader: Reader, thread: str, ns: str, cid: str) -> str:
    """What a head ends on: the text of the last message in ``messages``, else the channel
    whose version changed last, shortly (values as stored; what may be constructed is)."""
    trees = reader.state(thread, ns, cid, revive=False).trees
    messages = trees.get("messages")
    if isinstance(messages, list) and messages:
        return present.message_line(reader.readable(messages[-1]), 120)
    versions = reader.get(thread, ns, cid).channel_versions
    shown = [c for c in trees if not is_internal(c)]
    if not shown:
        return ""
    channel = max(shown, key=lambda c: str(for_langgraph(versions.get(c, ""))))  # as LangGraph orders them
    return f"{channel}: {present.inline(reader.readable(trees[channel]), 100)}"


def head_rows(reader: Reader, thread: str, ns: str) -> list[dict[str, Any]]:
    """One row per head, newest first: what ``heads`` prints (the ``--json`` shape)."""
    lineage = reader.store.lineage(thread, ns)
    current, chosen = lineage.current(), lineage.chosen()
    rows = []
    for state in sorted(lineage.heads(), key=lambda h: h.checkpoint_id != current):
        cid = state.checkpoint_id
        record = reader.get(thread, ns, cid)
        meta = record.metadata
        rows.append(
            {
                "checkpoint_id": cid,
                "parent_checkpoint_id": record.parent_id,
                "ts": record.ts,
                "step": meta.get("step") if isinstance(meta.get("step"), int) else None,
                "source": meta.get("source") if isinstance(meta.get("source"), str) else None,
                "settled": state.settled,
                # why: a choice (heads --choose, a merge) or a line started on purpose (a replay,
                # update_state: docs/forks.md); a reviewer tells the two apart
                "settled_by": None if not state.settled else "choice" if cid in chosen else "deliberate",
                "continues": cid == current,
                "last": last_message(reader, thread, ns, cid),
            }
        )
    return rows


def heads_command(
    ctx: typer.Context,
    thread: ThreadArg,
    ns: NsOpt = "",
    choose: Annotated[
        str | None,
        typer.Option(
            "--choose",
            metavar="CHECKPOINT_ID",
            help="Make this head (id or unique prefix) continue: writes a checkpoint recording the choice.",
        ),
    ] = None,
    merge: Annotated[
        tuple[str, str] | None,
        typer.Option(
            "--merge",
            metavar="KEEP OTHER",
            help="Keep both branches' turns: continue head KEEP with the messages OTHER added since "
            "they parted appended (refused when more than messages differ, or a head waits).",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Heads of a namespace (checkpoints nothing continues) newest first, settled or not, with
    their last message, the one that continues first (the newest that no choice passed over).
    ``--choose`` picks another (docs/forks.md)."""
    settings = settings_of(ctx)
    reader = open_reader(ctx)
    ns = reader.resolve_ns(thread, ns) if ns else reader.namespaces(thread)[0]
    if choose is not None and merge is not None:
        raise BadInputError("give --choose or --merge, not both")
    if choose is not None:
        _choose(settings, reader, thread, ns, choose, as_json)
        return
    if merge is not None:
        _merge(settings, reader, thread, ns, merge, as_json)
        return
    _list_heads(settings, reader, thread, ns, as_json)


def _list_heads(settings: Settings, reader: Reader, thread: str, ns: str, as_json: bool) -> None:
    """``heads`` without a choice: the table (or JSON) of the heads, and how to choose when
    more than one waits."""
    rows = head_rows(reader, thread, ns)
    waiting = unsettled(scan(reader.store, thread, ns))
    if as_json:
        print_json(
            {
                "thread_id": thread,
                "checkpoint_ns": ns,
                "heads": rows,
                "unsettled": waiting if len(waiting) > 1 else [],
            }
        )
        return
    table = _heads_table(rows, len(waiting) > 1)
    where = f"thread {thread}" + (f" namespace {ns}" if ns else "")
    title = f"{where}: {len(rows)} head{'s' if len(rows) != 1 else ''}"
    if len(waiting) > 1:
        title += f", {len(waiting)} unsettled"
    settings.out.print(Text(title, style="bold"))
    print_table(settings.out, table)
    if len(waiting) > 1:
        settings.err.print(
            Text(
                "the head marked 'continues' is the one the graph resumes from; to continue another: "
                f"langgraph-repo heads {thread}" + (f" --ns {ns}" if ns else "") + " --choose ID",
                style="dim",
            )
        )


def _merge(
    settings: Settings, reader: Reader, thread: str, ns: str, merge: tuple[str, str], as_json: bool
) -> None:
    """``heads --merge KEEP OTHER``: write the merge, print the checkpoint that continues both."""
    keep, other = (reader.resolve(thread, ns, given) for given in merge)
    ids = {"thread_id": thread, "checkpoint_ns": ns, "checkpoint_id": keep}
    merged = _saver(settings).merge_heads({"configurable": ids}, other)
    new_id = str(merged["configurable"]["checkpoint_id"])
    if as_json:
        shape = {"thread_id": thread, "checkpoint_ns": ns, "kept": keep, "merged": other}
        print_json({**shape, "checkpoint_id": new_id})
        return
    settings.out.print(new_id)
    settings.err.print(Text(f"merged {other} into {keep}: {new_id} continues both", style="green"))


def _choose(settings: Settings, reader: Reader, thread: str, ns: str, choose: str, as_json: bool) -> None:
    """``heads --choose``: write the choice, print the checkpoint that now continues."""
    cid = reader.resolve(thread, ns, choose)
    lineage = reader.store.lineage(thread, ns)
    open_fork = [h for h in lineage.heads() if h.checkpoint_id != cid and not h.settled]
    if cid == lineage.current() and not open_fork:
        new_id = cid  # continues already and no fork waits: nothing to write (no LangGraph either)
    else:
        ids = {"thread_id": thread, "checkpoint_ns": ns, "checkpoint_id": cid}
        config: RunnableConfig = {"configurable": ids}
        new_id = str(_saver(settings).choose_head(config)["configurable"]["checkpoint_id"])
    if as_json:
        shape = {"thread_id": thread, "checkpoint_ns": ns, "chose": cid, "checkpoint_id": new_id}
        print_json({**shape, "wrote": new_id != cid})
        return
    settings.out.print(new_id)
    what = "continues already; nothing written" if new_id == cid else f"chosen: {new_id} continues it"
    settings.err.print(Text(f"{cid} {what}", style="green"))


def _saver(settings: Settings) -> Any:
    """The saver a command writes through (imports LangGraph): it constructs the values it
    copies, LangGraph's safe types and what ``--allow`` names."""

    return settings.saver()


def _heads_table(rows: list[dict[str, Any]], forked: bool) -> Table:
    table = Table(box=None, header_style="bold", pad_edge=False)
    for col in ("head", "time (UTC)", "step", "source", "state", "last message"):
        table.add_column(col, justify="right" if col == "step" else "left", no_wrap=col != "last message")
    for row in rows:
        state = {"choice": "settled by a choice", "deliberate": "started on purpose"}.get(
            row["settled_by"] or "", "unsettled"
        )
        if row["continues"]:
            state += ", continues"
        table.add_row(
            Text(row["checkpoint_id"], style="bold" if row["continues"] else ""),
            present.short_time(row["ts"]),
            "" if row["step"] is None else str(row["step"]),
            row["source"] or "",
            Text(state, style="yellow" if not row["settled"] and forked else "dim"),
            row["last"],
        )
    return table
