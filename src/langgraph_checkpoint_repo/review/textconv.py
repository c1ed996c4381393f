"""git's textconv driver for state files: each file as a few readable lines.

``langgraph-repo git-setup`` registers it (``diff.langgraph-repo.textconv``), and ``git diff``,
``git log -p`` and ``git show`` then run it once per state file they print, so it must start
fast: it imports the standard library and the core only (not even orjson, whose import costs
more than this whole view), never typer, rich or LangGraph (tests/test_gitsetup.py checks
``sys.modules``). git hands it one path, often a temporary copy
of the old side outside the root, so it reads that one file and follows no reference: a message
in ``objects/`` is shown where its file is shown, and elsewhere as ``-> object <hash>``.

Every part of a file is either shown or summed up by a digest on a line that is shown (a
folded value, the bookkeeping), so a change anywhere in a file changes some line of its view.
A file that is not a state file, or not strict JSON, is printed as it is. Whatever is printed
is screened: git prints it to a terminal, so control characters are escaped and secrets masked.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys
from collections.abc import Iterable
from typing import Any

from ..core.errors import FileFormatError
from ..core.jsonread import MAX_FILE_BYTES, json_bounds_problem, parse_strict
from ..core.masking import escape_controls, mask_message
from ..core.messages import content_text, message_fields, tool_calls

#: the version of this view; git-setup puts it in the driver's command line, so a release that
#: changes the view (and bumps it) invalidates the text git cached (``cachetextconv``)
VIEW = 1
FOLD = 200  # characters of a value shown before the rest is folded into a digest
KINDS = ("checkpoint", "writes", "object", "value", "large_value")
LABEL = {"human": "user", "ai": "ai", "tool": "tool", "system": "system"}
#: metadata LangGraph and LangChain write on every checkpoint: counted with the bookkeeping
QUIET_METADATA = ("parents", "ls_integration", "run_id", "thread_id", "checkpoint_ns")
INDENT = "  "


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
    if lines is None:
        lines = raw.decode("utf-8", "backslashreplace").splitlines()
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
    ours = isinstance(doc, dict) and doc.get("kind") in KINDS and isinstance(doc.get("schema_version"), int)
    if not ours:
        return None
    kind = doc["kind"]
    if kind == "checkpoint":
        return _checkpoint(doc)
    if kind == "writes":
        return _writes(doc)
    if kind == "object":
        return _object(doc)
    if kind == "value":  # the body's keys (value, empty, append) sit at the top of the file
        head = f"value of channel {_plain(doc.get('channel'))} at version {_plain(doc.get('version'))}"
        body, _ = _body(str(doc.get("channel")), doc)
        return [f"{head} ({_digest(_append_base(doc))})", *body]
    head = f"large value {str(doc.get('sha256'))[:12]}"
    return [head, *_node_lines("value", doc.get("value"))]


# ----------------------------------------------------------------------------
# the kinds of file
# ----------------------------------------------------------------------------
def _checkpoint(doc: dict[str, Any]) -> list[str]:
    meta = _dict(doc.get("metadata"))
    head = (
        f"checkpoint {_plain(doc.get('checkpoint_id'))} step {_plain(meta.get('step'))} "
        f"source {_plain(meta.get('source'))} parent {_plain(doc.get('parent_checkpoint_id') or '-')}"
    )
    if doc.get("checkpoint_ns"):
        head += f" ns {_plain(doc['checkpoint_ns'])}"
    out = [head]
    shown = {k: v for k, v in meta.items() if k not in ("step", "source", *QUIET_METADATA)}
    if shown:
        out.append(INDENT + "metadata: " + _compact(shown))
    quiet: dict[str, Any] = {k: meta[k] for k in QUIET_METADATA if k in meta}
    triggers: dict[str, Any] = {}
    new_values = _dict(doc.get("new_values"))
    for channel in sorted(new_values, key=lambda c: (_internal(c), c)):
        lines, trigger = _body(channel, new_values[channel])
        if trigger and _internal(channel):
            triggers[channel] = new_values[channel]
        else:
            out.extend(INDENT + line for line in lines)
    extra = _dict(doc.get("checkpoint")).get("extra")
    if extra:
        out.append(INDENT + "extra: " + _compact(extra))
    out.append(INDENT + _bookkeeping(doc, quiet, triggers))
    return out


def _bookkeeping(doc: dict[str, Any], quiet: dict[str, Any], triggers: dict[str, Any]) -> str:
    """One line for what LangGraph keeps to schedule nodes, with a digest of all of it."""
    ckpt = _dict(doc.get("checkpoint"))
    versions = _dict(ckpt.get("channel_versions"))
    seen = _dict(ckpt.get("versions_seen"))
    refs = _dict(doc.get("values"))
    parts = [
        _count(len(versions), "channel version"),
        _count(len(seen), "node") + " seen",
        _count(len(refs), "value") + " kept elsewhere",
    ]
    if triggers:
        parts.append(_count(len(triggers), "trigger"))
    folded = {
        "appends": {c: _append_base(body) for c, body in _dict(doc.get("new_values")).items()},
        "checkpoint": {k: v for k, v in ckpt.items() if k != "extra"},
        "metadata": quiet,
        "schema_version": doc.get("schema_version"),
        "thread_id": doc.get("thread_id"),
        "triggers": triggers,
        "values": refs,
    }
    return f"(bookkeeping: {', '.join(parts)}; {_digest(folded)})"


def _writes(doc: dict[str, Any]) -> list[str]:
    head = f"writes of checkpoint {_plain(doc.get('checkpoint_id'))} task {_plain(doc.get('task_path'))}"
    if doc.get("checkpoint_ns"):
        head += f" ns {_plain(doc['checkpoint_ns'])}"
    writes = _list(doc.get("writes"))
    out = []
    for write in writes:
        if not isinstance(write, dict):
            out.append(INDENT + _compact(write))
            continue
        out.extend(INDENT + line for line in _node_lines(str(write.get("channel")), write.get("value")))
    # the task id and each write's index are LangGraph's bookkeeping: a digest stands for them
    unshown = {
        "idx": [w.get("idx") for w in writes if isinstance(w, dict)],
        "schema_version": doc.get("schema_version"),
        "task_id": doc.get("task_id"),
        "thread_id": doc.get("thread_id"),
    }
    return [f"{head} ({_digest(unshown)})", *out]


def _object(doc: dict[str, Any]) -> list[str]:
    tree = doc.get("tree")
    if message_fields(tree) is not None:
        return _message(tree)
    if isinstance(tree, list):
        return [f"{_count(len(tree), 'item')}: " + _compact(tree)]
    return [_compact(tree)]


# ----------------------------------------------------------------------------
# values
# ----------------------------------------------------------------------------
def _body(channel: str, body: Any) -> tuple[list[str], bool]:
    """The lines of one channel's value body, and whether it is only a trigger (no value)."""
    if not isinstance(body, dict):
        return [f"{channel}: {_compact(body)}"], False
    if body.get("empty") is True:
        return [f"{channel}: (empty)"], True
    if "append" in body and isinstance(body["append"], dict):
        items = _list(body["append"].get("items"))
        return _items(f"{channel}: +{_count(len(items), 'item')}", items), False
    node = body.get("value")
    lines = _node_lines(channel, node)
    return lines, _is_null(node)


def _append_base(body: Any) -> dict[str, Any]:
    """What an appended list's view leaves out: the list it extends (base, length, depth)."""
    append = _dict(body).get("append")
    return {k: v for k, v in append.items() if k != "items"} if isinstance(append, dict) else {}


def _node_lines(channel: str, node: Any) -> list[str]:
    """``channel: value`` for an encoded node (a list of messages: one line per message)."""
    if not isinstance(node, dict):
        return [f"{channel}: {_compact(node)}"]
    if "large" in node:
        return [f"{channel}: -> large {str(node['large'])[:12]}"]
    if "json" in node:
        tree = node["json"]
        if isinstance(tree, list) and tree and all(_is_item(t) for t in tree):
            return _items(f"{channel}: {_count(len(tree), 'item')}", tree)
        if message_fields(tree) is not None:
            first, *rest = _message(tree)
            return [f"{channel}: {first}", *rest]
        return [f"{channel}: {_compact(tree)}"]
    if _is_null(node):
        return [f"{channel}: null"]
    payload = node.get("base64")
    size = len(payload) * 3 // 4 if isinstance(payload, str) else 0
    return [f"{channel}: <{_plain(node.get('serde'))} payload, about {size} bytes; {_digest(node)}>"]


def _items(head: str, items: list[Any]) -> list[str]:
    """A list of items after ``head``: one item on the same line, more one per line below."""
    shown = [_item(t) for t in items]
    if len(shown) == 1:
        first, *rest = shown[0]
        return [f"{head}: {first}", *rest]
    return [head] + [INDENT + line for lines in shown for line in lines]


def _item(tree: Any) -> list[str]:
    if message_fields(tree) is not None:
        return _message(tree)
    return [_compact(tree)]


def _is_item(tree: Any) -> bool:
    return message_fields(tree) is not None or (isinstance(tree, dict) and "$ref" in tree)


def _is_null(node: Any) -> bool:
    return isinstance(node, dict) and node.get("serde") == "null"


def _message(tree: Any) -> list[str]:
    """``role: text`` (tool calls as ``→ calls name(args)``), the text's further lines below."""
    fields = message_fields(tree) or {}
    role = str(fields.get("type") or "message")
    label = LABEL.get(role, role)
    if role == "tool" and fields.get("name"):
        label = f"tool {fields['name']}"
    text = content_text(fields.get("content"))
    calls = tool_calls(fields)
    if calls:
        said = ", ".join(f"{name}({_compact(args)})" for name, args in calls)
        text = f"{text} → calls {said}" if text else f"→ calls {said}"
    first, *rest = text.split("\n") if text else [""]
    out = [f"{label}: {first}".rstrip()]
    if isinstance(tree, dict) and isinstance(tree.get("$id"), str):
        out[0] += f" (id {tree['$id']})"
    return out + [INDENT + line for line in rest]


def _compact(tree: Any) -> str:
    """A tree on one line, references as ``-> object <hash>``, folded after FOLD characters
    with a digest of the rest (so a change there still changes the line)."""
    text = "".join(_parts(tree))
    if len(text) <= FOLD:
        return text
    return f"{text[:FOLD]}… (+{len(text) - FOLD} chars; {_digest(text)})"


def _parts(tree: Any) -> Iterable[str]:
    if isinstance(tree, dict):
        if "$ref" in tree and isinstance(tree["$ref"], str):
            yield f"-> object {tree['$ref'][:12]}"
            if "$id" in tree:
                yield f" (id {_plain(tree['$id'])})"
            return
        if "$chunks" in tree and isinstance(tree["$chunks"], list):
            yield "chunks["
            yield from _join(tree["$chunks"])
            yield "]"
            return
        if message_fields(tree) is not None:
            yield "<" + " / ".join(_message(tree)) + ">"
            return
        kind = tree.get("$type")
        if isinstance(kind, list) and len(kind) == 2 and all(isinstance(k, str) for k in kind):
            yield from _tagged(kind[1], tree)
            return
        if "$bytes" in tree and isinstance(tree["$bytes"], str):
            yield f"<{len(tree['$bytes']) * 3 // 4} bytes; {_digest(tree)}>"
            return
        if "$map" in tree and isinstance(tree["$map"], list):
            pairs = [p for p in tree["$map"] if isinstance(p, list) and len(p) == 2]
            yield "{"
            for i, (key, value) in enumerate(pairs):
                yield "," if i else ""
                yield from _parts(key)
                yield ":"
                yield from _parts(value)
            yield "}"
            return
        yield "{"
        for i, key in enumerate(sorted(tree, key=str)):
            yield "," if i else ""
            yield _quote(str(key)) + ":"
            yield from _parts(tree[key])
        yield "}"
    elif isinstance(tree, list):
        yield "["
        yield from _join(tree)
        yield "]"
    elif isinstance(tree, str):
        yield _quote(tree)
    else:
        yield json.dumps(tree)


def _tagged(name: str, tree: dict[str, Any]) -> Iterable[str]:
    """``Name(...)`` for a tree that names a type (a Send, a dataclass, a datetime ...)."""
    yield name + "("
    if "$arg" in tree:
        yield from _parts(tree["$arg"])
    elif isinstance(tree.get("$args"), list):
        yield from _join(tree["$args"])
    else:
        kwargs = tree.get("$kwargs", tree.get("$fields"))
        if isinstance(kwargs, dict):
            for i, key in enumerate(sorted(kwargs, key=str)):
                yield ("," if i else "") + f"{key}="
                yield from _parts(kwargs[key])
        elif kwargs is not None:
            yield from _parts(kwargs)
    yield ")"


def _join(items: list[Any]) -> Iterable[str]:
    for i, item in enumerate(items):
        yield "," if i else ""
        yield from _parts(item)


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
    return value if isinstance(value, str) else json.dumps(value, default=str)


def _quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _digest(value: Any) -> str:
    """The first 8 hex digits of the sha256 of a value's sorted JSON: it stands for what is not shown."""
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    data = text.encode("utf-8", "surrogatepass")
    return "#" + hashlib.sha256(data).hexdigest()[:8]


def _screen(line: str) -> str:
    """A line as it may reach a terminal: secrets masked, control characters escaped."""
    return escape_controls(mask_message(line))


if __name__ == "__main__":
    sys.exit(main())
