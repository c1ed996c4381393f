"""Objects: each message (and each long list of them) stored once per thread.

Format 4 keeps an object in the checkpoint that introduced it (``"objects"``), named by the
start of its sha256, every other file referring to it there (``{"$ref", "$in", "$ns"}``);
``objects/`` holds what prune keeps of the checkpoints it removes (docs/format.md, "Shared
subtrees: objects"). Format 3's trees (all in ``objects/``) are read once migrated.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langgraph.graph import MessagesState

from graphs import RELAY_TURNS, cfg, line_graph, numbered_reply, question, relay_graph
from helpers import cli, load, rewrite
from langgraph_checkpoint_repo import RepoSaver
from langgraph_checkpoint_repo.core.errors import FileFormatError, MissingReferenceError
from langgraph_checkpoint_repo.core.format.objects import (
    Sharer,
    location_of,
    names_object,
    object_digest,
    ref_nodes,
)
from langgraph_checkpoint_repo.core.format.validation import SCHEMA_VERSION


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


def stored(root: Path) -> dict[str, list[tuple[Path, Any]]]:
    """Every object of the thread by name: the files holding it (a checkpoint's or a writes
    file's ``objects``, an ``objects/`` file) and its tree there."""
    out: dict[str, list[tuple[Path, Any]]] = {}
    for path in data_files(root):
        doc = load(path)
        held = {doc["sha256"]: doc["tree"]} if doc.get("kind") == "object" else doc.get("objects", {})
        for name, tree in held.items():
            out.setdefault(name, []).append((path, tree))
    return out


def references(root: Path) -> list[tuple[Path, dict[str, Any]]]:
    """Every reference node of every file (those inside the objects a file holds too), with
    the file: a reference without ``$in`` names an object of that file (or of ``objects/``)."""
    return [(path, node) for path in data_files(root) for node in ref_nodes(load(path))]


def message_named(root: Path, text: str) -> tuple[str, Path]:
    """The name of the one message object whose content is ``text``, and the file holding it."""
    found = [
        (name, path)
        for name, places in stored(root).items()
        for path, tree in places
        if isinstance(tree, dict) and tree.get("$fields", {}).get("content") == text
    ]
    assert len(found) == 1, (text, found)
    return found[0]


def place_of(path: Path) -> tuple[str, str] | None:
    """(namespace, checkpoint id) of a checkpoint file, as a ``$in`` reference names it."""
    doc = load(path)
    return (doc["checkpoint_ns"], doc["checkpoint_id"]) if doc.get("kind") == "checkpoint" else None


def test_each_message_is_stored_once_however_often_it_appears(tmp_path: Path) -> None:
    """A question and its answer show up in the channel, the Send, the tasks channel and a
    subgraph's input and output on every later turn: each is one object, in the checkpoint of
    the step that made it (its text in no other file), and every reference names that one."""
    root = tmp_path / ".langgraph"
    run_turns(root, 20)
    files = data_files(root)
    refs = references(root)
    for turn in range(1, 21):
        for text in (f"turn-{turn}-question", f"answer to turn-{turn}-question"):
            holders = [p for p, d in files.items() if json.dumps(text).encode() in d]
            assert len(holders) == 1, (text, holders)
            assert holders[0].parent.name == "checkpoints", (text, holders)
            name, holder = message_named(root, text)
            assert holder == holders[0] and name in load(holder)["objects"]
            to_it = [(p, node) for p, node in refs if node["$ref"] == name]
            assert len(to_it) >= 3, (text, to_it)  # the channel, the Send, the subgraph ...
            for path, node in to_it:  # with $in: where it is held; without: in the same file
                where = location_of(node)
                assert (where == place_of(holder)) if where is not None else (path == holder), (path, node)
    assert not list(root.rglob("objects/*.json")), "a turn writes no objects/ file"
    state = relay_graph(RepoSaver(root)).get_state(cfg("t"))
    assert [m.content for m in state.values["messages"]][-2:] == [
        "turn-20-question",
        "answer to turn-20-question",
    ]
    assert len(state.values["messages"]) == 40


def test_bytes_per_turn_stay_flat_when_sends_and_subgraphs_carry_the_conversation(tmp_path: Path) -> None:
    sizes = run_turns(tmp_path / ".langgraph", 30)
    assert sizes[29] <= 1.3 * sizes[2], sizes


def chunk_shape(top: dict[str, Any], objects: dict[str, Any]) -> Any:
    """The cuts of a chunked list: nested lists of the names of the items (the messages)."""

    def expand(ref: dict[str, str]) -> Any:
        tree = objects[ref["$ref"]]
        return [expand(r) for r in tree["$chunks"]] if isinstance(tree, dict) else [r["$ref"] for r in tree]

    return [expand(r) for r in top["$chunks"]]


def test_a_conversation_is_cut_at_the_same_places_wherever_its_messages_are_stored() -> None:
    """Where a list's chunks end depends on its messages alone. Which checkpoint of a turn
    stores a message first can differ from run to run (LangGraph saves a step's checkpoints
    from threads of its own), and the chunks' names cover those ``$in``; cut by names, the
    same conversation was chunked differently each time, and the bytes a turn wrote went up
    and down with it (test_bytes_per_turn_stay_flat... failed on a loaded machine). The same
    whether a message is found in a checkpoint, in ``objects/`` (what prune keeps) or in
    ``objects/`` under format 3's 64-digit name (a migrated thread)."""
    messages = [
        {"$type": "HumanMessage", "$fields": {"content": f"message {i} " + "x" * 120, "id": None}}
        for i in range(120)
    ]
    digests = [object_digest(m) for m in messages]
    names = [d[:16] for d in digests]

    def in_checkpoints(run: int) -> dict[str, dict[str, str]]:
        return {
            d[:16]: {"$ref": d[:16], "$in": f"1f1edf00-0000-6000-8000-{(i * 7 + run) % 5:012d}"}
            for i, d in enumerate(digests)
        }

    places = [in_checkpoints(run) for run in range(4)]
    places.append({d[:16]: {"$ref": d[:16]} for d in digests})  # objects/, 16 digits
    places.append({d[:16]: {"$ref": d} for d in digests})  # objects/, format 3's 64 digits
    shapes = []
    for where in places:
        sharer = Sharer(lambda name, _digest, where=where: where.get(name))
        top = sharer.share(messages)
        shape = chunk_shape(top, sharer.objects)
        assert len(shape) < 4 and all(isinstance(chunk[0], list) for chunk in shape), shape  # cut again
        shapes.append(shape)

    def flat(shape: Any) -> list[str]:
        return [name[:16] for part in shape for name in (flat(part) if isinstance(part, list) else [part])]

    assert flat(shapes[0]) == names
    normalised = [[[flat(chunk) for chunk in upper] for upper in shape] for shape in shapes]
    assert all(shape == normalised[0] for shape in normalised), normalised


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
    """Named by what they hold: two roots (or two git branches) that store the same messages
    store them under the same names, with the same trees. (An object that refers to others,
    a chunk or a Send, also says where they are: ``$in`` names a checkpoint of its root.)"""
    one, two = tmp_path / "one", tmp_path / "two"
    run_turns(one, 4)
    run_turns(two, 4)

    def messages(root: Path) -> dict[str, Any]:
        """The objects that refer to no other (the messages), by name."""
        return {
            name: tree
            for name, places in stored(root).items()
            for _, tree in places
            if next(ref_nodes(tree), None) is None
        }

    assert messages(one) == messages(two)
    texts = sorted(tree["$fields"]["content"] for tree in messages(one).values())
    assert texts == sorted(
        [f"turn-{t}-question" for t in range(1, 5)] + [f"answer to turn-{t}-question" for t in range(1, 5)]
    )
    for root in (one, two):
        objects = stored(root)
        assert len(objects) > 8  # the chunks and Sends too
        for name, places in objects.items():
            assert len(name) == 16 and all(names_object(name, tree) for _, tree in places)
            assert all(object_digest(tree).startswith(name) for _, tree in places)


@pytest.mark.parametrize("how", ["dropped from its checkpoint", "its checkpoint removed"])
def test_a_missing_object_is_an_error_naming_it_and_validate_reports_it(tmp_path: Path, how: str) -> None:
    """An object taken out of the ``objects`` of the checkpoint holding it, or that checkpoint
    (a subgraph's) deleted by hand: reading a state that refers to it is a
    MissingReferenceError naming the file that refers to it, the object and where it looked."""
    root = tmp_path / ".langgraph"
    run_turns(root, 2)
    if how == "dropped from its checkpoint":
        name, holder = message_named(root, "turn-2-question")
        rewrite(holder, lambda doc: doc["objects"].pop(name))
    else:
        name, holder = message_named(root, "answer to turn-1-question")
        place = place_of(holder)
        assert place is not None and place[0], "held by the subgraph that made it"
        holder.unlink()
    with pytest.raises(MissingReferenceError) as err:
        relay_graph(RepoSaver(root)).get_state(cfg("t"))
    referrer = Path(err.value.path)
    assert name.encode() in referrer.read_bytes(), "the error names a file that refers to it"
    assert name in str(err.value) and str(holder) in str(err.value)
    out = cli(root, "validate")
    assert out.returncode == 1, out.stdout
    assert any(str(referrer) in line and name in line for line in out.stdout.splitlines()), out.stdout


@pytest.mark.parametrize("where", ["in a subgraph's checkpoint", "in objects/, kept by prune"])
def test_an_object_edited_by_hand_is_refused_naming_it(tmp_path: Path, where: str) -> None:
    """A message's text changed by hand where it is stored (its name no longer matches): a
    reader that follows a reference to it, from another file or namespace, refuses it naming
    the file and the object; validate names them too."""
    root = tmp_path / ".langgraph"
    run_turns(root, 2)
    if where == "in objects/, kept by prune":
        RepoSaver(root).prune(["t"], strategy="keep_latest")
    # held by the subgraph that made it, or (its checkpoint removed) kept in objects/
    text = "turn-1-question" if "prune" in where else "answer to turn-1-question"
    name, holder = message_named(root, text)
    assert holder.parent.name == ("objects" if "prune" in where else "checkpoints")
    raw = holder.read_bytes()
    holder.write_bytes(raw.replace(json.dumps(text).encode(), json.dumps(text.upper()).encode()))
    assert holder.read_bytes() != raw
    with pytest.raises(FileFormatError) as err:
        relay_graph(RepoSaver(root)).get_state(cfg("t"))
    assert err.value.path == str(holder)
    assert err.value.pointer == ("/sha256" if "prune" in where else f"/objects/{name}")
    out = cli(root, "validate")
    assert out.returncode == 1 and holder.name in out.stdout and name in out.stdout, out.stdout


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


def used_objects(root: Path, trees: dict[str, Any]) -> set[str]:
    """The objects the files of a root use: their references (outside the objects a file
    holds), and what the objects those name refer to in turn."""
    todo = []
    for path in data_files(root):
        doc = load(path)
        if doc.get("kind") != "object":
            todo.extend(node["$ref"] for node in ref_nodes({k: v for k, v in doc.items() if k != "objects"}))
    used: set[str] = set()
    while todo:
        name = todo.pop()
        if name not in used:
            assert name in trees, f"object {name} is used but stored nowhere"
            used.add(name)
            todo.extend(node["$ref"] for node in ref_nodes(trees[name]))
    return used


def test_prune_removes_the_objects_nothing_kept_uses_and_keeps_the_rest(tmp_path: Path) -> None:
    """keep_latest removes the checkpoints holding most objects: those a kept file still
    uses are copied to objects/ first, the others (earlier turns' Sends and chunks) go with
    their checkpoints, nothing unused is left in objects/, and the state reads as before."""
    root = tmp_path / ".langgraph"
    run_turns(root, 6)
    saver = RepoSaver(root)
    before = relay_graph(saver).get_state(cfg("t")).values
    had = stored(root)
    assert not list(root.rglob("objects/*.json"))
    saver.prune(["t"], strategy="keep_latest")
    has = stored(root)
    gone = set(had) - set(has)
    assert gone and set(has) <= set(had)

    trees = {name: places[0][1] for name, places in has.items()}
    used = used_objects(root, trees)
    assert not gone & used
    kept = {p.stem for p in root.rglob("objects/*.json")}
    assert kept and kept <= used, kept - used  # objects/ holds only what is used
    remaining = set(data_files(root))
    moved = {n for n in used if all(p not in remaining for p, _ in had[n])}
    assert moved and moved <= kept  # what only removed checkpoints held went to objects/
    texts = [f"turn-{t}-question" for t in range(1, 7)] + [
        f"answer to turn-{t}-question" for t in range(1, 7)
    ]
    messages = {tree["$fields"]["content"]: name for name, tree in trees.items() if "$fields" in tree}
    assert set(texts) <= set(messages) and {messages[t] for t in texts} <= used
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
