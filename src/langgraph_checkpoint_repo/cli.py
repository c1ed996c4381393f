"""``langgraph-repo``: inspect, check and tidy the state RepoSaver keeps in a repository.

Commands are typer functions; what they show is worked out in ``review`` (state, tasks,
history, diffs) and ``checks`` (validate, fsck, prune plans), and drawn here with rich.
Every read command can print JSON instead (``--json``), made from the same data.

Exit codes (docs/cli.md): 0 ok, 1 problems found, 2 usage error or malformed/ambiguous
id, 3 not found, 4 a file that cannot be read as its kind, 5 refused or not confirmed,
6 any other error (I/O, lock timeout). Errors are one line on stderr, never a traceback.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from copy import copy as _shallow_copy
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console, ConsoleOptions, ConsoleRenderable, RenderableType, RenderHook
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.segment import Segment
from rich.table import Table
from rich.text import Span, Text
from typer.core import TyperGroup

from . import present
from ._compat import set_table_cells, table_cells
from .checks import Finding, PrunePlan, Validator, count_files, fsck, plan_prune, repair, run_prune
from .checks import thread_folders_for as _thread_folders_for
from .errors import (
    CONTROL_CODES,
    FileFormatError,
    LockTimeoutError,
    RepoCheckpointError,
    UnrevivableValueError,
    escape_controls,
)
from .layout import find_default_root, holds_state
from .redaction import mask_message
from .review import (
    BadInputError,
    ChannelChange,
    HistoryRow,
    InterruptView,
    NotFoundError,
    Raw,
    Reader,
    StateView,
    TaskView,
    ThreadSummary,
    check_thread_id,
    diff_trees,
    is_internal,
    parse_age,
    parse_date,
    parse_ts,
)

OK, PROBLEMS, USAGE, NOT_FOUND, BAD_FILE, REFUSED, FAILED = 0, 1, 2, 3, 4, 5, 6
PROG = "langgraph-repo"
PIPE_WIDTH = 160  # width of output that goes to a file or a pipe (no terminal to ask)


class CliError(Exception):
    """An error to report as one line with its exit code."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def screen(text: str, keep: str = "\t") -> str:
    """Text as it may reach a person: secrets masked (also inside encoded path segments),
    control characters shown as ``\\xhh`` so they never act on a terminal."""
    return escape_controls(mask_message(text), keep=keep)


def _screen_text(text: Text) -> Text:
    """A rich Text screened piece by piece, so each piece keeps its style."""
    plain = text.plain
    if screen(plain) == plain:
        return text
    bounds = (i for span in text.spans for i in (span.start, span.end) if i < len(plain))
    cuts = sorted({0, len(plain), *bounds})
    out = Text(
        style=text.style,
        justify=text.justify,
        overflow=text.overflow,
        no_wrap=text.no_wrap,
        end=text.end,
        tab_size=text.tab_size,
    )
    for start, end in itertools.pairwise(cuts):
        piece = screen(plain[start:end])
        styles = [span.style for span in text.spans if span.start <= start and span.end >= end]
        out.append_text(Text(piece, spans=[Span(0, len(piece), style) for style in styles]))
    return out


def _screen_renderable(renderable: Any) -> Any:
    """Screen what ``print`` is given before rich measures it (a table sizes its columns
    from its cells: screened late, an escaped id would be cut to fit)."""
    if isinstance(renderable, str):
        return screen(renderable)
    if isinstance(renderable, Text):
        return _screen_text(renderable)
    if isinstance(renderable, Table):
        for column in renderable.columns:
            column.header = _screen_renderable(column.header)
            set_table_cells(column, [_screen_renderable(cell) for cell in table_cells(column)])
    return renderable


class _ScreenHook(RenderHook):
    def process_renderables(self, renderables: list[ConsoleRenderable]) -> list[ConsoleRenderable]:
        return [_screen_renderable(r) for r in renderables]


class SafeConsole(Console):
    """The one way out to the terminal: every string and Text, also in a table cell or a
    progress bar, is screened as it is rendered, so a new command is covered by using it.

    Markup is off in every console here; a newline inside one piece of text is escaped too
    (output that is meant to take several lines is printed line by line).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.push_render_hook(_ScreenHook())

    def render_str(self, text: str, **kwargs: Any) -> Text:
        return _screen_text(super().render_str(text, **kwargs))

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        if isinstance(renderable, Text):
            renderable = _screen_text(renderable)
        return super().render(renderable, options)


def _err_console() -> Console:
    """Messages on stderr: never wrapped, so an error stays one line."""
    return SafeConsole(stderr=True, highlight=False, markup=False, emoji=False, soft_wrap=True)


def _fail(message: str, code: int) -> NoReturn:
    _err_console().print(Text.assemble((f"{PROG}: error: ", "bold red"), message.replace("\n", " ")))
    raise typer.Exit(code)


class _Group(TyperGroup):
    """Turns every expected error into one line on stderr and its exit code."""

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        """Every command also takes the global options after its name (``threads --root X``).

        They are copies of the group's own options that set what those set: a root given
        after the command wins over one given before it and over LANGGRAPH_REPO_ROOT.
        """
        command = super().get_command(ctx, cmd_name)
        if command is None or any(getattr(p, "_global_copy", False) for p in command.params):
            return command
        for param in self.params:
            if param.name not in ("root", "version"):
                continue
            extra = _shallow_copy(param)
            extra.expose_value = False
            extra.envvar = None
            if param.name == "root":
                extra.callback = _root_after_command
            extra._global_copy = True  # type: ignore[attr-defined]
            command.params.append(extra)
        return command

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except CliError as exc:
            _fail(str(exc), exc.code)
        except NotFoundError as exc:
            _fail(str(exc), NOT_FOUND)
        except BadInputError as exc:
            _fail(str(exc), USAGE)
        except (FileFormatError, UnrevivableValueError) as exc:
            _fail(str(exc), BAD_FILE)
        except LockTimeoutError as exc:
            _fail(str(exc), FAILED)
        except RepoCheckpointError as exc:
            _fail(str(exc), FAILED)
        except BrokenPipeError:
            # the reader of our output went away (``| head``): stop quietly
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            raise typer.Exit(OK) from None
        except OSError as exc:
            where = f"{exc.filename}: " if exc.filename else ""
            _fail(f"{where}{exc.strerror or exc}", FAILED)


app = typer.Typer(
    cls=_Group,
    name=PROG,
    help="Inspect, check and tidy LangGraph state kept by RepoSaver in a repository.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


@dataclass
class Settings:
    root: Path
    out: Console
    err: Console


def _out_console() -> Console:
    """Colour and the terminal's width on a terminal; plain and wide into a pipe or file."""
    console = SafeConsole(highlight=False, markup=False, emoji=False)
    if not console.is_terminal:
        width = int(os.environ.get("COLUMNS", "0") or 0) or PIPE_WIDTH
        console = SafeConsole(highlight=False, markup=False, emoji=False, width=width, soft_wrap=True)
    return console


def _show_version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        sys.stdout.write(f"{PROG} {version('langgraph-checkpoint-repo')}\n")
        raise typer.Exit(OK)


def _root_after_command(ctx: Any, param: Any, value: Any) -> None:
    """``--root`` given after the command: replaces the root the group worked out."""
    if value is not None:
        settings = ctx.obj
        assert isinstance(settings, Settings)
        settings.root = Path(value).absolute()


@app.callback()
def _main(
    ctx: typer.Context,
    root: Annotated[
        Path | None,
        typer.Option(
            "--root",
            help="State folder (default: .langgraph at the top of the git work tree, as RepoSaver()).",
            envvar="LANGGRAPH_REPO_ROOT",
            show_default=False,
        ),
    ] = None,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_show_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Inspect, check and tidy LangGraph state kept by RepoSaver in a repository."""
    path = (root if root is not None else find_default_root()).absolute()
    ctx.obj = Settings(path, _out_console(), _err_console())


def _check_root(root: Path, *, creating: bool = False) -> None:
    """Refuse a root that holds no RepoSaver state (docs/cli.md, "Root"), so a command run at
    the wrong folder (the repository top) fails instead of finding nothing and passing.

    ``creating`` (import): a folder that does not exist yet or is empty is fine too.
    """
    if not root.exists():
        if creating:
            return
        raise NotFoundError(f"root {root} does not exist")
    if not root.is_dir():
        raise BadInputError(
            f"root {root} is a file, not a folder: --root takes the folder RepoSaver(root) was given"
        )
    if holds_state(root):
        return
    names = sorted(os.listdir(root))
    if creating and not names:
        return
    hint = root / ".langgraph"
    if hint.is_dir():
        raise NotFoundError(f"no RepoSaver state under {root}; did you mean {hint}?")
    holds = (
        "it is empty"
        if not names
        else "it holds " + ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    )
    raise NotFoundError(
        f"no RepoSaver state under {root}: a RepoSaver root holds a threads/ folder or the "
        f".gitignore RepoSaver writes there; {holds}"
    )


def _settings(ctx: typer.Context) -> Settings:
    settings = ctx.obj
    assert isinstance(settings, Settings)
    return settings


def _reader(ctx: typer.Context) -> Reader:
    _check_root(_settings(ctx).root)
    return Reader(_settings(ctx).root)


def _print_table(out: Console, table: Table) -> None:
    """A table; into a pipe or file without the padding rich puts at the end of each line."""
    if out.is_terminal:
        out.print(table)
        return
    with out.capture() as captured:
        out.print(table)
    out.file.write("\n".join(line.rstrip() for line in captured.get().splitlines()) + "\n")


#: what json.dumps leaves raw (it escapes only C0): DEL, C1, bidi controls, lone surrogates
_JSON_ESCAPES = {c: f"\\u{c:04x}" for c in CONTROL_CODES if c >= 0x7F}


def _print_json(data: Any) -> None:
    """JSON for scripts: secrets masked like every other output, and every control character
    a JSON escape, so the document reads back the same and never acts on a terminal."""
    text = json.dumps(_masked_tree(data), indent=2, ensure_ascii=False)
    sys.stdout.write(text.translate(_JSON_ESCAPES) + "\n")


def _masked_tree(tree: Any) -> Any:
    """``tree`` with ``mask_message`` applied to every string, keys included (kept distinct)."""
    if isinstance(tree, str):
        return mask_message(tree)
    if isinstance(tree, (list, tuple)):
        return [_masked_tree(x) for x in tree]
    if isinstance(tree, dict):
        out: dict[Any, Any] = {}
        for key, value in tree.items():
            name = mask_message(key) if isinstance(key, str) else key
            base, n = name, 2
            while name in out:
                name, n = f"{base}#{n}", n + 1
            out[name] = _masked_tree(value)
        return out
    return tree


def _rel(path: Path | str) -> str:
    """A path as short as it can be said: relative to the current folder when inside it."""
    text = str(path)
    cwd = os.getcwd()
    if text.startswith(cwd + os.sep):
        return text[len(cwd) + 1 :]
    return text


@contextmanager
def _progress(settings: Settings, label: str, total: int) -> Iterator[Any]:
    """A progress bar on stderr when it is a terminal; nothing otherwise."""
    if not settings.err.is_terminal:
        yield None
        return
    columns = (
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=settings.err, transient=True) as progress:
        task = progress.add_task(label, total=total)
        yield lambda n: progress.advance(task, n)


JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts instead of text.")]
NsOpt = Annotated[
    str,
    typer.Option(
        "--ns", help="Checkpoint namespace (a subgraph), or a node name that names one. Default: the root."
    ),
]
YesOpt = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]


# ----------------------------------------------------------------------
# JSON shapes
# ----------------------------------------------------------------------
def _interrupt_json(i: InterruptView) -> dict[str, Any]:
    return {"node": i.task_name, "task_id": i.task_id, "interrupt_id": i.id, "value": i.tree}


def _task_json(t: TaskView, ns: str) -> dict[str, Any]:
    error = next((w.tree for w in t.writes if w.channel == "__error__"), None)
    return {
        "name": t.name,
        "id": t.id,
        "checkpoint_ns": ns,
        "kind": t.kind,
        "status": t.status,
        "runs_on_resume": t.runs_on_resume,
        "may_have_run": t.may_have_run,
        "answered": t.answered,
        "derived_from_checkpoint": t.derived,
        "error": error,
        "interrupts": [_interrupt_json(i) for i in t.interrupts],
        "writes": [w.channel for w in t.writes],
    }


def _summary_json(s: ThreadSummary) -> dict[str, Any]:
    return {
        "thread_id": s.thread_id,
        "namespaces": s.namespaces,
        "checkpoints": s.checkpoints,
        "latest_checkpoint_id": s.latest_id,
        "latest_step": s.latest_step,
        "last_updated": s.last_updated,
        "forks": s.forks,
        "next": s.next,
        "waiting": [_interrupt_json(i) for i in s.waiting],
    }


# ----------------------------------------------------------------------
# threads
# ----------------------------------------------------------------------
def _meta_pairs(pairs: list[str]) -> list[tuple[str, str]]:
    out = []
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise BadInputError(f"bad --meta {pair!r}: use key=value")
        out.append((key, value))
    return out


def _meta_matches(tree: Any, raw: str) -> bool:
    if tree == raw:
        return True
    try:
        return bool(json.loads(raw) == tree)
    except ValueError:
        return False


@app.command()
def threads(
    ctx: typer.Context,
    waiting_at: Annotated[
        str | None,
        typer.Option(
            "--waiting-at", metavar="NODE", help="Only threads with a next task or interrupt at NODE."
        ),
    ] = None,
    has: Annotated[
        str | None, typer.Option("--has", metavar="KEY", help="Only threads whose state holds channel KEY.")
    ] = None,
    meta: Annotated[
        list[str] | None,
        typer.Option(
            "--meta", metavar="KEY=VALUE", help="Only threads with a checkpoint whose metadata has KEY=VALUE."
        ),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option("--since", metavar="DATE", help="Only threads updated on or after DATE (ISO)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """One row per thread: namespaces, checkpoints, latest step, last update, forks, waiting interrupts."""
    settings = _settings(ctx)
    reader = _reader(ctx)
    pairs = _meta_pairs(meta or [])
    after = parse_date(since) if since else None
    rows: list[ThreadSummary] = []
    for tid in reader.thread_ids():
        try:
            s = reader.summary(tid)
        except NotFoundError:
            continue  # a folder without checkpoints (fsck reports it)
        root_ns = s.namespaces[0]
        if (
            waiting_at is not None
            and waiting_at not in s.next
            and all(i.task_name != waiting_at for i in s.waiting)
        ):
            continue
        if has is not None and has not in s.live[root_ns].trees:
            continue
        if pairs and not any(
            all(k in md and _meta_matches(md[k], v) for k, v in pairs)
            for md in reader.metadata_trees(tid, root_ns)
        ):
            continue
        if after is not None:
            when = parse_ts(s.last_updated)
            if when is None or when < after:
                continue
        rows.append(s)
    if as_json:
        _print_json([_summary_json(s) for s in rows])
        return
    if not rows:
        settings.err.print(
            f"no threads under {_rel(reader.root)}"
            + (" match the filters" if (waiting_at or has or pairs or after) else "")
        )
        return
    table = Table(box=None, header_style="bold", pad_edge=False)
    for col in (
        "thread",
        "namespaces",
        "checkpoints",
        "step",
        "last updated (UTC)",
        "forks",
        "next",
        "waiting",
    ):
        table.add_column(
            col, justify="right" if col in ("namespaces", "checkpoints", "step", "forks") else "left"
        )
    for s in rows:
        waiting = ", ".join(f"{i.task_name}: {present.inline(i.value, 40)}" for i in s.waiting)
        table.add_row(
            Text(s.thread_id, style="bold"),
            str(len(s.namespaces)),
            str(s.checkpoints),
            "" if s.latest_step is None else str(s.latest_step),
            present.short_time(s.last_updated),
            str(s.forks),
            ", ".join(s.next) or "-",
            Text(waiting or "-", style="yellow" if waiting else ""),
        )
    _print_table(settings.out, table)


# ----------------------------------------------------------------------
# history
# ----------------------------------------------------------------------
@app.command()
def history(
    ctx: typer.Context,
    thread: Annotated[str, typer.Argument(help="Thread id.")],
    ns: NsOpt = "",
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Show only the newest N.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Checkpoints newest first: step, source, the node(s) whose writes made it, parent; forks as a tree."""
    settings = _settings(ctx)
    reader = _reader(ctx)
    ns = reader.resolve_ns(thread, ns) if ns else reader.namespaces(thread)[0]
    rows = reader.history(thread, ns)
    shown = rows[:limit] if limit else rows
    if as_json:
        _print_json(
            {
                "thread_id": thread,
                "checkpoint_ns": ns,
                "checkpoints": [_history_json(r) for r in shown],
            }
        )
        return
    table = Table(box=None, header_style="bold", pad_edge=False)
    for col in ("", "checkpoint", "step", "source", "written by", "parent", "time (UTC)"):
        table.add_column(col, justify="right" if col == "step" else "left", no_wrap=col != "written by")
    for r in shown:
        parent = r.parent_id or "-"
        if r.parent_id and not r.parent_present:
            parent += " (absent)"
        table.add_row(
            Text(r.graph, style="cyan"),
            Text(r.checkpoint_id, style="bold" if r is rows[0] else ""),
            "" if r.step is None else str(r.step),
            r.source or "",
            ", ".join(r.writers),
            Text(parent, style="dim"),
            present.short_time(r.ts),
        )
    title = f"thread {thread}" + (f" namespace {ns}" if ns else "") + f": {len(rows)} checkpoints"
    leaves = sum(1 for r in rows if not r.children)
    if leaves > 1:
        title += f", {leaves - 1} fork{'s' if leaves > 2 else ''}"
    settings.out.print(Text(title, style="bold"))
    _print_table(settings.out, table)
    if limit and len(rows) > limit:
        settings.out.print(
            Text(f"… {len(rows) - limit} older checkpoints (drop --limit to see them)", style="dim")
        )


def _history_json(r: HistoryRow) -> dict[str, Any]:
    return {
        "checkpoint_id": r.checkpoint_id,
        "step": r.step,
        "source": r.source,
        "ts": r.ts,
        "written_by": r.writers,
        "parent_checkpoint_id": r.parent_id,
        "parent_present": r.parent_present,
        "children": r.children,
    }


# ----------------------------------------------------------------------
# show
# ----------------------------------------------------------------------
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
    out.print(Text(_rel(view.path), style="dim"))


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
        writes = f"{writes} ({present.inline(t.error, 60)})"
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


@app.command()
def show(
    ctx: typer.Context,
    thread: Annotated[str, typer.Argument(help="Thread id.")],
    checkpoint: Annotated[
        str | None,
        typer.Option(
            "--checkpoint", "-c", metavar="ID", help="Checkpoint id or unique prefix (default: latest)."
        ),
    ] = None,
    ns: NsOpt = "",
    show_all: Annotated[bool, typer.Option("--all", help="Also show LangGraph's own channels.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """The state at a checkpoint: values for a person, next tasks, pending writes, interrupts."""
    settings = _settings(ctx)
    reader = _reader(ctx)
    namespaces = reader.namespaces(thread)
    ns = reader.resolve_ns(thread, ns) if ns else namespaces[0]
    cid = reader.resolve(thread, ns, checkpoint)
    view = reader.state(thread, ns, cid)
    channels = [c for c in sorted(view.trees) if show_all or not is_internal(c)]
    subgraphs = [n for n in namespaces if n != ns and n.startswith(f"{ns}|" if ns else "")]
    if as_json:
        _print_json(
            {
                "thread_id": thread,
                "checkpoint_ns": ns,
                "checkpoint_id": cid,
                "parent_checkpoint_id": view.parent_id,
                "step": view.step,
                "source": view.source,
                "ts": view.ts,
                "file": str(view.path),
                "metadata": view.doc["metadata"],
                "values": {c: view.trees[c] for c in channels},
                "not_revived": {
                    c: v.reason for c, v in view.values.items() if isinstance(v, Raw) and c in channels
                },
                "next": [_task_json(t, ns) for t in view.tasks],
                "interrupts": [_interrupt_json(i) for i in view.interrupts],
                "pending_writes": [
                    {"task_id": w.task_id, "task_path": w.task_path, "channel": w.channel, "value": w.tree}
                    for w in view.writes
                ],
                "namespaces": subgraphs,
            }
        )
        return
    out = settings.out
    _header(out, view)
    _section(out, "State")
    if not channels:
        out.print(Text("(empty)", style="dim"))
    for c in channels:
        _value_block(out, c, view.values[c])
    _section(out, "Next tasks")
    if view.tasks:
        _print_table(out, _tasks_table(view))
    else:
        out.print(Text("none: the graph has finished at this checkpoint", style="dim"))
    if view.interrupts:
        _section(out, "Interrupts (waiting for an answer)")
        for i in view.interrupts:
            _interrupt_block(out, i)
    _section(out, "Pending writes")
    if not view.writes:
        out.print(Text("none", style="dim"))
    else:
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
            table.add_row(
                f"{task} {w.task_id[:8]}",
                w.channel,
                Text(value, style="yellow" if isinstance(w.value, Raw) else ""),
            )
        _print_table(out, table)
    if subgraphs:
        _section(out, "Subgraph namespaces (see them with --ns)")
        for n in subgraphs:
            out.print("  " + n)


# ----------------------------------------------------------------------
# diff
# ----------------------------------------------------------------------
def _change_json(c: ChannelChange) -> dict[str, Any]:
    data: dict[str, Any] = {"channel": c.channel, "kind": c.kind}
    if c.kind in ("added", "changed"):
        data["new"] = c.new
    if c.kind in ("removed", "changed"):
        data["old"] = c.old
    if c.kind == "list":
        data["added"] = [{"index": i, "value": v} for i, v in c.added]
        data["removed"] = [{"index": i, "value": v} for i, v in c.removed]
    if c.kind == "keys":
        data["keys_added"] = c.keys_added
        data["keys_changed"] = {k: {"old": a, "new": b} for k, (a, b) in c.keys_changed.items()}
        data["keys_removed"] = c.keys_removed
    return data


def _print_change(out: Console, c: ChannelChange) -> None:
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
            line("-", f"[{i}] {present.inline(v, present.FOLD_CHARS)}", "red")
        for i, v in c.added:
            line("+", f"[{i}] {present.inline(v, present.FOLD_CHARS)}", "green")
    elif c.kind == "keys":
        out.print(Text.assemble((c.channel, "bold cyan"), ": keys changed"))
        for k, v in c.keys_removed.items():
            line("-", f"{k}: {present.inline(v)}", "red")
        for k, (a, b) in c.keys_changed.items():
            line("~", f"{k}: {present.inline(a)} → {present.inline(b)}", "yellow")
        for k, v in c.keys_added.items():
            line("+", f"{k}: {present.inline(v)}", "green")
    else:
        label = {"added": "set", "removed": "removed", "changed": "changed"}[c.kind]
        out.print(Text.assemble((c.channel, "bold cyan"), f": {label}"))
        if c.kind in ("removed", "changed"):
            line("-", "\n".join(present.lines(c.old)), "red")
        if c.kind in ("added", "changed"):
            line("+", "\n".join(present.lines(c.new)), "green")


@app.command()
def diff(
    ctx: typer.Context,
    thread: Annotated[str, typer.Argument(help="Thread id.")],
    from_id: Annotated[
        str | None,
        typer.Option("--from", metavar="ID", help="Older checkpoint (default: the parent of --to)."),
    ] = None,
    to_id: Annotated[
        str | None, typer.Option("--to", metavar="ID", help="Newer checkpoint (default: latest).")
    ] = None,
    ns: NsOpt = "",
    show_all: Annotated[bool, typer.Option("--all", help="Also compare LangGraph's own channels.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """What changed between two checkpoints, by channel: items added or removed, keys changed,
    values removed."""
    settings = _settings(ctx)
    reader = _reader(ctx)
    ns = reader.resolve_ns(thread, ns) if ns else reader.namespaces(thread)[0]
    new_id = reader.resolve(thread, ns, to_id)
    new = reader.state(thread, ns, new_id, revive=False)
    old_id: str | None
    if from_id is not None:
        old_id = reader.resolve(thread, ns, from_id)
    else:
        parent = new.parent_id
        old_id = parent if parent in set(reader.checkpoint_ids(thread, ns)) else None
    old_trees = reader.state(thread, ns, old_id, revive=False).trees if old_id else {}
    changes = diff_trees(old_trees, new.trees, internal=show_all)
    if as_json:
        _print_json(
            {
                "thread_id": thread,
                "checkpoint_ns": ns,
                "from": old_id,
                "to": new_id,
                "changes": [_change_json(c) for c in changes],
            }
        )
        return
    out = settings.out
    out.print(
        Text.assemble(
            ("thread ", "dim"),
            (thread, "bold"),
            ("  from ", "dim"),
            old_id or "(empty state)",
            ("  to ", "dim"),
            new_id,
        )
    )
    if not changes:
        out.print(
            Text(
                "no changes" + ("" if show_all else " (--all compares LangGraph's own channels too)"),
                style="dim",
            )
        )
    for c in changes:
        _print_change(out, c)


# ----------------------------------------------------------------------
# tasks
# ----------------------------------------------------------------------
def _count(items: list[Any], one: str, many: str) -> str:
    return f"{len(items)} {one if len(items) == 1 else many}"


@app.command()
def tasks(
    ctx: typer.Context,
    thread: Annotated[str, typer.Argument(help="Thread id.")],
    ns: NsOpt = "",
    as_json: JsonOpt = False,
) -> None:
    """Recovery view of the latest checkpoint: which tasks are done, failed, interrupted or not started,
    which run again on resume, and which may have run without their writes being saved."""
    settings = _settings(ctx)
    reader = _reader(ctx)
    namespaces = reader.namespaces(thread)
    root_ns = reader.resolve_ns(thread, ns) if ns else namespaces[0]
    live = reader.live_states(thread, namespaces, root_ns)
    views = [reader.state(thread, n, s.checkpoint_id) for n, s in live.items()]
    if as_json:
        _print_json(
            {
                "thread_id": thread,
                "namespaces": [
                    {
                        "checkpoint_ns": v.ns,
                        "checkpoint_id": v.checkpoint_id,
                        "step": v.step,
                        "tasks": [_task_json(t, v.ns) for t in v.tasks],
                    }
                    for v in views
                ],
            }
        )
        return
    out = settings.out
    for n, view in enumerate(views):
        if n:
            out.print()
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
            continue
        _print_table(out, _tasks_table(view))
        for t in view.tasks:
            if t.status == "failed":
                out.print(Text(f"  {t.name}: failed with {present.inline(t.error, 200)}", style="red"))
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


# ----------------------------------------------------------------------
# validate and fsck
# ----------------------------------------------------------------------
@app.command()
def validate(
    ctx: typer.Context,
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Files or folders under the root; the threads holding them are checked. Default: everything."
        ),
    ] = None,
    as_json: JsonOpt = False,
    secrets: Annotated[
        bool,
        typer.Option(
            "--secrets/--no-secrets",
            help="Report strings that look like API keys or tokens (masked); on by default.",
        ),
    ] = True,
) -> None:
    """Check every file against its schema, every reference, names against contents, and
    that no string looks like an API key or token.
    Exit 0 when clean, 1 with one line per problem (file and JSON pointer)."""
    settings = _settings(ctx)
    root = settings.root
    _check_root(root)
    folders: list[Path] | None = None
    if paths:
        folders, outside = _thread_folders_for(root, list(paths))
        if outside:
            raise BadInputError(f"{outside[0]} is not under the root {root}")
    total = count_files(root, folders)
    with _progress(settings, "validating", total) as advance:
        validator = Validator(root, advance, secrets=secrets)
        problems = validator.run(folders)
    if as_json:
        _print_json(
            {
                "ok": not problems,
                "root": str(root),
                "files": validator.files,
                "checkpoints": validator.checkpoints,
                "problems": [{"path": p.path, "pointer": p.pointer, "message": p.message} for p in problems],
            }
        )
    else:
        for p in problems:
            settings.out.print(Text(f"{_rel(p.path)}: {p.pointer}: {p.message}"))
        summary = f"{validator.files} files, {validator.checkpoints} checkpoints"
        if problems:
            settings.err.print(
                Text(f"{len(problems)} problem{'s' if len(problems) != 1 else ''} ({summary})", style="red")
            )
        else:
            settings.err.print(Text(f"ok: {summary} valid", style="green"))
    if problems:
        raise typer.Exit(PROBLEMS)


def _finding_json(f: Finding) -> dict[str, Any]:
    return {
        "kind": f.kind,
        "path": f.path,
        "message": f.message,
        "repairable": f.repairable,
        "repaired": f.repaired,
        "thread_id": f.thread_id,
    }


@app.command(name="fsck")
def fsck_command(
    ctx: typer.Context,
    do_repair: Annotated[
        bool,
        typer.Option(
            "--repair", help="Remove leftover and orphaned files, rebuild derived ones; never a checkpoint."
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Find leftover temp files, orphaned writes, values and large values, and stale derived files."""
    settings = _settings(ctx)
    reader = _reader(ctx)
    total = count_files(reader.root)
    with _progress(settings, "checking", total) as advance:
        findings = fsck(reader, advance)
    if do_repair:
        repair(reader, findings)
    left = [f for f in findings if not f.repaired and f.kind != "foreign"]  # foreign: reported only
    if as_json:
        _print_json(
            {"root": str(reader.root), "findings": [_finding_json(f) for f in findings], "ok": not left}
        )
    else:
        out = settings.out
        for f in findings:
            if f.repaired:
                verb = "rebuilt" if f.kind == "gitignore" else "removed"
                out.print(Text.assemble((verb, "green"), f" {f.kind}: {_rel(f.path)} ({f.message})"))
            elif f.repairable or f.kind != "invalid":
                out.print(Text.assemble((f.kind, "yellow"), f": {_rel(f.path)}: {f.message}"))
            else:
                out.print(
                    Text.assemble(
                        ("invalid", "red"),
                        f": {_rel(f.path)}: {f.message} (fsck never touches it; see validate)",
                    )
                )
        if not findings:
            settings.err.print(Text(f"clean: {total} files under {_rel(reader.root)}", style="green"))
        elif left and not do_repair and any(f.repairable for f in left):
            settings.err.print(
                Text("run with --repair to remove or rebuild what is marked repairable", style="dim")
            )
    if left:
        raise typer.Exit(PROBLEMS)


# ----------------------------------------------------------------------
# render
# ----------------------------------------------------------------------
def _fence(text: str, lang: str = "text") -> str:
    """A fenced block that the text inside cannot close (screened: masked, no control characters)."""
    text = screen(text, keep="\n\t")
    longest = max((len(run) for run in text.split("\n") for run in _backtick_runs(run)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text}\n{fence}"


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


def _md(value: object, *, cell: bool = False, code: bool = False) -> str:
    """A string from the files, made inert for its place in ``render``'s Markdown.

    Screened first (secrets masked, control characters and newlines escaped: one line).
    Inert text (``loop``, a timestamp) stays as it is unless ``code``; anything else is a
    code span whose fence is longer than any backtick run inside, so it cannot close early
    and nothing inside is a link, HTML, a mention or a table cell. In a table ``cell`` a
    ``|`` is escaped as GFM wants (``\\|``); a backslash right before one is shown as ``\\x5c``,
    since GFM would read ``\\\\|`` as a cell boundary.
    """
    text = screen(str(value), keep="")
    if not code and _MD_INERT.fullmatch(text) and "://" not in text and "www." not in text.lower():
        return text
    if cell:
        text = text.replace("\\|", "\\x5c|").replace("|", "\\|")
    fence = "`" * (max((len(run) for run in _backtick_runs(text)), default=0) + 1)
    pad = " " if not text or text[0] in "` " or text[-1] in "` " else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _md_cell(text: str) -> str:
    return _md(text, cell=True, code=True)


def _md_writers(writers: list[str]) -> str:
    return ", ".join(w if w.startswith("(") else _md_cell(w) for w in writers)


def _markdown(summary: ThreadSummary, view: StateView, rows: list[HistoryRow], limit: int) -> str:
    ns_note = f" (namespace {_md(view.ns, code=True)})" if view.ns else ""
    parts = [f"# Thread {_md(summary.thread_id, code=True)}{ns_note}", ""]
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
        f"{_md(view.source, cell=True)}) |",
        f"| Last updated | {_md(present.short_time(view.ts), cell=True)} UTC |",
        f"| Checkpoints | {summary.checkpoints} in {len(summary.namespaces)} namespace"
        f"{'s' if len(summary.namespaces) != 1 else ''} |",
        f"| Forks | {summary.forks} |",
        "",
        "## State",
        "",
    ]
    channels = [c for c in sorted(view.values) if not is_internal(c)]
    if not channels:
        parts += ["_empty_", ""]
    for c in channels:
        parts += [f"**{_md(c, code=True)}**", "", _fence("\n".join(present.lines(view.values[c]))), ""]
    if view.interrupts:
        parts += ["## Waiting for input", ""]
        for i in view.interrupts:
            parts += [
                f"{_md(i.task_name, code=True)} asks (interrupt {_md(i.id, code=True)}):",
                "",
                _fence("\n".join(present.lines(i.value))),
                "",
            ]
    if view.tasks:
        parts += ["## Next tasks", "", "| task | status | on resume |", "|---|---|---|"]
        for t in view.tasks:
            resume = "keeps its saved writes" if not t.runs_on_resume else "runs again"
            if t.may_have_run:
                resume += " (may have run already: check side effects)"
            parts.append(f"| {_md_cell(t.name)} | {t.status} | {resume} |")
        parts.append("")
    parts += [
        "## History",
        "",
        "| step | source | written by | checkpoint | parent |",
        "|---|---|---|---|---|",
    ]
    for r in rows[:limit]:
        parts.append(
            f"| {'' if r.step is None else r.step} | {_md(r.source or '', cell=True)} | "
            f"{_md_writers(r.writers)} | {_md_cell(r.checkpoint_id)} | "
            f"{_md_cell(r.parent_id) if r.parent_id else ''} |"
        )
    if len(rows) > limit:
        parts.append(f"\n_… {len(rows) - limit} older checkpoints not shown._")
    parts += [
        "",
        "_Rendered from the JSON state files by `langgraph-repo render`; the files are authoritative._",
        "",
    ]
    return "\n".join(parts)


@app.command()
def render(
    ctx: typer.Context,
    thread: Annotated[str, typer.Argument(help="Thread id.")],
    fmt: Annotated[str, typer.Option("--format", help="Output format (only markdown).")] = "markdown",
    ns: NsOpt = "",
    limit: Annotated[int, typer.Option("--limit", min=1, help="History rows to include.")] = 20,
    as_json: JsonOpt = False,
) -> None:
    """A Markdown view of a thread for a pull request or a person; made on demand, never stored."""
    if fmt != "markdown":
        raise BadInputError(f"unknown format {fmt!r}: only markdown is supported")
    reader = _reader(ctx)
    namespaces = reader.namespaces(thread)
    ns = reader.resolve_ns(thread, ns) if ns else namespaces[0]
    summary = reader.summary(thread)
    view = reader.state(thread, ns, reader.resolve(thread, ns, None))
    rows = reader.history(thread, ns)
    if as_json:
        _print_json(
            {
                **_summary_json(summary),
                "state": {c: view.trees[c] for c in sorted(view.trees) if not is_internal(c)},
                "next": [_task_json(t, ns) for t in view.tasks],
                "history": [_history_json(r) for r in rows[:limit]],
            }
        )
        return
    sys.stdout.write(screen(_markdown(summary, view, rows, limit), keep="\n\t"))


# ----------------------------------------------------------------------
# delete, copy, prune
# ----------------------------------------------------------------------
def _confirm(settings: Settings, question: str, yes: bool) -> None:
    """Ask before destroying anything; EOF or no is a refusal (exit 5)."""
    if yes:
        return
    try:
        ok = typer.confirm(screen(question), default=False, err=True)
    except typer.Abort:
        ok = False
    if not sys.stdin.isatty():
        settings.err.print()  # the answer came from a pipe: end the prompt's line
    if not ok:
        raise CliError("not confirmed: nothing was changed (pass --yes to skip the question)", REFUSED)


@app.command()
def delete(
    ctx: typer.Context,
    thread: Annotated[str, typer.Argument(help="Thread id.")],
    yes: YesOpt = False,
) -> None:
    """Delete a thread and all its files."""
    settings = _settings(ctx)
    reader = _reader(ctx)
    summary = reader.summary(thread)
    files = reader.thread_files(thread)
    note = ""
    if summary.waiting:
        note = f" It waits on an interrupt at {', '.join(sorted({i.task_name for i in summary.waiting}))}."
    _confirm(
        settings,
        f"Delete thread {thread!r}: {summary.checkpoints} checkpoints, {len(files)} files in "
        f"{_rel(reader.layout.thread_dir(thread))}?{note}",
        yes,
    )
    reader.saver.delete_thread(thread)
    settings.out.print(f"deleted thread {thread!r} ({summary.checkpoints} checkpoints, {len(files)} files)")


@app.command()
def copy(
    ctx: typer.Context,
    source: Annotated[str, typer.Argument(help="Thread to copy.")],
    target: Annotated[str, typer.Argument(help="New thread id (must not exist).")],
) -> None:
    """Copy a thread, every checkpoint and file, to a new thread id."""
    settings = _settings(ctx)
    reader = _reader(ctx)
    summary = reader.summary(source)
    check_thread_id(target)
    if reader.layout.thread_dir(target).exists():
        raise CliError(f"thread {target!r} already exists: delete it first or choose another id", REFUSED)
    if source == target:
        raise BadInputError("source and target are the same thread")
    reader.saver.copy_thread(source, target)
    settings.out.print(f"copied thread {source!r} to {target!r} ({summary.checkpoints} checkpoints)")


def _plan_json(plan: PrunePlan, written: list[Path] | None = None) -> dict[str, Any]:
    return {
        "thread_id": plan.thread_id,
        "skipped": plan.skipped,
        "checkpoints": {ns: ids for ns, ids in plan.doomed.items()},
        "remove": [str(p) for p in plan.removed],
        "write": [str(p) for p in (written if written is not None else plan.rescued)],
    }


def _print_plan(out: Console, plan: PrunePlan, verb: str) -> None:
    if plan.skipped:
        out.print(Text.assemble((f"thread {plan.thread_id}", "bold"), f": kept whole, {plan.skipped}"))
        return
    if not plan.doomed:
        out.print(Text.assemble((f"thread {plan.thread_id}", "bold"), ": nothing to prune"))
        return
    count = sum(len(ids) for ids in plan.doomed.values())
    out.print(
        Text.assemble(
            (f"thread {plan.thread_id}", "bold"),
            f": {verb} {count} checkpoint{'s' if count != 1 else ''} and {len(plan.removed)} files",
        )
    )
    for p in plan.rescued:
        out.print(Text(f"  + {_rel(p)}  (value still used, written first)", style="green"))
    for p in plan.removed:
        out.print(Text(f"  - {_rel(p)}", style="red"))


@app.command()
def prune(
    ctx: typer.Context,
    thread_ids: Annotated[
        list[str] | None, typer.Argument(metavar="THREAD", help="Threads (default: all).")
    ] = None,
    keep_last: Annotated[
        int | None,
        typer.Option("--keep-last", min=1, metavar="N", help="Keep the newest N checkpoints per namespace."),
    ] = None,
    older_than: Annotated[
        str | None,
        typer.Option(
            "--older-than", metavar="AGE", help="Remove only checkpoints older than AGE (30d, 12h)."
        ),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="List exactly what would go; change nothing.")
    ] = False,
    yes: YesOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Remove old checkpoints. Never a thread waiting on an interrupt, never what a DeltaChannel
    or an appended list still needs, never a hole in the middle of a history."""
    settings = _settings(ctx)
    if keep_last is None and older_than is None:
        raise BadInputError("give --keep-last N, --older-than AGE, or both")
    age = parse_age(older_than) if older_than is not None else None
    reader = _reader(ctx)
    now = datetime.now(timezone.utc)
    ids = list(thread_ids or [])
    for tid in ids:
        reader.namespaces(tid)  # unknown thread: exit 3 before anything else
    ids = ids or reader.thread_ids()
    plans = [plan_prune(reader, t, keep_last=keep_last, older_than=age, now=now) for t in ids]
    doing = [p for p in plans if p.doomed]
    if dry_run or not doing:
        if as_json:
            _print_json({"dry_run": dry_run, "threads": [_plan_json(p) for p in plans]})
        else:
            for plan in plans:
                _print_plan(settings.out, plan, "would remove")
        return
    if not as_json:
        for plan in plans:
            _print_plan(settings.out, plan, "removes")
    files = sum(len(p.removed) for p in doing)
    _confirm(settings, f"Remove {files} files from {len(doing)} thread{'s' if len(doing) != 1 else ''}?", yes)
    results = []
    changed = []
    for plan in plans:
        if not plan.doomed:
            results.append(_plan_json(plan))
            continue
        with reader.store.thread_lock(plan.thread_id, exclusive=True):
            again = plan_prune(reader, plan.thread_id, keep_last=keep_last, older_than=age, now=now)
            if again.removed != plan.removed or again.doomed != plan.doomed:
                changed.append(plan.thread_id)
                continue
            removed, written = run_prune(reader, plan)
        results.append({**_plan_json(plan, written), "remove": [str(p) for p in removed]})
        if not as_json:
            settings.out.print(
                Text(
                    f"thread {plan.thread_id}: removed {len(removed)} files, wrote {len(written)}",
                    style="green",
                )
            )
    if as_json:
        _print_json({"dry_run": False, "threads": results})
    if changed:
        raise CliError(
            f"thread {', '.join(changed)} changed while asking; nothing removed there, run prune again",
            REFUSED,
        )


# ----------------------------------------------------------------------
# format versions and other checkpointers
# ----------------------------------------------------------------------
@app.command()
def migrate(
    ctx: typer.Context,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="List the files that would change; change nothing.")
    ] = False,
    json_out: JsonOpt = False,
) -> None:
    """Upgrade files written by an older format version to this release's (docs/format.md).

    Every file is upgraded and validated before any is replaced; each is then replaced
    atomically under its thread's lock, so an interrupted run is finished by running it again.
    """
    from .migrations import migrate_root
    from .validation import SCHEMA_VERSION

    settings = _settings(ctx)
    _check_root(settings.root)
    with _progress(settings, "migrating", 2 * count_files(settings.root)) as advance:
        report = migrate_root(settings.root, dry_run=dry_run, progress=advance)
    if json_out:
        _print_json(report.to_json())
        return
    out = settings.out
    olds = ", ".join(f"{n} from version {v}" for v, n in sorted(report.from_versions.items()))
    if not report.changed:
        out.print(f"nothing to migrate: {report.files} files, all at version {SCHEMA_VERSION}")
    elif dry_run:
        out.print(f"would migrate {len(report.changed)} files to version {SCHEMA_VERSION} ({olds}):")
        for rel in report.changed:
            out.print(f"  {rel}")
    else:
        out.print(
            f"migrated {len(report.changed)} files to version {SCHEMA_VERSION} ({olds}); "
            f"{report.current} were already at it"
        )


ThreadsOpt = Annotated[
    list[str] | None, typer.Option("--thread", "-t", help="Copy only this thread (repeatable). Default: all.")
]
ReplaceOpt = Annotated[
    bool, typer.Option("--replace", help="Replace a thread the destination already has (default: refuse).")
]
AllowOpt = Annotated[
    list[str] | None,
    typer.Option("--allow", help="A type module:Name the repo files may revive (a state class; repeatable)."),
]


def _allowlist(allow: list[str] | None) -> list[tuple[str, ...]] | None:
    out: list[tuple[str, ...]] = []
    for item in allow or []:
        module, sep, name = item.partition(":")
        if not sep or not module or not name:
            raise BadInputError(f"--allow {item!r}: expected module:Name")
        out.append((module, name))
    return out or None


def _transfer(
    ctx: typer.Context,
    other: str,
    to_repo: bool,
    threads: list[str] | None,
    replace: bool,
    allow: list[str] | None,
    json_out: bool,
) -> None:
    from .saver import RepoSaver
    from .transfer import (
        SaverSpecError,
        ThreadExistsError,
        ThreadNotFoundError,
        copy_threads,
        open_saver,
        thread_ids_of,
    )

    settings = _settings(ctx)
    _check_root(settings.root, creating=to_repo)
    repo = RepoSaver(settings.root, allowlist=_allowlist(allow))
    try:
        with open_saver(other, create=not to_repo) as saver:
            source, target = (saver, repo) if to_repo else (repo, saver)
            wanted = threads or thread_ids_of(source)
            with _copy_progress(settings, len(wanted)) as step:
                report = copy_threads(source, target, wanted, replace=replace, progress=step)
    except SaverSpecError as exc:
        raise CliError(str(exc), USAGE) from None
    except ThreadExistsError as exc:
        raise CliError(str(exc), REFUSED) from None
    except ThreadNotFoundError as exc:
        raise CliError(str(exc), NOT_FOUND) from None
    except (FileFormatError, UnrevivableValueError, RepoCheckpointError, OSError):
        raise
    except Exception as exc:  # a driver's own error (psycopg, sqlite3): one line, never a traceback
        raise CliError(f"{other}: {type(exc).__name__}: {' '.join(str(exc).split())}", FAILED) from None
    if json_out:
        _print_json(report.to_json())
        return
    here = _rel(settings.root)
    where = f"from {other} into {here}" if to_repo else f"from {here} into {other}"
    settings.out.print(
        f"copied {len(report.threads)} thread{'s' if len(report.threads) != 1 else ''} "
        f"({report.checkpoints} checkpoints, "
        f"{report.writes} pending writes) {where}"
    )


@contextmanager
def _copy_progress(settings: Settings, threads: int) -> Iterator[Any]:
    """On a terminal: a bar over the checkpoints of the thread being copied, and threads done."""
    if not settings.err.is_terminal:
        yield None
        return
    columns = (
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=settings.err, transient=True) as progress:
        task = progress.add_task("copying", total=None)
        finished = 0

        def step(thread_id: str, done: int, total: int) -> None:
            nonlocal finished
            finished += done == total
            label = f"thread {finished + (done < total)}/{threads} {thread_id!r}"
            progress.update(task, description=label, completed=done, total=total)

        yield step


@app.command(name="import")
def import_command(
    ctx: typer.Context,
    source: Annotated[str, typer.Argument(help="sqlite:///PATH.db, postgresql://..., or module:factory.")],
    thread: ThreadsOpt = None,
    replace: ReplaceOpt = False,
    allow: AllowOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Copy threads from another checkpointer into the repo files (docs/migrating.md)."""
    _transfer(ctx, source, True, thread, replace, allow, json_out)


@app.command()
def export(
    ctx: typer.Context,
    target: Annotated[str, typer.Argument(help="sqlite:///PATH.db, postgresql://..., or module:factory.")],
    thread: ThreadsOpt = None,
    replace: ReplaceOpt = False,
    allow: AllowOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Copy threads from the repo files into another checkpointer (docs/migrating.md)."""
    _transfer(ctx, target, False, thread, replace, allow, json_out)


def main() -> None:
    """Entry point of ``python -m langgraph_checkpoint_repo``."""
    app(prog_name=PROG)
