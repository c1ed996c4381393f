"""The one-file view the git diff driver prints: each state file as a few readable lines.

``langgraph-repo git-setup`` registers the driver (review/textconv.py), and ``git diff``,
``git log -p`` and ``git show`` run it once per state file they print; it hands the parsed
file to ``render`` and prints what comes back. A file is read alone (onefile.py): a
message is shown where the file holding it is shown (format 4: the checkpoint that
introduced it, at the first place the file refers to it; format 3: its file in
``objects/``), and elsewhere as ``-> object <hash>``.

Every part of a file is either shown or summed up by a digest on a line that is shown (a
folded value, the fields of a message a line does not show, the bookkeeping), so a change
anywhere in a file changes some line of its view. Trees and messages are put on a line by
inline.py. Bounded and linear whatever a file holds: each value, name and message text is
folded past its budget, and the lines past ``BUDGET`` characters are summed up by one line
and a digest. Standard library and core only: git starts the driver once per file.
"""

from __future__ import annotations

from ..jsontext import digest, sha256_hex
from .inline import INDENT, compact, fold, message, one_line, plain, short_refs
from .markers import CHUNKS, ID, NS, PAIR, REF, ROLE, is_null_payload
from .messages import ERROR_MARK, is_message_type
from .onefile import (
    Held,
    as_dict,
    as_list,
    new_value_bodies,
    objects_held,
    parent_write_records,
    shallow_refs,
    viewed_kind,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing: git's diff driver imports this
if TYPE_CHECKING:
    from typing import Any

#: the version of this view; git-setup puts it in the driver's command line, so a release that
#: changes the view (and bumps it) invalidates the text git cached (``cachetextconv``)
VIEW = 4
BUDGET = 256_000  # characters of a file's view; the lines past it are summed up by a digest
#: metadata LangGraph and LangChain write on every checkpoint: counted with the bookkeeping
QUIET_METADATA = ("parents", "ls_integration", "run_id", "thread_id", "checkpoint_ns")


def render(doc: Any, raw: bytes | None = None) -> list[str] | None:
    """The lines of a parsed state file (before the budget), or None when it is not one.
    ``raw``: the file's bytes, whose digest stands for the whole file (else the parsed
    document's)."""
    kind = viewed_kind(doc)
    if kind is None:
        return None
    if kind == "object":
        return _object(doc)
    if kind == "large_value":
        head = f"large value {plain(doc.get('sha256'))[:12]}"
        return [head, *_node_lines("value", doc.get("value"))]
    # the first line of these ends with the digest of the whole file: a reference is shown
    # short (its message id, else its hash), where it is held summed up by that digest
    whole = "#" + sha256_hex(raw)[:8] if raw is not None else digest(doc)
    with short_refs():
        if kind == "checkpoint":
            return _checkpoint(doc, whole)
        if kind == "writes":
            return _writes(doc, whole)
        if kind == "base":
            head = f"bookkeeping of removed checkpoint {plain(doc.get('checkpoint_id'))}"
            return [f"{head} ({whole})"]
        # value: the body's keys (value, empty, append) sit at the top of the file
        head = f"value of channel {plain(doc.get('channel'))} at version {plain(doc.get('version'))}"
        body, _ = _body(plain(doc.get("channel")), doc)
        return [f"{head} ({whole})", *body]


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
    meta = as_dict(doc.get("metadata"))
    records = parent_write_records(doc)
    head = (
        f"checkpoint {plain(doc.get('checkpoint_id'))} step {plain(meta.get('step'))} "
        f"source {plain(meta.get('source'))}"
    )
    writers = _writers(records)
    if writers and meta.get("source") == "loop":
        head += f" by {writers}"  # the step applied what those tasks wrote
    elif writers:  # an input, an edit, a fork: the step applied none of it
        head += f" (its parent's tasks: {writers})"
    head += f" parent {plain(doc.get('parent_checkpoint_id') or '-')}"
    if doc.get("checkpoint_ns"):
        head += f" ns {plain(doc['checkpoint_ns'])}"
    held = objects_held(doc)
    shown: list[str] = []
    shown_meta = {k: v for k, v in meta.items() if k not in ("step", "source", *QUIET_METADATA)}
    if shown_meta:
        shown.append("metadata: " + compact(shown_meta))
    for record in records:  # what happened to the tasks, before the values they made
        shown.extend(_special_lines(record.get("task_path"), as_list(record.get("writes")), held))
    restated: list[str] = []
    new_values = new_value_bodies(doc)
    for channel in sorted(new_values, key=lambda c: (_internal(c), c)):
        body = new_values[channel]
        refs = _restated(body, held)
        if refs is not None:
            restated.append(f"{plain(channel)}: {refs}")
            continue
        lines, trigger = _body(plain(channel), body, held)
        if _internal(channel) and (trigger or _cleared(body)):
            continue  # a trigger, the Send packets taken: bookkeeping, in the digest
        shown.extend(lines)
    extra = as_dict(doc.get("checkpoint")).get("extra")
    if extra:
        shown.append("extra: " + compact(extra))
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
        return plain(path.removeprefix("~__pregel_pull, "))
    if path.startswith("~__pregel_push"):
        return "a Send"
    return plain(path)


def _writers(records: list[dict[str, Any]]) -> str:
    """Who wrote what a checkpoint applied: the tasks of its parent's writes, in order."""
    names: list[str] = []
    for record in records:
        name = _task_name(record.get("task_path"))
        if name is not None and name not in names:
            names.append(name)
    return fold(", ".join(names))


def _special_lines(path: Any, writes: list[Any], held: Held, pending: bool = False) -> list[str]:
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
                said = compact(value)
                if isinstance(value, dict) and isinstance(value.get(NS), str):  # where to read it
                    said += f" (in namespace {plain(value[NS])})"
                out.append(f"interrupt{where}: {said}")
        elif label == "resumed with":
            items = tree if isinstance(tree, list) and tree else [tree]
            said = "answer saved" if pending else label
            out.append(f"{said}: " + fold("; ".join(one_line(t) for t in items)))
        else:
            where = f" in {task}" if task else ""
            out.append(f"{label}{where}: " + compact(tree))
    return out


def _interrupt_value(tree: Any, held: Held) -> Any:
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
    node = as_dict(body).get("value")
    return isinstance(node, dict) and node.get("json") == []


def _restated(body: Any, held: Held) -> str | None:
    """A channel's value that is only references to what other files hold (a list of
    messages a subgraph made, a list the input restates), as those references on one line;
    None for anything else. Lists this file holds only to group such references are
    followed, once each, without recursion."""
    body = as_dict(body)
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
    return prefix + fold(", ".join(labels)) if labels else None


def _ref_labels(tree: Any, held: Held) -> list[str] | None:
    """The references a tree is made of, in order (through lists, ``$chunks`` and the lists
    of references this file holds, each of those once), or None when it holds anything
    else: a value, a message held here (shown as itself). Linear, without recursion: the
    tree is checked first, what it refers to here by ``Held.pure``, then expanded."""
    ok, kids = shallow_refs(tree, held.objects)
    if not ok or not all(held.pure(k) for k in kids):
        return None
    labels: list[str] = []
    stack: list[Any] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(reversed(node))
        elif CHUNKS in node:
            stack.extend(reversed(node[CHUNKS]))
        elif (found := held.take(node)) is not None:  # a list held here: followed, once
            stack.append(found)
        else:
            labels.append(one_line(node))
    return labels


def _unshown_lines(held: Held) -> list[str]:
    """The objects a file holds that no line above showed: a message as text, a list of
    references only counted (the file's digest stands for it), anything else compactly."""
    out: list[str] = []
    for name in held.unshown():
        if name in held.shown or held.pure(name):
            continue
        tree = held.objects[name]
        first, *rest = message(tree) if is_message_type(tree) else [compact(tree)]
        out += [f"object {plain(name)[:12]}: {first}", *(INDENT + line for line in rest)]
    return out


def _writes(doc: dict[str, Any], d: str) -> list[str]:
    """A task's pending writes: interrupts, answers and errors as what they say, each other
    write as its channel's value; the first line ends with the digest of the whole file."""
    task = plain(doc.get("task_path"))
    task = "(the whole thread's: a Command)" if doc.get("task_id") == NULL_TASK else task
    head = f"writes of checkpoint {plain(doc.get('checkpoint_id'))} task {task}"
    if doc.get("checkpoint_ns"):
        head += f" ns {plain(doc['checkpoint_ns'])}"
    writes = as_list(doc.get("writes"))
    held = objects_held(doc)
    out = []
    for write in writes:
        if not isinstance(write, dict):
            out.append(INDENT + compact(write))
            continue
        special = _special_lines(doc.get("task_path"), [write], held, pending=True)
        if special:
            out.extend(INDENT + line for line in special)
            continue
        out.extend(
            INDENT + line for line in _node_lines(plain(write.get("channel")), write.get("value"), held)
        )
    out.extend(INDENT + line for line in _unshown_lines(held))
    return [f"{head} (file {d})", *out]


def _object(doc: dict[str, Any]) -> list[str]:
    """An object (format 3's ``objects/``): a message as its line, a list counted, else compactly."""
    tree = doc.get("tree")
    if is_message_type(tree):
        return message(tree)
    if isinstance(tree, list):
        return [f"{_count(len(tree), 'item')}: " + compact(tree)]
    return [compact(tree)]


# ----------------------------------------------------------------------------
# values
# ----------------------------------------------------------------------------
def _body(channel: str, body: Any, held: Held | None = None) -> tuple[list[str], bool]:
    """The lines of one channel's value body, and whether it is only a trigger (no value)."""
    if not isinstance(body, dict):
        return [f"{channel}: {compact(body)}"], False
    if body.get("empty") is True:
        return [f"{channel}: (empty)"], True
    if "append" in body and isinstance(body["append"], dict):
        items = as_list(body["append"].get("items"))
        return _items(f"{channel}: +{_count(len(items), 'item')}", items, held), False
    node = body.get("value")
    lines = _node_lines(channel, node, held)
    return lines, is_null_payload(node)


def _node_lines(channel: str, node: Any, held: Held | None = None) -> list[str]:
    """``channel: value`` for an encoded node (a list of messages: one line per message)."""
    if not isinstance(node, dict):
        return [f"{channel}: {compact(node)}"]
    if "large" in node:
        return [f"{channel}: -> large {plain(node['large'])[:12]}"]
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
        return [f"{channel}: {compact(tree)}"]
    if is_null_payload(node):
        return [f"{channel}: null"]
    payload = node.get("base64")
    size = len(payload) * 3 // 4 if isinstance(payload, str) else 0
    return [f"{channel}: <{plain(node.get('serde'))} payload, about {size} bytes; {digest(node)}>"]


def _items(head: str, items: list[Any], held: Held | None = None) -> list[str]:
    """A list of items after ``head``: one item on the same line, more one per line below."""
    shown = [_item(t, held) for t in items]
    if len(shown) == 1:
        first, *rest = shown[0]
        return [f"{head}: {first}", *rest]
    return [head] + [INDENT + line for lines in shown for line in lines]


def _item(tree: Any, held: Held | None = None) -> list[str]:
    """One item: a message as ``role: text``; a reference to a message this file holds (format
    4), the first time, as that message (a message input as the input it stands for)."""
    found = held.take(tree) if held is not None else None
    if found is not None and is_message_type(found):
        ident = tree.get(ID) if ID in tree else None
        lines = message(found, ident)
        extra = {k: v for k, v in tree.items() if k not in (REF, ID, ROLE, PAIR)}
        if ROLE in tree or PAIR in tree:
            lines[0] = f"({plain(tree.get(ROLE, tree.get(PAIR)))} input) " + lines[0]
        if extra:
            lines[0] += f" ({compact(extra)})"
        return lines
    if found is not None:
        return [f"object {plain(tree[REF])[:12]}: " + compact(found)]
    if is_message_type(tree):
        return message(tree)
    return [compact(tree)]


def _is_item(tree: Any) -> bool:
    """A message, or a reference (to a message, most often): listed one per line."""
    return is_message_type(tree) or (isinstance(tree, dict) and REF in tree)


def _internal(channel: str) -> bool:
    """LangGraph's own channels (``__start__``, ``branch:to:x``): listed after the state's."""
    return channel.startswith("__") or ":" in channel


def _count(n: int, noun: str) -> str:
    """``1 item``, ``2 items``."""
    return f"{n} {noun}{'' if n == 1 else 's'}"
