"""``server sync``: make a running Agent Server know the threads committed under the root.

The server keeps its thread list in ``.langgraph_api/`` (git-ignored), so after a fresh clone
it answers 404 for a thread whose checkpoints are in ``.langgraph/``. ``server sync`` creates
each missing thread on the server under its own id, with the ``graph_id`` its checkpoints
name: the server reads a thread's state with that graph, from the files through RepoSaver.
Nothing under the root is written. langgraph-sdk (the ``server`` extra) is imported only
when the command runs, never with the command line.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..core.errors import BadInputError, InstallationError, NotFoundError, RepoCheckpointError
from .app import DryRunOpt, JsonOpt, ThreadsArg, open_reader, settings_of
from .exits import FAILED, PROBLEMS, CliError
from .output import Text, print_json, relative_to_root

if TYPE_CHECKING:
    from ..readmodel.reader import Reader

BATCH = 100  # thread ids per search request
CREATED, KNOWN, WOULD_CREATE, SKIPPED, FAILED_ = "created", "known", "would create", "skipped", "failed"


@dataclass
class Entry:
    """One thread's outcome; ``problem``: the thread should be on the server and is not."""

    thread_id: str
    action: str = ""
    graph_id: str | None = None
    checkpoint_id: str | None = None  # the latest checkpoint of the root namespace, in the files
    reason: str = ""
    problem: bool = False

    def json(self) -> dict[str, Any]:
        return {
            "thread_id": self.thread_id,
            "action": self.action.replace(" ", "_"),
            "graph_id": self.graph_id,
            "checkpoint_id": self.checkpoint_id,
            "reason": self.reason or None,
        }


def sync(
    ctx: typer.Context,
    url: Annotated[
        str,
        typer.Option(
            "--url",
            metavar="URL",
            help="The server, e.g. http://127.0.0.1:2024 (langgraph dev's). An API key is read from "
            "LANGGRAPH_API_KEY or LANGSMITH_API_KEY, as langgraph-sdk does.",
        ),
    ],
    thread_ids: ThreadsArg = None,
    graph: Annotated[
        str | None,
        typer.Option(
            "--graph",
            metavar="GRAPH",
            help="The graph of threads whose checkpoints name none (written by a script, not the server).",
        ),
    ] = None,
    dry_run: DryRunOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Create on the server the threads of the root it does not know, under their ids.

    After a fresh clone the server's own thread list (.langgraph_api/, git-ignored) is empty
    and it answers 404 for committed threads. Each thread is created with the graph_id its
    checkpoints name; the server then reads its state from the files and runs continue it.
    Threads already on the server are left alone, so a second sync creates nothing.
    """
    settings = settings_of(ctx)
    reader = open_reader(ctx)
    named = list(dict.fromkeys(thread_ids or []))
    for tid in named:
        reader.namespaces(tid)  # a thread that is not under the root: an error before any request
    local = (_local_entry(reader, tid, graph) for tid in (named or reader.thread_ids()))
    entries = [e for e in local if e is not None]
    _on_server(url, entries, dry_run=dry_run)
    if named:  # a thread asked for by name and not put on the server is a problem, whatever the reason
        for entry in entries:
            entry.problem = entry.problem or entry.action in (SKIPPED, FAILED_)
    if as_json:
        print_json([e.json() for e in entries])
    else:
        for entry in entries:
            settings.out.print(_line(entry), soft_wrap=True)
    said = _summary(entries, url, dry_run) if entries else f"no threads under {relative_to_root(reader.root)}"
    settings.err.print(said)
    if any(e.problem for e in entries):
        raise typer.Exit(PROBLEMS)


def _local_entry(reader: Reader, tid: str, graph: str | None) -> Entry | None:
    """What the files say of a thread: whether its id can be a server's, its graph, its latest
    checkpoint. None for a folder without checkpoints (fsck reports it), as ``threads`` skips it."""
    entry = Entry(tid)
    try:
        canonical = str(uuid.UUID(tid))
    except ValueError:
        return _skip(entry, "not a UUID: the server's thread ids are UUIDs")
    if canonical != tid:  # the server would read threads/<canonical>/, not this folder
        return _skip(entry, f"the server would name it {canonical}: its ids are lowercase with hyphens")
    try:
        if "" not in reader.namespaces(tid):
            return _skip(entry, "no checkpoint in the root namespace, only in subgraphs")
        latest = reader.resolve(tid, "", None)
        entry.checkpoint_id = latest
        entry.graph_id = _graph_of(reader, tid, latest) or graph
    except NotFoundError:
        return None
    except InstallationError:
        raise  # not the thread's fault: said once, for the whole command
    except RepoCheckpointError as exc:  # one thread that does not read: said on its line
        entry.action, entry.reason, entry.problem = FAILED_, str(exc), True
        return entry
    if entry.graph_id is None:
        return _skip(entry, "its checkpoints name no graph_id (written outside the server): give --graph")
    return entry


def _skip(entry: Entry, reason: str) -> Entry:
    entry.action, entry.reason = SKIPPED, reason
    return entry


def _graph_of(reader: Reader, tid: str, latest: str) -> str | None:
    """The graph_id the server wrote into the thread's checkpoints, the latest first."""
    ids = reader.checkpoint_ids(tid, "")
    for cid in (latest, *reversed(ids)):
        found = reader.get(tid, "", cid).metadata.get("graph_id")
        if isinstance(found, str) and found:
            return found
    return None


def _on_server(url: str, entries: list[Entry], *, dry_run: bool) -> None:
    """Ask the server which threads it knows and which graphs it serves; create the rest."""
    _reach(url)  # before importing the SDK (it imports langchain_core): a missing server is said at once
    import httpx

    try:
        from langgraph_sdk import get_sync_client
        from langgraph_sdk.errors import APIStatusError
    except ImportError as exc:  # langgraph requires it; an environment may still lack it
        fix = "pip install 'langgraph-checkpoint-repo[server]'"
        raise CliError(f"server sync needs langgraph-sdk ({exc}): {fix}", FAILED) from None

    try:
        with get_sync_client(url=url) as client:
            open_ = [e for e in entries if not e.action]
            known: set[str] = set()
            for batch in _batches([e.thread_id for e in open_], BATCH):
                found = client.threads.search(ids=batch, limit=len(batch), select=["thread_id"])
                known.update(str(t["thread_id"]) for t in found)
            served = _served_graphs(client) if any(e.thread_id not in known for e in open_) else set()
            for entry in open_:
                if entry.thread_id in known:
                    entry.action = KNOWN
                elif entry.graph_id not in served:
                    serving = ", ".join(sorted(served)) or "none"
                    entry.action, entry.problem = SKIPPED, True
                    entry.reason = f"graph {entry.graph_id!r} is not served there (it serves {serving})"
                elif dry_run:
                    entry.action = WOULD_CREATE
                else:
                    try:
                        _create(client, entry)
                    except APIStatusError as exc:
                        entry.action, entry.problem = FAILED_, True
                        entry.reason = f"the server answered {exc.status_code}: {exc}"
    except APIStatusError as exc:
        raise CliError(f"the Agent Server at {url} answered {exc.status_code}: {exc}", FAILED) from None
    except httpx.HTTPError as exc:
        reason = str(exc) or type(exc).__name__
        raise CliError(f"the Agent Server at {url} stopped answering: {reason}", FAILED) from None


def _reach(url: str) -> None:
    """One request without retries, so a server that is not there is said at once (the SDK's
    client retries a refused connection for seconds)."""
    import httpx

    if not url.startswith(("http://", "https://")):
        raise BadInputError(f"bad --url {url!r}: give the server's address, e.g. http://127.0.0.1:2024")
    try:
        httpx.get(f"{url.rstrip('/')}/ok", timeout=10)
    except httpx.HTTPError as exc:  # any answer, even an error status, says a server is there
        reason = str(exc) or type(exc).__name__
        raise CliError(
            f"cannot reach the Agent Server at {url}: {reason} (is langgraph dev running?)", FAILED
        ) from None


def _served_graphs(client: Any) -> set[str]:
    """The graphs the server serves: those of its assistants (each graph has a default one)."""
    graphs: set[str] = set()
    offset = 0
    while True:
        page = client.assistants.search(limit=BATCH, offset=offset)
        graphs.update(str(a["graph_id"]) for a in page)
        if len(page) < BATCH:
            return graphs
        offset += BATCH


def _create(client: Any, entry: Entry) -> None:
    """Create the thread under its id and graph; then check the server reads the same latest
    checkpoint from the files (a server on another root would show an empty thread)."""
    client.threads.create(thread_id=entry.thread_id, graph_id=entry.graph_id, if_exists="do_nothing")
    entry.action = CREATED
    state = client.threads.get_state(entry.thread_id)
    theirs = (state.get("checkpoint") or {}).get("checkpoint_id")
    if theirs != entry.checkpoint_id:
        entry.problem = True
        entry.reason = (
            f"the server reads checkpoint {theirs or 'none'} for it, not {entry.checkpoint_id}: "
            "does it use RepoSaver on this root (LANGGRAPH_REPO_ROOT)?"
        )


def _batches(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _line(entry: Entry) -> Text:
    style = {CREATED: "green", WOULD_CREATE: "green", KNOWN: "", SKIPPED: "yellow", FAILED_: "red"}
    color = "red" if entry.problem else style.get(entry.action, "")
    detail = f"graph {entry.graph_id}" if entry.graph_id and not entry.reason else entry.reason
    return Text.assemble((f"{entry.action:<12}", color), " ", (entry.thread_id, "bold"), f"  {detail}")


def _summary(entries: list[Entry], url: str, dry_run: bool) -> str:
    actions = (CREATED, KNOWN, WOULD_CREATE, SKIPPED, FAILED_)
    count = {a: sum(e.action == a for e in entries) for a in actions}
    made = count[WOULD_CREATE] if dry_run else count[CREATED]
    verb = "would create" if dry_run else "created"
    parts = [f"{verb} {_threads(made)} on {url}" if made else f"nothing to create on {url}"]
    if count[KNOWN]:
        parts.append(f"{_threads(count[KNOWN])} already there")
    for action in (SKIPPED, FAILED_):
        if count[action]:
            parts.append(f"{count[action]} {action}")
    problems = sum(e.problem for e in entries)
    if problems:
        lines = "its line" if problems == 1 else "their lines"
        parts.append(f"{_threads(problems)} not synced as asked: see {lines}")
    return "; ".join(parts)


def _threads(n: int) -> str:
    return f"{n} thread" + ("" if n == 1 else "s")
