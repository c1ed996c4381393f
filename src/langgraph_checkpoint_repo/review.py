"""Read-only views of stored threads for people and scripts: state, next tasks, history, diffs.

The command line has the files, not the graph, so what ``graph.get_state()`` would work
out from the compiled graph is derived here from what each checkpoint stores:

* next tasks: a ``Send`` in ``__pregel_tasks`` is a push task; a node whose trigger channel
  (``__start__``, ``branch:to:<node>``, ``join:...:<node>``) holds a value at a version the
  node has not seen (``versions_seen``) is a pull task. Task ids are computed the way
  LangGraph computes them, so they match the ids in pending writes and subgraph namespaces.
* a task's status follows LangGraph's rules for pending writes (``_task_status.py``): a
  task with an output write finished; otherwise its error or interrupt says what happened.

Values are read through the saver's own validation and allowlist (``Reader(allowlist=...)``:
the command line's ``--allow`` and pyproject table). A value the allowlist refuses (a
graph's own state type: the command line never imports user code named in a file) is kept
as its stored JSON tree (``Raw``), with what may be constructed of it for a person to read.
"""

from __future__ import annotations

import binascii
import bisect
import hashlib
import heapq
import re
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson
import xxhash

from .codec import Fix, _b64, named_types, readable
from .entries import ValueEntry, entry_from_node
from .errors import BadInputError as BadInputError  # re-exported: its old home
from .errors import NotFoundError as NotFoundError  # re-exported: its old home
from .errors import UnrevivableValueError
from .saver import RepoSaver
from .store import FileStore
from .values import merged_writes

START = "__start__"
TASKS = "__pregel_tasks"
PUSH = "__pregel_push"
PULL = "__pregel_pull"
INTERRUPT = "__interrupt__"
RESUME = "__resume__"
ERROR = "__error__"
NULL_TASK_ID = "00000000-0000-0000-0000-000000000000"
# writes that say what happened to a task rather than what it produced (LangGraph's CONTROL_WRITES)
CONTROL_WRITES = frozenset({ERROR, "__error_source_node__", INTERRUPT, RESUME})
_HEXISH = re.compile(r"^[0-9a-fA-F-]+$")
MIN_PREFIX = 4


def is_internal(channel: str) -> bool:
    """LangGraph's own channels (triggers, sends): next tasks show them, the state does not."""
    return channel.startswith(("__", "branch:to:", "join:"))


@dataclass(frozen=True)
class Raw:
    """A stored value that was not revived; ``tree`` is its JSON as it is on disk, ``shown``
    the same with every part this reader may construct constructed (``present.readable``)."""

    tree: Any
    reason: str
    shown: Any = None


@dataclass
class WriteView:
    """One pending write, merged as the saver merges them (first regular write wins)."""

    task_id: str
    task_path: str
    channel: str
    idx: int
    tree: Any
    value: Any
    file: Path


@dataclass
class InterruptView:
    """An interrupt a task raised; ``value`` is revived (or Raw), ``tree`` as stored."""

    id: str | None
    value: Any
    tree: Any
    task_name: str
    task_id: str


@dataclass
class TaskView:
    """One task of the next step and what its pending writes say happened to it."""

    name: str
    id: str | None
    kind: str  # "pull", "push <idx>", or the stored task path when not derived
    derived: bool = True  # False: known only from writes (not among the derived next tasks)
    writes: list[WriteView] = field(default_factory=list)
    status: str = "not started"  # done | failed | interrupted | not started | may have run
    error: Any = None
    interrupts: list[InterruptView] = field(default_factory=list)
    answered: bool = False  # a resume value is saved for it
    may_have_run: bool = False  # no writes, but its step had started: side effects possible

    @property
    def runs_on_resume(self) -> bool:
        return self.status != "done"


@dataclass
class StateView:
    """One checkpoint as a person (or script) reads it."""

    thread_id: str
    ns: str
    checkpoint_id: str
    doc: dict[str, Any]
    path: Path
    trees: dict[str, Any]  # non-empty channels, stored JSON (append chains resolved)
    values: dict[str, Any]  # the same channels revived, or Raw
    metadata: Any
    writes: list[WriteView]
    tasks: list[TaskView]

    @property
    def parent_id(self) -> str | None:
        return self.doc["parent_checkpoint_id"]  # type: ignore[no-any-return]

    @property
    def step(self) -> int | None:
        step = self.doc["metadata"].get("step")
        return step if isinstance(step, int) else None

    @property
    def source(self) -> str | None:
        source = self.doc["metadata"].get("source")
        return source if isinstance(source, str) else None

    @property
    def ts(self) -> str:
        return str(self.doc["checkpoint"]["ts"])

    @property
    def interrupts(self) -> list[InterruptView]:
        """Interrupts still waiting: those of tasks that have not finished."""
        return [i for t in self.tasks if t.status == "interrupted" for i in t.interrupts]


@dataclass
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


@dataclass
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


@dataclass
class ChannelChange:
    """What happened to one channel between two checkpoints."""

    channel: str
    kind: str  # added | removed | changed | list | keys
    old: Any = None  # trees
    new: Any = None
    added: list[tuple[int, Any]] = field(default_factory=list)  # list items: (index in new, tree)
    removed: list[tuple[int, Any]] = field(default_factory=list)  # (index in old, tree)
    keys_added: dict[str, Any] = field(default_factory=dict)
    keys_changed: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    keys_removed: dict[str, Any] = field(default_factory=dict)


# ----------------------------------------------------------------------
# task ids, as LangGraph's prepare_single_task computes them
# ----------------------------------------------------------------------
def task_id(version: int, checkpoint_id: str, ns: str, step: int, name: str, *parts: str) -> str | None:
    """The id LangGraph gives a task of the step after ``checkpoint_id`` (None for non-UUID ids)."""
    try:
        key = binascii.unhexlify(checkpoint_id.replace("-", ""))
    except (binascii.Error, ValueError):
        return None
    task_ns = f"{ns}|{name}" if ns else name
    data = b"".join(p.encode() for p in (task_ns, str(step), name, *parts))
    if version > 1:
        hexed = xxhash.xxh3_128_hexdigest(key + data)
    else:
        sha = hashlib.sha1(key, usedforsecurity=False)
        sha.update(data)
        hexed = sha.hexdigest()
    return f"{hexed[:8]}-{hexed[8:12]}-{hexed[12:16]}-{hexed[16:20]}-{hexed[20:32]}"


def trigger_node(channel: str) -> str | None:
    """The node a trigger channel starts, or None for a state channel."""
    if channel == START:
        return START
    if channel.startswith("branch:to:"):
        return channel[len("branch:to:") :]
    if channel.startswith("join:"):
        return channel.rsplit(":", 1)[1]
    return None


def _newer(version: Any, seen: Any) -> bool:
    try:
        return bool(version > seen)
    except TypeError:  # versions of different types (a thread moved between savers)
        return str(version) > str(seen)


def send_node(packet: Any) -> str | None:
    """The node a stored ``Send`` tree goes to."""
    if isinstance(packet, dict) and packet.get("$type") == ["langgraph.types", "Send"]:
        args = packet.get("$args")
        if isinstance(args, list) and args and isinstance(args[0], str):
            return args[0]
        kwargs = packet.get("$kwargs")
        if isinstance(kwargs, dict) and isinstance(kwargs.get("node"), str):
            return str(kwargs["node"])
    return None


def parse_task_path(path: str) -> tuple[str, str | int | None]:
    """``~__pregel_pull, node`` -> ("pull", node); ``~__pregel_push, 0000000002, ...`` -> ("push", 2)."""
    parts = path.lstrip("~").split(", ")
    if len(parts) >= 2 and parts[0] == PULL:
        return "pull", ", ".join(parts[1:])
    if len(parts) >= 2 and parts[0] == PUSH and parts[1].isdigit():
        return "push", int(parts[1])
    return "other", None


def derive_tasks(doc: dict[str, Any], available: set[str], sends: Any) -> list[TaskView]:
    """The next tasks of a checkpoint, from its versions and trigger channels only."""
    cp = doc["checkpoint"]
    versions: dict[str, Any] = cp["channel_versions"]
    seen_all: dict[str, dict[str, Any]] = cp["versions_seen"]
    meta_step = doc["metadata"].get("step")
    step = (meta_step if isinstance(meta_step, int) else -1) + 1
    ns, cid, v = doc["checkpoint_ns"], doc["checkpoint_id"], int(cp["v"])
    tasks: list[TaskView] = []
    if TASKS in available and isinstance(sends, list):
        for idx, packet in enumerate(sends):
            node = send_node(packet)
            if node is not None:
                tasks.append(TaskView(node, task_id(v, cid, ns, step, node, PUSH, str(idx)), f"push {idx}"))
    triggers: dict[str, list[str]] = {}
    for channel in versions:
        node = trigger_node(channel)
        if node is not None:
            triggers.setdefault(node, []).append(channel)
    updated = cp.get("updated_channels")
    if updated:  # LangGraph looks only at nodes an updated channel triggers
        candidates = sorted(n for n, chans in triggers.items() if set(chans) & set(updated))
    else:
        candidates = sorted(triggers)
    null = type(next(iter(versions.values())))() if versions else None
    for node in candidates:
        seen = seen_all.get(node)
        chans = triggers[node]
        if any(
            ch in available and (seen is None or _newer(versions.get(ch, null), seen.get(ch, null)))
            for ch in chans
        ):
            tasks.append(TaskView(node, task_id(v, cid, ns, step, node, PULL, *sorted(chans)), "pull"))
    return tasks


def attach_writes(tasks: list[TaskView], writes: list[WriteView]) -> list[TaskView]:
    """Give each task its pending writes and status; writes of unknown tasks become tasks too."""
    by_task: dict[str, list[WriteView]] = {}
    for w in writes:
        if w.task_id != NULL_TASK_ID:
            by_task.setdefault(w.task_id, []).append(w)
    by_id = {t.id: t for t in tasks if t.id is not None}
    out = list(tasks)
    for tid, ws in by_task.items():
        task = by_id.get(tid)
        if task is None:
            kind, key = parse_task_path(ws[0].task_path)
            for cand in tasks:
                if cand.writes or cand.id in by_task:
                    continue
                if (kind == "pull" and cand.kind == "pull" and cand.name == key) or (
                    kind == "push" and cand.kind == f"push {key}"
                ):
                    task = cand
                    task.id = tid
                    break
        if task is None:
            kind, key = parse_task_path(ws[0].task_path)
            name = key if kind == "pull" and isinstance(key, str) else "?"
            task = TaskView(name, tid, ws[0].task_path, derived=False)
            out.append(task)
        task.writes = ws
    resumed_all = any(w.task_id == NULL_TASK_ID and w.channel == RESUME for w in writes)
    for task in out:
        _set_status(task, resumed_all)
    started = any(t.writes for t in out)
    for task in out:
        task.may_have_run = started and not task.writes
        if task.may_have_run:
            task.status = "may have run"
    return out


def _set_status(task: TaskView, resumed_all: bool) -> None:
    output = [w for w in task.writes if w.channel not in CONTROL_WRITES]
    errors = [w for w in task.writes if w.channel == ERROR]
    task.answered = resumed_all or any(w.channel == RESUME for w in task.writes)
    task.error = errors[-1].value if errors else None
    for w in task.writes:
        if w.channel == INTERRUPT:
            task.interrupts.extend(_interrupts(w, task))
    if output:
        task.status = "done"
    elif errors:
        task.status = "failed"
    elif task.interrupts or task.answered:
        task.status = "interrupted"
    else:
        task.status = "not started"


def _interrupts(write: WriteView, task: TaskView) -> list[InterruptView]:
    """The interrupts of one ``__interrupt__`` write: ids and payloads from the stored trees,
    payloads revived when the write was (a revived ``Interrupt`` carries ``.value``)."""
    trees = write.tree if isinstance(write.tree, list) else [write.tree]
    revived = write.value if isinstance(write.value, (list, tuple)) else None
    out = []
    for i, tree in enumerate(trees):
        kwargs = tree.get("$kwargs") if isinstance(tree, dict) else None
        kwargs = kwargs if isinstance(kwargs, dict) else {}
        iid = kwargs.get("id")
        payload_tree = kwargs.get("value", tree)
        value: Any = payload_tree
        if isinstance(write.value, Raw):
            value = Raw(payload_tree, write.value.reason)
        elif revived is not None and i < len(revived) and hasattr(revived[i], "value"):
            value = revived[i].value
        iid = iid if isinstance(iid, str) else None
        out.append(InterruptView(iid, value, payload_tree, task.name, task.id or ""))
    return out


# ----------------------------------------------------------------------
# reading
# ----------------------------------------------------------------------
def check_thread_id(thread_id: str) -> None:
    if any(ord(c) < 32 or c == "\x7f" for c in thread_id):
        raise BadInputError(f"malformed thread id {thread_id!r}: control characters cannot be part of an id")


def tree_of(entry: ValueEntry) -> Any:
    """A resolved value as stored: its JSON tree, or the serde type and base64 for raw values."""
    if entry.raw is not None:
        return {"serde": entry.raw[0], "base64": _b64(entry.raw[1])}
    return entry.tree


class Reader:
    """Reads one root through a RepoSaver (validation, allowlist) without ever writing state
    (only the derived index under ``.cache/``, index.py, which a read may leave)."""

    def __init__(
        self,
        root: Path,
        *,
        allowlist: Collection[tuple[str, ...]] = (),
        fix: Fix | None = None,
    ) -> None:
        """``allowlist``: the types (module, name) it may construct besides LangGraph's safe
        ones; ``fix``: what a refusal tells the user to do (the command line's options)."""
        if not root.is_dir():
            raise NotFoundError(f"root {root} does not exist")
        self.root = root
        self.saver = RepoSaver(root, allowlist=list(allowlist) or None)
        if fix is not None:
            self.saver.codec.fix = fix
        self.store: FileStore = self.saver.store
        self.layout = self.store.layout
        # (module, name) of every type a value shown so far named and this reader may not construct
        self.not_revived: dict[tuple[str, ...], None] = {}

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

    def resolve(self, thread_id: str, ns: str, given: str | None) -> str:
        """The latest checkpoint, or the one ``given`` names (a full id or a unique prefix)."""
        ids = self.checkpoint_ids(thread_id, ns)
        if not ids:
            raise NotFoundError(f"thread {thread_id!r} has no checkpoints in namespace {ns!r}")
        if given is None:
            return ids[-1]
        if given in ids:
            return given
        where = f"thread {thread_id!r}" + (f" namespace {ns!r}" if ns else "")
        if not _HEXISH.match(given):
            raise BadInputError(f"malformed checkpoint id {given!r}: expected hex digits and dashes")
        if len(given) < MIN_PREFIX:
            raise BadInputError(
                f"checkpoint id {given!r} is too short: give at least {MIN_PREFIX} characters"
            )
        matches = [i for i in ids if i.startswith(given.lower())]
        if len(matches) > 1:
            raise BadInputError(f"checkpoint id {given!r} is ambiguous in {where}: {len(matches)} match")
        if not matches:
            raise NotFoundError(f"checkpoint {given!r} not found in {where}")
        return matches[0]

    def checkpoint_path(self, thread_id: str, ns: str, cid: str) -> Path:
        return self.layout.checkpoint_path(thread_id, ns, cid)

    def header(self, thread_id: str, ns: str, cid: str) -> dict[str, Any]:
        return self.store.cached_header(thread_id, ns, cid)

    # -- one checkpoint -------------------------------------------------------------
    def state(self, thread_id: str, ns: str, cid: str, *, revive: bool = True) -> StateView:
        """A checkpoint's values, pending writes and next tasks."""
        doc = self.store.header(thread_id, ns, cid)
        ns_dir = self.layout.ns_dir(thread_id, ns)
        versions = doc["checkpoint"]["channel_versions"]
        trees: dict[str, Any] = {}
        values: dict[str, Any] = {}
        for channel, ref in doc["values"].items():
            entry = self.store.value_entry(ns_dir, channel, versions.get(channel), ref)
            if entry.empty:
                continue
            trees[channel] = tree_of(entry)
            if revive:
                where = f"thread {thread_id!r} checkpoint {cid} channel {channel!r} ({entry.where})"
                values[channel] = self._revive(entry, where, trees[channel])
        path = self.layout.checkpoint_path(thread_id, ns, cid)
        metadata: Any = doc["metadata"]
        if revive:
            where = f"thread {thread_id!r} checkpoint {cid} metadata ({path})"
            meta_tree = doc["metadata"]
            types = frozenset(named_types(meta_tree))
            metadata = self._revive(ValueEntry(False, meta_tree, types=types, where=where), where, meta_tree)
        writes = self.pending_writes(thread_id, ns, cid, revive=revive)
        tasks = attach_writes(derive_tasks(doc, set(trees), trees.get(TASKS)), writes)
        return StateView(thread_id, ns, cid, doc, path, trees, values, metadata, writes, tasks)

    def _revive(self, entry: ValueEntry, where: str, tree: Any) -> Any:
        """The saver's own revive (allowlist checked before any import), or the stored tree
        with what may be constructed of it constructed."""
        try:
            return self.saver.revive(entry, where)
        except UnrevivableValueError as exc:
            return Raw(tree, str(exc), None if entry.raw is not None else self.readable(tree))

    def readable(self, tree: Any) -> Any:
        """A stored tree for a person (``present.readable``), noting the types left as trees."""
        refused = self.saver.codec.refused_types(named_types(tree))
        self.not_revived.update(dict.fromkeys(refused))
        if not refused:  # all of it may be constructed: one revive, or its error
            try:
                return self._revive_tree(tree)
            except UnrevivableValueError:
                pass
        return readable(tree, self._revive_tree)

    def _revive_tree(self, tree: Any) -> Any:
        where = "a value shown"
        entry = ValueEntry(False, tree, types=frozenset(named_types(tree)), where=where)
        return self.saver.revive(entry, where, readable=True)

    def pending_writes(self, thread_id: str, ns: str, cid: str, *, revive: bool = True) -> list[WriteView]:
        """Writes merged and ordered as ``get_tuple`` returns them, each value revived or Raw."""
        out = []
        for w in merged_writes(self.store, thread_id, ns, cid):
            resolved, holder = self.store.resolve_node(w.node, w.path)
            entry = entry_from_node(resolved, str(holder))
            tree = tree_of(entry)
            value: Any = tree
            if revive:
                at = f"{holder} at /writes/{w.index}/value" if holder == w.path else f"{holder} at /value"
                where = (
                    f"thread {thread_id!r} checkpoint {cid} write {w.channel!r} of task {w.task_id} ({at})"
                )
                value = self._revive(entry, where, tree)
            out.append(WriteView(w.task_id, w.task_path, w.channel, w.idx, tree, value, w.path))
        return out

    def finished_task_names(self, thread_id: str, ns: str, cid: str) -> list[str]:
        """Nodes whose tasks finished at ``cid`` (their writes made its child), from the files only."""
        doc = self.header(thread_id, ns, cid)
        sends: Any = None
        names: dict[str, str] = {}
        done: set[str] = set()
        for _, wdoc in self.store.writes_docs(thread_id, ns, cid):
            if wdoc["task_id"] == NULL_TASK_ID:
                continue
            kind, key = parse_task_path(wdoc["task_path"])
            if kind == "pull" and isinstance(key, str):
                names[wdoc["task_id"]] = key
            elif kind == "push" and isinstance(key, int):
                if sends is None:
                    sends = self._sends(thread_id, ns, doc)
                node = send_node(sends[key]) if isinstance(sends, list) and key < len(sends) else None
                names[wdoc["task_id"]] = node or "?"
            if any(w["channel"] not in CONTROL_WRITES for w in wdoc["writes"]):
                done.add(wdoc["task_id"])
        return sorted({names.get(t, "?") for t in done})

    def _sends(self, thread_id: str, ns: str, doc: dict[str, Any]) -> Any:
        ref = doc["values"].get(TASKS)
        if ref is None:
            return None
        entry = self.store.value_entry(
            self.layout.ns_dir(thread_id, ns), TASKS, doc["checkpoint"]["channel_versions"].get(TASKS), ref
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
            doc = self.header(thread_id, ns, cid)
            meta = doc["metadata"]
            parent = doc["parent_checkpoint_id"]
            source = meta.get("source") if isinstance(meta.get("source"), str) else None
            step = meta.get("step") if isinstance(meta.get("step"), int) else None
            if source == "loop" and parent in present:
                if parent not in finished:
                    finished[parent] = self.finished_task_names(thread_id, ns, parent)
                writers = list(finished[parent])
            elif source == "input":
                writers = ["(input)"]
            elif source == "update":
                writers = ["(update_state)"]
            elif source == "fork":
                writers = ["(fork)"]
            else:
                writers = []
            rows[cid] = HistoryRow(
                cid, step, source, str(doc["checkpoint"]["ts"]), parent, parent in present, writers
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
        parents = {self.header(thread_id, root_ns, c)["parent_checkpoint_id"] for c in ids}
        leaves = [c for c in ids if c not in parents]
        live = self.live_states(thread_id, namespaces, root_ns)
        latest = live[root_ns]
        nxt = sorted({t.name for s in live.values() for t in s.tasks if t.runs_on_resume})
        waiting = [i for i in latest.interrupts]
        return ThreadSummary(
            thread_id,
            namespaces,
            total,
            latest.checkpoint_id,
            latest.step,
            latest.ts,
            max(len(leaves) - 1, 0),
            nxt,
            waiting,
            live,
        )

    def live_states(self, thread_id: str, namespaces: list[str], root_ns: str = "") -> dict[str, StateView]:
        """The latest state of the root namespace and of each subgraph namespace that belongs
        to a task still to run there (``node:<task id>`` under a live parent), recursively."""
        live: dict[str, StateView] = {}
        root_ids = self.checkpoint_ids(thread_id, root_ns)
        live[root_ns] = self.state(thread_id, root_ns, root_ids[-1], revive=False)
        for ns in sorted((n for n in namespaces if n != root_ns), key=lambda n: n.count("|")):
            parent_ns, _, last = ns.rpartition("|")
            parent = live.get(parent_ns)
            if parent is None:
                continue
            pending = {t.id for t in parent.tasks if t.runs_on_resume}
            if last.rpartition(":")[2] in pending:
                ids = self.checkpoint_ids(thread_id, ns)
                live[ns] = self.state(thread_id, ns, ids[-1], revive=False)
        return live

    def metadata_trees(self, thread_id: str, ns: str) -> Iterable[dict[str, Any]]:
        for cid in self.checkpoint_ids(thread_id, ns):
            yield self.header(thread_id, ns, cid)["metadata"]

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
def _key(tree: Any) -> bytes:
    return orjson.dumps(tree, option=orjson.OPT_SORT_KEYS)


def _plain_object(tree: Any) -> bool:
    return isinstance(tree, dict) and not any(k.startswith("$") for k in tree)


def _fields(tree: dict[str, Any]) -> dict[str, Any]:
    fields = tree.get("$fields", tree.get("$kwargs"))
    return fields if isinstance(fields, dict) else {}


def _same_type(a: Any, b: Any) -> bool:
    """Two stored objects of one type whose fields are named (pydantic models, dataclasses)."""
    return (
        isinstance(a, dict)
        and isinstance(b, dict)
        and "$type" in a
        and a.get("$type") == b.get("$type")
        and bool(_fields(a) or _fields(b))
        and isinstance(a.get("$fields", a.get("$kwargs")), dict)
        and isinstance(b.get("$fields", b.get("$kwargs")), dict)
    )


ANCHOR_LEVELS = 8  # how often list_changes looks again for anchors inside the gaps it found


def list_changes(a: Sequence[bytes], b: Sequence[bytes]) -> tuple[list[int], list[int]]:
    """The indices of ``a`` removed and of ``b`` added to turn ``a`` into ``b``.

    A patience-style diff, O(n log n) whatever the lists hold (``difflib.SequenceMatcher``
    is quadratic to cubic on lists whose items repeat, and a stored list can be anything):
    the common prefix and suffix are kept, then the items that occur exactly once on each
    side are matched in the longest run that keeps their order (anchors), and each gap
    between anchors is looked at the same way, at most ``ANCHOR_LEVELS`` deep; what is
    left in a gap is listed as removed and added."""
    removed: list[int] = []
    added: list[int] = []
    todo = [(0, len(a), 0, len(b), 0)]
    while todo:
        a0, a1, b0, b1, level = todo.pop()
        while a0 < a1 and b0 < b1 and a[a0] == b[b0]:
            a0, b0 = a0 + 1, b0 + 1
        while a0 < a1 and b0 < b1 and a[a1 - 1] == b[b1 - 1]:
            a1, b1 = a1 - 1, b1 - 1
        anchors = _anchors(a, a0, a1, b, b0, b1) if a0 < a1 and b0 < b1 and level < ANCHOR_LEVELS else []
        if not anchors:
            removed.extend(range(a0, a1))
            added.extend(range(b0, b1))
            continue
        for i, j in anchors:
            todo.append((a0, i, b0, j, level + 1))
            a0, b0 = i + 1, j + 1
        todo.append((a0, a1, b0, b1, level + 1))
    return sorted(removed), sorted(added)


def _anchors(
    a: Sequence[bytes], a0: int, a1: int, b: Sequence[bytes], b0: int, b1: int
) -> list[tuple[int, int]]:
    """Pairs (i, j), ascending in both, of items found exactly once in ``a[a0:a1]`` and once in
    ``b[b0:b1]``: the longest increasing run of such pairs (patience sorting, O(k log k))."""
    in_a = Counter(a[a0:a1])
    in_b = Counter(b[b0:b1])
    where_a = {a[i]: i for i in range(a0, a1) if in_a[a[i]] == 1}
    pairs = sorted((where_a[b[j]], j) for j in range(b0, b1) if in_b[b[j]] == 1 and b[j] in where_a)
    tops: list[int] = []  # smallest j ending an increasing run of each length
    ends: list[int] = []  # index into pairs of that run's last pair
    before: list[int] = []  # index into pairs of the pair before it in its run
    for k, (_, j) in enumerate(pairs):
        at = bisect.bisect_left(tops, j)
        before.append(ends[at - 1] if at else -1)
        if at == len(tops):
            tops.append(j)
            ends.append(k)
        else:
            tops[at], ends[at] = j, k
    run: list[tuple[int, int]] = []
    k = ends[-1] if ends else -1
    while k >= 0:
        run.append(pairs[k])
        k = before[k]
    return run[::-1]


def diff_trees(old: dict[str, Any], new: dict[str, Any], *, internal: bool = False) -> list[ChannelChange]:
    """Per channel: list items added or removed, object keys added, changed or removed,
    values set, replaced or removed. Equal channels are left out."""
    changes: list[ChannelChange] = []
    for channel in sorted(set(old) | set(new)):
        if is_internal(channel) and not internal:
            continue
        if channel not in old:
            changes.append(ChannelChange(channel, "added", new=new[channel]))
            continue
        if channel not in new:
            changes.append(ChannelChange(channel, "removed", old=old[channel]))
            continue
        a: Any = old[channel]
        b: Any = new[channel]
        if _key(a) == _key(b):
            continue
        elif isinstance(a, list) and isinstance(b, list):
            change = ChannelChange(channel, "list", old=a, new=b)
            removed, added = list_changes([_key(x) for x in a], [_key(x) for x in b])
            change.removed.extend((i, a[i]) for i in removed)
            change.added.extend((j, b[j]) for j in added)
            changes.append(change)
        elif (_plain_object(a) and _plain_object(b)) or _same_type(a, b):
            change = ChannelChange(channel, "keys", old=a, new=b)
            if not _plain_object(a):  # one type on both sides: compare its fields
                a, b = _fields(a), _fields(b)
            for k in sorted(set(a) | set(b)):
                if k not in a:
                    change.keys_added[k] = b[k]
                elif k not in b:
                    change.keys_removed[k] = a[k]
                elif _key(a[k]) != _key(b[k]):
                    change.keys_changed[k] = (a[k], b[k])
            changes.append(change)
        else:
            changes.append(ChannelChange(channel, "changed", old=a, new=b))
    return changes


# ----------------------------------------------------------------------
# times
# ----------------------------------------------------------------------
_AGE = re.compile(r"^(\d+)([smhdw])$")
_AGE_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_age(text: str) -> float:
    """``90m``, ``12h``, ``30d``, ``2w`` to seconds."""
    match = _AGE.match(text.strip())
    if not match:
        raise BadInputError(f"bad age {text!r}: use a number and s, m, h, d or w (e.g. 30d)")
    return int(match.group(1)) * _AGE_SECONDS[match.group(2)]


def parse_date(text: str) -> datetime:
    """An ISO date or date-time; without a zone it is UTC."""
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise BadInputError(
            f"bad date {text!r}: use an ISO date like 2026-01-31 or 2026-01-31T12:00"
        ) from None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def parse_ts(ts: str) -> datetime | None:
    try:
        when = datetime.fromisoformat(ts)
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)
