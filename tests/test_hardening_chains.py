"""Chains are bounded and cycle-safe: append chains (``base_ref``) and parent links.

Every walk down an append chain or up a history must end: a cycle (a ``base_ref`` naming its
own file, two files naming each other, parents that lead back) gives one FileFormatError
naming the file and pointer instead of a RecursionError, a traceback or a loop that holds the
thread's lock forever. Every chain the saver may write reads back in a fresh process, and the
options that could write unreadable data or wait forever are refused up front.

Threads are written by real compiled graphs through RepoSaver and then damaged by mutating the
files the saver wrote. Anything that used to hang runs under ``bounded`` (a thread with a
deadline) or as a subprocess with a timeout, so a regression fails the test instead of
hanging the run.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import ormsgpack
import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph

import langgraph_checkpoint_repo.core.jsonread as jsonread_mod
from graphs import cfg, chat_graph, chat_root, delta_graph
from helpers import checkpoint_files, cli_in_process, dump, file_bytes, load
from langgraph_checkpoint_repo import RepoCheckpointError, RepoSaver
from langgraph_checkpoint_repo.core.errors import FileFormatError, InvalidWriteError, LockTimeoutError
from langgraph_checkpoint_repo.core.format.chains import MAX_APPEND_DEPTH
from langgraph_checkpoint_repo.core.format.entries import ValueEntry
from langgraph_checkpoint_repo.core.format.migrations import migrate_root
from langgraph_checkpoint_repo.transfer import copy_threads

T = TypeVar("T")
DEADLINE = 120.0  # seconds: far beyond any of these calls when nothing loops
CYCLE = "append chain cycles back to"
PARENT_CYCLE = "parent chain cycles back to checkpoint"


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------
def bounded(fn: Callable[[], T], deadline: float = DEADLINE) -> T:
    """Run ``fn`` in a daemon thread; its result or its exception, or fail on a hang."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed to the caller, never swallowed
            box["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(deadline)
    if worker.is_alive():
        pytest.fail(f"still running after {deadline:.0f} s: a hang")
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


def bounded_error(fn: Callable[[], object]) -> BaseException:
    """The exception ``fn`` raises within the deadline (fails the test if it returns)."""
    try:
        bounded(fn)
    except Exception as exc:
        return exc
    pytest.fail("expected an error, got none")


def bounded_cli(root: Path, *args: str) -> Any:
    """``langgraph-repo`` in this process (helpers.cli_in_process) under a deadline."""
    return bounded(lambda: cli_in_process("--root", root, *args))


def assert_clean_failure(result: Any, code: int, *needles: str) -> None:
    """A command that failed the way it should: its exit code, one line naming the file."""
    assert result.exit_code == code, (result.exit_code, result.output, result.stderr)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output + result.stderr
    for needle in needles:
        assert needle in result.stderr, (needle, result.stderr)


def appends(root: Path, thread: str, channel: str = "messages") -> list[Path]:
    """Checkpoints of a thread whose value of ``channel`` is stored as an append, oldest first."""
    return [
        p
        for p in checkpoint_files(root, thread)
        if "append" in load(p).get("new_values", {}).get(channel, {})
    ]


def point_base_at(path: Path, target: Path, channel: str = "messages") -> None:
    """Make the append in ``path`` extend the value ``target`` holds (a hand edit of base_ref)."""
    held = load(target)  # format 4: a channel in new_values is at "version" unless listed
    version = held["checkpoint"].get("channel_versions", {}).get(channel, held.get("version"))
    doc = load(path)
    app = doc["new_values"][channel]["append"]
    app["base"] = version
    app["base_ref"] = f"checkpoints/{target.name}"
    dump(path, doc)


# ---------------------------------------------------------------------------
# append cycles: a file that names itself, two files that name each other
# ---------------------------------------------------------------------------
def self_cycle(root: Path) -> Path:
    """The newest append names its own file as its base."""
    last = appends(root, "t")[-1]
    point_base_at(last, last)
    return last


def two_file_cycle(root: Path) -> Path:
    """The newest append extends the one before, which is edited to extend the newest."""
    *_, older, newest = appends(root, "t")
    point_base_at(newest, older)  # format 4 names no base when it is the parent's: named here
    point_base_at(older, newest)
    return older


CYCLES = {"base_ref names its own file": self_cycle, "two files name each other": two_file_cycle}


@pytest.fixture(params=sorted(CYCLES))
def cyclic(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, Path]:
    """A chat whose messages chain cycles; (root, the file whose base_ref closes the cycle)."""
    root = tmp_path / "root"
    chat_root(root)
    return root, CYCLES[request.param](root)


def assert_cycle_error(exc: BaseException, closer: Path) -> None:
    assert isinstance(exc, FileFormatError), repr(exc)
    assert CYCLE in str(exc) and exc.pointer.endswith("/append/base_ref"), str(exc)
    assert exc.path in {str(p) for p in checkpoint_files(closer.parent.parent.parent.parent, "t")}, exc.path


def test_get_tuple_on_an_append_cycle_raises_file_format_error_naming_the_file(
    cyclic: tuple[Path, Path],
) -> None:
    root, closer = cyclic
    exc = bounded_error(lambda: RepoSaver(root).get_tuple(cfg("t")))
    assert_cycle_error(exc, closer)
    assert str(closer) in str(exc)


def test_list_over_an_append_cycle_raises_file_format_error_naming_the_file(
    cyclic: tuple[Path, Path],
) -> None:
    root, closer = cyclic
    exc = bounded_error(lambda: list(RepoSaver(root).list(cfg("t"))))
    assert_cycle_error(exc, closer)


def test_graph_state_history_over_an_append_cycle_raises_file_format_error(cyclic: tuple[Path, Path]) -> None:
    root, closer = cyclic
    graph = chat_graph(RepoSaver(root))
    exc = bounded_error(lambda: list(graph.get_state_history(cfg("t"))))
    assert_cycle_error(exc, closer)


def test_validate_reports_an_append_cycle_once_at_the_link_that_closes_it(cyclic: tuple[Path, Path]) -> None:
    """One line at the file whose base_ref points back (the cause), not one at every
    checkpoint that refers to the chain (docs/reliability.md, hand edits)."""
    root, closer = cyclic
    result = bounded_cli(root, "validate")
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    lines = [ln for ln in result.output.splitlines() if CYCLE in ln]
    assert lines and any(ln.startswith(f"{closer}: ") for ln in lines), result.output
    assert len(lines) == len({ln.split(": ", 1)[0] for ln in lines}), result.output


def test_show_diff_tasks_render_copy_fail_on_an_append_cycle_in_one_line_while_history_lists_it(
    cyclic: tuple[Path, Path],
) -> None:
    """Commands that read the values fail with exit 4 and one line naming the file (copy before
    it copies anything); history reads no value, so the damage does not hide the checkpoints."""
    root, closer = cyclic
    for command in (["show", "t"], ["diff", "t"], ["tasks", "t"], ["render", "t"], ["copy", "t", "u"]):
        assert_clean_failure(bounded_cli(root, *command), 4, CYCLE, "checkpoints/")
    assert not (root / "threads" / "u").exists()
    result = bounded_cli(root, "history", "t")
    assert result.exit_code == 0, (result.output, result.stderr)
    assert closer.stem in result.output


def test_saver_prune_on_an_append_cycle_raises_and_removes_nothing(cyclic: tuple[Path, Path]) -> None:
    """Used to loop forever holding the thread's exclusive lock."""
    root, closer = cyclic
    before = file_bytes(root)
    saver = RepoSaver(root, lock_timeout=1)
    exc = bounded_error(lambda: saver.prune(["t"]))
    assert_cycle_error(exc, closer)
    assert file_bytes(root) == before
    with saver.store.thread_lock("t", exclusive=True):
        pass  # the error released the thread's lock


def test_cli_prune_on_an_append_cycle_fails_with_one_line_and_removes_nothing(
    cyclic: tuple[Path, Path],
) -> None:
    root, _ = cyclic
    before = file_bytes(root)
    assert_clean_failure(bounded_cli(root, "prune", "t", "--keep-last", "1", "--yes"), 4, CYCLE)
    assert file_bytes(root) == before


def test_saver_prune_in_a_subprocess_ends_on_an_append_cycle(root: Path) -> None:
    """A fresh process, as a cron job runs it: an error and exit, never a hang."""
    chat_root(root)
    closer = self_cycle(root)
    code = f"from langgraph_checkpoint_repo import RepoSaver\nRepoSaver({str(root)!r}).prune(['t'])\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=DEADLINE)
    assert proc.returncode == 1
    assert "FileFormatError" in proc.stderr and CYCLE in proc.stderr and str(closer) in proc.stderr
    assert "RecursionError" not in proc.stderr


def test_copy_thread_and_migrate_keep_an_append_cycle_as_is_and_the_copy_names_its_own_file(
    cyclic: tuple[Path, Path],
) -> None:
    """copy_thread and migrate copy or upgrade files without interpreting them: they end,
    nothing is lost or invented, and the copy names its own file when read."""
    root, _ = cyclic
    before = file_bytes(root)
    report = bounded(lambda: migrate_root(root))
    assert report.changed == [] and report.files > 0
    assert file_bytes(root) == before
    result = bounded_cli(root, "migrate")
    assert result.exit_code == 0 and "nothing to migrate" in result.output, (result.output, result.stderr)
    saver = RepoSaver(root)
    bounded(lambda: saver.copy_thread("t", "u"))
    src = {p.name: load(p)["new_values"] for p in checkpoint_files(root, "t")}
    dst = {p.name: load(p)["new_values"] for p in checkpoint_files(root, "u")}
    assert dst == src
    exc = bounded_error(lambda: RepoSaver(root).get_tuple(cfg("u")))
    assert isinstance(exc, FileFormatError) and CYCLE in str(exc)
    assert "/threads/u/checkpoints/" in exc.path


def test_value_file_whose_base_is_itself_is_a_cycle_for_read_validate_and_prune(root: Path) -> None:
    """A values/ file may hold a chain link (older trees, a hand edit, a hostile pull request;
    prune itself stores a kept list whole): a cycle there is caught the same way. In format 4
    the checkpoint prune keeps appends onto the list its removed parent held, which prune
    stored in ``values/messages@<version>.json``; that file is made an append onto itself.
    The next turn's first checkpoint still reads ``messages`` through it, so a prune that
    keeps that checkpoint and removes the one before must walk the chain too."""
    chat_root(root, turns=4)
    RepoSaver(root).prune(["t"])
    # one more turn: its first checkpoint carries the kept checkpoint's messages
    chat_graph(RepoSaver(root)).invoke({"messages": [HumanMessage(content="turn 4")]}, cfg("t"))
    vfiles = sorted((root / "threads" / "t" / "values").glob("messages@*.json"))
    assert len(vfiles) == 1, "prune stored the kept checkpoint's base list in a values/ file"
    victim = vfiles[0]
    kept, carrier, *_ = checkpoint_files(root, "t")
    assert "append" in load(kept)["new_values"]["messages"]  # onto the list the values/ file holds
    assert "messages" not in load(carrier).get("new_values", {})  # read from the kept checkpoint
    doc = load(victim)
    items = doc.pop("value")["json"]
    doc["append"] = {
        "base": doc["version"],
        "base_ref": f"values/{victim.name}",
        "base_length": 0,
        "items": items,
    }
    dump(victim, doc)
    before = file_bytes(root)
    exc = bounded_error(lambda: RepoSaver(root).get_tuple(cfg("t", checkpoint_id=carrier.stem)))
    assert isinstance(exc, FileFormatError) and CYCLE in str(exc) and exc.path == str(victim)
    result = bounded_cli(root, "validate")
    assert result.exit_code == 1 and f"{victim}: /append/base_ref: {CYCLE}" in result.output, result.output
    result = bounded_cli(root, "prune", "--keep-last", "3", "t")  # keeps the carrier, removes the kept one
    assert_clean_failure(result, 4, CYCLE, str(victim))  # 4: a file that cannot be read as its kind
    assert file_bytes(root) == before


# ---------------------------------------------------------------------------
# parent cycles: A's parent is B and B's parent is A, or A is its own parent
# ---------------------------------------------------------------------------
def parent_two_cycle(root: Path) -> Path:
    """The newest checkpoint's parent is edited to have the newest as its parent."""
    *_, parent, newest = checkpoint_files(root, "d")
    assert load(newest)["parent_checkpoint_id"] == parent.stem
    doc = load(parent)
    doc["parent_checkpoint_id"] = newest.stem
    dump(parent, doc)
    return parent


def parent_self_cycle(root: Path) -> Path:
    newest = checkpoint_files(root, "d")[-1]
    doc = load(newest)
    doc["parent_checkpoint_id"] = newest.stem
    dump(newest, doc)
    return newest


PARENT_CYCLES = {"two checkpoints are each other's parent": parent_two_cycle, "own parent": parent_self_cycle}


@pytest.fixture(params=sorted(PARENT_CYCLES))
def parent_cyclic(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, Path]:
    """A DeltaChannel loop (its value is rebuilt by walking parents) whose newest two
    checkpoints store no snapshot, with a parent cycle there: (root, edited file)."""
    root = tmp_path / "root"
    delta_graph(RepoSaver(root, durable=False)).invoke({"items": [], "n": 0}, cfg("d"))
    for path in checkpoint_files(root, "d")[-2:]:  # no seed in the cycle: a walk would go round forever
        assert load(path)["new_values"]["items"] == {"empty": True}
    return root, PARENT_CYCLES[request.param](root)


def assert_parent_cycle_error(exc: BaseException, root: Path) -> None:
    assert isinstance(exc, FileFormatError), repr(exc)
    assert PARENT_CYCLE in str(exc) and exc.pointer == "/parent_checkpoint_id", str(exc)
    assert exc.path in {str(p) for p in checkpoint_files(root, "d")}


def test_graph_get_state_over_a_parent_cycle_raises_file_format_error(
    parent_cyclic: tuple[Path, Path],
) -> None:
    """LangGraph rebuilds a DeltaChannel by walking parents (get_delta_channel_history)."""
    root, _ = parent_cyclic
    graph = delta_graph(RepoSaver(root))
    assert_parent_cycle_error(bounded_error(lambda: graph.get_state(cfg("d"))), root)


def test_graph_state_history_over_a_parent_cycle_raises_file_format_error(
    parent_cyclic: tuple[Path, Path],
) -> None:
    root, _ = parent_cyclic
    graph = delta_graph(RepoSaver(root))
    assert_parent_cycle_error(bounded_error(lambda: list(graph.get_state_history(cfg("d")))), root)


def test_delta_history_get_tuple_and_list_over_a_parent_cycle_raise_naming_the_file(
    parent_cyclic: tuple[Path, Path],
) -> None:
    """get_delta_channel_history walks parents and must stop; so must get_tuple and list, which
    read a delta (format 4) on top of its parents: each raises, naming a file of the cycle."""
    root, edited = parent_cyclic
    assert load(edited).get("delta")
    saver = RepoSaver(root)
    exc = bounded_error(lambda: saver.get_delta_channel_history(config=cfg("d"), channels=["items"]))
    assert_parent_cycle_error(exc, root)
    one = cfg("d", checkpoint_id=edited.stem)
    assert_parent_cycle_error(bounded_error(lambda: saver.get_tuple(one)), root)
    assert_parent_cycle_error(bounded_error(lambda: list(saver.list(cfg("d")))), root)


def test_validate_reports_a_parent_cycle_per_file_while_show_and_diff_fail_in_one_line(
    parent_cyclic: tuple[Path, Path],
) -> None:
    root, edited = parent_cyclic
    result = bounded_cli(root, "validate")
    assert result.exit_code == 1, result.output
    lines = [ln for ln in result.output.splitlines() if PARENT_CYCLE in ln]
    # once per file in the cycle that cannot be read (format 4: each is a delta on the other)
    assert 1 <= len(lines) <= 2 and len(set(lines)) == len(lines), result.output
    for line in lines:
        assert line.split(": /parent_checkpoint_id: ")[0] in {str(p) for p in checkpoint_files(root, "d")}
    assert any(edited.stem in line for line in lines)
    # format 4: the checkpoints in the cycle are deltas, read on top of their parents: show
    # and diff fail in one line naming the cycle
    for command in (["show", "d"], ["diff", "d"]):
        result = bounded_cli(root, *command)
        assert result.exit_code != 0 and PARENT_CYCLE in result.stderr, (command, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1


def test_saver_prune_over_a_parent_cycle_raises_and_removes_nothing(parent_cyclic: tuple[Path, Path]) -> None:
    """Used to loop forever (the DeltaChannel's seed is never found) holding the exclusive lock."""
    root, _ = parent_cyclic
    before = file_bytes(root)
    saver = RepoSaver(root, lock_timeout=1)
    assert_parent_cycle_error(bounded_error(lambda: saver.prune(["d"])), root)
    assert file_bytes(root) == before
    with saver.store.thread_lock("d", exclusive=True):
        pass  # released


def test_cli_prune_over_a_parent_cycle_fails_with_one_line_and_removes_nothing(
    parent_cyclic: tuple[Path, Path],
) -> None:
    root, _ = parent_cyclic
    before = file_bytes(root)
    assert_clean_failure(bounded_cli(root, "prune", "d", "--keep-last", "1", "--yes"), 4, PARENT_CYCLE)
    assert file_bytes(root) == before


def test_saver_prune_in_a_subprocess_ends_on_a_parent_cycle(root: Path) -> None:
    delta_graph(RepoSaver(root, durable=False)).invoke({"items": [], "n": 0}, cfg("d"))
    parent_two_cycle(root)
    code = f"from langgraph_checkpoint_repo import RepoSaver\nRepoSaver({str(root)!r}).prune(['d'])\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=DEADLINE)
    assert proc.returncode == 1 and PARENT_CYCLE in proc.stderr, proc.stderr[-2000:]


def test_export_refuses_a_parent_cycle_while_copy_thread_and_migrate_keep_it_as_is(
    parent_cyclic: tuple[Path, Path],
) -> None:
    """Export: no order puts each checkpoint after its parent, so another saver would get a
    history it cannot hold: refused, naming thread and checkpoint, nothing copied. migrate
    upgrades the files as they are and ends; copy_thread refuses (format 4: it reads each
    delta's line whole), copying nothing."""
    root, _ = parent_cyclic
    target = InMemorySaver()
    exc = bounded_error(lambda: copy_threads(RepoSaver(root), target, ["d"]))
    # format 4: reading the deltas in the cycle is what fails first
    assert isinstance(exc, RepoCheckpointError)
    assert "parent links form a cycle" in str(exc) or PARENT_CYCLE in str(exc)
    assert "'d'" in str(exc) or "/threads/d/" in str(exc)
    assert list(target.list(None)) == []
    before = file_bytes(root)
    assert bounded(lambda: migrate_root(root)).changed == []
    assert file_bytes(root) == before
    # format 4: copy_thread reads every delta's line whole before it copies: a cycle is
    # refused by name, and nothing of the copy is written
    saver = RepoSaver(root)
    assert_parent_cycle_error(bounded_error(lambda: saver.copy_thread("d", "e")), root)
    assert not (root / "threads" / "e").exists()


# ---------------------------------------------------------------------------
# long chains: what the saver writes reads back in a fresh process; longer is refused
# ---------------------------------------------------------------------------
def talk_graph(saver: RepoSaver, total: int) -> Any:
    """One AIMessage per step until the conversation holds ``total`` messages."""

    def talk(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(content=f"reply {len(state['messages'])}")]}

    builder = StateGraph(MessagesState)
    builder.add_node("talk", talk)
    builder.add_edge(START, "talk")
    builder.add_conditional_edges("talk", lambda s: END if len(s["messages"]) >= total else "talk")
    return builder.compile(checkpointer=saver)


LONG_TOTAL = MAX_APPEND_DEPTH + 1  # the first message whole, then one append per step


@pytest.fixture(scope="module")
def long_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A conversation whose messages chain is as long as snapshot_every allows (1024 links)."""
    root = tmp_path_factory.mktemp("long") / "root"
    saver = RepoSaver(root, durable=False, snapshot_every=MAX_APPEND_DEPTH)
    config = {**cfg("t"), "recursion_limit": LONG_TOTAL + 10}
    talk_graph(saver, LONG_TOTAL).invoke({"messages": [HumanMessage(content="hi")]}, config)
    newest = load(checkpoint_files(root, "t")[-1])["new_values"]["messages"]
    assert "append" in newest  # a chain as long as snapshot_every allows, ending here
    return root


def test_chain_at_the_longest_snapshot_every_reads_back_in_a_fresh_process(long_root: Path) -> None:
    code = (
        "import sys\n"
        "from langgraph_checkpoint_repo import RepoSaver\n"
        f"tup = RepoSaver({str(long_root)!r}).get_tuple({{'configurable': {{'thread_id': 't'}}}})\n"
        "msgs = tup.checkpoint['channel_values']['messages']\n"
        "print(len(msgs), type(msgs[-1]).__name__, msgs[0].content, msgs[-1].content)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=DEADLINE * 2)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == [str(LONG_TOTAL), "AIMessage", "hi", "reply", str(LONG_TOTAL - 1)]


def test_chain_at_the_longest_snapshot_every_validates_and_shows_in_a_fresh_process(long_root: Path) -> None:
    for args in (["validate"], ["show", "t", "--json"]):
        proc = subprocess.run(
            [sys.executable, "-m", "langgraph_checkpoint_repo", "--root", str(long_root), *args],
            capture_output=True,
            text=True,
            timeout=DEADLINE * 2,
        )
        assert proc.returncode == 0, (args, proc.stdout[-2000:], proc.stderr[-2000:])
    assert len(json.loads(proc.stdout)["values"]["messages"]) == LONG_TOTAL


def test_chain_one_link_past_the_limit_fails_cleanly_naming_the_file(long_root: Path, root: Path) -> None:
    """One more link, made from the newest file: a FileFormatError, not a RecursionError."""
    shutil.copytree(long_root, root)
    newest = checkpoint_files(root, "t")[-1]
    doc = RepoSaver(root).store.docs.header("t", "", newest.stem)  # whole (format 4: newest is a delta)
    version = doc["checkpoint"]["channel_versions"]["messages"]
    new_version = f"{int(version.split('.')[0]) + 1:08}.00000005"
    new_id = str(uuid.UUID(int=uuid.UUID(doc["checkpoint_id"]).int + 1))
    extra = json.loads(json.dumps(doc))
    extra["checkpoint_id"] = new_id
    extra["parent_checkpoint_id"] = doc["checkpoint_id"]
    extra["checkpoint"]["channel_versions"]["messages"] = new_version
    extra["values"] = {
        k: (f"checkpoints/{new_id}.json" if k == "messages" else v) for k, v in doc["values"].items()
    }
    app = extra["new_values"]["messages"]["append"]
    app.update(base=version, base_ref=f"checkpoints/{newest.name}", base_length=LONG_TOTAL, depth=LONG_TOTAL)
    extra["new_values"] = {"messages": extra["new_values"]["messages"]}
    path = newest.parent / f"{new_id}.json"
    dump(path, extra)
    exc = bounded_error(lambda: RepoSaver(root).get_tuple(cfg("t")))
    assert isinstance(exc, FileFormatError), repr(exc)
    assert f"longer than {MAX_APPEND_DEPTH} links" in str(exc) or f"over {MAX_APPEND_DEPTH}" in str(exc)
    assert exc.path == str(path) and "/new_values/messages/append" in exc.pointer
    assert RepoSaver(root).get_tuple(cfg("t", checkpoint_id=newest.stem)) is not None  # the rest reads


def test_append_depth_field_of_a_million_is_refused_naming_the_pointer(root: Path) -> None:
    chat_root(root)
    last = appends(root, "t")[-1]
    doc = load(last)
    doc["new_values"]["messages"]["append"]["depth"] = 1_000_000
    dump(last, doc)
    exc = bounded_error(lambda: RepoSaver(root).get_tuple(cfg("t")))
    assert isinstance(exc, FileFormatError) and exc.path == str(last)
    assert exc.pointer == "/new_values/messages/append/depth" and "1000000" in str(exc)
    result = bounded_cli(root, "validate")
    assert result.exit_code == 1 and f"{last}: /values/messages:" in result.output, result.output


def test_list_body_joins_a_chain_longer_than_the_recursion_limit() -> None:
    """ValueEntry.list_body walks its bases iteratively, whatever the interpreter's limit."""
    base = ValueEntry(empty=False, whole=["x"], where="base")
    entry = base
    links = sys.getrecursionlimit() * 3
    for i in range(links):
        entry = ValueEntry(
            empty=False,
            depth=entry.depth + 1,
            where=f"link {i}",
            base=entry,
            items=[i],
        )
    kind, data = entry.typed()
    assert kind == "msgpack"
    assert ormsgpack.unpackb(data) == ["x", *range(links)]
    assert entry.tree == ["x", *range(links)] and entry.count == links + 1


# ---------------------------------------------------------------------------
# options that would write unreadable data or wait forever
# ---------------------------------------------------------------------------
def test_snapshot_every_is_refused_outside_what_a_read_follows_and_accepted_inside(tmp_path: Path) -> None:
    """10_000 used to be accepted and wrote chains a fresh saver could not read; 0 stores
    every version whole, 1024 is the longest chain a read follows."""
    for bad in (-1, MAX_APPEND_DEPTH + 1, 10_000, True, 2.0, "64", None):
        with pytest.raises(ValueError, match="snapshot_every"):
            RepoSaver(tmp_path / "refused", snapshot_every=bad)
    assert not (tmp_path / "refused").exists()
    for value in (0, 1, MAX_APPEND_DEPTH):
        root = tmp_path / f"root{value}"
        app = chat_graph(RepoSaver(root, durable=False, snapshot_every=value))
        for turn in range(2):
            app.invoke({"messages": [HumanMessage(content=f"turn {turn}")]}, cfg("t"))
        assert bool(appends(root, "t")) == (value > 0)
        tup = RepoSaver(root).get_tuple(cfg("t"))
        assert tup is not None and len(tup.checkpoint["channel_values"]["messages"]) == 4


@pytest.mark.parametrize("value", [-1, 256 * 1024 * 1024 + 1, True, 8.5, "8k", None])
def test_large_value_bytes_outside_what_a_read_accepts_is_refused(tmp_path: Path, value: Any) -> None:
    with pytest.raises(ValueError, match="large_value_bytes"):
        RepoSaver(tmp_path, large_value_bytes=value)


@pytest.mark.parametrize("value", [-1, -0.5, math.nan, math.inf, 86_401, True, "5", None])
def test_lock_timeout_that_never_ends_is_refused(tmp_path: Path, value: Any) -> None:
    with pytest.raises(ValueError, match="lock_timeout"):
        RepoSaver(tmp_path, lock_timeout=value)
    with pytest.raises(ValueError, match="lock_timeout"):
        migrate_root(tmp_path, lock_timeout=value)


def test_lock_timeout_also_bounds_the_wait_inside_one_process(root: Path) -> None:
    """Another thread of the same process holding the thread's exclusive lock (a prune) used
    to make a writer wait forever, whatever lock_timeout said."""
    saver = RepoSaver(root, durable=False, lock_timeout=0.2)
    app = chat_graph(saver)
    app.invoke({"messages": [HumanMessage(content="hi")]}, cfg("t"))
    with saver.store.thread_lock("t", exclusive=True):
        exc = bounded_error(lambda: app.invoke({"messages": [HumanMessage(content="again")]}, cfg("t")))
    assert isinstance(exc, LockTimeoutError) and "'t'" in str(exc), repr(exc)
    out = app.invoke({"messages": [HumanMessage(content="after")]}, cfg("t"))
    assert [m.content for m in out["messages"]][-2:] == ["after", "echo: after"]


def test_a_file_over_the_read_limit_is_refused_before_it_is_written(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file the reader refuses (over MAX_FILE_BYTES) would be state lost: put refuses it
    instead, and nothing is written. The limit is lowered so the test writes kilobytes."""
    monkeypatch.setattr(jsonread_mod, "MAX_FILE_BYTES", 64 * 1024)
    app = chat_graph(RepoSaver(root, durable=False))
    app.invoke({"messages": [HumanMessage(content="small")]}, cfg("t"))
    before = file_bytes(root)
    exc = bounded_error(lambda: app.invoke({"messages": [HumanMessage(content="x" * 100_000)]}, cfg("t")))
    assert isinstance(exc, InvalidWriteError) and "a read accepts" in str(exc), repr(exc)
    after = file_bytes(root)
    assert all(len(data) <= 64 * 1024 for data in after.values())
    tup = RepoSaver(root).get_tuple(cfg("t"))
    assert tup is not None and [m.content for m in tup.checkpoint["channel_values"]["messages"]][:2] == [
        "small",
        "echo: small",
    ]
    assert set(before) <= set(after)
