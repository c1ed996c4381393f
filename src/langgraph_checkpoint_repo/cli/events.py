"""What each event of a conversation says (readmodel/turns.py), once for every output:
``review`` (terminal, Markdown, JSON) and ``render``'s section on heads to settle."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from ..core.messages import ERROR_MARK

if TYPE_CHECKING:
    from ..readmodel.turns import Event
    from ..review.model import PendingTask

SHORT = 160  # characters of a message shown inline; the rest folds into <details>
LABEL = {"human": "user", "ai": "ai", "tool": "tool", "system": "system", "refused": "refused message"}


def compact(value: Any) -> str:
    if isinstance(value, str):
        return value
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def event_parts(e: Event) -> tuple[str, str, str]:
    """(label, short text, the whole text when it is longer than the short one)."""
    if e.kind in ("message", "edited", "removed"):
        label = LABEL.get(e.role, e.role or "value")
        if e.role in ("tool", "chat", "function") and e.name:
            label = f"{label} {e.name}"
        if e.status:
            label = f"{label} {ERROR_MARK}" if e.status == "error" else f"{label} ({e.status})"
        if e.kind != "message":
            label = f"{label} ({e.kind})"
        text = e.text if e.role != "value" else compact(e.tree)
        if e.calls:
            calls = ", ".join(f"{name}({compact(args)})" for name, args in e.calls)
            text = f"{text} → calls {calls}" if text else f"→ calls {calls}"
        if e.invalid:
            calls = ", ".join(f"{name}({compact(args)})" for name, args in e.invalid)
            text = f"{text} → invalid calls {calls}" if text else f"→ invalid calls {calls}"
        if e.kind == "edited" and e.old is not None:
            from ..readmodel.turns import message_event

            _, before, _ = event_parts(message_event(e.old, e.checkpoint_id, e.step))
            text = f"{before} ⟶ {text}" if before != text else f"{text} (other fields changed)"
    elif e.kind == "interrupt":
        label, text = f"interrupt at {e.name}" if e.name else "interrupt", compact(e.tree)
    elif e.kind == "resume":
        label, text = "resumed with", compact(e.tree)
    elif e.kind == "error":
        label, text = f"error in {e.name}" if e.name else "error", compact(e.tree)
    elif e.kind == "metadata":
        label, text = "metadata", compact(e.tree)
    elif e.kind == "update":
        label, text = "edit", "update_state wrote this checkpoint"
    elif e.kind in ("choice", "merge"):
        choice = e.tree if isinstance(e.tree, dict) else {}
        over = ", ".join(str(i) for i in _listed(choice.get("over")))
        text = f"continues {choice.get('chose')} over {over}"
        if e.kind == "merge":
            merged = ", ".join(str(i) for i in _listed(choice.get("merged")))
            text = f"continues {choice.get('chose')} with the messages of {merged}"
        label = e.kind
    else:
        label, text = e.kind, f"new line from checkpoint {e.checkpoint_id}"
    one_line = " ".join(text.split())
    if len(one_line) <= SHORT:
        return label, one_line, ""
    return label, one_line[:SHORT] + f"… (+{len(one_line) - SHORT} chars)", text


def _listed(value: Any) -> list[Any]:
    """A stored field read as a list: a list as it is, nothing as none, any other value as
    the one item it is (shown, never raised on)."""
    if isinstance(value, list):
        return value
    return [] if value is None else [value]


def turns_of(events: list[Event]) -> list[list[Event]]:
    """The events cut into turns: a new turn starts at each user message."""
    turns: list[list[Event]] = [[]]
    for e in events:
        if e.kind == "message" and e.role == "human" and turns[-1]:
            turns.append([])
        turns[-1].append(e)
    return [t for t in turns if t]


#: what a pending task's status means when the thread continues
TASK_STATUS = {
    "done": "finished: its writes are applied as stored, it does not run again",
    "failed": "failed: runs again",
    "interrupted": "waits for an answer",
    "not started": "runs",
    "may have run": "runs (its step had started: side effects possible)",
    "unmatched": "matches no task of the next step: LangGraph does not apply these writes",
}


def task_lines(task: PendingTask) -> list[tuple[str, str]]:
    """(label, text) lines of one pending task (review's "next"): what it runs, what its
    pending writes hold, what it asks and was answered, and a mismatch first when there is one."""
    from ..core.sends import packet_arg, packet_tool_calls
    from ..readmodel.turns import message_event

    status = TASK_STATUS.get(task.status, task.status)
    if task.answered and task.status == "interrupted":
        status = "answered: runs again with the answer"
    out: list[tuple[str, str]] = []
    if task.mismatch:
        out.append(("✗ flagged", task.mismatch))
    head = f"{task.name} ({task.kind})"
    if task.packet is not None:
        calls = packet_tool_calls(task.packet)
        if calls:
            said = ", ".join(
                f"{c.get('name')}({compact(c.get('args'))}) [id {compact(c.get('id'))}]" for c in calls
            )
            out.append((head, f"{status}; calls {said}"))
        else:
            out.append((head, f"{status}; Send argument {compact(packet_arg(task.packet))}"))
    elif task.input is not None:
        out.append((head, f"{status}; applies the input {compact(task.input)}"))
    else:
        out.append((head, status))
    for channel, tree in task.writes:
        items = tree if isinstance(tree, list) else [tree]
        for item in items:
            label, text, _ = event_parts(message_event(item, "", None))
            out.append((f"  writes {channel}", f"{label}: {text}" if label != "value" else text))
    if task.error is not None:
        out.append(("  failed with", compact(task.error)))
    for asked in task.interrupts:
        out.append(("  asks", compact(asked)))
    if task.answer is not None:
        out.append(("  answered with", compact(task.answer)))
    return out
