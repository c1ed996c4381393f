"""Trees and messages in a line of the git diff driver's view (view.py).

A stored tree is shown on one line: the standard library's JSON where it holds no tag, else
each tag as what it stands for (a reference as ``-> object <hash>``, a chunked list as
``chunks[...]``, a constructed type as ``Name(...)``, bytes by their size and digest, a
mapping with other keys as ``{key:value}``, a message as ``<role: text>``); nothing a tag
holds is dropped (keys a form does not show follow it as ``+{...}``). A message is shown as
LangChain will build it (messages.py), or as refused, with its fields. Every line is folded
past its budget with a digest of the rest, so a change anywhere still changes the line.

Linear whatever a tree holds: an explicit stack (``pieces``), no recursion, however deep a
file nests. Standard library and core only, like the whole view.
"""

from __future__ import annotations

from ..cjson import dumps, encode_basestring
from ..jsontext import digest
from .markers import CHUNKS, ID, IN, NS, PAIR, REF, ROLE
from .messages import DEFAULTS, ERROR_MARK, Message, Refusal, is_message_type, read_message
from .onefile import REF_KEYS

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing: git's diff driver imports this
if TYPE_CHECKING:
    from collections.abc import Container
    from typing import Any

FOLD = 200  # characters of a value shown before the rest is folded into a digest
TEXT = 4000  # characters of a message's text shown before the rest is folded into a digest
CALLS = 20  # tool calls of one message shown; the rest are summed up with its other fields
NAMES = 5  # names of a message's other fields listed beside their digest
LABEL = {"human": "user", "ai": "ai", "tool": "tool", "system": "system"}
INDENT = "  "
#: references shown short (``-> <message id>``, else ``-> object <hash>``): set while a kind of
#: file whose first line carries the digest of the whole file is rendered (``short_refs``)
_short = False


class short_refs:  # lower case: called as the function it was, ``with short_refs():``
    """While the lines of a file whose first line ends with the digest of the whole file are
    made: a reference is shown as a person follows it (its message id, else its hash), where
    it is held summed up by that digest. (A class, not contextlib's decorator: the git diff
    driver would import contextlib for it on every start.)"""

    def __enter__(self) -> None:
        global _short
        _short = True

    def __exit__(self, *exc: object) -> None:
        global _short
        _short = False


# ----------------------------------------------------------------------------
# messages, as LangChain will build them (messages.py)
# ----------------------------------------------------------------------------
class _Node:
    """A tree inside a message's line, rendered compactly where the line is made."""

    __slots__ = ("tree",)

    def __init__(self, tree: Any) -> None:
        self.tree = tree


_BREAK = _Node(None)  # where a message's text starts a new line


def message(tree: Any, ident: Any = None) -> list[str]:
    """``role: text`` (tool calls as ``→ calls name(args) [id]``), the text's further lines
    below; a message refused by the rule as what is refused, and its fields."""
    lines = [""]
    for part in _message_parts(tree, ident):
        if part is _BREAK:
            lines.append(INDENT)
        else:
            lines[-1] += part if isinstance(part, str) else compact(part.tree)
    return lines


def _message_parts(tree: Any, ident: Any = None) -> list[str | _Node]:
    """A message's line in parts: text, the trees (tool call arguments, a refused message's
    fields) to render compactly, and ``_BREAK`` where its text starts a new line."""
    got = read_message(tree)
    if got is None:  # not a message class (is_message_type said it is: never so)
        return [_Node(tree)]
    if isinstance(got, Refusal):
        # what it holds, without the type that made it a message (so never read again as one)
        fields = {k: v for k, v in tree.items() if k != "$type"}
        head = f"refused message: {got.text()} ({digest(tree)})"
        return [fold(head, FOLD + 200), _BREAK, _Node(fields)]
    first, *more = fold(got.shown_text(), TEXT).split("\n")
    ident = ident if ident is not None else got.fields.get("id")
    parts: list[str | _Node] = [f"{_label(got)}: {first}"]
    for line in more:
        parts += [_BREAK, line]
    calls = got.calls[:CALLS]
    if calls:
        parts.append(" → calls " if first or more else "→ calls ")
        for i, call in enumerate(calls):
            parts += [", " if i else "", f"{plain(call.name)}(", _Node(call.args), ")"]
            if call.id is not None:
                parts.append(f" [{plain(call.id)}]")
    if got.invalid:
        said = ", ".join(f"{plain(c.name or '')}({compact(c.args)})" for c in got.invalid[:CALLS])
        parts.append(f" → invalid calls {said}")
    if ident is not None:  # at the end of the first line
        parts.insert(parts.index(_BREAK) if _BREAK in parts else len(parts), f" (id {plain(ident)})")
    rest = _unshown(got, ident)
    if rest:
        names = sorted(rest, key=str)
        listed = ", ".join(fold(str(n), 40) for n in names[:NAMES]) + (", …" if len(names) > NAMES else "")
        parts.append(f" (+{listed}; {digest(rest)})")
    return parts


def _label(got: Message) -> str:
    """Who says a message: its role as a person reads it, with what tells a tool's apart."""
    role = got.role
    if role == "tool":
        # a name "" is not None: LangChain builds another message, so it reads otherwise
        label = "tool" if got.name is None else f"tool {plain(got.name) if got.name else quote('')}"
        label += f" [{plain(got.tool_call_id)}]"
        return label + (f" {ERROR_MARK}" if got.status == "error" else "")
    if role == "chat":
        return f"chat {plain(got.speaker)}"
    if role == "function":
        return f"function {plain(got.name)}"
    if role == "remove":
        return "remove"
    return LABEL.get(role, role)


def _unshown(got: Message, ident: Any) -> dict[str, Any]:
    """A message's fields its line does not show; a field at its default (or left out, which
    LangChain builds as the default) is shown by its absence."""
    fields, kind = got.fields, got.kind
    shown = {"type"} if fields.get("type") == kind.type else set()
    if isinstance(fields.get("content"), str):
        shown.add("content")
    if isinstance(fields.get("id"), str) and fields["id"] == ident:
        shown.add("id")
    if kind.role in ("tool", "function"):
        shown.add("name")
    if kind.role == "tool":
        shown |= {"tool_call_id", "status"}
    if kind.role == "chat":
        shown.add("role")
    if kind.name != "AIMessageChunk" and len(got.calls) <= CALLS:
        stored = fields.get("tool_calls") or []
        if all(isinstance(c, dict) and set(c) - {"name", "args", "id"} <= {"type"} for c in stored):
            if all(c.get("type", "tool_call") == "tool_call" for c in stored):
                shown.add("tool_calls")
    return {k: v for k, v in fields.items() if k not in shown and (k not in DEFAULTS or v != DEFAULTS[k])}


# ----------------------------------------------------------------------------
# trees on one line
# ----------------------------------------------------------------------------
def compact(tree: Any) -> str:
    """A tree on one line, references as ``-> object <hash>``, folded after FOLD characters
    with a digest of the rest (so a change there still changes the line)."""
    return fold(one_line(tree))


def fold(text: str, limit: int = FOLD) -> str:
    """``text`` up to ``limit`` characters, the rest summed up by its length and digest."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… (+{len(text) - limit} chars; {digest(text)})"


def one_line(tree: Any) -> str:
    """A tree on one line, whole: the standard library's JSON where the tree holds no tag
    (its compact JSON has no ``"$``), else an explicit stack of parts."""
    if isinstance(tree, str):
        return quote(tree)
    if type(tree) is dict and tree.keys() <= REF_KEYS and all(type(v) is str for v in tree.values()):
        if REF in tree:  # a reference, the commonest item of a list: as _dict_parts writes it
            if _short:
                return _short_ref(tree)
            return f"-> object {tree[REF][:12]}" + "".join(
                f" ({_REF_WORDS[k]} {tree[k]})" for k in _REF_WORDS if k in tree
            )
    try:
        text = dumps(tree, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    except (RecursionError, TypeError, ValueError):
        text = '"$'
    if '"$' not in text:
        return text
    return "".join(pieces(tree))


class _Lit(str):
    """Text to write as it is (a ``str`` that is not one is a string value of the tree)."""

    __slots__ = ()


_CLOSE_LIST, _CLOSE_DICT, _COMMA = _Lit("]"), _Lit("}"), _Lit(",")


def pieces(tree: Any) -> list[str]:
    """The one-line form of a tree in pieces, with an explicit stack: time linear in the
    tree, however deep it nests (lists and plain objects here, tags by ``_dict_parts``)."""
    out: list[str] = []
    add = out.append
    stack: list[Any] = [tree]
    pop, push = stack.pop, stack.append
    while stack:
        node = pop()
        kind = type(node)
        if kind is _Lit:
            add(node)
        elif kind is str:
            add(encode_basestring(node))
        elif kind is list:
            if not node:
                add("[]")
                continue
            add("[")
            push(_CLOSE_LIST)
            for i in range(len(node) - 1, 0, -1):
                push(node[i])
                push(_COMMA)
            push(node[0])
        elif kind is dict:
            if any(k[:1] == "$" for k in node):
                stack.extend(reversed(_dict_parts(node)))
            elif not node:
                add("{}")
            else:
                keys = sorted(node)
                add("{")
                push(_CLOSE_DICT)
                for i in range(len(keys) - 1, -1, -1):
                    push(node[keys[i]])
                    push(_Lit(("," if i else "") + encode_basestring(keys[i]) + ":"))
        elif node is None:
            add("null")
        elif node is True:
            add("true")
        elif node is False:
            add("false")
        elif kind is int:
            add(int.__repr__(node))
        else:
            add(dumps(node, default=str))
    return out


def _joined(items: list[Any]) -> list[Any]:
    """Items with a comma between each two, for the stack of ``pieces``."""
    out: list[Any] = []
    for i, item in enumerate(items):
        if i:
            out.append(_Lit(","))
        out.append(item)
    return out


#: the keys a reference carries beside ``$ref``, in the order shown, with their words
_REF_WORDS = {ID: "id", IN: "in", NS: "ns", ROLE: "role", PAIR: "pair"}


def _short_ref(tree: dict[str, str]) -> str:
    """A reference as a person follows it: the message id it carries, else the object's hash
    (where it is held, ``$in`` and ``$ns``, is in the digest of the file)."""
    said = f"-> {fold(tree[ID], 60)}" if ID in tree else f"-> object {tree[REF][:12]}"
    for key in (ROLE, PAIR):
        if key in tree:
            said += f" ({_REF_WORDS[key]} {tree[key]})"
    return said


def _dict_parts(tree: dict[str, Any]) -> list[Any]:
    """The parts of an object's one-line form: literals (``_Lit``) and trees."""
    if isinstance(tree.get(REF), str):
        if _short and tree.keys() <= REF_KEYS and all(type(v) is str for v in tree.values()):
            return [_Lit(_short_ref(tree))]
        parts: list[Any] = [_Lit(f"-> object {tree[REF][:12]}")]
        for key, word in _REF_WORDS.items():
            if key in tree:
                value = tree[key]
                parts += [_Lit(f" ({word} "), _Lit(value) if isinstance(value, str) else value, _Lit(")")]
        return parts + _others(tree, REF_KEYS)
    if isinstance(tree.get(CHUNKS), list):
        return [_Lit("chunks["), *_joined(tree[CHUNKS]), _Lit("]"), *_others(tree, {CHUNKS})]
    if is_message_type(tree):
        return _inline_message(tree)
    kind = tree.get("$type")
    if isinstance(kind, list) and len(kind) == 2 and all(isinstance(k, str) for k in kind):
        return _tagged(kind[1], tree)
    if isinstance(tree.get("$bytes"), str):
        return [_Lit(f"<{len(tree['$bytes']) * 3 // 4} bytes; {digest(tree)}>")]
    if isinstance(tree.get("$map"), list):
        parts = [_Lit("{")]
        for i, pair in enumerate(tree["$map"]):
            if i:
                parts.append(_Lit(","))
            if isinstance(pair, list) and len(pair) == 2:
                parts += [pair[0], _Lit(":"), pair[1]]
            else:
                parts.append(pair)
        return [*parts, _Lit("}"), *_others(tree, {"$map"})]
    parts = [_Lit("{")]
    for i, key in enumerate(sorted(tree, key=str)):
        parts += [_Lit(("," if i else "") + quote(str(key)) + ":"), tree[key]]
    return [*parts, _Lit("}")]


def _others(tree: dict[str, Any], used: Container[str]) -> list[Any]:
    """The keys of a tag a form does not show, as an object after it (never dropped)."""
    rest = {k: v for k, v in tree.items() if k not in used}
    if not rest:
        return []
    parts: list[Any] = [_Lit(" +{")]
    for i, key in enumerate(sorted(rest, key=str)):
        parts += [_Lit(("," if i else "") + quote(str(key)) + ":"), rest[key]]
    return [*parts, _Lit("}")]


def _tagged(name: str, tree: dict[str, Any]) -> list[Any]:
    """``Name(...)`` for a tree that names a type (a Send, a dataclass, a datetime ...)."""
    parts: list[Any] = [_Lit(name + "(")]
    used = {"$type", "$pydantic", "$method"}
    if "$arg" in tree:
        parts.append(tree["$arg"])
        used.add("$arg")
    elif isinstance(tree.get("$args"), list):
        parts += _joined(tree["$args"])
        used.add("$args")
    else:
        key = "$kwargs" if "$kwargs" in tree else "$fields"
        used.add(key)
        kwargs = tree.get(key)
        if isinstance(kwargs, dict):
            for i, k in enumerate(sorted(kwargs, key=str)):
                parts += [_Lit(("," if i else "") + f"{k}="), kwargs[k]]
        elif kwargs is not None:
            parts.append(kwargs)
    parts.append(_Lit(")"))
    if "$method" in tree and "$pydantic" not in tree:
        parts.insert(1, _Lit(f".{tree['$method']}") if isinstance(tree["$method"], str) else tree["$method"])
    return parts + _others(tree, used)


def _inline_message(tree: dict[str, Any]) -> list[Any]:
    """``<role: text / more text → calls name(args)>`` inside a value's one-line form: the
    same parts as the message's own line, its trees left to the same stack."""
    out: list[Any] = [_Lit("<")]
    for part in _message_parts(tree):
        if part is _BREAK:
            out.append(_Lit(" / "))
        elif isinstance(part, _Node):
            out.append(part.tree)
        else:
            out.append(_Lit(part))
    return [*out, _Lit(">")]


def plain(value: Any) -> str:
    """A name or id as it is (folded past FOLD characters); anything else compactly."""
    return fold(value) if isinstance(value, str) else compact(value)


def quote(text: str) -> str:
    """A string as JSON writes it, without escaping what is not ASCII."""
    return encode_basestring(text)  # json.dumps(text, ensure_ascii=False)
