"""What a hand edit (``RepoSaver.edit_state``, ``langgraph-repo edit``) does to the work the
edited checkpoint scheduled: its ``Send`` packets.

On resume LangGraph runs a packet, not the AI message it answers (core/sends.py), so a packet
copied unchanged into the edited checkpoint would run the tool call as it was before the edit:
the message says ``issue_refund(9.25)``, the refund issued is $18.50. Under ``update_state``
the agent's router sends the calls again from the edited messages; without the graph (the
command line has only the files) the packets are made to follow the edit instead, by tool
call id: a call the edit changed runs changed, one it removed does not run, one it added to
an AI message whose calls are scheduled is sent as its siblings are (``create_agent``'s
``Send(node, [call])``); a packet's state snapshot (``create_react_agent``'s
``ToolCallWithContext``) takes the edited channels. A packet in another form whose call the
edit changed is refused: nothing could make it run the edited call.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from langgraph.types import Send

from .core.errors import BadInputError
from .core.format.messages import MESSAGES

_CONTEXT = "tool_call_with_context"  # langgraph.prebuilt's ToolCallWithContext


def scheduled_calls(sends: Any) -> list[tuple[str, dict[str, Any]]]:
    """(node, tool call) for each tool call the ``Send`` packets make a node run."""
    out: list[tuple[str, dict[str, Any]]] = []
    for packet in sends if isinstance(sends, list) else []:
        if isinstance(packet, Send):
            out.extend((packet.node, call) for call in packet_calls(packet.arg))
    return out


def packet_calls(arg: Any) -> list[dict[str, Any]]:
    """The tool calls a packet's argument makes ``ToolNode`` run (as core/sends.py reads the
    stored tree: a list of tool calls, a ``ToolCallWithContext``, messages or a state)."""
    if _is_call_list(arg):
        return list(arg)
    if isinstance(arg, dict) and arg.get("__type") == _CONTEXT:
        call = arg.get("tool_call")
        return [call] if isinstance(call, dict) else []
    if isinstance(arg, dict):
        arg = arg.get(MESSAGES)
    return list(_calls_of(_last_ai(arg)).values()) if isinstance(arg, list) else []


def sends_after_edit(sends: list[Any], old: Mapping[str, Any], values: Mapping[str, Any]) -> list[Any] | None:
    """The packets of the edited checkpoint (module docstring), or None when none changes.
    ``old``: the channel values before the edit; ``values``: the edited channels, whole."""
    old_calls = _all_calls(old.get(MESSAGES))
    new_calls = _all_calls(values[MESSAGES]) if MESSAGES in values else old_calls
    changed = {
        i
        for i in old_calls.keys() | new_calls.keys()
        if i not in old_calls or i not in new_calls or not _same(old_calls[i], new_calls[i])
    }
    out: list[Any] = []
    seen = _Scheduled()
    for packet in sends:
        if not isinstance(packet, Send):
            out.append(packet)
        elif _is_call_list(packet.arg):
            out.extend(_call_list_after_edit(packet, new_calls, changed, seen))
        elif isinstance(packet.arg, dict) and packet.arg.get("__type") == _CONTEXT:
            out.extend(_context_after_edit(packet, values, new_calls, changed, seen))
        else:
            out.append(_other_after_edit(packet, changed, seen))
    out.extend(_sends_for_added(old.get(MESSAGES), values.get(MESSAGES), seen))
    return out if out != sends else None


@dataclass
class _Scheduled:
    """What the packets schedule, gathered as each follows the edit: the tool call ids they
    run, how each packet that runs calls is made ((node, "single" | "context" | "other")),
    and a packet of each form to copy for a call the edit adds."""

    ids: set[str] = field(default_factory=set)
    forms: set[tuple[str, str]] = field(default_factory=set)
    like: dict[str, Any] = field(default_factory=dict)


def _call_list_after_edit(
    packet: Send, new_calls: Mapping[str, Any], changed: set[str], seen: _Scheduled
) -> list[Send]:
    """A packet of tool calls (``create_agent``'s ``Send(node, [call])``): the calls the edit
    changed as edited, those it removed left out, the packet dropped when none is left."""
    arg = packet.arg
    seen.ids.update(c["id"] for c in arg if isinstance(c.get("id"), str))
    seen.forms.add((packet.node, "single" if len(arg) == 1 else "other"))
    calls = [
        _call(new_calls[c["id"]]) if c.get("id") in changed else c
        for c in arg
        if _kept(c, new_calls, changed)
    ]
    return [packet] if calls == arg else [Send(packet.node, calls)] if calls else []


def _context_after_edit(
    packet: Send, values: Mapping[str, Any], new_calls: Mapping[str, Any], changed: set[str], seen: _Scheduled
) -> list[Send]:
    """A ``ToolCallWithContext`` packet (``create_react_agent``'s): its call as edited (none
    when the edit removed it), the state snapshot it carries with the edited channels."""
    arg = packet.arg
    call = arg.get("tool_call")
    cid = call.get("id") if isinstance(call, dict) else None
    if isinstance(cid, str):
        seen.ids.add(cid)
    seen.forms.add((packet.node, "context"))
    state = arg.get("state")
    if isinstance(state, dict):  # the state the router saw: the edited one now
        state = {**state, **{k: v for k, v in values.items() if k in state}}
    seen.like["context"] = {**arg, "state": state}
    if isinstance(call, dict) and not _kept(call, new_calls, changed):
        return []  # the edit removed the call: it does not run
    if isinstance(cid, str) and cid in changed:
        call = _call(new_calls[cid])
    new_arg = {**arg, "tool_call": call, "state": state}
    return [packet if new_arg == arg else Send(packet.node, new_arg)]


def _other_after_edit(packet: Send, changed: set[str], seen: _Scheduled) -> Send:
    """A packet in another form (messages, a state) kept as it is; refused when it runs a
    call the edit changed, which nothing could make it run as edited."""
    runs = packet_calls(packet.arg)
    hit = [c for c in runs if c.get("id") in changed]
    if hit:
        raise BadInputError(
            f"the Send to {packet.node!r} runs tool call {hit[0].get('name')!r} (id "
            f"{hit[0].get('id')!r}) from the conversation it carries, which the edit cannot "
            "change: resume the thread first, or edit another message"
        )
    seen.ids.update(c["id"] for c in runs if isinstance(c.get("id"), str))
    if runs:
        seen.forms.add((packet.node, "other"))
    return packet


def _sends_for_added(old: Any, new: Any, seen: _Scheduled) -> list[Send]:
    """A packet for each call the edit added to an AI message whose calls are scheduled,
    sent as its siblings are (as the router sends every call of the message); refused when
    the siblings' packets are of more than one form, or of one that cannot be copied."""
    added = _added_to_scheduled(old, new, seen.ids)
    if not added:
        return []
    if len(seen.forms) != 1 or next(iter(seen.forms))[1] == "other":
        raise BadInputError(
            f"the edit adds tool call {added[0].get('name')!r} (id {added[0].get('id')!r}) to an AI "
            "message whose calls are scheduled in a form it cannot extend: resume the thread first"
        )
    ((node, form),) = seen.forms
    return [
        Send(node, [_call(c)] if form == "single" else {**seen.like[form], "tool_call": _call(c)})
        for c in added
    ]


def _added_to_scheduled(old: Any, new: Any, scheduled: set[str]) -> list[dict[str, Any]]:
    """The calls the edit added to an AI message some of whose calls are scheduled."""
    if not isinstance(new, list) or not scheduled:
        return []
    before = {getattr(m, "id", None): _calls_of(m) for m in old if _is_ai(m)} if isinstance(old, list) else {}
    added: list[dict[str, Any]] = []
    for m in new:
        if not _is_ai(m):
            continue
        was = before.get(getattr(m, "id", None), {})
        if was and scheduled & set(was):
            added.extend(c for i, c in _calls_of(m).items() if i not in was)
    return added


def _kept(call: dict[str, Any], new_calls: Mapping[str, Any], changed: set[str]) -> bool:
    """Whether a scheduled call still runs: the edit did not remove it from the conversation."""
    cid = call.get("id")
    return not (cid in changed and cid not in new_calls)


def _call(call: Mapping[str, Any]) -> dict[str, Any]:
    """A tool call as ``ToolNode`` takes one (``type: "tool_call"``)."""
    return {"name": call.get("name"), "args": call.get("args"), "id": call.get("id"), "type": "tool_call"}


def _same(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return all(a.get(k) == b.get(k) for k in ("name", "args", "id"))


def _is_call_list(arg: Any) -> bool:
    return (
        isinstance(arg, list)
        and bool(arg)
        and all(isinstance(c, dict) and c.get("type") == "tool_call" for c in arg)
    )


def _is_ai(message: Any) -> bool:
    return getattr(message, "type", None) in ("ai", "AIMessageChunk")


def _calls_of(message: Any) -> dict[str, dict[str, Any]]:
    calls: Iterable[Any] = (getattr(message, "tool_calls", None) or []) if message is not None else []
    return {c["id"]: c for c in calls if isinstance(c, dict) and isinstance(c.get("id"), str)}


def _all_calls(messages: Any) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for m in messages if isinstance(messages, list) else []:
        if _is_ai(m):
            out.update(_calls_of(m))
    return out


def _last_ai(messages: Any) -> Any:
    for m in reversed(messages if isinstance(messages, list) else []):
        if _is_ai(m):
            return m
    return None
