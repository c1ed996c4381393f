"""Read-only views of stored threads for people and scripts: state, next tasks, history.

A ``Reader`` reads one root through the same documents, validation and bounds as the saver
(core/documents.py) and never writes state (only the derived index under ``.cache/``, which
any read may leave). It constructs nothing by itself: values stay their stored JSON trees
(``Raw``), shown readably (cli/present.py draws a message tree as ``role: text``). Given a
``Reviver`` (the adapters' ``serde.ValueCodec``, which checks every type against its
allowlist before any import), it revives what that allows, and the rest stays ``Raw``.
So reading commands need no LangGraph, and a file cannot make a reader import anything.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..core.errors import BadInputError, NotFoundError, RepoCheckpointError, UnrevivableValueError
from ..core.format.entries import ValueEntry, entry_from_node
from ..core.format.fields import migration_name
from ..core.format.records import CheckpointRecord
from ..core.format.tree import b64, named_types, plain_value
from ..core.format.tree import readable as readable_tree
from ..core.sends import TASKS, send_node
from ..core.threads import ThreadStore
from ..core.typenames import Fix, TypeKey, python_fix
from ..core.writes import merged_writes
from .tasks import (
    CONTROL_WRITES,
    NULL_TASK_ID,
    InterruptView,
    Raw,
    TaskView,
    WriteView,
    attach_writes,
    derive_tasks,
    parse_task_path,
)

_HEXISH = re.compile(r"^[0-9a-fA-F-]+$")
MIN_PREFIX = 4
LATEST = "latest"
_BACK = re.compile(r"^(?:latest)?~(\d{1,9})$")  # latest~N, ~N: N parents back, as git's HEAD~N
_SHOWN = 8  # ids an ambiguous selector lists


def is_selector(given: str) -> bool:
    """Whether ``given`` is ``latest``, ``latest~N`` or ``~N``: a name, not an id."""
    return given == LATEST or _BACK.match(given) is not None


def names_a_checkpoint(given: str) -> bool:
    """Whether ``given`` has a form ``Reader.resolve`` reads (a selector, or hex digits and
    dashes long enough), whether or not one checkpoint answers to it."""
    return is_selector(given) or (_HEXISH.match(given) is not None and len(given) >= MIN_PREFIX)


def shortest_ends(ids: list[str], chosen: list[str]) -> list[str]:
    """Each of ``chosen`` by the shortest end (at least ``MIN_PREFIX`` characters) that no
    other of ``ids`` starts or ends with: what a person types to name it (the whole id when
    none is shorter)."""
    out = []
    for cid in chosen:
        n = MIN_PREFIX
        while n < len(cid) and any(
            other != cid and (other.endswith(cid[-n:]) or other.startswith(cid[-n:])) for other in ids
        ):
            n += 1
        out.append(cid[-n:])
    return out


@dataclass(kw_only=True)
class StateView:
    """One checkpoint as a person (or script) reads it."""

    thread_id: str
    ns: str
    checkpoint_id: str
    record: CheckpointRecord
    path: Path
    trees: dict[str, Any]  # non-empty channels, stored JSON (append chains resolved)
    values: dict[str, Any]  # the same channels revived, or Raw
    metadata: Any
    writes: list[WriteView]
    tasks: list[TaskView]

    @property
    def parent_id(self) -> str | None:
        return self.record.parent_id

    @property
    def step(self) -> int | None:
        return self.record.step

    @property
    def source(self) -> str | None:
        return self.record.source

    @property
    def ts(self) -> str:
        return self.record.ts

    @property
    def interrupts(self) -> list[InterruptView]:
        """Interrupts still waiting: those of tasks that have not finished."""
        return [i for t in self.tasks if t.status == "interrupted" for i in t.interrupts]


@dataclass(kw_only=True)
class HistoryRow:
    checkpoint_id: str
    step: int | None
    source: str | None
    ts: str
    parent_id: str | None
    parent_present: bool
    writers: list[str]
    children: list[str] = field(default_factory=list)
    graph: str = ""


@dataclass(kw_only=True)
class ThreadSummary:
    thread_id: str
    namespaces: list[str]
    checkpoints: int
    latest_id: str
    latest_step: int | None
    last_updated: str
    forks: int
    next: list[str]
    waiting: list[InterruptView]
    live: dict[str, StateView] = field(default_factory=dict)  # latest of each namespace still in play
    channels: frozenset[str] = frozenset()  # what the latest state of the root namespace holds


# ----------------------------------------------------------------------
# reading
# ----------------------------------------------------------------------
def check_thread_id(thread_id: str) -> None:
    if any(ord(c) < 32 or c == "\x7f" for c in thread_id):
        raise BadInputError(f"malformed thread id {thread_id!r}: control characters cannot be part of an id")


def tree_of(entry: ValueEntry) -> Any:
    """A resolved value as stored: its JSON tree, or the serde type and base64 for raw values."""
    if entry.raw is not None:
        return {"serde": entry.raw[0], "base64": b64(entry.raw[1])}
    return entry.tree


class Reviver(Protocol):
    """What constructs values for a reader (serde.ValueCodec): types checked before any import;
    ``fix`` says how to allow a type it refused."""

    fix: Fix

    def revive(self, entry: ValueEntry, where: str, *, readable: bool = False) -> Any: ...

    def refused_types(self, types: Collection[TypeKey]) -> list[TypeKey]: ...


#: why a value of a reader without a reviver stays as stored
NOT_CONSTRUCTED = "shown as stored: this command constructs no values"


class Reader:
    """Reads one root through the saver's documents (validation, bounds) without ever
    writing state (only the derived index under ``.cache/``, index.py, which a read may leave);
    values are constructed only by the ``reviver`` it is given, if any."""

    def __init__(self, root: Path, *, reviver: Reviver | None = None, snapshots: bool = False) -> None:
        """``snapshots``: the store can read a thread as one snapshot (``ThreadStore.snapshot``),
        as ``threads`` does to learn which files a row of it is made of (overview.py)."""
        if not root.is_dir():
            raise NotFoundError(f"root {root} does not exist")
        self.root = root
        self.store = ThreadStore(root, snapshots=snapshots)
        self.layout = self.store.layout
        self.reviver = reviver
        # (module, name) of every type a value shown so far named and the reviver may not construct
        self.not_revived: dict[TypeKey, None] = {}

    @property
    def fix(self) -> Fix:
        """How to allow a type this reader left as stored."""
        return self.reviver.fix if self.reviver is not None else python_fix

    # -- names ------------------------------------------------------------------
    def thread_ids(self) -> list[str]:
        return self.store.thread_ids()

    def namespaces(self, thread_id: str) -> list[str]:
        """Namespaces of an existing thread (NotFoundError otherwise); the root one first.

        Any string is a thread id LangGraph accepts, control characters included; the
        command line shows such an id escaped (cli.output.SafeConsole), so it must also find it.
        """
        namespaces = [
            ns for ns in self.store.namespaces(thread_id) if self.store.checkpoint_ids(thread_id, ns)
        ]
        if not namespaces:
            raise NotFoundError(f"thread {thread_id!r} not found under {self.root}")
        return namespaces

    def resolve_ns(self, thread_id: str, ns: str) -> str:
        """An exact namespace, or the one namespace starting with ``ns`` + ':' (a node name)."""
        namespaces = self.namespaces(thread_id)
        if ns in namespaces:
            return ns
        matches = [n for n in namespaces if n.startswith(ns + ":") or (ns and n.startswith(ns))]
        if len(matches) == 1:
            return matches[0]
        if matches:
            raise BadInputError(
                f"namespace {ns!r} is ambiguous in thread {thread_id!r}: {', '.join(matches)}"
            )
        raise NotFoundError(f"namespace {ns!r} not found in thread {thread_id!r}")

    def checkpoint_ids(self, thread_id: str, ns: str) -> list[str]:
        return self.store.checkpoint_ids(thread_id, ns)

    def ids_by_file_name(self, thread_id: str, ns: str) -> dict[str, str]:
        """A namespace's checkpoint ids by their file's name (an id too long for a name is in
        a file named by its hash); none for a thread or namespace that does not read."""
        try:
            ids = self.checkpoint_ids(thread_id, ns)
        except (RepoCheckpointError, OSError):
            return {}
        return {self.layout.checkpoint_path(thread_id, ns, c).name: c for c in ids}

    def resolve(self, thread_id: str, ns: str, given: str | None) -> str:
        """The checkpoint ``given`` names (docs/cli.md, "Naming a checkpoint"): none or
        ``latest`` for the latest, ``latest~N`` or ``~N`` for N parents back from it, else a
        full id, or the start or the end of exactly one id (ids share their time prefix: the
        end tells them apart sooner)."""
        ids = self.checkpoint_ids(thread_id, ns)
        if not ids:
            raise NotFoundError(f"thread {thread_id!r} has no checkpoints in namespace {ns!r}")
        where = f"thread {thread_id!r}" + (f" namespace {ns!r}" if ns else "")
        if given in ids:  # an id is itself first, whatever it looks like (another saver's ids)
            return given
        back = _BACK.match(given or "")
        if given is None or given == LATEST or back:
            latest = self.store.current(thread_id, ns) or ids[-1]
            return self._back(thread_id, ns, latest, int(back.group(1)), where) if back else latest
        if not _HEXISH.match(given):
            raise BadInputError(
                f"malformed checkpoint id {given!r}: expected hex digits and dashes, latest or latest~N"
            )
        if len(given) < MIN_PREFIX:
            raise BadInputError(
                f"checkpoint id {given!r} is too short: give at least {MIN_PREFIX} characters"
            )
        low = given.lower()
        matches = [i for i in ids if i.startswith(low) or i.endswith(low)]
        if len(matches) > 1:
            shown = ", ".join(shortest_ends(ids, matches[:_SHOWN]))
            more = f" (and {len(matches) - _SHOWN} more)" if len(matches) > _SHOWN else ""
            raise BadInputError(
                f"checkpoint id {given!r} is ambiguous in {where}: {len(matches)} match: {shown}{more}"
            )
        if not matches:
            raise NotFoundError(f"checkpoint {given!r} not found in {where}")
        return matches[0]

    def _back(self, thread_id: str, ns: str, latest: str, steps: int, where: str) -> str:
        """The checkpoint ``steps`` parents up from ``latest``, as git's ``HEAD~N``."""
        links = self.store.lineage(thread_id, ns).links
        here, walked, seen = latest, 0, {latest}
        while walked < steps:
            link = links.get(here)
            parent = link.parent if link is not None else None
            if parent is None or parent not in links:
                raise NotFoundError(
                    f"{LATEST}~{steps} is before the first checkpoint of {where}: "
                    f"the latest has {walked} checkpoint{'s' if walked != 1 else ''} before it"
                )
            if parent in seen:  # parent links that go round (a hand edit): validate names them
                raise BadInputError(f"{LATEST}~{steps}: the parent links of {where} go round at {parent}")
            seen.add(parent)
            here, walked = parent, walked + 1
        return here

    def checkpoint_path(self, thread_id: str, ns: str, cid: str) -> Path:
        return self.layout.checkpoint_path(thread_id, ns, cid)

    def get(self, thread_id: str, ns: str, cid: str) -> CheckpointRecord:
        """One checkpoint, whole, as a record (ThreadStore.get)."""
        return self.store.get(thread_id, ns, cid)

    def ancestors(
        self, thread_id: str, ns: str, cid: str, stop: Callable[[str], bool] | None = None
    ) -> Iterator[CheckpointRecord]:
        """The walk up from ``cid`` (ThreadStore.ancestors), ending before a parent ``stop``
        names; a cycle ends it: a view shows what it can, validate names the cycle."""
        return self.store.ancestors(thread_id, ns, cid, strict=False, stop=stop)

    def metadata(self, thread_id: str, ns: str, cid: str) -> Any:
        """A checkpoint's metadata: revived by the reviver, else as stored."""
        path = self.layout.checkpoint_path(thread_id, ns, cid)
        tree = self.get(thread_id, ns, cid).metadata
        where = f"thread {thread_id!r} checkpoint {cid} metadata ({path})"
        entry = ValueEntry(empty=False, whole=tree, types=frozenset(named_types(tree)), where=where)
        return self._revive(entry, where, tree, readable=True)

    # -- one checkpoint -------------------------------------------------------------
    def state(self, thread_id: str, ns: str, cid: str, *, revive: bool = True) -> StateView:
        """A checkpoint's values, pending writes and next tasks."""
        record = self.store.get(thread_id, ns, cid)
        trees: dict[str, Any] = {}
        values: dict[str, Any] = {}
        for channel in record.values:
            entry = self.store.channel_value(record, channel)
            if entry.empty:
                continue
            trees[channel] = tree_of(entry)
            if revive:
                where = f"thread {thread_id!r} checkpoint {cid} channel {channel!r} ({entry.where})"
                values[channel] = self._revive(entry, where, trees[channel])
        path = self.layout.checkpoint_path(thread_id, ns, cid)
        metadata: Any = self.metadata(thread_id, ns, cid) if revive else record.metadata
        writes = self.pending_writes(thread_id, ns, cid, revive=revive)
        tasks = attach_writes(derive_tasks(record, set(trees), trees.get(TASKS)), writes)
        return StateView(
            thread_id=thread_id,
            ns=ns,
            checkpoint_id=cid,
            record=record,
            path=path,
            trees=trees,
            values=values,
            metadata=metadata,
            writes=writes,
            tasks=tasks,
        )

    def _revive(self, entry: ValueEntry, where: str, tree: Any, *, readable: bool = False) -> Any:
        """The reviver's value (its allowlist checked before any import), or the stored tree
        with what may be constructed of it constructed (``Raw``)."""
        if self.reviver is None:
            if entry.types or entry.raw is not None:
                return Raw(tree, NOT_CONSTRUCTED, tree)
            try:
                return plain_value(tree)  # names no type: nothing to construct
            except ValueError as exc:
                return Raw(tree, f"{where}: malformed value: {exc}", tree)
        if readable and not entry.types:
            return self.reviver.revive(entry, where, readable=True)
        try:
            return self.reviver.revive(entry, where, readable=readable)
        except UnrevivableValueError as exc:
            return Raw(tree, str(exc), None if entry.raw is not None else self.readable(tree))

    def readable(self, tree: Any) -> Any:
        """A stored tree for a person (``present.readable``): every part the reviver may
        construct constructed, the rest as stored; notes the types left as trees."""
        if self.reviver is None:
            return tree
        refused = self.reviver.refused_types(named_types(tree))
        self.not_revived.update(dict.fromkeys(refused))
        if not refused:  # all of it may be constructed: one revive, or its error
            try:
                return self._revive_tree(tree)
            except UnrevivableValueError:
                pass
        return readable_tree(tree, self._revive_tree)

    def _revive_tree(self, tree: Any) -> Any:
        assert self.reviver is not None
        where = "a value shown"
        entry = ValueEntry(empty=False, whole=tree, types=frozenset(named_types(tree)), where=where)
        return self.reviver.revive(entry, where, readable=True)

    def pending_writes(self, thread_id: str, ns: str, cid: str, *, revive: bool = True) -> list[WriteView]:
        """Writes merged and ordered as ``get_tuple`` returns them, each value revived or Raw."""
        out = []
        for w in merged_writes(self.store, thread_id, ns, cid):
            resolved, holder = self.store.values.resolve_node(w.node, w.path)
            entry = entry_from_node(resolved, str(holder))
            tree = tree_of(entry)
            value: Any = tree
            if revive:
                at = f"{holder} at {w.pointer}" if holder == w.path else f"{holder} at /value"
                where = (
                    f"thread {thread_id!r} checkpoint {cid} write {w.channel!r} of task {w.task_id} ({at})"
                )
                value = self._revive(entry, where, tree)
            out.append(
                WriteView(
                    task_id=w.task_id,
                    task_path=w.task_path,
                    channel=w.channel,
                    idx=w.idx,
                    tree=tree,
                    value=value,
                    file=w.path,
                )
            )
        return out

    def finished_task_names(self, thread_id: str, ns: str, cid: str) -> list[str]:
        """Nodes whose tasks finished at ``cid`` (their writes made its child), from the files only."""
        record = self.get(thread_id, ns, cid)
        sends: Any = None
        names: dict[str, str] = {}
        done: set[str] = set()
        for found in self.store.writes_records(thread_id, ns, cid):
            task = found.task
            if task.task_id == NULL_TASK_ID:
                continue
            kind, key = parse_task_path(task.task_path)
            if kind == "pull" and isinstance(key, str):
                names[task.task_id] = key
            elif kind == "push" and isinstance(key, int):
                if sends is None:
                    sends = self._sends(thread_id, ns, record)
                node = send_node(sends[key]) if isinstance(sends, list) and key < len(sends) else None
                names[task.task_id] = node or "?"
            if any(w["channel"] not in CONTROL_WRITES for w in task.writes):
                done.add(task.task_id)
        return sorted({names.get(t, "?") for t in done})

    def _sends(self, thread_id: str, ns: str, record: CheckpointRecord) -> Any:
        ref = record.values.get(TASKS)
        if ref is None:
            return None
        entry = self.store.values.value_entry(
            self.layout.ns_dir(thread_id, ns), TASKS, record.channel_versions.get(TASKS), ref
        )
        return None if entry.empty else entry.tree

    # -- history ----------------------------------------------------------------------
    def history(self, thread_id: str, ns: str) -> list[HistoryRow]:
        """Every checkpoint of a namespace, newest first, with who wrote it and a fork graph."""
        ids = self.checkpoint_ids(thread_id, ns)
        present = set(ids)
        rows: dict[str, HistoryRow] = {}
        finished: dict[str, list[str]] = {}  # per parent: read once, however many children it has
        for cid in reversed(ids):
            record = self.get(thread_id, ns, cid)
            parent = record.parent_id
            meta = record.metadata
            source = meta.get("source") if isinstance(meta.get("source"), str) else None
            step = meta.get("step") if isinstance(meta.get("step"), int) else None
            if source == "loop" and parent in present:
                if parent not in finished:
                    finished[parent] = self.finished_task_names(thread_id, ns, parent)
                writers = list(finished[parent])
            elif source == "input":
                writers = ["(input)"]
            elif source == "update":
                name = migration_name(meta)
                writers = ["(update_state)" if name is None else f"(migration {name})"]
            elif source == "fork":
                writers = ["(fork)"]
            else:
                writers = []
            rows[cid] = HistoryRow(
                checkpoint_id=cid,
                step=step,
                source=source,
                ts=record.ts,
                parent_id=parent,
                parent_present=parent in present,
                writers=writers,
            )
        for row in rows.values():
            if row.parent_id in rows:
                rows[row.parent_id].children.append(row.checkpoint_id)
        ordered = [rows[c] for c in reversed(ids)]
        for row, picture in zip(ordered, fork_graph(ordered), strict=True):
            row.graph = picture
            row.children.sort()
        return ordered

    # -- whole threads ---------------------------------------------------------------------
    def summary(self, thread_id: str) -> ThreadSummary:
        """One row of ``threads``: counts, the latest step and what the thread waits for."""
        namespaces = self.namespaces(thread_id)
        root_ns = "" if "" in namespaces else namespaces[0]
        ids = self.checkpoint_ids(thread_id, root_ns)
        total = sum(len(self.checkpoint_ids(thread_id, ns)) for ns in namespaces)
        parents = {self.get(thread_id, root_ns, c).parent_id for c in ids}
        leaves = [c for c in ids if c not in parents]
        live = self.live_states(thread_id, namespaces, root_ns)
        latest = live[root_ns]
        nxt = sorted({t.name for s in live.values() for t in s.tasks if t.runs_on_resume})
        waiting = [i for i in latest.interrupts]
        return ThreadSummary(
            thread_id=thread_id,
            namespaces=namespaces,
            checkpoints=total,
            latest_id=latest.checkpoint_id,
            latest_step=latest.step,
            last_updated=latest.ts,
            forks=max(len(leaves) - 1, 0),
            next=nxt,
            waiting=waiting,
            live=live,
            channels=frozenset(latest.trees),
        )

    def live_states(self, thread_id: str, namespaces: list[str], root_ns: str = "") -> dict[str, StateView]:
        """The latest state of the root namespace and of each subgraph namespace that belongs
        to a task still to run there (``node:<task id>`` under a live parent), recursively."""
        live: dict[str, StateView] = {}
        live[root_ns] = self.state(thread_id, root_ns, self.resolve(thread_id, root_ns, None), revive=False)
        for ns in sorted((n for n in namespaces if n != root_ns), key=lambda n: n.count("|")):
            parent_ns, _, last = ns.rpartition("|")
            parent = live.get(parent_ns)
            if parent is None:
                continue
            pending = {t.id for t in parent.tasks if t.runs_on_resume}
            if last.rpartition(":")[2] in pending:
                live[ns] = self.state(thread_id, ns, self.resolve(thread_id, ns, None), revive=False)
        return live

    def metadata_trees(self, thread_id: str, ns: str) -> Iterable[dict[str, Any]]:
        for cid in self.checkpoint_ids(thread_id, ns):
            yield self.get(thread_id, ns, cid).metadata

    def thread_files(self, thread_id: str) -> list[Path]:
        tdir = self.layout.thread_dir(thread_id)
        return sorted(p for p in tdir.rglob("*") if p.is_file())


# ----------------------------------------------------------------------
# fork graph: lanes like ``git log --graph``, newest first
# ----------------------------------------------------------------------
MAX_LANES = 32  # lanes drawn; more (thousands of siblings) end in "⋯": a picture per row stays short


def fork_graph(rows: Sequence[HistoryRow]) -> list[str]:
    """One picture per row: ``●`` the checkpoint, ``│`` other branches, ``─┘`` a branch
    joining its fork point (where a checkpoint has several children).

    O(n log n) over the rows, each picture at most ``MAX_LANES`` lanes wide: lanes waiting
    for a checkpoint are found by its id and free lanes from a heap, not by scanning every
    lane, so a namespace with thousands of heads draws in time and space linear in its rows."""
    lanes: list[str | None] = []  # the parent each lane waits for
    waiting: dict[str, list[int]] = {}  # checkpoint id -> lanes that were set to wait for it
    free: list[int] = []  # heap of lanes that were freed (checked against ``lanes`` when used)
    out: list[str] = []
    for row in rows:
        hits = sorted(
            i for i in waiting.pop(row.checkpoint_id, []) if i < len(lanes) and lanes[i] == row.checkpoint_id
        )
        while free and (free[0] >= len(lanes) or lanes[free[0]] is not None):
            heapq.heappop(free)  # taken again since, or cut off the end
        if hits:
            col = hits[0]
        elif free:
            col = heapq.heappop(free)
        else:
            col = len(lanes)
            lanes.append(None)
        last = hits[-1] if len(hits) > 1 else col
        joined = set(hits)
        cells: list[str] = []
        for i in range(min(len(lanes), MAX_LANES)):
            inside = col < i <= last
            if i == col:
                cell = "●"
            elif i in joined:
                cell = "┘" if i == last else "┴"
            elif lanes[i] is not None:
                cell = "┼" if inside else "│"
            else:
                cell = "─" if inside else " "
            cells.append(cell)
            if i < len(lanes) - 1:
                cells.append("─" if col <= i < last else " ")
        if len(lanes) > MAX_LANES:
            cells.append("⋯●" if col >= MAX_LANES else "⋯")
        out.append("".join(cells).rstrip())
        for i in hits[1:]:
            lanes[i] = None
            heapq.heappush(free, i)
        lanes[col] = row.parent_id if row.parent_present else None
        if lanes[col] is None:
            heapq.heappush(free, col)
        else:
            waiting.setdefault(row.parent_id or "", []).append(col)
        while lanes and lanes[-1] is None:
            lanes.pop()
    return out


# ----------------------------------------------------------------------
# diffs between two checkpoints, on the stored trees
# ----------------------------------------------------------------------
