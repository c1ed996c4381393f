"""Format 3: each message (and each long list of them) stored once per thread in objects/."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langgraph.graph import MessagesState

from graphs import RELAY_TURNS, cfg, line_graph, numbered_reply, question, relay_graph
from helpers import cli
from langgraph_checkpoint_repo import RepoSaver
from langgraph_checkpoint_repo.core.errors import FileFormatError, MissingReferenceError
from langgraph_checkpoint_repo.core.objects import object_digest
from langgraph_checkpoint_repo.core.validation import SCHEMA_VERSION


def data_files(root: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in (root / "threads").rglob("*.json")}


def run_turns(root: Path, turns: int, graph: Any = None) -> list[int]:
    """Bytes of the files each turn added."""
    graph = graph or relay_graph(RepoSaver(root))
    sizes = []
    for turn in range(1, turns + 1):
        before = set(data_files(root))
        graph.invoke({"messages": [question(turn)]}, cfg("t"))
        sizes.append(sum(len(d) for p, d in data_files(root).items() if p not in before))
    return sizes


def test_each_message_is_stored_once_however_often_it_appears(tmp_path: Path) -> None:
    root = tmp_path / ".langgraph"
    run_turns(root, 20)
    files = data_files(root)
    for turn in range(1, 21):
        holders = [p for p, d in files.items() if b'"turn-%d-question"' % turn in d]
        assert len(holders) == 1, (turn, holders)
        assert holders[0].parent.name == "objects"
    state = relay_graph(RepoSaver(root)).get_state(cfg("t"))
    assert [m.content for m in state.values["messages"]][-2:] == [
        "turn-20-question",
        "answer to turn-20-question",
    ]
    assert len(state.values["messages"]) == 40


def test_bytes_per_turn_stay_flat_when_sends_and_subgraphs_carry_the_conversation(tmp_path: Path) -> None:
    sizes = run_turns(tmp_path / ".langgraph", 30)
    assert sizes[29] <= 1.3 * sizes[2], sizes


def test_long_lists_are_chunked_and_read_back_whole_by_a_fresh_saver(tmp_path: Path) -> None:
    root = tmp_path / ".langgraph"
    run_turns(root, 12)
    chunked = [p for p, d in data_files(root).items() if b'"$chunks"' in d]
    assert chunked, "a 24-message conversation passed whole is stored as chunks"
    fresh = relay_graph(RepoSaver(root))
    history = list(fresh.get_state_history(cfg("t")))
    assert [m.content for m in history[0].values["messages"]][::2] == [
        f"turn-{t}-question" for t in range(1, 13)
    ]
    assert cli(root, "validate").returncode == 0


def test_the_same_conversation_writes_the_same_object_files_anywhere(tmp_path: Path) -> None:
    """Named by what they hold: two roots (or two git branches) write identical objects."""
    one, two = tmp_path / "one", tmp_path / "two"
    run_turns(one, 4)
    run_turns(two, 4)

    def objects(root: Path) -> dict[str, Any]:
        """Every object the checkpoints hold (format 4), by name."""
        out: dict[str, Any] = {}
        for p, d in data_files(root).items():
            if p.parent.name == "checkpoints":
                out.update(json.loads(d).get("objects", {}))
        return out

    assert objects(one) == objects(two) and len(objects(one)) >= 8
    for name, tree in objects(one).items():
        assert object_digest(tree).startswith(name) and len(name) == 16


def _one_object(root: Path, needle: bytes) -> Path:
    [path] = [p for p, d in data_files(root).items() if p.parent.name == "objects" and needle in d]
    return path


def test_a_missing_object_is_an_error_naming_it_and_validate_reports_it(tmp_path: Path) -> None:
    root = tmp_path / ".langgraph"
    run_turns(root, 2)
    gone = _one_object(root, b'"turn-1-question"')
    gone.unlink()
    with pytest.raises(MissingReferenceError) as err:
        relay_graph(RepoSaver(root)).get_state(cfg("t"))
    assert str(gone) in str(err.value)
    out = cli(root, "validate")
    assert out.returncode == 1 and gone.name[:-5] in out.stdout and "missing" in out.stdout


def test_an_object_edited_by_hand_is_refused_naming_it(tmp_path: Path) -> None:
    root = tmp_path / ".langgraph"
    run_turns(root, 2)
    path = _one_object(root, b'"turn-1-question"')
    path.write_bytes(path.read_bytes().replace(b"turn-1-question", b"turn-1-QUESTION"))
    with pytest.raises(FileFormatError) as err:
        relay_graph(RepoSaver(root)).get_state(cfg("t"))
    assert err.value.path == str(path) and err.value.pointer == "/sha256"
    out = cli(root, "validate")
    assert out.returncode == 1 and path.name in out.stdout


def _plant_object(root: Path, tree: Any) -> str:
    digest = object_digest(tree)
    folder = root / "threads" / "t" / "objects"
    folder.mkdir(parents=True, exist_ok=True)  # format 4 writes objects/ only for big objects
    doc = {"schema_version": SCHEMA_VERSION, "kind": "object", "sha256": digest, "tree": tree}
    (folder / f"{digest}.json").write_text(json.dumps(doc), encoding="utf-8")
    return digest


def _point_last_write_at(root: Path, digest: str) -> Path:
    """Make the newest writes file's first value a reference to ``digest``."""
    path = sorted((root / "threads" / "t" / "writes").glob("*.json"))[-1]
    doc = json.loads(path.read_bytes())
    doc["writes"][0]["value"] = {"serde": "msgpack", "json": {"$ref": digest}}
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "shape, words",
    [("wide", "arrays and objects through objects/"), ("deep", "levels deep")],
)
def test_objects_that_expand_without_end_are_refused_not_followed(
    tmp_path: Path, shape: str, words: str
) -> None:
    """A hand-made file cannot make a read loop, recurse away or expand to a billion items."""
    root = tmp_path / ".langgraph"
    saver = RepoSaver(root)
    graph = line_graph(MessagesState, saver, answer=numbered_reply)
    graph.invoke({"messages": [question(1)]}, cfg("t"))
    latest = saver.get_tuple(cfg("t"))  # writes that came late stay a file (format 4)
    assert latest is not None and latest.parent_config is not None
    saver.put_writes(latest.parent_config, [("messages", [question(9)])], "task-late")
    top: Any = [0]
    if shape == "wide":  # 1000 x 1000 x 1000 items from three small files
        for _ in range(3):
            top = [{"$ref": _plant_object(root, top)}] * 1000
    else:
        for _ in range(100):
            top = [{"$ref": _plant_object(root, top)}]
    path = _point_last_write_at(root, _plant_object(root, top))
    saver = RepoSaver(root)
    with pytest.raises(FileFormatError) as err:
        list(saver.list(cfg("t")))
    assert words in str(err.value) and str(path) in str(err.value)


def test_prune_removes_the_objects_nothing_kept_uses_and_keeps_the_rest(tmp_path: Path) -> None:
    root = tmp_path / ".langgraph"
    run_turns(root, 6)
    saver = RepoSaver(root)
    before = relay_graph(saver).get_state(cfg("t")).values
    objects = lambda: {p.name for p in (root / "threads" / "t" / "objects").glob("*.json")}  # noqa: E731
    had = objects()
    saver.prune(["t"], strategy="keep_latest")
    assert objects() < had
    assert relay_graph(RepoSaver(root)).get_state(cfg("t")).values == before
    assert cli(root, "validate").returncode == 0
    fsck = cli(root, "fsck", "--json")
    assert "orphan-object" not in fsck.stdout, fsck.stdout


def test_fsck_reports_an_orphan_object_and_repair_removes_it(tmp_path: Path) -> None:
    root = tmp_path / ".langgraph"
    run_turns(root, 2)
    digest = _plant_object(root, {"$type": ["x", "Y"], "$kwargs": {"note": "nobody refers to me " * 8}})
    found = cli(root, "fsck")
    assert found.returncode == 1 and "orphan-object" in found.stdout and digest in found.stdout
    assert cli(root, "fsck", "--repair").returncode == 0
    assert not (root / "threads" / "t" / "objects" / f"{digest}.json").exists()
    assert relay_graph(RepoSaver(root)).get_state(cfg("t")).values["messages"][0].content == "turn-1-question"


def test_copy_thread_copies_its_objects(tmp_path: Path) -> None:
    root = tmp_path / ".langgraph"
    run_turns(root, 3)
    saver = RepoSaver(root)
    saver.copy_thread("t", "u")
    graph = relay_graph(RepoSaver(root))
    assert graph.get_state(cfg("u")).values == graph.get_state(cfg("t")).values
    # format 4: the objects are held by the checkpoints, copied with them
    copied = (root / "threads" / "u").rglob("checkpoints/*.json")
    held = [n for p in copied for n in json.loads(p.read_text()).get("objects", {})]
    assert len(held) >= 6
    assert cli(root, "validate").returncode == 0


def test_the_v3_fixture_tree_reads_its_shared_conversation_and_carries_on(tmp_path: Path) -> None:
    """The committed version-3 tree: a conversation passed whole through Sends and subgraphs,
    stored as objects and chunks, migrated (format 4), read back and continued by this release."""
    import shutil

    from helpers import cli

    root = tmp_path / ".langgraph"
    shutil.copytree(Path(__file__).parent / "fixtures" / "v3", root)
    assert list((root / "threads" / "relay" / "objects").glob("*.json"))
    assert any(b'"$chunks"' in d for d in data_files(root).values())
    assert cli(root, "migrate").returncode == 0
    graph = relay_graph(RepoSaver(root))
    before = graph.get_state(cfg("relay")).values["messages"]
    assert [m.content for m in before][::2] == [f"turn-{t}-question" for t in range(1, RELAY_TURNS + 1)]
    after = graph.invoke({"messages": [question(RELAY_TURNS + 1)]}, cfg("relay"))["messages"]
    assert after[-1].content == f"answer to turn-{RELAY_TURNS + 1}-question" and after[:-2] == before


def test_a_message_without_an_id_is_one_object_before_and_after_add_messages_gives_it_one(
    tmp_path: Path,
) -> None:
    """The node's write holds the message as sent (no id), the channel the same message with
    the id ``add_messages`` gave it: one object, the id on the reference."""
    from langchain_core.messages import AIMessage, HumanMessage

    root = tmp_path / ".langgraph"
    graph = line_graph(
        MessagesState, RepoSaver(root), answer=lambda s: {"messages": [AIMessage("plain answer")]}
    )
    graph.invoke({"messages": [HumanMessage("a question without an id")]}, cfg("t"))
    files = data_files(root)
    # format 4: each held by the checkpoint of the step that made it
    assert [p.parent.name for p, d in files.items() if b"a question without an id" in d] == ["checkpoints"]
    assert [p.parent.name for p, d in files.items() if b"plain answer" in d] == ["checkpoints"]
    first = graph.get_state(cfg("t")).values["messages"]
    assert all(isinstance(m.id, str) and m.id for m in first)
    again = (
        line_graph(MessagesState, RepoSaver(root), answer=lambda s: {}).get_state(cfg("t")).values["messages"]
    )
    assert [(m.id, m.content) for m in again] == [(m.id, m.content) for m in first]
    ident = first[0].id.encode()
    holders = {p.parent.name for p, d in files.items() if ident in d}
    assert "objects" not in holders and "checkpoints" in holders, "the id is on the references"
