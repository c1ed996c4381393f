"""The parts of the benchmark's cli and history workloads that choose what is measured.

The files given to ``validate FILE...`` are the files one turn changed; a fresh process without
``.cache/`` leaves the earlier ``.cache/`` as it was. No timing is asserted.
"""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

from bench.common import TINY
from bench.workloads import cli, history


def test_one_turn_gives_the_files_the_turn_wrote_and_they_validate(tmp_path: Path) -> None:
    root = tmp_path / ".langgraph"
    cli.validate_root(root, dataclasses.replace(TINY, validate_threads=3, validate_turns=2))
    assert cli.count_checkpoints(root) == 3 * (2 * 3 + 1)
    before = {p for p in root.rglob("*") if p.is_file()}
    changed = cli.one_turn(root, 1)
    assert changed, "a turn writes files"
    assert all(p.is_file() and p.parent.parent.parent == root / "threads" for p in changed)
    assert {p.parent.parent.name for p in changed} == {"user-001"}
    assert not any(".cache" in p.parts for p in changed)
    new_checkpoints = [p for p in changed if p.parent.name == "checkpoints"]
    assert len(new_checkpoints) == 3 and not set(new_checkpoints) & before  # one-node graph: 3 a turn
    assert {p for p in root.rglob("*") if p.is_file() and ".cache" not in p.parts} - before <= set(changed)
    cmd, _ = cli.script()
    files = [str(p.relative_to(tmp_path)) for p in changed]
    proc = subprocess.run(
        [*cmd, "--root", ".langgraph", "validate", *files], cwd=tmp_path, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr


def test_cache_aside_hides_cache_and_puts_the_earlier_one_back(tmp_path: Path) -> None:
    root, aside = tmp_path / "root", tmp_path / "aside"
    (root / ".cache").mkdir(parents=True)
    (root / ".cache" / "index").write_text("earlier")
    with history._cache_aside(root, aside):
        assert not (root / ".cache").exists()
        (root / ".cache").mkdir()
        (root / ".cache" / "index").write_text("made by the fresh process")
    assert (root / ".cache" / "index").read_text() == "earlier"
    assert not aside.exists()


def test_cache_aside_without_a_cache_leaves_none(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    with history._cache_aside(root, tmp_path / "aside"):
        (root / ".cache").mkdir()
    assert not (root / ".cache").exists()
