"""Hostile review of shared objects (a checkpoint's ``objects``, objects/, $ref, $in, $id, $chunks):
each test states what a user should get. Written for format 3, where every object was an
objects/ file; ported to format 4, where objects live in the checkpoint that introduced them
and objects/ holds only those of large values, objects over large_value_bytes and what prune
keeps: each attack is made where format 4 keeps objects."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from bench.agent_graphs import BUILDERS, user_message
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import MessagesState
from langgraph.types import Command

from graphs import ask_graph, cfg, fan_graph, line_graph, numbered_reply, question, relay_graph, sub_graph
from helpers import LONG, checkpoint_files, cli, dump, load, rewrite
from langgraph_checkpoint_repo import RepoSaver
from langgraph_checkpoint_repo.core.errors import FileFormatError, RepoCheckpointError
from langgraph_checkpoint_repo.core.format.objects import object_digest
from langgraph_checkpoint_repo.core.format.tree import json_objects
from langgraph_checkpoint_repo.core.format.validation import SCHEMA_VERSION


# ----------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------
def data_files(root: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in (root / "threads").rglob("*.json")}


def objects_dir(root: Path, thread: str = "t") -> Path:
    return root / "threads" / thread / "objects"


def plant(root: Path, tree: Any, thread: str = "t") -> str:
    digest = object_digest(tree)
    folder = objects_dir(root, thread)
    folder.mkdir(parents=True, exist_ok=True)
    doc = {"schema_version": SCHEMA_VERSION, "kind": "object", "sha256": digest, "tree": tree}
    (folder / f"{digest}.json").write_text(json.dumps(doc), encoding="utf-8")
    return digest


def point_last_write_at(root: Path, tree: Any) -> Path:
    path = sorted((root / "threads" / "t" / "writes").glob("*.json"))[-1]
    doc = json.loads(path.read_bytes())
    doc["writes"][0]["value"] = {"serde": "msgpack", "json": tree}
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def one_turn_root(tmp_path: Path) -> Path:
    root = tmp_path / ".langgraph"
    saver = RepoSaver(root)
    graph = line_graph(MessagesState, saver, answer=numbered_reply)
    graph.invoke({"messages": [question(1)]}, cfg("t"))
    # writes that came after their checkpoint had a child stay a file (format 4 moves the
    # others into the child): a writes file to plant in
    latest = saver.get_tuple(cfg("t"))
    assert latest is not None and latest.parent_config is not None
    saver.put_writes(latest.parent_config, [("messages", [question(9)])], "task-late")
    return root


def read_all(root: Path, thread: str = "t") -> list[Any]:
    saver = RepoSaver(root)
    return [(t.checkpoint, t.pending_writes) for t in saver.list(cfg(thread))]


def summary(snapshot: Any) -> Any:
    """What a StateSnapshot says, without run-dependent timestamps/ids."""
    return (
        snapshot.values,
        snapshot.next,
        [
            (t.name, t.path, t.error is not None, [i.value for i in t.interrupts], t.result)
            for t in snapshot.tasks
        ],
        [i.value for i in snapshot.interrupts],
        {k: v for k, v in (snapshot.metadata or {}).items() if k not in ("run_id", "thread_id")},
    )


def histories(graph_of: Any, run: Any, thread: str = "t") -> tuple[list[Any], list[Any], Path]:
    """The same graph and inputs through InMemorySaver and RepoSaver, each history read back
    (RepoSaver's by a fresh saver)."""
    import tempfile

    mem = graph_of(InMemorySaver())
    run(mem)
    root = Path(tempfile.mkdtemp()) / ".langgraph"
    run(graph_of(RepoSaver(root)))
    fresh = graph_of(RepoSaver(root))
    a = [summary(s) for s in mem.get_state_history(cfg(thread))]
    b = [summary(s) for s in fresh.get_state_history(cfg(thread))]
    return a, b, root


# ----------------------------------------------------------------------------
# hand-made object files
# ----------------------------------------------------------------------------
def test_objects_nested_deep_inside_each_file_are_a_format_error_not_a_recursion_error(
    tmp_path: Path,
) -> None:
    """64 levels of references, each file 200 levels of lists deep (both within limits on
    their own): the read must be refused with a FileFormatError, not crash with RecursionError."""
    root = one_turn_root(tmp_path)
    top: Any = 0
    for _ in range(20):
        inner: Any = {"$ref": plant(root, top)}
        for _ in range(150):
            inner = [inner]
        top = inner
    path = point_last_write_at(root, top)
    with pytest.raises(FileFormatError) as err:
        read_all(root)
    assert str(path) in str(err.value) or "objects" in str(err.value)


def test_cli_show_of_deeply_nested_objects_fails_with_one_line_not_a_traceback(tmp_path: Path) -> None:
    root = one_turn_root(tmp_path)
    top: Any = 0
    for _ in range(20):
        inner: Any = {"$ref": plant(root, top)}
        for _ in range(150):
            inner = [inner]
        top = inner
    point_last_write_at(root, top)
    out = cli(root, "history", "t")
    assert "Traceback" not in out.stderr and "RecursionError" not in out.stderr, out.stderr[-2000:]


def test_dollar_id_on_an_object_that_is_not_a_model_is_refused(tmp_path: Path) -> None:
    root = one_turn_root(tmp_path)
    digest = plant(root, {"$type": ["builtins", "set"], "$arg": ["x" * 200]})
    point_last_write_at(root, {"$ref": digest, "$id": "forged"})
    with pytest.raises(FileFormatError):
        read_all(root)


def test_chunks_naming_an_object_that_is_not_a_list_is_refused(tmp_path: Path) -> None:
    root = one_turn_root(tmp_path)
    digest = plant(root, {"not": "a list"})
    point_last_write_at(root, {"$chunks": [{"$ref": digest}]})
    with pytest.raises(FileFormatError):
        read_all(root)


def test_chunks_nested_a_thousand_deep_are_refused(tmp_path: Path) -> None:
    root = one_turn_root(tmp_path)
    digest = plant(root, [1])
    for _ in range(1000):
        digest = plant(root, [{"$chunks": [{"$ref": digest}]}])
    point_last_write_at(root, {"$chunks": [{"$ref": digest}]})
    with pytest.raises(FileFormatError):
        read_all(root)


@pytest.mark.parametrize("where", ["objects map", "$in", "objects/"])
def test_a_reference_loop_through_wrongly_named_objects_is_refused(tmp_path: Path, where: str) -> None:
    """An object is named by the sha256 of its tree, which holds the names it refers to, so
    no stored objects can refer to each other in a loop: a hand-made loop needs wrongly named
    objects. Wherever format 4 keeps them (one checkpoint's objects map, two checkpoints that
    name each other with $in, objects/ files), a read refuses the loop naming a file of the
    thread; validate and fsck, which walk references too, end with a finding, and prune ends."""
    root = one_turn_root(tmp_path)
    a, b = "a" * 16, "b" * 16
    first, *_, last = checkpoint_files(root)
    cid = {p: load(p)["checkpoint_id"] for p in (first, last)}
    if where == "objects map":
        rewrite(last, lambda doc: doc.setdefault("objects", {}).update({a: [{"$ref": b}], b: [{"$ref": a}]}))
        entry = {"$ref": a}
    elif where == "$in":
        rewrite(first, lambda doc: doc.setdefault("objects", {}).update({a: [{"$ref": b, "$in": cid[last]}]}))
        rewrite(last, lambda doc: doc.setdefault("objects", {}).update({b: [{"$ref": a, "$in": cid[first]}]}))
        entry = {"$ref": a, "$in": cid[first]}
    else:
        objects_dir(root).mkdir()
        for name, other in ((a, b), (b, a)):
            dump(
                objects_dir(root) / f"{name}.json",
                {
                    "schema_version": SCHEMA_VERSION,
                    "kind": "object",
                    "sha256": name,
                    "tree": [{"$ref": other}],
                },
            )
        entry = {"$ref": a}
    rewrite(last, lambda doc: doc["new_values"].__setitem__("messages", {"value": {"json": entry}}))
    with pytest.raises(FileFormatError) as err:
        read_all(root)
    # the first guard is the name check, the second the nesting bound (before each load)
    why = str(err.value)
    assert str(root / "threads" / "t") in why and ("sha256 name" in why or "levels deep" in why), why
    for command in ("validate", "fsck"):
        out = cli(root, command, timeout=120)
        assert out.returncode == 1 and str(root / "threads" / "t") in out.stdout, (
            command,
            out.stdout,
            out.stderr,
        )
    # prune follows references to keep what kept files need: it ends, and the loop is still refused
    RepoSaver(root).prune(["t"], strategy="keep_latest")
    with pytest.raises(FileFormatError):
        read_all(root)


def test_an_object_naming_a_dangerous_type_is_never_imported_or_called(tmp_path: Path) -> None:
    root = one_turn_root(tmp_path)
    marker = tmp_path / "pwned"
    digest = plant(root, {"$type": ["os", "system"], "$arg": f"touch {marker} " + "x" * 100})
    point_last_write_at(root, {"$ref": digest})
    with pytest.raises(RepoCheckpointError):
        read_all(root)
    for args in (("show", "t"), ("history", "t"), ("tasks", "t"), ("render", "t")):
        cli(root, *args)
    cli(root, "export", f"sqlite:///{tmp_path / 'x.db'}")
    assert not marker.exists()


def test_a_reference_with_dot_dot_is_refused(tmp_path: Path) -> None:
    root = one_turn_root(tmp_path)
    outside = tmp_path / "outside.json"
    outside.write_text("{}", encoding="utf-8")
    point_last_write_at(root, {"$ref": "../../../../outside"})
    with pytest.raises(FileFormatError):
        read_all(root)


def objects_root(tmp_path: Path, how: str) -> Path:
    """A thread whose objects/ folder holds objects its reads need, made the two ways format 4
    makes one: a value over ``large_value_bytes`` (its objects go to objects/, beside large/)
    or a prune (what it keeps of the checkpoints it removes)."""
    root = tmp_path / ".langgraph"
    graph = line_graph(
        MessagesState,
        RepoSaver(root, large_value_bytes=64 if how == "large" else 8192),
        answer=numbered_reply,
    )
    for turn in (1, 2, 3):
        graph.invoke({"messages": [question(turn)]}, cfg("t"))
    if how == "prune":
        RepoSaver(root).prune(["t"], strategy="keep_latest")
    assert list(objects_dir(root).glob("*.json")), "objects/ holds objects"
    return root


@pytest.mark.parametrize("how", ["large", "prune"])
def test_a_symlinked_objects_folder_is_not_read_through(tmp_path: Path, how: str) -> None:
    """Reads refuse symlinks (docs/format.md): an objects/ folder that is a symlink to a
    place outside the root, holding the very files the read needs, must not be read through."""
    root = objects_root(tmp_path, how)
    read_all(root)  # reads with the folder in place
    real = objects_dir(root)
    elsewhere = tmp_path / "elsewhere"
    shutil.move(str(real), str(elsewhere))
    os.symlink(elsewhere, real)
    with pytest.raises(RepoCheckpointError) as err:
        read_all(root)
    assert "symlink" in str(err.value), err.value


@pytest.mark.parametrize("how", ["large", "prune"])
def test_a_symlinked_object_file_is_not_read_through(tmp_path: Path, how: str) -> None:
    """Each file of objects/ in turn a symlink to a copy outside the root: the read refuses it."""
    root = objects_root(tmp_path, how)
    want = read_all(root)
    for victim in sorted(objects_dir(root).glob("*.json")):
        elsewhere = tmp_path / victim.name
        shutil.move(str(victim), str(elsewhere))
        os.symlink(elsewhere, victim)
        with pytest.raises(RepoCheckpointError) as err:
            read_all(root)
        assert "symlink" in str(err.value), (victim.name, err.value)
        victim.unlink()
        shutil.move(str(elsewhere), str(victim))
    assert read_all(root) == want


def test_prune_refuses_a_symlinked_objects_folder_and_removes_nothing_outside(tmp_path: Path) -> None:
    """objects/ (what a first prune kept) turned into a symlink to a folder outside the root:
    a second prune, fsck --repair and the prune command refuse it and neither remove nor add a
    file there. The same root with its own folder shows what they would do through the link:
    prune keeps objects of the checkpoints it removes there, fsck --repair removes an orphan."""
    root = tmp_path / "a" / ".langgraph"
    graph = line_graph(MessagesState, RepoSaver(root), answer=numbered_reply)
    for turn in (1, 2, 3):
        graph.invoke({"messages": [question(turn)]}, cfg("t"))
    RepoSaver(root).prune(["t"], strategy="keep_latest")
    for turn in (4, 5, 6):
        graph.invoke({"messages": [question(turn)]}, cfg("t"))
    orphan = plant(root, {"$type": ["x", "Orphan"], "$kwargs": {"note": "nothing refers to me " * 8}})
    control = tmp_path / "b" / ".langgraph"
    shutil.copytree(root, control, ignore=shutil.ignore_patterns(".cache"))
    before = {p.name: p.read_bytes() for p in objects_dir(control).iterdir()}
    RepoSaver(control).prune(["t"], strategy="keep_latest")
    cli(control, "fsck", "--repair")
    after = {p.name: p.read_bytes() for p in objects_dir(control).iterdir()}
    assert f"{orphan}.json" not in after and set(after) - set(before), "the attack would bite"

    real = objects_dir(root)
    elsewhere = tmp_path / "elsewhere"
    shutil.move(str(real), str(elsewhere))
    os.symlink(elsewhere, real)
    before = {p.name: p.read_bytes() for p in elsewhere.iterdir()}
    with pytest.raises(RepoCheckpointError):
        RepoSaver(root).prune(["t"], strategy="keep_latest")
    assert cli(root, "fsck", "--repair").returncode != 0
    assert cli(root, "prune", "--yes").returncode != 0
    assert {p.name: p.read_bytes() for p in elsewhere.iterdir()} == before


# ----------------------------------------------------------------------------
# every path that deletes
# ----------------------------------------------------------------------------
def _read_everything(root: Path, graph_of: Any, thread: str = "t") -> list[Any]:
    g = graph_of(RepoSaver(root))
    return [summary(s) for s in g.get_state_history(cfg(thread))]


def test_prune_keeps_objects_that_only_a_large_file_refers_to(tmp_path: Path) -> None:
    root = tmp_path / ".langgraph"
    graph = relay_graph(RepoSaver(root, large_value_bytes=64))
    for turn in range(1, 8):
        graph.invoke({"messages": [question(turn)]}, cfg("t"))
    assert list((root / "threads" / "t" / "large").glob("*.json"))
    before = relay_graph(RepoSaver(root)).get_state(cfg("t")).values
    RepoSaver(root).prune(["t"])
    assert relay_graph(RepoSaver(root)).get_state(cfg("t")).values == before
    assert cli(root, "validate").returncode == 0
    assert cli(root, "fsck").returncode == 0


def test_prune_and_fsck_repair_keep_the_objects_of_pending_writes_of_a_failed_step(tmp_path: Path) -> None:
    from langgraph.graph import END, START, StateGraph

    def build(saver: Any, fail: bool) -> Any:
        def talk(state: MessagesState) -> dict[str, Any]:
            return {"messages": [AIMessage("a long reply that only a pending write holds " * 5, id="talk-1")]}

        def boom(state: MessagesState) -> dict[str, Any]:
            if fail:
                raise RuntimeError("boom")
            return {"messages": [AIMessage("boom recovered " * 10, id="boom-1")]}

        g = StateGraph(MessagesState)
        g.add_node("talk", talk)
        g.add_node("boom", boom)
        g.add_edge(START, "talk")
        g.add_edge(START, "boom")
        g.add_edge("talk", END)
        g.add_edge("boom", END)
        return g.compile(checkpointer=saver)

    root = tmp_path / ".langgraph"
    mem = InMemorySaver()
    for saver in (RepoSaver(root), mem):
        with pytest.raises(RuntimeError):
            build(saver, True).invoke({"messages": [question(1)]}, cfg("t"))
    RepoSaver(root).prune(["t"])
    assert cli(root, "fsck", "--repair").returncode in (0, 1)
    out = build(RepoSaver(root), False).invoke(None, cfg("t"))
    expected = build(mem, False).invoke(None, cfg("t"))
    assert [(m.content, m.id) for m in out["messages"]] == [(m.content, m.id) for m in expected["messages"]]
    assert cli(root, "validate").returncode == 0


def test_delete_for_runs_keeps_objects_the_remaining_runs_use(tmp_path: Path) -> None:
    import uuid

    root = tmp_path / ".langgraph"
    graph = relay_graph(RepoSaver(root))
    runs = []
    for turn in range(1, 5):
        run_id = uuid.uuid4()
        runs.append(str(run_id))
        graph.invoke({"messages": [question(turn)]}, {**cfg("t"), "run_id": run_id})
    before = relay_graph(RepoSaver(root)).get_state(cfg("t")).values
    RepoSaver(root).delete_for_runs(runs[:2])
    fresh = relay_graph(RepoSaver(root))
    assert fresh.get_state(cfg("t")).values == before
    for snap in fresh.get_state_history(cfg("t")):
        assert isinstance(snap.values, dict)
    assert cli(root, "validate").returncode == 0
    assert "orphan-object" not in cli(root, "fsck").stdout


def test_copy_then_delete_of_the_source_leaves_the_copy_whole(tmp_path: Path) -> None:
    root = tmp_path / ".langgraph"
    graph = relay_graph(RepoSaver(root))
    for turn in range(1, 4):
        graph.invoke({"messages": [question(turn)]}, cfg("t"))
    before = [summary(s) for s in relay_graph(RepoSaver(root)).get_state_history(cfg("t"))]
    assert cli(root, "copy", "t", "u").returncode == 0
    assert cli(root, "delete", "t", "--yes").returncode == 0
    after = [summary(s) for s in relay_graph(RepoSaver(root)).get_state_history(cfg("u"))]
    assert [a[0] for a in after] == [b[0] for b in before]
    assert cli(root, "validate").returncode == 0


def test_fsck_repair_never_removes_an_object_a_checkpoint_written_after_the_scan_uses(tmp_path: Path) -> None:
    """fsck decides what is orphaned without the thread's lock, then repairs under it: an
    objects/ file that was an orphan at the scan and that a put relied on meanwhile (a writer
    refers to an intact objects/ file under an object's name instead of storing it again)
    must not be removed."""
    from langgraph_checkpoint_repo.core.checks import fsck, repair
    from langgraph_checkpoint_repo.readmodel.reader import Reader

    donor = tmp_path / "donor"
    line_graph(MessagesState, RepoSaver(donor), answer=numbered_reply).invoke(
        {"messages": [question(2)]}, cfg("t")
    )
    root = tmp_path / ".langgraph"
    graph = line_graph(MessagesState, RepoSaver(root), answer=numbered_reply)
    graph.invoke({"messages": [question(1)]}, cfg("t"))
    # the donor's objects as objects/ files nothing refers to (left by a crash or a reverted commit)
    planted = {
        plant(root, tree) for p in checkpoint_files(donor) for tree in load(p).get("objects", {}).values()
    }
    reader = Reader(root)
    findings = fsck(reader.store)
    orphaned = {Path(f.path).name[: -len(".json")] for f in findings if f.kind == "orphan-object"}
    assert orphaned == planted
    graph.invoke({"messages": [question(2)]}, cfg("t"))  # relies on the orphaned objects
    still = {
        Path(f.path).name[: -len(".json")] for f in fsck(Reader(root).store) if f.kind == "orphan-object"
    }
    reused = orphaned - still
    assert reused, "the put refers to objects/ files the scan found orphaned"
    repair(reader.store, findings)  # with the findings of the scan before the put
    assert all((objects_dir(root) / f"{name}.json").exists() for name in reused)
    state = line_graph(MessagesState, RepoSaver(root), answer=numbered_reply).get_state(cfg("t"))
    assert [m.content for m in state.values["messages"]][-1] == "answer to turn-2-question"
    assert cli(root, "validate").returncode == 0


# ----------------------------------------------------------------------------
# correctness against InMemorySaver
# ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_prebuilt_agents_read_back_as_in_memory_saver_has_them(name: str) -> None:
    def run(g: Any) -> None:
        for turn in range(1, 20):
            g.invoke({"messages": [user_message(turn)]}, cfg("t"))

    a, b, root = histories(BUILDERS[name], run)
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=False):
        assert x == y
    assert cli(root, "validate").returncode == 0


def test_relay_graph_history_with_tasks_matches_in_memory_saver() -> None:
    def run(g: Any) -> None:
        for turn in range(1, 20):
            g.invoke({"messages": [question(turn)]}, cfg("t"))

    a, b, _ = histories(relay_graph, run)
    assert a == b


def test_interrupts_and_resume_match_in_memory_saver() -> None:
    def run(g: Any) -> None:
        g.invoke({}, cfg("t"))
        g.invoke(Command(resume="Ada"), cfg("t"))

    a, b, _ = histories(ask_graph, run)
    assert a == b

    def run_sub(g: Any) -> None:
        g.invoke({"log": []}, cfg("t"))

    a, b, _ = histories(sub_graph, run_sub)
    assert a == b


def test_update_state_and_fork_match_in_memory_saver() -> None:
    def run(g: Any) -> None:
        for turn in range(1, 4):
            g.invoke({"messages": [question(turn)]}, cfg("t"))
        hist = list(g.get_state_history(cfg("t")))
        g.update_state(hist[3].config, {"messages": [HumanMessage("edited " * 30, id="edit")]})
        g.update_state(hist[5].config, None, as_node="__copy__")
        g.invoke({"messages": [question(9)]}, cfg("t"))

    a, b, _ = histories(relay_graph, run)
    assert a == b


def test_failed_send_fan_out_pending_writes_match_in_memory_saver() -> None:
    def run(g: Any) -> None:
        with pytest.raises(RuntimeError):
            g.invoke({"items": ["a", "bad", "c"]}, cfg("t"))

    a, b, _ = histories(lambda s: fan_graph(s, fail=True), run)
    assert [x[:2] for x in a] == [x[:2] for x in b]


def test_delta_channel_history_matches_in_memory_saver() -> None:
    from graphs import delta_graph

    def run(g: Any) -> None:
        g.invoke({"n": 0}, cfg("t"))

    a, b, root = histories(delta_graph, run)
    assert a == b
    RepoSaver(root).prune(["t"])
    assert delta_graph(RepoSaver(root)).get_state(cfg("t")).values == a[0][0]


# ----------------------------------------------------------------------------
# $id
# ----------------------------------------------------------------------------
from pydantic import BaseModel  # noqa: E402
from typing_extensions import TypedDict  # noqa: E402


class Ticket(BaseModel):
    id: str
    body: str


class TicketState(TypedDict, total=False):
    ticket: Ticket
    tickets: list[Ticket]


def ticket_graph(saver: Any) -> Any:
    def work(state: TicketState) -> dict[str, Any]:
        t = state["ticket"]
        return {"ticket": Ticket(id=t.id + "!", body=t.body), "tickets": [t, Ticket(id="", body=t.body)]}

    return line_graph(TicketState, saver, work=work)


def test_a_model_with_an_id_field_that_is_not_a_message_reads_back_as_written(tmp_path: Path) -> None:
    """The writer stores any model with a string ``id`` field apart from its id (the object
    holds ``"id": null``, each reference its ``$id``), messages or not: a model that is not a
    message reads back with the id it was written with, "" included."""
    root = tmp_path / ".langgraph"
    allow = [(__name__, "Ticket")]
    body = "a body long enough to be shared as an object " * 4
    inputs = {"ticket": Ticket(id="T-1", body=body)}
    mem = ticket_graph(InMemorySaver())
    mem.invoke(inputs, cfg("t"))
    ticket_graph(RepoSaver(root, allowlist=allow)).invoke(inputs, cfg("t"))
    docs = [load(p) for p in checkpoint_files(root)]
    tickets = {
        name: tree
        for doc in docs
        for name, tree in (doc.get("objects") or {}).items()
        if tree.get("$type") == [__name__, "Ticket"]
    }
    assert tickets and all(t["$fields"]["id"] is None for t in tickets.values()), "the ticket is shared"
    ids = {node["$id"] for doc in docs for node in json_objects(doc) if node.get("$ref") in tickets}
    assert {"T-1", "T-1!", ""} <= ids
    fresh = ticket_graph(RepoSaver(root, allowlist=allow))
    assert [s.values for s in fresh.get_state_history(cfg("t"))] == [
        s.values for s in mem.get_state_history(cfg("t"))
    ]


def test_two_messages_with_the_same_content_and_different_ids_keep_their_ids(tmp_path: Path) -> None:
    root = tmp_path / ".langgraph"
    text = "the same words, said twice by two different messages " * 3
    msgs = [
        HumanMessage(text, id="one"),
        HumanMessage(text, id="two"),
        HumanMessage(text, id=""),
        HumanMessage(text),
    ]
    graph = line_graph(
        MessagesState, RepoSaver(root), answer=lambda s: {"messages": [AIMessage(text, id="")]}
    )
    mem = line_graph(MessagesState, InMemorySaver(), answer=lambda s: {"messages": [AIMessage(text, id="")]})
    graph.invoke({"messages": msgs}, cfg("t"))
    mem.invoke({"messages": msgs}, cfg("t"))
    fresh = line_graph(MessagesState, RepoSaver(root), answer=lambda s: {})

    def ids(g: Any) -> list[Any]:
        return [
            [(m.id, m.content) for m in s.values.get("messages", [])] for s in g.get_state_history(cfg("t"))
        ]

    got, want = ids(fresh), ids(mem)
    # add_messages gives random ids to id-less messages: compare where the ids were given
    assert [[x for x in h if x[0] in ("one", "two", "")] for h in got] == [
        [x for x in h if x[0] in ("one", "two", "")] for h in want
    ]
    assert [len(h) for h in got] == [len(h) for h in want]
    assert len(list(objects_dir(root).glob("*.json"))) <= 3


# ----------------------------------------------------------------------------
# the command line on format-3 roots
# ----------------------------------------------------------------------------
def object_trees(root: Path, where: str) -> list[Any]:
    """The objects a thread holds: in its checkpoints' objects maps, or its objects/ files."""
    if where == "objects/":
        return [load(p)["tree"] for p in objects_dir(root).glob("*.json")]
    return [tree for p in checkpoint_files(root) for tree in (load(p).get("objects") or {}).values()]


@pytest.mark.parametrize("where", ["objects map", "objects/"])
def test_cli_never_prints_control_characters_from_an_object(tmp_path: Path, where: str) -> None:
    """Terminal escapes in messages, stored verbatim in an object (a checkpoint's objects
    map; objects/ with a small large_value_bytes): no command prints them raw."""
    root = tmp_path / ".langgraph"
    evil = "\x1b]52;c;ZWNobyBwd25lZA==\x07\x1b[2J\x1b[31mred " + "x" * 150
    saver = RepoSaver(root, large_value_bytes=64 if where == "objects/" else 8192)
    graph = line_graph(MessagesState, saver, answer=lambda s: {"messages": [AIMessage(evil, id="evil")]})
    graph.invoke({"messages": [HumanMessage(evil + " question", id="q")]}, cfg("t"))
    held = [v for tree in object_trees(root, where) for node in json_objects(tree) for v in node.values()]
    assert any(isinstance(v, str) and evil in v for v in held), "the escapes are in an object"
    ids = [load(p)["checkpoint_id"] for p in checkpoint_files(root)]
    for args in (
        ("show", "t"),
        ("history", "t"),
        ("tasks", "t"),
        ("diff", "t", "--from", ids[0], "--to", ids[-1]),
        ("render", "t"),
    ):
        out = cli(root, *args)
        assert out.returncode == 0, (args, out.stderr)
        assert "\x1b" not in out.stdout and "\x07" not in out.stdout, args
        assert "red" in out.stdout or args[0] in ("history", "tasks"), args


def test_cli_show_json_of_a_format3_root_holds_the_messages_not_refs(tmp_path: Path) -> None:
    root = tmp_path / ".langgraph"
    graph = relay_graph(RepoSaver(root))
    for turn in range(1, 12):
        graph.invoke({"messages": [question(turn)]}, cfg("t"))
    out = cli(root, "show", "t", "--json")
    assert out.returncode == 0
    assert "$ref" not in out.stdout and "$chunks" not in out.stdout
    assert "turn-1-question" in out.stdout and "turn-11-question" in out.stdout


def test_export_and_import_of_a_format3_thread_round_trip(tmp_path: Path) -> None:
    root = tmp_path / ".langgraph"
    graph = relay_graph(RepoSaver(root))
    for turn in range(1, 12):
        graph.invoke({"messages": [question(turn)]}, cfg("t"))
    db = tmp_path / "x.sqlite"
    out = cli(root, "export", f"sqlite:///{db}", "-t", "t")
    assert out.returncode == 0, out.stderr
    other = tmp_path / "other" / ".langgraph"
    other.parent.mkdir()
    inn = cli(other, "import", f"sqlite:///{db}", "-t", "t")
    assert inn.returncode == 0, inn.stderr
    a = [s.values for s in relay_graph(RepoSaver(root)).get_state_history(cfg("t"))]
    b = [s.values for s in relay_graph(RepoSaver(other)).get_state_history(cfg("t"))]
    assert a == b
    assert cli(other, "validate").returncode == 0


# ----------------------------------------------------------------------------
# migration, determinism, git
# ----------------------------------------------------------------------------
def test_a_migrated_v2_root_continues_prunes_and_validates(tmp_path: Path) -> None:
    from graphs import chat_graph

    root = tmp_path / ".langgraph"
    shutil.copytree(Path(__file__).parent / "fixtures" / "v2", root)
    assert cli(root, "migrate").returncode == 0
    chat = chat_graph(RepoSaver(root))
    before = chat.get_state(cfg("chat")).values["messages"]
    for i in range(20):
        chat.invoke(
            {"messages": [HumanMessage(f"more words to store as an object, turn {i} " * 4)]}, cfg("chat")
        )
    after = chat_graph(RepoSaver(root)).get_state(cfg("chat")).values["messages"]
    assert after[: len(before)] == before and len(after) == len(before) + 40
    assert cli(root, "validate").returncode == 0
    RepoSaver(root).prune(["chat"])
    assert chat_graph(RepoSaver(root)).get_state(cfg("chat")).values["messages"] == after
    assert cli(root, "validate").returncode == 0


def test_two_git_branches_that_continue_a_thread_merge_without_conflict(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("no git")
    repo = tmp_path / "repo"
    repo.mkdir()

    def git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
            cwd=repo,
            capture_output=True,
            text=True,
        )

    git("init", "-q", "-b", "main")
    root = repo / ".langgraph"
    relay = relay_graph(RepoSaver(root))
    for turn in (1, 2):
        relay.invoke({"messages": [question(turn)]}, cfg("t"))
    git("add", "-A")
    git("commit", "-qm", "base")
    git("checkout", "-qb", "other")
    relay_graph(RepoSaver(root)).invoke({"messages": [question(3)]}, cfg("t"))
    git("add", "-A")
    git("commit", "-qm", "other")
    git("checkout", "-q", "main")
    relay_graph(RepoSaver(root)).invoke({"messages": [question(3)]}, cfg("t"))
    git("add", "-A")
    git("commit", "-qm", "main")
    merged = git("merge", "-q", "--no-edit", "other")
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert cli(root, "validate").returncode in (0, 1)
    assert relay_graph(RepoSaver(root)).get_state(cfg("t")) is not None


# ----------------------------------------------------------------------------
# writes through symlinks; secrets; what a put writes can be read back
# ----------------------------------------------------------------------------
def test_a_put_never_writes_object_files_through_a_symlinked_objects_folder(tmp_path: Path) -> None:
    """A hostile pull request plants threads/t/objects as a symlink to a folder outside the
    root. Format 4 writes objects/ files on a put for an object over large_value_bytes (and the
    objects of a value in large/): with a small one, the next run of t must be refused and write
    nothing there, while another thread, same setting, writes its objects/ files."""
    root = one_turn_root(tmp_path)
    real = objects_dir(root)
    assert not real.exists()  # nothing of t is read from it: the put's own guard is what refuses
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, real)
    graph = line_graph(MessagesState, RepoSaver(root, large_value_bytes=64), answer=numbered_reply)
    try:
        graph.invoke({"messages": [question(2)]}, cfg("u"))  # another thread: fine
        assert list(objects_dir(root, "u").glob("*.json")), "this put writes objects/ files"
        with pytest.raises(RepoCheckpointError) as err:
            graph.invoke({"messages": [HumanMessage("secret plans " * 20, id="s")]}, cfg("t"))
        assert f"refusing to write through {real}" in str(err.value), err.value
    finally:
        assert list(elsewhere.iterdir()) == []


def test_secrets_in_messages_never_reach_object_files_and_validate_finds_planted_ones(tmp_path: Path) -> None:
    root = tmp_path / ".langgraph"
    key = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 3
    graph = line_graph(MessagesState, RepoSaver(root), answer=numbered_reply)
    graph.invoke({"messages": [HumanMessage(f"my key is {key} please keep it " * 3, id="k")]}, cfg("t"))
    assert not any(key.encode() in d for d in data_files(root).values())
    plant(root, {"$type": ["x", "Y"], "$kwargs": {"note": f"leaked {key} " * 3}})
    out = cli(root, "validate")
    assert out.returncode == 1 and "objects" in out.stdout


import operator  # noqa: E402
from typing import Annotated  # noqa: E402

from langchain_core.messages import AnyMessage  # noqa: E402


class DocState(TypedDict, total=False):
    docs: list[AnyMessage]
    results: Annotated[list[int], operator.add]


@pytest.mark.parametrize("per_doc, refused", [(600, False), (200, True)], ids=["taken", "refused"])
def test_a_state_the_saver_accepted_is_read_back_fan_out_carrying_documents(
    tmp_path: Path, container_bound: int, per_doc: int, refused: bool
) -> None:
    """Map-reduce: each Send carries the documents. InMemorySaver reads the history back;
    RepoSaver must either refuse the put (InvalidWriteError) or read back what it wrote,
    never accept a step and then refuse every later read of the thread. Under the lowered
    bound of ``container_bound``, both: documents the 15 Sends' step may hold, and three
    times as many, which it may not."""
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import Send

    def build(saver: Any) -> Any:
        g = StateGraph(DocState)
        g.add_node("work", lambda a: {"results": [a["i"]]})
        g.add_conditional_edges(
            START, lambda s: [Send("work", {"docs": s["docs"], "i": i}) for i in range(15)], ["work"]
        )
        g.add_edge("work", END)
        return g.compile(checkpointer=saver)

    docs = [
        AIMessage(f"document {i}", id=f"d{i}", additional_kwargs={"spans": [{} for _ in range(25)]})
        for i in range(container_bound // per_doc)
    ]
    mem = build(InMemorySaver())
    mem.invoke({"docs": docs}, cfg("t"))
    want = [s.values for s in mem.get_state_history(cfg("t"))]
    root = tmp_path / ".langgraph"
    from langgraph_checkpoint_repo.core.errors import InvalidWriteError

    try:
        build(RepoSaver(root, durable=False)).invoke({"docs": docs}, cfg("t"))
    except InvalidWriteError as exc:  # refused: what was written before reads back and validates
        assert refused, exc
        assert "would expand to over" in str(exc)
        got = [s.values for s in build(RepoSaver(root)).get_state_history(cfg("t"))]
        assert got and got == want[-len(got) :]  # the steps before the refused one
        # the step's tasks wrote beside the refused put (LangGraph overlaps them): orphans
        # that validate names and fsck --repair removes, nothing unreadable
        found = cli(root, "validate")
        lines = found.stdout.splitlines()
        assert found.returncode == 1 and lines and all("orphaned" in line for line in lines), found.stdout
        assert cli(root, "fsck", "--repair").returncode == 0
        assert cli(root, "validate").returncode == 0
        return
    assert not refused
    got = [s.values for s in build(RepoSaver(root)).get_state_history(cfg("t"))]
    assert got == want


def test_remove_message_writes_validate_and_read_back(tmp_path: Path) -> None:
    from langchain_core.messages import RemoveMessage

    def build(saver: Any) -> Any:
        def drop_first(state: MessagesState) -> dict[str, Any]:
            return {"messages": [RemoveMessage(id=state["messages"][0].id), AIMessage("kept " * 40, id="a")]}

        return line_graph(MessagesState, saver, drop=drop_first)

    root = tmp_path / ".langgraph"
    inputs = {
        "messages": [HumanMessage("first " * 40, id="removed-one"), HumanMessage("second " * 40, id="h2")]
    }
    mem = build(InMemorySaver())
    mem.invoke(inputs, cfg("t"))
    build(RepoSaver(root)).invoke(inputs, cfg("t"))
    a = [summary(s) for s in mem.get_state_history(cfg("t"))]
    b = [summary(s) for s in build(RepoSaver(root)).get_state_history(cfg("t"))]
    assert a == b
    out = cli(root, "validate")
    assert out.returncode == 0, out.stdout


def test_repeated_prunes_with_runs_in_between_keep_the_thread_whole(tmp_path: Path) -> None:
    root = tmp_path / ".langgraph"
    mem = relay_graph(InMemorySaver())
    turn = 0
    for _ in range(5 if LONG else 2):  # a prune, runs on the pruned thread, a second prune (more: long mode)
        for _ in range(4):
            turn += 1
            relay_graph(RepoSaver(root)).invoke({"messages": [question(turn)]}, cfg("t"))
            mem.invoke({"messages": [question(turn)]}, cfg("t"))
        assert cli(root, "prune", "--keep-last", "3", "--yes").returncode == 0
        assert cli(root, "validate").returncode == 0
        fsck = cli(root, "fsck")
        assert fsck.returncode == 0, fsck.stdout
    assert relay_graph(RepoSaver(root)).get_state(cfg("t")).values == mem.get_state(cfg("t")).values


def test_react_agent_interrupted_before_tools_matches_in_memory_saver() -> None:
    import warnings

    from bench.agent_graphs import TOOLS, ToolCallingFakeModel
    from langgraph.prebuilt import create_react_agent

    def build(saver: Any) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            return create_react_agent(
                ToolCallingFakeModel(), list(TOOLS), checkpointer=saver, interrupt_before=["tools"]
            )

    def run(g: Any) -> None:
        for turn in range(1, 6):
            g.invoke({"messages": [user_message(turn)]}, cfg("t"))
            g.invoke(None, cfg("t"))

    a, b, root = histories(build, run)
    assert a == b
    assert cli(root, "validate").returncode == 0


def test_import_replace_over_a_format3_thread_leaves_no_stale_objects(tmp_path: Path) -> None:
    src = tmp_path / "src" / ".langgraph"
    dst = tmp_path / "dst" / ".langgraph"
    g = relay_graph(RepoSaver(src))
    for turn in range(1, 4):
        g.invoke({"messages": [question(turn)]}, cfg("t"))
    g2 = line_graph(MessagesState, RepoSaver(dst), answer=numbered_reply)
    g2.invoke({"messages": [HumanMessage("an older conversation that is replaced " * 5, id="old")]}, cfg("t"))
    db = tmp_path / "x.sqlite"
    assert cli(src, "export", f"sqlite:///{db}").returncode == 0
    out = cli(dst, "import", f"sqlite:///{db}", "--replace")
    assert out.returncode == 0, out.stderr
    assert relay_graph(RepoSaver(dst)).get_state(cfg("t")).values == g.get_state(cfg("t")).values
    assert cli(dst, "validate").returncode == 0
    fsck = cli(dst, "fsck")
    assert fsck.returncode == 0, fsck.stdout


def test_a_small_file_cannot_expand_to_millions_of_values_through_chunks(tmp_path: Path) -> None:
    """The expansion bound counts arrays and objects only: one chunk of 60,000 numbers named
    100 times by a 7 KB writes file expands to 6,000,000 values (more than any one file may
    hold, 5,000,000); with strings in the chunk, or more references, it grows without limit
    (N references x M items). A hand-made tree should be refused, not built."""
    import time

    root = one_turn_root(tmp_path)
    digest = plant(root, [0] * 60_000)
    path = point_last_write_at(root, {"$chunks": [{"$ref": digest}] * 100})
    assert path.stat().st_size < 10_000
    started = time.monotonic()
    try:
        with pytest.raises(FileFormatError):
            read_all(root)
    finally:
        print("read took", time.monotonic() - started)
