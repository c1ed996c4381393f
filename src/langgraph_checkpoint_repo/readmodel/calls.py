"""Subgraph calls in a thread's conversation, where and when they happened.

A graph that runs another graph as a node (``create_agent`` as a node of a parent graph)
checkpoints each call in a namespace of its own, ``node:<task id>``; the call is handed its
parent's state (the whole conversation so far) and hands back what it added. Read namespace
by namespace, every call replays the conversation. Read as a person follows it, a call is a
section of the turn and node that ran it (``agent (turn 3)``) holding only what the call
added, at the point the parent ran it; what it handed back is not shown again in the parent,
and its question and answer (an ``interrupt()`` in one of its tools) are shown once, in the
call, not again where they reached the parent. This module ties each call to the parent
checkpoint it ran from (its checkpoints' ``metadata.parents``, which LangGraph writes) and
nests its events there (``Event.depth``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol
from weakref import WeakKeyDictionary

from ..core.errors import RepoCheckpointError
from ..core.format.messages import MESSAGES, Refusal, message_fields, read_message
from .reader import Reader, StateView
from .turns import Event


class Part(Protocol):
    """A run of new checkpoints of one namespace and its events (review's ``Line``)."""

    start: str | None
    checkpoints: list[str]
    events: list[Event]


@dataclass(frozen=True)
class Site:
    """Where a subgraph namespace was called from: the parent namespace and checkpoint, the
    node (and its task id) that ran it, and the thread's turn then."""

    ns: str
    parent_ns: str
    node: str
    task: str
    at: str | None  # the parent's checkpoint the call ran from (None: the files do not say)
    turn: int  # user messages in the thread's top namespace then (0: none, or not known)

    @property
    def label(self) -> str:
        return f"{self.node} (turn {self.turn})" if self.turn else self.node


def split_ns(ns: str) -> tuple[str, str, str]:
    """(parent namespace, node, task id) of a subgraph namespace ``...|node:<task id>``."""
    parent, _, last = ns.rpartition("|")
    node, _, task = last.partition(":")
    return parent, node, task


def site_of(reader: Reader, thread_id: str, ns: str, top: str = "") -> Site | None:
    """Where ``ns`` was called from, from its first checkpoint's ``metadata.parents``; None
    for the thread's top namespace or a namespace whose checkpoints do not say.

    The metadata only says so: the call runs the task its namespace names (``node:<task
    id>``), and LangGraph derives a task's id from the checkpoint it runs from. A parent
    checkpoint whose tasks do not hold that task is not where the call ran (a hand-edited
    ``parents`` would move a call into another turn): the one whose tasks do is taken, or
    none."""
    if ns == top or not ns:
        return None
    parent, node, task = split_ns(ns)
    try:
        ids = reader.checkpoint_ids(thread_id, ns)
        meta = reader.get(thread_id, ns, ids[0]).metadata if ids else {}
    except (RepoCheckpointError, OSError):
        return None
    parents = meta.get("parents") if isinstance(meta, dict) else None
    parents = parents if isinstance(parents, dict) else {}
    at = parents.get(parent)
    at = at if isinstance(at, str) else None
    root_at = parents.get(top)
    if at is not None and not _runs(reader, thread_id, parent, at, node, task):
        at = _ran_from(reader, thread_id, parent, node, task)
        root_at = at if parent == top else root_at
    turn = 0
    if isinstance(root_at, str):
        turn = users_at(reader, thread_id, top, root_at)
    return Site(ns=ns, parent_ns=parent, node=node, task=task, at=at, turn=turn)


def _runs(reader: Reader, thread_id: str, ns: str, cid: str, node: str, task: str) -> bool:
    """Whether the step after checkpoint ``cid`` of ``ns`` has the task ``task`` of ``node``."""
    try:
        tasks = reader.state(thread_id, ns, cid, revive=False).tasks
    except (RepoCheckpointError, OSError):
        return False
    return any(t.id == task and t.name == node for t in tasks)


#: per reader, thread and namespace: the checkpoint each task (node, id) runs after, read once
#: (a pull request naming many calls wrongly costs one pass over the parent, not one per call)
_SITES: WeakKeyDictionary[Reader, dict[tuple[str, str], dict[tuple[str, str], str]]] = WeakKeyDictionary()


def _ran_from(reader: Reader, thread_id: str, ns: str, node: str, task: str) -> str | None:
    """The checkpoint of ``ns`` whose next step has the task (the newest one), or None."""
    known = _SITES.setdefault(reader, {})
    if (thread_id, ns) not in known:
        found: dict[tuple[str, str], str] = {}
        try:
            for cid in reader.checkpoint_ids(thread_id, ns):
                for t in reader.state(thread_id, ns, cid, revive=False).tasks:
                    if t.id:
                        found[(t.name, t.id)] = cid
        except (RepoCheckpointError, OSError):
            pass
        known[(thread_id, ns)] = found
    return known[(thread_id, ns)].get((node, task))


def users_at(reader: Reader, thread_id: str, ns: str, cid: str) -> int:
    """How many user messages the conversation holds at a checkpoint (its turn number)."""
    try:
        trees = reader.state(thread_id, ns, cid, revive=False).trees
    except (RepoCheckpointError, OSError):
        return 0
    return count_users(trees.get(MESSAGES))


def count_users(messages: Any) -> int:
    if not isinstance(messages, list):
        return 0
    count = 0
    for m in messages:
        got = read_message(m)
        if got is not None and not isinstance(got, Refusal) and got.role == "human":
            count += 1
    return count


def handed(reader: Reader, site: Site, thread_id: str) -> StateView | None:
    """The parent's checkpoint where the call ran (what it was handed), or None when not known."""
    if site.at is None:
        return None
    try:
        return reader.state(thread_id, site.parent_ns, site.at, revive=False)
    except (RepoCheckpointError, OSError):
        return None


def nest(
    parts: Mapping[str, Sequence[Part]], sites: Mapping[str, Site], returned: Mapping[str, list[Any]]
) -> dict[int, Site]:
    """Move each subgraph namespace's parts into its parent's part that holds the checkpoint
    it ran from (deepest namespaces first), as a ``call`` event followed by its events one
    level deeper; drop from the parent what the call already shows (its interrupts, the answer
    it took, the messages it handed back: ``returned[ns]``, its last messages). Returns the
    parts nested (by ``id``) and where."""
    moved: dict[int, Site] = {}
    order = sorted((ns for ns in parts if ns in sites), key=lambda n: (-n.count("|"), n))
    for ns in order:
        site = sites[ns]
        if site.at is None:
            continue
        host = next(
            (p for p in parts.get(site.parent_ns, ()) if site.at in p.checkpoints or p.start == site.at),
            None,
        )
        if host is None:
            continue
        for part in sorted(parts[ns], key=lambda p: p.checkpoints[0] if p.checkpoints else ""):
            if id(part) in moved:
                continue
            block = [
                Event(
                    kind="call",
                    checkpoint_id=site.at,
                    step=None,
                    name=site.node,
                    text=site.label,
                    ns=ns,
                    task=site.task,
                )
            ]
            for e in part.events:
                e.depth += 1
                block.append(e)
            _insert(host, site.at, block)
            _drop_shown(host, block, site, returned.get(ns, []))
            moved[id(part)] = site
    return moved


def _insert(host: Part, at: str, block: list[Event]) -> None:
    """Put a call's block in its host's events after everything of checkpoint ``at`` (its
    values, the calls that ran from it before, in the order they ran)."""
    events = host.events
    index = 0
    inside = False
    for i, e in enumerate(events):
        if e.checkpoint_id == at and e.depth == 0:
            index, inside = i + 1, True
        elif inside and e.depth > 0:
            index = i + 1
        elif inside:
            break
    if not inside and host.start != at:
        index = len(events)
    events[index:index] = block


def _drop_shown(host: Part, block: list[Event], site: Site, returned: list[Any]) -> None:
    """What the parent has of a call that the call's block shows already: the interrupt it
    raised (same id), the answer it took, the messages it handed back unchanged."""
    asked = [(e.ident, e.tree) for e in block if e.kind == "interrupt" and e.ident]
    answers = [e.tree for e in block if e.kind == "resume"]
    handed_back = {_id(m): m for m in returned if _id(m) is not None}

    def shown(e: Event) -> bool:
        if e.ns != site.parent_ns:
            return False
        if e.kind == "interrupt" and e.checkpoint_id == site.at and (e.ident, e.tree) in asked:
            return True
        if e.kind == "resume" and e.checkpoint_id == site.at and e.tree in answers:
            return True
        if e.kind == "message" and e.task == site.task:
            key = _id(e.tree)
            return key is not None and handed_back.get(key) == e.tree
        return False

    host.events[:] = [e for e in host.events if not shown(e)]


def _id(tree: Any) -> str | None:
    got = message_fields(tree)
    key = got.get("id") if got is not None else None
    return key if isinstance(key, str) else None


def call_namespaces(namespaces: Iterable[str], parent: str) -> list[str]:
    """The namespaces called directly from ``parent``'s tasks."""
    out = []
    for ns in namespaces:
        up, node, task = split_ns(ns)
        if ns != parent and up == parent and node and task:
            out.append(ns)
    return out


def with_calls(reader: Reader, thread_id: str, ns: str, parts: Sequence[Part]) -> None:
    """Nest in ``parts`` (lines of namespace ``ns``: ``render``'s branches) the subgraph calls
    that ran from their checkpoints, and the calls those made, each as only what it added."""
    from .turns import events_along

    try:
        namespaces = reader.namespaces(thread_id)
    except (RepoCheckpointError, OSError):
        return
    top = "" if "" in namespaces else namespaces[0]
    held = {c for p in parts for c in p.checkpoints}
    found: dict[str, list[Part]] = {ns: list(parts)}
    sites: dict[str, Site] = {}
    returned: dict[str, list[Any]] = {}
    below = [n for n in namespaces if n != ns and n.startswith(f"{ns}|" if ns else "")]
    for sub in sorted(below, key=lambda n: n.count("|")):
        site = site_of(reader, thread_id, sub, top)
        if site is None or site.at is None or site.parent_ns not in found:
            continue
        if site.parent_ns == ns and site.at not in held:
            continue
        ids = reader.checkpoint_ids(thread_id, sub)
        if not ids:
            continue
        events = events_along(reader, thread_id, sub, ids, None, given=handed(reader, site, thread_id))
        found[sub] = [_Run(start=None, checkpoints=ids, events=events)]
        sites[sub] = site
        last = reader.state(thread_id, sub, ids[-1], revive=False).trees.get(MESSAGES)
        returned[sub] = last if isinstance(last, list) else []
    nest(found, sites, returned)


@dataclass
class _Run:
    start: str | None
    checkpoints: list[str]
    events: list[Event]
