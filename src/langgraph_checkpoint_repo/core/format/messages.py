"""A stored LangChain message read as LangChain will build it, or refused.

The app never reads a stored message's fields: the serde hands them to the message's class
(``AIMessage(**fields)``), and LangChain's constructors and validators build the message
from them. Some fields change what is built: ``content_blocks`` replaces ``content``;
``additional_kwargs.tool_calls`` becomes real tool calls when ``tool_calls`` is empty; an
``AIMessageChunk`` makes its tool calls from ``tool_call_chunks``; a ``ToolMessage`` turns a
number into text; a field of another class (``tool_calls`` on a user message) is kept as an
attribute that code reading ``message.tool_calls`` takes for the real one. ``read_message``
is the one rule every view takes a message from: what LangChain builds, as a person reads it
(its role from its class, text, tool calls ...), or a ``Refusal`` naming the field that would
change meaning when the message is built. ``validate`` and the saver refuse what it refuses;
the review, the textconv driver, ``show`` and ``render`` show what it reads. It accepts what
LangChain writes: the model dump of a built message builds the same message again.

In the core and the standard library only (no LangChain): the textconv driver git starts
once per file imports it. tests/test_messages_built.py checks it against LangChain itself.
"""

from __future__ import annotations

from ..cjson import decode_error, loads
from ..jsontext import digest, sorted_json

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing: git's diff driver imports this
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any, TypeVar

    _R = TypeVar("_R", bound="_Record")

#: the channel a conversation lives in (MessagesState's, create_agent's)
MESSAGES = "messages"
#: the id a RemoveMessage gives to remove every message (langgraph's REMOVE_ALL_MESSAGES)
REMOVE_ALL = "__remove_all__"
#: the one marker of a failure in every view (a tool result with ``status: "error"``, a task
#: with an ``__error__`` write): words a screen reader says and ``grep`` finds, not a colour
ERROR_MARK = "✗ error"

_BASE = ("content", "additional_kwargs", "response_metadata", "type", "name", "id")
_AI = (*_BASE, "tool_calls", "invalid_tool_calls", "usage_metadata")
_TOOL = (*_BASE, "tool_call_id", "artifact", "status")


class _Record(tuple):  # type: ignore[type-arg]
    """A named tuple, as ``collections.namedtuple`` makes one: its items by position and by the
    names of ``_fields`` (read-only), ``_defaults`` for the last ones, the same repr, equality
    and pickling. Here, not collections' (nor typing.NamedTuple, whose annotations typing
    reads): importing collections was a tenth of the start of git's diff driver, which git
    starts once per file version it prints and which builds these. The fields are annotated
    again on each class for the type checker, never assigned."""

    __slots__ = ()
    _fields: tuple[str, ...] = ()
    _defaults: tuple[Any, ...] = ()

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        for i, name in enumerate(cls._fields):
            setattr(cls, name, property(_item(i), doc=f"Alias for field number {i}"))
        setattr(cls, "__match_args__", cls._fields)  # noqa: B010

    def __new__(record: type[_R], /, *args: Any, **named: Any) -> _R:  # a field may be named cls
        fields = record._fields
        if len(args) == len(fields) and not named:  # how the package makes them
            return tuple.__new__(record, args)
        if len(args) > len(fields):
            raise TypeError(f"{record.__name__} takes {len(fields)} arguments, {len(args)} given")
        values = [*args, *[_MISSING] * (len(fields) - len(args))]
        first_default = len(fields) - len(record._defaults)
        for k in range(max(len(args), first_default), len(fields)):
            values[k] = record._defaults[k - first_default]
        for name, value in named.items():
            if name not in fields or fields.index(name) < len(args):
                raise TypeError(f"{record.__name__} got an unexpected or repeated argument {name!r}")
            values[fields.index(name)] = value
        for name, value in zip(fields, values, strict=True):
            if value is _MISSING:
                raise TypeError(f"{record.__name__} misses the argument {name!r}")
        return tuple.__new__(record, values)

    def __repr__(self) -> str:
        said = ", ".join(f"{name}={value!r}" for name, value in zip(self._fields, self, strict=True))
        return f"{type(self).__name__}({said})"

    def __getnewargs__(self) -> tuple[Any, ...]:
        return tuple(self)


_MISSING = object()


def _item(i: int) -> Callable[[tuple[Any, ...]], Any]:
    """The getter of a ``_Record``'s field number ``i``."""

    def get(record: tuple[Any, ...]) -> Any:
        return record[i]

    return get


class Kind(_Record):
    """A LangChain message class: its ``type``, the role a person reads, its fields."""

    __slots__ = ()
    _fields = ("name", "type", "role", "fields")
    name: str
    type: str
    role: str  # human, ai, tool, system, chat, function, remove
    fields: frozenset[str]


def _kind(name: str, type_: str, role: str, fields: tuple[str, ...]) -> Kind:
    return Kind(name, type_, role, frozenset(fields))


_M = "langchain_core.messages."
#: (module, name) -> the class: LangGraph's safe message types but its two base classes (a
#: test checks the fields against the installed langchain_core's ``model_fields``)
CLASSES: dict[tuple[str, str], Kind] = {
    (_M + "human", "HumanMessage"): _kind("HumanMessage", "human", "human", _BASE),
    (_M + "human", "HumanMessageChunk"): _kind("HumanMessageChunk", "HumanMessageChunk", "human", _BASE),
    (_M + "system", "SystemMessage"): _kind("SystemMessage", "system", "system", _BASE),
    (_M + "system", "SystemMessageChunk"): _kind("SystemMessageChunk", "SystemMessageChunk", "system", _BASE),
    (_M + "ai", "AIMessage"): _kind("AIMessage", "ai", "ai", _AI),
    (_M + "ai", "AIMessageChunk"): _kind(
        "AIMessageChunk", "AIMessageChunk", "ai", (*_AI, "tool_call_chunks", "chunk_position")
    ),
    (_M + "tool", "ToolMessage"): _kind("ToolMessage", "tool", "tool", _TOOL),
    (_M + "tool", "ToolMessageChunk"): _kind("ToolMessageChunk", "ToolMessageChunk", "tool", _TOOL),
    (_M + "chat", "ChatMessage"): _kind("ChatMessage", "chat", "chat", (*_BASE, "role")),
    (_M + "chat", "ChatMessageChunk"): _kind(
        "ChatMessageChunk", "ChatMessageChunk", "chat", (*_BASE, "role")
    ),
    (_M + "function", "FunctionMessage"): _kind("FunctionMessage", "function", "function", _BASE),
    (_M + "function", "FunctionMessageChunk"): _kind(
        "FunctionMessageChunk", "FunctionMessageChunk", "function", _BASE
    ),
    (_M + "modifier", "RemoveMessage"): _kind("RemoveMessage", "remove", "remove", _BASE),
}
#: LangChain's base classes: allowed by LangGraph, never what LangChain stores
BASES = frozenset({(_M + "base", "BaseMessage"), (_M + "base", "BaseMessageChunk")})
#: every field of every message class, and the constructor's ``content_blocks``: on a class
#: without it, such a key is kept as an attribute code takes for the real field
_MEANINGFUL = frozenset({"content_blocks"}.union(*(k.fields for k in CLASSES.values())))
#: what a field left out of the stored fields is built as (the driver leaves it out too)
DEFAULTS: dict[str, Any] = {
    "additional_kwargs": {},
    "response_metadata": {},
    "name": None,
    "id": None,
    "tool_calls": [],
    "invalid_tool_calls": [],
    "usage_metadata": None,
    "tool_call_chunks": [],
    "chunk_position": None,
    "artifact": None,
    "status": "success",
    "example": False,  # a field of every message before langchain-core 1.0
}


class Call(_Record):
    """A tool call as LangChain builds it (``args``: the stored tree of its arguments)."""

    __slots__ = ()
    _fields = ("name", "args", "id")
    name: str
    args: Any
    id: str | None


class BadCall(_Record):
    """An invalid tool call: the model's call LangChain could not parse (kept as text)."""

    __slots__ = ()
    _fields = ("name", "args", "id", "error")
    name: str | None
    args: str | None
    id: str | None
    error: str | None


class Message:
    """A stored message as LangChain builds it. (Plain classes and named tuples here, no
    dataclass nor typing: the driver git starts once per file would pay for importing and
    making them.)"""

    __slots__ = ("calls", "content", "fields", "invalid", "kind")

    def __init__(
        self,
        kind: Kind,
        fields: dict[str, Any],  # as stored
        content: Any,  # str, or a list of str and blocks (trees)
        calls: tuple[Call, ...] = (),
        invalid: tuple[BadCall, ...] = (),
    ) -> None:
        self.kind, self.fields, self.content, self.calls, self.invalid = kind, fields, content, calls, invalid

    def __repr__(self) -> str:
        return f"Message({self.kind.name}, calls={self.calls!r}, invalid={self.invalid!r})"

    @property
    def role(self) -> str:
        return self.kind.role

    @property
    def text(self) -> str:
        """LangChain's ``message.text``: the content's strings and text blocks, joined."""
        if isinstance(self.content, str):
            return self.content
        parts = []
        for block in self.content:
            if isinstance(block, str):
                parts.append(block)
            else:
                text = _text_of(_as_dict(block))
                if text is not None:
                    parts.append(text)
        return "".join(parts)

    def shown_text(self) -> str:
        """The text a person reads: the text, each other block as ``[type #digest]`` in its
        place (so a changed image or tool block changes the line)."""
        if isinstance(self.content, str):
            return self.content
        parts = []
        for block in self.content:
            if isinstance(block, str):
                parts.append(block)
                continue
            got = _as_dict(block)
            text = _text_of(got)
            if text is not None:
                parts.append(text)
            else:
                kind = got.get("type") if got is not None else None
                parts.append(f"[{kind if isinstance(kind, str) else 'block'} {digest(block)}]")
        return "".join(parts)

    def get(self, name: str) -> Any:
        """A field as built (its default when it is not stored)."""
        return self.fields.get(name, DEFAULTS.get(name))

    @property
    def name(self) -> str | None:
        got = self.fields.get("name")
        return got if isinstance(got, str) else None

    @property
    def id(self) -> str | None:
        got = self.fields.get("id")
        return got if isinstance(got, str) else None

    @property
    def tool_call_id(self) -> str | None:
        got = self.fields.get("tool_call_id")
        return got if isinstance(got, str) else None

    @property
    def status(self) -> str | None:
        """A tool result's status (``error``: the tool failed), None for other messages."""
        if self.kind.role != "tool":
            return None
        got = self.fields.get("status", "success")
        return got if isinstance(got, str) else None

    @property
    def speaker(self) -> str | None:
        """A ChatMessage's own ``role`` (a provider sends it as that role)."""
        got = self.fields.get("role") if self.kind.role == "chat" else None
        return got if isinstance(got, str) else None


class Refusal(_Record):
    """A stored message refused: the field that would change meaning when it is built
    (``changes``), or that LangChain would refuse to build (the serde's strict read fails
    on it too, with its own words)."""

    __slots__ = ()
    _fields = ("cls", "field", "why", "changes", "key")
    _defaults = (True, "$fields")
    cls: str  # the class it names
    field: str  # a path below its fields: "content_blocks", "additional_kwargs/tool_calls"
    why: str
    changes: bool  # True unless given
    key: str  # where its fields are stored ($fields, $kwargs), or a tag; "$fields" unless given

    @property
    def pointer(self) -> str:
        """The JSON pointer of the field inside the message's tree."""
        if not self.field:
            return f"/{_part(self.key)}"
        return f"/{_part(self.key)}/" + "/".join(_part(p) for p in self.field.split("/"))

    def text(self) -> str:
        return f"{self.cls} {self.field or self.key}: {self.why}"


def _part(segment: str) -> str:
    return segment.replace("~", "~0").replace("/", "~1")


class _Refused(Exception):
    def __init__(self, field: str, why: str, changes: bool = True) -> None:
        super().__init__(field)
        self.field = field
        self.why = why
        self.changes = changes


def _fails(field: str, why: str) -> _Refused:
    """A field LangChain refuses to build a message from (the strict read fails too)."""
    return _Refused(field, why + " (LangChain refuses to build it)", False)


# ----------------------------------------------------------------------------
# the rule
# ----------------------------------------------------------------------------
def is_message_type(tree: Any) -> bool:
    """Whether a tree names a LangChain message class (one the rule reads or refuses)."""
    if not isinstance(tree, dict):
        return False
    key = tree.get("$type")
    return (
        isinstance(key, list)
        and len(key) == 2
        and isinstance(key[0], str)
        and isinstance(key[1], str)
        and ((key[0], key[1]) in CLASSES or (key[0], key[1]) in BASES)
    )


def read_message(tree: Any) -> Message | Refusal | None:
    """What LangChain builds from a stored message tree, a Refusal, or None (not a message).
    Never raises, whatever the tree holds."""
    if not is_message_type(tree):
        return None
    module, name = tree["$type"]
    kind = CLASSES.get((module, name))
    if kind is None:
        why = (
            "LangChain's base class, which LangChain never stores: code that tells messages "
            "apart by class knows no role for it"
        )
        return Refusal(name, "", why, True, "$type")
    if "$pydantic" in tree:  # how core/format/tree.py's from_tree reads a type node
        key = "$fields"
    elif "$method" in tree:
        why = "a message made by calling a method, not built from its fields (refused by the reader)"
        return Refusal(name, "", why, False, "$method")
    else:
        key = next((k for k in ("$arg", "$args", "$kwargs") if k in tree), "$fields")
        if key in ("$arg", "$args"):
            why = "built from positional arguments (the second is content_blocks), not from stored fields"
            return Refusal(name, "", why, True, key)
    fields = tree.get(key)
    if not isinstance(fields, dict):
        return Refusal(name, "", "not an object of fields (LangChain refuses to build it)", False, key)
    if not _plain(fields):
        return Refusal(name, "", "an object of fields stored as a tagged value, built as another", True, key)
    try:
        return _read(kind, fields)
    except _Refused as no:
        return Refusal(name, no.field, no.why, no.changes, key)
    except RecursionError:  # a partial JSON parse of arguments nested deeper than the stack
        return Refusal(name, "", "nested too deeply to tell what LangChain builds", True, key)


def _read(kind: Kind, fields: dict[str, Any]) -> Message:
    # the kind's items taken once (each is a property call): a fresh read of a long chat
    # reads every message of its list here, and this loop runs once per stored field
    name, own_fields, role = kind.name, kind.fields, kind.role
    for field, value in fields.items():
        if field == "content_blocks":
            if value is not None:
                raise _Refused(
                    field, "LangChain builds the message's content from content_blocks and drops content"
                )
        elif field not in own_fields and field in _MEANINGFUL and value != DEFAULTS.get(field, None):
            raise _Refused(
                field,
                f"not a field of {name}: LangChain keeps it as an attribute, which code "
                f"reading message.{field} takes for a real one",
            )
    if "type" in fields and fields["type"] != kind.type:
        raise _fails("type", f"{name}'s type is {kind.type!r}, not {_short(fields['type'])}")
    for field in ("additional_kwargs", "response_metadata"):
        if field in fields and _as_dict(fields[field]) is None:
            raise _fails(field, "not an object")
    if fields.get("name") is not None and not isinstance(fields["name"], str):
        raise _fails("name", "not a string")
    _check_id(fields, role == "remove")
    if role == "remove":
        if fields.get("content"):
            raise _fails("content", "a RemoveMessage has no content")
        return Message(kind, fields, "")
    if "content" not in fields:
        if role == "tool":
            raise _Refused("content", "missing: LangChain builds the text 'None'")
        raise _fails("content", "missing")
    content = fields["content"]
    _check_content(content, role == "tool")
    if role == "tool":
        _check_tool(fields)
    elif role == "chat" and not isinstance(fields.get("role"), str):
        raise _fails("role", "a ChatMessage's role must be a string")
    elif role == "function" and not isinstance(fields.get("name"), str):
        raise _fails("name", "a FunctionMessage's name must be a string")
    if role != "ai":
        return Message(kind, fields, content)
    return _ai(kind, fields, content)


def _check_id(fields: dict[str, Any], remove: bool) -> None:
    """An id is a string or null (a number is turned into a string: another id than the one
    shown). A RemoveMessage is built with one (null where format 4 keeps it apart, in the
    reference's ``$id``)."""
    got = fields.get("id")
    if isinstance(got, str) or (got is None and (not remove or "id" in fields)):
        return
    if got is None:
        raise _fails("id", "a RemoveMessage names the message it removes by its id")
    if isinstance(got, (int, float)) and not isinstance(got, bool):
        raise _Refused("id", "a number, which LangChain turns into a string")
    raise _fails("id", "not a string")


def _check_content(content: Any, tool: bool) -> None:
    """Content LangChain keeps as it is: a string, or a list of strings and blocks (a
    ToolMessage turns anything else into text, other messages refuse it)."""
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        if tool or _tagged(content):
            raise _Refused("content", "not a string or a list: LangChain turns it into another value")
        raise _fails("content", "not a string or a list")
    for i, item in enumerate(content):
        if isinstance(item, str):
            continue
        block = _as_dict(item)
        if block is None:
            if tool or _tagged(item):
                raise _Refused(
                    f"content/{i}", "not a string or a block: LangChain turns it into another value"
                )
            raise _fails(f"content/{i}", "not a string or a block")
        for key in ("type", "text"):
            if _tagged(block.get(key)):
                raise _Refused(f"content/{i}/{key}", "a constructed value where LangChain reads a string")


def _check_tool(fields: dict[str, Any]) -> None:
    got = fields.get("tool_call_id")
    if isinstance(got, (int, float)) and not isinstance(got, bool):
        raise _Refused("tool_call_id", "a number, which LangChain turns into a string")
    if not isinstance(got, str):
        raise _fails("tool_call_id", "a ToolMessage answers a tool call by its id, a string")
    if fields.get("status", "success") not in ("success", "error"):
        raise _fails("status", "must be 'success' or 'error'")


def _ai(kind: Kind, fields: dict[str, Any], content: Any) -> Message:
    """AIMessage's validators: tool calls from the stored lists, from additional_kwargs
    when those are empty, and (AIMessageChunk) from ``tool_call_chunks``."""
    chunk = kind.name == "AIMessageChunk"
    calls = tuple(_call(i, c) for i, c in enumerate(_list(fields, "tool_calls")))
    invalid = tuple(_bad_call(i, c) for i, c in enumerate(_list(fields, "invalid_tool_calls")))
    chunks = [_chunk(i, c) for i, c in enumerate(_list(fields, "tool_call_chunks"))] if chunk else []
    if chunk and fields.get("chunk_position") not in (None, "last"):
        raise _fails("chunk_position", "must be null or 'last'")
    if not (calls or invalid or chunks):
        extra = _as_dict(fields.get("additional_kwargs", {})) or {}
        raw = extra.get("tool_calls")
        if raw and _parses(raw, chunk):
            raise _Refused(
                "additional_kwargs/tool_calls",
                "with tool_calls empty, LangChain makes these the message's tool calls",
            )
    if chunks:
        built, built_invalid = _from_chunks(chunks)
        same = _call_trees(built) == _call_trees(calls) and built_invalid == invalid
        if not same and not _made_from(chunks, calls, invalid):
            raise _Refused(
                "tool_call_chunks",
                "an AIMessageChunk makes its tool calls from its tool_call_chunks, which say other calls",
            )
        calls, invalid = built, built_invalid
    if chunk:
        _check_last_chunk(fields, content, calls)
    return Message(kind, fields, content, calls, invalid)


def _list(fields: dict[str, Any], name: str) -> list[Any]:
    got = fields.get(name, [])
    if not isinstance(got, list):
        raise _fails(name, "not a list")
    return got


def _call(i: int, call: Any) -> Call:
    """A stored tool call: LangChain rebuilds it from its name, args and id (type and
    extras are dropped), so these three must be there and be what they say."""
    if not _plain(call) or not {"name", "args", "id"} <= call.keys() <= {
        "name",
        "args",
        "id",
        "type",
        "extras",
    }:
        raise _fails(f"tool_calls/{i}", "not a tool call (name, args, id)")
    if not isinstance(call["name"], str):
        raise _fails(f"tool_calls/{i}/name", "not a string")
    args = _as_dict(call["args"])
    if args is None or not all(isinstance(k, str) for k in args):
        raise _fails(f"tool_calls/{i}/args", "not an object")
    if call["id"] is not None and not isinstance(call["id"], str):
        raise _fails(f"tool_calls/{i}/id", "not a string")
    return Call(call["name"], call["args"], call["id"])


def _bad_call(i: int, call: Any) -> BadCall:
    keys = ("name", "args", "id", "error")
    if not _plain(call) or not call.keys() <= {*keys, "type"}:
        raise _fails(f"invalid_tool_calls/{i}", "not an invalid tool call (name, args, id, error)")
    for key in keys:
        if call.get(key) is not None and not isinstance(call[key], str):
            raise _fails(f"invalid_tool_calls/{i}/{key}", "not a string")
    return BadCall(call.get("name"), call.get("args"), call.get("id"), call.get("error"))


def _chunk(i: int, chunk: Any) -> dict[str, Any]:
    if not _plain(chunk) or not chunk.keys() <= {"name", "args", "id", "index", "type"}:
        raise _fails(f"tool_call_chunks/{i}", "not a tool call chunk (name, args, id, index)")
    for key in ("name", "args", "id"):
        if chunk.get(key) is not None and not isinstance(chunk[key], str):
            raise _fails(f"tool_call_chunks/{i}/{key}", "not a string")
    return {key: chunk.get(key) for key in ("name", "args", "id", "index")}


def _from_chunks(chunks: list[dict[str, Any]]) -> tuple[tuple[Call, ...], tuple[BadCall, ...]]:
    """AIMessageChunk.init_tool_calls: each chunk's JSON arguments parsed (partial JSON
    completed as LangChain completes it) into a tool call, or an invalid one."""
    calls: list[Call] = []
    invalid: list[BadCall] = []
    for chunk in chunks:
        try:
            args = partial_json(chunk["args"]) if chunk["args"] else {}
        except Exception:
            args = None
        if isinstance(args, dict):
            calls.append(Call(chunk["name"] or "", as_tree(args), chunk["id"]))
        else:
            invalid.append(BadCall(chunk["name"], chunk["args"], chunk["id"], None))
    return tuple(calls), tuple(invalid)


def _made_from(chunks: list[dict[str, Any]], calls: tuple[Call, ...], invalid: tuple[BadCall, ...]) -> bool:
    """Whether the chunks are the ones AIMessageChunk makes of its tool calls and invalid
    ones (init_tool_calls, without chunks given): LangChain writes them so, and reads them
    back as ``_from_chunks`` says (an invalid call with empty arguments comes back valid)."""
    if len(chunks) != len(calls) + len(invalid) or any(c["index"] is not None for c in chunks):
        return False
    for chunk, call in zip(chunks, calls, strict=False):
        try:
            args = loads(chunk["args"]) if isinstance(chunk["args"], str) else None
        except ValueError:
            return False
        if (chunk["name"], chunk["id"]) != (call.name, call.id) or as_tree(args) != call.args:
            return False
    rest = chunks[len(calls) :]
    return all(
        (c["name"], c["args"], c["id"]) == (b.name, b.args, b.id) for c, b in zip(rest, invalid, strict=True)
    )


def _call_trees(calls: tuple[Call, ...]) -> list[tuple[Any, ...]]:
    return [(c.name, c.args, c.id) for c in calls]


def _check_last_chunk(fields: dict[str, Any], content: Any, calls: tuple[Call, ...]) -> None:
    """The last chunk of a v1 stream rewrites its content's tool call and server tool call
    blocks (init_tool_calls, init_server_tool_calls): refused where that would change one."""
    metadata = _as_dict(fields.get("response_metadata", {})) or {}
    if not (
        fields.get("chunk_position") == "last"
        and metadata.get("output_version") == "v1"
        and isinstance(content, list)
    ):
        return
    ids = [c.id for c in calls] if fields.get("tool_call_chunks") else []
    for i, item in enumerate(content):
        block = _as_dict(item)
        if block is None:
            continue
        kind = block.get("type")
        if kind == "tool_call_chunk" and block.get("id") and block.get("id") in ids:
            raise _Refused(f"content/{i}", "the last chunk of a stream makes this block a tool call")
        if kind in ("server_tool_call", "server_tool_call_chunk"):
            text = block.get("args") or "{}"
            if not isinstance(text, str):
                continue
            try:
                parsed = loads(text)
            except ValueError:
                continue
            if isinstance(parsed, dict) and (kind != "server_tool_call" or block.get("args") != parsed):
                raise _Refused(f"content/{i}", "the last chunk of a stream parses this block's arguments")


def _parses(raw: Any, chunk: bool) -> bool:
    """Whether AIMessage's validator makes tool calls (or invalid ones, or chunks) of raw
    ``additional_kwargs.tool_calls`` (langchain_core's default_tool_parser, which gives up
    on any error); a tree with tagged values (not plain JSON) counts as parsed."""
    if any(_tagged(node) for node in _nodes(raw)):
        return True
    try:
        out: list[tuple[Any, ...]] = []
        for call in raw:
            if chunk:
                if "function" not in call:
                    out.append((None, None, call.get("id"), call.get("index")))
                else:
                    function = call["function"]
                    out.append((function["name"], function["arguments"], call.get("id"), call.get("index")))
                continue
            if "function" not in call:
                continue
            name = call["function"]["name"]
            try:
                out.append((name, loads(call["function"]["arguments"]), call.get("id")))
            except decode_error():
                out.append((name, call["function"]["arguments"], call.get("id")))
        return bool(out)
    except Exception:
        return False


# ----------------------------------------------------------------------------
# small helpers
# ----------------------------------------------------------------------------
def _plain(tree: Any) -> bool:
    """A JSON object that is no tag (``{"$bytes": ...}`` is bytes once built)."""
    return isinstance(tree, dict) and not _has_tag_key(tree)


def _tagged(tree: Any) -> bool:
    return isinstance(tree, dict) and _has_tag_key(tree)


def _has_tag_key(tree: dict[Any, Any]) -> bool:
    """Whether a key of the object starts with ``$`` (a loop, not ``any`` over a generator:
    every message read asks it of several objects)."""
    try:
        for k in tree:
            if k[:1] == "$" and isinstance(k, str):
                return True
    except TypeError:  # a key that cannot be sliced (no JSON file holds one)
        return any(isinstance(k, str) and k.startswith("$") for k in tree)
    return False


def _as_dict(tree: Any) -> dict[Any, Any] | None:
    """A tree that is a mapping once built: a plain object, or a ``$map`` (its string keys)."""
    if _plain(tree):
        return tree  # type: ignore[no-any-return]
    if isinstance(tree, dict) and set(tree) == {"$map"} and isinstance(tree["$map"], list):
        pairs = tree["$map"]
        if all(isinstance(p, list) and len(p) == 2 for p in pairs):
            return {k: v for k, v in pairs if isinstance(k, str)}
    return None


def _text_of(block: dict[Any, Any] | None) -> str | None:
    """A text block's text (LangChain's ``text`` takes only these), else None."""
    if block is not None and block.get("type") == "text" and isinstance(block.get("text"), str):
        return str(block["text"])
    return None


def _nodes(tree: Any) -> list[Any]:
    """Every node of a tree (iteratively)."""
    out, stack = [], [tree]
    while stack:
        node = stack.pop()
        out.append(node)
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return out


def _short(value: Any) -> str:
    text = sorted_json(value)
    return text if len(text) <= 40 else text[:40] + "…"


_INFINITIES = (float("inf"), float("-inf"))


def as_tree(value: Any) -> Any:
    """A value ``json.loads`` made, as the stored tree of it (an object with a key starting
    with ``$`` as a ``$map``, a non-finite float as ``$float``), without recursion."""
    top: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(value, top, 0)]
    while stack:
        node, parent, key = stack.pop()
        out: Any = node
        if isinstance(node, dict):
            if any(not isinstance(k, str) or k.startswith("$") for k in node):
                pairs: list[list[Any]] = [[k, None] for k in node]
                out = {"$map": pairs}
                stack.extend((v, pair, 1) for pair, v in zip(pairs, node.values(), strict=True))
            else:
                out = dict.fromkeys(node)
                stack.extend((v, out, k) for k, v in node.items())
        elif isinstance(node, list):
            out = [None] * len(node)
            stack.extend((v, out, i) for i, v in enumerate(node))
        elif isinstance(node, float) and (node != node or node in _INFINITIES):  # not math.isfinite
            out = {"$float": "nan" if node != node else ("inf" if node > 0 else "-inf")}
        parent[key] = out
    return top[0]


def partial_json(text: str) -> Any:
    """langchain_core.utils.json.parse_partial_json: JSON, or a prefix of it completed
    (open strings closed, then open objects and arrays, dropping what cannot end)."""
    try:
        return loads(text, strict=False)
    except decode_error():
        pass
    chars: list[str] = []
    stack: list[str] = []
    inside = escaped = False
    for ch in text:
        new = ch
        if inside:
            if ch == '"' and not escaped:
                inside = False
            elif ch == "\n" and not escaped:
                new = "\\n"
            elif ch == "\\":
                escaped = not escaped
            else:
                escaped = False
        elif ch == '"':
            inside, escaped = True, False
        elif ch == "{":
            stack.append("}")
        elif ch == "[":
            stack.append("]")
        elif ch in "}]":
            if stack and stack[-1] == ch:
                stack.pop()
            else:
                return None
        chars.append(new)
    if inside:
        if escaped:
            chars.pop()
        chars.append('"')
    stack.reverse()
    from bisect import bisect_right  # here: only text that is no JSON pays for them
    from itertools import accumulate

    ends = list(accumulate(map(len, chars)))
    while chars:
        try:
            return loads("".join(chars + stack), strict=False)
        except decode_error() as e:
            idx = bisect_right(ends, e.pos)
            if idx < len(chars):
                del chars[idx:]
                del ends[idx:]
            else:
                chars.pop()
                ends.pop()
    return loads(text, strict=False)


# ----------------------------------------------------------------------------
# every message of a tree
# ----------------------------------------------------------------------------
#: the (module, name) of every message type, for a quick look at the types a tree names
MESSAGE_TYPES = frozenset(CLASSES) | BASES


def refusals(
    tree: Any, *, changes_only: bool = False, alone: Callable[[dict[str, Any]], bool] | None = None
) -> list[tuple[str, Refusal]]:
    """(JSON pointer inside ``tree`` of the refused field, the refusal) of every message the
    rule refuses, outer before inner; ``changes_only``: only those LangChain would build as
    something else (the others it refuses itself). Iterative: any depth.

    ``alone`` (the caller's quick look at an object's JSON, false when unsure): whether no
    other ``$type`` key lies below a tagged object. Nothing below one that is alone is
    walked; below one that is not, everything is, without asking again."""
    found: list[tuple[Any, Refusal]] = []
    _walk([tree], found, changes_only, alone)
    if not found:
        return []
    where = _pointers(tree, {id(node) for node, _ in found})
    return [(where[id(node)] + got.pointer, got) for node, got in found]


def _judge(node: dict[str, Any], found: list[tuple[Any, Refusal]], changes_only: bool) -> None:
    got = read_message(node)
    if isinstance(got, Refusal) and (got.changes or not changes_only):
        found.append((node, got))


def _walk(
    stack: list[Any],
    found: list[tuple[Any, Refusal]],
    changes_only: bool,
    alone: Callable[[dict[str, Any]], bool] | None = None,
) -> None:
    """``refusals``' walk of what ``stack`` holds: every node, but nothing below a tagged
    object ``alone`` says holds no other; below one it does not, everything, unasked."""
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(reversed(node))
        elif isinstance(node, dict):
            if "$type" in node:
                _judge(node, found, changes_only)
                if alone is not None:
                    if not alone(node):
                        _walk(list(reversed(node.values())), found, changes_only)
                    continue
            stack.extend(reversed(node.values()))


def _pointers(tree: Any, wanted: set[int]) -> dict[int, str]:
    """The JSON pointer of each node of ``tree`` whose ``id`` is wanted."""
    out: dict[int, str] = {}
    stack: list[tuple[Any, str]] = [(tree, "")]
    while stack and len(out) < len(wanted):
        node, pointer = stack.pop()
        if id(node) in wanted and id(node) not in out:
            out[id(node)] = pointer
        if isinstance(node, list):
            stack.extend((x, f"{pointer}/{i}") for i, x in enumerate(node))
        elif isinstance(node, dict):
            stack.extend((x, f"{pointer}/{_part(str(k))}") for k, x in node.items())
    return out


# ----------------------------------------------------------------------------
# for the views
# ----------------------------------------------------------------------------
def message_fields(tree: Any) -> dict[str, Any] | None:
    """The stored fields of a tree naming a LangChain message class (read or refused)."""
    if not is_message_type(tree):
        return None
    got = tree.get("$fields", tree.get("$kwargs"))
    return got if isinstance(got, dict) else None


def content_text(content: Any) -> str:
    """A content as a person reads it (a string, or strings and blocks: ``Message.shown_text``)."""
    if isinstance(content, (str, list)):
        return Message(CLASSES[(_M + "human", "HumanMessage")], {}, content).shown_text()
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
    from collections.abc import Mapping  # here: git's diff driver never asks, and collections costs

    return [
        (str(c.get("name", "?")), c.get("args", {})) if isinstance(c, Mapping) else ("?", c) for c in calls
    ]
