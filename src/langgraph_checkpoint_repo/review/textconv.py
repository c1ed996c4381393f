"""git's textconv driver for state files: each file as a few readable lines.

``langgraph-repo git-setup`` registers it (``diff.langgraph-repo.textconv``), and ``git diff``,
``git log -p`` and ``git show`` then run it once per state file they print, so it must start
fast: it imports the standard library and the core only (not even orjson, whose import costs
more than this whole view), never typer, rich or LangGraph (tests/test_gitsetup.py checks
``sys.modules``). git hands it one path, often a temporary copy
of the old side outside the root, so it reads that one file and follows no reference: a message
is shown where the file holding it is shown (format 4: the checkpoint that introduced it, at the
first place the file refers to it; format 3: its file in ``objects/``), and elsewhere as
``-> object <hash>``.

Every part of a file is either shown or summed up by a digest on a line that is shown (a
folded value, the fields of a message a line does not show, the bookkeeping), so a change
anywhere in a file changes some line of its view. A message is shown as LangChain will build
it (core/format/messages.py), or as refused, with its fields. A file that is not a state file, or not
strict JSON, is printed as it is. Whatever is printed is screened: git prints it to a terminal,
so control characters are escaped and secrets masked.

Bounded and linear whatever a file holds: values are rendered with an explicit stack (no
recursion, however deep a file nests), each value, name and message text is folded past its
budget, and the lines past ``BUDGET`` characters are summed up by one line and a digest.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys
from json.encoder import encode_basestring
from typing import Any

from ..core.errors import FileFormatError
from ..core.format.messages import DEFAULTS, ERROR_MARK, Message, Refusal, is_message_type, read_message
from ..core.jsonread import MAX_FILE_BYTES, json_bounds_problem, parse_strict
from ..core.jsontext import digest
from ..core.masking import escape_controls, mask_message

#: the version of this view; git-setup puts it in the driver's command line, so a release that
#: changes the view (and bumps it) invalidates the text git cached (``cachetextconv``)
VIEW = 4
FOLD = 200  # characters of a value shown before the rest is folded into a digest
TEXT = 4000  # characters of a message's text shown before the rest is folded into a digest
CALLS = 20  # tool calls of one message shown; the rest are summed up with its other fields
NAMES = 5  # names of a message's other fields listed beside their digest
BUDGET = 256_000  # characters of a file's view; the lines past it are summed up by a digest
KINDS = ("checkpoint", "writes", "object", "value", "large_value", "base")
LABEL = {"human": "user", "ai": "ai", "tool": "tool", "system": "system"}
#: metadata LangGraph and LangChain write on every checkpoint: counted with the bookkeeping
QUIET_METADATA = ("parents", "ls_integration", "run_id", "thread_id", "checkpoint_ns")
INDENT = "  "
#: references shown short (``-> <message id>``, else ``-> object <hash>``): set while a kind of
#: file whose first line carries the digest of the whole file is rendered
_SHORT_REFS = False


def main(argv: list[str] | None = None) -> int:
    """``langgraph-repo-textconv [--view N] FILE``: the view of FILE on standard output."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--view"]:
        args = args[2:]
    if len(args) != 1:
        sys.stderr.write("usage: langgraph-repo-textconv [--view N] FILE (git runs it; see git-setup)\n")
        return 2
    text = "".join(line + "\n" for line in view(args[0]))
    try:
        sys.stdout.buffer.write(text.encode("utf-8", "backslashreplace"))
        sys.stdout.flush()
    except BrokenPipeError:  # git stopped reading
        return 0
    return 0


def view(path: str) -> list[str]:
    """The screened lines that stand for the file at ``path``; never raises for what it holds."""
    raw = _read(path)
    if isinstance(raw, str):
        return [_screen(raw)]
    try:
        lines = _lines(raw, path)
    except (RecursionError, ValueError, TypeError, KeyError, AttributeError):
        lines = None  # a shape no view expects: the file as it is
    if lines is None:  # as it is, within the same budgets (a long line folded with its digest)
        lines = [_fold(line, TEXT) for line in raw.decode("utf-8", "backslashreplace").splitlines()]
    lines = budgeted(lines)
    return [_screen(line) for line in lines]


def _read(path: str) -> bytes | str:
    """The file's bytes, or a line saying why they are not read (a link, not a file, too big)."""
    try:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            return f"(a symlink to {os.readlink(path)}: not followed)"
        if not stat.S_ISREG(st.st_mode):
            return "(not a regular file)"
        if st.st_size > MAX_FILE_BYTES:
            return f"(a file of {st.st_size} bytes, over the {MAX_FILE_BYTES}-byte limit of a state file)"
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as fh:
            raw = fh.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        return f"(cannot read {path}: {exc.strerror or exc})"
    if len(raw) > MAX_FILE_BYTES:
        return f"(a file over the {MAX_FILE_BYTES}-byte limit of a state file)"
    return raw


def _lines(raw: bytes, path: str) -> list[str] | None:
    """The view of a state file, or None for anything else (printed as it is)."""
    if json_bounds_problem(raw) is not None:
        return None
    try:
        doc = parse_strict(raw, path)
    except FileFormatError:
        return None
    return render(doc, raw)


def render(doc: Any, raw: bytes | None = None) -> list[str] | None:
    """The lines of a parsed state file (before the budget), or None when it is not one.
    ``raw``: the file's bytes, whose digest stands for the whole file (else the parsed
    document's)."""
    ours = isinstance(doc, dict) and doc.get("kind") in KINDS and isinstance(doc.get("schema_version"), int)
    if not ours:
        return None
    kind = doc["kind"]
    if kind == "object":
        return _object(doc)
    if kind == "large_value":
        head = f"large value {_plain(doc.get('sha256'))[:12]}"
        return [head, *_node_lines("value", doc.get("value"))]
    # the first line of these ends with the digest of the whole file: a reference is shown
    # short (its message id, else its hash), where it is held summed up by that digest
    whole = "#" + hashlib.sha256(raw).hexdigest()[:8] if raw is not None else digest(doc)
    global _SHORT_REFS
    _SHORT_REFS = True
    try:
        if kind == "checkpoint":
            return _checkpoint(doc, whole)
        if kind == "writes":
            return _writes(doc, whole)
        if kind == "base":
            head = f"bookkeeping of removed checkpoint {_plain(doc.get('checkpoint_id'))}"
            return [f"{head} ({whole})"]
        # value: the body's keys (value, empty, append) sit at the top of the file
        head = f"value of channel {_plain(doc.get('channel'))} at version {_plain(doc.get('version'))}"
        body, _ = _body(_plain(doc.get("channel")), doc)
        return [f"{head} ({whole})", *body]
    finally:
        _SHORT_REFS = False


def budgeted(lines: list[str]) -> list[str]:
    """The lines up to ``BUDGET`` characters; the rest as one line with their digest."""
    total = 0
    for i, line in enumerate(lines):
        total += len(line) + 1
        if total > BUDGET:
            rest = lines[i:]
            chars = sum(len(x) + 1 for x in rest)
            return [
                *lines[:i],
                f"… (+{len(rest)} lines, {chars} chars not shown; {digest(chr(10).join(rest))})",
            ]
    return lines


# ----------------------------------------------------------------------------
# the kinds of file
# ----------------------------------------------------------------------------
def _checkpoint(doc: dict[str, Any], d: str) -> list[str]:
    """A checkpoint as what happened at its step: the interrupts, answers and errors its
    parent's tasks wrote (format 4 holds them), then the values the step made, its messages
    as text where this file holds them. What only restates values held elsewhere (a list of
    references) shares the first line; a checkpoint with nothing else is that one line. The
    first line ends with the digest of the whole file: LangGraph's bookkeeping, the writes the
    values show, the references shown short."""
    meta = _dict(doc.get("metadata"))
    records = [_dict(r) for _, r in sorted(_dict(doc.get("parent_writes")).items())]
    head = (
        f"checkpoint {_plain(doc.get('checkpoint_id'))} step {_plain(meta.get('step'))} "
        f"source {_plain(meta.get('source'))}"
    )
    writers = _writers(records)
    if writers and meta.get("source") == "loop":
        head += f" by {writers}"  # the step applied what those tasks wrote
    elif writers:  # an input, an edit, a fork: the step applied none of it
        head += f" (its parent's tasks: {writers})"
    head += f" parent {_plain(doc.get('parent_checkpoint_id') or '-')}"
    if doc.get("checkpoint_ns"):
        head += f" ns {_plain(doc['checkpoint_ns'])}"
    held = _Held(_dict(doc.get("objects")))
    shown: list[str] = []
    shown_meta = {k: v for k, v in meta.items() if k not in ("step", "source", *QUIET_METADATA)}
    if shown_meta:
        shown.append("metadata: " + _compact(shown_meta))
    for record in records:  # what happened to the tasks, before the values they made
        shown.extend(_special_lines(record.get("task_path"), _list(record.get("writes")), held))
    restated: list[str] = []
    new_values = _dict(doc.get("new_values"))
    for channel in sorted(new_values, key=lambda c: (_internal(c), c)):
        body = new_values[channel]
        refs = _restated(body, held)
        if refs is not None:
            restated.append(f"{_plain(channel)}: {refs}")
            continue
        lines, trigger = _body(_plain(channel), body, held)
        if _internal(channel) and (trigger or _cleared(body)):
            continue  # a trigger, the Send packets taken: bookkeeping, in the digest
        shown.extend(lines)
    extra = _dict(doc.get("checkpoint")).get("extra")
    if extra:
        shown.append("extra: " + _compact(extra))
    shown.extend(_unshown_lines(held))
    if not shown:  # only bookkeeping and what other files hold: one line
        said = "; ".join(restated)
        return [f"{head}: {said} (file {d})" if said else f"{head} (file {d})"]
    return [f"{head} (file {d})", *(INDENT + line for line in [*shown, *restated])]


#: LangGraph's NULL_TASK_ID: the task of what a ``Command`` gives the whole thread (a resume,
#: an update); readmodel/tasks.py has it too, but the driver imports the core only
NULL_TASK = "00000000-0000-0000-0000-000000000000"

#: the pending writes LangGraph makes for what happened to a task, shown as what they say
SPECIAL = {"__interrupt__": "interrupt", "__resume__": "resumed with", "__error__": ERROR_MARK}


def _task_name(path: Any) -> str | None:
    """The node a task ran (``~__pregel_pull, model``), ``a Send`` for a pushed task, None for
    the input's own (the empty path: a resume given to the graph)."""
    if not isinstance(path, str) or not path:
        return None
    if path.startswith("~__pregel_pull, "):
        return _plain(path.removeprefix("~__pregel_pull, "))
    if path.startswith("~__pregel_push"):
        return "a Send"
    return _plain(path)


def _writers(records: list[dict[str, Any]]) -> str:
    """Who wrote what a checkpoint applied: the tasks of its parent's writes, in order."""
    names: list[str] = []
    for record in records:
        name = _task_name(record.get("task_path"))
        if name is not None and name not in names:
            names.append(name)
    return _fold(", ".join(names))


def _special_lines(path: Any, writes: list[Any], held: _Held, pending: bool = False) -> list[str]:
    """The interrupts a task raised, the answers it got and its errors, as what they say;
    ``pending``: writes of a writes file, which no checkpoint took yet (an answer is saved)."""
    task = _task_name(path)
    out: list[str] = []
    for write in writes:
        if not isinstance(write, dict) or not isinstance(write.get("channel"), str):
            continue
        label = SPECIAL.get(write["channel"])
        if label is None:
            continue
        node = write.get("value")
        tree = node["json"] if isinstance(node, dict) and "json" in node else None
        if tree is None:  # not a tree: as a value is shown
            first, *rest = _node_lines(label, node, held)
            out += [first, *rest]
        elif label == "interrupt":
            for item in tree if isinstance(tree, list) else [tree]:
                where = f" in {task}" if task else ""
                value = _interrupt_value(item, held)
                said = _compact(value)
                if isinstance(value, dict) and isinstance(value.get("$ns"), str):  # where to read it
                    said += f" (in namespace {_plain(value['$ns'])})"
                out.append(f"interrupt{where}: {said}")
        elif label == "resumed with":
            items = tree if isinstance(tree, list) and tree else [tree]
            said = "answer saved" if pending else label
            out.append(f"{said}: " + _fold("; ".join(_text(t) for t in items)))
        else:
            where = f" in {task}" if task else ""
            out.append(f"{label}{where}: " + _compact(tree))
    return out


def _interrupt_value(tree: Any, held: _Held) -> Any:
    """What an interrupt asks: the ``value`` of the ``Interrupt`` (held here, or inline); a
    reference to one held elsewhere as the reference."""
    found = held.take(tree)
    if found is not None:
        tree = found
    if isinstance(tree, dict) and isinstance(tree.get("$type"), list) and tree["$type"][-1:] == ["Interrupt"]:
        for key in ("$kwargs", "$fields"):
            fields = tree.get(key)
            if isinstance(fields, dict) and "value" in fields:
                return fields["value"]
    return tree


def _cleared(body: Any) -> bool:
    """An internal channel set to an empty list (the Send packets taken)."""
    node = _dict(body).get("value")
    return isinstance(node, dict) and node.get("json") == []


def _restated(body: Any, held: _Held) -> str | None:
    """A channel's value that is only references to what other files hold (a list of
    messages a subgraph made, a list the input restates), as those references on one line;
    None for anything else. Lists this file holds only to group such references are
    followed, once each, without recursion."""
    body = _dict(body)
    if isinstance(body.get("append"), dict) and isinstance(body["append"].get("items"), list):
        items = body["append"]["items"]
        prefix = f"+{_count(len(items), 'item')}: "
    elif isinstance(body.get("value"), dict) and "json" in body["value"] and len(body) == 1:
        items, prefix = body["value"]["json"], ""
        if isinstance(items, dict) and set(items) == {"messages"}:  # a graph's input
            items, prefix = items["messages"], "messages "
        if isinstance(items, list):
            prefix += f"{_count(len(items), 'item')}: "
    else:
        return None
    labels = _ref_labels(items, held)
    return prefix + _fold(", ".join(labels)) if labels else None


def _ref_labels(tree: Any, held: _Held) -> list[str] | None:
    """The references a tree is made of, in order (through lists, ``$chunks`` and the lists
    of references this file holds, each of those once), or None when it holds anything
    else: a value, a message held here (shown as itself). Linear, without recursion: the
    tree is checked first, what it refers to here by ``_Held.pure``, then expanded."""
    ok, kids = _shallow_refs(tree, held.objects)
    if not ok or not all(held.pure(k) for k in kids):
        return None
    labels: list[str] = []
    stack: list[Any] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(reversed(node))
        elif "$chunks" in node:
            stack.extend(reversed(node["$chunks"]))
        elif "$in" not in node and node["$ref"] in held.objects and node["$ref"] not in held.shown:
            held.shown.add(node["$ref"])
            stack.append(held.objects[node["$ref"]])
        else:
            labels.append(_text(node))
    return labels


def _is_ref(node: Any) -> bool:
    return (
        isinstance(node, dict)
        and "$ref" in node
        and node.keys() <= _REF_KEYS
        and all(type(v) is str for v in node.values())
    )


def _shallow_refs(tree: Any, objects: dict[str, Any]) -> tuple[bool, list[str]]:
    """Whether ``tree`` is only references (in lists and ``$chunks``), and the objects held
    here it names (not followed)."""
    kids: list[str] = []
    stack: list[Any] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict) and set(node) == {"$chunks"} and isinstance(node["$chunks"], list):
            stack.extend(node["$chunks"])
        elif _is_ref(node):
            if "$in" not in node and node["$ref"] in objects:
                kids.append(node["$ref"])
        else:
            return False, []
    return True, kids


def _unshown_lines(held: _Held) -> list[str]:
    """The objects a file holds that no line above showed: a message as text, a list of
    references only counted (the file's digest stands for it), anything else compactly."""
    out: list[str] = []
    for name in held.unshown():
        if name in held.shown or held.pure(name):
            continue
        tree = held.objects[name]
        first, *rest = _message(tree) if is_message_type(tree) else [_compact(tree)]
        out += [f"object {_plain(name)[:12]}: {first}", *(INDENT + line for line in rest)]
    return out


class _Held:
    """The objects a file holds (format 4): each shown once, at the first reference to it."""

    def __init__(self, objects: dict[str, Any]) -> None:
        self.objects = objects
        self.shown: set[str] = set()
        self._pure: dict[str, bool] = {}

    def take(self, tree: Any) -> Any:
        """The object a reference in this file names, the first time it is shown; else None."""
        if not isinstance(tree, dict) or "$in" in tree:
            return None
        name = tree.get("$ref")
        if not isinstance(name, str) or name not in self.objects or name in self.shown:
            return None
        self.shown.add(name)
        return self.objects[name]

    def unshown(self) -> list[str]:
        return sorted(n for n in self.objects if n not in self.shown)

    def pure(self, name: str) -> bool:
        """Whether the object ``name`` holds only references, through other such objects held
        here (a message, a value or a cycle is not): each object scanned once, without
        recursion."""
        if name in self._pure:
            return self._pure[name]
        scans: dict[str, tuple[bool, list[str]]] = {}
        stack: list[tuple[str, bool]] = [(name, False)]
        while stack:
            current, done = stack.pop()
            if done:
                ok, kids = scans[current]
                self._pure[current] = ok and all(self._pure.get(k, False) for k in kids)
                continue
            if current in self._pure or current in scans:  # known, or in progress (a cycle)
                continue
            tree = self.objects.get(current)
            ok, kids = _shallow_refs(tree, self.objects)
            ok = ok and isinstance(tree, list | dict) and not is_message_type(tree)
            scans[current] = (ok, kids)
            stack.append((current, True))
            if ok:
                stack.extend((k, False) for k in kids)
        return self._pure[name]


def _writes(doc: dict[str, Any], d: str) -> list[str]:
    """A task's pending writes: interrupts, answers and errors as what they say, each other
    write as its channel's value; the first line ends with the digest of the whole file."""
    task = _plain(doc.get("task_path"))
    task = "(the whole thread's: a Command)" if doc.get("task_id") == NULL_TASK else task
    head = f"writes of checkpoint {_plain(doc.get('checkpoint_id'))} task {task}"
    if doc.get("checkpoint_ns"):
        head += f" ns {_plain(doc['checkpoint_ns'])}"
    writes = _list(doc.get("writes"))
    held = _Held(_dict(doc.get("objects")))
    out = []
    for write in writes:
        if not isinstance(write, dict):
            out.append(INDENT + _compact(write))
            continue
        special = _special_lines(doc.get("task_path"), [write], held, pending=True)
        if special:
            out.extend(INDENT + line for line in special)
            continue
        out.extend(
            INDENT + line for line in _node_lines(_plain(write.get("channel")), write.get("value"), held)
        )
    out.extend(INDENT + line for line in _unshown_lines(held))
    return [f"{head} (file {d})", *out]


def _object(doc: dict[str, Any]) -> list[str]:
    tree = doc.get("tree")
    if is_message_type(tree):
        return _message(tree)
    if isinstance(tree, list):
        return [f"{_count(len(tree), 'item')}: " + _compact(tree)]
    return [_compact(tree)]


# ----------------------------------------------------------------------------
# values
# ----------------------------------------------------------------------------
def _body(channel: str, body: Any, held: _Held | None = None) -> tuple[list[str], bool]:
    """The lines of one channel's value body, and whether it is only a trigger (no value)."""
    if not isinstance(body, dict):
        return [f"{channel}: {_compact(body)}"], False
    if body.get("empty") is True:
        return [f"{channel}: (empty)"], True
    if "append" in body and isinstance(body["append"], dict):
        items = _list(body["append"].get("items"))
        return _items(f"{channel}: +{_count(len(items), 'item')}", items, held), False
    node = body.get("value")
    lines = _node_lines(channel, node, held)
    return lines, _is_null(node)


def _node_lines(channel: str, node: Any, held: _Held | None = None) -> list[str]:
    """``channel: value`` for an encoded node (a list of messages: one line per message)."""
    if not isinstance(node, dict):
        return [f"{channel}: {_compact(node)}"]
    if "large" in node:
        return [f"{channel}: -> large {_plain(node['large'])[:12]}"]
    if "json" in node:
        tree = node["json"]
        if isinstance(tree, list) and tree and all(_is_item(t) for t in tree):
            return _items(f"{channel}: {_count(len(tree), 'item')}", tree, held)
        if isinstance(tree, dict) and isinstance(tree.get("messages"), list):  # a graph's input
            items = tree["messages"]
            if items and all(_is_item(t) for t in items) and set(tree) == {"messages"}:
                return _items(f"{channel}: messages {_count(len(items), 'item')}", items, held)
        if is_message_type(tree) or (held is not None and _is_item(tree)):
            first, *rest = _item(tree, held)
            return [f"{channel}: {first}", *rest]
        return [f"{channel}: {_compact(tree)}"]
    if _is_null(node):
        return [f"{channel}: null"]
    payload = node.get("base64")
    size = len(payload) * 3 // 4 if isinstance(payload, str) else 0
    return [f"{channel}: <{_plain(node.get('serde'))} payload, about {size} bytes; {digest(node)}>"]


def _items(head: str, items: list[Any], held: _Held | None = None) -> list[str]:
    """A list of items after ``head``: one item on the same line, more one per line below."""
    shown = [_item(t, held) for t in items]
    if len(shown) == 1:
        first, *rest = shown[0]
        return [f"{head}: {first}", *rest]
    return [head] + [INDENT + line for lines in shown for line in lines]


def _item(tree: Any, held: _Held | None = None) -> list[str]:
    """One item: a message as ``role: text``; a reference to a message this file holds (format
    4), the first time, as that message (a message input as the input it stands for)."""
    found = held.take(tree) if held is not None else None
    if found is not None and is_message_type(found):
        ident = tree.get("$id") if "$id" in tree else None
        lines = _message(found, ident)
        extra = {k: v for k, v in tree.items() if k not in ("$ref", "$id", "$role", "$pair")}
        if "$role" in tree or "$pair" in tree:
            lines[0] = f"({_plain(tree.get('$role', tree.get('$pair')))} input) " + lines[0]
        if extra:
            lines[0] += f" ({_compact(extra)})"
        return lines
    if found is not None:
        return [f"object {_plain(tree['$ref'])[:12]}: " + _compact(found)]
    if is_message_type(tree):
        return _message(tree)
    return [_compact(tree)]


def _is_item(tree: Any) -> bool:
    return is_message_type(tree) or (isinstance(tree, dict) and "$ref" in tree)


def _is_null(node: Any) -> bool:
    return isinstance(node, dict) and node.get("serde") == "null"


# ----------------------------------------------------------------------------
# messages, as LangChain will build them (core/format/messages.py)
# ----------------------------------------------------------------------------
class _Node:
    """A tree inside a message's line, rendered compactly where the line is made."""

    __slots__ = ("tree",)

    def __init__(self, tree: Any) -> None:
        self.tree = tree


_BREAK = _Node(None)  # where a message's text starts a new line


def _message(tree: Any, ident: Any = None) -> list[str]:
    """``role: text`` (tool calls as ``→ calls name(args) [id]``), the text's further lines
    below; a message refused by the rule as what is refused, and its fields."""
    lines = [""]
    for part in _message_parts(tree, ident):
        if part is _BREAK:
            lines.append(INDENT)
        else:
            lines[-1] += part if isinstance(part, str) else _compact(part.tree)
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
        return [_fold(head, FOLD + 200), _BREAK, _Node(fields)]
    first, *more = _fold(got.shown_text(), TEXT).split("\n")
    ident = ident if ident is not None else got.fields.get("id")
    parts: list[str | _Node] = [f"{_label(got)}: {first}"]
    for line in more:
        parts += [_BREAK, line]
    calls = got.calls[:CALLS]
    if calls:
        parts.append(" → calls " if first or more else "→ calls ")
        for i, call in enumerate(calls):
            parts += [", " if i else "", f"{_plain(call.name)}(", _Node(call.args), ")"]
            if call.id is not None:
                parts.append(f" [{_plain(call.id)}]")
    if got.invalid:
        said = ", ".join(f"{_plain(c.name or '')}({_compact(c.args)})" for c in got.invalid[:CALLS])
        parts.append(f" → invalid calls {said}")
    if ident is not None:  # at the end of the first line
        parts.insert(parts.index(_BREAK) if _BREAK in parts else len(parts), f" (id {_plain(ident)})")
    rest = _unshown(got, ident)
    if rest:
        names = sorted(rest, key=str)
        listed = ", ".join(_fold(str(n), 40) for n in names[:NAMES]) + (", …" if len(names) > NAMES else "")
        parts.append(f" (+{listed}; {digest(rest)})")
    return parts


def _label(got: Message) -> str:
    role = got.role
    if role == "tool":
        # a name "" is not None: LangChain builds another message, so it reads otherwise
        label = "tool" if got.name is None else f"tool {_plain(got.name) if got.name else _quote('')}"
        label += f" [{_plain(got.tool_call_id)}]"
        return label + (f" {ERROR_MARK}" if got.status == "error" else "")
    if role == "chat":
        return f"chat {_plain(got.speaker)}"
    if role == "function":
        return f"function {_plain(got.name)}"
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


def _compact(tree: Any) -> str:
    """A tree on one line, references as ``-> object <hash>``, folded after FOLD characters
    with a digest of the rest (so a change there still changes the line)."""
    return _fold(_text(tree))


def _fold(text: str, limit: int = FOLD) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… (+{len(text) - limit} chars; {digest(text)})"


def _text(tree: Any) -> str:
    """A tree on one line, whole: the standard library's JSON where the tree holds no tag
    (its compact JSON has no ``"$``), else an explicit stack of parts."""
    if isinstance(tree, str):
        return _quote(tree)
    if type(tree) is dict and tree.keys() <= _REF_KEYS and all(type(v) is str for v in tree.values()):
        if "$ref" in tree:  # a reference, the commonest item of a list: as _dict_parts writes it
            if _SHORT_REFS:
                return _short_ref(tree)
            return f"-> object {tree['$ref'][:12]}" + "".join(
                f" ({_REF_WORDS[k]} {tree[k]})" for k in _REF_WORDS if k in tree
            )
    try:
        text = json.dumps(tree, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    except (RecursionError, TypeError, ValueError):
        text = '"$'
    if '"$' not in text:
        return text
    return "".join(_pieces(tree))


class _Lit(str):
    """Text to write as it is (a ``str`` that is not one is a string value of the tree)."""

    __slots__ = ()


_CLOSE_LIST, _CLOSE_DICT, _COMMA = _Lit("]"), _Lit("}"), _Lit(",")


def _pieces(tree: Any) -> list[str]:
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
            add(json.dumps(node, default=str))
    return out


def _joined(items: list[Any]) -> list[Any]:
    out: list[Any] = []
    for i, item in enumerate(items):
        if i:
            out.append(_Lit(","))
        out.append(item)
    return out


_REF_WORDS = {"$id": "id", "$in": "in", "$ns": "ns", "$role": "role", "$pair": "pair"}
_REF_KEYS = {"$ref", *_REF_WORDS}


def _short_ref(tree: dict[str, str]) -> str:
    """A reference as a person follows it: the message id it carries, else the object's hash
    (where it is held, ``$in`` and ``$ns``, is in the digest of the file)."""
    said = f"-> {_fold(tree['$id'], 60)}" if "$id" in tree else f"-> object {tree['$ref'][:12]}"
    for key in ("$role", "$pair"):
        if key in tree:
            said += f" ({_REF_WORDS[key]} {tree[key]})"
    return said


def _dict_parts(tree: dict[str, Any]) -> list[Any]:
    """The parts of an object's one-line form: literals (``_Lit``) and trees."""
    if isinstance(tree.get("$ref"), str):
        if _SHORT_REFS and tree.keys() <= _REF_KEYS and all(type(v) is str for v in tree.values()):
            return [_Lit(_short_ref(tree))]
        parts: list[Any] = [_Lit(f"-> object {tree['$ref'][:12]}")]
        for key, word in _REF_WORDS.items():
            if key in tree:
                value = tree[key]
                parts += [_Lit(f" ({word} "), _Lit(value) if isinstance(value, str) else value, _Lit(")")]
        return parts + _others(tree, _REF_KEYS)
    if isinstance(tree.get("$chunks"), list):
        return [_Lit("chunks["), *_joined(tree["$chunks"]), _Lit("]"), *_others(tree, {"$chunks"})]
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
        parts += [_Lit(("," if i else "") + _quote(str(key)) + ":"), tree[key]]
    return [*parts, _Lit("}")]


def _others(tree: dict[str, Any], used: set[str]) -> list[Any]:
    """The keys of a tag a form does not show, as an object after it (never dropped)."""
    rest = {k: v for k, v in tree.items() if k not in used}
    if not rest:
        return []
    parts: list[Any] = [_Lit(" +{")]
    for i, key in enumerate(sorted(rest, key=str)):
        parts += [_Lit(("," if i else "") + _quote(str(key)) + ":"), rest[key]]
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


# ----------------------------------------------------------------------------
# small helpers
# ----------------------------------------------------------------------------
def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _internal(channel: str) -> bool:
    """LangGraph's own channels (``__start__``, ``branch:to:x``): listed after the state's."""
    return channel.startswith("__") or ":" in channel


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _plain(value: Any) -> str:
    """A name or id as it is (folded past FOLD characters); anything else compactly."""
    return _fold(value) if isinstance(value, str) else _compact(value)


def _quote(text: str) -> str:
    return encode_basestring(text)  # json.dumps(text, ensure_ascii=False)


def _screen(line: str) -> str:
    """A line as it may reach a terminal: secrets masked, control characters escaped."""
    return escape_controls(mask_message(line))


if __name__ == "__main__":
    sys.exit(main())
