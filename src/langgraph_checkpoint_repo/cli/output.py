"""What reaches a person or a script: the screening console, tables, JSON printing.

Everything printed goes through a ``SafeConsole`` (or ``print_json``): secrets are masked
and control characters escaped, so output can neither leak a key nor drive a terminal."""

from __future__ import annotations

import itertools
import json
import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, cast

from rich.console import Console, ConsoleOptions, ConsoleRenderable, RenderableType, RenderHook
from rich.segment import Segment
from rich.table import Table
from rich.text import Span
from rich.text import Text as RichText

from .._compat import set_table_cells, table_cells
from ..core.masking import CONTROL_CODES, escape_controls, mask_message

PIPE_WIDTH = 160  # width of output that goes to a file or a pipe (no terminal to ask)


def screen(text: str, keep: str = "\t") -> str:
    """Text as it may reach a person: secrets masked (also inside encoded path segments),
    control characters shown as ``\\xhh`` so they never act on a terminal."""
    return escape_controls(mask_message(text), keep=keep)


class Text(RichText):
    """rich's ``Text``, screened as it is made: rich drops ``\\r \\b \\a \\v \\f`` when it
    builds a Text, so screening at print time came too late (``t1\\r`` printed as ``t1``, as
    another thread). The command line makes every Text from this class (a test checks that
    no module imports rich's), and ``SafeConsole`` screens a plain string before rich does."""

    def __init__(self, text: str = "", *args: Any, **kwargs: Any) -> None:
        # a Text given spans is rich's own copy of a screened one: screening again would move them
        super().__init__(text if kwargs.get("spans") else screen(text), *args, **kwargs)

    @classmethod
    def assemble(cls, *parts: Any, **kwargs: Any) -> Text:
        return cast(Text, super().assemble(*parts, **kwargs))  # cls(...), then append: screened

    def append(self, text: str | RichText, style: Any = None) -> Text:
        super().append(screen(text) if isinstance(text, str) else text, style)
        return self


def _screen_text(text: RichText) -> RichText:
    """A rich Text screened piece by piece, so each piece keeps its style."""
    plain = text.plain
    if screen(plain) == plain:
        return text
    bounds = (i for span in text.spans for i in (span.start, span.end) if i < len(plain))
    cuts = sorted({0, len(plain), *bounds})
    out = text.blank_copy()
    for start, end in itertools.pairwise(cuts):
        piece = screen(plain[start:end])
        styles = [span.style for span in text.spans if span.start <= start and span.end >= end]
        out.append_text(RichText(piece, spans=[Span(0, len(piece), style) for style in styles]))
    return out


def _screen_renderable(renderable: Any) -> Any:
    """Screen what ``print`` is given before rich measures it (a table sizes its columns
    from its cells: screened late, an escaped id would be cut to fit)."""
    if isinstance(renderable, str):
        return screen(renderable)
    if isinstance(renderable, RichText):
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

    def render_str(self, text: str, **kwargs: Any) -> RichText:
        # screened before rich builds its Text, which would drop \r \b \a \v \f
        return _screen_text(super().render_str(screen(text), **kwargs))

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        if isinstance(renderable, RichText):
            renderable = _screen_text(renderable)
        return super().render(renderable, options)


def err_console() -> Console:
    """Messages on stderr: never wrapped, so an error stays one line."""
    return SafeConsole(stderr=True, highlight=False, markup=False, emoji=False, soft_wrap=True)


def out_console() -> Console:
    """Colour and the terminal's width on a terminal; plain and wide into a pipe or file."""
    console = SafeConsole(highlight=False, markup=False, emoji=False)
    if not console.is_terminal:
        width = int(os.environ.get("COLUMNS", "0") or 0) or PIPE_WIDTH
        console = SafeConsole(highlight=False, markup=False, emoji=False, width=width, soft_wrap=True)
    return console


def print_table(out: Console, table: Table) -> None:
    """A table; into a pipe or file one line per row, as wide as its cells (a script reads it
    line by line), without the padding rich puts at the end of each line."""
    if out.is_terminal:
        out.print(table)
        return
    lines = plain_table_lines(table)  # what rich prints, without measuring every cell twice
    if lines is None:
        lines = rich_table_lines(out, table)
    out.file.write("".join(line + "\n" for line in lines))


def rich_table_lines(out: Console, table: Table) -> list[str]:
    """The lines rich prints for a table into a pipe, as wide as its cells, right-stripped."""
    from rich.measure import Measurement

    natural = Measurement.get(out, out.options.update(max_width=1 << 16), table).maximum
    width = out.width
    out.width = max(width, natural)
    try:
        with out.capture() as captured:
            out.print(table)
    finally:
        out.width = width
    return [line.rstrip() for line in captured.get().splitlines()]


def plain_table_lines(table: Table) -> list[str] | None:
    """The lines rich prints for a table of the command line's kind (no box, columns two
    spaces apart, each as wide as its widest cell, left or right justified) into a pipe: one
    line per row, right-stripped. None for anything else (a tab, a cell of more than one
    line, a column or Text with widths, overflow or justify of its own): rich prints those."""
    from rich.cells import cell_len

    if not _plain_kind(table):
        return None
    columns: list[list[str]] = []
    screened: dict[str, str] = {}  # each distinct text screened once (a column repeats its values)
    for column in table.columns:
        if (
            column.justify not in ("left", "right")
            or column.width is not None
            or column.min_width is not None
        ):
            return None
        if (
            column.max_width is not None
            or column.ratio is not None
            or column.no_wrap
            or column.overflow != "ellipsis"
        ):
            return None
        texts = [_plain_cell(cell, screened) for cell in (column.header, *table_cells(column))]
        if any(t is None for t in texts):
            return None
        columns.append(cast(list[str], texts))
    widths = [max(map(cell_len, texts)) for texts in columns]
    lines = []
    for row in zip(*columns, strict=True):
        parts = []
        for text, width, column in zip(row, widths, table.columns, strict=True):
            pad = " " * (width - cell_len(text))
            parts.append(pad + text if column.justify == "right" else text + pad)
        lines.append("  ".join(parts).rstrip())
    return lines


def _plain_kind(table: Table) -> bool:
    """A table drawn as the command line draws its tables, with nothing rich would add."""
    return (
        table.box is None
        and not table.pad_edge
        and table.padding == (0, 1, 0, 1)
        and table.show_header
        and not table.show_footer
        and not table.expand
        and not table.leading
        and not table.row_styles
        and table.title is None
        and table.caption is None
        and table.width is None
        and table.min_width is None
        and bool(table.columns)
        and len({len(table_cells(c)) for c in table.columns}) == 1
    )


def _plain_cell(cell: Any, screened: dict[str, str]) -> str | None:
    """A cell's text as rich prints it into a pipe (screened), or None for one rich lays out
    (more than one line, a tab, spaces at an end, a Text with a justify or end of its own)."""
    if isinstance(cell, RichText):
        if cell.justify is not None or cell.end != "\n" or cell.overflow is not None or cell.no_wrap:
            return None
        text = cell.plain if type(cell) is Text else screen(cell.plain)  # ours is screened as made
    elif isinstance(cell, str):
        text = screened.get(cell) or screened.setdefault(cell, screen(cell))
    else:
        return None
    if "\t" in text or "\n" in text or text != text.strip() or "  " in text:
        return None
    return text


#: what json.dumps leaves raw (it escapes only C0): DEL, C1, bidi controls, lone surrogates
_JSON_ESCAPES = {c: f"\\u{c:04x}" for c in CONTROL_CODES if c >= 0x7F}


def print_json(data: Any) -> None:
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


def record_json(record: object, keys: str, **given: Any) -> dict[str, Any]:
    """A record as ``--json`` prints it: the keys in ``keys``' order, each the attribute of the
    same name, or of the name after ``=`` (``"latest_checkpoint_id=latest_id"``), or the value
    ``given`` for that key (a list of nested records, a value the record does not hold)."""
    out: dict[str, Any] = {}
    for word in keys.split():
        key, _, attr = word.partition("=")
        out[key] = given.pop(key) if key in given else getattr(record, attr or key)
    if given:
        raise TypeError(f"given keys not in {keys!r}: {sorted(given)}")
    return out


def problems_json(problems: Iterable[Any]) -> list[dict[str, str]]:
    """Validation problems (file, JSON pointer, message) as every ``--json`` output gives them."""
    return [record_json(p, "path pointer message") for p in problems]


def relative_to_root(path: Path | str) -> str:
    """A path as short as it can be said: relative to the current folder when inside it."""
    text = str(path)
    cwd = os.getcwd()
    if text.startswith(cwd + os.sep):
        return text[len(cwd) + 1 :]
    return text


def report_broken(settings: Any, broken: Sequence[tuple[str, Exception]]) -> None:
    """One line per thread a whole-root command could not read (after it went on with the
    others), then the exit code of the worst: the output says what went right, the code
    that something did not."""
    import typer

    from .exits import exit_code
    from .restore import restore_hint

    for tid, exc in broken:
        said = f": {exc}{restore_hint(exc)}"
        settings.err.print(Text.assemble(("thread ", "red"), (tid, "bold red"), (said, "red")))
    if broken:
        raise typer.Exit(max(exit_code(exc) for _, exc in broken))
