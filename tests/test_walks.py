"""The one walk up a history (``ThreadStore.ancestors``), as every reader takes it.

Prune's keep-latest plan, the DeltaChannel history, the review's line of a head and its
"descends from" all walk parents through it. A real graph writes the thread; a hand edit
closes a parent cycle, as a hostile pull request could.
"""

from __future__ import annotations

import json
from itertools import islice
from pathlib import Path

import pytest

from graphs import cfg, chain_graph
from langgraph_checkpoint_repo import RepoSaver
from langgraph_checkpoint_repo.core.errors import FileFormatError
from langgraph_checkpoint_repo.core.format.records import CheckpointRecord
from langgraph_checkpoint_repo.readmodel.reader import Reader
from langgraph_checkpoint_repo.readmodel.turns import line_to


@pytest.fixture(scope="module")
def cyclic(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A thread of a few checkpoints whose oldest names the newest as its parent."""
    root = tmp_path_factory.mktemp("walks") / "root"
    saver = RepoSaver(root, durable=False)
    chain_graph(saver).invoke({"log": []}, cfg("t"))
    ids = saver.store.checkpoint_ids("t", "")
    oldest = saver.store.layout.checkpoint_path("t", "", ids[0])
    doc = json.loads(oldest.read_text(encoding="utf-8"))
    doc["parent_checkpoint_id"] = ids[-1]
    oldest.write_text(json.dumps(doc, indent=2, sort_keys=True), encoding="utf-8")
    return root, ids


def test_the_walk_goes_up_parent_by_parent_and_refuses_a_cycle_naming_the_file(
    cyclic: tuple[Path, list[str]],
) -> None:
    root, ids = cyclic
    store = RepoSaver(root).store
    walked = []
    with pytest.raises(FileFormatError) as caught:
        for record in islice(store.ancestors("t", "", ids[-1]), 50):  # a missed cycle: 50
            walked.append(record.checkpoint_id)
    assert walked == list(reversed(ids[:-1]))  # every ancestor once, then the cycle
    assert caught.value.path.endswith(".json") and caught.value.pointer == "/parent_checkpoint_id"


def test_a_view_walks_to_the_cycle_and_stops_there(cyclic: tuple[Path, list[str]]) -> None:
    """The review and the views show what they can of such a history (validate names it)."""
    root, ids = cyclic
    reader = Reader(root)
    walked = [r.checkpoint_id for r in islice(reader.ancestors("t", "", ids[-1]), 50)]
    assert walked == list(reversed(ids[:-1]))
    assert line_to(reader, "t", "", ids[-1], []) == ids
    assert line_to(reader, "t", "", ids[-1], [ids[1]]) == ids[2:]


def test_a_walk_ends_before_reading_a_parent_it_is_told_to_stop_at(cyclic: tuple[Path, list[str]]) -> None:
    """A view stops where the part it shows begins, without reading that checkpoint (prune's
    walk stops where an earlier walk went: reading it again made the plan quadratic)."""
    root, ids = cyclic
    store = RepoSaver(root).store
    real, read = store.get, []

    def counting(thread_id: str, ns: str, cid: str) -> CheckpointRecord:
        read.append(cid)
        return real(thread_id, ns, cid)

    store.get = counting  # type: ignore[method-assign]
    walked = [r.checkpoint_id for r in store.ancestors("t", "", ids[-1], stop=lambda c: c == ids[1])]
    assert walked == list(reversed(ids[2:-1]))
    assert ids[1] not in read and ids[0] not in read
