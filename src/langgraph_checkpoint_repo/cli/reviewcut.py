"""``review --markdown --limit N``: the review cut to fit a pull-request comment (cli/review.py
hands it its words: this module imports nothing of it).

A forge refuses a comment over its limit (GitHub: 65,536 characters), and the example
workflow posted a review too long for one as its title and a link: a flagged change was then
nowhere in the pull request. The cut keeps what a reviewer must see before approving (the
header, the verdict, every flag, what needs a person, every problem ``validate`` found) and
leaves out the turns, saying so and how long the whole review is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from .events import attention, plural, verdict_line
from .markdown import md_code

if TYPE_CHECKING:
    from ..review.model import Report


def _code(text: str) -> str:
    return md_code(text, code=True)


def cut_markdown(
    report: Report, whole: str, limit: int, *, labels: Mapping[str, str], files: str, flagged: str, end: str
) -> str:
    """``whole`` (the review's Markdown) when it fits in ``limit`` characters, else the cut
    review: always its header, verdict, the cut's own note and footer (``end``); then every
    flag (``flagged`` its title, ``labels`` their names), what needs a person, each problem
    and one line per thread (``files``: the changed files, said), as many as fit (the flags
    first); what did not fit is counted, never dropped silently."""
    if len(whole) <= limit:
        return whole
    head = _code(report.range.head[:12]) if report.range.head else "the work tree"
    top = [
        f"## State review: {_code(report.range.base[:12])} .. {head}",
        "",
        f"**{verdict_line(report.verdict, _code)}**",
        "",
        f"**This review is cut to fit a comment**: the whole is {len(whole):,} characters, over"
        f" {limit:,}. Here: the flags, what needs a person and the problems validate found;"
        f" the turns are left out. {_code(f'langgraph-repo review {report.range.spec} --markdown')}"
        " prints it whole.",
        "",
    ]
    footer = ["", end, ""]
    rows: list[tuple[str, str]] = []  # (kind of row, the row)
    if report.flags:
        rows.append(("", f"**⚠ {md_code(flagged)}**\n"))
        for flag in report.flags:
            where = f"{_code(flag.path)}: " if flag.path else ""
            label = labels.get(flag.kind, flag.kind)
            rows.append(("flag", f"- **{label}**: {where}{_code(flag.message)}"))
        rows.append(("", ""))
    for label, what, where in attention(report):
        rows.append(("need", f"- **{label}**: {_code(what)}" + (f" ({_code(where)})" if where else "")))
    problems = report.problems
    if problems:
        rows += [("", ""), ("", f"**Validation problems** ({len(problems)}):"), ("", "")]
        rows += [("problem", f"- {_code(p.path)} {_code(p.pointer)}: {md_code(p.message)}") for p in problems]
    if report.threads:
        changed = f"{plural(len(report.threads), 'thread')} changed; {files}:"
        rows += [("", ""), ("", changed), ("", "")]
        rows += [("thread", f"- {_code(t.thread_id)} ({t.status})") for t in report.threads]
    budget = limit - len("\n".join(top + footer)) - 200  # room for the line saying what was left out
    kept: list[str] = []
    left: dict[str, int] = {}
    for kind, row in rows:
        if kind and (left or budget - len(row) - 1 < 0):
            left[kind] = left.get(kind, 0) + 1
            continue
        budget -= len(row) + 1
        kept.append(row)
    if left:
        words = {"flag": "flag", "need": "item needing a person", "problem": "problem", "thread": "thread"}
        said = ", ".join(plural(n, words[k]) for k, n in left.items())
        kept += ["", f"**Not listed here for want of room**: {said}; the whole review lists them."]
    return "\n".join(top + kept + footer)
