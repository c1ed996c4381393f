"""What each event of a conversation says (readmodel/turns.py), once for every output:
``review`` (terminal, Markdown, JSON) and ``render``'s section on heads to settle.

The one model every output draws: a line's events cut into the thread's turns
(``numbered_turns``), each event as (label, text) (``event_parts``) at its depth (a subgraph
call's events one level under the call, an interrupt's question and answer one level under
the tool call that raised it); the verdict and what needs a person (``verdict_line``,
``attention``); what runs next, a subgraph's tasks under the task that runs it (``next_rows``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from ..core.format.messages import ERROR_MARK
from ..core.format.tree import model_fields
from ..core.sends import packet_arg, packet_tool_calls
from ..readmodel.turns import Event, message_event

if TYPE_CHECKING:
    from ..review.model import PendingTask, Report, ThreadReport, Verdict

SHORT = 160  # characters of a message shown inline; the rest folds into <details>
#: characters of one text shown whole (a ``<details>`` block of the Markdown, a block of the
#: HTML page, an event's text in ``--json``): the one size rule of every output. Past it, the
#: text is cut and says how much was left out and which command prints it whole (``bounded``)
WHOLE = 20_000
LABEL = {"human": "user", "ai": "ai", "tool": "tool", "system": "system", "refused": "refused message"}


def compact(value: Any) -> str:
    if isinstance(value, str):
        return value
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def fold(text: str) -> tuple[str, str]:
    """(the text on one line, cut after ``SHORT`` characters; the whole text when it was cut,
    else ""): how a line of every output says a long text."""
    one_line = " ".join(text.split())
    if len(one_line) <= SHORT:
        return one_line, ""
    return one_line[:SHORT] + f"… (+{len(one_line) - SHORT} chars)", text


_LEFT_OUT = " left out here; "
_READ = "langgraph-repo show THREAD --checkpoint ID"


def bounded(text: str, read: str = "") -> str:
    """``text`` as a block shows it whole: at most ``WHOLE`` characters, then a line saying
    how many were left out and where to read them (``read``, a command; by default ``show``).
    A text it already cut is left as it is."""
    if len(text) <= WHOLE or (len(text) <= WHOLE + 400 and " more characters" + _LEFT_OUT in text[WHOLE:]):
        return text
    read = read or _READ
    return text[:WHOLE] + f"\n… {len(text) - WHOLE:,} more characters{_LEFT_OUT}`{read}` prints it whole"


#: the keys of ``review --json`` whose value is a stored value (a write, a channel's old and
#: new value, a packet, an interrupt, a memory's field, a tool call's arguments, metadata):
#: each is shown within ``WHOLE`` characters, as a text is
VALUE_KEYS = frozenset(
    {"value", "old", "new", "packet", "input", "interrupts", "error", "answer", "args", "metadata"}
)


def bounded_tree(tree: Any, read: str = "") -> Any:
    """``tree`` (a JSON document) with every string ``bounded`` and every stored value (under
    a key of ``VALUE_KEYS``) cut after ``WHOLE`` characters of its items: the rest of a list
    is one string saying how many items were left out, the rest of an object one key ``…``
    saying how many keys (a message of 70,000 content blocks made an 11 MB ``--json``)."""
    if isinstance(tree, str):
        return bounded(tree, read)
    if isinstance(tree, list):
        return [bounded_tree(x, read) for x in tree]
    if isinstance(tree, dict):
        return {
            k: _budgeted(v, [WHOLE], read) if k in VALUE_KEYS else bounded_tree(v, read)
            for k, v in tree.items()
        }
    return tree


def _budgeted(tree: Any, left: list[int], read: str) -> Any:
    """``tree`` as far as ``left[0]`` characters (about: strings, keys, 8 for any other
    leaf) go; what is past it is counted in one marker per list or object."""
    if isinstance(tree, str):
        text = bounded(tree, read)
        left[0] -= len(text)
        return text
    if isinstance(tree, list):
        items: list[Any] = []
        for i, x in enumerate(tree):
            if left[0] <= 0:
                items.append(f"… {len(tree) - i:,} more items{_LEFT_OUT}`{read or _READ}` prints them whole")
                break
            items.append(_budgeted(x, left, read))
        return items
    if isinstance(tree, dict):
        out: dict[Any, Any] = {}
        for i, (k, v) in enumerate(tree.items()):
            if left[0] <= 0:
                out["…"] = f"{len(tree) - i:,} more keys{_LEFT_OUT}`{read or _READ}` prints them whole"
                break
            left[0] -= len(k) if isinstance(k, str) else 8
            out[k] = _budgeted(v, left, read)
        return out
    left[0] -= 8
    return tree


def show_command(thread_id: str, ns: str, checkpoint_id: str) -> str:
    """The command that prints the state at a checkpoint whole, for ``bounded``."""
    where = f" --ns {ns}" if ns else ""
    return f"langgraph-repo show {thread_id}{where} --checkpoint {checkpoint_id}"


def event_parts(e: Event) -> tuple[str, str, str]:
    """(label, short text, the whole text when it is longer than the short one)."""
    if e.kind in ("message", "edited", "removed"):
        label, text = _message_label(e), _message_text(e)
        if e.kind == "edited" and e.old is not None:
            text, whole = _edited_text(e, text)
            if whole is not None:
                return label, text, whole
    else:
        label, text = _other_parts(e)
    short, whole = fold(text)
    return label, short, whole


def _message_label(e: Event) -> str:
    """A message's label: its role, the tool's name, its status, edited or removed."""
    label = LABEL.get(e.role, e.role or "value")
    if e.role in ("tool", "chat", "function") and e.name:
        label = f"{label} {e.name}"
    if e.status:
        label = f"{label} {ERROR_MARK}" if e.status == "error" else f"{label} ({e.status})"
    if e.kind != "message":
        label = f"{label} ({e.kind})"
    return label


def _message_text(e: Event) -> str:
    """A message's text, with the tool calls it makes (and those it makes invalid)."""
    text = e.text if e.role != "value" else compact(e.tree)
    if e.calls:
        calls = ", ".join(f"{name}({compact(args)})" for name, args in e.calls)
        text = f"{text} → calls {calls}" if text else f"→ calls {calls}"
    if e.invalid:
        calls = ", ".join(f"{name}({compact(args)})" for name, args in e.invalid)
        text = f"{text} → invalid calls {calls}" if text else f"→ invalid calls {calls}"
    return text


def _edited_text(e: Event, text: str) -> tuple[str, str | None]:
    """An edited message's text, old ⟶ new: (the short line, the whole) when the old text cut
    first keeps both sides in sight on one line; else (the text to fold, None)."""
    _, before, whole_before = event_parts(message_event(e.old, e.checkpoint_id, e.step))
    if before == text:
        return f"{text} (other fields changed)", None
    # both sides stay in sight on the line: the old text is cut first
    before = " ".join((whole_before or before).split())
    after = " ".join(text.split())
    if len(before) + len(after) + 3 > SHORT and len(before) > SHORT // 3:
        cut = max(SHORT // 3, SHORT - len(after) - 3)
        shown = before[:cut] + "…" if len(before) > cut else before
        one = f"{shown} ⟶ {after}"
        if len(one) <= SHORT + SHORT // 3 + 4:
            return one, f"{before} ⟶ {after}"
    return f"{before} ⟶ {after}", None


def _other_parts(e: Event) -> tuple[str, str]:
    """(label, text) of an event that is not a message: an interrupt, an answer, an error, a
    call, a channel or memory change, metadata, an edit, a choice or merge of heads."""
    if e.kind == "interrupt":
        label, text = f"interrupt at {e.name}" if e.name else "interrupt", compact(e.tree)
        if e.text == "earlier":
            label += " (asked earlier)"
    elif e.kind == "resume":
        label = "answer saved, applied when the thread continues" if e.text == "saved" else "resumed with"
        text = compact(e.tree)
    elif e.kind == "error":
        label, text = f"{ERROR_MARK} in {e.name}" if e.name else ERROR_MARK, compact(e.tree)
    elif e.kind == "call":
        label, text = e.text or e.name, ""
    elif e.kind == "channel":
        who = "input" if e.node == "__start__" else e.node
        label = f"{who} set {e.name}" if who else f"{e.name} set"
        old = "(none)" if e.text == "added" else compact(e.old)
        new = "(removed)" if e.text == "removed" else compact(e.tree)
        text = f"{old} → {new}"
    elif e.kind == "memory":
        tree = e.tree if isinstance(e.tree, dict) else {}
        where = ".".join(str(n) for n in _listed(tree.get("namespace")))
        by = f" by {e.node}" if e.node else ""
        label = f"memory {where} {e.name} ({e.text}{by})"
        text = "; ".join(
            f"{f[0]}: {compact(f[1])} → {compact(f[2])}"
            for f in _listed(tree.get("fields"))
            if isinstance(f, list) and len(f) == 3
        )
    elif e.kind == "metadata":
        label, text = "metadata", compact(e.tree)
    elif e.kind == "update" and e.name:  # the metadata's word: any update_state could say so
        label = f"migration {e.name}"
        text = "update_state wrote this checkpoint (migrate-state, its metadata says)"
    elif e.kind == "update":
        label, text = "edit", "update_state wrote this checkpoint"
    elif e.kind in ("choice", "merge"):
        choice = e.tree if isinstance(e.tree, dict) else {}
        over = ", ".join(str(i) for i in _listed(choice.get("over")))
        text = f"continues {choice.get('chose')} over {over}"
        if e.kind == "merge":
            merged = ", ".join(str(i) for i in _listed(choice.get("merged")))
            text = f"continues {choice.get('chose')} with the messages of {merged}"
        label = e.kind
    else:
        label, text = e.kind, f"new line from checkpoint {e.checkpoint_id}"
    return label, text


def _listed(value: Any) -> list[Any]:
    """A stored field read as a list: a list as it is, nothing as none, any other value as
    the one item it is (shown, never raised on)."""
    if isinstance(value, list):
        return value
    return [] if value is None else [value]


def turns_of(events: list[Event]) -> list[list[Event]]:
    """The events cut into turns: a new turn starts at each user message of the thread (not
    one a subgraph call was handed)."""
    turns: list[list[Event]] = [[]]
    for e in events:
        if e.kind == "message" and e.role == "human" and e.depth == 0 and turns[-1]:
            turns.append([])
        turns[-1].append(e)
    return [t for t in turns if t]


@dataclass
class Turn:
    """A turn of the thread: its number (its user message's place in the conversation),
    whether it began before the range (``continued``: no user message in it), its events."""

    number: int
    continued: bool
    events: list[Event]

    @property
    def title(self) -> str:
        if self.number == 0:
            return "(no user message)"
        return f"turn {self.number}" + (" (continued)" if self.continued else "")


def numbered_turns(events: list[Event], before: int = 0) -> list[Turn]:
    """``turns_of`` numbered as the thread's turns: ``before`` user messages came earlier."""
    out = []
    number = before
    for chunk in turns_of(events):
        first = chunk[0]
        starts = first.kind == "message" and first.role == "human" and first.depth == 0
        number += 1 if starts else 0
        out.append(Turn(number=number, continued=not starts, events=chunk))
    return out


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def answer_text(value: Any) -> str:
    """A resume value for the verdict: an object of plain fields as ``approved=true``."""
    if isinstance(value, dict) and value and all(not isinstance(v, (dict, list)) for v in value.values()):
        text = ", ".join(f"{k}={compact(v) if not isinstance(v, str) else v}" for k, v in value.items())
    else:
        text = compact(value)
    return text if len(text) <= 60 else text[:60] + "…"


def question_text(value: Any) -> str:
    """What an interrupt asks, for one line: a text as it is; an object's question (or
    message, prompt, text ...) when it has one; anything else as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in ("question", "message", "prompt", "text", "description", "action", "title"):
            if isinstance(value.get(key), str):
                return str(value[key])
    return compact(value)


def verdict_line(v: Verdict, code: Callable[[str], str] = str) -> str:
    """``3 turns · 1 approval (resumed with approved=true) · 1 tool error · ...``: what the
    range holds, counted, on one line; ``code`` marks what comes from the files (Markdown
    makes it inert)."""
    answers = plural(len(v.answers) + len(v.saved), "approval")
    said = []
    if v.answers:
        said.append(f"resumed with {'; '.join(code(answer_text(a)) for a in v.answers)}")
    if v.saved:
        saved = "; ".join(code(answer_text(a)) for a in v.saved)
        said.append(f"saved, applied when the thread continues: {saved}")
    if said:
        answers += f" ({'; '.join(said)})"
    parts = [plural(v.turns, "turn"), answers, plural(v.tool_errors, "tool error")]
    if v.failures:
        parts.append(plural(v.failures, "failed task"))
    if v.edits:  # update_state wrote them; some may say migrate-state did (any caller can)
        verb = "says" if v.migrations == 1 else "say"
        says = f" ({v.migrations} {verb} migrate-state)" if v.migrations else ""
        parts.append(plural(v.edits, "hand edit") + says)
    parts += [plural(v.memories, "memory change"), plural(v.forks, "fork"), plural(v.rewrites, "rewrite")]
    if v.threads_removed:
        parts.append(f"{plural(v.threads_removed, 'thread')} deleted")
    if v.removed:
        parts.append(f"{plural(v.removed, 'checkpoint')} removed")
    if v.waiting:
        parts.append(f"{len(v.waiting)} waiting")
    return " · ".join(parts)


def attention(report: Report) -> list[tuple[str, str, str]]:
    """What needs a person beside the flags, for right under them: (label, what, where) of
    each question a thread waits on (``waiting``, its question, the tool or node and call
    that asks) and each namespace with heads nobody chose (``heads to settle``)."""
    threads = len(report.threads) > 1
    out = []
    for thread, where, asked in report.verdict.waiting:
        said = fold(question_text(asked))[0]  # on one line, as a message (what runs next has it whole)
        out.append(("waiting", said, f"thread {thread}, {where}" if threads else where))
    for thread, where in report.verdict.unsettled:
        out.append(("heads to settle", f"thread {thread}", where))
    return out


#: what a pending task's status means when the thread continues
TASK_STATUS = {
    "done": "finished: its writes are applied as stored, it does not run again",
    "failed": "✗ error: failed, runs again",
    "interrupted": "waits for an answer",
    "not started": "runs",
    "may have run": "runs (its step had started: side effects possible)",
    "unmatched": "matches no task of the next step: LangGraph does not apply these writes",
}


def task_lines(task: PendingTask) -> list[tuple[str, str, str]]:
    """(label, text, whole text when the line cuts it) lines of one pending task (review's
    "next"): what it runs, what its pending writes hold (a message written with the id of one
    the state holds as ``(replaces <id>)``, old ⟶ new: ``add_messages`` replaces it in place),
    what it asks and was answered, and a mismatch first when there is one. Each text is cut
    and folded as a message is (``fold``)."""
    status = TASK_STATUS.get(task.status, task.status)
    if task.answered and task.status == "interrupted":
        status = "answered: runs again with the answer"
    out: list[tuple[str, str]] = []
    if task.mismatch:
        out.append(("✗ flagged", task.mismatch))
    head = f"{task.name} ({task.kind})"
    if task.packet is not None:
        calls = packet_tool_calls(task.packet)
        if calls:
            said = ", ".join(
                f"{c.get('name')}({compact(c.get('args'))}) [id {compact(c.get('id'))}]" for c in calls
            )
            out.append((head, f"{status}; calls {said}"))
        else:
            out.append((head, f"{status}; Send argument {compact(packet_arg(task.packet))}"))
    elif task.input is not None:
        out.append((head, f"{status}; applies the input {compact(task.input)}"))
    else:
        out.append((head, status))
    folded = [(label, *fold(text)) for label, text in out]
    for channel, tree in task.writes:
        if channel == "__interrupt__" and task.interrupts:
            continue  # what it asks, below
        items = tree if isinstance(tree, list) else [tree]
        for item in items:
            e = message_event(item, "", None)
            fields = model_fields(item)
            given = fields.get("id") if fields is not None else None
            mid = given if isinstance(given, str) else ""
            replaced = bool(mid) and e.role not in ("remove", "value") and mid in task.replaces
            if replaced:
                e.kind, e.old = "edited", task.replaces[mid]
            label, text, whole = event_parts(e)
            if replaced:
                label = label.replace(" (edited)", f" (replaces {mid})")
            said = f"{label}: " if label != "value" else ""
            folded.append((f"  writes {channel}", said + text, said + whole if whole else ""))
    tail = []
    if task.error is not None:
        tail.append(("  failed with", compact(task.error)))
    for asked in task.interrupts:
        tail.append(("  asks", compact(asked)))
    if task.answer is not None:
        tail.append(("  answered with", compact(task.answer)))
    return folded + [(label, *fold(text)) for label, text in tail]


def next_rows(t: ThreadReport) -> list[tuple[int, str, str, str, str]]:
    """What runs when the thread continues, as (depth, kind, label, text, whole) rows (whole:
    the text a ``task`` row cuts, to fold below, else ""): per namespace
    with a next step, from the top, a ``next`` row (label: the subgraph call, "" for the
    thread; text: the checkpoint it continues from), then a ``task`` row per line of each
    task (``task_lines``); a task that runs a subgraph call has the call's own next step under
    it (``agent (turn 3)``), and what the call asks is said there, not again by the task."""
    by_ns = {n.ns: n for n in t.namespaces if n.next is not None}
    done: set[str] = set()
    out: list[tuple[int, str, str, str, str]] = []

    def called(ns: str, task: PendingTask) -> str | None:
        sub = f"{ns}|{task.name}:{task.task_id}" if ns else f"{task.name}:{task.task_id}"
        return sub if task.task_id and sub in by_ns else None

    def asks(ns: str) -> set[str]:
        nxt = by_ns[ns].next
        return {fold(compact(i))[0] for x in nxt.tasks for i in x.interrupts} if nxt is not None else set()

    def answers(ns: str) -> bool:
        nxt = by_ns[ns].next
        return nxt is not None and any(x.answer is not None for x in nxt.tasks if x.interrupts)

    def walk(ns: str, depth: int) -> None:
        n = by_ns[ns]
        done.add(ns)
        if n.next is None:
            return
        out.append((depth, "next", n.label or ns, n.next.checkpoint_id, ""))
        for task in n.next.tasks:
            sub = called(ns, task)
            below = asks(sub) if sub is not None else set()
            for label, text, whole in task_lines(task):
                if label.strip() == "asks" and text in below:
                    continue  # the call asks it, below
                if label.strip() == "answered with" and sub is not None and answers(sub):
                    continue  # the call's question gets the call's answer, below
                out.append((depth + (2 if label.startswith("  ") else 1), "task", label.strip(), text, whole))
            if sub is not None and sub not in done:
                walk(sub, depth + 2)

    for ns in sorted(by_ns, key=lambda n: (n.count("|") + (1 if n else 0), n)):
        if ns not in done:
            walk(ns, 0)
    return out
