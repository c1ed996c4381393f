"""What each event of a conversation says (readmodel/turns.py), once for every output:
``review`` (terminal, Markdown, JSON) and ``render``'s section on heads to settle."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from ..readmodel.turns import Event

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
            label = f"{label} ({e.status})"
        if e.kind != "message":
            label = f"{label} ({e.kind})"
        text = e.text if e.role != "value" else compact(e.tree)
        if e.calls:
            calls = ", ".join(f"{name}({compact(args)})" for name, args in e.calls)
            text = f"{text} → calls {calls}" if text else f"→ calls {calls}"
        if e.invalid:
            calls = ", ".join(f"{name}({compact(args)})" for name, args in e.invalid)
            text = f"{text} → invalid calls {calls}" if text else f"→ invalid calls {calls}"
    elif e.kind == "interrupt":
        label, text = f"interrupt at {e.name}" if e.name else "interrupt", compact(e.tree)
    elif e.kind == "resume":
        label, text = "resumed with", compact(e.tree)
    elif e.kind == "error":
        label, text = f"error in {e.name}" if e.name else "error", compact(e.tree)
    elif e.kind == "update":
        label, text = "edit", "update_state wrote this checkpoint"
    elif e.kind in ("choice", "merge"):
        choice = e.tree if isinstance(e.tree, dict) else {}
        over = ", ".join(str(i) for i in choice.get("over") or [])
        text = f"continues {choice.get('chose')} over {over}"
        if e.kind == "merge":
            merged = ", ".join(str(i) for i in choice.get("merged") or [])
            text = f"continues {choice.get('chose')} with the messages of {merged}"
        label = e.kind
    else:
        label, text = e.kind, f"new line from checkpoint {e.checkpoint_id}"
    one_line = " ".join(text.split())
    if len(one_line) <= SHORT:
        return label, one_line, ""
    return label, one_line[:SHORT] + f"… (+{len(one_line) - SHORT} chars)", text


def turns_of(events: list[Event]) -> list[list[Event]]:
    """The events cut into turns: a new turn starts at each user message."""
    turns: list[list[Event]] = [[]]
    for e in events:
        if e.kind == "message" and e.role == "human" and turns[-1]:
            turns.append([])
        turns[-1].append(e)
    return [t for t in turns if t]
