"""Values as a person reads them: messages as ``role: text``, long values folded.

Works on revived Python values and on stored JSON trees alike (a diff compares trees), so
a message reads the same whichever form it comes in. A value of a type the reader may not
construct is shown by type name and fields (an enum as ``Color('red')``), with the reason;
constructed, an enum reads ``Color.RED`` and a timedelta ``timedelta(days=14)``
(docs/types.md).
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import sys
from collections.abc import Iterable, Mapping
from typing import Any

from ..core.format.messages import ERROR_MARK, Refusal, content_text, read_message
from ..core.format.tree import object_fields
from ..core.masking import mask_secrets
from ..core.typenames import Fix, refusal_fix
from ..readmodel.tasks import Raw

FOLD_CHARS = 400  # a string longer than this is cut
FOLD_ITEMS = 20  # a list or mapping longer than this shows its head and tail
HEAD_ITEMS, TAIL_ITEMS = 12, 4
FOLD_LINES = 40  # raw JSON longer than this is cut
INLINE_CHARS = 100
MAX_DEPTH = 4


def fold(text: str, limit: int = FOLD_CHARS) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out.

    Secrets are masked before the cut: a key cut in half no longer matches its pattern,
    so masking after it (as the command line does to all it prints) would show the half.
    """
    if len(text) <= limit:
        return text
    text = mask_secrets(text)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… (+{len(text) - limit} chars)"


def short_reason(reason: str) -> str:
    """The useful sentence of an UnrevivableValueError (it starts with where, which we show anyway)."""
    tail = reason.split("): ", 1)[-1]
    return tail.split(". ", 1)[0].split(" (named at ", 1)[0]


def not_revived_note(types: Iterable[tuple[str, ...]], fix: Fix) -> list[str]:
    """What a command says after showing values it could not construct: which types, and how
    to allow them (the reader's ``fix``: the option and the pyproject entry)."""
    keys = list(types)
    if not keys:
        return []
    names = ", ".join(".".join(k) for k in keys)
    return [f"Not revived (shown by type name and fields, as stored): {names}.", refusal_fix(keys, fix)]


def python_text(value: Any) -> str:
    """A constructed value's one-line form: an enum member as ``Color.RED``, a date or time
    as ``timedelta(days=14)`` (no module prefix), anything else its repr."""
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    text = repr(value)
    if isinstance(value, (datetime.date, datetime.time, datetime.timedelta, datetime.tzinfo)):
        text = text.replace("datetime.", "")
    return text


# ----------------------------------------------------------------------
# messages, revived or as trees
# ----------------------------------------------------------------------
def _message_fields(value: Any) -> dict[str, Any] | None:
    """Role, text and tool calls of a message: a LangChain message object, or a stored tree
    read as LangChain will build it (core/format/messages.py; one the rule refuses says why)."""
    if isinstance(value, Mapping):
        got = read_message(value)
        if got is None:
            return None
        if isinstance(got, Refusal):
            return {"role": "refused", "content": got.text(), "tool_calls": [], "id": None}
        return {
            "role": got.role if got.role != "chat" else f"chat {got.speaker}",
            "content": got.content,
            "tool_calls": [{"name": c.name, "args": c.args} for c in got.calls],
            "invalid_tool_calls": [{"name": c.name, "args": c.args} for c in got.invalid],
            "name": got.name,
            "tool_call_id": got.tool_call_id,
            "status": got.status,
            "id": got.id,
        }
    # never imported here: a value can only be a LangChain message when LangChain is loaded
    messages = sys.modules.get("langchain_core.messages")
    base = getattr(messages, "BaseMessage", None) if messages is not None else None
    if isinstance(base, type) and isinstance(value, base):
        role = getattr(value, "type", None)
        if role == "chat":
            role = f"chat {getattr(value, 'role', '?')}"
        return {
            "role": role,
            "content": getattr(value, "content", None),
            "tool_calls": getattr(value, "tool_calls", None) or [],
            "invalid_tool_calls": getattr(value, "invalid_tool_calls", None) or [],
            "name": getattr(value, "name", None),
            "tool_call_id": getattr(value, "tool_call_id", None),
            "status": getattr(value, "status", None),
            "id": getattr(value, "id", None),
        }
    return None


def is_message(value: Any) -> bool:
    return _message_fields(value) is not None


def _content_text(content: Any) -> str:
    return content_text(content) if isinstance(content, str | list) else inline(content)


def message_line(value: Any, limit: int = FOLD_CHARS) -> str:
    """``role: text``, with tool calls after an arrow; a removal says which message goes."""
    fields = _message_fields(value)
    if fields is None:
        return inline(value, limit)
    role = str(fields["role"])
    if role == "remove":
        return f"remove: message {fields['id']}"
    if role == "tool":
        role = f"tool[{fields['name'] or fields['tool_call_id'] or '?'}]"
        if fields.get("status") == "error":
            role += f" {ERROR_MARK}"
    text = fold(_content_text(fields["content"]), limit)
    for key, arrow in (("tool_calls", "→ calls"), ("invalid_tool_calls", "→ invalid calls")):
        calls = [
            f"{c.get('name', '?')}({inline(c.get('args', {}), 60)})"
            for c in fields.get(key) or []
            if isinstance(c, Mapping)
        ]
        if calls:
            text = f"{text} {arrow} {', '.join(calls)}" if text else f"{arrow} {', '.join(calls)}"
    return f"{role}: {text}"


# ----------------------------------------------------------------------
# any value
# ----------------------------------------------------------------------
def _tag_name(tree: Mapping[str, Any]) -> str | None:
    kind = tree.get("$type")
    if isinstance(kind, list) and len(kind) == 2:
        return str(kind[1])
    return None


def _is_plain_mapping(value: Any) -> bool:
    return isinstance(value, Mapping) and not any(str(k).startswith("$") for k in value)


def _object_fields(value: Any) -> tuple[str, dict[str, Any]] | None:
    """A constructed value's class name and fields (pydantic, dataclass, or a stored tag)."""
    if isinstance(value, Mapping):
        name = _tag_name(value)
        if name is None:
            return None
        fields = object_fields(value)
        if fields is not None:
            return name, dict(fields)
        for key in ("$args", "$arg"):
            if key in value:
                args = value[key] if key == "$args" else [value[key]]
                return name, {str(i): a for i, a in enumerate(args)} if isinstance(args, list) else {
                    "0": args
                }
        return name, {}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return type(value).__name__, {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        try:
            data = dump()
        except Exception:  # a model that cannot dump itself: fall back to repr
            return None
        if isinstance(data, dict):
            return type(value).__name__, data
    return None


def _positional(value: Any) -> list[Any] | None:
    """The arguments of a stored ``$type`` node built from positional ones (an enum's value,
    a timedelta's days): shown as a call, ``Color('red')``."""
    if isinstance(value, Mapping) and _tag_name(value) is not None and "$method" not in value:
        if "$arg" in value:
            return [value["$arg"]]
        if isinstance(value.get("$args"), list):
            return list(value["$args"])
    return None


def inline(value: Any, limit: int = INLINE_CHARS) -> str:
    """A one-line form for table cells and lists."""
    if isinstance(value, Raw):
        if value.shown is not None:
            return inline(value.shown, limit)
        return fold(json.dumps(value.tree, ensure_ascii=False), limit)
    if isinstance(value, enum.Enum):
        return python_text(value)
    args = _positional(value)
    if args is not None:
        body = ", ".join(repr(a) if isinstance(a, str) else inline(a, 40) for a in args)
        return fold(f"{_tag_name(value)}({body})", limit)
    if is_message(value):
        return message_line(value, limit)
    if isinstance(value, str):
        return fold(value.replace("\n", "⏎"), limit)
    if value is None or isinstance(value, (bool, int, float)):
        return json.dumps(value)
    if isinstance(value, Mapping) and "$bytes" in value:
        return "<bytes>"
    obj = _object_fields(value)
    if obj is not None:
        name, fields = obj
        if all(k.isdigit() for k in fields):
            body = ", ".join(inline(v, 40) for v in fields.values())
        else:
            body = ", ".join(f"{k}={inline(v, 40)}" for k, v in fields.items())
        return fold(f"{name}({body})", limit)
    if isinstance(value, Mapping):
        body = ", ".join(f"{k}: {inline(v, 40)}" for k, v in value.items())
        return fold("{" + body + "}", limit)
    if isinstance(value, (list, tuple, set, frozenset)):
        items = list(value)
        if items and all(is_message(i) for i in items):
            return fold(f"{len(items)} messages, last {message_line(items[-1], 60)}", limit)
        return fold("[" + ", ".join(inline(i, 40) for i in items) + "]", limit)
    return fold(python_text(value), limit)


def lines(value: Any, depth: int = 0) -> list[str]:
    """A value as indented lines: messages one per line, mappings key by key, folded."""
    if isinstance(value, Raw):
        if value.shown is not None:
            return [f"(not revived: {short_reason(value.reason)})", *lines(value.shown, depth)]
        return [f"(not revived: {short_reason(value.reason)}; raw JSON as stored:)", *json_lines(value.tree)]
    if isinstance(value, enum.Enum) or _positional(value) is not None:
        return [inline(value, FOLD_CHARS)]
    if is_message(value):
        return message_line(value).splitlines() or [""]
    if isinstance(value, str):
        return fold(value).splitlines() or ['""']
    if depth >= MAX_DEPTH:
        return [inline(value)]
    obj = _object_fields(value)
    if obj is not None and not (isinstance(value, Mapping) and "$bytes" in value):
        name, fields = obj
        return [f"{name}:", *_indent(_mapping_lines(fields, depth + 1))]
    if _is_plain_mapping(value):
        return _mapping_lines(value, depth) or ["{}"]
    if isinstance(value, (list, tuple, set, frozenset)):
        return _list_lines(list(value), depth) or ["[]"]
    return [inline(value, FOLD_CHARS)]


def _indent(block: list[str], by: str = "  ") -> list[str]:
    return [by + line for line in block]


def _folded_items(items: list[Any]) -> list[tuple[int, Any] | int]:
    """Indexed items, with an int standing for how many were left out in the middle."""
    if len(items) <= FOLD_ITEMS:
        return list(enumerate(items))
    head = list(enumerate(items[:HEAD_ITEMS]))
    tail = [(len(items) - TAIL_ITEMS + i, x) for i, x in enumerate(items[-TAIL_ITEMS:])]
    return [*head, len(items) - HEAD_ITEMS - TAIL_ITEMS, *tail]


def _list_lines(items: list[Any], depth: int) -> list[str]:
    out: list[str] = []
    messages = bool(items) and all(is_message(i) for i in items)
    for entry in _folded_items(items):
        if isinstance(entry, int):
            out.append(f"… {entry} more …")
            continue
        i, item = entry
        if messages:
            first, *rest = message_line(item).splitlines() or [""]
            out.append(f"{i + 1}. {first}")
            out.extend(_indent(rest, "   "))
            continue
        block = lines(item, depth + 1)
        one = inline(item)
        if len(block) == 1 and len(one) <= INLINE_CHARS:
            out.append(f"- {block[0]}")
        else:
            out.append(f"- {block[0]}")
            out.extend(_indent(block[1:]))
    return out


def _mapping_lines(mapping: Mapping[str, Any], depth: int) -> list[str]:
    out: list[str] = []
    items = list(mapping.items())
    for entry in _folded_items(items):
        if isinstance(entry, int):
            out.append(f"… {entry} more keys …")
            continue
        _, (key, val) = entry
        block = lines(val, depth + 1)
        nested = isinstance(val, (list, Mapping)) and bool(val) and _positional(val) is None
        if len(block) == 1 and not nested:
            out.append(f"{key}: {block[0]}")
        else:
            out.append(f"{key}:")
            out.extend(_indent(block))
    return out


def json_lines(tree: Any) -> list[str]:
    """Raw JSON, indented, cut after FOLD_LINES lines."""
    text = json.dumps(tree, indent=2, ensure_ascii=False, sort_keys=True)
    out = text.splitlines()
    if len(out) > FOLD_LINES:
        keep = FOLD_LINES - 5
        out = [*out[:keep], f"… {len(out) - keep - 4} more lines …", *out[-4:]]
    return out


def short_time(ts: str) -> str:
    """``2026-11-29T16:31:45.964379+00:00`` as ``2026-11-29 16:31:45``."""
    return ts.replace("T", " ")[:19]
