"""A metadata filter answers as InMemorySaver's does, whatever the metadata holds.

A filter is answered from an index of each namespace's kept metadata values (core/metaview.py),
by hash and ``==`` as a dict finds a key, where InMemorySaver compares ``value == meta.get(key)``
entry by entry: ``1 == 1.0 == True``, ``0 == -0.0 == False``, a missing key equals None. The two
must agree for every value, in one thread and across threads, in a warm process and after an
edit in place."""

from __future__ import annotations

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
from langgraph_checkpoint_repo.core.caches import RACY_NS
from langgraph_checkpoint_repo.core.layout import Layout

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
