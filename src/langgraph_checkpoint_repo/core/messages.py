"""A stored LangChain message, read as a person reads it: its role, text and tool calls.

In the core (no LangChain) because two readers need it with nothing else of the read model:
``readmodel.turns`` (the review) and the textconv driver git starts once per file, which must
not pay for importing the reader.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: the channel a conversation lives in (MessagesState's, create_agent's)
MESSAGES = "messages"


def message_fields(tree: Any) -> dict[str, Any] | None:
    """A stored message's fields (``{"$type": [langchain_core.messages..., X], "$fields": ...}``)."""
    if not isinstance(tree, dict):
        return None
    kind = tree.get("$type")
    got = tree.get("$fields")
    if not (isinstance(kind, list) and len(kind) == 2 and str(kind[0]).startswith("langchain_core.messages")):
        return None
    return got if isinstance(got, dict) else None


def content_text(content: Any) -> str:
    """A message's content as text: a string, or the text blocks of a list of blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, Mapping) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            elif isinstance(block, Mapping):
                parts.append(f"[{block.get('type', 'block')}]")
        return "".join(parts)
    return "" if content is None else str(content)


def tool_calls(fields: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """(tool name, arguments) of each tool call an AI message makes. Whatever the field holds
    is shown, never dropped and never raised on: an entry that is not a call, or a field that
    is not a list (``tool_calls: 5``, which validate lets through on any message), is a call
    named ``?`` with that value as its arguments."""
    calls = fields.get("tool_calls")
    if calls is None or calls == []:
        return []
    if not isinstance(calls, list):
        return [("?", calls)]
    return [
        (str(c.get("name", "?")), c.get("args", {})) if isinstance(c, Mapping) else ("?", c) for c in calls
    ]
