"""``review``: what a change did to the state, per thread, as a conversation (docs/review.md).

The report is review/report.py's; this module draws it for a terminal, as GitHub-flavoured
Markdown for a pull-request comment (``--markdown``), or as JSON. Every string from the files
is screened (secrets masked, control characters escaped) and, in Markdown, made inert as
``render`` makes it; long content is folded into ``<details>``. The Markdown and HTML views
are imported only when asked for (``--markdown``, ``--html``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from ..core.digest import short_digest
from ..core.errors import BadInputError
from ..core.format.messages import ERROR_MARK
from ..core.format.tree import model_fields
from ..readmodel.turns import Event
from ..review.model import ItemReport, Line, NamespaceReport, Next, Report, Step, ThreadReport
from ..review.report import review as make_report
from .app import JsonOpt, require_root, settings_of
from .events import (
    Turn,
    attention,
    bounded,
    bounded_tree,
    compact,
    event_parts,
    fold,
    next_rows,
    numbered_turns,
    plural,
    show_command,
    verdict_line,
)
from .output import Text, print_json, problems_json, record_json, screen

#: the last line of ``--markdown``: a review without it was cut short (the example workflow
#: posts only a review that ends with it)
MARKDOWN_END = "_Made from the JSON state files by `langgraph-repo review`; the files are authoritative._"


def review(
    ctx: typer.Context,
    range_: Annotated[
        str | None,
        typer.Argument(
            metavar="[RANGE]",
            help="git's BASE...HEAD (what HEAD adds since it left BASE, as a pull request shows it), "
            "BASE..HEAD (the two as they are), or BASE (to the work tree, uncommitted files included). "
            "Default: the merge-base of HEAD and the default branch, to the work tree.",
        ),
    ] = None,
    markdown: Annotated[
        bool, typer.Option("--markdown", help="GitHub-flavoured Markdown, for a pull-request comment.")
    ] = False,
    as_json: JsonOpt = False,
    html_file: Annotated[
        Path | None,
        typer.Option(
            "--html",
            metavar="FILE",
            help="Also write the review as one self-contained HTML page to FILE (docs/review.md).",
        ),
    ] = None,
    limit: Annotated[
        int | None,
        typer.Option(
            "--limit",
            metavar="CHARS",
            min=1000,
            help="With --markdown: a review longer than CHARS characters is cut to fit a comment "
            "(its header, verdict, flags and problems kept; the turns left out, and it says so).",
        ),
    ] = None,
) -> None:
    """What changed in the state between two git revisions, per thread: the new turns in order
    (messages, tool calls and results, interrupts and answers, edits), other channels old -> new,
    memories (store items), heads still to settle, and what validate finds in the changed files;
    a verdict line first. Exit 1 when something is flagged or invalid. Reads git, never checks
    out, never constructs a value."""
    if markdown and as_json:
        raise BadInputError("review: --markdown and --json are two forms of one report: give one")
    settings = settings_of(ctx)
    require_root(settings.root)
    report = make_report(settings.root, spec=range_)
    if html_file is not None:
        from .html import review_html, write_page

        write_page(html_file, review_html(report, FLAG_LABEL, _files_line(report), _line_title))
    if as_json:
        print_json(bounded_tree(report_json(report)))
    elif markdown:
        settings.out.file.write(screen(_markdown_text(report, limit), keep="\n\t"))
    else:
        for line in report_lines(report):
            settings.out.print(line)
    if report.flags or report.problems:
        raise typer.Exit(1)


def _markdown_text(report: Report, limit: int | None) -> str:
    """``review --markdown``: the report as Markdown, cut to ``limit`` characters (``--limit``)."""
    text = report_markdown(report)
    if limit is None:
        return text
    from .reviewcut import cut_markdown

    return cut_markdown(
        report,
        text,
        limit,
        labels=FLAG_LABEL,
        files=_files_line(report),
        flagged=_flag_title(report),
        end=MARKDOWN_END,
    )


# ----------------------------------------------------------------------------
# JSON
# ----------------------------------------------------------------------------
def report_json(report: Report) -> dict[str, Any]:
    return {
        "base": report.range.base,
        "head": report.range.head,
        "range": report.range.spec,
        "note": report.range.note,
        "root": report.root,
        "threads": [_thread_json(t) for t in report.threads],
        "items": [_item_json(i) for i in report.items],
        "other_files": report.other,
        "flags": [record_json(f, "kind path message") for f in report.flags],
        "files": [record_json(f, "path change account flagged") for f in report.files],
        "verdict": _verdict_json(report),
    }


def _verdict_json(report: Report) -> dict[str, Any]:
    v = report.verdict
    return {
        "line": verdict_line(v),
        "turns": v.turns,
        "approvals": v.answers,
        "approvals_saved": v.saved,
        "tool_errors": v.tool_errors,
        "failed_tasks": v.failures,
        "hand_edits": v.edits,
        "migrations": v.migrations,
        "memory_changes": v.memories,
        "forks": v.forks,
        "rewrites": v.rewrites,
        "threads_deleted": v.threads_removed,
        "checkpoints_removed": v.removed,
        "waiting": [{"thread_id": t, "where": w, "question": q} for t, w, q in v.waiting],
        "unsettled": [{"thread_id": t, "where": w} for t, w in v.unsettled],
    }


def _item_json(i: ItemReport) -> dict[str, Any]:
    return record_json(
        i,
        "namespace key path status fields problems shown_in",
        namespace=list(i.namespace),
        fields=[record_json(f, "pointer old new") for f in i.fields],
        problems=problems_json(i.problems),
        shown_in=None
        if i.shown_in is None
        else {"thread_id": i.shown_in[0], "checkpoint_ns": i.shown_in[1], "checkpoint_id": i.shown_in[2]},
    )


def _thread_json(t: ThreadReport) -> dict[str, Any]:
    return record_json(
        t,
        "thread_id status unsettled namespaces problems",
        namespaces=[
            record_json(
                n,
                "checkpoint_ns=ns label added removed continues=current heads lines next",
                heads=[record_json(h, "checkpoint_id settled") for h in n.heads],
                lines=[_line_json(line, t.thread_id) for line in n.lines],
                next=_next_json(n.next),
            )
            for n in t.namespaces
        ],
        problems=problems_json(t.problems),
    )


def _next_json(nxt: Next | None) -> dict[str, Any] | None:
    if nxt is None:
        return None
    return {
        "checkpoint_id": nxt.checkpoint_id,
        "tasks": [
            record_json(
                t,
                "name kind status packet input writes interrupts error answered answer mismatch task_id",
                writes=[{"channel": c, "value": v} for c, v in t.writes],
            )
            for t in nxt.tasks
        ],
    }


def _step_json(step: Step) -> dict[str, Any]:
    return record_json(
        step,
        "checkpoint_id parent metadata bookkeeping internal writes ts",
        writes=[{"task_id": i, "task_path": p, "channel": c, "value": v} for i, p, c, v in step.writes],
    )


def _line_json(line: Line, thread_id: str) -> dict[str, Any]:
    return record_json(
        line,
        "head start continues settled checkpoints events channels steps start_step turns_before call forks",
        events=[_event_json(e, thread_id) for e in line.events],
        channels=[record_json(c, "channel kind old new") for c in line.channels],
        steps=[_step_json(s) for s in line.steps],
        start_step=_step_json(line.start_step) if line.start_step is not None else None,
    )


def _event_json(e: Event, thread_id: str) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": e.kind, "checkpoint_id": e.checkpoint_id, "step": e.step}
    if e.role:
        out["role"] = e.role
    if e.text:  # as every output bounds a text (the rest: ``show``)
        out["text"] = bounded(e.text, show_command(thread_id, e.ns, e.checkpoint_id))
    if e.calls:
        out["tool_calls"] = [{"name": n, "args": a} for n, a in e.calls]
    if e.name:
        out["name"] = e.name
    if e.status:
        out["status"] = e.status
    if e.invalid:
        out["invalid_tool_calls"] = [{"name": n, "args": a} for n, a in e.invalid]
    if e.ns:
        out["ns"] = e.ns
    if e.node:
        out["node"] = e.node
    if e.depth:
        out["depth"] = e.depth
    if e.kind == "channel":
        out["old"] = e.old
    if e.kind in (
        "interrupt",
        "resume",
        "error",
        "choice",
        "merge",
        "metadata",
        "channel",
        "memory",
    ) or e.role in (
        "value",
        "refused",
    ):
        out["value"] = e.tree
    elif e.kind in ("message", "edited", "removed"):
        # what the text does not show (the message's id, its provider's metadata ...): summed up
        fields = model_fields(e.tree)
        if fields is not None and fields.get("id") is not None:
            out["id"] = fields["id"]
        out["digest"] = short_digest(e.tree)
    return out


def _line_title(n: NamespaceReport, line: Line, many: bool, code: Any = str) -> str:
    """What a line is, in words; ``code`` marks the ids (Markdown makes them inert)."""
    turns = numbered_turns(line.events, line.turns_before)
    new = sum(not t.continued for t in turns)
    title = f"{plural(new, 'new turn')}, {plural(len(line.checkpoints), 'checkpoint')}"
    if turns and turns[0].continued and turns[0].number:
        title = f"turn {turns[0].number} continued" + (f", {plural(new, 'new turn')}" if new else "")
        title += f", {plural(len(line.checkpoints), 'checkpoint')}"
    if many:
        state = "continues" if line.continues else ("settled" if line.settled else "unsettled")
        title = f"head {code(line.head)} ({state}): {title}"
    if line.start:
        title += f", continuing {code(line.start)}"
    return title


def _shown_lines(n: NamespaceReport) -> list[Line]:
    """The lines a namespace shows itself: not those of a subgraph call its caller's line holds."""
    return [line for line in n.lines if not line.call]


def _own_section(n: NamespaceReport) -> bool:
    """Whether a namespace needs a section of its own: the top one, or a subgraph's with a
    line no caller holds, checkpoints removed, or heads to settle (its next step is shown
    under the task that runs it)."""
    return not n.ns or bool(
        _shown_lines(n) or n.removed or (n.heads and sum(not h.settled for h in n.heads) > 1)
    )


def _counts(t: ThreadReport, n: NamespaceReport) -> str:
    """``+15 checkpoints``, and for the top namespace the subgraph calls its lines hold."""
    said = f"+{plural(len(n.added), 'checkpoint')}" + (f", -{len(n.removed)}" if n.removed else "")
    if not n.ns or n is t.namespaces[0]:
        held = [m for m in t.namespaces if m is not n and m.lines and not _shown_lines(m)]
        if held:
            added = sum(len(m.added) for m in held)
            said += f"; {plural(len(held), 'subgraph call')}, +{plural(added, 'checkpoint')}"
    return said


# ----------------------------------------------------------------------------
# terminal
# ----------------------------------------------------------------------------
#: how each kind of flag is named, first on its line
FLAG_LABEL = {
    "root": "state from elsewhere",
    "rewritten": "history rewritten",
    "head": "continues elsewhere",
    "send": "runs what was not asked",
    "unexplained": "unexplained change",
    "layout": "not part of the layout",
    "attributes": "attributes changed",
    "not-read": "not read",
}


def _files_line(report: Report) -> str:
    """How many files changed under the root and how many of them are flagged (the rest are
    explained: ``--json`` says by what)."""
    n, flagged = len(report.files), sum(f.flagged for f in report.files)
    said = f"{n} changed file{'s' if n != 1 else ''}"
    if flagged:
        return f"{said}, {flagged} of them flagged"
    return said if report.flags or report.problems else f"{said}, none flagged"


def _flag_title(report: Report) -> str:
    n = len(report.flags)
    return f"{n} flagged: the app would load or run what this review does not show"


def report_lines(report: Report) -> list[Text]:
    """The report for a terminal: the verdict, the flags and what needs attention, the range,
    then each thread and each store item no turn shows."""
    out = _head_lines(report)
    for t in report.threads:
        out += _thread_lines(t)
    for i in report.items:
        if i.shown_in is None:  # else in the turn whose step wrote it
            out += _item_lines(i)
    return out


def _head_lines(report: Report) -> list[Text]:
    """The lines before the threads: verdict, flags, attention, the range and its files."""
    out = [Text(verdict_line(report.verdict), style="bold")]
    if report.flags:
        out.append(Text(_flag_title(report), style="bold red"))
        for flagged in report.flags:
            where = f"{flagged.path}: " if flagged.path else ""
            label = FLAG_LABEL.get(flagged.kind, flagged.kind)
            out.append(Text(f"  {label}: {where}{flagged.message}", style="red"))
    for label, what, where in attention(report):
        said = f"{what} ({where})" if where else what
        out.append(Text.assemble((f"{label}: ", "bold yellow"), (said, "yellow")))
    out.append(
        Text.assemble(
            ("review ", "bold"),
            (report.range.spec, "bold"),
            (f"  {report.range.base[:12]} .. {report.range.head_label[:12]}", "dim"),
            (f"  root {report.root}", "dim"),
        )
    )
    if report.range.note:
        out.append(Text(f"note: {report.range.note}", style="yellow"))
    if report.files:
        out.append(Text(_files_line(report), style="dim"))
    if not report.threads and not report.items and not report.files:
        out.append(Text("no thread changed", style="dim"))
    return out


def _thread_lines(t: ThreadReport) -> list[Text]:
    """A thread's section: its namespaces' new lines turn by turn, what runs next, its problems."""
    flag = ", heads to settle" if t.unsettled else ""
    out = [Text(), Text.assemble(("thread ", "dim"), (t.thread_id, "bold"), (f" ({t.status}{flag})", "dim"))]
    for n in t.namespaces:
        if not _own_section(n):
            continue
        where = f"  {n.label or n.ns}" if n.ns else ""
        out.append(Text(f"{where}  {_counts(t, n)}", style="dim"))
        lines = _shown_lines(n)
        for line in lines:
            out.append(Text("  " + _line_title(n, line, len(lines) > 1), style="cyan"))
            for turn in numbered_turns(line.events, line.turns_before):
                out.append(Text(f"    {turn.title}", style="bold"))
                for e in turn.events:
                    out.append(_event_text(e, "      " + "  " * e.depth))
    for depth, kind, label, text, _ in next_rows(t):
        indent = "  " + "  " * depth
        if kind == "next":
            out.append(
                Text(f"{indent}next, when {label or 'the thread'} continues from {text}:", style="cyan")
            )
            continue
        style = "red" if label.startswith("✗") else ""
        out.append(Text.assemble((f"{indent}{label}: ", "bold " + style), (text, style)))
    for p in t.problems:
        out.append(Text(f"  {p.path}: {p.pointer}: {p.message}", style="red"))
    return out


def _item_lines(i: ItemReport) -> list[Text]:
    """A store item's section: its fields old -> new and its problems."""
    out = [
        Text(),
        Text.assemble(
            ("store item ", "dim"),
            (f"{'.'.join(i.namespace)} {i.key}", "bold"),
            (f" ({i.status})", "dim"),
        ),
    ]
    for f in i.fields:
        out.append(Text(f"    {f.pointer}: {_field(f.old)} -> {_field(f.new)}", style="yellow"))
    for p in i.problems:
        out.append(Text(f"  {p.path}: {p.pointer}: {p.message}", style="red"))
    return out


def _event_text(e: Event, indent: str) -> Text:
    label, text, _ = event_parts(e)
    if e.kind == "call":
        return Text(f"{indent}{label}", style="bold magenta")
    style = "red" if ERROR_MARK in label else "yellow" if e.kind in ("channel", "memory") else ""
    return Text.assemble((f"{indent}{label}: ", "bold " + style), (text, style))


# ----------------------------------------------------------------------------
# Markdown
# ----------------------------------------------------------------------------
def report_markdown(report: Report) -> str:
    from .markdown import md_code

    def code(text: str) -> str:
        return md_code(text, code=True)

    head = code(report.range.head[:12]) if report.range.head else "the work tree"
    parts = [
        f"## State review: {code(report.range.base[:12])} .. {head}",
        "",
        f"**{verdict_line(report.verdict, code)}**",
        "",
    ]
    if report.flags:
        parts += [f"**⚠ {md_code(_flag_title(report))}**", ""]
        for flagged in report.flags:
            where = f"{code(flagged.path)}: " if flagged.path else ""
            label = FLAG_LABEL.get(flagged.kind, flagged.kind)
            parts.append(f"- **{label}**: {where}{code(flagged.message)}")
        parts.append("")
    needs = attention(report)
    if needs:
        for label, what, where in needs:
            parts.append(f"- **{label}**: {code(what)}" + (f" ({code(where)})" if where else ""))
        parts.append("")
    if report.range.note:
        parts += [f"_Note_: {code(report.range.note)}", ""]
    parts += [
        f"Root {code(report.root)}; {len(report.threads)} thread"
        f"{'s' if len(report.threads) != 1 else ''} changed; {_files_line(report)}.",
        "",
    ]
    for t in report.threads:
        parts += _md_thread(t)
    items = [i for i in report.items if i.shown_in is None]
    if items:
        shown = len(report.items) - len(items)
        also = f" ({shown} more in the turns that wrote them)" if shown else ""
        parts += [f"### Store: {plural(len(items), 'item')} changed{also}", ""]
        for i in items:
            parts.append(f"- {code('.'.join(i.namespace))} {code(i.key)} ({i.status})")
            for f in i.fields:
                parts.append(f"  - {code(f.pointer)}: {code(_field(f.old))} → {code(_field(f.new))}")
            for p in i.problems:
                parts.append(f"  - {code(p.path)} {code(p.pointer)}: {md_code(p.message)}")
        parts.append("")
    parts += [MARKDOWN_END, ""]
    return "\n".join(parts)


def _md_thread(t: ThreadReport) -> list[str]:
    from .markdown import md_code

    def code(text: str) -> str:
        return md_code(text, code=True)

    flag = " — **heads to settle**" if t.unsettled else ""
    parts = [f"### Thread {code(t.thread_id)} ({t.status}){flag}", ""]
    for n in t.namespaces:
        if not _own_section(n):
            continue
        if n.ns:
            parts += [f"Subgraph call {code(n.label)}" if n.label else f"Namespace {code(n.ns)}", ""]
        if n.removed:
            parts += [f"{plural(len(n.removed), 'checkpoint')} removed.", ""]
        lines = _shown_lines(n)
        for line in lines:
            parts += [_line_title(n, line, len(lines) > 1, code), ""]
            for turn in numbered_turns(line.events, line.turns_before):
                parts += _md_turn(turn, t.thread_id)
            parts.append("")
        if n.heads and sum(not h.settled for h in n.heads) > 1:
            ids = ", ".join(code(h.checkpoint_id) for h in n.heads if not h.settled)
            where = f" --ns {n.ns}" if n.ns else ""
            command = code(f"langgraph-repo heads {t.thread_id}{where} --choose ID")
            current = code(n.current or "")
            settle = f"Settle with {command} (or --merge)."
            parts += [f"Heads nobody chose: {ids}; {current} continues. {settle}", ""]
    rows = next_rows(t)
    folds: list[tuple[str, str, str]] = []  # (label, whole text, where to read it whole)
    at = ""
    for depth, kind, label, text, whole in rows:
        if kind == "next":
            at = text
            said = f"Next, when {code(label) if label else 'the thread'} continues from {code(text)}:"
            parts += [f"{'  ' * (depth - 1)}- {said}"] if depth else [said, ""]
        else:
            parts.append(f"{'  ' * (depth - 1)}- **{md_code(label)}**: {code(text)}")
            if whole:
                folds.append((label, whole, show_command(t.thread_id, "", at)))
    if rows:
        parts.append("")
    for label, whole, read in folds:  # folded as a turn's long messages are
        parts += _md_details(label, whole, read, "")
    if folds:
        parts.append("")
    if t.problems:
        parts += ["Validation problems:", ""]
        for p in t.problems:
            parts.append(f"- {code(p.path)} {code(p.pointer)}: {md_code(p.message)}")
        parts.append("")
    return parts


def _md_turn(turn: Turn, thread_id: str) -> list[str]:
    """One turn as a numbered item (its number the thread's), its events nested below it as
    deep as they are (a subgraph call's under the call), long texts whole in ``<details>``
    (at most ``WHOLE`` characters each, then where to read the rest)."""
    from .markdown import md_event

    first, *rest = turn.events
    if turn.continued:
        title = "_(no user message)_" if turn.number == 0 else f"_(turn {turn.number} continued)_"
        parts = [f"{turn.number}. {title}"]
        rest = turn.events
    else:
        parts = [f"{turn.number}. {md_event(first)}"]
    for e in rest:
        parts.append("   " + "  " * e.depth + "- " + md_event(e))
    for e in turn.events:
        label, _, whole = event_parts(e)
        if whole:
            parts += _md_details(label, whole, show_command(thread_id, e.ns, e.checkpoint_id))
    return parts


def _md_details(label: str, whole: str, read: str, indent: str = "   ") -> list[str]:
    """A long text whole in a ``<details>`` block, in a fence it cannot close, cut after
    ``WHOLE`` characters with how much was left out and ``read``, the command that prints it."""
    from .markdown import md_code, md_fence

    return [
        "",
        f"{indent}<details><summary>{md_code(label, html=True)} (full text)</summary>",
        "",
        _indent(md_fence(whole, read=read), indent),
        "",
        f"{indent}</details>",
    ]


def _field(value: Any) -> str:
    """A store field's value on its line: cut as a message is (``--json`` has it whole)."""
    return fold(compact(value))[0]


def _indent(block: str, by: str) -> str:
    return "\n".join(by + line if line else line for line in block.split("\n"))
