"""Checks of what a checkpoint means, beyond each file's schema: what runs is what was asked.

A tool-calling agent answers an AI message's tool calls with ``Send`` packets (kept in
``__pregel_tasks``): on resume, LangGraph runs the packet, not the AI message. So a packet
whose tool call is not one of the calls of the AI message it answers (a hand edit, a pull
request) would run a call nobody reviewed. ``validate`` refuses it and ``review`` flags it.
Read off the stored trees, no LangGraph (in the core: ``validate`` checks it with the rest).
"""

from __future__ import annotations

from typing import Any

from .format.messages import MESSAGES, Message, read_message

#: the channel LangGraph keeps a step's ``Send`` packets in
TASKS = "__pregel_tasks"


def send_node(packet: Any) -> str | None:
    """The node a stored ``Send`` tree goes to."""
    if isinstance(packet, dict) and packet.get("$type") == ["langgraph.types", "Send"]:
        args = packet.get("$args")
        if isinstance(args, list) and args and isinstance(args[0], str):
            return args[0]
        kwargs = packet.get("$kwargs")
        if isinstance(kwargs, dict) and isinstance(kwargs.get("node"), str):
            return str(kwargs["node"])
    return None


def send_problems(trees: dict[str, Any]) -> list[tuple[int, str]]:
    """(index in ``__pregel_tasks``, why) for each ``Send`` carrying a state other than the
    thread's (a channel it holds with another value; for a ``ToolCallWithContext``, also a key
    it does not hold), or a tool call that the last AI message in ``messages`` does not make
    (same name, arguments and id)."""
    sends = trees.get(TASKS)
    if not isinstance(sends, list):
        return []
    asked: list[dict[str, Any]] | None = None
    out = []
    for idx, packet in enumerate(sends):
        if send_node(packet) is None:
            continue
        state = packet_state(packet)
        if state is not None:
            odd = sorted(k for k, v in state.items() if k in trees and trees[k] != v)
            if _in_context(packet):  # the thread's own state: a key it does not hold is forged
                odd += sorted(
                    k for k, v in state.items() if k not in trees and k not in MANAGED and v is not None
                )
            if odd:
                out.append(
                    (
                        idx,
                        f"Send to {send_node(packet)!r} carries a state whose {', '.join(map(repr, odd))} "
                        "is not the thread's: the tool it runs reads that state",
                    )
                )
                continue
        calls = packet_tool_calls(packet)
        if not calls:
            continue
        if asked is None:
            asked = _asked(trees.get(MESSAGES))
        for call in calls:
            if not any(_same_call(call, a) for a in asked):
                name = call.get("name")
                out.append(
                    (
                        idx,
                        f"Send to {send_node(packet)!r} runs tool call {name!r} "
                        f"(id {call.get('id')!r}) that no AI message in the conversation makes",
                    )
                )
                break
    return out


def packet_arg(packet: Any) -> Any:
    """The argument a stored ``Send`` passes to its node."""
    if not isinstance(packet, dict):
        return None
    args = packet.get("$args")
    if isinstance(args, list) and len(args) >= 2:
        return args[1]
    kwargs = packet.get("$kwargs")
    return kwargs.get("arg") if isinstance(kwargs, dict) else None


def packet_tool_calls(packet: Any) -> list[dict[str, Any]]:
    """The tool calls a ``Send`` makes a tool node run, as LangGraph's ``ToolNode`` reads its
    input (``_parse_input``): a list ending in a tool call is all tool calls; a
    ``ToolCallWithContext`` (``create_react_agent``) runs its ``tool_call``; a list of
    messages, or a state with ``messages``, runs the calls of the last AI message it carries."""
    arg = packet_arg(packet)
    if isinstance(arg, list) and arg and is_tool_call(arg[-1]):
        return [c if isinstance(c, dict) else {"name": c} for c in arg]
    if isinstance(arg, dict) and arg.get("__type") == "tool_call_with_context":
        call = arg.get("tool_call")
        return [call if isinstance(call, dict) else {"name": call}]
    if isinstance(arg, dict):
        arg = arg.get(MESSAGES)
    return _asked(arg) if isinstance(arg, list) else []


#: values LangGraph computes for each step rather than keeps in a channel (``RemainingSteps``,
#: ``IsLastStep``): a ``ToolCallWithContext`` state carries them, the thread's channels do not
MANAGED = frozenset({"remaining_steps", "is_last_step"})


def _in_context(packet: Any) -> bool:
    arg = packet_arg(packet)
    return isinstance(arg, dict) and arg.get("__type") == "tool_call_with_context"


def packet_state(packet: Any) -> dict[str, Any] | None:
    """The state a ``Send`` hands its node in place of the thread's: a ``ToolCallWithContext``'s
    ``state``, or a state-shaped argument (one with ``messages``); None for any other."""
    arg = packet_arg(packet)
    if isinstance(arg, dict) and arg.get("__type") == "tool_call_with_context":
        state = arg.get("state")
        return state if isinstance(state, dict) else None
    if isinstance(arg, dict) and MESSAGES in arg:
        return arg
    return None


def is_tool_call(value: Any) -> bool:
    return isinstance(value, dict) and value.get("type") == "tool_call"


def _asked(messages: Any) -> list[dict[str, Any]]:
    """The tool calls of the last AI message (none when it makes none), as LangChain builds
    them (core/format/messages.py) and ``ToolNode`` takes them."""
    if not isinstance(messages, list):
        return []
    for tree in reversed(messages):
        got = read_message(tree)
        if isinstance(got, Message) and got.role == "ai":
            return [{"name": c.name, "args": c.args, "id": c.id} for c in got.calls]
    return []


def _same_call(call: dict[str, Any], asked: dict[str, Any]) -> bool:
    return all(call.get(k) == asked.get(k) for k in ("name", "args", "id"))
