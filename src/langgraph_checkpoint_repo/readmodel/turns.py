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

from ..core import fields
from ..core.lineage import CHOICE_KEY
from ..core.messages import MESSAGES, REMOVE_ALL, Refusal, message_fields, read_message
from .reader import Reader, StateView
from .tasks import ERROR, INTERRUPT, RESUME, is_internal


@dataclass(kw_only=True)
class Event:
    """One thing that happened at a checkpoint, for a person."""

    kind: str  # message | edited | removed | interrupt | resume | error | update | fork | choice | merge
    checkpoint_id: str
    step: int | None
    role: str = ""  # a message's role: human, ai, tool, system
    text: str = ""
    calls: list[tuple[str, Any]] = field(default_factory=list)  # (tool name, arguments) of an AI message
    name: str = ""  # the tool of a tool result, the node of an interrupt
    status: str = ""  # a tool result's status when it is not success ("error")
    invalid: list[tuple[str, Any]] = field(default_factory=list)  # an AI message's invalid tool calls
    tree: Any = None  # the stored tree (a message, an interrupt's value, a resume value)
    old: Any = None  # an edited message before the edit


def message_event(tree: Any, checkpoint_id: str, step: int | None, kind: str = "message") -> Event:
    """The event of one stored message, as LangChain will build it (core/messages.py): a
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
    out: list[str] = []
    walk: str | None = head
    while walk is not None and walk not in ends and walk in present and walk not in out:
        out.append(walk)
        walk = fields.parent_id(reader.header(thread_id, ns, walk))
    out.reverse()
    return out


def events_along(
    reader: Reader,
    thread_id: str,
    ns: str,
    ids: Sequence[str],
    start: str | None,
    views: list[StateView] | None = None,
) -> list[Event]:
    """What happened at each checkpoint of ``ids`` (oldest first), after ``start`` (the
    checkpoint they continue, or None from the beginning); ``views`` gets the state of each."""
    previous: list[Any] = []
    if start is not None and start in set(reader.checkpoint_ids(thread_id, ns)):
        previous = _messages(reader.state(thread_id, ns, start, revive=False).trees)
    out: list[Event] = []
    for cid in ids:
        view = reader.state(thread_id, ns, cid, revive=False)
        if views is not None:
            views.append(view)
        step = view.step
        meta = view.doc["metadata"]
        extra = own_metadata(meta)
        if extra:
            out.append(Event(kind="metadata", checkpoint_id=cid, step=step, tree=extra))
        if view.source == "update":
            out.append(Event(kind="update", checkpoint_id=cid, step=step, text="update_state"))
        elif view.source == "fork":
            choice = meta.get(CHOICE_KEY) if isinstance(meta, dict) else None
            kind = "fork"
            if isinstance(choice, dict):
                kind = "merge" if choice.get("merged") else "choice"
            out.append(Event(kind=kind, checkpoint_id=cid, step=step, tree=choice))
        current = _messages(view.trees)
        out.extend(message_changes(previous, current, cid, step))
        previous = current
        for w in view.writes:
            if w.channel == INTERRUPT:
                for item in w.tree if isinstance(w.tree, list) else [w.tree]:
                    kwargs = item.get("$kwargs") if isinstance(item, dict) else None
                    value = kwargs.get("value", item) if isinstance(kwargs, dict) else item
                    name = next((t.name for t in view.tasks if t.id == w.task_id), "")
                    out.append(Event(kind="interrupt", checkpoint_id=cid, step=step, name=name, tree=value))
            elif w.channel == RESUME:
                out.append(Event(kind="resume", checkpoint_id=cid, step=step, tree=w.tree))
            elif w.channel == ERROR:
                name = next((t.name for t in view.tasks if t.id == w.task_id), "")
                out.append(Event(kind="error", checkpoint_id=cid, step=step, name=name, tree=w.tree))
    return out


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
            )
        )
    out.sort(key=lambda b: not b.continues)
    return out
