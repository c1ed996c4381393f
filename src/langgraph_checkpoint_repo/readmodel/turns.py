"""What happened along a line of checkpoints, in the order it happened, from the files alone.

A reviewer wants the conversation, not the bookkeeping: the messages each checkpoint added to
``messages`` (user text, AI text, tool calls with their arguments, tool results), the
interrupts a task raised and the answers it was given, edits made with ``update_state`` and
choices, each once and in order. This module walks a line (a head back to where the other
side of a comparison left off, oldest first) and turns it into ``Event``s. It reads stored
trees only (nothing is constructed), so it needs no LangGraph.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.format.fields import migration_name
from ..core.format.messages import MESSAGES, REMOVE_ALL, Refusal, message_fields, read_message
from ..core.lineage import CHOICE_KEY
from ..core.sends import TASKS, packet_tool_calls
from .reader import Reader, StateView
from .tasks import (
    CONTROL_WRITES,
    ERROR,
    INTERRUPT,
    NULL_TASK_ID,
    RESUME,
    START,
    TaskView,
    WriteView,
    is_internal,
    parse_task_path,
)


@dataclass(kw_only=True)
class Event:
    """One thing that happened at a checkpoint, for a person."""

    kind: str  # message | edited | removed | interrupt | resume | error | update | fork | choice | merge
    # | channel (a channel other than messages changed) | call (a subgraph call starts: the events
    # after it one level deeper are its own) | memory (a store item a step wrote)
    checkpoint_id: str
    step: int | None
    role: str = ""  # a message's role: human, ai, tool, system
    text: str = ""
    calls: list[tuple[str, Any]] = field(default_factory=list)  # (tool name, arguments) of an AI message
    name: str = ""  # the tool of a tool result, the node of an interrupt, a channel, a called node,
    # the migration that wrote an update (``migrate-state``)
    status: str = ""  # a tool result's status when it is not success ("error")
    invalid: list[tuple[str, Any]] = field(default_factory=list)  # an AI message's invalid tool calls
    tree: Any = None  # the stored tree (a message, an interrupt's value, a resume value, a channel's value)
    old: Any = None  # an edited message before the edit, a channel's value before the change
    ns: str = ""  # the namespace of the checkpoint
    node: str = ""  # the node whose writes made it ("" when the files do not say)
    task: str = ""  # the id of the task that wrote it, raised it, or (a call) ran the subgraph
    ident: str = ""  # an interrupt's id: a subgraph's interrupt reaches its parent with the same
    depth: int = 0  # how deep in subgraph calls (and under a tool call, for its question and answer)


def message_event(tree: Any, checkpoint_id: str, step: int | None, kind: str = "message") -> Event:
    """The event of one stored message, as LangChain will build it (core/format/messages.py): a
    message the rule refuses as ``refused`` with why, a value that is none as ``value``."""
    got = read_message(tree)
    if got is None:
        return Event(kind=kind, checkpoint_id=checkpoint_id, step=step, role="value", tree=tree)
    if isinstance(got, Refusal):
        refused = got.text()
        return Event(
            kind=kind, checkpoint_id=checkpoint_id, step=step, role="refused", text=refused, tree=tree
        )
    text = got.shown_text()
    name = ""
    if got.role in ("tool", "function"):
        name = got.name or ""
    elif got.role == "chat":
        name = got.speaker or ""
    elif got.role == "remove":
        text = "all messages" if got.id == REMOVE_ALL else f"message {got.id}"
    return Event(
        kind=kind,
        checkpoint_id=checkpoint_id,
        step=step,
        role=got.role,
        text=text,
        calls=[(c.name, c.args) for c in got.calls],
        name=name,
        status=got.status if got.status not in (None, "success") else "",
        invalid=[(c.name or "", c.args) for c in got.invalid],
        tree=tree,
    )


def _key(tree: Any, position: int) -> Any:
    """A message's identity in a list: its id, else its position."""
    got = message_fields(tree)
    if got is not None and isinstance(got.get("id"), str):
        return got["id"]
    return ("#", position)


def message_changes(before: Sequence[Any], after: Sequence[Any], cid: str, step: int | None) -> list[Event]:
    """The messages ``after`` adds to ``before`` (in their order), those it replaces (same id,
    other content) and those it drops; linear in the lists' lengths (and only the new tail
    is looked at when ``after`` starts with ``before``, as a conversation that grew does)."""
    if len(after) >= len(before) and all(
        a is b or a == b for a, b in zip(before, after[: len(before)], strict=True)
    ):
        return [message_event(tree, cid, step) for tree in after[len(before) :]]
    old = {_key(t, i): t for i, t in enumerate(before)}
    seen: set[Any] = set()
    out: list[Event] = []
    for i, tree in enumerate(after):
        key = _key(tree, i)
        seen.add(key)
        if key not in old:
            out.append(message_event(tree, cid, step))
        elif old[key] != tree:
            event = message_event(tree, cid, step, "edited")
            event.old = old[key]
            out.append(event)
    for key, tree in old.items():
        if key not in seen:
            out.append(message_event(tree, cid, step, "removed"))
    return out


def line_to(reader: Reader, thread_id: str, ns: str, head: str, stop: Iterable[str]) -> list[str]:
    """The checkpoints from just after ``stop`` (the first one met on the way up) to ``head``,
    oldest first; a cycle or a missing parent ends the walk."""
    ends = set(stop)
    present = set(reader.checkpoint_ids(thread_id, ns))
    if head in ends or head not in present:
        return []
    out = [head]
    for record in reader.ancestors(thread_id, ns, head, lambda c: c in ends or c not in present):
        out.append(record.checkpoint_id)
    out.reverse()
    return out


def events_along(
    reader: Reader,
    thread_id: str,
    ns: str,
    ids: Sequence[str],
    start: str | None,
    views: list[StateView] | None = None,
    *,
    given: StateView | None = None,
    start_seen: set[tuple[str, str, int]] | None = None,
) -> list[Event]:
    """What happened at each checkpoint of ``ids`` (oldest first), after ``start`` (the
    checkpoint they continue, or None from the beginning); ``views`` gets the state of each.

    Each checkpoint's events in the order they happened: the messages and channel changes the
    tasks of the step before it wrote (each with the node that wrote it), then what its own
    tasks asked (interrupts), were answered (resumes) and failed with; the app's own metadata
    where it changes (a run's ``config["metadata"]`` is on each of its checkpoints: shown once,
    after the run's input). ``given``: the state a subgraph call was handed (its parent's
    checkpoint where it ran): what its input step copies from it (messages, channels,
    metadata) is its parent's, not the call's, so it is left out. ``start_seen``: the pending
    writes of ``start`` the other side of a comparison had (task id, channel, index); a
    resume saved at ``start`` since (a range that holds only the answer) is shown with the
    question it answers. None: ``start``'s writes are not looked at."""
    before: StateView | None = None
    if start is not None and start in set(reader.checkpoint_ids(thread_id, ns)):
        before = reader.state(thread_id, ns, start, revive=False)
    previous = _messages(before.trees) if before is not None else []
    channels = state_channels(before.trees) if before is not None else {}
    out: list[Event] = []
    handed = _by_id(_messages(given.trees)) if given is not None else None
    known = given.trees if given is not None else None
    said = before if before is not None else given
    metadata = own_metadata(said.record.metadata) if said is not None else None
    held: list[Event] = []  # an input checkpoint's metadata, shown after the input it brings
    if before is not None and start_seen is not None:
        out.extend(_answered_since(before, start_seen))
    for cid in ids:
        view = reader.state(thread_id, ns, cid, revive=False)
        if views is not None:
            views.append(view)
        extra = own_metadata(view.record.metadata)
        if extra != metadata and (extra or metadata is not None):
            event = Event(kind="metadata", checkpoint_id=cid, step=view.step, tree=extra, ns=ns)
            (held if view.source == "input" else out).append(event)
        metadata = extra
        out.extend(_source_events(view))
        writers = _writers(before) if before is not None and before.checkpoint_id == view.parent_id else {}
        current = _messages(view.trees)
        out.extend(_message_events(view, previous, current, writers, handed))
        if view.source != "input":
            out.extend(held)
            held = []
        previous = current
        now = state_channels(view.trees)
        out.extend(_channel_events(view, channels, now, writers, known))
        channels = now
        out.extend(_asked_and_answered(view, view.writes))
        before = view
    return out + held


def _source_events(view: StateView) -> list[Event]:
    """How a checkpoint not made by a run's step came to be: an ``update_state`` edit, or a
    fork (a choice or merge of heads, when its metadata records one)."""
    cid, step, ns = view.checkpoint_id, view.step, view.ns
    if view.source == "update":  # by hand (``edit``, update_state) or by ``migrate-state``
        name = migration_name(view.record.metadata)
        text = "update_state" if name is None else f"migration {name}"
        return [Event(kind="update", checkpoint_id=cid, step=step, text=text, ns=ns, name=name or "")]
    if view.source == "fork":
        meta = view.record.metadata
        choice = meta.get(CHOICE_KEY) if isinstance(meta, dict) else None
        kind = "fork"
        if isinstance(choice, dict):
            kind = "merge" if choice.get("merged") else "choice"
        return [Event(kind=kind, checkpoint_id=cid, step=step, tree=choice, ns=ns)]
    return []


def _message_events(
    view: StateView,
    previous: list[Any],
    current: list[Any],
    writers: dict[str, list[tuple[str, str, Any]]],
    handed: dict[str, Any] | None,
) -> list[Event]:
    """The messages a checkpoint added, edited or removed, each with the task that wrote it;
    ``handed`` (a subgraph call's input messages, by id): those the call's input step copied
    from its parent are the parent's, left out."""
    out: list[Event] = []
    for e in message_changes(previous, current, view.checkpoint_id, view.step):
        e.ns = view.ns
        e.task, e.node = _writer_of(e, writers)
        if handed is not None and e.node == START and e.kind == "message" and _handed(e.tree, handed):
            continue  # the parent's message, handed to the call as its input
        out.append(e)
    return out


def _channel_events(
    view: StateView,
    channels: dict[str, Any],
    now: dict[str, Any],
    writers: dict[str, list[tuple[str, str, Any]]],
    known: dict[str, Any] | None,
) -> list[Event]:
    """The channels besides messages a checkpoint added, changed or removed (``channels``
    before, ``now`` after), each with the task that wrote it; ``known`` (a subgraph call's
    input channels): a value the call's input step copied from its parent is left out."""
    out: list[Event] = []
    for channel in sorted(set(channels) | set(now)):
        old, new = channels.get(channel, _ABSENT), now.get(channel, _ABSENT)
        if old is new or old == new:
            continue
        task, node, _ = next(iter(writers.get(channel, [])), ("", "", None))
        if known is not None and node == START and known.get(channel, _ABSENT) == new:
            continue  # the parent's value, handed to the call
        how = "added" if old is _ABSENT else "removed" if new is _ABSENT else "changed"
        out.append(
            Event(
                kind="channel",
                checkpoint_id=view.checkpoint_id,
                step=view.step,
                name=channel,
                text=how,
                old=None if old is _ABSENT else old,
                tree=None if new is _ABSENT else new,
                ns=view.ns,
                node=node,
                task=task,
            )
        )
    return out


_ABSENT: Any = object()


def _by_id(messages: list[Any]) -> dict[str, Any]:
    """Messages by their id (those with one)."""
    out = {}
    for m in messages:
        got = message_fields(m)
        key = got.get("id") if got is not None else None
        if isinstance(key, str):
            out[key] = m
    return out


def _handed(tree: Any, given: dict[str, Any]) -> bool:
    """Whether a message is one of the parent's (``given``: by id), as the parent held it."""
    got = message_fields(tree)
    key = got.get("id") if got is not None else None
    return isinstance(key, str) and key in given and given[key] == tree


def _writers(view: StateView) -> dict[str, list[tuple[str, str, Any]]]:
    """Per channel, the tasks of ``view``'s step whose pending writes (its child's values)
    wrote it: (task id, node, the written tree)."""
    names = {t.id: t.name for t in view.tasks if t.id}
    out: dict[str, list[tuple[str, str, Any]]] = {}
    for w in view.writes:
        if w.task_id == NULL_TASK_ID or w.channel in CONTROL_WRITES:
            continue
        node = names.get(w.task_id) or _path_node(w.task_path)
        out.setdefault(w.channel, []).append((w.task_id, node, w.tree))
    return out


def _path_node(path: str) -> str:
    kind, key = parse_task_path(path)
    return key if kind == "pull" and isinstance(key, str) else ""


def _writer_of(e: Event, writers: dict[str, list[tuple[str, str, Any]]]) -> tuple[str, str]:
    """The task and node that wrote a message: the one task that wrote messages, else the one
    whose write holds its id."""
    wrote = writers.get(MESSAGES, [])
    if len({task for task, _, _ in wrote}) == 1:
        return wrote[0][0], wrote[0][1]
    got = message_fields(e.tree)
    key = got.get("id") if got is not None else None
    if isinstance(key, str):
        for task, node, tree in wrote:
            if key in _by_id(tree if isinstance(tree, list) else [tree]):
                return task, node
    return "", ""


def _asked_and_answered(view: StateView, writes: Sequence[WriteView]) -> list[Event]:
    """What the tasks of ``view``'s step asked, were answered and failed with (``writes``, of
    its pending writes): per task its questions, then its answers, in that order; a question
    and answer of a task that runs tool calls one level under the call. A resume given to the
    whole thread (``Command(resume=...)``, the null task's) that a task took is shown once, as
    that task's answer."""
    tasks = {t.id: t for t in view.tasks if t.id}
    sends = view.trees.get(TASKS)
    order: list[str] = []
    asked: dict[str, list[Event]] = {}
    answered: dict[str, list[Event]] = {}
    failed: list[Event] = []
    taken: list[Any] = []
    for w in writes:
        if w.channel not in (INTERRUPT, RESUME, ERROR):
            continue
        task = tasks.get(w.task_id)
        name = task.name if task is not None else _path_node(w.task_path)
        depth = 1 if task is not None and _runs_tool_calls(task, sends) else 0
        if w.task_id not in order:
            order.append(w.task_id)
        if w.channel == INTERRUPT:
            asked.setdefault(w.task_id, []).extend(_interrupt_events(view, w, name, depth))
        elif w.channel == RESUME:
            # a task's own resume write is the list of answers its interrupt() calls took
            items = w.tree if isinstance(w.tree, list) and w.task_id != NULL_TASK_ID else [w.tree]
            if w.task_id != NULL_TASK_ID:
                taken.extend(items)
            answered.setdefault(w.task_id, []).extend(_resume_event(view, w, item, depth) for item in items)
        else:
            failed.append(
                Event(
                    kind="error",
                    checkpoint_id=view.checkpoint_id,
                    step=view.step,
                    name=name,
                    tree=w.tree,
                    ns=view.ns,
                    task=w.task_id,
                )
            )
    return _questions_then_answers(order, asked, answered, taken) + failed


def _interrupt_events(view: StateView, w: WriteView, name: str, depth: int) -> list[Event]:
    """The questions one interrupt write holds (one ``Interrupt`` or a list of them), each
    with its value and id, as the node ``name`` asked them."""
    out: list[Event] = []
    for item in w.tree if isinstance(w.tree, list) else [w.tree]:
        kwargs = item.get("$kwargs") if isinstance(item, dict) else None
        value = kwargs.get("value", item) if isinstance(kwargs, dict) else item
        iid = kwargs.get("id") if isinstance(kwargs, dict) else None
        out.append(
            Event(
                kind="interrupt",
                checkpoint_id=view.checkpoint_id,
                step=view.step,
                name=name,
                tree=value,
                ns=view.ns,
                task=w.task_id,
                ident=iid if isinstance(iid, str) else "",
                depth=depth,
            )
        )
    return out


def _resume_event(view: StateView, w: WriteView, item: Any, depth: int) -> Event:
    """One answer of a resume write, as the task that took it (or the thread) was given it."""
    return Event(
        kind="resume",
        checkpoint_id=view.checkpoint_id,
        step=view.step,
        tree=item,
        ns=view.ns,
        task=w.task_id,
        depth=depth,
    )


def _questions_then_answers(
    order: list[str], asked: dict[str, list[Event]], answered: dict[str, list[Event]], taken: list[Any]
) -> list[Event]:
    """Per task in the order its writes came, its questions then its answers; the thread's
    resume (the null task's) left out where a task's answers hold it (``taken``): shown once."""
    out: list[Event] = []
    for task_id in order:
        out.extend(asked.get(task_id, []))
        for e in answered.get(task_id, []):
            if task_id == NULL_TASK_ID and e.tree in taken:
                continue  # the thread's resume, shown as the answer the task took
            out.append(e)
    return out


def _answered_since(view: StateView, seen: set[tuple[str, str, int]]) -> list[Event]:
    """The answers saved at ``view`` that ``seen`` (the other side's writes there) lacks,
    each after the question it answers, which was asked before (marked ``earlier``)."""
    fresh = [w for w in view.writes if (w.task_id, w.channel, w.idx) not in seen]
    answered = {w.task_id for w in fresh if w.channel == RESUME}
    if not answered:
        return []
    to_all = NULL_TASK_ID in answered
    asked = [
        w
        for w in view.writes
        if w.channel == INTERRUPT and w not in fresh and (to_all or w.task_id in answered)
    ]
    earlier = _asked_and_answered(view, asked)
    for e in earlier:
        e.text = "earlier"
    out = earlier + _asked_and_answered(view, fresh)
    for e in out:
        e.depth = 0  # the tool call that asked is not in the range to stand under
    return out


def _runs_tool_calls(task: TaskView, sends: Any) -> bool:
    """Whether a task runs tool calls (a ``Send`` of tool calls, as a tool node's are)."""
    if not task.kind.startswith("push ") or not isinstance(sends, list):
        return False
    idx = int(task.kind.split()[1])
    return idx < len(sends) and bool(packet_tool_calls(sends[idx]))


#: the metadata LangGraph (and LangChain, and this package) write on every checkpoint; the rest
#: is the app's own (``config["metadata"]``), shown as an event of its checkpoint
OWN_METADATA_SKIPS = frozenset(
    {"source", "step", "parents", "run_id", "thread_id", "checkpoint_ns", "ls_integration", CHOICE_KEY}
)


def own_metadata(meta: Any) -> dict[str, Any]:
    """The keys of a checkpoint's metadata that are the app's own, not LangGraph's."""
    if not isinstance(meta, dict):
        return {}
    return {k: v for k, v in meta.items() if k not in OWN_METADATA_SKIPS}


def _messages(trees: dict[str, Any]) -> list[Any]:
    got = trees.get(MESSAGES)
    return got if isinstance(got, list) else []


def state_channels(trees: dict[str, Any]) -> dict[str, Any]:
    """The channels a person compares beside the conversation: not messages, not LangGraph's own."""
    return {c: t for c, t in trees.items() if c != MESSAGES and not is_internal(c)}


@dataclass(kw_only=True)
class Branch:
    """One unsettled head of a namespace and what its branch added since it parted from the others."""

    head: str
    start: str | None  # the checkpoint where it parted (None: it shares nothing with the others)
    continues: bool
    events: list[Event]
    checkpoints: list[str] = field(default_factory=list)  # its own, oldest first


def open_branches(reader: Reader, thread_id: str, ns: str) -> list[Branch]:
    """The unsettled heads of a namespace that needs a choice (more than one), each with the
    events of its own part of the history; empty when nothing waits for a choice."""
    lineage = reader.store.lineage(thread_id, ns)
    heads = [h.checkpoint_id for h in lineage.heads() if not h.settled]
    if len(heads) < 2:
        return []
    current = lineage.current()

    def ancestors(cid: str) -> list[str]:
        out, walk = [], lineage.links[cid].parent if cid in lineage.links else None
        while walk is not None and walk not in out:
            out.append(walk)
            walk = lineage.links[walk].parent if walk in lineage.links else None
        return out

    lines = {h: ancestors(h) for h in heads}
    out = []
    for head in heads:
        shared = {a for other, up in lines.items() if other != head for a in up}
        start = next((a for a in lines[head] if a in shared), None)
        ids = line_to(reader, thread_id, ns, head, [start] if start else [])
        out.append(
            Branch(
                head=head,
                start=start,
                continues=head == current,
                events=events_along(reader, thread_id, ns, ids, start),
                checkpoints=ids,
            )
        )
    out.sort(key=lambda b: not b.continues)
    return out
