"""A metadata filter answers as InMemorySaver's does, whatever the metadata holds.

A filter is answered from an index of each namespace's kept metadata values (core/metaview.py),
by hash and ``==`` as a dict finds a key, where InMemorySaver compares ``value == meta.get(key)``
entry by entry: ``1 == 1.0 == True``, ``0 == -0.0 == False``, a missing key equals None. The two
must agree for every value, in one thread and across threads, in a warm process and after an
edit in place."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from tests.graphs import cfg

from langgraph_checkpoint_repo import RepoSaver
from langgraph_checkpoint_repo.core.caches import RACY_NS, stat_key
from langgraph_checkpoint_repo.core.layout import Layout
from langgraph_checkpoint_repo.core.metaview import MetaView

VALUES: list[Any] = [0, 1, 1.0, True, False, 0.0, -0.0, None, "1", "a", "", 2**60, 1.5, [1], {"a": 1}]
KEYS = ["k", "user_id", "x"]  # not "step" or "source": the schema types those
metadata = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=3)
filters = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), min_size=1, max_size=2)


def settle() -> None:
    time.sleep(2 * RACY_NS / 1e9)


def ids(tuples: Any) -> list[str]:
    return [t.config["configurable"]["checkpoint_id"] for t in tuples]


def put_both(savers: list[Any], thread: str, metas: list[dict[str, Any]]) -> None:
    """The same checkpoints, ids included, with these metadata, into every saver."""
    configs: list[Any] = [{"configurable": {"thread_id": thread, "checkpoint_ns": ""}} for _ in savers]
    for meta in metas:
        checkpoint = empty_checkpoint()
        for i, saver in enumerate(savers):
            configs[i] = saver.put(configs[i], checkpoint, dict(meta), {})


@settings(max_examples=20, deadline=None)
@given(
    threads=st.lists(st.lists(metadata, min_size=1, max_size=8), min_size=1, max_size=3),
    asked=st.lists(filters, max_size=6),
)
def test_a_filter_finds_what_inmemorysaver_finds_for_any_metadata_values(
    tmp_path_factory: pytest.TempPathFactory, threads: list[list[dict[str, Any]]], asked: list[dict[str, Any]]
) -> None:
    repo, memory = RepoSaver(tmp_path_factory.mktemp("f") / ".langgraph", durable=False), InMemorySaver()
    for t, metas in enumerate(threads):
        put_both([repo, memory], f"t{t}", metas)
    settle()  # a file read within the racy window is not kept, and the index holds what is kept
    for want in asked:
        for config in [cfg("t0"), None]:
            # across threads RepoSaver orders by id, as SqliteSaver does (docs/forks.md)
            order = list if config else sorted
            expected = order(ids(memory.list(config, filter=want)))
            assert order(ids(repo.list(config, filter=want))) == expected, (config, want)  # reads the files
            assert order(ids(repo.list(config, filter=want))) == expected, (config, want)  # from the index


def test_an_in_thread_filter_sees_an_edit_in_place_that_makes_a_checkpoint_match(tmp_path: Path) -> None:
    """The index answers only for files whose stat key is the one kept: one edited in place
    (same inode, same size) to match is read, and found; the one it no longer matches is not."""
    repo = RepoSaver(tmp_path / ".langgraph", durable=False)
    put_both([repo], "t", [{"step": i, "user_id": "u-1"} for i in range(8)])
    settle()
    assert len(list(repo.list(cfg("t"), filter={"user_id": "u-1"}))) == 8
    path = Layout(tmp_path / ".langgraph").checkpoint_path(
        "t", "", ids(repo.list(cfg("t"), filter={"step": 3}))[0]
    )
    text = path.read_text()
    with open(path, "r+") as fh:  # in place: same inode, same folder, same size
        fh.write(text.replace('"user_id": "u-1"', '"user_id": "u-2"'))
    assert ids(repo.list(cfg("t"), filter={"user_id": "u-2"})) == [path.stem]
    assert len(ids(repo.list(cfg("t"), filter={"user_id": "u-1"}))) == 7


def test_a_result_edited_after_the_filter_matched_it_is_left_out_as_a_one_by_one_filter_would(
    tmp_path: Path,
) -> None:
    """An in-thread filter with no limit matches the thread's checkpoints in runs, ahead of the
    results it yields; a checkpoint edited in place between two results no longer holds what
    was asked, and is not yielded (its tuple, read as the file is, would contradict the filter),
    as with a limit, where each checkpoint is asked about as it is reached."""
    repo = RepoSaver(tmp_path / ".langgraph", durable=False)
    put_both([repo], "t", [{"user_id": "u1"}] * 5)
    settle()
    cids = ids(repo.list(cfg("t"), filter={"user_id": "u1"}))
    for limit in (None, 100):
        path = Layout(tmp_path / ".langgraph").checkpoint_path("t", "", cids[1 if limit is None else 2])
        results = repo.list(cfg("t"), filter={"user_id": "u1"}, limit=limit)
        first = next(results)
        text = path.read_text()
        with open(path, "r+") as fh:  # in place: same inode, same folder, same size
            fh.write(text.replace('"user_id": "u1"', '"user_id": "u9"'))
        got = [first, *results]
        assert [t.metadata["user_id"] for t in got] == ["u1"] * len(got), limit
        assert path.stem not in ids(got)


def test_the_first_result_of_an_in_thread_filter_reads_a_run_of_the_newest_checkpoints_not_the_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A caller that stops at the first result (``next(saver.list(...))``) of a fresh process with
    no derived index pays for the first run of the newest checkpoints (``FIRST_RUN``), not for
    every header of the thread; one that reads them all gets every match, newest first."""
    from langgraph_checkpoint_repo import saver as saver_module
    from langgraph_checkpoint_repo.core import files as files_module

    root = tmp_path / ".langgraph"
    put_both(
        [RepoSaver(root, durable=False)], "t", [{"user_id": "u1" if i % 3 else "u2"} for i in range(300)]
    )
    settle()
    reads: list[str] = []
    real = files_module.json_bytes

    def json_bytes(path: Any, *args: Any, **kwargs: Any) -> Any:
        if "/checkpoints/" in str(path):
            reads.append(str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(files_module, "json_bytes", json_bytes)
    one = next(RepoSaver(root).list(cfg("t"), filter={"user_id": "u1"}, limit=1))  # one by one
    by_one, reads[:] = len(set(reads)), []
    first = next(RepoSaver(root).list(cfg("t"), filter={"user_id": "u1"}))
    assert first.config == one.config
    # a run's headers (and the older headers they are deltas of), not the thread's 300
    assert by_one < saver_module.FIRST_RUN <= len(set(reads)) < 300 // 2, (len(set(reads)), by_one)
    every = RepoSaver(root).list(cfg("t"), filter={"user_id": "u1"})
    assert len(ids(every)) == 200


def test_a_filter_after_a_put_whose_file_is_not_settled_keeps_the_view_it_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file read within the racy window is not kept: nothing changes in what is kept, so the
    namespace's laid-out view (and its index) is not made again for every filter of a live
    thread, while the new checkpoint is still read from its file and found."""
    from langgraph_checkpoint_repo.core import caches, metaview

    repo = RepoSaver(tmp_path / ".langgraph", durable=False)
    put_both([repo], "t", [{"user_id": "u1"}] * 20)
    settle()
    ids(repo.list(cfg("t"), filter={"user_id": "u1"}))  # keeps every entry
    monkeypatch.setattr(caches, "RACY_NS", 10**15)  # from here nothing read is settled
    made: list[object] = []
    real = metaview.MetaView.__init__

    def init(self: Any, *args: Any) -> None:
        made.append(self)
        real(self, *args)

    monkeypatch.setattr(metaview.MetaView, "__init__", init)
    for n in range(3):
        put_both([repo], "t", [{"user_id": "u1"}])
        assert len(ids(repo.list(cfg("t"), filter={"user_id": "u1"}))) == 21 + n
    assert len(made) == 1


def test_a_filter_notes_the_stat_keys_of_the_unchanged_files_it_asked_about_and_no_others(
    tmp_path: Path,
) -> None:
    """A read's lineage check trusts the stat keys its filter noted (ThreadStore.observing):
    a file found changed is never noted with its kept key, whether the ids asked are all the
    laid-out ones, a run of them (an in-thread filter's), or out of order."""
    entries = []
    for i in range(6):
        path = tmp_path / f"c{i}.json"
        path.write_text("{}")
        entries.append((f"c{i}", (str(path), stat_key(os.lstat(path)), {"step": i}, None)))
    view = MetaView(0, object(), entries)
    (tmp_path / "c3.json").write_text("{ }")  # changed: size, mtime, ctime
    for cids in (view.cids, view.cids[2:5], view.cids[3:4], view.cids[4:], (view.cids[4], view.cids[3])):
        noted: dict[str, Any] = {}
        matched, stale = view.matching(cids, [("step", 4)], noted)
        assert stale == (["c3"] if "c3" in cids else []), cids
        assert matched == (["c4"] if "c4" in cids else []), cids
        assert set(noted) == {str(tmp_path / f"{cid}.json") for cid in cids if cid != "c3"}, cids
        assert all(key == stat_key(os.lstat(path)) for path, key in noted.items()), cids
