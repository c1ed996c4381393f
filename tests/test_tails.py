"""A long thread's puts, counted (issue 37, item 3: bounded tails): the periodic whole copy of a
list and the work a put does per checkpoint of its thread must not grow with the thread.
Counts, not times: the times are bench/tails.py's. Each test fails on the code before its change.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base import empty_checkpoint

from graphs import Recorder, cfg, chat_graph
from helpers import lookups_per_put
from langgraph_checkpoint_repo import RepoSaver
from langgraph_checkpoint_repo.core import lineage
from langgraph_checkpoint_repo.core.format.objects import Sharer
from langgraph_checkpoint_repo.core.lineage import Choice, Lineage, Node, current_of, find_heads, has_cycle
from langgraph_checkpoint_repo.values import ValueWriter

MESSAGES = ("t", "", "messages")


def _chat(saver: RepoSaver, turns: range) -> None:
    """Turns of chat_graph whose messages are long enough to be stored as objects."""
    graph = chat_graph(saver)
    for n in turns:
        text = f"turn {n}: " + "please keep this message long enough to be stored as an object " * 2
        graph.invoke({"messages": [HumanMessage(text, id=f"h{n}")]}, cfg("t"))


def test_a_whole_copy_looks_up_only_the_chunks_its_new_items_changed(tmp_path: Path) -> None:
    """A whole copy of a 200-message list (every ``snapshot_every`` appends) hashed and looked
    up every chunk of it again (71 to 74 lookups here, one per chunk on every level: O(N) per
    copy, the slowest put of a long thread). A chunk the last copy stored or found, with the
    same tree, is referred to where it is, so a copy looks up the chunks its new items
    changed, however long the list."""
    saver = RepoSaver(tmp_path / "root", durable=False, snapshot_every=8)
    counts = lookups_per_put(saver)
    _chat(saver, range(100))
    latest = saver.get_tuple(cfg("t"))
    assert latest is not None and len(latest.checkpoint["channel_values"]["messages"]) == 200
    copies = [c for c in counts[-40:] if c > 2]  # an append looks up its one or two new messages
    assert len(copies) >= 3, counts[-40:]
    assert max(copies) <= 15, counts[-40:]


def test_a_whole_copy_cuts_only_the_chunks_its_new_items_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A whole copy cut the whole list into chunks again, item by item and level by level
    (each chunk's key hashed, its tree compared with the last copy's): O(messages) of Python
    per copy, half of the slowest put of a 1,000-turn thread. Cut from how the last copy cut
    it (``Frame``), a copy of a 240-message list cuts as many chunks as one of 80."""
    per_copy: list[int] = []
    chunk, chunk_refs = Sharer._chunk, Sharer.chunk_refs

    def counted_chunk(self: Sharer, *args: Any) -> Any:
        per_copy[-1] += 1
        return chunk(self, *args)

    def counted_refs(self: Sharer, *args: Any) -> Any:
        per_copy.append(0)
        return chunk_refs(self, *args)

    monkeypatch.setattr(Sharer, "_chunk", counted_chunk)
    monkeypatch.setattr(Sharer, "chunk_refs", counted_refs)
    saver = RepoSaver(tmp_path / "root", durable=False, snapshot_every=8)
    _chat(saver, range(40))
    early = list(per_copy[-3:])
    _chat(saver, range(40, 120))
    late = per_copy[-3:]
    assert len(early) == len(late) == 3, per_copy
    assert max(late) <= max(early) + 4, (early, late)
    latest = saver.get_tuple(cfg("t"))
    assert latest is not None and len(latest.checkpoint["channel_values"]["messages"]) == 240


def test_the_chunks_kept_for_the_next_copy_are_those_of_the_last_copy_alone(tmp_path: Path) -> None:
    """What a whole copy keeps for the next one does not grow with the copies before it: the
    chunks of the list as last copied and the files holding them (each is checked with one
    lstat per copy; kept forever, a long thread's copy checked every chunk it ever cut)."""
    saver = RepoSaver(tmp_path / ".langgraph", durable=False, snapshot_every=2)
    messages: list[Any] = []
    kept: dict[int, int] = {}
    for i in range(1, 401):
        messages = [*messages, (HumanMessage if i % 2 else AIMessage)(f"message {i}", id=f"m{i}")]
        checkpoint = empty_checkpoint()
        checkpoint["id"] = f"1ef00000-0000-6000-8000-{i:012x}"
        checkpoint["channel_values"] = {"messages": messages}
        checkpoint["channel_versions"] = {"messages": f"{i:08d}.0"}
        config: Any = cfg("t", checkpoint_ns="")
        if i > 1:
            config["configurable"]["checkpoint_id"] = f"1ef00000-0000-6000-8000-{i - 1:012x}"
        versions = {"messages": f"{i:08d}.0"}
        saver.put(config, checkpoint, {"source": "loop", "step": i, "parents": {}}, versions)
        state = saver._lists[("t", "", "messages")]
        if state.frame is not None and state.chunks:
            copied = {key for cut in state.frame.levels for key in cut.keys}
            assert set(state.chunks) <= copied, f"put {i}: chunks kept that the last copy does not hold"
            kept[i] = len(state.chunks)
    assert len(kept) > 100  # a copy every other put, each checked


def test_the_chunks_are_looked_up_again_once_a_file_holding_one_changed(tmp_path: Path) -> None:
    """The chunks of the last copy are used only while every file holding one has its stat key
    (the one cache rule): a file of an earlier copy touched (as ``git checkout`` or a hand edit
    leaves it) makes the next copy look every chunk up again, and the thread reads whole."""
    saver = RepoSaver(tmp_path / "root", durable=False, snapshot_every=8)
    counts = lookups_per_put(saver)
    _chat(saver, range(60))
    state = saver._lists[MESSAGES]
    chain = {dep[0] for dep in state.deps}
    older = [dep[0] for dep in state.holders.values() if dep[0] not in chain]
    assert older, "no chunk of the list is held by a file outside its chain"
    st = os.stat(older[0])
    os.utime(older[0], ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    done = len(counts)
    _chat(saver, range(60, 70))
    copies = [c for c in counts[done:] if c > 2]
    assert copies and copies[0] >= 30, counts[done:]  # every chunk of the 120-message list
    assert max(copies[1:], default=0) <= 15, counts[done:]  # known again after that copy
    fresh = RepoSaver(tmp_path / "root").get_tuple(cfg("t"))
    assert fresh is not None
    messages = fresh.checkpoint["channel_values"]["messages"]
    assert len(messages) == 140 and [m.id for m in messages[::2]] == [f"h{n}" for n in range(70)]


def test_a_copy_on_known_chunks_writes_the_bytes_looking_each_up_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same calls made into two savers, one referring to the chunks the last copy knew and
    one looking every chunk up: the same checkpoint files, byte for byte but for the names of
    the writes files each took (random)."""
    recorder = Recorder()
    graph = chat_graph(recorder)
    for n in range(45):
        text = f"turn {n}: " + "please keep this message long enough to be stored as an object " * 2
        graph.invoke({"messages": [HumanMessage(text, id=f"h{n}")]}, cfg("t"))
    original = ValueWriter.known_chunks
    used: list[bool] = []

    def counted(self: ValueWriter, *args: Any) -> Any:
        got = original(self, *args)
        used.append(got is not None)
        return got

    folders: dict[str, Path] = {}
    for name in ("known", "looked-up"):
        monkeypatch.setattr(ValueWriter, "known_chunks", counted if name == "known" else lambda *a: None)
        saver = RepoSaver(tmp_path / name, durable=False, snapshot_every=8)
        for method, args in recorder.calls:
            getattr(saver, method)(*args)
        folders[name] = saver.store.layout.checkpoints_dir("t", "")
    assert used.count(True) >= 3
    names = sorted(p.name for p in folders["known"].glob("*.json"))
    assert names == sorted(p.name for p in folders["looked-up"].glob("*.json")) and len(names) >= 100
    for file in names:
        known, looked_up = (_without_writes_names(folders[n] / file) for n in folders)
        assert known == looked_up, file


def _without_writes_names(path: Path) -> bytes:
    """A checkpoint file's bytes with the names of the writes files it took left out."""
    doc = json.loads(path.read_bytes())
    doc["parent_writes"] = sorted(doc.get("parent_writes", {}).values(), key=json.dumps)
    return json.dumps(doc, sort_keys=True, indent=1).encode()


def test_the_rule_is_not_computed_again_over_every_link_after_each_put(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Which checkpoint continues (lineage.py's rule) was computed again over every link after
    each checkpoint added: a ``get_tuple`` after each put cost O(checkpoints) (7.5 ms at 5,000
    checkpoints). A put continuing its thread changes only its parent's place among the
    heads: the cycle check (one walk over every link) runs once, not once per put."""
    walks: list[int] = []
    original = lineage.has_cycle

    def counted(links: Any) -> bool:
        walks.append(len(links))
        return original(links)

    monkeypatch.setattr(lineage, "has_cycle", counted)
    lin = Lineage()
    parent = None
    for n in range(300):
        cid = f"1f0{n:08d}"
        lin.add(cid, Node(parent))
        assert lin.current() == cid and [h.checkpoint_id for h in lin.heads()] == [cid]
        parent = cid
    assert len(walks) <= 1, f"{len(walks)} walks over every link for 300 puts"


def test_the_rule_kept_up_to_date_is_the_rule_computed_over_every_link() -> None:
    """Checkpoints added one by one in any shape (forks, deliberate or not, choices, parents
    missing or written after their children, cycles, a checkpoint its own parent, a
    checkpoint put again):
    after each, the heads and the one that continues are those computed from all the links
    afresh."""
    rng = random.Random(37)
    for _ in range(40):
        lin = Lineage()
        for _ in range(40):
            ids = sorted(lin.links)
            cid = rng.choice(ids) if ids and rng.random() < 0.1 else f"{rng.randrange(10**6):07d}"
            # a checkpoint its own parent too (a put whose config names its own id): a cycle
            parent = rng.choice([None, f"{rng.randrange(10**6):07d}", *ids[-3:], *ids[-3:], cid])
            choice = None
            if ids and rng.random() < 0.1:
                choice = Choice(rng.choice(ids), tuple(rng.sample(ids, min(2, len(ids)))))
            lin.add(cid, Node(parent, choice, deliberate=rng.random() < 0.2))  # a replay, update_state
            links = lin.links
            heads = find_heads(links)
            assert lin.heads() == heads
            assert lin.current() == (max(links) if has_cycle(links) else current_of(links, heads))


def _cycle_by_walking_every_start(links: dict[str, Node]) -> bool:
    """A cycle as its definition reads: some walk up the parents comes back to where it began."""
    for start in links:
        seen: set[str] = set()
        walk: str | None = start
        while walk is not None and walk in links and walk not in seen:
            seen.add(walk)
            walk = links[walk].parent
        if walk is not None and walk in seen:
            return True
    return False


def test_the_cycle_check_finds_what_walking_from_every_checkpoint_finds() -> None:
    """has_cycle answers without a walk when every parent is an older id than its child, and
    walks otherwise (a clock behind, a hand edit): random links of both kinds, self-parents,
    parents that are not there, and cycles, checked against the definition."""
    rng = random.Random(37)
    for _ in range(600):
        ids = [f"{i:04d}" for i in range(rng.randrange(1, 12))]
        links: dict[str, Node] = {}
        for i, cid in enumerate(ids):
            roll = rng.random()
            if roll < 0.6 and i:
                parent: str | None = ids[rng.randrange(i)]  # older: the usual history
            elif roll < 0.8:
                parent = rng.choice([*ids, "9999"])  # any, itself, or one not there
            else:
                parent = None
            links[cid] = Node(parent)
        assert has_cycle(links) == _cycle_by_walking_every_start(links), links
