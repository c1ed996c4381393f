"""Retention (issue 39): LangGraph's ``checkpointer.ttl`` and keep-last on a real RepoSaver.

Every test runs real graphs on a real root; "now" is the saver's ``clock``, so a thread is
aged by moving the clock, never by waiting (docs/reliability.md, "Retention").
"""

from __future__ import annotations

import json
import operator
import re
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Annotated, Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command
from typing_extensions import TypedDict

from graphs import ask_graph, cfg, chat_graph, chat_root, contents, fan_graph
from helpers import checkpoints, cli_in_process
from langgraph_checkpoint_repo import RepoSaver
from langgraph_checkpoint_repo.agent_server import checkpointer
from langgraph_checkpoint_repo.core.errors import BadInputError
from langgraph_checkpoint_repo.project_types import project_retention
from langgraph_checkpoint_repo.readmodel.retention import Retention

TTL = {"strategy": "delete", "default_ttl": 1}  # one minute


def at(minutes: float) -> Any:
    """A clock running ``minutes`` ahead of the real one."""
    return lambda: datetime.now(timezone.utc) + timedelta(minutes=minutes)


def files(root: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and ".cache" not in p.parts}


def thread_dir(root: Path, thread_id: str) -> Path:
    return root / "threads" / thread_id


def test_a_thread_idle_past_the_ttl_is_deleted_whole_and_one_within_it_is_kept(tmp_path: Path) -> None:
    root = tmp_path / "root"
    chat_root(root, "chat", turns=2)
    young = RepoSaver(root, ttl=TTL, clock=at(0.5), durable=False).sweep()
    assert [(p.thread_id, p.doomed, p.expired) for p in young] == [("chat", {}, None)]
    assert thread_dir(root, "chat").is_dir()

    saver = RepoSaver(root, ttl=TTL, clock=at(2), durable=False)
    (plan,) = saver.sweep()
    assert plan.expired is not None and plan.expired.startswith("expired: last written ")
    assert not thread_dir(root, "chat").exists()
    assert saver.get_tuple(cfg("chat")) is None
    assert saver.sweep() == []  # nothing left to sweep


def test_keep_latest_cuts_an_expired_thread_to_its_latest_state_which_continues(tmp_path: Path) -> None:
    root = tmp_path / "root"
    chat_root(root, "chat", turns=2)
    latest = checkpoints(thread_dir(root, "chat"))[-1]
    saver = RepoSaver(root, durable=False)
    before = saver.get_tuple(cfg("chat"))
    (plan,) = RepoSaver(root, ttl={"strategy": "keep_latest", "default_ttl": 1}, clock=at(2)).sweep()
    assert plan.expired is None and plan.doomed
    assert checkpoints(thread_dir(root, "chat")) == [latest]
    assert saver.get_tuple(cfg("chat")).checkpoint == before.checkpoint  # type: ignore[union-attr]
    chat_graph(saver).invoke({"messages": [HumanMessage(content="turn 2")]}, cfg("chat"))
    messages = saver.get_tuple(cfg("chat")).checkpoint["channel_values"]["messages"]  # type: ignore[union-attr]
    assert contents(messages) == [
        "turn 0",
        "echo: turn 0",
        "turn 1",
        "echo: turn 1",
        "turn 2",
        "echo: turn 2",
    ]


def test_a_thread_waiting_at_an_interrupt_is_never_expired_and_resumes(tmp_path: Path) -> None:
    root = tmp_path / "root"
    graph = ask_graph(RepoSaver(root, durable=False))
    graph.invoke({}, cfg("waits"))
    before = files(root)

    def a_year_later() -> RepoSaver:  # a sweeper that has not used the thread itself
        return RepoSaver(root, ttl=TTL, clock=at(60 * 24 * 365), durable=False)

    (plan,) = a_year_later().sweep()
    assert plan.skipped is not None and plan.skipped.startswith("waits on an interrupt at ask: never expired")
    assert not plan.doomed and files(root) == before
    assert graph.invoke(Command(resume="Ada"), cfg("waits"))["answer"] == "Ada"
    (after,) = a_year_later().sweep()  # answered, then idle a year: it goes
    assert after.expired and not thread_dir(root, "waits").exists()


class Log(TypedDict):
    log: Annotated[list[str], operator.add]


def test_a_thread_a_run_is_writing_is_never_expired_under_it(tmp_path: Path) -> None:
    """A node running longer than the TTL: the sweep that runs meanwhile (the server's
    background sweeper) keeps the thread, whose latest state has tasks to run; deleting it
    left the run's next put an orphan and its earlier checkpoints gone (hostile review)."""
    root = tmp_path / "root"
    sweeper = RepoSaver(root, ttl=TTL, clock=at(10), durable=False)
    swept: list[Any] = []

    def slow(state: Log) -> Log:
        swept.extend(sweeper.sweep())
        return {"log": ["slow"]}

    builder = StateGraph(Log)
    builder.add_node("first", lambda state: {"log": ["first"]})
    builder.add_node("slow", slow)
    builder.add_edge(START, "first")
    builder.add_edge("first", "slow")
    builder.add_edge("slow", END)
    graph = builder.compile(checkpointer=RepoSaver(root, durable=False))
    graph.invoke({"log": []}, cfg("run"), durability="sync")  # each step saved before the next runs
    (plan,) = swept
    assert plan.expired is None and "its latest state has tasks to run (slow)" in (plan.skipped or ""), plan
    history = list(graph.get_state_history(cfg("run")))
    assert [h.metadata["step"] for h in history] == [2, 1, 0, -1]  # type: ignore[index]
    assert history[0].values == {"log": ["first", "slow"]}


def test_a_thread_whose_latest_step_failed_keeps_its_checkpoint_and_pending_writes(tmp_path: Path) -> None:
    root = tmp_path / "root"
    saver = RepoSaver(root, durable=False)
    graph = fan_graph(saver, fail=True)
    with pytest.raises(RuntimeError, match="boom on bad"):
        graph.invoke({"items": ["a", "b", "bad"]}, cfg("failed"))
    pending = saver.get_tuple(cfg("failed"))
    assert pending is not None and pending.pending_writes
    before = files(root)
    (plan,) = RepoSaver(root, ttl={**TTL, "keep_last": 1}, clock=at(60 * 24 * 365), durable=False).sweep()
    assert (
        plan.skipped is not None and "its latest step did not finish (pending writes of work)" in plan.skipped
    )
    assert files(root) == before
    again = saver.get_tuple(cfg("failed"))
    assert again is not None and again.pending_writes == pending.pending_writes


def test_keep_last_keeps_the_newest_checkpoints_as_prune_does_and_the_thread_continues(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    chat_root(root, "chat", turns=4)
    tdir = thread_dir(root, "chat")
    ids = [p.stem for p in checkpoints(tdir)]
    planned = cli_in_process("--root", root, "prune", "--keep-last", "3", "--dry-run", "--json")
    assert planned.exit_code == 0, planned.stdout + planned.stderr
    saver = RepoSaver(root, ttl={"keep_last": 3}, durable=False)
    before = saver.get_tuple(cfg("chat"))
    (plan,) = saver.sweep()
    assert [str(p) for p in plan.removed] == json.loads(planned.stdout)["threads"][0]["remove"]
    assert [p.stem for p in checkpoints(tdir)] == ids[-3:]
    after = RepoSaver(root, durable=False)  # a fresh process reads the same state, and continues
    assert after.get_tuple(cfg("chat")).checkpoint == before.checkpoint  # type: ignore[union-attr]
    chat_graph(after).invoke({"messages": [HumanMessage(content="turn 4")]}, cfg("chat"))
    messages = after.get_tuple(cfg("chat")).checkpoint["channel_values"]["messages"]  # type: ignore[union-attr]
    assert contents(messages)[-2:] == ["turn 4", "echo: turn 4"] and len(messages) == 10


def test_a_dry_run_writes_nothing_and_shows_what_a_real_run_removes(tmp_path: Path) -> None:
    root = tmp_path / "root"
    chat_root(root, "old", turns=1)
    ask_graph(RepoSaver(root, durable=False)).invoke({}, cfg("waits"))
    before = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in root.rglob("*") if p.is_file()}
    plans = RepoSaver(root, ttl=TTL, clock=at(2), durable=False).sweep(dry_run=True)
    assert {p.thread_id: bool(p.expired) for p in plans} == {"old": True, "waits": False}
    assert {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in root.rglob("*") if p.is_file()} == before
    later = at(2)().isoformat()
    shown = cli_in_process("--root", root, "prune", "--ttl", "1m", "--at", later, "--dry-run")
    assert shown.exit_code == 0, shown.stdout + shown.stderr
    assert "thread old: would delete the whole thread (expired: last written " in shown.stdout
    assert "thread waits: kept whole, waits on an interrupt at ask: never expired" in shown.stdout
    assert files(root) == {p: b for p, (_, b) in before.items() if ".cache" not in p.parts}
    (tmp_path / "langgraph.json").write_text(json.dumps({"checkpointer": {"ttl": TTL}}))  # beside the root
    configured = cli_in_process("--root", root, "prune", "--retention", "--at", later, "--dry-run")
    assert configured.exit_code == 0 and configured.stdout == shown.stdout
    done = cli_in_process("--root", root, "prune", "--ttl", "1m", "--at", later, "--yes")
    assert done.exit_code == 0, done.stdout + done.stderr
    assert "thread old: removed " in done.stdout
    assert not thread_dir(root, "old").exists() and thread_dir(root, "waits").is_dir()


def test_a_symlink_in_an_expired_thread_refuses_its_removal(tmp_path: Path) -> None:
    root = tmp_path / "root"
    chat_root(root, "chat", turns=1)
    outside = tmp_path / "outside.json"
    outside.write_text("{}")
    (thread_dir(root, "chat") / "planted.json").symlink_to(outside)
    (plan,) = RepoSaver(root, ttl=TTL, clock=at(2), durable=False).sweep()
    assert plan.skipped is not None and plan.skipped.startswith("not swept: refusing to remove ")
    assert thread_dir(root, "chat").is_dir() and outside.read_text() == "{}"


def test_the_background_sweeper_sweeps_at_once_and_stops_cleanly(tmp_path: Path) -> None:
    root = tmp_path / "root"
    chat_root(root, "chat", turns=1)
    saver = RepoSaver(root, ttl={**TTL, "sweep_interval_minutes": 60}, clock=at(2), durable=False)
    done = saver.start_ttl_sweeper()
    deadline = time.monotonic() + 60  # a bound on a hung sweep, not a speed check
    while thread_dir(root, "chat").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not thread_dir(root, "chat").exists()
    assert saver.stop_ttl_sweeper(timeout=30) and done.done()


@pytest.mark.parametrize(
    ("ttl", "words"),
    [
        ({"strategy": "archive"}, "strategy: 'archive' is not one of 'delete', 'keep_latest'"),
        (
            {"default_ttl": 0},
            "default_ttl: expected a number of minutes from 0.0166667 to 527,040,000, not 0",
        ),
        (
            {"default_ttl": True},
            "default_ttl: expected a number of minutes from 0.0166667 to 527,040,000, not True",
        ),
        (
            {"default_ttl": 1e13},
            "default_ttl: expected a number of minutes from 0.0166667 to 527,040,000, not 10000000000000.0",
        ),
        (
            {"sweep_interval_minutes": 1e-9},
            "sweep_interval_minutes: expected a number of minutes from 0.166667",
        ),
        (
            {"sweep_interval_minutes": 1e300},
            "sweep_interval_minutes: expected a number of minutes from 0.166667",
        ),
        ({"keep_last": 2.5}, "keep_last: expected a whole number of at least 1, not 2.5"),
        ({"keep_latest": 3}, "unknown key 'keep_latest'"),
    ],
)
def test_a_ttl_it_cannot_take_is_refused_naming_the_key(
    tmp_path: Path, ttl: dict[str, Any], words: str
) -> None:
    with pytest.raises(BadInputError, match=re.escape("RepoSaver(ttl=...)")) as caught:
        RepoSaver(tmp_path / "root", ttl=ttl)
    assert words in str(caught.value)


# ----------------------------------------------------------------------------
# the project's settings: langgraph.json first, then the pyproject table; the factory
# ----------------------------------------------------------------------------
def test_langgraph_json_checkpointer_ttl_comes_first_then_the_pyproject_table(tmp_path: Path) -> None:
    root = tmp_path / ".langgraph"
    (tmp_path / "pyproject.toml").write_text("[tool.langgraph-repo.ttl]\ndefault_ttl = 5\nkeep_last = 2\n")
    (tmp_path / "langgraph.json").write_text(json.dumps({"graphs": {}}))
    found = project_retention(root)
    assert found is not None and found.policy == Retention(default_ttl=5, keep_last=2)
    assert found.source.endswith("pyproject.toml [tool.langgraph-repo.ttl]")
    ttl = {"strategy": "keep_latest", "default_ttl": 43200, "sweep_interval_minutes": 60}
    (tmp_path / "langgraph.json").write_text(json.dumps({"checkpointer": {"ttl": ttl}}))
    found = project_retention(root)
    assert (
        found is not None and found.config == ttl and found.source.endswith("langgraph.json checkpointer.ttl")
    )
    assert found.policy == Retention(strategy="keep_latest", default_ttl=43200, sweep_interval_minutes=60)
    (tmp_path / "langgraph.json").write_text(json.dumps({"checkpointer": {"ttl": {"strategy": "archive"}}}))
    with pytest.raises(BadInputError, match=re.escape("langgraph.json checkpointer.ttl strategy: 'archive'")):
        project_retention(root)


def sweepers() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "reposaver-ttl-sweeper"}


async def test_the_factory_honours_checkpointer_ttl_and_stops_its_sweeper_on_exit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ttl = {"strategy": "delete", "default_ttl": 1, "sweep_interval_minutes": 60}
    (tmp_path / "langgraph.json").write_text(json.dumps({"checkpointer": {"ttl": ttl}}))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LANGGRAPH_REPO_ROOT", raising=False)
    before = sweepers()
    async with checkpointer() as saver:
        assert saver.ttl_config == ttl
        assert saver.retention == Retention(default_ttl=1, sweep_interval_minutes=60)
        started = sweepers() - before
        assert started
    assert not any(t.is_alive() for t in started)
    (tmp_path / "langgraph.json").write_text(json.dumps({"checkpointer": {"ttl": {"default_ttl": 1}}}))
    async with checkpointer() as saver:  # no sweep_interval_minutes: no background sweeper
        assert saver.retention == Retention(default_ttl=1)
        assert not sweepers() - before


@pytest.mark.parametrize(
    ("pyproject", "expected"),
    [
        ('tool = "langgraph-repo"\n', None),  # a string, not the table: no settings, no crash
        ('[tool]\nlanggraph-repo = ["ttl"]\n', "[tool.langgraph-repo]: must be a table"),
    ],
    ids=["tool is a string", "table is a list"],
)
def test_a_pyproject_of_the_wrong_shape_is_no_table_or_an_error_naming_it(
    tmp_path: Path, pyproject: str, expected: str | None
) -> None:
    """A pull request can make pyproject.toml anything: the retention reader reads its table as
    the type reader does (hostile review: a TypeError at startup, and two answers)."""
    (tmp_path / "pyproject.toml").write_text(pyproject)
    root = tmp_path / ".langgraph"
    if expected is None:
        assert project_retention(root) is None
        return
    with pytest.raises(BadInputError, match=re.escape(expected)):
        project_retention(root)


def test_a_run_that_saves_only_at_its_end_keeps_its_thread_from_the_sweep_of_its_saver(
    tmp_path: Path,
) -> None:
    """``durability="exit"`` writes nothing until the run ends, so the thread's files look
    idle while it runs; the saver that serves the run counts its read of the thread as use,
    and its sweep keeps the thread (it deleted it, the run's end then an orphan: review)."""
    root = tmp_path / "root"
    saver = RepoSaver(root, ttl=TTL, clock=at(10), durable=False)  # files ten minutes old
    swept: list[Any] = []

    def slow(state: Log) -> Log:
        swept.extend(saver.sweep())
        return {"log": ["slow"]}

    builder = StateGraph(Log)
    builder.add_node("slow", slow)
    builder.add_edge(START, "slow")
    builder.add_edge("slow", END)
    graph = builder.compile(checkpointer=saver)
    graph.invoke({"log": ["one"]}, cfg("exit"), durability="exit")
    swept.clear()
    graph.invoke({"log": ["two"]}, cfg("exit"), durability="exit")
    (plan,) = swept
    assert plan.expired is None and not plan.doomed, plan
    assert graph.get_state(cfg("exit")).values == {"log": ["one", "slow", "two", "slow"]}
    assert len(list(graph.get_state_history(cfg("exit")))) == 2


@pytest.mark.parametrize("minutes", [1e-9, 1e300], ids=["spins", "overflows"])
def test_every_sweeper_refuses_an_interval_that_would_spin_or_kill_it(tmp_path: Path, minutes: float) -> None:
    """The store's sweeper (``store.ttl`` of langgraph.json) and the saver's take the same
    bounds as ``checkpointer.ttl``: 1e-9 spun the store's sweeper, 1e300 killed it silently
    (second review)."""
    from langgraph_checkpoint_repo.repostore import RepoStore

    store = RepoStore(tmp_path / "store", ttl={"default_ttl": 1, "sweep_interval_minutes": minutes})
    with pytest.raises(BadInputError, match=re.escape("sweep_interval_minutes must be from 0.001 to")):
        store.start_ttl_sweeper()
    saver = RepoSaver(tmp_path / "root", ttl={"default_ttl": 1})
    with pytest.raises(BadInputError, match=re.escape("sweep_interval_minutes must be from 0.001 to")):
        saver.start_ttl_sweeper(sweep_interval_minutes=minutes)
    assert not store._sweeper.running and not saver._sweeper.running


def test_the_store_refuses_a_default_ttl_it_could_not_store_when_it_is_made(tmp_path: Path) -> None:
    """``store.ttl``'s ``default_ttl`` of 1e300 was accepted, then refused by every put: now
    the server's start says so once (second review)."""
    from langgraph_checkpoint_repo.repostore import RepoStore

    with pytest.raises(BadInputError, match=re.escape("RepoStore(ttl=...) default_ttl: ttl 1e+300 minutes")):
        RepoStore(tmp_path / "store", ttl={"default_ttl": 1e300})
