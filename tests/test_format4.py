"""Format 4: lean turns (docs/format.md, "Format 4 in one screen").

A turn writes only checkpoint files, each holding what its step changed: bookkeeping as a
delta on its parent, the step's new messages as objects of its own, its parent's pending
writes; a user's text is stored once however it was given. Every reader still sees whole
checkpoints, every pending write and every value exactly as LangGraph passed them.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bench.agent_graphs import BUILDERS, INPUT_FORMS, marker, turn_input
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from forkserver import Parent
from graphs import ask_graph, cfg, chain_graph, chat_graph, chat_root, make_checkpoint
from helpers import checkpoint_files, cli, load, rewrite
from langgraph_checkpoint_repo import FileFormatError, InvalidWriteError, RepoCheckpointError, RepoSaver
from langgraph_checkpoint_repo.core.format.bookkeeping import DELTA_EVERY
from langgraph_checkpoint_repo.core.threads import LINEAGE_REREADS

CONFIG: Any = cfg("t")


def added(root: Path, before: set[Path]) -> list[Path]:
    return sorted(p for p in root.rglob("*.json") if ".cache" not in p.parts and p not in before)


def files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*.json") if ".cache" not in p.parts}


@pytest.mark.parametrize("graph", sorted(BUILDERS))
def test_a_turn_writes_only_checkpoints_and_each_users_text_once_in_any_form(
    graph: str, tmp_path: Path
) -> None:
    """Every turn (a message, a message dict, a (role, text) tuple in turn) adds checkpoint
    files only, its text in exactly one of them, and leaves no writes file behind."""
    root = tmp_path / "root"
    app = BUILDERS[graph](RepoSaver(root))
    for turn in range(1, 7):
        before = files(root)
        form, given = turn_input(turn)
        app.invoke(given, CONFIG)
        new = added(root, before)
        assert new and all(p.parent.name == "checkpoints" for p in new), (form, new)
        copies = sum(p.read_bytes().count(marker(turn).encode()) for p in new)
        assert copies == 1, (turn, form, copies)
        assert not [p for p in root.rglob("writes/*.json")], form
    assert {turn_input(t)[0] for t in range(1, 4)} == set(INPUT_FORMS)


@pytest.mark.parametrize("form", INPUT_FORMS)
def test_an_input_in_any_form_reads_back_exactly_as_given(form: str, tmp_path: Path) -> None:
    """The input checkpoint's ``__start__`` holds the dict, the pair or the message as given
    (a dict or pair is stored as a reference to its message and expands back to itself)."""
    saver = RepoSaver(tmp_path / "root")
    app = chat_graph(saver)
    text = "hello [input-form]"
    given: dict[str, Any] = {
        "message": {"messages": [HumanMessage(content=text, id="m1")]},
        "dict": {"messages": [{"role": "user", "content": text}]},
        "tuple": {"messages": [("user", text)]},
    }[form]
    app.invoke(given, CONFIG)
    first = list(saver.list(CONFIG))[-1]
    stored = first.checkpoint["channel_values"]["__start__"]
    expected = given if form != "tuple" else {"messages": [["user", text]]}
    assert stored == expected
    fresh = RepoSaver(tmp_path / "root")  # and from the files alone
    assert list(fresh.list(CONFIG))[-1].checkpoint["channel_values"]["__start__"] == expected
    # the input is a reference to the message the channel holds: its text is stored once (the
    # echo's reply holds it too, inside a longer string)
    quoted = json.dumps(text)
    text_files = [p for p in (tmp_path / "root").rglob("*.json") if quoted in p.read_text()]
    assert len(text_files) == 1
    if form != "message":
        raw = text_files[0].read_text()
        assert ('"$role": "user"' if form == "dict" else '"$pair": "user"') in raw


def test_an_input_whose_message_would_not_give_it_back_is_stored_as_given(tmp_path: Path) -> None:
    """A dict with keys a message does not give back (``name``) stays a plain dict."""
    saver = RepoSaver(tmp_path / "root")
    given = {"messages": [{"role": "user", "content": "hi there", "name": "ann"}]}
    chat_graph(saver).invoke(given, CONFIG)
    first = list(saver.list(CONFIG))[-1]
    assert first.checkpoint["channel_values"]["__start__"] == given
    path = saver.store.layout.checkpoint_path("t", "", first.checkpoint["id"])
    assert "$role" not in json.dumps(load(path))


def test_bookkeeping_is_a_delta_with_a_whole_copy_every_few_and_reads_whole(tmp_path: Path) -> None:
    """Checkpoints hold only what changed since their parent, a whole one every DELTA_EVERY;
    every read gets LangGraph's whole channel_versions and versions_seen, as InMemorySaver."""
    root = tmp_path / "root"
    repo, mem = RepoSaver(root), InMemorySaver()
    apps = [BUILDERS["create_agent"](s) for s in (repo, mem)]
    for turn in range(1, 8):
        for app in apps:
            app.invoke(turn_input(turn)[1], CONFIG)
    docs = [load(p) for p in sorted((root / "threads" / "t" / "checkpoints").glob("*.json"))]
    depths = [d.get("delta", 0) for d in docs]
    assert depths[0] == 0 and max(depths) == DELTA_EVERY and depths.count(0) >= 2
    assert all(b == a + 1 or b == 0 for a, b in itertools.pairwise(depths))
    fresh = RepoSaver(root)
    for got, want in zip(fresh.list(CONFIG), mem.list(CONFIG), strict=True):
        assert got.checkpoint["channel_versions"].keys() == want.checkpoint["channel_versions"].keys()
        assert got.checkpoint["versions_seen"].keys() == want.checkpoint["versions_seen"].keys()
        assert got.metadata == want.metadata
    # the versions are exactly what LangGraph gave the saver
    latest = fresh.get_tuple(CONFIG)
    assert latest is not None
    assert latest.checkpoint["channel_versions"] == repo.get_tuple(CONFIG).checkpoint["channel_versions"]  # type: ignore[union-attr]


def test_a_delta_reads_what_its_parent_says_and_sees_a_hand_edit_of_it(tmp_path: Path) -> None:
    """A running saver sees an edit of a parent's bookkeeping in every delta built on it."""
    root = tmp_path / "root"
    saver = RepoSaver(root)
    app = chat_graph(saver)
    app.invoke({"messages": [("user", "one")]}, CONFIG)
    app.invoke({"messages": [("user", "two")]}, CONFIG)
    latest = saver.get_tuple(CONFIG)
    assert latest is not None
    paths = sorted((root / "threads" / "t" / "checkpoints").glob("*.json"))
    last = load(paths[-1])
    assert last.get("delta")
    parent = paths[-2]

    def edit(doc: dict[str, Any]) -> None:
        doc["checkpoint"].setdefault("versions_seen", {})["__hand__"] = {"x": "00000001.00000000"}

    rewrite(parent, edit)
    again = saver.get_tuple(CONFIG)
    assert again is not None and again.checkpoint["versions_seen"]["__hand__"] == HAND_WIDE


def _settled_line(tmp_path: Path) -> tuple[RepoSaver, list[Path]]:
    """A saver that has read its latest checkpoint with every file of its line settled (the
    whole document kept against their stat keys: ThreadStore._chains), and those files."""
    root = tmp_path / "root"
    saver = RepoSaver(root)
    app = chat_graph(saver)
    for text in ("one", "two", "three"):
        app.invoke({"messages": [("user", text)]}, CONFIG)
    paths = sorted((root / "threads" / "t" / "checkpoints").glob("*.json"))
    depths = [load(p).get("delta", 0) for p in paths]
    assert depths[-1] >= 4 and 0 in depths  # a line of deltas down to a whole one
    time.sleep(0.2)  # past the cache rule's racy window: every file is kept by its stat key
    for _ in range(2):
        assert saver.get_tuple(CONFIG) is not None
    line = paths[len(paths) - 1 - depths[-1] :]
    assert load(line[0]).get("delta", 0) == 0 and len(saver.store.docs._chains) >= len(line) - 2
    return saver, line


def test_a_hand_edit_of_a_settled_ancestor_is_seen_after_its_line_was_kept(tmp_path: Path) -> None:
    """The whole document kept for a delta whose line was settled is dropped when any file
    of that line changes: an edit of the whole checkpoint at its root, several deltas back."""
    saver, line = _settled_line(tmp_path)

    def edit(doc: dict[str, Any]) -> None:
        doc["checkpoint"].setdefault("versions_seen", {})["__hand__"] = {"x": "00000001.00000000"}

    rewrite(line[0], edit)
    again = saver.get_tuple(CONFIG)
    assert again is not None and again.checkpoint["versions_seen"]["__hand__"] == HAND_WIDE


def test_a_settled_ancestor_removed_after_its_line_was_kept_names_it(tmp_path: Path) -> None:
    """A delta's kept whole document is not used once a file of its line is gone: the read
    fails naming the missing checkpoint, as a first read would."""
    saver, line = _settled_line(tmp_path)
    gone = load(line[1])["checkpoint_id"]
    line[1].unlink()
    latest = load(line[-1])["checkpoint_id"]
    with pytest.raises(FileFormatError, match=f"{gone}.*missing"):
        saver.store.docs.header("t", "", latest)  # the whole document alone, as every reader gets it
    with pytest.raises(FileFormatError, match=f"{gone}.*missing"):
        saver.get_tuple(CONFIG)


def test_a_pruned_parent_put_back_is_read_through_after_its_base_line_was_read(tmp_path: Path) -> None:
    """After prune, a delta's line ends at the base file kept for its removed parent. When the
    parent's file comes back (git restore, a hand-written one), the running saver reads through
    it as a fresh one does: a line that ends at a base file is not kept, since the parent's
    absence, which it depends on, shows in no stat key of the files it read."""
    root = tmp_path / "root"
    saver = RepoSaver(root)
    app = chat_graph(saver)
    for i in range(3):
        app.invoke({"messages": [("user", f"turn {i}")]}, CONFIG)
    tdir = root / "threads" / "t"
    before = {p.name: load(p) for p in (tdir / "checkpoints").glob("*.json")}
    saver.prune(["t"])
    (kept,) = (tdir / "checkpoints").glob("*.json")
    parent = load(kept)["parent_checkpoint_id"]
    time.sleep(0.2)  # past the racy window: the line is read settled, and would be kept
    saver.get_tuple(CONFIG)
    saver.get_tuple(CONFIG)
    base = load(next((tdir / "values").glob("@*.json")))
    messages = next((tdir / "values").glob("messages@*.json"))
    doc = before[f"{parent}.json"]  # the parent back, whole, with a mark of the hand that wrote it
    doc.pop("delta")
    doc.pop("parent_writes", None)
    doc["new_values"].pop("messages")
    doc["parent_checkpoint_id"] = None
    doc["checkpoint"].update(
        v=4,
        channel_versions=base["checkpoint"]["channel_versions"],
        versions_seen={**base["checkpoint"]["versions_seen"], "__hand__": {"x": "00000001.00000000"}},
    )
    doc["values"] = {"messages": f"values/{messages.name}"}
    (tdir / "checkpoints" / f"{parent}.json").write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    here, fresh = saver.get_tuple(CONFIG), RepoSaver(root).get_tuple(CONFIG)
    assert here is not None and fresh is not None
    assert "__hand__" in fresh.checkpoint["versions_seen"]
    assert here.checkpoint == fresh.checkpoint


def test_a_delta_whose_parent_is_missing_names_both(tmp_path: Path) -> None:
    root = tmp_path / "root"
    saver = RepoSaver(root)
    app = chat_graph(saver)
    app.invoke({"messages": [("user", "one")]}, CONFIG)
    paths = sorted((root / "threads" / "t" / "checkpoints").glob("*.json"))
    parent = load(paths[-1])["parent_checkpoint_id"]
    (paths[-1].parent / f"{parent}.json").unlink()
    with pytest.raises(FileFormatError, match=f"{parent}.*missing"):
        RepoSaver(root).get_tuple(CONFIG)
    out = cli(root, "validate")
    assert out.returncode == 1 and parent in out.stdout


def test_an_interrupted_step_keeps_its_writes_file_until_the_resumed_step_takes_it(tmp_path: Path) -> None:
    """Writes of a checkpoint without a child stay a file (durable, readable); the child the
    resumed run writes takes them, and they read back from it, for every reader."""
    from langgraph.types import Command

    root = tmp_path / "root"
    saver = RepoSaver(root)
    app = ask_graph(saver)
    app.invoke({"log": []}, CONFIG)
    waiting = saver.get_tuple(CONFIG)
    assert waiting is not None and waiting.pending_writes
    assert list(root.rglob("writes/*.json"))
    before = list(waiting.pending_writes)
    app.invoke(Command(resume="yes"), CONFIG)
    assert not list(root.rglob("writes/*.json"))
    for reader in (saver, RepoSaver(root)):
        again = reader.get_tuple(waiting.config)
        assert again is not None
        # the interrupt, and the resumed step's own writes (equal values: a stored dict keeps
        # its items, not their order)
        got = [tuple(w) for w in again.pending_writes or []]
        assert all(tuple(w) in got for w in before)
        assert {w[1] for w in got} == {"__interrupt__", "__resume__", "answer", "log"}
    assert cli(root, "validate").returncode == 0


def test_a_writes_file_removed_while_it_is_read_is_read_from_the_child(tmp_path: Path) -> None:
    """A reader that listed a writes file a child then took finds the record in the child."""
    root = tmp_path / "root"
    saver = RepoSaver(root)
    app = ask_graph(saver)
    app.invoke({"log": []}, CONFIG)
    waiting = saver.get_tuple(CONFIG)
    assert waiting is not None
    reader = RepoSaver(root)
    reader.get_tuple(waiting.config)  # lists the writes folder, caches the file
    store = reader.store
    real = store.files.read_doc
    taken = threading.Event()

    def read_doc(path: Path, kind: str) -> dict[str, Any]:
        if kind == "writes" and not taken.is_set():
            from langgraph.types import Command

            taken.set()
            app.invoke(Command(resume="yes"), CONFIG)  # the child takes the file now
        return real(path, kind)

    store.files.docs.drop_under(root)
    store.files.read_doc = read_doc  # type: ignore[method-assign]
    got = reader.get_tuple(waiting.config)
    assert taken.is_set() and got is not None
    fresh = RepoSaver(root).get_tuple(waiting.config)
    assert fresh is not None
    channels = {w[1] for w in got.pending_writes or []}
    assert channels == {w[1] for w in fresh.pending_writes or []} >= {"__interrupt__", "answer"}


def test_an_edited_object_a_checkpoint_holds_is_refused_naming_it(tmp_path: Path) -> None:
    root = tmp_path / "root"
    saver = RepoSaver(root)
    chat_graph(saver).invoke({"messages": [HumanMessage(content="original text", id="m1")]}, CONFIG)
    found = (root / "threads").rglob("checkpoints/*.json")
    holder = next(p for p in found if "original text" in p.read_text())
    name = next(iter(load(holder)["objects"]))

    def edit(doc: dict[str, Any]) -> None:
        doc["objects"][name]["$fields"]["content"] = "forged text"

    rewrite(holder, edit)
    with pytest.raises(FileFormatError, match=f"/objects/{name}"):
        RepoSaver(root).get_tuple(CONFIG)
    assert cli(root, "validate").returncode == 1


def test_prune_keeps_a_delta_readable_through_the_base_of_its_removed_parent(tmp_path: Path) -> None:
    """keep_latest leaves one checkpoint, a delta: its parent's bookkeeping goes to a base
    file, the objects it refers to in removed checkpoints to objects/, and it reads as before."""
    root = tmp_path / "root"
    saver = RepoSaver(root)
    app = BUILDERS["create_agent"](saver)
    for turn in range(1, 4):
        app.invoke(turn_input(turn)[1], CONFIG)
    before = saver.get_tuple(CONFIG)
    assert before is not None
    saver.prune(["t"])
    left = sorted((root / "threads" / "t" / "checkpoints").glob("*.json"))
    assert len(left) == 1 and load(left[0]).get("delta")
    assert list((root / "threads" / "t" / "values").glob("@*.json"))
    after = RepoSaver(root).get_tuple(CONFIG)
    assert after is not None
    assert after.checkpoint == before.checkpoint and after.metadata == before.metadata
    assert cli(root, "validate").returncode == 0
    assert cli(root, "fsck").returncode == 0
    BUILDERS["create_agent"](RepoSaver(root)).invoke(turn_input(4)[1], CONFIG)  # and carries on


# ---------------------------------------------------------------------------
# short versions on two git branches
# ---------------------------------------------------------------------------
SHORT = re.compile(r"\d{8}\.[0-9a-f]{8}")
# a short version as LangGraph is shown it: widened to the long form's 32-digit counter, so the
# long versions another saver (the Agent Server's adapter, SqliteSaver...) continues with count
# as newer (core/format/versions.py)
WIDE = re.compile(r"0{24}\d{8}\.[0-9a-f]{8}")
HAND_WIDE = {"x": "0" * 24 + "00000001.00000000"}  # the hand edit's {"x": "00000001.00000000"}, read


def git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=False)


def line_of(saver: RepoSaver, head: Any) -> list[Any]:
    """The checkpoints from ``head`` back to the first, newest first (parent links only)."""
    out = []
    config = head
    while config is not None:
        tup = saver.get_tuple(config)
        assert tup is not None
        out.append(tup)
        config = tup.parent_config
    return out


def test_short_versions_increase_and_stay_apart_on_two_branches_merged_by_git(tmp_path: Path) -> None:
    """Two git branches continue one checkpoint; git merges them without a conflict, every
    version is short in the files (widened when read), each line's versions only grow, and no
    (channel, version) names two values: the same counter on both branches, told apart by its
    random part."""
    repo = tmp_path / "repo"
    repo.mkdir()
    for args in (
        ("init", "-q", "-b", "main"),
        ("config", "user.name", "T"),
        ("config", "user.email", "t@example.invalid"),
        ("config", "commit.gpgsign", "false"),
    ):
        assert git(repo, *args).returncode == 0
    root = repo / ".langgraph"
    chat_graph(RepoSaver(root)).invoke({"messages": [("user", "base")]}, CONFIG)
    git(repo, "add", "-A")
    assert git(repo, "commit", "-q", "-m", "base").returncode == 0
    heads: dict[str, Any] = {}
    for branch in ("b", "a"):
        assert git(repo, "checkout", "-q", "-b", branch, "main").returncode == 0
        saver = RepoSaver(root)  # a fresh process on each branch
        app = chat_graph(saver)
        for i in range(2):
            app.invoke({"messages": [("user", f"{branch} turn {i}")]}, CONFIG)
        head = saver.get_tuple(CONFIG)
        assert head is not None
        heads[branch] = head
        git(repo, "add", "-A")
        assert git(repo, "commit", "-q", "-m", branch).returncode == 0
    merge = git(repo, "merge", "--no-edit", "b")
    assert merge.returncode == 0 and "CONFLICT" not in merge.stdout, merge.stdout

    for path in (root / "threads" / "t" / "checkpoints").glob("*.json"):
        doc = load(path)
        stored = [doc.get("version"), *doc["checkpoint"].get("channel_versions", {}).values()]
        assert all(SHORT.fullmatch(v) for v in stored if v is not None), path
    merged = RepoSaver(root)
    lines = {b: line_of(merged, heads[b].config) for b in heads}
    found: dict[tuple[str, str], set[str]] = {}
    for branch, line in lines.items():
        # each head reads after the merge exactly as on its branch
        assert line[0].checkpoint == heads[branch].checkpoint
        for child, parent in itertools.pairwise(line):
            for channel, version in child.checkpoint["channel_versions"].items():
                assert WIDE.fullmatch(version), version
                before = parent.checkpoint["channel_versions"].get(channel)
                assert before is None or version >= before  # LangGraph compares strings
                if before is not None and version != before:
                    assert version > before and counter(version) > counter(before)
        for tup in line:
            for channel, value in tup.checkpoint["channel_values"].items():
                version = tup.checkpoint["channel_versions"][channel]
                found.setdefault((channel, version), set()).add(repr(value))
    assert all(len(values) == 1 for values in found.values()), found
    fork = {t.checkpoint["id"] for t in lines["a"]} & {t.checkpoint["id"] for t in lines["b"]}
    new: dict[str, set[str]] = {}  # the versions each branch made after the fork
    for branch, line in lines.items():
        new[branch] = set()
        for child, parent in itertools.pairwise(line):
            if child.checkpoint["id"] not in fork:
                before = parent.checkpoint["channel_versions"]
                now = child.checkpoint["channel_versions"]
                new[branch] |= {v for c, v in now.items() if before.get(c) != v}
    assert not new["a"] & new["b"]
    same_counter = {counter(v) for v in new["a"]} & {counter(v) for v in new["b"]}
    assert same_counter  # both branches counted on from one checkpoint: only the random part differs


def counter(version: str) -> int:
    return int(version.split(".")[0])


# ---------------------------------------------------------------------------
# files per turn
# ---------------------------------------------------------------------------
def test_a_create_agent_turn_adds_five_checkpoint_files_and_nothing_else(tmp_path: Path) -> None:
    """A tool-calling create_agent turn is five supersteps (input, model, tools, model, and the
    step that ends it): five checkpoint files, at most eight files, every turn alike; no file
    written before is changed, and only the writes files a child took are gone."""
    root = tmp_path / "root"
    app = BUILDERS["create_agent"](RepoSaver(root))
    counts = []
    for turn in range(1, 7):
        before = {p: p.read_bytes() for p in files(root)}
        app.invoke(turn_input(turn)[1], CONFIG)
        now = files(root)
        new = [p for p in now if p not in before]
        counts.append(len(new))
        assert all(p.parent.name == "checkpoints" for p in new)
        assert all(p.read_bytes() == raw for p, raw in before.items() if p in now)
        assert all(p.parent.name == "writes" for p in before if p not in now)
    assert counts == [counts[0]] * len(counts) and counts[0] <= 8, counts


# ---------------------------------------------------------------------------
# hand edits
# ---------------------------------------------------------------------------
def test_a_hand_edit_is_seen_by_every_reader(tmp_path: Path) -> None:
    """An item of a list edited by hand in a checkpoint in the middle of the history, and a
    parent's bookkeeping edited under a delta: the saver that wrote them (warm), a fresh
    saver, the graph, the read model and the command line all see both on their next read."""
    from langgraph_checkpoint_repo.readmodel.reader import Reader

    root = tmp_path / "root"
    saver = RepoSaver(root)
    app = chain_graph(saver)
    for _ in range(3):
        app.invoke({"log": []}, CONFIG)
    assert saver.get_tuple(CONFIG) is not None  # warm: everything read and cached once
    paths = sorted((root / "threads" / "t" / "checkpoints").glob("*.json"))
    holder = next(p for p in paths if '"b"' in p.read_text())  # node b's first item

    def edit_item(doc: dict[str, Any]) -> None:
        items = doc["new_values"]["log"]["append"]["items"]
        items[items.index("b")] = "b, edited by hand"

    rewrite(holder, edit_item)
    last = load(paths[-1])
    assert last.get("delta")
    parent = paths[-2]

    def edit_seen(doc: dict[str, Any]) -> None:
        doc["checkpoint"].setdefault("versions_seen", {})["__hand__"] = {"x": "00000001.00000000"}

    rewrite(parent, edit_seen)
    hand = {"x": "00000001.00000000"}

    for reader in (saver, RepoSaver(root)):
        tup = reader.get_tuple(CONFIG)
        assert tup is not None
        assert "b, edited by hand" in tup.checkpoint["channel_values"]["log"]
        assert tup.checkpoint["versions_seen"]["__hand__"] == HAND_WIDE
    assert "b, edited by hand" in app.get_state(CONFIG).values["log"]
    model = Reader(root)
    cid = model.checkpoint_ids("t", "")[-1]
    assert "b, edited by hand" in json.dumps(model.state("t", "", cid, revive=False).trees["log"])
    assert model.get("t", "", cid).versions_seen["__hand__"] == hand
    shown = cli(root, "show", "t", "--json")
    assert shown.returncode == 0 and "b, edited by hand" in shown.stdout
    assert cli(root, "validate").returncode == 0


# ---------------------------------------------------------------------------
# reading the latest checkpoint of a long history
# ---------------------------------------------------------------------------
def fresh_read(parent: Parent, root: Path, checkpoint_id: str | None) -> tuple[int, int, str]:
    """(checkpoint files opened, length of log, id read) by get_tuple in a new process (a
    child forked from ``parent``, tests/count_reads.py)."""
    out, err = parent.start("count_reads", str(root), checkpoint_id or "-").communicate(timeout=120)
    assert out.strip(), err
    opened, length, cid = json.loads(out.strip().splitlines()[-1])
    return opened, length, cid


def test_a_fresh_process_reads_the_latest_checkpoint_without_walking_the_history(tmp_path: Path) -> None:
    """However long the thread, a fresh process's get_tuple of the latest checkpoint opens a
    bounded number of checkpoint files (the deltas back to a whole one, the links of the list's
    chain back to a whole copy), for a history of 150 checkpoints as for 300: given its id (as
    LangGraph's config carries it), and without one once the thread's derived index is current
    (finding the latest checks every checkpoint's parent link, docs/forks.md; a process
    records them in .cache/index/, and the next reads only what was added since)."""
    root = tmp_path / "root"
    saver = RepoSaver(root, durable=False, snapshot_every=8)
    app = chain_graph(saver)
    bound = DELTA_EVERY + 1 + 8 + 1  # a delta line and a list chain, each to a whole copy
    runs, seen = 0, []
    parent = Parent(Path(__file__).with_name("count_reads.py"), "count_reads")
    for total in (30, 60):
        while runs < total:
            app.invoke({"log": []}, CONFIG)
            runs += 1
        latest = saver.get_tuple(CONFIG)
        assert latest is not None
        by_id = fresh_read(parent, root, latest.checkpoint["id"])
        first = fresh_read(parent, root, None)  # may read every parent link once, and records them
        again = fresh_read(parent, root, None)
        assert by_id[1:] == first[1:] == again[1:] == (3 * runs, latest.checkpoint["id"])
        # by id: the deltas and the chain; without: also the links the index does not hold
        # (fewer than LINEAGE_REREADS are read again rather than the index rewritten)
        assert by_id[0] <= bound and again[0] <= bound + LINEAGE_REREADS, (runs, by_id, first, again)
        seen.append((by_id[0], again[0]))
    parent.close()
    count = len(list((root / "threads" / "t" / "checkpoints").glob("*.json")))
    assert count >= 300 and len(seen) == 2


# ----------------------------------------------------------------------------
# puts at once (LangGraph saves a step's checkpoint, its writes and a subgraph's checkpoint
# together): a message they both bring is stored once, whatever fails beside it
# ----------------------------------------------------------------------------
HELD = 60.0  # seconds a test waits for a put to get where it should (never reached when healthy)


class _Gated(JsonPlusSerializer):
    """LangGraph's serde, calling ``gates[value]`` when it serialises that string: a put of a
    checkpoint whose channels are ``messages`` then ``gate`` is held there, its messages
    looked up already and its file not yet decided."""

    def __init__(self, gates: dict[str, Callable[[], None]]) -> None:
        super().__init__()
        self.gates = gates

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        if isinstance(obj, str) and obj in self.gates:
            self.gates[obj]()
        return super().dumps_typed(obj)


def _put(saver: RepoSaver, ns: str, message: HumanMessage, gate: str) -> tuple[str, Any]:
    """A put, in ``ns`` of thread "t", of a checkpoint with ``message`` and the ``gate``."""
    version = saver.get_next_version(None, None)
    versions = {"messages": version, "gate": version}  # messages stored first, then the gate
    checkpoint = make_checkpoint(str(uuid6()), {"messages": [message], "gate": gate}, versions)
    saver.put(cfg("t", checkpoint_ns=ns), checkpoint, {"source": "loop", "step": 1}, versions)
    return ns, checkpoint["id"]


def _first_then_second(
    saver: RepoSaver,
    gates: dict[str, Callable[[], None]],
    first: Callable[[], Any],
    second: Callable[[], Any],
    first_gate: str = "gate-a",
    second_gate: str = "gate-b",
) -> tuple[list[Any], list[BaseException]]:
    """Run ``first`` and, once it is held at its gate, ``second``, each in a thread of its
    own. The first stays held until the second is at its own gate (both looked their message
    up before either file is decided) or waits for the first to decide its file; then both
    finish. Their results and errors, first's then second's."""
    at_first, at_second = threading.Event(), threading.Event()

    def hold_first() -> None:
        at_first.set()
        deadline = time.monotonic() + HELD
        while not at_second.wait(0.005):  # the second at its gate, or queued behind the first
            if saver.store.deciders("t") >= 2:
                return
            assert time.monotonic() < deadline, "the second put neither got in nor waited"

    gates.update({first_gate: hold_first, second_gate: at_second.set})
    results: list[Any] = [None, None]
    errors: list[BaseException] = []

    def run(i: int, call: Callable[[], Any]) -> None:
        try:
            results[i] = call()
        except BaseException as exc:  # handed to the test
            errors.append(exc)

    one = threading.Thread(target=run, args=(0, first))
    two = threading.Thread(target=run, args=(1, second))
    one.start()
    assert at_first.wait(HELD) or errors, "the first put never got to its gate"
    two.start()
    one.join(HELD)
    two.join(HELD)
    assert not one.is_alive() and not two.is_alive()
    return results, errors


def _holding(root: Path, text: str) -> list[Path]:
    return sorted(p for p in files(root) if json.dumps(text) in p.read_text())


@pytest.mark.parametrize("namespaces", [("", "inner:1"), ("inner:1", ""), ("", "")])
def test_two_puts_at_once_with_the_same_new_message_store_it_once_and_both_read_back(
    namespaces: tuple[str, str], tmp_path: Path
) -> None:
    """A put that looks a message up while another put of this process (a root checkpoint
    beside a subgraph's, or two of one namespace) is deciding a file that holds it refers to
    it there and waits for it: its text is in one file, and both checkpoints read back whole,
    from the files alone too."""
    root = tmp_path / "root"
    serde = _Gated({})
    saver = RepoSaver(root, serde=serde)
    text = "the same words [at once]"
    message = HumanMessage(content=text, id="m1")
    results, errors = _first_then_second(
        saver,
        serde.gates,
        lambda: _put(saver, namespaces[0], message, "gate-a"),
        lambda: _put(saver, namespaces[1], message, "gate-b"),
    )
    assert not errors, errors
    assert len(_holding(root, text)) == 1, _holding(root, text)
    for reader in (saver, RepoSaver(root)):
        for (ns, cid), gate in zip(results, ("gate-a", "gate-b"), strict=True):
            tup = reader.get_tuple(cfg("t", checkpoint_ns=ns, checkpoint_id=cid))
            assert tup is not None
            assert tup.checkpoint["channel_values"] == {"messages": [message], "gate": gate}


def test_writes_saved_beside_a_put_with_the_same_new_message_refer_to_it_there(tmp_path: Path) -> None:
    """LangGraph saves a task's writes beside a checkpoint: writes that bring a message the
    checkpoint being decided beside them holds refer to it there (its text in one file) and
    read back whole as the pending writes of their checkpoint."""
    root = tmp_path / "root"
    serde = _Gated({})
    saver = RepoSaver(root, serde=serde)
    _, base = _put(saver, "inner:1", HumanMessage(content="before", id="m0"), "before")
    text = "the same words [writes beside]"
    message = HumanMessage(content=text, id="m1")
    writes_cfg = cfg("t", checkpoint_ns="inner:1", checkpoint_id=base)

    def writes() -> None:
        saver.put_writes(writes_cfg, [("messages", [message]), ("gate", "gate-b")], "task-1")

    def put() -> Any:
        return _put(saver, "", message, "gate-a")

    results, errors = _first_then_second(saver, serde.gates, put, writes)
    assert not errors, errors
    assert _holding(root, text) == [saver.store.layout.checkpoint_path("t", "", results[0][1])]
    for reader in (saver, RepoSaver(root)):
        tup = reader.get_tuple(writes_cfg)
        assert tup is not None
        assert tup.pending_writes == [("task-1", "messages", [message]), ("task-1", "gate", "gate-b")]
        tup = reader.get_tuple(cfg("t", checkpoint_ns="", checkpoint_id=results[0][1]))
        assert tup is not None and tup.checkpoint["channel_values"]["messages"] == [message]


def test_a_put_beside_one_that_is_refused_stores_the_message_itself(tmp_path: Path) -> None:
    """The first of two puts at once is refused while it decides its file (a value it cannot
    serialise): the second, which waited for it, holds the message itself and reads back."""
    root = tmp_path / "root"
    serde = _Gated({})
    saver = RepoSaver(root, serde=serde)
    text = "the same words [refused beside]"
    message = HumanMessage(content=text, id="m1")

    def refuse() -> None:
        serde.gates["gate-a"]()  # held as the first put is
        raise ValueError("not this one")

    def first() -> Any:
        serde.gates["refuse"] = refuse
        return _put(saver, "inner:1", message, "refuse")

    def second() -> Any:
        return _put(saver, "", message, "gate-b")

    results, errors = _first_then_second(saver, serde.gates, first, second)
    assert [type(e) for e in errors] == [InvalidWriteError] and "not this one" in str(errors[0])
    assert results[0] is None and not checkpoint_files(root, ns="inner:1")
    assert _holding(root, text) == checkpoint_files(root)
    tup = RepoSaver(root).get_tuple(cfg("t", checkpoint_ns="", checkpoint_id=results[1][1]))
    assert tup is not None and tup.checkpoint["channel_values"] == {"messages": [message], "gate": "gate-b"}


def test_a_put_beside_one_whose_write_fails_stores_the_message_itself(tmp_path: Path) -> None:
    """The first of two puts at once decides its file, then cannot write it (its namespace's
    folder leads out of the root): the second, which may have referred to the message there
    and waited, stores it itself instead, never a reference to a file that is not there."""
    root = tmp_path / "root"
    serde = _Gated({})
    saver = RepoSaver(root, serde=serde)
    outside = tmp_path / "outside"
    outside.mkdir()
    ns_dir = saver.store.layout.checkpoint_path("t", "inner:1", "x").parent
    ns_dir.parent.mkdir(parents=True)
    ns_dir.symlink_to(outside, target_is_directory=True)
    for turn in range(5):  # the second refers to the first's file or comes after its failure
        text = f"the same words [failed beside {turn}]"
        message = HumanMessage(content=text, id=f"m{turn}")
        results, errors = _first_then_second(
            saver,
            serde.gates,
            lambda m=message: _put(saver, "inner:1", m, "gate-a"),
            lambda m=message: _put(saver, "", m, "gate-b"),
        )
        assert len(errors) == 1 and isinstance(errors[0], RepoCheckpointError), errors
        assert "refusing to write through" in str(errors[0]) and not list(outside.iterdir())
        held = _holding(root, text)
        cid = results[1][1]
        assert held == [saver.store.layout.checkpoint_path("t", "", cid)]
        tup = RepoSaver(root).get_tuple(cfg("t", checkpoint_ns="", checkpoint_id=cid))
        assert tup is not None
        assert tup.checkpoint["channel_values"] == {"messages": [message], "gate": "gate-b"}


def test_a_writes_file_its_child_takes_while_a_reader_resolves_it_still_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader takes a checkpoint's pending writes from its writes file; before it builds
    their values, the child checkpoint is put, takes the file into ``parent_writes`` and
    removes it. The record the reader holds still resolves (its objects are the file's, as
    parsed), where it failed with a MissingReferenceError naming the file now gone."""
    from langchain_core.messages import AIMessage

    import langgraph_checkpoint_repo.saver as saver_module

    root = tmp_path / "root"
    writer = RepoSaver(root)
    first = make_checkpoint(str(uuid6()), {"messages": []}, {"messages": writer.get_next_version(None, None)})
    parent = writer.put(
        cfg("t"), first, {"source": "loop", "step": 0, "parents": {}}, first["channel_versions"]
    )
    text = "a long answer that becomes an object of the writes file " * 4
    writer.put_writes(parent, [("messages", [AIMessage(content=text, id="ai-1")])], "task-1", "")
    (wfile,) = (root / "threads" / "t" / "writes").glob("*.json")
    assert list(load(wfile)["objects"]), "the message is an object held by the writes file"

    reader = RepoSaver(root)
    real = saver_module.merged_writes
    raced: list[bool] = []

    def then_the_child_lands(store: Any, thread_id: str, ns: str, cid: str) -> Any:
        got = real(store, thread_id, ns, cid)
        if store is reader.store and not raced:
            raced.append(True)
            version = writer.get_next_version(first["channel_versions"]["messages"], None)
            child = make_checkpoint(str(uuid6()), {"messages": []}, {"messages": version})
            writer.put(parent, child, {"source": "loop", "step": 1, "parents": {}}, {"messages": version})
            assert not wfile.exists(), "the child took the writes file"
        return got

    monkeypatch.setattr(saver_module, "merged_writes", then_the_child_lands)
    tup = reader.get_tuple(parent)
    assert raced and tup is not None
    assert [(t, c, [m.content for m in v]) for t, c, v in tup.pending_writes] == [
        ("task-1", "messages", [text])
    ]
    monkeypatch.undo()
    again = RepoSaver(root).get_tuple(parent)  # a fresh reader finds them in the child
    assert again is not None and [w[0] for w in again.pending_writes] == ["task-1"]


def _beside_a_put_of_the_same_checkpoint_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, fail: bool
) -> tuple[Path, RepoSaver, dict[str, Any], str]:
    """Put A puts checkpoint C holding message X (``fail``: C is on disk already, without X,
    and A puts it again) and is held in its write until put B (a subgraph checkpoint bringing
    X too) waits for it; then A fails (``fail``: the disk is full) or finishes late (past
    ``lock_timeout``)."""
    import errno

    root = tmp_path / "root"
    saver = RepoSaver(root, lock_timeout=0.2)
    shared = HumanMessage(content="the shared message " * 20, id="m1")
    cid = str(uuid6())
    v = saver.get_next_version(None, None)
    if fail:
        saver.put(
            cfg("t"), make_checkpoint(cid, {"messages": []}, {"messages": v}), {"step": 0}, {"messages": v}
        )
    a_writing, b_waiting = threading.Event(), threading.Event()
    write, await_pending = saver.store.files.write, saver.store._overlap.await_pending

    def held_write(batches: Any, *rest: Any) -> None:
        if threading.current_thread().name == "A":
            a_writing.set()
            assert b_waiting.wait(30)
            if fail:
                raise OSError(errno.ENOSPC, "No space left on device")
            time.sleep(1.0)  # a slow disk: longer than lock_timeout (no assertion on time)
        write(batches, *rest)

    def noting_wait(thread_id: str, waits: Any, **kw: Any) -> bool:
        if threading.current_thread().name == "B" and waits:
            b_waiting.set()
        return await_pending(thread_id, waits, **kw)

    monkeypatch.setattr(saver.store.files, "write", held_write)
    monkeypatch.setattr(saver.store._overlap, "await_pending", noting_wait)
    out: dict[str, Any] = {}

    def a() -> None:
        v2 = saver.get_next_version(v, None)
        try:
            saver.put(
                cfg("t"),
                make_checkpoint(cid, {"messages": [shared]}, {"messages": v2}),
                {"step": 0},
                {"messages": v2},
            )
        except OSError as exc:
            out["A"] = exc

    def b() -> None:
        assert a_writing.wait(30)
        v3 = saver.get_next_version(None, None)
        bid = str(uuid6())
        try:
            saver.put(
                cfg("t", checkpoint_ns="sub:1"),
                make_checkpoint(bid, {"messages": [shared]}, {"messages": v3}),
                {"step": 1},
                {"messages": v3},
            )
            out["B"] = bid
        except Exception as exc:  # reported by the assertions below
            out["B failed"] = exc

    threads = [threading.Thread(target=a, name="A"), threading.Thread(target=b, name="B")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert b_waiting.is_set(), "B referred to the message in A's file and waited for it"
    return root, saver, out, shared.content  # type: ignore[return-value]


def test_a_put_beside_a_failed_put_of_a_checkpoint_already_on_disk_holds_the_message_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file under the failed put's name (its older version) is not its write: the put that
    waited for it decides again and holds the message, never a reference the file on disk
    does not hold (it read back 'object ... is not among the objects of ...')."""
    root, _, out, text = _beside_a_put_of_the_same_checkpoint_again(tmp_path, monkeypatch, fail=True)
    assert isinstance(out.get("A"), OSError) and "B" in out, out
    tup = RepoSaver(root).get_tuple(cfg("t", checkpoint_ns="sub:1"))
    assert tup is not None and tup.checkpoint["channel_values"]["messages"][0].content == text
    assert cli(root, "validate").returncode == 0


def test_a_put_beside_a_slow_put_waits_for_it_past_lock_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A put of this process that is only slow to write (longer than ``lock_timeout``) is
    waited for: the put beside it refers to the message there and succeeds, where it failed
    saying the slow put 'did not complete'."""
    root, _, out, text = _beside_a_put_of_the_same_checkpoint_again(tmp_path, monkeypatch, fail=False)
    assert "A" not in out and "B" in out, out
    tup = RepoSaver(root).get_tuple(cfg("t", checkpoint_ns="sub:1"))
    assert tup is not None and tup.checkpoint["channel_values"]["messages"][0].content == text
    assert len(_holding(root, text)) == 1  # in A's file, where B refers to it


def test_the_same_checkpoint_put_again_refers_to_nothing_in_the_file_it_replaces(tmp_path: Path) -> None:
    """A checkpoint put a second time under its id (InMemorySaver replaces it) is written
    whole: its list is not an append on the file it replaces, a channel it did not change
    is not a reference into it, and a message is not an object ``$in`` it. It read back
    'holds no value of channel ... at <the first version>' in this process and any other."""
    root = tmp_path / "root"
    saver, memory = RepoSaver(root), InMemorySaver()
    first = HumanMessage(content="the words of the first message " * 8, id="m1")
    second = HumanMessage(content="the words of the second message " * 8, id="m2")
    cid = str(uuid6())
    v1 = saver.get_next_version(None, None)
    v2 = saver.get_next_version(v1, None)
    puts = [
        (
            make_checkpoint(cid, {"log": [first], "note": "kept"}, {"log": v1, "note": v1}),
            {"log": v1, "note": v1},
        ),
        (
            make_checkpoint(cid, {"log": [first, second], "note": "kept"}, {"log": v2, "note": v1}),
            {"log": v2},
        ),
    ]
    for checkpoint, new_versions in puts:
        for s in (saver, memory):
            s.put(
                cfg("t", checkpoint_ns=""),
                checkpoint,
                {"source": "loop", "step": 0, "parents": {}},
                new_versions,
            )
    want = memory.get_tuple(cfg("t", checkpoint_ns=""))
    assert want is not None
    for reader in (saver, RepoSaver(root)):
        got = reader.get_tuple(cfg("t"))
        assert got is not None and got.checkpoint["channel_values"] == want.checkpoint["channel_values"]
    assert cli(root, "validate").returncode == 0


def test_heads_says_which_channel_changed_last_as_langgraph_orders_versions(tmp_path: Path) -> None:
    """A thread continued by another saver holds both forms: short versions (ours) and long
    ones (theirs, counters from 10^24 down). ``heads`` ends a head without messages on the
    channel whose version is newest as LangGraph compares them (the long form of both); by the
    raw strings every short version looked newer than any long one."""
    root = tmp_path / "root"
    saver = RepoSaver(root)
    short = saver.get_next_version(saver.get_next_version(None, None), None)  # counter 2
    long = "00000000000000000000000000000005.0.5"  # another saver's, counter 5
    versions = {"older": short, "newer": long}
    checkpoint = make_checkpoint(str(uuid6()), {"older": "set at 2", "newer": "set at 5"}, versions)
    saver.put(cfg("t"), checkpoint, {"source": "loop", "step": 5, "parents": {}}, versions)
    shown = cli(root, "heads", "t")
    assert shown.returncode == 0, shown.stderr
    assert "newer: " in shown.stdout and "older: " not in shown.stdout, shown.stdout


def test_a_checkpoint_put_again_keeps_the_objects_later_files_refer_to_there(tmp_path: Path) -> None:
    """Later checkpoints refer to the messages an earlier one holds (``$in``). Put again under
    its id with other values, its file is replaced: the objects it held stay in the new one,
    so the files after it still read back (they read 'object ... is not among the objects of'
    it, and validate failed on files the put never touched)."""
    root = tmp_path / "root"
    chat_root(root, "t", 3)
    saver = RepoSaver(root)
    first = checkpoint_files(root, "t")[0]
    held = load(first)["objects"]
    assert any(f'"$in": "{first.stem}"' in p.read_text() for p in checkpoint_files(root, "t")[1:])
    tup = saver.get_tuple(cfg("t", checkpoint_ns="", checkpoint_id=first.stem))
    assert tup is not None
    again = dict(tup.checkpoint, channel_values={"__start__": {"messages": []}})
    saver.put(cfg("t", checkpoint_ns=""), again, tup.metadata, again["channel_versions"])  # type: ignore[arg-type]
    assert set(held) <= set(load(first)["objects"])
    fresh = RepoSaver(root)
    assert all(t.checkpoint is not None for t in fresh.list(cfg("t")))
    latest = fresh.get_tuple(cfg("t"))
    assert latest is not None and len(latest.checkpoint["channel_values"]["messages"]) == 6
    done = cli(root, "validate")
    assert done.returncode == 0, done.stdout + done.stderr
