"""LangGraph's rules about tasks, read off the files: which tasks run next and what happened.

The command line and the review have the files, not the graph, so what ``graph.get_state()``
works out from the compiled graph is derived here from what each checkpoint stores:

* next tasks: a ``Send`` in ``__pregel_tasks`` is a push task; a node whose trigger channel
  (``__start__``, ``branch:to:<node>``, ``join:...:<node>``) holds a value at a version the
  node has not seen (``versions_seen``) is a pull task. Task ids are computed the way
  LangGraph computes them (``prepare_single_task``), so they match the ids in pending
  writes and subgraph namespaces.
* a task's status follows LangGraph's rules for pending writes (``_task_status.py``): a
  task with an output write finished; otherwise its error or interrupt says what happened.

Nothing here imports LangGraph; its names and rules are data (tests/test_layers.py checks
the task ids against LangGraph's own).
"""

from __future__ import annotations

import binascii
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import xxhash

from ..core.format import fields
from ..core.format.versions import for_langgraph
from ..core.sends import TASKS, send_node

START = "__start__"
PUSH = "__pregel_push"
PULL = "__pregel_pull"
INTERRUPT = "__interrupt__"
RESUME = "__resume__"
ERROR = "__error__"
NULL_TASK_ID = "00000000-0000-0000-0000-000000000000"
# writes that say what happened to a task rather than what it produced (LangGraph's CONTROL_WRITES)
CONTROL_WRITES = frozenset({ERROR, "__error_source_node__", INTERRUPT, RESUME})


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


@dataclass(kw_only=True)
class WriteView:
    """One pending write, merged as the saver merges them (first regular write wins)."""

    task_id: str
    task_path: str
    channel: str
    idx: int
    tree: Any
    value: Any
    file: Path


@dataclass(kw_only=True)
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
    """As LangGraph compares them once read: a short version and a long one a server or
    another saver continued it with, by their counters (core/format/versions.py)."""
    version, seen = for_langgraph(version), for_langgraph(seen)
    try:
        return bool(version > seen)
    except TypeError:  # versions of different types (a thread moved between savers)
        return str(version) > str(seen)


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
    cp = fields.checkpoint_fields(doc)
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
    updated = fields.updated_channels(doc)
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
            for cand in tasks:  # only a task whose id could not be derived: LangGraph matches by id
                if cand.id is not None or cand.writes:
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
        out.append(
            InterruptView(id=iid, value=value, tree=payload_tree, task_name=task.name, task_id=task.id or "")
        )
    return out
