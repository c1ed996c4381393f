"""A removal is a plan carried out: what a plan lists is exactly what happens on disk.

``RepoSaver.prune`` and ``delete_for_runs`` and the command line's ``prune`` each make a
``maintenance.PrunePlan`` and carry it out; the dry run prints the same plan. Each test
compares every file of the thread (names and bytes) before and after with what the plan
listed: the files it removes, the value files it writes first, nothing else.
"""

from __future__ import annotations

import ast
import json
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.graph import END, START, MessagesState, StateGraph

from graphs import BIG_TEXT, cfg, chain_graph, delta_graph
from helpers import cli
from langgraph_checkpoint_repo import RepoSaver
from langgraph_checkpoint_repo.core.plans import (
    PrunePlan,
    carry_out,
    plan_keep_latest,
    plan_prune,
    plan_runs,
)
from langgraph_checkpoint_repo.readmodel.reader import Reader

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "langgraph_checkpoint_repo"


class NoteState(MessagesState):
    note: str


def note_graph(saver: RepoSaver) -> Any:
    """A chat (a list that grows by appending) plus a note that is overwritten each turn: the
    first turn's note is over large_value_bytes, so pruning that turn leaves a large file unused."""

    def reply(state: NoteState) -> dict[str, Any]:
        text = str(state["messages"][-1].content)
        return {"messages": [{"role": "ai", "content": f"echo: {text}"}], "note": text}

    builder = StateGraph(NoteState)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    return builder.compile(checkpointer=saver)


def run_turns(saver: RepoSaver, thread_id: str, words: list[str], run_id: str | None = None) -> None:
    graph = note_graph(saver)
    extra = {"run_id": run_id} if run_id else {}
    for word in words:
        graph.invoke({"messages": [HumanMessage(content=word)]}, cfg(thread_id, **extra))


def thread_files(root: Path, thread_id: str) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in Reader(root).thread_files(thread_id)}


def assert_did_exactly(plan: PrunePlan, before: dict[Path, bytes], after: dict[Path, bytes]) -> None:
    """The files gone are the plan's ``removed``; the files new are its ``rescued``, with the
    bytes it prepared; every other file is unchanged."""
    assert plan.doomed and plan.removed
    assert sorted(before.keys() - after.keys()) == plan.removed
    assert sorted(after.keys() - before.keys()) == plan.rescued
    assert {p: after[p] for p in plan.rescued} == dict(f for batch in plan.rescue for f in batch)
    assert all(after[p] == before[p] for p in before.keys() & after.keys())


def test_saver_prune_removes_exactly_the_files_its_keep_latest_plan_lists(tmp_path: Path) -> None:
    """prune(keep_latest) is plan_keep_latest carried out: checkpoints, writes, the large file
    of an overwritten value and the values rescued out of removed checkpoints, as listed."""
    root = tmp_path / "root"
    saver = RepoSaver(root, durable=False)
    run_turns(saver, "t", [BIG_TEXT, "two", "three"])
    latest = saver.get_tuple(cfg("t"))
    assert latest is not None
    plan = plan_keep_latest(saver.store, partial(saver.checkpoint_metadata, fresh=True), "t")
    # each kind of file is in play (format 4: the writes are in the checkpoints; the latest,
    # kept, took its parent's)
    assert plan.rescued and plan.large
    before = thread_files(root, "t")

    saver.prune(["t"])

    assert_did_exactly(plan, before, thread_files(root, "t"))
    fresh = RepoSaver(root).get_tuple(cfg("t"))
    assert fresh is not None and fresh.checkpoint["channel_values"] == latest.checkpoint["channel_values"]


def test_delete_for_runs_removes_exactly_the_files_its_plan_lists(tmp_path: Path) -> None:
    """delete_for_runs is plan_runs carried out, in every thread."""
    root = tmp_path / "root"
    saver = RepoSaver(root, durable=False)
    run_turns(saver, "t", [BIG_TEXT, "two"], run_id="first")
    run_turns(saver, "t", ["three"], run_id="second")
    latest = saver.get_tuple(cfg("t"))
    assert latest is not None
    plan = plan_runs(saver.store, partial(saver.checkpoint_metadata, fresh=True), "t", {"first"})
    before = thread_files(root, "t")

    saver.delete_for_runs(["first"])

    assert_did_exactly(plan, before, thread_files(root, "t"))
    fresh = RepoSaver(root).get_tuple(cfg("t"))
    assert fresh is not None and fresh.checkpoint["channel_values"] == latest.checkpoint["channel_values"]


def test_carry_out_of_a_command_line_plan_removes_exactly_what_it_lists(tmp_path: Path) -> None:
    """plan_prune (the command line's rule, here on a forked history) carried out under the
    thread's lock: the same files, the same bytes."""
    root = tmp_path / "root"
    saver = RepoSaver(root, durable=False)
    chain = chain_graph(saver)
    chain.invoke({"log": []}, cfg("fork"))
    history = list(chain.get_state_history(cfg("fork")))
    chain.invoke(None, history[2].config)  # a fork from the middle
    reader = Reader(root)
    plan = plan_prune(reader.store, "fork", keep_last=2, older_than=None, now=datetime.now(timezone.utc))
    before = thread_files(root, "fork")

    with reader.store.thread_lock("fork", exclusive=True):
        carry_out(reader.store, plan)

    assert_did_exactly(plan, before, thread_files(root, "fork"))


def test_cli_prune_dry_run_prints_the_plan_and_the_real_run_carries_it_out(tmp_path: Path) -> None:
    """What ``prune --dry-run`` prints is plan_prune's plan; ``prune --yes`` then removes those
    files and writes those value files, and the DeltaChannel state reads back whole."""
    root = tmp_path / "root"
    saver = RepoSaver(root, durable=False)
    run_turns(saver, "t", [BIG_TEXT, "two", "three"])
    delta_graph(saver).invoke({"items": [], "n": 0}, cfg("d"))
    state_before = delta_graph(RepoSaver(root)).get_state(cfg("d")).values
    now = datetime.now(timezone.utc)
    plans = {t: plan_prune(Reader(root).store, t, keep_last=1, older_than=None, now=now) for t in ("d", "t")}
    before = {t: thread_files(root, t) for t in plans}

    dry = _cli_json(root, "prune", "--keep-last", "1", "--dry-run")
    listed = {t["thread_id"]: (t["remove"], t["write"]) for t in dry["threads"]}
    assert listed == {
        t: ([str(p) for p in p_.removed], [str(p) for p in p_.rescued]) for t, p_ in plans.items()
    }
    real = _cli_json(root, "prune", "--keep-last", "1", "--yes")

    assert {t["thread_id"]: (t["remove"], t["write"]) for t in real["threads"]} == listed
    for t, plan in plans.items():
        assert_did_exactly(plan, before[t], thread_files(root, t))
    assert delta_graph(RepoSaver(root)).get_state(cfg("d")).values == state_before


def test_a_plan_made_before_the_thread_changed_no_longer_equals_a_fresh_one(tmp_path: Path) -> None:
    """Plans compare by what they would do, so the command line refuses to carry out a
    confirmed plan once the thread moved on (another turn) before it got the lock."""
    root = tmp_path / "root"
    saver = RepoSaver(root, durable=False)
    run_turns(saver, "t", ["one", "two", "three"])
    now = datetime.now(timezone.utc)
    plan = plan_prune(Reader(root).store, "t", keep_last=1, older_than=None, now=now)
    assert plan == plan_prune(Reader(root).store, "t", keep_last=1, older_than=None, now=now)
    run_turns(saver, "t", ["four"])
    assert plan != plan_prune(Reader(root).store, "t", keep_last=1, older_than=None, now=now)


def test_review_and_get_tuple_merge_pending_writes_by_the_same_rule(tmp_path: Path) -> None:
    """First regular write per task and idx wins, a special one (an error) is replaced by the
    later one, ordered the same way: what ``show`` lists is what ``get_tuple`` returns."""
    root = tmp_path / "root"
    saver = RepoSaver(root, durable=False)
    run_turns(saver, "t", ["one"])
    latest = saver.get_tuple(cfg("t"))
    assert latest is not None
    config = latest.config
    saver.put_writes(config, [("messages", "first b"), ("note", "b")], "task-b", "~__pregel_pull, b")
    saver.put_writes(config, [("messages", "second b")], "task-b", "~__pregel_pull, b")
    saver.put_writes(config, [("__error__", "boom 1")], "task-a", "~__pregel_pull, a")
    saver.put_writes(config, [("__error__", "boom 2")], "task-a", "~__pregel_pull, a")

    got = RepoSaver(root).get_tuple(config)
    assert got is not None
    shown = Reader(root).pending_writes("t", "", config["configurable"]["checkpoint_id"])
    assert [(w.task_id, w.channel, w.value) for w in shown] == list(got.pending_writes)
    assert list(got.pending_writes) == [
        ("task-a", "__error__", "boom 2"),
        ("task-b", "messages", "first b"),
        ("task-b", "note", "b"),
    ]


def test_tools_call_no_private_method_or_attribute_of_the_saver() -> None:
    """The core, the read model and the command line use the saver's public methods only
    (``x.saver._y`` or ``saver._y``)."""
    offenders = []
    tools = [p for layer in ("core", "readmodel", "cli") for p in (PACKAGE / layer).glob("*.py")]
    for path in sorted(tools):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                not isinstance(node, ast.Attribute)
                or not node.attr.startswith("_")
                or node.attr.startswith("__")
            ):
                continue
            owner = node.value
            name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
            if name == "saver":
                offenders.append(f"{path.name}:{node.lineno}: .{node.attr}")
    assert offenders == []


def _cli_json(root: Path, *args: str) -> Any:
    proc = cli(root, *args, "--json", timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_prune_plan_reads_each_checkpoint_a_bounded_number_of_times_when_no_snapshot_exists(
    tmp_path: Path,
) -> None:
    """Metadata that claims a delta channel no checkpoint holds a snapshot of made each kept
    checkpoint walk to the first one: ``prune --keep-last N`` read N x depth checkpoints.
    The walks of one plan share what they explored, so each checkpoint is read a bounded
    number of times (counted, not timed), and the plan keeps what the unshared walks kept."""
    root = tmp_path / "root"
    delta_graph(RepoSaver(root, durable=False), stop=60).invoke({"items": [], "n": 0}, cfg("d"))
    files = sorted((root / "threads" / "d" / "checkpoints").glob("*.json"))
    for path in files:  # forged: every checkpoint says "items" is a delta channel, none holds it
        doc = json.loads(path.read_text())
        if "items" in doc["new_values"]:
            doc["new_values"]["items"] = {"empty": True}
        doc["metadata"]["counters_since_delta_snapshot"] = {"items": 1}
        path.write_text(json.dumps(doc, indent=2, sort_keys=True))
    store = RepoSaver(root).store
    reads: list[str] = []
    header = store.docs.header  # every read of a whole checkpoint, as a record or a document

    def counted(thread_id: str, ns: str, cid: str) -> Any:
        reads.append(cid)
        return header(thread_id, ns, cid)

    store.docs.header = counted  # type: ignore[method-assign]
    now = datetime.now(timezone.utc)
    plan = plan_prune(store, "d", keep_last=len(files) // 2, older_than=None, now=now)
    most = max(reads.count(cid) for cid in set(reads))
    # before: the middle checkpoints were read 34 times, 1,611 reads of 62 files
    assert most <= 6 and len(reads) <= 6 * len(files), f"{most} times at most, {len(reads)} reads"
    # what is kept: every checkpoint, since each kept one needs its ancestors to the first
    assert plan.doomed == {} or all(not ids for ids in plan.doomed.values()), plan.doomed
