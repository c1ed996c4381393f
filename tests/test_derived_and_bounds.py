"""Issue 34, items 7 and 8 (part): derived data never comes from git, and reads stay bounded.

Each case is built the way a hostile pull request (or an unlucky machine) would: a real graph
or a real RepoStore writes the root, then a file is forged, edited or committed, and every
reader meets it:

* a value nested past the depth JSON is written at (in a ``large/`` file, or through objects
  that nest inside each other) is one error naming the file, in every reader;
* ...
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from typing_extensions import TypedDict

from graphs import BIG_TEXT, big_graph, cfg, line_graph
from helpers import cli, load, one_line_error
from langgraph_checkpoint_repo import FileFormatError, RepoSaver
from langgraph_checkpoint_repo.core.objects import object_digest


def copy_of(source: Path, tmp_path: Path) -> Path:
    root = tmp_path / "root"
    shutil.copytree(source, root)
    return root


def nest(levels: int, leaf: Any) -> Any:
    for _ in range(levels):
        leaf = [leaf]
    return leaf


def rename_everywhere(root: Path, old: str, new: str) -> None:
    """Re-point every file of the root from one name to another (what a forger re-hashes)."""
    for path in root.rglob("*.json"):
        text = path.read_text(encoding="utf-8")
        if old in text:
            path.write_text(text.replace(old, new), encoding="utf-8")


# ----------------------------------------------------------------------------
# a value nested past the depth JSON is written at
# ----------------------------------------------------------------------------
MAX_JSON_DEPTH = 254  # levels of arrays and objects orjson writes (core/jsonread.py)
DEEP = 300  # levels: past that, within what json.loads parses


@pytest.fixture(scope="module")
def big_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A thread whose document channel lives in a ``large/`` file (read-only: tests copy it)."""
    root = tmp_path_factory.mktemp("big") / "root"
    big_graph(RepoSaver(root, durable=False)).invoke({"document": BIG_TEXT}, cfg("t"))
    return root


def forge_deep_large_file(root: Path) -> Path:
    """The ``large/`` file of the document, its value nested ``DEEP`` levels, renamed by the
    sha256 of its new content (as the reader computes it) and every reference re-pointed."""
    (large,) = [p for p in (root / "threads" / "t" / "large").glob("*.json") if load(p)["value"]["json"] == BIG_TEXT]
    doc = load(large)
    doc["value"]["json"] = nest(DEEP, "deep")
    body = json.dumps(doc["value"], indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    digest = hashlib.sha256(body.encode()).hexdigest()
    doc["sha256"] = digest
    forged = large.with_name(f"{digest}.json")
    forged.write_text(json.dumps(doc, indent=2, sort_keys=True), encoding="utf-8")
    large.unlink()
    rename_everywhere(root, large.stem, digest)
    return forged


def test_a_large_file_nested_past_the_written_depth_is_one_error_naming_it_in_every_reader(
    big_root: Path, tmp_path: Path
) -> None:
    """It passed the schema's check (or not, by the validator's version), then the sha256
    check's orjson.dumps raised a bare TypeError; now the read refuses it first, one reason."""
    root = copy_of(big_root, tmp_path)
    forged = forge_deep_large_file(root)
    with pytest.raises(FileFormatError) as info:
        RepoSaver(root).get_tuple(cfg("t"))
    assert info.value.path == str(forged) and "nested deeper than a file can hold" in str(info.value)
    for command in (["validate"], ["fsck"]):
        proc = cli(root, *command)
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
        (line,) = [x for x in proc.stdout.splitlines() if forged.name in x]
        assert f"nested deeper than a file can hold (JSON is written at most {MAX_JSON_DEPTH} levels deep)" in line
    one_line_error(cli(root, "show", "t"), 4, forged.name, "nested deeper than a file can hold")


class DeepState(TypedDict, total=False):
    deep: Any


def deep_node(state: DeepState) -> dict[str, Any]:
    """A value 150 levels deep holding a message: the message is stored once, as an object."""
    return {"deep": nest(150, HumanMessage(content="x" * 300, id="m1"))}


@pytest.fixture(scope="module")
def deep_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("deep") / "root"
    line_graph(DeepState, RepoSaver(root, durable=False), a=deep_node).invoke({"deep": 1}, cfg("t"))
    return root


def forge_nested_object(root: Path) -> Path:
    """The message object of the newest checkpoint made 150 levels deep itself and renamed by
    its new content: each file is within the depth, the value it expands to is 300 deep."""
    (path,) = [p for p in (root / "threads" / "t" / "checkpoints").glob("*.json") if load(p).get("objects")]
    doc = load(path)
    ((old, tree),) = doc["objects"].items()
    tree["$fields"]["content"] = nest(150, "x")
    path.write_text(json.dumps(doc, indent=2, sort_keys=True), encoding="utf-8")
    rename_everywhere(root, old, object_digest(tree)[:16])
    return path


def test_objects_nested_inside_objects_past_the_written_depth_are_one_error_naming_the_file(
    deep_root: Path, tmp_path: Path
) -> None:
    """Each file within the bound, the value built from them past it: validate passed it and
    ``diff`` died in orjson (a bare TypeError); now every reader names the file and pointer."""
    root = copy_of(deep_root, tmp_path)
    forged = forge_nested_object(root)
    words = f"expands to more than {MAX_JSON_DEPTH} levels of nesting through objects/"
    with pytest.raises(FileFormatError) as info:
        RepoSaver(root).get_tuple(cfg("t"))
    assert info.value.path == str(forged) and words in str(info.value)
    proc = cli(root, "validate")
    assert proc.returncode == 1 and forged.name in proc.stdout and words in proc.stdout, proc.stdout
    for command in (["show", "t"], ["diff", "t"], ["render", "t"]):
        one_line_error(cli(root, *command), 4, forged.name, words)
