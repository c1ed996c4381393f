"""Forks you can see: heads of a namespace after a git merge, a checkout and re-run, a race of
two processes and time travel; choosing which head continues (docs/forks.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import MessagesState
from langgraph.types import Command

from graphs import ask_graph, cfg, chat_graph, contents, line_graph
from helpers import as_a_race, checkpoint_files, cli, load, one_line_error, rewrite
from langgraph_checkpoint_repo import RepoSaver
from langgraph_checkpoint_repo.core.errors import BadInputError, NotFoundError
from langgraph_checkpoint_repo.core.lineage import CHOICE_KEY, Choice, HeadState, Node, current_of, find_heads
from test_git import commit_all, git, init_repo

TESTS = Path(__file__).resolve().parent
THREAD = "refund-7"


def say(saver: BaseCheckpointSaver[Any], *texts: str, thread: str = THREAD) -> list[str]:
    """One chat turn per text; the thread's message contents after the last."""
    graph = chat_graph(saver)
    out: dict[str, Any] = {}
    for text in texts:
        out = graph.invoke({"messages": [HumanMessage(content=text)]}, cfg(thread))
    return contents(out["messages"])


def latest(saver: RepoSaver, thread: str = THREAD) -> str:
    tup = saver.get_tuple(cfg(thread))
    assert tup is not None
    return str(tup.config["configurable"]["checkpoint_id"])


def head_ids(saver: RepoSaver, thread: str = THREAD) -> list[tuple[str, bool]]:
    return [(h.checkpoint_id, h.settled) for h in saver.heads(cfg(thread))]


def threads_row(root: Path, thread: str = THREAD) -> dict[str, Any]:
    proc = cli(root, "threads", "--json")
    assert proc.returncode == 0, proc.stderr
    return next(r for r in json.loads(proc.stdout) if r["thread_id"] == thread)


def assert_fork_is_seen_then_settled(root: Path, older: str, newer: str, *, via_cli: bool) -> str:
    """Two unsettled heads, marked by threads and failing validate --heads; choosing the older
    one settles the newer, passes validate --heads, and the new checkpoint continues."""
    saver = RepoSaver(root)
    assert head_ids(saver) == [(newer, False), (older, False)]
    assert latest(saver) == newer  # the rule: the newest id continues until someone chooses
    assert threads_row(root)["unsettled_heads"] == {"": [newer, older]}
    table = cli(root, "threads")
    assert table.stdout.splitlines()[0].split()[8] == "unsettled"
    assert next(line for line in table.stdout.splitlines() if line.startswith(THREAD)).split()[7] == "2"
    failed = cli(root, "validate", "--heads")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert THREAD in failed.stdout and older in failed.stdout and newer in failed.stdout
    assert cli(root, "validate").returncode == 0  # without --heads a fork is not a problem
    if via_cli:
        chose = cli(root, "heads", THREAD, "--choose", older[:13])
        assert chose.returncode == 0, chose.stderr
        new_id = chose.stdout.strip()
    else:
        new_id = str(saver.choose_head(cfg(THREAD, checkpoint_id=older))["configurable"]["checkpoint_id"])
    fresh = RepoSaver(root)
    assert latest(fresh) == new_id > newer
    assert head_ids(fresh) == [(new_id, True), (newer, True)]  # the choice itself is settled too
    chosen = fresh.get_tuple(cfg(THREAD))
    assert chosen is not None and chosen.parent_config is not None
    assert chosen.parent_config["configurable"]["checkpoint_id"] == older
    assert chosen.metadata["source"] == "fork"
    assert chosen.metadata[CHOICE_KEY] == {"chose": older, "over": [newer]}
    assert threads_row(root)["unsettled_heads"] == {}
    passed = cli(root, "validate", "--heads")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    files = sorted(p.name for p in checkpoint_files(root, THREAD))
    again = cli(root, "heads", THREAD, "--choose", new_id)  # it continues already: nothing to write
    assert again.returncode == 0 and again.stdout.strip() == new_id and "nothing written" in again.stderr
    assert sorted(p.name for p in checkpoint_files(root, THREAD)) == files
    return new_id


# ----------------------------------------------------------------------------
# (a) a git merge of two branches that both continued a thread
# ----------------------------------------------------------------------------
def test_merge_of_two_continuations_shows_two_heads_and_the_chosen_older_one_continues(
    tmp_path: Path,
) -> None:
    repo = init_repo(tmp_path / "repo")
    root = repo / ".langgraph"
    say(RepoSaver(root), "refund order 1138")
    commit_all(repo, "base")
    git(repo, "checkout", "-q", "-b", "approve")
    say(RepoSaver(root), "approve the refund")
    approved = latest(RepoSaver(root))
    commit_all(repo, "approved")
    git(repo, "checkout", "-q", "main")
    say(RepoSaver(root), "deny the refund")
    denied = latest(RepoSaver(root))
    commit_all(repo, "denied")
    merge = git(repo, "merge", "--no-edit", "approve", check=False)
    assert merge.returncode == 0, merge.stdout + merge.stderr
    assert git(repo, "status", "--porcelain").stdout == ""

    assert_fork_is_seen_then_settled(root, approved, denied, via_cli=True)
    got = say(RepoSaver(root), "send the money")
    expected = say(InMemorySaver(), "refund order 1138", "approve the refund", "send the money")
    assert got == expected


# ----------------------------------------------------------------------------
# (b) a checkout of an older commit, a run there, then a merge
# ----------------------------------------------------------------------------
def test_checkout_of_an_older_commit_and_rerun_then_merge_shows_two_heads(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    root = repo / ".langgraph"
    say(RepoSaver(root), "refund order 1138")
    commit_all(repo, "base")
    base_commit = git(repo, "rev-parse", "HEAD").stdout.strip()
    say(RepoSaver(root), "approve the refund")
    approved = latest(RepoSaver(root))
    commit_all(repo, "approved")
    git(repo, "checkout", "-q", "-b", "redo", base_commit)
    say(RepoSaver(root), "deny the refund")
    denied = latest(RepoSaver(root))
    commit_all(repo, "denied, from the older commit")
    merge = git(repo, "merge", "--no-edit", "main", check=False)
    assert merge.returncode == 0, merge.stdout + merge.stderr

    assert_fork_is_seen_then_settled(root, approved, denied, via_cli=False)
    got = say(RepoSaver(root), "send the money")
    assert got == say(InMemorySaver(), "refund order 1138", "approve the refund", "send the money")


# ----------------------------------------------------------------------------
# (c) two processes continuing one thread at the same moment
# ----------------------------------------------------------------------------
def racing_graph(saver: BaseCheckpointSaver[Any], me: str, other: str, sync: Path) -> Any:
    """reply runs only once the other process's reply has started, so both have read the same
    latest checkpoint before either writes (interrupt_before: resuming writes no input first)."""

    def reply(state: MessagesState) -> dict[str, Any]:
        (sync / me).write_text("started")
        for _ in range(6000):  # at most 60 s: the other process is started at once
            if (sync / other).exists():
                break
            import time

            time.sleep(0.01)
        else:
            raise TimeoutError(f"{other} never started")
        return {"messages": [HumanMessage(content=f"{me} answers {state['messages'][-1].content}")]}

    graph = line_graph(MessagesState, None, reply=reply)
    return graph.builder.compile(checkpointer=saver, interrupt_before=["reply"])


def race_child(root: str, me: str, other: str, sync: str) -> None:
    """One racing process: continue the thread from where it waits."""
    graph = racing_graph(RepoSaver(root), me, other, Path(sync))
    out = graph.invoke(None, cfg(THREAD))
    print(json.dumps(contents(out["messages"])))


def test_two_processes_continuing_one_thread_both_succeed_and_leave_two_heads(tmp_path: Path) -> None:
    root, sync = tmp_path / "repo", tmp_path / "sync"
    sync.mkdir()
    graph = racing_graph(RepoSaver(root), "first", "second", sync)
    graph.invoke({"messages": [HumanMessage(content="approve?")]}, cfg(THREAD))
    base = latest(RepoSaver(root))
    code = (
        "import sys, json; sys.path[:0] = json.loads(sys.argv[1]); "
        "import test_forks_visible as t; t.race_child(*sys.argv[2:])"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, json.dumps([str(TESTS)]), str(root), me, other, str(sync)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=TESTS.parent,
        )
        for me, other in (("worker-a", "worker-b"), ("worker-b", "worker-a"))
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert sorted(json.loads(o[0]) for o in outs) == [
        ["approve?", "worker-a answers approve?"],
        ["approve?", "worker-b answers approve?"],
    ]
    saver = RepoSaver(root)
    heads = saver.heads(cfg(THREAD))
    assert [h.settled for h in heads] == [False, False]
    assert {h.checkpoint_tuple.parent_config["configurable"]["checkpoint_id"] for h in heads} == {base}  # type: ignore[index]
    shown = cli(root, "heads", THREAD, "--json")
    assert shown.returncode == 0, shown.stderr
    assert sorted(h["last"] for h in json.loads(shown.stdout)["heads"]) == [
        "human: worker-a answers approve?",
        "human: worker-b answers approve?",
    ]
    assert cli(root, "validate", "--heads").returncode == 1


# ----------------------------------------------------------------------------
# (d) choosing an interrupted head keeps its interrupt; resume works
# ----------------------------------------------------------------------------
def _interrupted_and_forked(root: Path, calls: Counter[str]) -> tuple[RepoSaver, Any, str]:
    """A thread waiting at an interrupt, and a newer head beside it that a second writer made
    (a fresh saver reads the race's files)."""
    saver = RepoSaver(root)
    graph = ask_graph(saver, calls)
    graph.invoke({"log": ["start"]}, cfg(THREAD))
    waiting = latest(saver)
    *_, first = graph.get_state_history(cfg(THREAD))
    as_a_race(saver, graph.update_state(first.config, {"log": ["time travel"]}))  # newer, not waiting
    saver = RepoSaver(root)
    return saver, ask_graph(saver, calls), waiting


def _reference_resume() -> tuple[Any, Any]:
    graph = ask_graph(InMemorySaver())
    graph.invoke({"log": ["start"]}, cfg(THREAD))
    state = graph.get_state(cfg(THREAD))
    return state, graph.invoke(Command(resume="Ada"), cfg(THREAD))


def test_choosing_an_interrupted_head_keeps_its_interrupt_and_resume_works(tmp_path: Path) -> None:
    calls: Counter[str] = Counter()
    saver, graph, waiting = _interrupted_and_forked(tmp_path / "repo", calls)
    assert [s for _, s in head_ids(saver)] == [False, False] and head_ids(saver)[1][0] == waiting
    saver.choose_head(cfg(THREAD, checkpoint_id=waiting))
    ref_state, ref_result = _reference_resume()
    state = graph.get_state(cfg(THREAD))
    assert (state.values, state.next) == (ref_state.values, ref_state.next)
    assert [i.value for i in state.interrupts] == [i.value for i in ref_state.interrupts]
    assert graph.invoke(Command(resume="Ada"), cfg(THREAD)) == ref_result
    assert calls == Counter({"prepare": 1, "ask": 2})  # prepare never ran again


async def test_choosing_an_interrupted_head_keeps_its_interrupt_and_resume_works_async(
    tmp_path: Path,
) -> None:
    calls: Counter[str] = Counter()
    saver = RepoSaver(tmp_path / "repo")
    graph = ask_graph(saver, calls)
    await graph.ainvoke({"log": ["start"]}, cfg(THREAD))
    waiting = latest(saver)
    first = [s async for s in graph.aget_state_history(cfg(THREAD))][-1]
    as_a_race(saver, await graph.aupdate_state(first.config, {"log": ["time travel"]}))
    saver = RepoSaver(tmp_path / "repo")  # a fresh saver reads the race's files
    heads = await saver.aheads(cfg(THREAD))
    assert [(h.checkpoint_id == waiting, h.settled) for h in heads] == [(False, False), (True, False)]
    new = await saver.achoose_head(heads[1].config)
    after = await saver.aheads(cfg(THREAD))
    assert [(h.config, h.settled) for h in after] == [(new, True), (heads[0].config, True)]
    ref_state, ref_result = _reference_resume()
    state = await graph.aget_state(cfg(THREAD))
    assert [i.value for i in state.interrupts] == [i.value for i in ref_state.interrupts]
    assert await graph.ainvoke(Command(resume="Ada"), cfg(THREAD)) == ref_result
    assert calls == Counter({"prepare": 1, "ask": 2})


# ----------------------------------------------------------------------------
# (e) a choice of what is not a head, or of a missing thread, is an error naming it
# ----------------------------------------------------------------------------
def test_choosing_a_checkpoint_that_is_not_a_head_or_a_missing_one_names_the_id(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    saver = RepoSaver(root)
    say(saver, "one", "two")
    inner = str(saver.get_tuple(cfg(THREAD)).parent_config["configurable"]["checkpoint_id"])  # type: ignore[union-attr]
    before = sorted(p.name for p in checkpoint_files(root, THREAD))
    with pytest.raises(BadInputError, match=f"{inner}.*is not a head"):
        saver.choose_head(cfg(THREAD, checkpoint_id=inner))
    missing = "1f000000-0000-6000-8000-000000000000"
    with pytest.raises(NotFoundError, match=f"{missing}.*is not there"):
        saver.choose_head(cfg(THREAD, checkpoint_id=missing))
    with pytest.raises(NotFoundError, match="'nobody'"):
        saver.choose_head(cfg("nobody", checkpoint_id=missing))
    with pytest.raises(BadInputError, match="checkpoint_id"):
        saver.choose_head(cfg(THREAD))
    assert sorted(p.name for p in checkpoint_files(root, THREAD)) == before  # nothing written
    one_line_error(cli(root, "heads", THREAD, "--choose", inner), 2, inner, "is not a head")
    one_line_error(cli(root, "heads", THREAD, "--choose", missing), 3, missing)
    one_line_error(cli(root, "heads", "nobody", "--choose", missing), 3, "nobody")


def test_choosing_the_only_head_writes_nothing(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    saver = RepoSaver(root)
    say(saver, "one")
    only = latest(saver)
    before = sorted(p.name for p in checkpoint_files(root, THREAD))
    assert saver.choose_head(cfg(THREAD, checkpoint_id=only))["configurable"]["checkpoint_id"] == only
    assert sorted(p.name for p in checkpoint_files(root, THREAD)) == before


def test_a_hand_edited_choice_record_is_reported_by_validate_heads_at_its_file(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    saver = RepoSaver(root)
    say(saver, "one")
    first = list(saver.list(cfg(THREAD)))[-1]
    as_a_race(
        saver, chat_graph(saver).update_state(first.config, {"messages": [HumanMessage(content="fork")]})
    )
    chosen = saver.choose_head(saver.heads(cfg(THREAD))[1].config)
    path = checkpoint_files(root, THREAD)[-1]
    assert load(path)["checkpoint_id"] == chosen["configurable"]["checkpoint_id"]
    rewrite(path, lambda doc: doc["metadata"].__setitem__(CHOICE_KEY, {"chose": 7}))
    proc = cli(root, "validate", "--heads")
    assert proc.returncode == 1
    assert f"{path.name}: /metadata/{CHOICE_KEY}: expected" in proc.stdout
    assert "it settles nothing" in proc.stdout
    # a malformed record is no choice: both heads are open again, and the graph still reads
    assert [h.settled for h in RepoSaver(root).heads(cfg(THREAD))] == [False, False]


# ----------------------------------------------------------------------------
# (f) time travel: update_state on an older checkpoint is a fork too, made on purpose
# ----------------------------------------------------------------------------
def test_update_state_on_an_older_checkpoint_shows_as_two_heads_with_their_last_messages(
    tmp_path: Path,
) -> None:
    root = tmp_path / "repo"
    saver = RepoSaver(root)
    say(saver, "refund order 1138", "approve the refund")
    kept = latest(saver)
    older = next(h for h in saver.list(cfg(THREAD)) if h.metadata["step"] == 1)
    travelled = chat_graph(saver).update_state(older.config, {"messages": [HumanMessage("deny \x1b[2J it")]})
    heads = saver.heads(cfg(THREAD))
    kept_config = cfg(THREAD, checkpoint_ns="", checkpoint_id=kept)
    # a line LangGraph started on purpose: both heads shown, neither waiting for a choice
    assert [(h.config, h.settled) for h in heads] == [(travelled, True), (kept_config, True)]
    assert heads[0].checkpoint_tuple.metadata["source"] == "update"
    assert threads_row(root)["unsettled_heads"] == {}
    shown = cli(root, "heads", THREAD)
    assert shown.returncode == 0, shown.stderr
    assert "\x1b" not in shown.stdout  # a message's control characters are shown escaped
    rows = [line for line in shown.stdout.splitlines() if line.startswith("1")]
    assert rows[0].startswith(heads[0].checkpoint_id) and "  started on purpose, continues" in rows[0]
    assert rows[0].endswith("human: deny \\x1b[2J it")
    assert rows[1].startswith(kept) and rows[1].endswith("ai: echo: approve the refund")


async def test_aheads_matches_heads(tmp_path: Path) -> None:
    saver = RepoSaver(tmp_path / "repo")
    say(saver, "one", "two")
    first = list(saver.list(cfg(THREAD)))[-1]
    chat_graph(saver).update_state(first.config, {"messages": [HumanMessage(content="fork")]})
    got = [(h.checkpoint_tuple, h.settled) for h in await saver.aheads(cfg(THREAD))]
    assert got == [(h.checkpoint_tuple, h.settled) for h in saver.heads(cfg(THREAD))] and len(got) == 2


# ----------------------------------------------------------------------------
# the rule itself
# ----------------------------------------------------------------------------
def test_heads_rule_settles_heads_a_choice_passes_over_and_the_chosen_line() -> None:
    plain = {"1": Node(None), "2": Node("1"), "3": Node("2"), "4": Node("1"), "5": Node("3")}
    assert find_heads(plain) == [HeadState("5", False), HeadState("4", False)]
    assert current_of(plain, find_heads(plain)) == "5"
    chosen = {**plain, "5": Node("3", Choice("3", ("4",)))}  # 5 a choice of 3 over 4
    assert find_heads(chosen) == [HeadState("5", True), HeadState("4", True)]
    later = {**chosen, "6": Node("4")}  # someone continued the head passed over: needs a choice again
    assert find_heads(later) == [HeadState("6", False), HeadState("5", True)]
    # a choice continues whatever the ids: "0" is older than the head it passed over
    skewed = {**plain, "0": Node("4", Choice("4", ("5",)))}
    assert current_of(skewed, find_heads(skewed)) == "0"
