"""``review``: what a change did to the state, per thread, as a conversation (docs/review.md).

The report is review/report.py's; this module draws it for a terminal, as GitHub-flavoured
Markdown for a pull-request comment (``--markdown``), or as JSON. Every string from the files
is screened (secrets masked, control characters escaped) and, in Markdown, made inert as
``render`` makes it; long content is folded into ``<details>``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.text import Text

from ..core.digest import short_digest
from .app import JsonOpt, _check_root, _settings, app
from .events import compact, event_parts, task_lines, turns_of
from .output import _print_json, problems_json, record_json, screen

if TYPE_CHECKING:
    from ..readmodel.turns import Event
    from ..review.model import ItemReport, Line, NamespaceReport, Next, Report, ThreadReport


#: the last line of ``--markdown``: a review without it was cut short (the example workflow
#: posts only a review that ends with it)
MARKDOWN_END = "_Made from the JSON state files by `langgraph-repo review`; the files are authoritative._"


@app.command()
def review(
    ctx: typer.Context,
    range_: Annotated[
        str | None,
        typer.Argument(
            metavar="[RANGE]",
            help="git's BASE..HEAD, or BASE (to the work tree, uncommitted files included). Default: the "
            "merge-base of HEAD and the default branch, to the work tree.",
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
) -> None:
    """What changed in the state between two git revisions, per thread: the new turns in order
    (messages, tool calls and results, interrupts and answers, edits), other channels old -> new,
    heads still to settle, and what validate finds in the changed files. Reads git, never
    checks out, never constructs a value."""
    from ..review.report import review as make_report

    settings = _settings(ctx)
    _check_root(settings.root)
    report = make_report(settings.root, spec=range_)
    if html_file is not None:
        from .html import review_html, write_page

        write_page(html_file, review_html(report, FLAG_LABEL, _files_line(report), _line_title))
    if as_json:
        _print_json(report_json(report))
    elif markdown:
        settings.out.file.write(screen(report_markdown(report), keep="\n\t"))
    else:
        for line in report_lines(report):
            settings.out.print(line)
    if report.flags or report.problems:
        raise typer.Exit(1)


# ----------------------------------------------------------------------------
# JSON
# ----------------------------------------------------------------------------
def report_json(report: Report) -> dict[str, Any]:
    return {
        "base": report.range.base,
        "head": report.range.head,
        "range": report.range.spec,
        "root": report.root,
        "threads": [_thread_json(t) for t in report.threads],
        "items": [_item_json(i) for i in report.items],
        "other_files": report.other,
        "flags": [record_json(f, "kind path message") for f in report.flags],
        "files": [record_json(f, "path change account flagged") for f in report.files],
    }


def _item_json(i: ItemReport) -> dict[str, Any]:
    return record_json(
        i,
        "namespace key path status fields problems",
        namespace=list(i.namespace),
        fields=[record_json(f, "pointer old new") for f in i.fields],
        problems=problems_json(i.problems),
    )


def _thread_json(t: ThreadReport) -> dict[str, Any]:
    return record_json(
        t,
        "thread_id status unsettled namespaces problems",
        namespaces=[
            record_json(
                n,
                "checkpoint_ns=ns added removed continues=current heads lines next",
                heads=[record_json(h, "checkpoint_id settled") for h in n.heads],
                lines=[_line_json(line) for line in n.lines],
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
                "name kind status packet input writes interrupts answered answer mismatch",
                writes=[{"channel": c, "value": v} for c, v in t.writes],
            )
            for t in nxt.tasks
        ],
    }


def _line_json(line: Line) -> dict[str, Any]:
    return record_json(
        line,
        "head start continues settled checkpoints events channels steps",
        events=[_event_json(e) for e in line.events],
        channels=[record_json(c, "channel kind old new") for c in line.channels],
        steps=[
            record_json(
                s,
                "checkpoint_id parent metadata bookkeeping internal writes",
                writes=[{"task_id": i, "task_path": p, "channel": c, "value": v} for i, p, c, v in s.writes],
            )
            for s in line.steps
        ],
    )


def _event_json(e: Event) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": e.kind, "checkpoint_id": e.checkpoint_id, "step": e.step}
    if e.role:
        out["role"] = e.role
    if e.text:
        out["text"] = e.text
    if e.calls:
        out["tool_calls"] = [{"name": n, "args": a} for n, a in e.calls]
    if e.name:
        out["name"] = e.name
    if e.status:
        out["status"] = e.status
    if e.invalid:
        out["invalid_tool_calls"] = [{"name": n, "args": a} for n, a in e.invalid]
    if e.kind in ("interrupt", "resume", "error", "choice", "merge", "metadata") or e.role in (
        "value",
        "refused",
    ):
        out["value"] = e.tree
    elif e.kind in ("message", "edited", "removed"):
        # what the text does not show (the message's id, its provider's metadata ...): summed up
        fields = e.tree.get("$fields") if isinstance(e.tree, dict) else None
        if isinstance(fields, dict) and fields.get("id") is not None:
            out["id"] = fields["id"]
        out["digest"] = short_digest(e.tree)
    return out


def _line_title(n: NamespaceReport, line: Line, many: bool, code: Any = str) -> str:
    """What a line is, in words; ``code`` marks the ids (Markdown makes them inert)."""
    turns = len(turns_of(line.events))
    title = f"{turns} new turn{'s' if turns != 1 else ''}, {len(line.checkpoints)} checkpoints"
    if many:
        state = "continues" if line.continues else ("settled" if line.settled else "unsettled")
        title = f"head {code(line.head)} ({state}): {title}"
    if line.start:
        title += f", continuing {code(line.start)}"
    return title


# ----------------------------------------------------------------------------
# terminal
# ----------------------------------------------------------------------------
#: how each kind of flag is named, first on its line
FLAG_LABEL = {
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
    if not flagged:
        return f"{said}, none flagged"
    return f"{said}, {flagged} flagged"


def _flag_title(report: Report) -> str:
    n = len(report.flags)
    return f"{n} flagged: the app would load or run what this review does not show"


def report_lines(report: Report) -> list[Text]:
    out = [
        Text.assemble(
            ("review ", "bold"),
            (report.range.spec, "bold"),
            (f"  {report.range.base[:12]} .. {report.range.head_label[:12]}", "dim"),
            (f"  root {report.root}", "dim"),
        )
    ]
    if report.files:
        out.append(Text(_files_line(report), style="dim"))
    if report.flags:
        out.append(Text(_flag_title(report), style="bold red"))
        for flagged in report.flags:
            where = f"{flagged.path}: " if flagged.path else ""
            label = FLAG_LABEL.get(flagged.kind, flagged.kind)
            out.append(Text(f"  {label}: {where}{flagged.message}", style="red"))
    if not report.threads and not report.items and not report.files:
        out.append(Text("no thread changed", style="dim"))
    for t in report.threads:
        out.append(Text())
        flag = ", heads to settle" if t.unsettled else ""
        out.append(Text.assemble(("thread ", "dim"), (t.thread_id, "bold"), (f" ({t.status}{flag})", "dim")))
        for n in t.namespaces:
            where = f"  namespace {n.ns}" if n.ns else ""
            counts = f"  +{len(n.added)} checkpoints" + (f", -{len(n.removed)}" if n.removed else "")
            out.append(Text(where + counts, style="dim"))
            for line in n.lines:
                out.append(Text("  " + _line_title(n, line, len(n.lines) > 1), style="cyan"))
                for number, turn in enumerate(turns_of(line.events), 1):
                    out.append(Text(f"    turn {number}", style="bold"))
                    for e in turn:
                        label, text, _ = event_parts(e)
                        out.append(Text.assemble(("      " + label + ": ", "bold"), text))
                for c in line.channels:
                    change = f"    {c.channel}: {compact(c.old)} -> {compact(c.new)}"
                    out.append(Text(change, style="yellow"))
            if n.next is not None:
                out.append(
                    Text(f"  next, when the thread continues from {n.next.checkpoint_id}:", style="cyan")
                )
                for task in n.next.tasks:
                    for label, text in task_lines(task):
                        style = "red" if label.startswith("✗") else ""
                        out.append(Text.assemble(("    " + label + ": ", "bold " + style), (text, style)))
        for p in t.problems:
            out.append(Text(f"  {p.path}: {p.pointer}: {p.message}", style="red"))
    for i in report.items:
        out.append(Text())
        out.append(
            Text.assemble(
                ("store item ", "dim"),
                (f"{'.'.join(i.namespace)} {i.key}", "bold"),
                (f" ({i.status})", "dim"),
            )
        )
        for f in i.fields:
            out.append(Text(f"    {f.pointer}: {compact(f.old)} -> {compact(f.new)}", style="yellow"))
        for p in i.problems:
            out.append(Text(f"  {p.path}: {p.pointer}: {p.message}", style="red"))
    return out


# ----------------------------------------------------------------------------
# Markdown
# ----------------------------------------------------------------------------
def report_markdown(report: Report) -> str:
    from .markdown import _fence, _md, md_event

    head = _md(report.range.head[:12], code=True) if report.range.head else "the work tree"
    parts = [
        f"## State review: {_md(report.range.base[:12], code=True)} .. {head}",
        "",
        f"Root {_md(report.root, code=True)}; {len(report.threads)} thread"
        f"{'s' if len(report.threads) != 1 else ''} changed; {_files_line(report)}.",
        "",
    ]
    if report.flags:
        parts += [f"**⚠ {_md(_flag_title(report))}**", ""]
        for flagged in report.flags:
            where = f"{_md(flagged.path, code=True)}: " if flagged.path else ""
            label = FLAG_LABEL.get(flagged.kind, flagged.kind)
            parts.append(f"- **{label}**: {where}{_md(flagged.message, code=True)}")
        parts.append("")
    for t in report.threads:
        flag = " — **heads to settle**" if t.unsettled else ""
        parts += [f"### Thread {_md(t.thread_id, code=True)} ({t.status}){flag}", ""]
        for n in t.namespaces:
            if n.ns:
                parts += [f"Namespace {_md(n.ns, code=True)}", ""]
            if n.removed:
                parts += [f"{len(n.removed)} checkpoint{'s' if len(n.removed) != 1 else ''} removed.", ""]
            for line in n.lines:
                parts += [_line_title(n, line, len(n.lines) > 1, lambda i: _md(i, code=True)), ""]
                for number, turn in enumerate(turns_of(line.events), 1):
                    parts.append(f"{number}. " + md_event(turn[0]))
                    parts += [f"   - {md_event(e)}" for e in turn[1:]]
                    folded = [(e, event_parts(e)[2]) for e in turn if event_parts(e)[2]]
                    for e, whole in folded:
                        label = event_parts(e)[0]
                        parts += [
                            "",
                            f"   <details><summary>{_md(label, html=True)} (full text)</summary>",
                            "",
                            _indent(_fence(whole), "   "),
                            "",
                            "   </details>",
                        ]
                parts.append("")
                for c in line.channels:
                    old, new = _md(compact(c.old), code=True), _md(compact(c.new), code=True)
                    parts.append(f"- {_md(c.channel, code=True)}: {old} → {new}")
                if line.channels:
                    parts.append("")
            if n.next is not None:
                parts += [f"Next, when the thread continues from {_md(n.next.checkpoint_id, code=True)}:", ""]
                for task in n.next.tasks:
                    for label, text in task_lines(task):
                        indent = "  " if label.startswith("  ") else ""
                        parts.append(f"{indent}- **{_md(label.strip())}**: {_md(text, code=True)}")
                parts.append("")
            if n.heads and sum(not h.settled for h in n.heads) > 1:
                ids = ", ".join(_md(h.checkpoint_id, code=True) for h in n.heads if not h.settled)
                where = f" --ns {n.ns}" if n.ns else ""
                command = _md(f"langgraph-repo heads {t.thread_id}{where} --choose ID", code=True)
                current = _md(n.current or "", code=True)
                settle = f"Settle with {command} (or --merge)."
                parts += [f"Heads nobody chose: {ids}; {current} continues. {settle}", ""]
        if t.problems:
            parts += ["Validation problems:", ""]
            for p in t.problems:
                parts.append(f"- {_md(p.path, code=True)} {_md(p.pointer, code=True)}: {_md(p.message)}")
            parts.append("")
    if report.items:
        parts += [f"### Store: {len(report.items)} item{'s' if len(report.items) != 1 else ''} changed", ""]
        for i in report.items:
            parts.append(f"- {_md('.'.join(i.namespace), code=True)} {_md(i.key, code=True)} ({i.status})")
            for f in i.fields:
                old, new = _md(compact(f.old), code=True), _md(compact(f.new), code=True)
                parts.append(f"  - {_md(f.pointer, code=True)}: {old} → {new}")
            for p in i.problems:
                parts.append(f"  - {_md(p.path, code=True)} {_md(p.pointer, code=True)}: {_md(p.message)}")
        parts.append("")
    parts += [MARKDOWN_END, ""]
    return "\n".join(parts)


def _indent(block: str, by: str) -> str:
    return "\n".join(by + line if line else line for line in block.split("\n"))
