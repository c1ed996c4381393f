"""``langgraph-repo validate FILE...`` (the pre-commit hook): the files named, and what they
refer to, are checked; no other file of the thread is read. Whole-thread ``validate`` still
finds what only a look at every file can (docs/cli.md, "Speed of the CLI")."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage

from graphs import cfg, chat_root
from helpers import checkpoint_files, cli_in_process, one_line_error, rewrite, writes_files
from langgraph_checkpoint_repo import RepoSaver
from langgraph_checkpoint_repo.core.format.objects import EDITED, ref_nodes

TURNS = 4


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("made") / "root"
    saver = chat_root(root, "chat", TURNS)
    # a step that wrote and stopped before its checkpoint: its writes stay a file (format 4
    # moves every other step's writes into the next checkpoint)
    latest = saver.get_tuple(cfg("chat"))
    assert latest is not None
    saver.put_writes(latest.config, [("messages", [AIMessage(content="pending", id="p-1")])], "task-p")
    chat_root(root, "other", 2)
    return root


@pytest.fixture
def root(made: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "root"
    shutil.copytree(made, copy)
    return copy


def validate(root: Path, *paths: Path | str) -> tuple[int, list[str], str]:
    result = cli_in_process("--root", root, "validate", *paths)
    return result.exit_code, result.stdout.splitlines(), result.stderr


def last_turn(root: Path, thread: str = "chat") -> list[Path]:
    """The files the last turn of ``thread`` wrote: its last two checkpoints (input and
    answer), their writes and the objects (messages) nothing before them had."""
    cps = checkpoint_files(root, thread)[-2:]
    tdir = root / "threads" / thread
    writes = [w for w in writes_files(tdir) if w.name.split("~")[0] in {c.stem for c in cps}]
    return [*cps, *writes]


def objects(root: Path, thread: str = "chat") -> list[Path]:
    return sorted((root / "threads" / thread / "objects").glob("*.json"))


def test_the_files_of_a_turn_validate_and_only_they_are_counted(root: Path) -> None:
    files = [*last_turn(root), *objects(root)]
    code, out, err = validate(root, *files)
    assert code == 0, [*out, err]
    assert err.startswith(f"ok: {len(files)} files, 2 checkpoints valid"), err


def test_a_schema_error_in_a_named_file_is_reported_with_its_path_and_pointer(root: Path) -> None:
    target = checkpoint_files(root, "chat")[-1]
    rewrite(target, lambda doc: doc["metadata"].update(step="not a step"))
    code, out, _ = validate(root, *last_turn(root))
    assert code == 1
    assert any(line.startswith(f"{target}: /metadata/step: ") for line in out), out


def test_a_named_checkpoint_whose_value_file_is_gone_is_reported(root: Path) -> None:
    """The value a named checkpoint refers to lies in an older checkpoint (not named): its
    loss is found by following the reference."""
    cps = checkpoint_files(root, "chat")
    named = cps[-1]
    doc = RepoSaver(root).store.docs.header("chat", "", named.stem)  # whole: a delta's refs are its parents'
    held_by = {ref for ref in doc["values"].values()}
    gone = next(c for c in cps[:-1] if f"checkpoints/{c.name}" in held_by)
    gone.unlink()
    code, out, _ = validate(root, named)
    assert code == 1
    # format 4: the named delta builds on the gone file too, which may be the first loss found
    found = [line for line in out if line.startswith(f"{named}: /") and gone.stem in line]
    assert any("missing" in line for line in found), out


def test_a_named_file_whose_object_is_gone_is_reported(root: Path) -> None:
    """Format 4: an object another checkpoint holds (``$in``) taken out of it."""
    named = next(p for p in reversed(checkpoint_files(root, "chat")) if '"$in"' in p.read_text())
    ref = next(r for r in ref_nodes(json.loads(named.read_text())) if "$in" in r)
    digest, holder = ref["$ref"], named.parent / f"{ref['$in']}.json"
    rewrite(holder, lambda doc: doc["objects"].pop(digest))
    code, out, _ = validate(root, named)
    assert code == 1
    assert any(line.startswith(f"{named}: ") and digest in line for line in out), out


def test_a_named_checkpoint_whose_parent_is_gone_is_reported(root: Path) -> None:
    cps = checkpoint_files(root, "chat")
    cps[-2].unlink()
    code, out, _ = validate(root, cps[-1])
    assert code == 1
    assert any(line.startswith(f"{cps[-1]}: /parent_checkpoint_id: ") for line in out), out


def test_files_not_named_are_not_read_but_whole_thread_validate_reports_them(root: Path) -> None:
    """A broken file elsewhere in the root: not reported for the files a turn wrote (they
    do not refer to it), reported by validate of its thread and of the root. (Format 4: every
    checkpoint of the chat's line since its last whole one is read under a delta.)"""
    broken = checkpoint_files(root, "other")[0]
    broken.write_text('{"kind": "checkpoint"')  # truncated: not even JSON
    code, out, err = validate(root, *last_turn(root))
    assert code == 0, [*out, err]
    for whole in [(root / "threads" / "other",), ()]:
        code, out, _ = validate(root, *whole)
        assert code == 1
        assert any(line.startswith(f"{broken}: /: ") for line in out), out


def test_a_named_writes_file_of_a_deleted_checkpoint_is_an_orphan(root: Path) -> None:
    writes = last_turn(root)[2:]
    assert writes
    owner = writes[0].name.split("~")[0]
    (root / "threads" / "chat" / "checkpoints" / f"{owner}.json").unlink()
    code, out, _ = validate(root, writes[0])
    assert code == 1
    assert any(line.startswith(f"{writes[0]}: /checkpoint_id: ") and "does not exist" in line for line in out)


def test_a_named_object_edited_by_hand_is_reported(root: Path) -> None:
    target = next(p for p in checkpoint_files(root, "chat") if json.loads(p.read_text()).get("objects"))
    name = next(iter(json.loads(target.read_text())["objects"]))
    rewrite(target, lambda doc: doc["objects"].__setitem__(name, "edited"))
    code, out, _ = validate(root, target)
    assert code == 1
    assert [line for line in out if line.startswith(f"{target}: /objects/{name}")] == [
        f"{target}: /objects/{name}: {EDITED}"
    ], out
    assert "langgraph-repo edit" in EDITED


def test_a_named_file_that_does_not_exist_is_an_error_naming_it(root: Path) -> None:
    missing = root / "threads" / "chat" / "checkpoints" / "no-such-checkpoint.json"
    result = cli_in_process("--root", root, "validate", checkpoint_files(root, "chat")[-1], missing)
    one_line_error(result, 3, str(missing), "no such file")


def test_a_named_file_outside_the_root_is_an_error_naming_it(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.json"
    outside.write_text("{}")
    result = cli_in_process("--root", root, "validate", outside)
    one_line_error(result, 2, str(outside), "not under the root")


def test_a_named_file_out_of_the_layout_is_reported(root: Path) -> None:
    stray = root / "threads" / "chat" / "notes.json"
    stray.write_text("{}")
    code, out, _ = validate(root, stray)
    assert code == 1
    assert out and out[0].startswith(f"{stray}: /: not a file of the layout")


def test_a_folder_still_means_its_threads_whole(root: Path) -> None:
    broken = checkpoint_files(root, "other")[0]
    broken.write_text("{}")
    code, out, _ = validate(root, root / "threads" / "other", checkpoint_files(root, "chat")[-1])
    assert code == 1
    assert any(line.startswith(f"{broken}: /") for line in out), out
