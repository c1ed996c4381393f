"""Whole-root ``validate`` reads the root as one snapshot (core/snapshot.py): each file is
stat'ed, read and parsed a few times at most, however long the history (issue 25: a
5,000-checkpoint root took 67 lstat calls per checkpoint, one per file of every append chain
and delta line on each use). What a snapshot read never outlives it, and a file that goes
during the run is reported, not skipped."""

from __future__ import annotations

import os
import shutil
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from graphs import chat_root
from helpers import checkpoint_files, rewrite
from langgraph_checkpoint_repo.core import files
from langgraph_checkpoint_repo.core.checks import Validator
from langgraph_checkpoint_repo.core.errors import FileFormatError


def files_of(root: Path) -> list[str]:
    return sorted(str(Path(here, name)) for here, _, names in os.walk(root / "threads") for name in names)


def counted_run(root: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[Any], Counter[str], Counter[str]]:
    """A whole-root validate, with how often each file was lstat'ed and parsed."""
    stats: Counter[str] = Counter()
    parses: Counter[str] = Counter()
    real_lstat, real_load = os.lstat, files.json_bytes

    def lstat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        stats[os.fsdecode(path)] += 1
        return real_lstat(path, *args, **kwargs)

    def json_bytes(path: Path, *args: Any) -> Any:
        parses[str(path)] += 1
        return real_load(path, *args)

    with monkeypatch.context() as m:
        m.setattr(os, "lstat", lstat)
        m.setattr(files, "json_bytes", json_bytes)
        problems = Validator(root).run()
    return problems, stats, parses


def test_each_file_is_parsed_once_and_stated_a_few_times_however_long_the_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    most: dict[int, int] = {}
    for turns in (4, 16):  # 12 and 48 checkpoints on one append chain and delta lines
        root = tmp_path / f"turns{turns}"
        chat_root(root, "chat", turns)
        problems, stats, parses = counted_run(root, monkeypatch)
        assert problems == []
        files = files_of(root)
        assert sorted(parses) == files and set(parses.values()) == {1}, parses
        most[turns] = max(stats[f] for f in files)
        assert sum(stats[f] for f in files) <= 5 * len(files), stats
    # a file is stat'ed for the values it holds, never once per later checkpoint built on it
    assert most[16] == most[4], most


def test_a_second_run_of_one_validator_sees_a_file_edited_after_the_first(tmp_path: Path) -> None:
    root = tmp_path / "root"
    chat_root(root, "chat", 3)
    validator = Validator(root)
    assert validator.run() == []
    edited = checkpoint_files(root, "chat")[2]
    rewrite(edited, lambda doc: doc.update(kind="writes"))
    problems = validator.run()
    assert (str(edited), "/kind") in {(p.path, p.pointer) for p in problems}, problems
    # and outside a run the store reads the file as it is now, like any reader
    with pytest.raises(FileFormatError, match="expected kind 'checkpoint'"):
        validator.store.files.read_doc(edited, "checkpoint")


def test_a_checkpoint_removed_during_the_run_is_reported_and_nothing_breaks(tmp_path: Path) -> None:
    root = tmp_path / "root"
    chat_root(root, "chat", 4)
    cps = checkpoint_files(root, "chat")
    gone_early, gone_late = cps[1], cps[-3]

    def remove_after_the_first_read(n: int) -> None:
        # the progress hook runs as each file is taken up: the first checkpoint is being read,
        # the rest of the namespace is listed but not read yet
        if gone_late.exists():
            gone_early.unlink()
            gone_late.unlink()

    validator = Validator(root, remove_after_the_first_read)
    problems = validator.run()
    assert not gone_late.exists()
    # listed, then gone before it was read: reported where it was, never skipped
    assert any(p.path == str(gone_late) and "cannot read" in p.message for p in problems), problems


def test_threads_checked_in_worker_processes_find_exactly_what_one_process_finds(tmp_path: Path) -> None:
    # threads refer to nothing of each other: a big root is checked a thread per worker
    # process (snapshot.check_threads), and must report the same lines, counts and files
    root = tmp_path / "root"
    for thread in ("a", "b", "c", "d"):
        chat_root(root, thread, 3)
    hole = checkpoint_files(root, "b")[4]
    hole.unlink()  # a hole in b's history
    dup = checkpoint_files(root, "c")[2]
    twice = b'"kind": "checkpoint", "kind": "x",'
    dup.write_bytes(dup.read_bytes().replace(b'"kind": "checkpoint",', twice, 1))
    rewrite(checkpoint_files(root, "d")[1], lambda doc: doc["metadata"].update(source="sk-" + "a1" * 12))
    runs = {}
    for workers in (1, 2, 3):
        done: list[int] = []
        v = Validator(root, done.append, workers=workers)
        problems = v.run()
        runs[workers] = (problems, v.files, sum(done), v.checkpoints, v.bad_files, v.orphan_writes)
        # one process reports progress a file at a time; workers' threads a thread at a time
        assert len(done) == (v.files if workers == 1 else 4), done
    assert runs[2] == runs[1] and runs[3] == runs[1]
    problems, files, progressed, _, bad, _ = runs[1]
    assert files == progressed == len(files_of(root))
    assert bad == {str(dup)}
    where = {Path(p.path).parent.parent.name for p in problems}
    assert where == {"b", "c", "d"}, problems
    assert any("duplicate key 'kind'" in p.message for p in problems), problems
    assert any("OpenAI API key" in p.message for p in problems), problems


def test_a_worker_that_dies_leaves_its_threads_to_the_main_process(tmp_path: Path) -> None:
    """A worker killed while it checks a thread (out of memory, a signal) breaks the pool; the
    threads not added yet are checked in the main process, with the one process's result. A
    ``multiprocessing.Pool`` waited for the dead worker's answer for ever."""
    root = tmp_path / "root"
    for thread in ("a", "b", "c"):
        chat_root(root, thread, 2)
    main = os.getpid()
    want = Validator(root, workers=1)
    expected = (want.run(), want.files, want.checkpoints)

    class DiesInAWorker(Validator):
        def thread(self, folder: Path) -> None:
            if os.getpid() != main and folder.name == "b":
                os._exit(9)  # as the kernel's OOM killer would end it: no cleanup, no answer
            super().thread(folder)

    got = DiesInAWorker(root, workers=2)
    result: list[Any] = []
    runner = threading.Thread(target=lambda: result.append(got.run()), daemon=True)
    runner.start()
    runner.join(120)  # far longer than the run; a hang fails here instead of stalling the suite
    assert not runner.is_alive(), "validate waited for the dead worker for ever"
    assert (result[0], got.files, got.checkpoints) == expected


BROKEN_SCHEMAS = {
    # how the installed schemas/ folder is broken: (the file broken, its new bytes); None: no folder
    "no folder": None,
    "not JSON": ("checkpoint.schema.json", b'{"type": "object", '),
    "empty": ("checkpoint.schema.json", b""),
    "not a schema": ("checkpoint.schema.json", b'{"type": 5}'),
    "defs without $id": ("defs.schema.json", b'{"$defs": {}}'),
}


@pytest.mark.parametrize("how", sorted(BROKEN_SCHEMAS))
def test_a_package_with_missing_or_broken_schemas_says_so_and_blames_no_data_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """Installed without its schemas/ folder, validate reported "cannot read: No such file or
    directory" on every data file, none of which was at fault; with a damaged schema, "cannot
    be validated" on every data file, a refused write blaming the state, or a traceback. It now
    stops with one error naming the schema, in the checks, the command line (once, not once per
    thread) and a write (exit 6, the code of a failure that is not the files')."""
    import helpers
    from graphs import cfg, chat_graph
    from langgraph_checkpoint_repo import RepoSaver
    from langgraph_checkpoint_repo.cli.exits import FAILED
    from langgraph_checkpoint_repo.core.errors import InstallationError
    from langgraph_checkpoint_repo.core.format import validation

    root = tmp_path / "root"
    chat_root(root, "a", 2)
    chat_root(root, "b", 1)
    installed = tmp_path / "site-packages" / "langgraph_checkpoint_repo" / "schemas"
    broken = BROKEN_SCHEMAS[how]
    if broken is not None:
        shutil.copytree(validation.schemas_dir(), installed)
        (installed / broken[0]).write_bytes(broken[1])
    named = installed / broken[0] if broken is not None else installed
    monkeypatch.setattr(helpers, "CLI_MODE", "in-process")  # a child would find the real schemas
    monkeypatch.setattr(validation, "schemas_dir", lambda: installed)
    validation._registry.cache_clear()
    validation._validator.cache_clear()
    try:
        with pytest.raises(InstallationError) as err:
            Validator(root, workers=1).run()
        assert str(named) in str(err.value) and "reinstall" in str(err.value)
        got = helpers.cli(root, "validate")
        assert got.returncode == FAILED, (got.stdout, got.stderr)  # not BAD_FILE: no file is bad
        assert str(named) in got.stderr and "Traceback" not in got.stderr
        assert str(root) not in got.stderr.replace(str(installed), "")  # no data file named
        listed = helpers.cli(root, "threads")  # it goes on past a thread that does not read
        assert listed.returncode == FAILED and listed.stderr.count(str(named)) == 1, listed.stderr
        assert "thread a" not in listed.stderr and "thread b" not in listed.stderr, listed.stderr
        with pytest.raises(InstallationError):
            chat_graph(RepoSaver(root)).invoke({"messages": [("user", "hi")]}, cfg("a"))
    finally:
        validation._registry.cache_clear()  # built again from the real schemas on next use
        validation._validator.cache_clear()
