"""Rich text and tables for the inspect and maintenance commands (show, diff, tasks, prune)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.table import Table

from ..core.format.messages import ERROR_MARK
from ..core.plans import PrunePlan, plan_bytes
from ..readmodel.diff import ChannelChange
from ..readmodel.reader import Reader, StateView
from ..readmodel.tasks import ERROR, InterruptView, Raw, TaskView
from . import present
from .output import (
    Text,
    print_table,
    relative_to_root,
)


def _header(out: Console, view: StateView) -> None:
    line = Text.assemble(
        ("thread ", "dim"),
        (view.thread_id, "bold"),
        *((("  namespace ", "dim"), (view.ns, "bold")) if view.ns else ()),
        ("  checkpoint ", "dim"),
        (view.checkpoint_id, "bold"),
    )
    out.print(line)
    step = "?" if view.step is None else str(view.step)
    out.print(
        Text.assemble(
            ("step ", "dim"),
            step,
            ("  source ", "dim"),
            view.source or "?",
            ("  at ", "dim"),
            present.short_time(view.ts) + " UTC",
            ("  parent ", "dim"),
            view.parent_id or "-",
        )
    )
    out.print(Text(relative_to_root(view.path), style="dim"))


def _section(out: Console, title: str) -> None:
    out.print()
    out.print(Text(title, style="bold underline"))


def _value_block(out: Console, name: str, value: Any) -> None:
    body = present.lines(value)
    style = "yellow" if isinstance(value, Raw) else ""
    nested = isinstance(value, (list, tuple, dict)) and bool(value)
    if len(body) == 1 and not nested and not isinstance(value, Raw):
        out.print(Text.assemble((name, "bold cyan"), ": ", (body[0], style)))
        return
    out.print(Text.assemble((name, "bold cyan"), ":"))
    for line in body:
        out.print(Text("  " + line, style=style))


def _tasks_table(view: StateView) -> Table:
    table = Table(box=None, header_style="bold", pad_edge=False)
    for col in ("task", "id", "status", "on resume", "saved writes"):
        table.add_column(col, no_wrap=col in ("id", "status"))
    for t in view.tasks:
        table.add_row(*_task_cells(t))
    return table


_STATUS_STYLE = {
    "done": "green",
    "failed": "red",
    "interrupted": "yellow",
    "not started": "",
    "may have run": "bold red",
}


def _task_cells(t: TaskView) -> list[Text | str]:
    if t.status == "done":
        resume = "kept: its writes are saved"
    elif t.status == "failed":
        resume = "runs again"
    elif t.status == "interrupted":
        resume = "runs again from the top" + (" (answer saved)" if t.answered else ", waits for an answer")
    elif t.may_have_run:
        resume = "runs again: check its side effects first"
    else:
        resume = "runs"
    writes = ", ".join(dict.fromkeys(w.channel for w in t.writes)) or "-"
    if t.error is not None:
        writes = f"{writes} ({ERROR_MARK}: {present.inline(t.error, 60)})"
    name = t.name + ("" if t.derived else " (from writes)")
    status = Text(t.status, style=_STATUS_STYLE[t.status])
    return [
        Text(name, style="bold"),
        t.id or "?",
        status,
        Text(resume, style="red" if t.may_have_run else ""),
        writes,
    ]


def _interrupt_block(out: Console, i: InterruptView) -> None:
    out.print(Text.assemble((i.task_name, "bold yellow"), ("  interrupt ", "dim"), i.id or "?"))
    for line in present.lines(i.value):
        out.print(Text("  " + line))


def print_change(out: Console, c: ChannelChange, shown: Callable[[Any], Any] = lambda tree: tree) -> None:
    """One channel of ``diff``; ``shown`` turns a stored tree into what a person reads (the
    reader's ``readable``, so a value reads as it does in ``show``)."""

    def line(mark: str, text: str, style: str) -> None:
        first, *rest = text.splitlines() or [""]
        out.print(Text(f"  {mark} {first}", style=style))
        for more in rest:
            out.print(Text(f"    {more}", style=style))

    if c.kind == "list":
        what = []
        if c.added:
            what.append(f"{len(c.added)} added")
        if c.removed:
            what.append(f"{len(c.removed)} removed")
        out.print(Text.assemble((c.channel, "bold cyan"), f": {', '.join(what)}"))
        for i, v in c.removed:
            line("-", f"[{i}] {present.inline(shown(v), present.FOLD_CHARS)}", "red")
        for i, v in c.added:
            line("+", f"[{i}] {present.inline(shown(v), present.FOLD_CHARS)}", "green")
    elif c.kind == "keys":
        out.print(Text.assemble((c.channel, "bold cyan"), ": keys changed"))
        for k, v in c.keys_removed.items():
            line("-", f"{k}: {present.inline(shown(v))}", "red")
        for k, (a, b) in c.keys_changed.items():
            line("~", f"{k}: {present.inline(shown(a))} → {present.inline(shown(b))}", "yellow")
        for k, v in c.keys_added.items():
            line("+", f"{k}: {present.inline(shown(v))}", "green")
    else:
        label = {"added": "set", "removed": "removed", "changed": "changed"}[c.kind]
        out.print(Text.assemble((c.channel, "bold cyan"), f": {label}"))
        if c.kind in ("removed", "changed"):
            line("-", "\n".join(present.lines(shown(c.old))), "red")
        if c.kind in ("added", "changed"):
            line("+", "\n".join(present.lines(shown(c.new))), "green")


def print_not_revived(out: Console, reader: Reader) -> None:
    """After values are shown: the types left as stored and how to allow them."""
    note = present.not_revived_note(reader.not_revived, reader.fix)
    if note:
        out.print()
    for text in note:
        out.print(Text(text, style="yellow"))


def _print_stored_json(out: Console, view: StateView, channels: list[str]) -> None:
    """``show``'s stored JSON of the values it could not revive: what a hand edit changes."""
    raw = [c for c in channels if isinstance(view.values.get(c), Raw)]
    if not raw:
        return
    _section(out, "Stored JSON of the values not revived")
    for c in raw:
        out.print(Text(c, style="bold cyan"))
        for text in present.json_lines(view.values[c].tree):
            out.print(Text("  " + text, style="dim"))


def _count(items: list[Any], one: str, many: str) -> str:
    return f"{len(items)} {one if len(items) == 1 else many}"


def verb_write(verb: str) -> str:
    """How a plan's summary says it writes, in the mood of ``verb`` (removes, would remove)."""
    return "would write" if verb.startswith("would") else "writes"


def print_plan(out: Console, plan: PrunePlan, verb: str) -> None:
    if plan.skipped:
        out.print(Text.assemble((f"thread {plan.thread_id}", "bold"), f": kept whole, {plan.skipped}"))
        return
    if not plan.doomed:
        out.print(Text.assemble((f"thread {plan.thread_id}", "bold"), ": nothing to prune"))
        return
    count = sum(len(ids) for ids in plan.doomed.values())
    gone, written = plan_bytes(plan)
    what = f"{count} checkpoint{'s' if count != 1 else ''} and {len(plan.removed)} files ({gone:,} bytes)"
    if plan.expired is not None:  # retention's delete: the thread's folder goes, every file with it
        head = f"{verb.replace('remove', 'delete')} the whole thread ({plan.expired}): {what}"
    else:
        writes = f"; {verb_write(verb)} {len(plan.rescued)} first ({written:,} bytes)" if plan.rescued else ""
        head = f"{verb} {what}{writes}"
    out.print(Text.assemble((f"thread {plan.thread_id}", "bold"), f": {head}"))
    for p in plan.rescued:
        out.print(Text(f"  + {relative_to_root(p)}  (value still used, written first)", style="green"))
    for p in plan.removed:
        out.print(Text(f"  - {relative_to_root(p)}", style="red"))


def _writes_table(view: StateView) -> Table:
    """The pending writes of ``show``: task, channel, value."""
    names = {t.id: t.name for t in view.tasks}
    table = Table(box=None, header_style="bold", pad_edge=False)
    for col in ("task", "channel", "value"):
        table.add_column(col, no_wrap=col != "value")
    for w in view.writes:
        task = names.get(w.task_id, "(input)" if w.task_id.startswith("00000000-") else "?")
        if w.channel == "__interrupt__":
            value = "; ".join(
                present.inline(i.value, 80) for t in view.tasks for i in t.interrupts if t.id == w.task_id
            )
        else:
            value = present.inline(w.value, 100)
            if w.channel == ERROR:
                value = f"{ERROR_MARK}: {value}"
        table.add_row(
            f"{task} {w.task_id[:8]}",
            w.channel,
            Text(value, style="yellow" if isinstance(w.value, Raw) else ""),
        )
    return table


def print_recovery(out: Console, thread: str, view: StateView) -> None:
    """``tasks``' recovery view of one namespace: its tasks and what resuming does."""
    next_step = "?" if view.step is None else str(view.step + 1)
    out.print(
        Text.assemble(
            ("thread ", "dim"),
            (thread, "bold"),
            *((("  namespace ", "dim"), (view.ns, "bold")) if view.ns else ()),
            ("  checkpoint ", "dim"),
            view.checkpoint_id,
            ("  next step ", "dim"),
            next_step,
        )
    )
    if not view.tasks:
        out.print(Text("nothing to run: the graph has finished at this checkpoint", style="dim"))
        return
    print_table(out, _tasks_table(view))
    for t in view.tasks:
        if t.status == "failed":
            failed = f"  {t.name} {ERROR_MARK}: failed with {present.inline(t.error, 200)}"
            out.print(Text(failed, style="red"))
    again = [t for t in view.tasks if t.runs_on_resume]
    kept = [t for t in view.tasks if not t.runs_on_resume]
    out.print(
        Text(
            f"on resume: {_count(again, 'task runs', 'tasks run')} "
            f"({', '.join(t.name for t in again) or 'none'}), "
            f"{_count(kept, 'keeps its', 'keep their')} saved writes"
        )
    )
    if any(t.status == "interrupted" for t in view.tasks):
        out.print(
            Text(
                "  an interrupted node runs again from its first line: code before interrupt() repeats",
                style="yellow",
            )
        )
    for t in view.tasks:
        if t.may_have_run:
            out.print(
                Text(
                    f"  ! {t.name} ({t.id}) has no saved writes but its step had started: "
                    "it may have run and had side effects (calls, files, messages) before "
                    "the process stopped. Check them before resuming.",
                    style="bold red",
                )
            )
