"""A small log-log line chart as SVG, written by hand so the benchmark needs no plotting library.

The output depends only on the data: no timestamps, no random ids, numbers rounded to a tenth
of a pixel, so two runs with the same figures give the same bytes (and git diffs stay small).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape, quoteattr

PANEL_W, PANEL_H = 380, 280
"""The plotting area of one panel, in pixels."""
LEFT, TOP, GAP, RIGHT = 70, 50, 90, 30
LEGEND_ROW = 20
FONT = 'font-family="sans-serif" font-size="12"'


@dataclass(frozen=True)
class Line:
    """One series: its legend text, its style and its (x, y) points; y of None is not drawn."""

    saver: str
    mode: str
    color: str
    dash: str | None
    points: tuple[tuple[float, float | None], ...]

    def label(self) -> str:
        return f"{self.saver}, {self.mode}"


@dataclass(frozen=True)
class Panel:
    key: str
    title: str
    lines: tuple[Line, ...]
    y_label: str | None = None
    """The panel's own y axis label; None: the picture's."""


@dataclass(frozen=True)
class LogAxis:
    """A decade-aligned log axis mapping values onto [start, start + length] pixels."""

    low: int
    high: int
    start: float
    length: float
    flip: bool

    @classmethod
    def covering(cls, values: Sequence[float], start: float, length: float, flip: bool) -> LogAxis:
        positive = [v for v in values if v > 0] or [1]
        low = math.floor(math.log10(min(positive)))
        high = max(low + 1, math.ceil(math.log10(max(positive))))
        return cls(low, high, start, length, flip)

    def at(self, value: float) -> float:
        share = (math.log10(value) - self.low) / (self.high - self.low)
        return self.start + (self.length * (1 - share) if self.flip else self.length * share)

    def decades(self) -> list[int]:
        return list(range(self.low, self.high + 1))


def decade_label(exponent: int) -> str:
    """``10**exponent`` as people write it: 0.01, 1, 1,000."""
    if exponent >= 0:
        return f"{10**exponent:,}"
    return f"{10.0**exponent:.{-exponent}f}"


def _num(v: float) -> str:
    return f"{v:.1f}"


def _text(x: float, y: float, text: str, anchor: str = "middle", extra: str = "") -> str:
    return f'<text x="{_num(x)}" y="{_num(y)}" text-anchor="{anchor}" {FONT}{extra}>{escape(text)}</text>'


def _axes(x: LogAxis, y: LogAxis, x_label: str, y_label: str) -> list[str]:
    """Grid lines and tick labels at every decade, the frame, and both axis labels."""
    out: list[str] = []
    x0, x1 = x.start, x.start + x.length
    y0, y1 = y.start, y.start + y.length
    for e in x.decades():
        px = x.at(10.0**e)
        out.append(f'<line x1="{_num(px)}" y1="{_num(y0)}" x2="{_num(px)}" y2="{_num(y1)}" stroke="#ddd"/>')
        out.append(_text(px, y1 + 16, decade_label(e)))
    for e in y.decades():
        py = y.at(10.0**e)
        out.append(f'<line x1="{_num(x0)}" y1="{_num(py)}" x2="{_num(x1)}" y2="{_num(py)}" stroke="#ddd"/>')
        out.append(_text(x0 - 6, py + 4, decade_label(e), "end"))
    out.append(
        f'<rect x="{_num(x0)}" y="{_num(y0)}" width="{_num(x.length)}" height="{_num(y.length)}" '
        'fill="none" stroke="#444"/>'
    )
    out.append(_text((x0 + x1) / 2, y1 + 36, x_label))
    mid = (y0 + y1) / 2
    out.append(_text(x0 - 56, mid, y_label, extra=f' transform="rotate(-90 {_num(x0 - 56)} {_num(mid)})"'))
    return out


def _polyline(panel: str, line: Line, x: LogAxis, y: LogAxis) -> str:
    """The line (its saver, mode and panel in ``data-`` attributes) and a dot at each point."""
    drawn = [(_num(x.at(px)), _num(y.at(py))) for px, py in line.points if py is not None and py > 0]
    dash = "" if line.dash is None else f' stroke-dasharray="{line.dash}"'
    dots = "".join(f'<circle cx="{cx}" cy="{cy}" r="3" fill="{line.color}"/>' for cx, cy in drawn)
    return (
        f"<g>{dots}</g>\n"
        f"<polyline data-panel={quoteattr(panel)} data-saver={quoteattr(line.saver)} "
        f'data-mode={quoteattr(line.mode)} points="{" ".join(f"{cx},{cy}" for cx, cy in drawn)}" '
        f'fill="none" stroke="{line.color}" stroke-width="2"{dash}><title>{escape(line.label())}</title>'
        "</polyline>"
    )


def _legend(lines: Sequence[Line], left: float, top: float, width: float) -> list[str]:
    """One column per saver, one entry per mode of it, below the panels."""
    columns: dict[str, dict[str, Line]] = {}
    for line in lines:
        columns.setdefault(line.saver, {}).setdefault(line.mode, line)
    out: list[str] = []
    for i, entries in enumerate(columns.values()):
        lx = left + i * width / len(columns)
        for j, line in enumerate(entries.values()):
            ly = top + j * LEGEND_ROW
            dash = "" if line.dash is None else f' stroke-dasharray="{line.dash}"'
            stroke = f'stroke="{line.color}" stroke-width="2"{dash}'
            out.append(f'<line x1="{_num(lx)}" y1="{ly}" x2="{_num(lx + 36)}" y2="{ly}" {stroke}/>')
            out.append(_text(lx + 44, ly + 4, line.label(), "start"))
    return out


def legend_rows(lines: Sequence[Line]) -> int:
    """The most modes any saver has: the legend's height in rows."""
    modes: dict[str, set[str]] = {}
    for line in lines:
        modes.setdefault(line.saver, set()).add(line.mode)
    return max((len(m) for m in modes.values()), default=0)


def render(panels: Sequence[Panel], title: str, x_label: str, y_label: str) -> str:
    """Panels side by side, each with its own log-log axes (x shared), and one legend below."""
    lines = [line for p in panels for line in p.lines]
    xs = [px for line in lines for px, _ in line.points]
    legend_top = TOP + PANEL_H + 70
    width = LEFT + len(panels) * (PANEL_W + GAP) - GAP + RIGHT
    height = legend_top + legend_rows(lines) * LEGEND_ROW + 10
    body = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}">',
        f"<title>{escape(title)}</title>",
        f'<rect width="{width}" height="{height}" fill="white"/>',
        _text(width / 2, 20, title, extra=' font-weight="bold"'),
    ]
    for i, panel in enumerate(panels):
        left = LEFT + i * (PANEL_W + GAP)
        x = LogAxis.covering(xs, left, PANEL_W, flip=False)
        ys = [py for line in panel.lines for _, py in line.points if py is not None]
        y = LogAxis.covering(ys, TOP, PANEL_H, flip=True)
        body.append(_text(left + PANEL_W / 2, TOP - 10, panel.title, extra=' font-weight="bold"'))
        body += _axes(x, y, x_label, panel.y_label or y_label)
        body += [_polyline(panel.key, line, x, y) for line in panel.lines]
    body += _legend(lines, LEFT, legend_top, width - LEFT - RIGHT)
    body.append("</svg>")
    return "\n".join(body) + "\n"
