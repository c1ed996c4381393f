"""``edit``: change a thread's state by hand, as a new checkpoint (docs/format.md, "Editing").

The state is written out in a readable form (messages as ``{id, role, content, ...}``, every
other channel as its stored JSON), opened in ``$VISUAL``/``$EDITOR`` (or read from
``--file``), and what changed is written through the saver as LangGraph's ``update_state``
writes: a new checkpoint whose parent is the edited one (``source: "update"``), each changed
channel at a new version, a message replaced in place by its id. Nothing already written is
changed, so the fix is itself reviewable and history keeps the state before it. It writes, so
it imports LangGraph; it constructs LangGraph's safe types and what ``--allow`` names.

The edit continues the thread only from the checkpoint that continues it (its head): a form
made from an older checkpoint (``--file``, ``--checkpoint``, or a head that moved while the
editor was open) would drop every turn since, so it is refused naming both ids, unless
``--fork`` says to write it as a fork of the older checkpoint (docs/forks.md).

A thread that waits (an interrupt for an answer, scheduled tool calls, a finished task's saved
writes, in the edited namespace or a subgraph call below it) is refused too, naming what
waits and what the edit would do to it, unless ``--force``: the new checkpoint does not carry
the pending writes, as ``update_state`` does (the interrupted task asks again), and the
scheduled calls run as the edit leaves them (edits.py). The form lists what waits
(``waiting``, never read back).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, NamedTuple

import typer

from ..core.errors import BadInputError, ThreadWaitsError
from ..core.format.messages import ERROR_MARK, MESSAGES, Message, read_message
from ..core.sends import TASKS, packet_tool_calls
from ..readmodel.reader import Reader, StateView
from ..readmodel.tasks import NULL_TASK_ID, RESUME, is_internal
from .app import CheckpointOpt, NsOpt, Settings, ThreadArg, open_reader, settings_of
from .output import Text

NOTE = (
    "Edit the values below and save. A message keeps its id (change its content or tool calls, "
    "or delete it from the list); a message without an id is added. Other channels are their "
    "stored JSON. Nothing is written if nothing changes."
)
WAITING_NOTE = (
    ' The thread waits ("waiting", not read back): saving an edit needs --force, and then each '
    'item goes as it says (docs/cli.md, "edit").'
)
#: a tool result's ``status`` as the form shows it: the marker every view uses (core/format/messages.py)
STATUS_SHOWN = {"error": ERROR_MARK}
STATUS_READ = {"success": "success", "error": "error", ERROR_MARK: "error"}


class Waiting(NamedTuple):
    """One thing the thread waits on, and what an edit of namespace ``ns`` does to it."""

    ns: str
    what: str
    fate: str
    touched: bool  # the edit drops or changes it

    def text(self) -> str:
        where = f"namespace {self.ns}" if self.ns else "root namespace"
        return f"{self.what} ({where}) → {self.fate}"


def edit(
    ctx: typer.Context,
    thread: ThreadArg,
    checkpoint: CheckpointOpt = None,
    ns: NsOpt = "",
    file: Annotated[
        Path | None,
        typer.Option("--file", metavar="FILE", help="The edited form, instead of opening an editor."),
    ] = None,
    show: Annotated[bool, typer.Option("--show", help="Print the editable form and exit.")] = False,
    fork: Annotated[
        bool,
        typer.Option(
            "--fork",
            help="Write the edit as a fork of the form's checkpoint when it is not the one the "
            "thread continues from (else refused: the turns since would be dropped).",
        ),
    ] = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Write the edit although the thread waits (an interrupt, scheduled tool calls, "
            "saved writes): the interrupted task asks again, the calls run as edited, as "
            "update_state does (else refused, naming them).",
        ),
    ] = False,
) -> None:
    """Edit the state as a new checkpoint, as update_state does: readable values in $EDITOR
    (or --file), the changes written with new versions; validate passes and the graph goes on
    from it."""
    settings = settings_of(ctx)
    _edit(settings, open_reader(ctx), thread, EditOptions(checkpoint, ns, file, show, fork, force))


@dataclass(frozen=True)
class EditOptions:
    """What ``edit`` was asked: which checkpoint and namespace, the form's file, and what it
    may override (``--fork``, ``--force``)."""

    checkpoint: str | None
    ns: str
    file: Path | None
    show: bool
    fork: bool
    force: bool


def _edit(settings: Settings, reader: Reader, thread: str, opts: EditOptions) -> None:
    """``edit`` once its options are read: the form before and after, and what changed written."""
    ns = reader.resolve_ns(thread, opts.ns) if opts.ns else reader.namespaces(thread)[0]
    forms = _forms(settings, reader, thread, ns, opts)
    if forms is None:
        return  # --show printed it
    cid, before, after = forms
    changed = changes(before, after)
    if not changed:
        settings.err.print(Text("nothing changed: nothing written", style="dim"))
        return
    new_id = write(settings, thread, ns, cid, changed, before, force=opts.force)
    settings.out.print(new_id)
    settings.err.print(Text(f"edited {', '.join(sorted(changed))}: {new_id} continues {cid}", style="green"))


def _forms(
    settings: Settings, reader: Reader, thread: str, ns: str, opts: EditOptions
) -> tuple[str, dict[str, Any], dict[str, Any]] | None:
    """The edited checkpoint, its form and the form edited (from ``--file`` or the editor),
    each refused when the checkpoint is not the head or the thread waits (unless ``--fork``,
    ``--force``); None when ``--show`` printed the form instead."""

    def check(cid: str, what: str, kept: bool = False) -> None:
        _check_head(reader, thread, ns, cid, opts.fork, what)
        if not opts.force:
            _check_waiting(thread, waiting(reader, thread, ns), what if kept else "")

    if opts.file is not None and not opts.show:
        after = _read_form(opts.file)
        cid = _form_checkpoint(reader, thread, ns, opts.checkpoint, after, opts.file)
        _check_head(reader, thread, ns, cid, opts.fork, f"the form {opts.file}")
        before = editable(reader, thread, ns, cid)
        if changes(before, after):
            check(cid, f"the form {opts.file}")
        return cid, before, after
    cid = reader.resolve(thread, ns, opts.checkpoint)
    before = editable(reader, thread, ns, cid)
    if opts.show:
        settings.out.file.write(json.dumps(before, indent=2, ensure_ascii=False) + "\n")
        return None
    check(cid, f"checkpoint {cid}")
    return cid, before, _in_editor(before, lambda form: check(cid, form, kept=True))


def editable(reader: Reader, thread: str, ns: str, cid: str) -> dict[str, Any]:
    """The state of a checkpoint in the form a person edits."""
    trees = reader.state(thread, ns, cid, revive=False).trees
    values: dict[str, Any] = {}
    for channel in sorted(trees):
        if is_internal(channel):
            continue
        tree = trees[channel]
        if channel == MESSAGES and isinstance(tree, list):
            values[channel] = [message_form(m) for m in tree]
        else:
            values[channel] = tree
    form: dict[str, Any] = {"thread": thread, "checkpoint_ns": ns, "checkpoint": cid, "note": NOTE}
    waits = waiting(reader, thread, ns)
    if waits:
        form["note"] += WAITING_NOTE
        form["waiting"] = [w.text() for w in waits]
    form["values"] = values
    return form


def waiting(reader: Reader, thread: str, ns: str) -> list[Waiting]:
    """What the thread waits on, in every namespace still in play (``live_states``), and what
    an edit of ``ns`` does to each: in ``ns`` an interrupt is dropped (its task asks again), a
    scheduled call runs as the edit leaves it, a finished task's writes are dropped (it runs
    again); below ``ns`` (a subgraph call of one of its tasks) all of it goes with the call,
    which starts over (the task's id comes from the new checkpoint's); elsewhere nothing is
    touched. An interrupt raised in a subgraph is listed once, where it was asked."""
    live = reader.live_states(thread, reader.namespaces(thread))
    asked: set[str] = set()
    out: list[Waiting] = []
    for space in sorted(live, key=lambda n: (-_depth(n), n)):  # deepest first: where it was asked
        here, below = space == ns, space != ns and (ns == "" or space.startswith(ns + "|"))
        gone = "dropped with the subgraph call, which starts over"
        for what, fate, elsewhere in _waits(live[space], asked):
            out.append(Waiting(space, what, fate if here else gone if below else elsewhere, here or below))
    return sorted(out, key=lambda w: _depth(w.ns))


def _waits(view: StateView, asked: set[str]) -> Iterator[tuple[str, str, str]]:
    """(what, its fate in the edited namespace, its fate elsewhere) for each thing a namespace
    waits on; ``asked``: the interrupts listed already (a subgraph's, its parent task's too)."""
    from . import present  # here: an edit of a thread that waits on nothing starts without it

    sends = view.trees.get(TASKS)
    for w in view.writes:  # Command(resume=..., update=..., goto=...) saved, not applied yet
        if w.task_id == NULL_TASK_ID:
            said = present.inline(w.value, 200)
            what = f"{w.channel} saved: {said}"
            what = f"answer saved for the thread: {said}" if w.channel == RESUME else what
            yield what, "dropped: not applied", "kept"
    for t in view.tasks:
        for i in t.interrupts if t.status == "interrupted" else []:
            if i.id is None or i.id not in asked:
                asked.add(i.id or "")
                again = f"dropped: {t.name} runs again from its first line and asks again"
                yield f"interrupt at {t.name}: {present.inline(i.value, 200)}", again, "stays"
        for w in t.writes if t.status == "interrupted" else []:
            if w.channel == RESUME:
                said = present.inline(w.value, 200)
                yield f"answer saved for {t.name}: {said}", "dropped: the question is asked again", "kept"
        if t.kind.startswith("push ") and t.runs_on_resume and isinstance(sends, list):
            idx = int(t.kind.split()[1])
            for c in packet_tool_calls(sends[idx]) if idx < len(sends) else []:
                call = f"{c.get('name')}({present.inline(c.get('args'), 120)}) [id {c.get('id')}]"
                runs = "runs as the edited AI message makes it"
                yield f"scheduled tool call {call}", runs, "stays scheduled"
        if t.status == "done" and t.writes:
            said = ", ".join(dict.fromkeys(w.channel for w in t.writes))
            what = f"saved writes of {t.name} [{(t.id or '?')[:8]}]: {said}"
            yield what, f"dropped: {t.name} runs again", "kept"


def _depth(ns: str) -> int:
    return ns.count("|") + 1 if ns else 0


def _check_waiting(thread: str, waits: list[Waiting], kept: str = "") -> None:
    """Refuse, naming each, an edit that would drop or change what the thread waits on;
    ``kept``: where the edited form is kept, when the thread began to wait while it was open."""
    touched = [w for w in waits if w.touched]
    if touched:
        raise ThreadWaitsError(
            f"edit refused: thread {thread!r} waits, and an edit writes a new checkpoint without "
            f"what waits, as update_state does: {'; '.join(w.text() for w in touched)}. Answer or "
            'resume first, or pass --force to write the edit anyway (docs/cli.md, "edit")'
            + (f"; {kept} can be given with --file" if kept else "")
        )


def message_form(tree: Any) -> Any:
    """A stored message as ``{id, role, content, ...}``, as LangChain builds it
    (core/format/messages.py); a value that is none, or a message the rule refuses: as stored."""
    got = read_message(tree)
    if not isinstance(got, Message):
        return tree
    out: dict[str, Any] = {"id": got.id, "role": got.kind.type, "content": got.content}
    if got.calls:
        out["tool_calls"] = [{"name": c.name, "args": c.args, "id": c.id} for c in got.calls]
    for key, value in (("name", got.name), ("tool_call_id", got.tool_call_id)):
        if value is not None:
            out[key] = value
    if got.status in STATUS_SHOWN:
        out["status"] = STATUS_SHOWN[got.status]
    return out


def _form_checkpoint(
    reader: Reader, thread: str, ns: str, given: str | None, form: dict[str, Any], path: Path
) -> str:
    """The checkpoint a form was made from (its ``checkpoint``, as ``--show`` writes it): the
    one its values are compared with. A form of another thread or namespace, or one naming no
    checkpoint, or another than ``--checkpoint``, is refused."""
    for key, want in (("thread", thread), ("checkpoint_ns", ns)):
        if key in form and form[key] != want:
            raise BadInputError(f"{path}: the form is of {key} {form[key]!r}, not {want!r}")
    named = form.get("checkpoint")
    if not isinstance(named, str) or not named:
        raise BadInputError(
            f"{path}: the form names no checkpoint it was made from: make it with `edit {thread} --show`"
        )
    cid = reader.resolve(thread, ns, named)
    if given is not None and reader.resolve(thread, ns, given) != cid:
        raise BadInputError(f"{path}: the form was made from checkpoint {cid}, not from --checkpoint {given}")
    return cid


def _check_head(reader: Reader, thread: str, ns: str, cid: str, fork: bool, what: str) -> None:
    """Refuse, naming both ids, to continue the thread from ``cid`` when another checkpoint
    continues it (the turns since would be dropped from the new head), unless ``--fork``."""
    head = reader.resolve(thread, ns, None)
    if head == cid or fork:
        return
    raise BadInputError(
        f"{what} was made from checkpoint {cid}, but thread {thread!r} continues from {head}: "
        f"editing it would drop what came since. Make a fresh form (`edit {thread}`), or pass "
        "--fork to write the edit as a fork of the older checkpoint"
    )


def _read_form(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BadInputError(f"{path}: cannot read the edited form: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("values"), dict):
        raise BadInputError(f'{path}: expected the form edit prints (an object with "values")')
    return data


def _in_editor(before: dict[str, Any], still_head: Callable[[str], None]) -> dict[str, Any]:
    """The form after the person's editor saved it ($VISUAL, $EDITOR, else vi). ``still_head``
    is asked again once the editor is closed (the graph may have gone on meanwhile): when it
    refuses, the edited form is kept in a file the error names, so nothing typed is lost."""
    command = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    with tempfile.TemporaryDirectory(prefix="langgraph-edit-") as tmp:
        path = Path(tmp) / "state.json"
        path.write_text(json.dumps(before, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        done = subprocess.run([*shlex.split(command), str(path)], check=False)
        if done.returncode != 0:
            raise BadInputError(f"the editor ({command}) exited with {done.returncode}: nothing written")
        after = _read_form(path)
        fd, kept = tempfile.mkstemp(prefix="langgraph-edit-", suffix=".json")
        with os.fdopen(fd, "wb") as fh:
            fh.write(path.read_bytes())
    still_head(f"the edited form (kept in {kept})")  # refused: the file stays for --file
    os.unlink(kept)
    return after


def changes(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """Channel -> the edited form of each channel whose form changed."""
    old, new = before["values"], after["values"]
    unknown = sorted(set(new) - set(old))
    if unknown:
        raise BadInputError(f"no channel {unknown[0]!r} in this state: edit only the channels shown")
    return {c: new[c] for c in old if c in new and new[c] != old[c]}


def write(
    settings: Any,
    thread: str,
    ns: str,
    cid: str,
    changed: dict[str, Any],
    before: dict[str, Any],
    *,
    force: bool = False,
) -> str:
    """The changed channels as values, written as a new checkpoint through the saver."""

    saver = settings.saver()
    config: Any = {"configurable": {"thread_id": thread, "checkpoint_ns": ns, "checkpoint_id": cid}}
    parent = saver.get_tuple(config)
    assert parent is not None
    values: dict[str, Any] = {}
    for channel, form in changed.items():
        if channel == MESSAGES and isinstance(form, list):
            old = parent.checkpoint["channel_values"].get(MESSAGES) or []
            values[channel] = _messages(old, before["values"][MESSAGES], form)
        else:
            values[channel] = saver.codec.revive_tree(form, f"the edited value of channel {channel!r}")
    new = saver.edit_state(config, values, force=force)
    return str(new["configurable"]["checkpoint_id"])


def _messages(old: list[Any], shown: list[Any], forms: list[Any]) -> list[Any]:
    """The edited message list: a form as it was shown keeps its message as it is; one with a
    known id whose form changed edits that message (its other fields as they were); one with
    no known id is a new message of its role."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    classes = {"human": HumanMessage, "ai": AIMessage, "system": SystemMessage, "tool": ToolMessage}
    by_id = {getattr(m, "id", None): m for m in old if getattr(m, "id", None)}
    as_shown = {f.get("id"): f for f in shown if isinstance(f, dict) and f.get("id")}
    out: list[Any] = []
    for i, form in enumerate(forms):
        if not isinstance(form, dict) or "content" not in form:
            raise BadInputError(f"messages[{i}]: expected {{id, role, content, ...}}")
        known = by_id.get(form.get("id"))
        if known is not None and as_shown.get(form.get("id")) == form:
            out.append(known)  # not edited: the very message, as stored
            continue
        update = {k: form[k] for k in ("content", "tool_calls", "name", "tool_call_id") if k in form}
        if "tool_calls" in update:
            update["tool_calls"] = _tool_calls(update["tool_calls"], i)
        if "status" in form:
            if form["status"] not in STATUS_READ:
                raise BadInputError(f"messages[{i}]: status must be success or error ({ERROR_MARK})")
            update["status"] = STATUS_READ[form["status"]]
        if known is not None:
            if form.get("role") not in (None, known.type):
                raise BadInputError(
                    f"messages[{i}]: a message keeps its role ({known.type}); add a new one instead"
                )
            out.append(known.model_copy(update=update))
            continue
        role = form.get("role")
        if role not in classes:
            raise BadInputError(f"messages[{i}]: role must be one of {', '.join(sorted(classes))}")
        fields = {"content": form["content"], **({"id": form["id"]} if form.get("id") else {})}
        if role == "tool":
            fields["tool_call_id"] = form.get("tool_call_id") or ""
            fields["status"] = update.get("status", "success")
        if role == "ai" and form.get("tool_calls"):
            fields["tool_calls"] = update["tool_calls"]
        out.append(classes[role](**fields))
    return out


def _tool_calls(forms: Any, i: int) -> list[dict[str, Any]]:
    """The edited tool calls of messages[i] as LangChain stores them (``type: "tool_call"``,
    which ``ToolNode`` needs to take a call for one), each with a name and its arguments."""
    if not isinstance(forms, list):
        raise BadInputError(f"messages[{i}].tool_calls: expected a list of {{name, args, id}}")
    out = []
    for j, c in enumerate(forms):
        if (
            not isinstance(c, dict)
            or not isinstance(c.get("name"), str)
            or not isinstance(c.get("args"), dict)
        ):
            raise BadInputError(f"messages[{i}].tool_calls[{j}]: expected {{name, args, id}}")
        if c.get("id") is not None and not isinstance(c["id"], str):
            raise BadInputError(f"messages[{i}].tool_calls[{j}].id: expected a string")
        out.append({"name": c["name"], "args": c["args"], "id": c.get("id"), "type": "tool_call"})
    return out
