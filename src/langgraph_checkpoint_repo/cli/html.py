"""The HTML view ``review --html FILE`` and ``render --html FILE`` write: one self-contained
page (inline CSS, no script, nothing fetched) with what needs attention first, the fork tree
drawn, the conversation turn by turn with tool calls folded, and the changes of each turn.

It draws the same model the terminal and the Markdown draw (review's ``Report``, the events
and turns of cli/events.py and readmodel/turns.py, ``Reader.history`` and ``fork_graph``), so
a change to the model shows in every view.

The rule, as ``md_code`` is for the Markdown: a string from the files (an id, a name, a message,
a value, a path, a problem) reaches the page only through ``_h`` (one line) or ``_pre`` (a
block): screened (secrets masked, control characters escaped) and HTML-escaped, quotes
included, and only ever as text. No tag, attribute or URL is made from data: the only
attributes are the program's own (``class``, ``id`` and ``href="#..."`` from counters, and
those of the head), so nothing in the files can add a tag, a link, an image, a script or a
style, and the page's Content-Security-Policy forbids loading anything even if it could.
tests/test_html_view.py parses pages of hostile runs and checks that only ``OWN_TAGS`` occur.
"""

from __future__ import annotations

import bisect
import html as _html
import itertools
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import BadInputError, RepoCheckpointError
from ..core.format.messages import message_fields
from ..core.items import ItemFiles
from ..readmodel.calls import count_users
from ..readmodel.diff import ChannelChange, diff_trees
from ..readmodel.reader import HistoryRow, Reader, StateView, ThreadSummary, fork_graph
from ..readmodel.tasks import is_internal
from ..readmodel.turns import Event, events_along, line_to, open_branches, state_channels
from .events import (
    SHORT,
    bounded,
    compact,
    event_parts,
    numbered_turns,
    show_command,
    task_lines,
    turns_of,
    verdict_line,
)
from .output import screen

if TYPE_CHECKING:
    from ..review.model import ItemReport, Line, NamespaceReport, Report, ThreadReport

#: every tag the view writes (tests/test_html_view.py: a page holds no other)
OWN_TAGS = frozenset(
    "html head meta title style body header main section footer h1 h2 h3 h4 p ul ol li "
    "details summary code pre table thead tbody tr th td span a strong em div".split()
)

#: characters of a label in the fork tree (the whole text is in the conversation)
TREE_LABEL = 80
#: checkpoints the fork tree draws, newest first (more: a line says how many are left out)
MAX_TREE_ROWS = 1000

#: no request of any kind (no script, image, font, frame, form target); inline styles only
CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"

CSS = """
:root{--fg:#1f2328;--dim:#59636e;--bg:#fff;--box:#f6f8fa;--line:#d1d9e0;--bad:#cf222e;
--badbg:#ffebe9;--warn:#9a6700;--warnbg:#fff8c5;--ok:#1a7f37;--user:#0969da;--ai:#8250df}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--dim:#9198a1;--bg:#0d1117;--box:#151b23;
--line:#3d444d;--bad:#ff7b72;--badbg:#3c1618;--warn:#d29922;--warnbg:#2e2410;--ok:#3fb950;
--user:#4493f8;--ai:#ab7df8}}
*{box-sizing:border-box}
body{margin:0 auto;max-width:72rem;padding:1rem 1.5rem 3rem;color:var(--fg);background:var(--bg);
font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
h1{font-size:1.4rem;margin:.2rem 0}h2{font-size:1.2rem;margin:1.6rem 0 .4rem;
border-bottom:1px solid var(--line);padding-bottom:.2rem}h3{font-size:1rem;margin:1rem 0 .3rem}
h4{font-size:.95rem;margin:.6rem 0 .2rem;color:var(--dim)}
code,pre,.lanes{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.86rem}
code{background:var(--box);padding:0 .25rem;border-radius:4px;overflow-wrap:anywhere}
pre{background:var(--box);padding:.5rem .7rem;border-radius:6px;overflow:auto;max-height:32rem;
white-space:pre-wrap;overflow-wrap:anywhere;margin:.3rem 0}
.dim,.meta{color:var(--dim)}
.attention{border:2px solid var(--bad);background:var(--badbg);border-radius:8px;padding:.4rem 1rem;
margin:1rem 0}
.attention h2{border:0;margin:.3rem 0;color:var(--bad)}
.attention.clear{border-color:var(--line);background:var(--box)}
.attention.clear h2{color:var(--ok)}
.attention li{margin:.2rem 0}
.tag{display:inline-block;font-size:.78rem;font-weight:600;padding:0 .4rem;border-radius:1rem;
border:1px solid currentColor;margin-right:.3rem;white-space:nowrap}
.bad{color:var(--bad)}.warn{color:var(--warn)}.ok{color:var(--ok)}
ol.turns{list-style:none;padding:0;margin:.3rem 0}
li.turn{border:1px solid var(--line);border-radius:8px;margin:.7rem 0;padding:.3rem .9rem .5rem}
li.turn>h3{margin:.3rem 0}
ul.events{list-style:none;padding:0;margin:0}
ul.events>li{padding:.15rem 0 .15rem .6rem;border-left:3px solid var(--line);margin:.25rem 0}
li.human{border-left-color:var(--user)!important}li.ai{border-left-color:var(--ai)!important}
li.tool{border-left-color:var(--ok)!important}li.ask,li.answer{border-left-color:var(--warn)!important;
background:var(--warnbg)}li.failed{border-left-color:var(--bad)!important;background:var(--badbg)}
.who{font-weight:600;margin-right:.4rem}
li.nested{margin-left:1.2rem!important}
details{margin:.1rem 0}summary{cursor:pointer}
.changes{margin:.4rem 0 0;padding:.3rem .6rem;background:var(--box);border-radius:6px}
.changes ul{margin:.1rem 0;padding-left:1.2rem}
table{border-collapse:collapse;margin:.3rem 0}
td,th{padding:.1rem .5rem;text-align:left;vertical-align:top;border-bottom:1px solid var(--line)}
table.tree td{border:0;padding:0 .5rem;white-space:nowrap}
table.tree td.lanes{color:var(--ai);padding-right:.8rem;line-height:1.35}
table.tree tr.head td{font-weight:600}table.tree tr.continues td.lanes{color:var(--ok)}
table.tree tr.base td{color:var(--dim)}
.mark{font-weight:600}
a{color:var(--user)}
footer{margin-top:2rem;color:var(--dim);font-size:.85rem}
""".strip()


def _h(value: object) -> str:
    """A string from the files as one line of the page: screened (secrets masked, control
    characters and newlines escaped) and HTML-escaped, quotes included. The one way data
    reaches the page as a line; ``_pre`` is the one for a block."""
    return _html.escape(screen(str(value), keep=""), quote=True)


def _pre(text: str, read: str = "") -> str:
    """A block of text from the files (its newlines kept), in a ``<pre>``: at most ``WHOLE``
    characters of it, as every output (``bounded``: ``read`` says where the rest is)."""
    return f"<pre>{_html.escape(screen(bounded(text, read), keep=chr(10) + chr(9)), quote=True)}</pre>"


def _code(value: object) -> str:
    return f"<code>{_h(value)}</code>"


def _short(text: str) -> str:
    """A text cut as the conversation cuts it (its whole is where the item links to)."""
    one_line = " ".join(text.split())
    if len(one_line) <= SHORT:
        return one_line
    return one_line[:SHORT] + f"… (+{len(one_line) - SHORT} chars)"


def _pretty(value: Any) -> str:
    """A stored value, indented as JSON (any JSON the files hold: big integers included)."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return compact(value)


def page(title: str, body: Iterable[str]) -> str:
    """The whole document: ``title`` and ``body`` are HTML made by this module."""
    head = (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
        '<meta name="referrer" content="no-referrer">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{title}</title>\n<style>\n{CSS}\n</style>\n</head>\n<body>\n"
    )
    return head + "\n".join(body) + "\n</body>\n</html>\n"


# ----------------------------------------------------------------------------
# what needs attention: first on the page
# ----------------------------------------------------------------------------
@dataclass
class Attention:
    """What the page lists first, each item (a tag, its HTML, the anchor it links to)."""

    items: list[tuple[str, str, str]] = field(default_factory=list)

    def add(self, tag: str, body: str, anchor: str = "") -> None:
        if (tag, body, anchor) not in self.items:  # a subgraph call repeats its parent's result
            self.items.append((tag, body, anchor))

    def html(self, clear: str) -> str:
        if not self.items:
            return f'<section class="attention clear"><h2>✓ {clear}</h2></section>'
        n = len(self.items)
        parts = [
            '<section class="attention">',
            f"<h2>⚠ {n} thing{'s' if n != 1 else ''} to look at</h2>",
            "<ul>",
        ]
        for tag, body, anchor in self.items:
            link = f' <a href="#{anchor}">(see)</a>' if anchor else ""
            parts.append(f'<li><span class="tag bad">{tag}</span>{body}{link}</li>')
        parts += ["</ul>", "</section>"]
        return "\n".join(parts)


def _event_attention(e: Event, anchor: str, attention: Attention) -> None:
    """A refused message, a failed tool (its result's status) or a task's error."""
    label, text, _ = event_parts(e)
    if e.role == "refused":
        attention.add("refused message", _h(text), anchor)
    elif e.status:
        attention.add(f"✗ {_h(e.status)}", f"{_h(label)}: {_h(text)}", anchor)
    elif e.kind == "error":
        attention.add("✗ error", f"{_h(label)}: {_h(text)}", anchor)


# ----------------------------------------------------------------------------
# events and turns
# ----------------------------------------------------------------------------
#: the class of an event's row: who speaks, or what kind of thing happened
def _event_class(e: Event) -> str:
    if e.role == "refused" or e.status or e.kind == "error":
        return "failed"
    if e.kind == "interrupt":
        return "ask"
    if e.kind == "resume":
        return "answer"
    if e.kind in ("message", "edited", "removed") and e.role in ("human", "ai", "tool", "system"):
        return e.role
    return "other"


def event_html(e: Event, thread: str = "THREAD") -> str:
    """One event as a list item: its label and text; an AI message's tool calls folded
    (the summary says what is called, the fold holds each call's arguments indented), a long
    text folded after its first 160 characters."""
    label, short, whole = event_parts(e)
    read = show_command(thread, e.ns, e.checkpoint_id) if e.checkpoint_id else ""
    mark = ""
    if (e.status or e.kind == "error") and "✗" not in label:
        mark = f'<span class="tag bad">✗ {_h(e.status or "error")}</span>'
    elif e.role == "refused":
        mark = '<span class="tag bad">✗ refused</span>'
    elif e.kind == "interrupt":
        mark = '<span class="tag warn">asks</span>'
    elif e.kind == "resume":
        mark = '<span class="tag warn">answer</span>'
    head = f'{mark}<span class="who">{_h(label)}</span>'
    cls = _event_class(e)
    if e.calls or e.invalid:
        calls = [("calls", name, args) for name, args in e.calls]
        calls += [("invalid call", name, args) for name, args in e.invalid]
        body = [_pre(e.text, read)] if e.text else []
        for what, name, args in calls:
            body.append(f"<h4>{what} {_code(name)}</h4>{_pre(_pretty(args), read)}")
        return (
            f'<li class="{cls}"><details class="call"><summary>{head}{_h(short)}</summary>'
            + "".join(body)
            + "</details></li>"
        )
    if whole:
        return (
            f'<li class="{cls}"><details class="fold"><summary>{head}{_h(short)}</summary>'
            f"{_pre(whole, read)}</details></li>"
        )
    return f'<li class="{cls}">{head}{_h(short)}</li>'


def changes_html(channels: Sequence[ChannelChange], title: str = "changed") -> str:
    """Channels (other than the conversation) old → new."""
    if not channels:
        return ""
    rows = [
        f"<li>{_code(c.channel)}: {_code(_short(compact(c.old)))} → {_code(_short(compact(c.new)))}</li>"
        for c in channels
    ]
    return f'<div class="changes"><strong>{title}</strong><ul>{"".join(rows)}</ul></div>'


def turns_html(
    turns: Sequence[Sequence[Event]],
    anchor: str,
    attention: Attention,
    extra: dict[int, list[str]] | None = None,
    first: int = 1,
    titles: Sequence[str] = (),
    thread: str = "THREAD",
) -> str:
    """The turns as an ordered list, each turn an anchor ``{anchor}-{n}``; ``extra``: more
    HTML under a turn (its changes, the subgraph calls it made), by index; ``titles``: each
    turn's title (``turn 3 (continued)``, numbered as the thread's), else ``turn {n}``."""
    if not turns:
        return ""
    parts = ['<ol class="turns">']
    for i, turn in enumerate(turns):
        number = first + i
        here = f"{anchor}-{number}"
        for e in turn:
            _event_attention(e, here, attention)
        events = "".join(event_html(e, thread) for e in turn)
        more = "".join((extra or {}).get(i, []))
        parts.append(
            f'<li class="turn" id="{here}"><h3>{_h(titles[i] if i < len(titles) else f"turn {number}")}</h3>'
            f'<ul class="events">{events}</ul>{more}</li>'
        )
    parts.append("</ol>")
    return "\n".join(parts)


# ----------------------------------------------------------------------------
# the fork tree: readmodel's fork_graph, one row per checkpoint, newest first
# ----------------------------------------------------------------------------
@dataclass
class TreeRow:
    checkpoint_id: str
    step: int | None
    source: str | None
    graph: str
    mark: str = ""  # continues | head | unsettled | base
    label: str = ""  # what happened there (an event's label and text)
    anchor: str = ""  # the turn it belongs to


def tree_html(rows: Sequence[TreeRow], left_out: int = 0) -> str:
    """The rows as a table whose first column is the lanes (``●`` a checkpoint, ``│`` another
    line, ``─┘`` a line that parts there), like ``git log --graph``."""
    marks = {
        "continues": '<span class="tag ok">◀ continues</span>',
        "head": '<span class="tag">head</span>',
        "unsettled": '<span class="tag warn">head to settle</span>',
        "settled": '<span class="tag">head (settled)</span>',
        "base": '<span class="tag">base</span>',
    }
    parts = ['<table class="tree"><tbody>']
    for r in rows:
        cls = " ".join(
            c for c in ("head" if r.mark in ("continues", "head", "unsettled") else "", r.mark) if c
        )
        label = _h(r.label[:TREE_LABEL] + ("…" if len(r.label) > TREE_LABEL else ""))
        if r.anchor and label:
            label = f'<a href="#{r.anchor}">{label}</a>'
        step = "" if r.step is None else str(r.step)
        attr = f' class="{cls}"' if cls else ""
        parts.append(
            f'<tr{attr}><td class="lanes">{_h(r.graph)}</td><td class="dim">{_h(step)}</td>'
            f'<td class="dim">{_h(r.source or "")}</td><td>{_code(r.checkpoint_id)}</td>'
            f"<td>{marks.get(r.mark, '')}{label}</td></tr>"
        )
    parts.append("</tbody></table>")
    if left_out:
        parts.append(f'<p class="dim">… {left_out} older checkpoints not drawn.</p>')
    return "\n".join(parts)


def _labels(events: Iterable[Event], anchors: dict[int, str]) -> tuple[dict[str, str], dict[str, str]]:
    """Per checkpoint, the first thing that happened there and the anchor of its turn."""
    label: dict[str, str] = {}
    anchor: dict[str, str] = {}
    for e in events:
        if e.checkpoint_id in label:
            continue
        name, text, _ = event_parts(e)
        label[e.checkpoint_id] = f"{name}: {text}"
        anchor[e.checkpoint_id] = anchors.get(id(e), "")
    return label, anchor


def _footer(what: str) -> str:
    return (
        f"<footer>Made from the JSON state files by <code>langgraph-repo {what}</code>; "
        "the files are authoritative.</footer>"
    )


# ----------------------------------------------------------------------------
# review --html
# ----------------------------------------------------------------------------
def review_html(
    report: Report, flag_label: Mapping[str, str], files_line: str, line_title: Callable[..., str]
) -> str:
    """The review as one page: what needs attention, then per thread the fork tree of its new
    lines, the turns of each line, what runs next, its problems; then the memories. The
    review's own words come from cli/review.py (``flag_label``: each kind of flag's name,
    ``files_line``: the count of changed files, ``line_title``: a line's title), which imports
    this module."""

    head = report.range.head[:12] if report.range.head else "the work tree"
    title = f"State review {_h(report.range.base[:12])} .. {_h(head)}"
    attention = Attention()
    for flagged in report.flags:
        where = f"{_code(flagged.path)}: " if flagged.path else ""
        attention.add(_h(flag_label.get(flagged.kind, flagged.kind)), f"{where}{_h(flagged.message)}")
    threads = [_thread_html(t, ti, attention, line_title) for ti, t in enumerate(report.threads, 1)]
    items = _items_html(report.items, attention)
    counts = (
        f"{len(report.threads)} thread{'s' if len(report.threads) != 1 else ''} changed; {_h(files_line)}"
    )
    body = [
        "<header>",
        f"<h1>State review {_code(report.range.spec)}</h1>",
        f"<p><strong>{verdict_line(report.verdict, _code)}</strong></p>",
        f'<p class="meta">{_code(report.range.base[:12])} .. {_code(head)} · root {_code(report.root)} · '
        f"{counts}</p>",
        *([f"<p><strong>Note:</strong> {_h(report.range.note)}</p>"] if report.range.note else []),
        "</header>",
        attention.html("nothing flagged: every changed file is explained"),
        "<main>",
        *threads,
        items,
        "</main>",
        _footer("review"),
    ]
    if not report.threads and not report.items and not report.files:
        body.insert(-2, '<p class="dim">No thread changed.</p>')
    return page(title, body)


def _thread_html(t: ThreadReport, ti: int, attention: Attention, line_title: Callable[..., str]) -> str:
    anchor = f"t{ti}"
    flag = ' <span class="tag warn">heads to settle</span>' if t.unsettled else ""
    parts = [
        f'<section class="thread" id="{anchor}">',
        f"<h2>Thread {_code(t.thread_id)} ({_h(t.status)}){flag}</h2>",
    ]
    if t.unsettled:
        attention.add("heads to settle", f"thread {_code(t.thread_id)}", anchor)
    for ni, n in enumerate(t.namespaces, 1):
        where = f"{anchor}-n{ni}"
        counts = f"+{len(n.added)} checkpoints" + (f", -{len(n.removed)}" if n.removed else "")
        title = f"namespace {_code(n.ns)}" if n.ns else "root namespace"
        parts.append(f'<h3 id="{where}">{title} <span class="dim">{counts}</span></h3>')
        anchors: dict[int, str] = {}
        lines_html = []
        for li, line in enumerate(n.lines, 1):
            turns = turns_of(line.events)
            title = line_title(n, line, len(n.lines) > 1, _code)
            lines_html.append(
                _line_html(line, turns, f"{where}-l{li}", title, attention, anchors, t.thread_id)
            )
        if n.lines:
            tree = _review_tree(n, anchors)
            forked = len(n.lines) > 1 or bool(n.heads)
            parts.append(
                f'<details class="fork"{" open" if forked else ""}><summary>fork tree: '
                f"{len(n.lines)} new line{'s' if len(n.lines) != 1 else ''} of checkpoints</summary>"
                f"{tree}</details>"
            )
        parts += lines_html
        if n.next is not None:
            parts.append(_next_html(n, f"{where}-next", attention))
        if n.heads and sum(not h.settled for h in n.heads) > 1:
            ids = ", ".join(_code(h.checkpoint_id) for h in n.heads if not h.settled)
            ns_opt = f" --ns {n.ns}" if n.ns else ""
            command = _code(f"langgraph-repo heads {t.thread_id}{ns_opt} --choose ID")
            parts.append(
                f"<p><strong>Heads nobody chose:</strong> {ids}; {_code(n.current or '')} continues. "
                f"Settle with {command} (or --merge).</p>"
            )
    if t.problems:
        parts.append(f'<h3 id="{anchor}-problems">Validation problems</h3><ul>')
        for p in t.problems:
            body = f"{_code(p.path)} {_code(p.pointer)}: {_h(p.message)}"
            attention.add("invalid", body, f"{anchor}-problems")
            parts.append(f"<li>{body}</li>")
        parts.append("</ul>")
    parts.append("</section>")
    return "\n".join(parts)


def _line_html(
    line: Line,
    turns: list[list[Event]],
    anchor: str,
    title: str,
    attention: Attention,
    anchors: dict[int, str],
    thread: str = "THREAD",
) -> str:
    """One new line of checkpoints: its title (HTML), its turns, the channels it changed."""
    for i, turn in enumerate(turns, 1):
        for e in turn:
            anchors[id(e)] = f"{anchor}-{i}"
    return (
        f'<div class="line" id="{anchor}"><p><strong>{title}</strong></p>'
        + turns_html(
            turns,
            anchor,
            attention,
            titles=[t.title for t in numbered_turns(line.events, line.turns_before)],
            thread=thread,
        )
        + changes_html(line.channels, "channels changed on this line")
        + "</div>"
    )


def _review_tree(n: NamespaceReport, anchors: dict[int, str]) -> str:
    """The new lines of a namespace as a fork tree: every new checkpoint, and the base
    checkpoints the lines continue (marked ``base``); heads marked as the report says."""
    rows: dict[str, HistoryRow] = {}
    marks: dict[str, str] = {}
    events: list[Event] = []
    for line in n.lines:
        events += line.events
        rows.update(_line_rows(line))
        if line.start is not None and line.start not in rows:
            marks.setdefault(line.start, "base")
        if line.continues:
            marks[line.head] = "continues"
        elif not line.settled:
            marks[line.head] = "unsettled"
        else:
            marks[line.head] = "settled" if n.heads else "head"
    for cid in marks:
        if cid not in rows:
            rows[cid] = HistoryRow(
                checkpoint_id=cid,
                step=None,
                source=None,
                ts="",
                parent_id=None,
                parent_present=False,
                writers=[],
            )
    for row in rows.values():
        row.parent_present = row.parent_id in rows
    ordered = [rows[c] for c in sorted(rows, reverse=True)]
    label, anchor = _labels(events, anchors)
    drawn = [
        TreeRow(
            r.checkpoint_id,
            r.step,
            r.source,
            g,
            marks.get(r.checkpoint_id, ""),
            label.get(r.checkpoint_id, ""),
            anchor.get(r.checkpoint_id, ""),
        )
        for r, g in zip(ordered[:MAX_TREE_ROWS], fork_graph(ordered[:MAX_TREE_ROWS]), strict=True)
    ]
    return tree_html(drawn, max(len(ordered) - MAX_TREE_ROWS, 0))


def _line_rows(line: Line) -> dict[str, HistoryRow]:
    """The fork tree's rows of a line's new checkpoints: each one's step and source from its
    metadata, its parent (the one before it on the line when the step does not say)."""
    rows: dict[str, HistoryRow] = {}
    steps = {s.checkpoint_id: s for s in line.steps}
    parents = {s.checkpoint_id: s.parent for s in line.steps}
    previous = line.start
    for cid in line.checkpoints:
        step = steps.get(cid)
        meta = step.metadata if step is not None and isinstance(step.metadata, dict) else {}
        rows[cid] = HistoryRow(
            checkpoint_id=cid,
            step=meta.get("step") if isinstance(meta.get("step"), int) else None,
            source=meta.get("source") if isinstance(meta.get("source"), str) else None,
            ts="",
            parent_id=parents.get(cid, previous),
            parent_present=False,
            writers=[],
        )
        previous = cid
    return rows


def _next_html(n: NamespaceReport, anchor: str, attention: Attention) -> str:
    """What runs when the thread continues: each task's lines (cli/events.py's ``task_lines``);
    a question nobody answered yet and a packet that runs what was not asked are listed first."""
    assert n.next is not None
    items = []
    for task in n.next.tasks:
        if task.status == "interrupted" and not task.answered:
            asked = "; ".join(compact(a) for a in task.interrupts) or "(no value)"
            attention.add("waiting", f"{_code(task.name)} asks {_h(_short(asked))}", anchor)
        for label, text, whole in task_lines(task):
            bad = label.startswith("✗")
            if bad:
                attention.add(_h(label), f"{_code(task.name)}: {_h(text)}", anchor)
            classes = " ".join(
                c for c in ("failed" if bad else "", "nested" if label.startswith("  ") else "") if c
            )
            cls = f' class="{classes}"' if classes else ""
            said = f'<span class="who">{_h(label.strip())}</span>{_h(text)}'
            if whole:  # folded as a message is
                said = f'<details class="fold"><summary>{said}</summary>{_pre(whole)}</details>'
            items.append(f"<li{cls}>{said}</li>")
    return (
        f'<div class="next" id="{anchor}"><p><strong>Next, when the thread continues from '
        f'{_code(n.next.checkpoint_id)}:</strong></p><ul class="events">{"".join(items)}</ul></div>'
    )


def _items_html(items: Sequence[ItemReport], attention: Attention) -> str:
    """The memories (store items) the change added, removed or changed, field by field."""
    if not items:
        return ""
    parts = [
        f'<section class="store" id="store"><h2>Memories: {len(items)} store '
        f"item{'s' if len(items) != 1 else ''} changed</h2><ul>"
    ]
    for k, i in enumerate(items, 1):
        here = f"store-{k}"
        fields = "".join(
            f"<li>{_code(f.pointer)}: {_code(_short(compact(f.old)))} → {_code(_short(compact(f.new)))}</li>"
            for f in i.fields
        )
        problems = ""
        for p in i.problems:
            body = f"{_code(p.path)} {_code(p.pointer)}: {_h(p.message)}"
            attention.add("invalid", body, here)
            problems += f'<li class="failed">{body}</li>'
        parts.append(
            f'<li id="{here}">{_code(".".join(i.namespace))} {_code(i.key)} ({_h(i.status)})'
            f"<ul>{fields}{problems}</ul></li>"
        )
    parts.append("</ul></section>")
    return "\n".join(parts)


# ----------------------------------------------------------------------------
# render --html
# ----------------------------------------------------------------------------
#: other lines (forks) whose events label the fork tree; past it their rows show ids only
MAX_OTHER_LINES = 50


def render_html(
    reader: Reader,
    summary: ThreadSummary,
    view: StateView,
    rows: list[HistoryRow],
    *,
    limit: int = MAX_TREE_ROWS,
    note: Sequence[str] = (),
) -> str:
    """A thread as one page, from what ``render`` read (its summary, the state that continues,
    its history): what needs attention, its status, the conversation of the line that
    continues turn by turn (tool calls folded, the subgraph calls each turn made, the channels
    and memories it changed), what it waits for and runs next, its state, the heads to settle
    and the whole history as a fork tree (the newest ``limit`` checkpoints)."""
    thread_id, ns, head = view.thread_id, view.ns, view.checkpoint_id
    branches = open_branches(reader, thread_id, ns)
    ids = line_to(reader, thread_id, ns, head, [])
    views: list[Any] = []
    events = events_along(reader, thread_id, ns, ids, None, views)
    turns = turns_of(events)
    attention = Attention()

    for i in view.interrupts:
        attention.add("waiting", f"{_code(i.task_name)} asks {_h(_short(compact(i.tree)))}", "waiting")
    if branches:
        attention.add(
            "heads to settle", f"{len(branches)} heads continue this thread; nobody chose", "branches"
        )

    extra, calls_left = _turn_extras(reader, thread_id, ns, ids, views, turns, summary.namespaces, attention)
    anchors = {id(e): f"turn-{k}" for k, turn in enumerate(turns, 1) for e in turn}
    conversation = turns_html(turns, "turn", attention, extra, thread=thread_id)

    ns_note = f" (namespace {_code(view.ns)})" if view.ns else ""
    body = ["<header>", f"<h1>Thread {_code(thread_id)}{ns_note}</h1>", "</header>"]
    facts = _facts_html(summary, view, len(turns))
    main = ["<main>", facts, '<section id="conversation"><h2>Conversation</h2>']
    main.append(conversation or '<p class="dim">No messages.</p>')
    if not turns:
        main.append(_steps_changes(views))
    main += calls_left
    main.append("</section>")
    main += _waiting_html(view)
    main += _state_html(view)
    if note:
        main.append(f'<p class="dim">Not revived:</p>{_pre(chr(10).join(note))}')
    if branches:
        main += _branches_html(reader, thread_id, ns, branches, attention, anchors)
    main.append(_render_tree(reader, thread_id, ns, rows, head, ids, events, branches, anchors, limit))
    main.append("</main>")
    body.append(attention.html("nothing waits, failed or was refused"))
    body += main
    body.append(_footer("render"))
    return page(f"Thread {_h(thread_id)}", body)


def _facts_html(summary: ThreadSummary, view: StateView, turns: int) -> str:
    """The table of facts at the top of ``render``'s page: status, latest checkpoint, when,
    how many checkpoints, forks and turns."""
    from . import present  # here: review --html draws nothing with it

    if summary.waiting:
        status = "waiting for input at " + ", ".join(_code(i.task_name) for i in summary.waiting)
    elif summary.next:
        status = "stopped before " + ", ".join(_code(n) for n in summary.next)
    else:
        status = "finished"
    plural = "s" if len(summary.namespaces) != 1 else ""
    facts = [
        ("Status", status),
        ("Latest checkpoint", f"{_code(view.checkpoint_id)} (step {_h(view.step)}, {_h(view.source)})"),
        ("Last updated", f"{_h(present.short_time(view.ts))} UTC"),
        ("Checkpoints", f"{summary.checkpoints} in {len(summary.namespaces)} namespace{plural}"),
        ("Forks", str(summary.forks)),
        ("Turns", str(turns)),
    ]
    return (
        '<table class="facts"><tbody>'
        + "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in facts)
        + "</tbody></table>"
    )


def _turn_of(ids: Sequence[str], turns: Sequence[Sequence[Event]]) -> dict[str, int]:
    """The turn (index) each checkpoint of the line belongs to: a turn starts at the
    checkpoint of its first event."""
    starts = [t[0].checkpoint_id for t in turns]
    out: dict[str, int] = {}
    k = 0
    for cid in ids:
        while k + 1 < len(starts) and cid == starts[k + 1]:
            k += 1
        out[cid] = k
    return out


def _turn_extras(
    reader: Reader,
    thread_id: str,
    ns: str,
    ids: Sequence[str],
    views: Sequence[Any],
    turns: Sequence[Sequence[Event]],
    namespaces: Sequence[str],
    attention: Attention,
) -> tuple[dict[int, list[str]], list[str]]:
    """Under each turn: the subgraph calls it made (what each call added, folded) and the
    channels it changed (old → new, from the state at the end of the turn before); and the
    calls made on no turn of the line (another fork's)."""
    extra: dict[int, list[str]] = {}
    turn_of = _turn_of(ids, turns)
    by_id = {v.checkpoint_id: v for v in views}
    for k, html in _memories(reader, turns, by_id).items():
        extra.setdefault(k, []).append(html)
    left: list[str] = []
    anchor_of = {cid: f"turn-{k + 1}" for cid, k in turn_of.items()}
    for cid, folded in _calls(reader, thread_id, ns, views, namespaces, attention, anchor_of):
        if cid in turn_of and turns:
            extra.setdefault(turn_of[cid], []).append(folded)
        else:
            left.append(folded)
    if left:
        left.insert(0, "<h3>Subgraph calls on no turn of this line</h3>")
    ends: dict[int, Any] = {}
    for v in views:
        ends[turn_of.get(v.checkpoint_id, 0)] = v
    before: dict[str, Any] = {}
    for k in range(len(turns)):
        end = ends.get(k)
        if end is None:
            continue
        after = state_channels(end.trees)
        changed = diff_trees(before, after)
        if changed:
            extra.setdefault(k, []).append(changes_html(changed, "changed in this turn"))
        before = after
    return extra, left


#: store items read to find the memories written during a turn (past it: a line says so)
MAX_ITEMS = 2000


def _memories(reader: Reader, turns: Sequence[Sequence[Event]], by_id: dict[str, Any]) -> dict[int, str]:
    """The store items (memories) last written while each turn ran: from the time of the
    turn's first checkpoint to the next turn's. The store does not record which thread wrote
    an item, so the page says they are matched by time."""
    starts: list[datetime] = []
    for turn in turns:
        view = by_id.get(turn[0].checkpoint_id)
        try:
            starts.append(_aware(datetime.fromisoformat(view.ts)) if view is not None else starts[-1])
        except (TypeError, ValueError, IndexError):
            starts.append(starts[-1] if starts else _aware(datetime.min))
    starts = list(itertools.accumulate(starts, max))  # a forged time never goes back: sorted
    ends = []
    for view in by_id.values():
        try:
            ends.append(_aware(datetime.fromisoformat(view.ts)))
        except (TypeError, ValueError):
            continue
    if not starts or not ends or not reader.layout.store_dir.is_dir():
        return {}
    end = max(ends)  # the thread's last checkpoint: a later write is not of this line
    found: dict[int, list[str]] = {}
    note = ""
    try:
        for n, item in enumerate(ItemFiles(reader.store.files).walk()):
            if n >= MAX_ITEMS:
                note = f"only the first {MAX_ITEMS} store items were looked at"
                break
            at = item.updated_at
            k = bisect.bisect_right(starts, at) - 1  # the last turn that began before it
            if k < 0 or at > end:
                continue
            when = at.strftime("%H:%M:%S")
            value = _code(_short(compact(item.tree)))
            found.setdefault(k, []).append(
                f"<li>{_code('.'.join(item.namespace))} {_code(item.key)}: {value} "
                f'<span class="dim">at {when}</span></li>'
            )
    except (RepoCheckpointError, OSError) as exc:
        note = f"the store did not read: {exc}"
    out = {}
    title = (
        "memories written during this turn (matched by time: the store does not record which "
        "thread wrote an item)"
    )
    for k, rows in found.items():
        out[k] = f'<div class="changes"><strong>{title}</strong><ul>{"".join(rows)}</ul></div>'
    if note:
        last = len(starts) - 1
        out[last] = out.get(last, "") + f'<p class="dim">{_h(note)}</p>'
    return out


def _aware(moment: Any) -> Any:
    """A checkpoint's time as an aware datetime (the files write UTC)."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)


def _children(ns: str, namespaces: Sequence[str]) -> list[str]:
    """The namespaces of the subgraph calls made directly from ``ns``."""
    return [c for c in namespaces if c != ns and c.rpartition("|")[0] == ns and (ns or "|" not in c)]


def _calls(
    reader: Reader,
    thread_id: str,
    ns: str,
    views: Sequence[Any],
    namespaces: Sequence[str],
    attention: Attention,
    anchor_of: dict[str, str],
) -> list[tuple[str | None, str]]:
    """The subgraph calls made from ``ns``: for each, the checkpoint of ``views`` after which
    its task ran (None: on none of them) and the call, folded."""
    by_id = {v.checkpoint_id: v for v in views}
    ran_at: dict[str, str] = {}  # task id -> the checkpoint its step ran after
    for v in views:
        for t in v.tasks:
            if t.id:
                ran_at.setdefault(t.id, v.checkpoint_id)
    out: list[tuple[str | None, str]] = []
    for child in _children(ns, namespaces):
        cid = ran_at.get(child.rpartition("|")[2].rpartition(":")[2])
        parent = by_id.get(cid) if cid else None
        anchor = anchor_of.get(cid, "") if cid else ""
        out.append((cid, _call_html(reader, thread_id, child, parent, namespaces, attention, anchor)))
    return out


def _call_html(
    reader: Reader,
    thread_id: str,
    child: str,
    parent_view: Any,
    namespaces: Sequence[str],
    attention: Attention,
    anchor: str,
) -> str:
    """One subgraph call, folded: its node, and what it added: the events of its line less the
    messages the parent already had when it called (its input); the calls it made in turn."""
    node = child.rpartition("|")[2].rpartition(":")[0]
    ids = line_to(reader, thread_id, child, reader.resolve(thread_id, child, None), [])
    had: dict[str, Any] = {}  # the parent's messages when it called, by id
    if parent_view is not None:
        for tree in parent_view.trees.get("messages") or []:
            got = message_fields(tree)
            if got is not None and isinstance(got.get("id"), str):
                had[got["id"]] = tree

    def new(e: Event) -> bool:
        """Not a message the parent had, as it had it (one changed under its id is new)."""
        if e.kind != "message":
            return True
        got = message_fields(e.tree)
        key = got.get("id") if got is not None else None
        return not isinstance(key, str) or key not in had or had[key] != e.tree

    views: list[Any] = []
    events = [e for e in events_along(reader, thread_id, child, ids, None, views) if new(e)]
    for e in events:
        _event_attention(e, anchor, attention)
    items = "".join(event_html(e, thread_id) for e in events) or '<li class="other">(nothing new)</li>'
    inner = _calls(reader, thread_id, child, views, namespaces, attention, dict.fromkeys(ids, anchor))
    return (
        f'<details class="subgraph"><summary>subgraph call {_code(node)} '
        f'<span class="dim">({len(ids)} checkpoints, namespace {_code(child)})</span></summary>'
        f'<ul class="events">{items}</ul>{"".join(html for _, html in inner)}</details>'
    )


def _steps_changes(views: Sequence[Any]) -> str:
    """A thread without messages: the channels each checkpoint changed, in order."""
    before: dict[str, Any] = {}
    parts = []
    for v in views:
        after = state_channels(v.trees)
        changed = diff_trees(before, after)
        if changed:
            parts.append(
                changes_html(changed, f"step {_h(v.step)} ({_h(v.source)}), {_code(v.checkpoint_id)}")
            )
        before = after
    return "".join(parts)


def _waiting_html(view: Any) -> list[str]:
    parts: list[str] = []
    if view.interrupts:
        parts += ['<section id="waiting"><h2>Waiting for input</h2><ul class="events">']
        for i in view.interrupts:
            parts.append(
                '<li class="ask"><span class="tag warn">asks</span>'
                f'<span class="who">{_h(i.task_name)}</span>'
                f"(interrupt {_code(i.id)}){_pre(chr(10).join(_lines(i.value)))}</li>"
            )
        parts.append("</ul></section>")
    if view.tasks:
        parts += [
            '<section id="next"><h2>Next tasks</h2><table><thead><tr><th>task</th><th>status</th>'
            "<th>on resume</th></tr></thead><tbody>"
        ]
        for t in view.tasks:
            resume = "keeps its saved writes" if not t.runs_on_resume else "runs again"
            if t.may_have_run:
                resume += " (may have run already: check side effects)"
            parts.append(f"<tr><td>{_code(t.name)}</td><td>{_h(t.status)}</td><td>{resume}</td></tr>")
        parts.append("</tbody></table></section>")
    return parts


def _lines(value: Any) -> list[str]:
    from . import present  # here: review --html draws nothing with it

    return present.lines(value)


def _state_html(view: Any) -> list[str]:
    """The channels of the state that continues, as ``show`` draws them; the conversation is
    the section above."""
    channels = [c for c in sorted(view.values) if not is_internal(c) and c != "messages"]
    parts = ['<section id="state"><h2>State</h2>']
    if "messages" in view.values:
        count = len(view.trees.get("messages") or [])
        parts.append(f'<p class="dim">{_code("messages")}: {count} messages (the conversation above)</p>')
    for c in channels:
        parts.append(f"<h4>{_code(c)}</h4>{_pre(chr(10).join(_lines(view.values[c])))}")
    if not channels and "messages" not in view.values:
        parts.append('<p class="dim">empty</p>')
    parts.append("</section>")
    return parts


def _branches_html(
    reader: Reader,
    thread_id: str,
    ns: str,
    branches: Sequence[Any],
    attention: Attention,
    anchors: dict[int, str],
) -> list[str]:
    """The heads to settle, each with the turns its branch added since it parted, titled as
    the thread's turns (the user messages at the parting checkpoint came before)."""
    count = f"{len(branches)} heads continue this thread; nobody chose between them."
    parts = ['<section id="branches"><h2>Heads to settle</h2>', f"<p>{count}</p>"]
    for k, b in enumerate(branches, 1):
        state = (
            '<span class="tag ok">◀ continues (the newest)</span>'
            if b.continues
            else '<span class="tag">does not continue</span>'
        )
        since = f", since {_code(b.start)}" if b.start else ""
        parts.append(f'<h3 id="branch-{k}">head {_code(b.head)} {state}{since}</h3>')
        for e in b.events:
            anchors.setdefault(id(e), f"branch-{k}")
        parted = reader.state(thread_id, ns, b.start, revive=False).trees.get("messages") if b.start else None
        titles = [t.title for t in numbered_turns(b.events, count_users(parted))]
        parts.append(
            turns_html(turns_of(b.events), f"branch-{k}", attention, titles=titles)
            or '<p class="dim">(nothing new)</p>'
        )
    where = f" --ns {ns}" if ns else ""
    command = _code(f"langgraph-repo heads {thread_id}{where} --choose ID")
    parts.append(
        f"<p>Settle: {command}, or keep both branches' messages with "
        "<code>--merge KEEP OTHER</code>.</p></section>"
    )
    return parts


def _render_tree(
    reader: Reader,
    thread_id: str,
    ns: str,
    rows: Sequence[HistoryRow],
    head: str,
    ids: Sequence[str],
    events: Sequence[Event],
    branches: Sequence[Any],
    anchors: dict[int, str],
    limit: int,
) -> str:
    """The history (``Reader.history``, its ``fork_graph`` lanes) with the head that continues
    marked, the other heads marked, and each checkpoint labelled with what happened there:
    the conversation's events, a branch's, and for the other lines (forks settled or not
    chosen) their own, read from where they part."""
    unsettled = {b.head for b in branches}
    every: list[Event] = list(events)
    for b in branches:
        every += b.events
    covered = set(ids) | {e.checkpoint_id for e in every}
    leaves = [r for r in rows if not r.children and r.checkpoint_id != head]
    for r in leaves[:MAX_OTHER_LINES]:
        if r.checkpoint_id in covered:
            continue
        line = line_to(reader, thread_id, ns, r.checkpoint_id, covered)
        if not line:
            continue
        start = reader.get(thread_id, ns, line[0]).parent_id
        every += events_along(reader, thread_id, ns, line, start if isinstance(start, str) else None)
        covered.update(line)
    label, anchor = _labels(every, anchors)
    drawn = []
    for r in rows[:limit]:
        mark = ""
        if r.checkpoint_id == head:
            mark = "continues"
        elif r.checkpoint_id in unsettled:
            mark = "unsettled"
        elif not r.children:
            mark = "head"
        drawn.append(
            TreeRow(
                r.checkpoint_id,
                r.step,
                r.source,
                r.graph,
                mark,
                label.get(r.checkpoint_id, ""),
                anchor.get(r.checkpoint_id, ""),
            )
        )
    forks = sum(1 for r in rows if not r.children)
    return (
        f'<section id="history"><h2>History</h2><p class="dim">{len(rows)} checkpoints, '
        f"{forks} head{'s' if forks != 1 else ''}, newest first</p>"
        + tree_html(drawn, max(len(rows) - limit, 0))
        + "</section>"
    )


def write_page(path: Path, text: str) -> None:
    """Write the page at once (a temporary file beside it, then a rename): a reader of
    ``path`` never sees half a page, and a failed run leaves the last one."""
    folder = path.parent
    if not folder.is_dir():
        raise BadInputError(f"{path}: cannot write the HTML view: no folder {folder}")
    if path.is_dir():
        raise BadInputError(f"{path}: cannot write the HTML view: it is a folder")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(text.encode("utf-8"))
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
