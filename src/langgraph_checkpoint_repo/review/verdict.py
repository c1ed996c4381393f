"""The review's first lines: what the range holds, counted, and what needs a person; and each
memory a step wrote, shown in the turn of that step.

The verdict counts what the turns show (readmodel/turns.py events, subgraph calls nested in
their callers' lines, so nothing is counted twice): the user's turns, the answers given to
interrupts, the tool results that say the tool failed, the tasks that failed, the store items
changed, the forks, the files rewritten in place (issue 34's flag). What needs a person beside
the flags: a thread waiting for an answer (its question), heads nobody chose.

A memory is tied to a step when its ``updated_at`` falls between the step's checkpoint and its
parent's (the narrowest such step, so a tool's step inside a subgraph call wins over the call's
step in its parent): the step's tool (or node) wrote it. Otherwise it stays in the list of store
items after the threads.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..core.format.messages import MESSAGES
from ..core.sends import packet_tool_calls
from ..readmodel.turns import Event, message_event
from .model import ItemReport, Line, PendingTask, Report, ThreadReport, Verdict


def mark_saved(report: Report) -> None:
    """An answer at the checkpoint a namespace waits at is saved, not applied yet (the thread
    has not continued): its event says so (``text`` ``saved``) rather than "resumed with"."""
    for t in report.threads:
        waits = {(n.ns, n.next.checkpoint_id) for n in t.namespaces if n.next is not None}
        for n in t.namespaces:
            for line in n.lines:
                for e in line.events:
                    if e.kind == "resume" and (e.ns, e.checkpoint_id) in waits:
                        e.text = "saved"


def verdict_of(report: Report) -> Verdict:
    v = Verdict(memories=len(report.items))
    v.rewrites = sum(1 for f in report.flags if f.kind == "rewritten")
    for t in report.threads:
        if t.status == "removed":
            v.threads_removed += 1
        else:
            v.removed += sum(len(n.removed) for n in t.namespaces)
        for n in t.namespaces:
            for start in {line.start for line in n.lines if line.forks > 0}:
                v.forks += next(line.forks for line in n.lines if line.start == start)
            for line in n.lines:
                if line.call:
                    continue  # its events are in the line of the call that holds it
                raised = _raised_below(line.events)
                for e in line.events:
                    if e.kind == "message" and e.role == "human" and e.depth == 0 and not n.label:
                        v.turns += 1  # a user message of the thread, not one a subgraph was handed
                    elif _new_tool_error(e):
                        v.tool_errors += 1
                    elif e.kind == "resume" and e.text != "saved":  # a saved one: _saved_answers
                        v.answers.append(e.tree)
                    elif e.kind == "error" and id(e) not in raised:
                        v.failures += 1
                    elif e.kind == "update":  # a migration is one too: its name is the metadata's word
                        v.edits += 1
                        v.migrations += bool(e.name)
            if n.heads and sum(not h.settled for h in n.heads) > 1:
                v.unsettled.append((t.thread_id, n.label or n.ns))
            for task in n.next.tasks if n.next is not None else ():
                v.tool_errors += sum(_new_tool_error(e) for e in _written(task))
        v.waiting.extend(_waiting(t))
        v.saved.extend(_saved_answers(t))
    return v


def _raised_below(events: list[Event]) -> set[int]:
    """The failures a subgraph call's own failing task raised into the task that ran the call:
    LangGraph writes the same error for both (a tool that raises inside an agent fails the
    agent's node too), and one failure is counted once, where it happened."""
    errors = [e for e in events if e.kind == "error"]
    return {
        id(e) for e in errors if e.task and any(o.text == e.text and _called_by(o.ns, e.task) for o in errors)
    }


def _called_by(ns: str, task_id: str) -> bool:
    """Whether namespace ``ns`` is (inside) a subgraph call the task ``task_id`` made: LangGraph
    names a call's namespace ``node:<the task's id>``."""
    return any(segment.endswith(f":{task_id}") for segment in ns.split("|") if segment)


def _new_tool_error(e: Event) -> bool:
    """A tool result that says the tool failed: a new one, or one edited to say so."""
    if e.role != "tool" or e.status != "error":
        return False
    if e.kind == "message":
        return True
    return e.kind == "edited" and message_event(e.old, "", None).status != "error"


def _written(task: PendingTask) -> list[Event]:
    """The messages a finished task's pending writes hold: resuming applies them as stored."""
    return [
        message_event(item, "", None)
        for channel, tree in task.writes
        if channel == MESSAGES
        for item in (tree if isinstance(tree, list) else [tree])
    ]


def _saved_answers(t: ThreadReport) -> list[Any]:
    """The answers saved for questions a thread waits on, not applied yet (the thread takes
    them when it continues), each question once: the answer the deepest task that asks it
    gets (its own ``__resume__`` write, item by item, wins over ``Command(resume=...)``'s, as
    in LangGraph's ``interrupt()``)."""
    out: dict[str, Any] = {}
    for n in sorted(t.namespaces, key=lambda n: -n.ns.count("|") - (1 if n.ns else 0)):
        if n.next is None:
            continue
        given = next((x.answer for x in n.next.tasks if x.kind == "null"), None)
        for task in n.next.tasks:
            if not task.answered or not task.interrupts or task.answer is None:
                continue
            own = task.answer is not given and isinstance(task.answer, list)
            answers = task.answer if own else [task.answer]
            for key, answer in zip(_keys(task), answers, strict=False):
                out.setdefault(key, answer)
    return list(out.values())


def _keys(task: PendingTask) -> list[str]:
    """What tells a task's questions apart: each interrupt's id, which a subgraph's question
    keeps as it reaches its parent's task (two tool calls asking the same are two questions);
    the value when the id is not stored."""
    ids = task.interrupt_ids if len(task.interrupt_ids) == len(task.interrupts) else []
    return [
        i or repr(asked) for i, asked in zip(ids or [""] * len(task.interrupts), task.interrupts, strict=True)
    ]


def _waiting(t: ThreadReport) -> list[tuple[str, str, Any]]:
    """The questions a thread waits on, each once (a subgraph's question reaches its parent's
    task too, with the same id), where it was asked: the deepest namespace that asks it."""
    out: dict[str, tuple[str, str, Any]] = {}
    for n in sorted(t.namespaces, key=lambda n: -n.ns.count("|") - (1 if n.ns else 0)):
        if n.next is None:
            continue
        for task in n.next.tasks:
            if task.status != "interrupted" or task.answered:
                continue
            tools = ", ".join(str(c.get("name")) for c in packet_tool_calls(task.packet))
            asker = tools or task.name
            for asked, key in zip(task.interrupts, _keys(task), strict=True):
                if key not in out:
                    where = f"{asker} in {n.label}" if n.label else asker
                    out[key] = (t.thread_id, where, asked)
    return list(out.values())


# ----------------------------------------------------------------------------
# memories in the turn that wrote them
# ----------------------------------------------------------------------------
def tie_memories(report: Report) -> None:
    """Put each store item a step of a reviewed line wrote in that step's turn (a ``memory``
    event after the step's own events); ``shown_in`` says where."""
    for item in report.items:
        if item.problems or item.status not in ("added", "changed") or not item.updated_at:
            continue
        when = _time(item.updated_at)
        if when is None:
            continue
        best: tuple[float, ThreadReport, str, str] | None = None
        for t in report.threads:
            for n in t.namespaces:
                for line in n.lines:
                    for step in line.steps:
                        if isinstance(step.metadata, dict) and step.metadata.get("source") == "input":
                            continue  # the time before an input is between runs: no step ran
                        after, before = _time(step.parent_ts), _time(step.ts)
                        if after is None or before is None or not after <= when <= before:
                            continue
                        span = (before - after).total_seconds()
                        if best is None or span < best[0]:
                            best = (span, t, n.ns, step.checkpoint_id)
        if best is not None and _insert(best[1], best[2], best[3], item):
            item.shown_in = (best[1].thread_id, best[2], best[3])


def _insert(t: ThreadReport, ns: str, cid: str, item: ItemReport) -> bool:
    """Add the memory event after the events of checkpoint ``cid`` of ``ns`` in the line that
    shows them (the caller's line for a nested call)."""
    for n in t.namespaces:
        for line in n.lines:
            if line.call:
                continue
            at = _last_at(line, ns, cid)
            if at is None:
                continue
            anchor = line.events[at]
            node = next(
                (e.name for e in line.events if e.ns == ns and e.checkpoint_id == cid and e.role == "tool"),
                anchor.node,
            )
            line.events.insert(
                at + 1,
                Event(
                    kind="memory",
                    checkpoint_id=cid,
                    step=anchor.step,
                    name=item.key,
                    text=item.status,
                    tree={
                        "namespace": list(item.namespace),
                        "key": item.key,
                        "fields": [[f.pointer, f.old, f.new] for f in item.fields],
                    },
                    ns=ns,
                    node=node,
                    depth=anchor.depth,
                ),
            )
            return True
    return False


def _last_at(line: Line, ns: str, cid: str) -> int | None:
    found = None
    for i, e in enumerate(line.events):
        if e.ns == ns and e.checkpoint_id == cid and e.kind != "call":
            found = i
    return found


def _time(text: str) -> datetime | None:
    try:
        got = datetime.fromisoformat(text)
    except (TypeError, ValueError):
        return None
    return got if got.tzinfo is not None else None
