"""The Markdown view ``render`` prints, and the one rule that keeps file contents inert in
every Markdown this program writes (``render``, ``review --markdown``, the workflow's comment
and job summary, which are ``review``'s Markdown).

The rule: a string from the files (a thread id, a namespace, a node, tool or channel name, a
task path, message text, an interrupt or resume value, a store namespace, key or field, a
problem message, a file path, a checkpoint id) reaches Markdown only through ``md_code`` (one
line: a code span, or in a table ``cell``, or ``html=True`` inside an HTML block, where it is
HTML-escaped in a ``<code>`` element) or ``md_fence`` (a block: a fence it cannot close). Only
the program's own words are written bare; the only HTML it writes is ``<details>``,
``<summary>`` and ``<code>``, without attributes. tests/test_markdown_inert.py renders the
outputs with markdown-it-py over hostile names and texts and checks that nothing else survives.
"""

from __future__ import annotations

import html as _html
import re
from collections.abc import Sequence

from ..core.format.messages import ERROR_MARK
from ..readmodel.reader import HistoryRow, StateView, ThreadSummary
from ..readmodel.tasks import is_internal
from ..readmodel.turns import Branch, Event
from . import present
from .events import bounded, event_parts
from .output import (
    screen,
)


def md_fence(text: str, lang: str = "text", read: str = "") -> str:
    """A fenced block that the text inside cannot close (screened: masked, no control
    characters), at most ``WHOLE`` characters of it (``bounded``: ``read`` says where the
    rest is)."""
    text = screen(bounded(text, read), keep="\n\t")
    longest = max((len(run) for run in text.split("\n") for run in _backtick_runs(run)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text}\n{fence}"


def _lines_block(lines: Sequence[str]) -> str:
    """A fenced block of lines: a newline inside one line (a type or field name from a file)
    is shown as ``\\x0a``, as ``show`` shows it, so it cannot add a line of its own."""
    return md_fence("\n".join(screen(line) for line in lines))


def _backtick_runs(line: str) -> list[str]:
    runs, cur = [], ""
    for ch in line:
        if ch == "`":
            cur += ch
        elif cur:
            runs.append(cur)
            cur = ""
    if cur:
        runs.append(cur)
    return runs


#: text that means nothing to Markdown or GitHub (no link, mention, HTML or emphasis in it)
_MD_INERT = re.compile(r"[A-Za-z0-9 .:+-]*")
#: what GitHub makes live in plain text although Markdown does not: ``www.`` (an autolink),
#: a run of seven hex digits (a commit), a word joined to a number (``GH-12``, a repository's
#: own autolink references such as ``JIRA-12`` or ``T12``), a colon that is not a time's
#: (``:+1:``, an emoji)
_LIVE = re.compile(r"(?i)www\.|[a-z]-?[0-9]|[0-9][a-z]|[0-9a-f]{7}|:(?![0-9]{2}(?![0-9]))")


def md_code(value: object, *, cell: bool = False, code: bool = False, html: bool = False) -> str:
    """A string from the files, made inert for its place: the one rule of every Markdown this
    program writes (the module's docstring).

    Screened first (secrets masked, control characters and newlines escaped: one line).
    Inert text (``loop``, a timestamp) stays as it is unless ``code``; anything else is a
    code span whose fence is longer than any backtick run inside, so it cannot close early
    and nothing inside is a link, HTML, a mention or a table cell. In a table ``cell`` a
    ``|`` is escaped as GFM wants (``\\|``); a backslash right before one is shown as ``\\x5c``,
    since GFM would read ``\\\\|`` as a cell boundary. With ``html`` the text goes inside an
    HTML block (``<summary>``), where Markdown is not parsed and a code span would not hold:
    HTML-escaped (``&``, ``<``, ``>``, quotes), and in a ``<code>`` element unless inert, where
    GitHub makes no link, mention or emoji of it either.
    """
    text = screen(str(value), keep="")
    inert = not code and _MD_INERT.fullmatch(text) is not None and _LIVE.search(text) is None
    if html:
        escaped = _html.escape(text, quote=True)
        return escaped if inert else f"<code>{escaped}</code>"
    if inert:
        return text
    if cell:
        text = text.replace("\\|", "\\x5c|").replace("|", "\\|")
    fence = "`" * (max((len(run) for run in _backtick_runs(text)), default=0) + 1)
    pad = " " if not text or text[0] in "` " or text[-1] in "` " else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _md_cell(text: str) -> str:
    return md_code(text, cell=True, code=True)


def _md_writers(row: HistoryRow) -> str:
    """Who wrote a checkpoint: the reader's own word for an input, update or fork checkpoint
    (``(input)``); node names, from the files' task paths, as cells whatever they look like."""
    if row.source in ("input", "update", "fork"):
        return ", ".join(row.writers)
    return ", ".join(_md_cell(w) for w in row.writers)


def markdown_doc(
    summary: ThreadSummary,
    view: StateView,
    rows: list[HistoryRow],
    limit: int,
    note: Sequence[str] = (),
    branches: Sequence[Branch] = (),
) -> str:
    """The thread as Markdown; ``note``: the types not revived and how to allow them;
    ``branches``: the heads waiting for a choice, each with what its branch added."""
    parts = _md_head(summary, view)
    if branches:
        parts[-2:-2] = _md_branches(summary.thread_id, view.ns, branches)
    channels = [c for c in sorted(view.values) if not is_internal(c)]
    if not channels:
        parts += ["_empty_", ""]
    for c in channels:
        parts += [f"**{md_code(c, code=True)}**", "", _lines_block(present.lines(view.values[c])), ""]
    if view.interrupts:
        parts += ["## Waiting for input", ""]
        for i in view.interrupts:
            parts += [
                f"{md_code(i.task_name, code=True)} asks (interrupt {md_code(i.id, code=True)}):",
                "",
                _lines_block(present.lines(i.value)),
                "",
            ]
    if view.tasks:
        parts += ["## Next tasks", "", "| task | status | on resume |", "|---|---|---|"]
        for t in view.tasks:
            resume = "keeps its saved writes" if not t.runs_on_resume else "runs again"
            if t.may_have_run:
                resume += " (may have run already: check side effects)"
            status = t.status
            if t.error is not None:
                status = f"{status}, {ERROR_MARK}: {_md_cell(present.inline(t.error, 200))}"
            parts.append(f"| {_md_cell(t.name)} | {status} | {resume} |")
        parts.append("")
    if note:
        parts += [_lines_block(note), ""]
    parts += _md_history(rows, limit)
    parts += [
        "",
        "_Rendered from the JSON state files by `langgraph-repo render`; the files are authoritative._",
        "",
    ]
    return "\n".join(parts)


def _md_head(summary: ThreadSummary, view: StateView) -> list[str]:
    """The title and the summary table of ``markdown_doc``, up to the State heading."""
    ns_note = f" (namespace {md_code(view.ns, code=True)})" if view.ns else ""
    parts = [f"# Thread {md_code(summary.thread_id, code=True)}{ns_note}", ""]
    if summary.waiting:
        status = "waiting for input at " + ", ".join(_md_cell(i.task_name) for i in summary.waiting)
    elif summary.next:
        status = "stopped before " + ", ".join(_md_cell(n) for n in summary.next)
    else:
        status = "finished"
    parts += [
        "| | |",
        "|---|---|",
        f"| Status | {status} |",
        f"| Latest checkpoint | {_md_cell(view.checkpoint_id)} (step {view.step}, "
        f"{md_code(view.source, cell=True)}) |",
        f"| Last updated | {md_code(present.short_time(view.ts), cell=True)} UTC |",
        f"| Checkpoints | {summary.checkpoints} in {len(summary.namespaces)} namespace"
        f"{'s' if len(summary.namespaces) != 1 else ''} |",
        f"| Forks | {summary.forks} |",
        "",
        "## State",
        "",
    ]
    return parts


def _md_history(rows: list[HistoryRow], limit: int) -> list[str]:
    """The History section of ``markdown_doc``: the newest ``limit`` checkpoints."""
    parts: list[str] = []
    parts += [
        "## History",
        "",
        "| step | source | written by | checkpoint | parent |",
        "|---|---|---|---|---|",
    ]
    for r in rows[:limit]:
        parts.append(
            f"| {'' if r.step is None else r.step} | {md_code(r.source or '', cell=True)} | "
            f"{_md_writers(r)} | {_md_cell(r.checkpoint_id)} | "
            f"{_md_cell(r.parent_id) if r.parent_id else ''} |"
        )
    if len(rows) > limit:
        parts.append(f"\n_… {len(rows) - limit} older checkpoints not shown._")
    return parts


def md_event(e: Event) -> str:
    """One event of a conversation as a list item's text, every string from the files inert."""
    label, text, _ = event_parts(e)
    if not text and e.kind == "call":
        return f"**{md_code(label)}**"
    return f"**{md_code(label)}**: {md_code(text, code=True)}"


def _md_branches(thread_id: str, ns: str, branches: Sequence[Branch]) -> list[str]:
    """The heads nobody chose, each with the turns of its own branch, and how to settle them."""
    count = f"{len(branches)} heads continue this thread; nobody chose between them:"
    parts = ["## Heads to settle", "", count, ""]
    for b in branches:
        state = "continues (the newest)" if b.continues else "does not continue"
        since = f", since {md_code(b.start, code=True)}" if b.start else ""
        parts.append(f"- head {md_code(b.head, code=True)} {state}{since}:")
        parts += [f"  {'  ' * e.depth}- {md_event(e)}" for e in b.events] or ["  - (nothing new)"]
    where = f" --ns {ns}" if ns else ""
    command = md_code(f"langgraph-repo heads {thread_id}{where} --choose ID", code=True)
    parts += ["", f"Settle: {command}, or keep both branches' messages with `--merge KEEP OTHER`.", ""]
    return parts
