"""The workloads, one module each, and their registry.

A workload module has ``NAME`` (for ``--only`` and the key of its results), ``TITLE`` (the
heading of its detail section), ``run(tmp, sizes)`` returning its results (plain JSON data),
``rows(results)`` for the results table and ``details(results, sizes)`` for its section; one
that draws a picture has ``PICTURE`` (its name: ``performance-<PICTURE>.svg`` beside the report)
and ``picture(results)``, the SVG.
To add a workload, write the module and add it to ``WORKLOADS``; its goals go in ``bench.goals``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from bench.common import Result, Sizes
from bench.report import Row
from bench.workloads import agents, big, chat, cli, depth, git, history, memory, store, threads, turns


class Workload(Protocol):
    NAME: str
    TITLE: str

    def run(self, tmp: Path, sizes: Sizes) -> Result: ...

    def rows(self, result: Result) -> list[Row]: ...

    def details(self, result: Result, sizes: dict[str, int]) -> str: ...


WORKLOADS: tuple[Workload, ...] = (chat, depth, history, git, agents, cli, store, big, turns, threads, memory)
"""In the order they run and appear in the report."""
