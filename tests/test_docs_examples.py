"""Every command-line example in the docs prints what the command prints (docs/examples.py).

The examples run in this process on the committed example state; a doc whose block differs
fails naming the file, the block and the difference. Rewrite the docs with
``python docs/examples.py`` after a change that alters what a command prints.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"


def load_examples() -> ModuleType:
    """docs/examples.py, by path: the checkout's ``examples/`` folder holds other things."""
    spec = importlib.util.spec_from_file_location("docs_examples", DOCS / "examples.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def examples() -> ModuleType:
    return load_examples()


def differences(examples: ModuleType, doc: Path, tmp: Path) -> list[str]:
    """Each marked block of ``doc`` that differs from what its commands print now: where it
    is and the unified diff."""
    import difflib

    _, changed = examples.regenerate(doc, tmp)
    return [
        f"{block.where(doc)} differs from what its commands print now "
        "(`python docs/examples.py` rewrites it):\n"
        + "\n".join(difflib.unified_diff(block.lines, new, "in the doc", "printed now", lineterm=""))
        for block, new in changed
    ]


def test_every_marked_example_prints_what_the_doc_shows(examples: ModuleType) -> None:
    """README.md and docs/*.md: every marked block, rerun, equals the doc."""
    found = []
    with examples.scratch() as tmp:  # each state set up once, copied for each file
        for doc in examples.docs():
            found += differences(examples, doc, tmp)
    assert not found, "\n\n".join(found)


def test_a_block_that_no_longer_matches_fails_naming_doc_block_and_difference(
    examples: ModuleType, tmp_path: Path
) -> None:
    """A doc whose output was edited by hand (a copy of docs/secrets.md) is named, with the
    block's command and the line that differs; the doc itself is left as it was."""
    copy = tmp_path / "docs" / "secrets.md"
    copy.parent.mkdir()
    shutil.copy(DOCS / "secrets.md", copy)
    text = copy.read_text(encoding="utf-8")
    assert "ok: 7 files, 3 checkpoints valid" in text
    copy.write_text(text.replace("ok: 7 files, 3 checkpoints valid", "ok: 8 files, 3 checkpoints valid"))
    before = copy.read_text(encoding="utf-8")
    (found,) = differences(examples, copy, tmp_path / "run")
    first = found.splitlines()[0]
    assert first.startswith(f"{copy}:") and "block `langgraph-repo validate`" in first, first
    assert "-ok: 8 files, 3 checkpoints valid" in found and "+ok: 7 files, 3 checkpoints valid" in found
    assert copy.read_text(encoding="utf-8") == before


def test_every_marker_names_a_state_and_opens_a_block(examples: ModuleType) -> None:
    """A marker with an unknown state, or without a block after it, is an error, not a skipped
    example."""
    bad = ["<!-- langgraph-repo: run nowhere -->", "```console", "$ langgraph-repo threads", "```"]
    with pytest.raises(ValueError, match="unknown state"):
        examples.blocks(bad, DOCS / "x.md")
    with pytest.raises(ValueError, match="followed by a fenced block"):
        examples.blocks(["<!-- langgraph-repo: run demo -->", "text"], DOCS / "x.md")


def test_no_doc_shows_command_output_that_no_run_checks(examples: ModuleType) -> None:
    """A `$ langgraph-repo` line followed by output is in a marked block, or in one that says
    why it cannot run here (`<!-- langgraph-repo: not run: ... -->`)."""
    unchecked = {
        str(doc.name): lines
        for doc in examples.docs()
        if (lines := examples.unmarked_outputs(doc.read_text(encoding="utf-8").split("\n")))
    }
    assert not unchecked, f"unmarked command output (file: lines): {unchecked}"
    shown = ["```console", "$ langgraph-repo threads", "thread  checkpoints", "```"]
    assert examples.unmarked_outputs(shown) == [2]
    assert examples.unmarked_outputs(["<!-- langgraph-repo: not run: needs a server -->", *shown]) == []
