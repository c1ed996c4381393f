"""The render command: a Markdown (or JSON) view of a thread; the HTML page's module is
imported only for ``--html``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from ..core.errors import (
    BadInputError,
)
from ..readmodel.calls import with_calls
from ..readmodel.tasks import is_internal
from ..readmodel.turns import open_branches
from . import present
from .app import (
    JsonOpt,
    NsOpt,
    ThreadArg,
    open_reader,
)
from .markdown import markdown_doc
from .output import (
    print_json,
    screen,
)
from .shape import history_json, summary_json, task_json


def render(
    ctx: typer.Context,
    thread: ThreadArg,
    fmt: Annotated[str, typer.Option("--format", help="Output format (only markdown).")] = "markdown",
    ns: NsOpt = "",
    limit: Annotated[
        int | None,
        typer.Option(
            "--limit", min=1, help="History rows to include (default: 20; 1,000 in the --html page)."
        ),
    ] = None,
    as_json: JsonOpt = False,
    html_file: Annotated[
        Path | None,
        typer.Option(
            "--html",
            metavar="FILE",
            help="Also write the thread as one self-contained HTML page to FILE (docs/cli.md, render).",
        ),
    ] = None,
) -> None:
    """A Markdown view of a thread for a pull request or a person; made on demand, never stored."""
    if fmt != "markdown":
        raise BadInputError(f"unknown format {fmt!r}: only markdown is supported")
    reader = open_reader(ctx, revive=True)
    namespaces = reader.namespaces(thread)
    ns = reader.resolve_ns(thread, ns) if ns else namespaces[0]
    summary = reader.summary(thread)
    view = reader.state(thread, ns, reader.resolve(thread, ns, None))
    rows = reader.history(thread, ns)
    note = present.not_revived_note(reader.not_revived, reader.fix)
    if html_file is not None:
        from .html import MAX_TREE_ROWS, render_html, write_page

        write_page(
            html_file, render_html(reader, summary, view, rows, limit=limit or MAX_TREE_ROWS, note=note)
        )
    limit = limit or 20
    if as_json:
        print_json(
            {
                **summary_json(summary),
                "state": {c: view.trees[c] for c in sorted(view.trees) if not is_internal(c)},
                "next": [task_json(t, ns) for t in view.tasks],
                "history": [history_json(r) for r in rows[:limit]],
            }
        )
        return
    branches = open_branches(reader, thread, ns)
    with_calls(reader, thread, ns, branches)
    sys.stdout.write(screen(markdown_doc(summary, view, rows, limit, note, branches), keep="\n\t"))
