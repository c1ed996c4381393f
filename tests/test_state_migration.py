"""``langgraph-repo migrate-state`` and ``migrate_threads``: your own state migration as one
reviewable change (issue 39, item 2; docs/migrating.md, "Migrating your state schema").

The threads of docs/migrating.md's graph (its example project's ``myapp/profiles.py``,
version 1 of the state: ``notes``, ``profile.name``) are migrated to version 2
(``summary``, ``profile.full_name``, ``profile.tier``): one new checkpoint per thread, shown
by ``review`` thread by thread, a second run writes nothing, and a fresh process runs version 2
on every thread. ``LANGGRAPH_REPO_LONG=1`` does it across 100 threads (the issue's number);
the default run across 10 (the same code per thread; 100 take about 8 s on 2 cores).
"""

from __future__ import annotations

import importlib.util
import json
import operator
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.channels import EphemeralValue
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command
from typing_extensions import TypedDict

from graphs import ask_graph, cfg, delta_graph, line_graph
from helpers import LONG, as_a_race, cli, file_bytes, one_line_error
from langgraph_checkpoint_repo import RepoSaver
from langgraph_checkpoint_repo.core.errors import BadInputError
from langgraph_checkpoint_repo.statemigration import MigrationError, StateMigration, migrate_threads
from test_git import commit_all, git, init_repo

THREADS = 100 if LONG else 10
PROFILES = Path(__file__).resolve().parents[1] / "docs" / "example_profiles.py"


def load_profiles() -> Any:
    """docs/migrating.md's graph (``myapp.profiles`` in its example project), by path."""
    spec = importlib.util.spec_from_file_location("docs_profiles", PROFILES)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # LangGraph reads the state's annotations through it
    spec.loader.exec_module(module)
    return module


graph = load_profiles().graph

RULES = """\
name = "profile-v2"

[rename]
notes = "summary"
"profile.name" = "full_name"

[default]
"profile.tier" = "free"
"""


def first_turns(root: Path, threads: int) -> None:
    app = graph(1, RepoSaver(root, durable=False))
    for i in range(threads):
        user = {"messages": [HumanMessage("hi", id="user-1")], "profile": {"name": f"customer {i}"}}
        app.invoke(user, cfg(f"c-{i:03d}"))


def checkpoints_of(root: Path) -> set[Path]:
    return set((root / "threads").glob("*/checkpoints/*.json"))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository whose ``main`` holds THREADS threads of version 1, one turn each."""
    repo = init_repo(tmp_path / "repo")
    first_turns(repo / ".langgraph", THREADS)
    (repo / "profile-v2.toml").write_text(RULES, encoding="utf-8")
    commit_all(repo, "version 1 threads")
    return repo


def test_a_rename_and_a_default_across_threads_is_one_checkpoint_each_reviewed_idempotent_and_continues(
    repo: Path,
) -> None:
    """The issue's goal: a dry run writes nothing; the run writes exactly one new checkpoint
    per thread (continuing its latest, source update, metadata naming the migration);
    ``review`` of the branch shows per thread ``notes`` gone and ``summary`` holding its
    value, the field renamed and filled; a second run writes nothing; validate --heads
    passes; a fresh process runs version 2 on every thread; then the migration changes nothing."""
    root = repo / ".langgraph"
    git(repo, "checkout", "-q", "-b", "migrate")
    before, latest = file_bytes(root), {}
    for path in sorted(checkpoints_of(root)):  # ids grow with time: the last is the latest
        latest[path.parent.parent.name] = path.stem
    dry = cli(root, "migrate-state", "--rules", "profile-v2.toml", "--dry-run", cwd=repo)
    assert dry.returncode == 0, dry.stderr
    lines = dry.stdout.splitlines()
    assert (
        lines[0] == f"would migrate {THREADS} threads with migration 'profile-v2' (one new checkpoint each)"
    )
    assert lines[1] == '  c-000: notes -> summary; profile: name -> full_name, +tier = "free"'
    assert file_bytes(root) == before
    run = cli(root, "migrate-state", "--rules", "profile-v2.toml", cwd=repo)
    assert run.returncode == 0, run.stderr
    new = checkpoints_of(root) - {root / p for p in before}
    assert sorted(p.parent.parent.name for p in new) == sorted(latest)  # exactly one per thread
    for path in new:
        doc = json.loads(path.read_text(encoding="utf-8"))
        assert doc["parent_checkpoint_id"] == latest[path.parent.parent.name]
        assert doc["metadata"]["source"] == "update" and doc["metadata"]["migration"] == "profile-v2"
    assert {root / p for p in before} <= set(root.rglob("*"))  # nothing removed
    commit_all(repo, "profile-v2")
    data = json.loads(cli(root, "review", "main..migrate", "--json", cwd=repo).stdout)
    assert len(data["threads"]) == THREADS
    # hand edits (update_state wrote them, and any caller could say "migration"), each saying
    # which migration; ``history`` names it too
    assert (data["verdict"]["migrations"], data["verdict"]["hand_edits"]) == (THREADS, THREADS)
    assert f"{THREADS} hand edits ({THREADS} say migrate-state)" in data["verdict"]["line"]
    history = cli(root, "history", "c-000", cwd=repo)
    assert "(migration profile-v2)" in history.stdout and "(update_state)" not in history.stdout
    for thread in data["threads"]:
        (space,) = thread["namespaces"]
        (line,) = space["lines"]
        channels = {c["channel"]: c for c in line["channels"]}
        assert (channels["notes"]["kind"], channels["summary"]["kind"]) == ("removed", "added")
        assert channels["notes"]["old"] == channels["summary"]["new"] == "asked: hi"
        number = int(thread["thread_id"][2:])
        assert channels["profile"]["new"] == {"full_name": f"customer {number}", "tier": "free"}
    again = cli(root, "migrate-state", "--rules", "profile-v2.toml", cwd=repo)
    assert again.stdout == f"nothing to migrate with migration 'profile-v2'; {THREADS} already migrated\n"
    assert git(repo, "status", "--porcelain").stdout == ""  # nothing written
    assert cli(root, "validate", "--heads").returncode == 0
    code = (
        "import sys\n"
        "from langchain_core.messages import HumanMessage\n"
        "from langgraph_checkpoint_repo import RepoSaver\n"
        f"sys.path.insert(0, {str(PROFILES.parent)!r})\n"
        "from example_profiles import graph\n"
        f"app = graph(2, RepoSaver({str(root)!r}, durable=False))\n"
        f"for i in range({THREADS}):\n"
        "    out = app.invoke({'messages': [HumanMessage('again', id='user-3')]}, "
        "{'configurable': {'thread_id': f'c-{i:03d}'}})\n"
        "    print(out['messages'][-1].content)\n"
    )
    top = Path(__file__).parents[1]
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=top)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"Hello customer {i} (free plan); earlier you asked: hi" for i in range(THREADS)
    ]
    after = cli(root, "migrate-state", "--rules", "profile-v2.toml", cwd=repo)
    assert after.stdout == f"nothing to migrate with migration 'profile-v2'; {THREADS} unchanged\n"


def test_a_waiting_thread_is_refused_unless_include_waiting_and_then_asks_again_as_with_update_state(
    tmp_path: Path,
) -> None:
    """A thread waiting at an interrupt is refused (exit 5, naming it) while the others are
    migrated; with --include-waiting it is migrated too and, as after ``update_state`` on
    InMemorySaver, the interrupted node asks again and the answer finishes the turn."""
    root = tmp_path / "root"
    saver = RepoSaver(root)
    ask_graph(saver).invoke({"log": []}, cfg("ask"))
    graph(1, saver).invoke({"messages": [HumanMessage("hi")], "profile": {"name": "Ada"}}, cfg("chat"))
    rules = tmp_path / "log.json"
    rules.write_text(json.dumps({"name": "log-default", "default": {"topic": "general"}}), encoding="utf-8")
    refused = cli(root, "migrate-state", "--rules", rules)
    assert refused.returncode == 5
    assert refused.stdout.splitlines() == [
        "migrated 1 thread with migration 'log-default' (one new checkpoint each); 1 refused",
        "  ask: refused: it waits: 1 interrupt waiting for an answer (dropped: asked again) "
        "(--include-waiting migrates it anyway)",
        f'  chat {saver.get_tuple(cfg("chat")).checkpoint["id"]}: +topic = "general"',  # type: ignore[union-attr]
    ]
    forced = cli(root, "migrate-state", "--rules", rules, "--include-waiting", "ask")
    assert forced.returncode == 0, forced.stderr
    memory = InMemorySaver()
    reference = ask_graph(memory)
    reference.invoke({"log": []}, cfg("ask"))
    reference.update_state(cfg("ask"), {"topic": "general"})
    ours = ask_graph(RepoSaver(root))
    states = [
        (app.get_state(cfg("ask")), app.invoke(Command(resume="Ada"), cfg("ask")))
        for app in (ours, reference)
    ]
    (mine, _), (theirs, _) = states
    assert (mine.values, mine.next, mine.interrupts) == (theirs.values, theirs.next, theirs.interrupts)
    assert states[0][1] == states[1][1] and states[0][1]["log"] == ["prepared", "answered Ada"]


def test_a_function_migration_imports_only_what_is_named_and_one_failure_writes_nothing(
    tmp_path: Path,
) -> None:
    """``--function module:name`` imports that module from the current folder and runs it;
    ``--rules`` imports nothing (a module beside it that would mark its import is not
    imported); a function that fails on one thread writes in none (every thread is planned
    first), naming the thread."""
    root = tmp_path / "root"
    first_turns(root, 3)
    (tmp_path / "mig.py").write_text(
        "import pathlib\n"
        "pathlib.Path('imported').write_text('yes')\n"
        "def v2(state):\n"
        "    state['summary'] = state.pop('notes')\n"
        "    return state\n"
        "def broken(state):\n"
        "    if state['profile']['name'] == 'customer 2':\n"
        "        raise ValueError('no profile')\n"
        "    return {**state, 'x': 1}\n",
        encoding="utf-8",
    )
    (tmp_path / "rules.json").write_text(json.dumps({"rename": {"notes": "summary"}}), encoding="utf-8")
    before = file_bytes(root)
    failed = cli(root, "migrate-state", "--function", "mig:broken", cwd=tmp_path)
    one_line_error(failed, 2, "thread 'c-002'", "ValueError: no profile")
    assert file_bytes(root) == before
    (tmp_path / "imported").unlink()
    dry = cli(root, "migrate-state", "--rules", "rules.json", "--dry-run", cwd=tmp_path)
    assert dry.stdout.startswith("would migrate 3 threads with migration 'rules'")
    assert not (tmp_path / "imported").exists()
    (tmp_path / "named.json").write_text(json.dumps({"name": "notes-v2"}), encoding="utf-8")
    both = cli(
        root, "migrate-state", "--rules", "named.json", "--function", "mig:v2", "--dry-run", cwd=tmp_path
    )
    assert both.stdout.startswith("would migrate 3 threads with migration 'notes-v2'"), both.stderr
    ran = cli(root, "migrate-state", "--function", "mig:v2", "c-001", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith("migrated 1 thread with migration 'mig:v2'")
    assert (tmp_path / "imported").exists()
    values = RepoSaver(root).get_tuple(cfg("c-001")).checkpoint["channel_values"]  # type: ignore[union-attr]
    assert (values.get("notes"), values["summary"]) == (None, "asked: hi")


def test_heads_that_wait_for_a_choice_are_refused_and_a_migration_settles_as_a_turn(tmp_path: Path) -> None:
    """A namespace with two unsettled heads (a race) is refused, naming ``heads --choose``:
    migrating one line would leave the other on the old schema. After a choice it is
    migrated, and validate --heads passes (the migration's checkpoint continues one head)."""
    root = tmp_path / "root"
    saver = RepoSaver(root)
    app = graph(1, saver)
    app.invoke({"messages": [HumanMessage("hi")], "profile": {"name": "Ada"}}, cfg("t"))
    past = list(saver.list(cfg("t")))[1].config
    forked = app.update_state(past, {"notes": "other"})
    as_a_race(saver, forked)
    saver = RepoSaver(root)  # a fresh saver reads the race's files (as tests/test_forks_visible.py)
    migration = StateMigration("notes-v2", rename={"notes": "summary"})
    (plan,) = migrate_threads(saver, migration)
    assert plan.status == "refused" and "--choose" in plan.reason
    saver.choose_head(forked)
    (done,) = migrate_threads(saver, migration)
    assert done.status == "migrated" and done.changes == ["notes -> summary"]
    assert cli(root, "validate", "--heads").returncode == 0


class Outer(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


class Inner(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    seen: int


def count(state: Inner) -> dict[str, Any]:
    seen = state.get("seen", 0) + 1
    return {"seen": seen, "log": [f"seen {seen}"]}


def test_the_root_is_migrated_by_default_and_a_subgraph_kept_across_calls_by_naming_it(
    tmp_path: Path,
) -> None:
    """As ``update_state``, a migration writes in one namespace, the root by default; a
    subgraph compiled with ``checkpointer=True`` keeps namespace ``sub`` across calls, and
    migrating it by name is what its next call reads."""
    saver = RepoSaver(tmp_path / "root")
    inner = line_graph(Inner, None, count=count).builder.compile(checkpointer=True)
    app = line_graph(Outer, saver, sub=inner)
    for _ in range(2):
        app.invoke({"log": []}, cfg("t"))
    bump = StateMigration(
        "seen+10", function=lambda s: {**s, "seen": s["seen"] + 10} if 0 < s.get("seen", 0) < 10 else s
    )
    (root,) = migrate_threads(saver, bump)
    assert (root.status, root.changes) == ("unchanged", [])  # the root holds no "seen"
    (sub,) = migrate_threads(saver, bump, ns="sub")
    assert (sub.status, sub.changes) == ("migrated", ["seen: 2 -> 12"])
    assert app.invoke({"log": []}, cfg("t"))["log"][-1] == "seen 13"
    (other,) = migrate_threads(saver, bump, ns="elsewhere")
    assert other.status == "no namespace"


@pytest.mark.parametrize(
    ("rename", "default", "state", "words"),
    [
        ({"notes": "summary"}, {}, {"notes": 1, "summary": 2}, "both hold a value"),
        ({"profile.name": "full_name"}, {}, {"profile": ["a"]}, "profile holds a list, not an object"),
        ({}, {"profile.tier": "free"}, {"profile": "Ada"}, "profile holds a str"),
    ],
)
def test_declarations_that_cannot_apply_are_refused_naming_where(
    rename: Mapping[str, str], default: Mapping[str, Any], state: dict[str, Any], words: str
) -> None:
    with pytest.raises(MigrationError, match=words):
        StateMigration("m", rename=rename, default=default).apply(state)


def test_declarations_apply_once_and_leave_the_given_state_alone() -> None:
    """A rename whose old name is gone and a default already filled change nothing, so a
    thread migrated and continued since is left alone; the state given is not changed."""
    migration = StateMigration(
        "m",
        rename={"notes": "summary", "profile.name": "full_name"},
        default={"profile.tier": "free", "x": []},
    )
    old = {"notes": "n", "profile": {"name": "Ada"}}
    new = migration.apply(old)
    assert new == {"summary": "n", "profile": {"full_name": "Ada", "tier": "free"}, "x": []}
    assert old == {"notes": "n", "profile": {"name": "Ada"}}
    assert migration.apply(new) == new
    with pytest.raises(BadInputError, match="declares nothing"):
        StateMigration("empty")


def test_a_thread_holding_a_delta_channel_is_refused_naming_the_channel(tmp_path: Path) -> None:
    """A DeltaChannel is stored as what each step added (absent between snapshots, LangGraph's
    snapshot object at one): without the graph's reducer a migration cannot read it, so such a
    thread is refused at either point, naming the channel, and nothing is written; the
    others are migrated (before, one was "unchanged" and the other renamed a snapshot object,
    depending on the step count: hostile review)."""
    root = tmp_path / "root"
    saver = RepoSaver(root, durable=False)
    for stop in (4, 5):  # between snapshots, at one (snapshot_frequency=3)
        delta_graph(saver, stop=stop).invoke({"items": [], "n": 0}, cfg(f"delta-{stop}"))
    before = file_bytes(root)
    results = migrate_threads(saver, StateMigration("entries", rename={"items": "entries"}))
    assert {r.thread_id: r.status for r in results} == {"delta-4": "refused", "delta-5": "refused"}
    assert all("channel items is not stored whole" in r.reason for r in results)
    assert file_bytes(root) == before


class Flash(TypedDict):
    name: str
    flash: Annotated[str, EphemeralValue]


def test_a_channel_empty_by_design_is_not_taken_for_a_delta_channel(tmp_path: Path) -> None:
    """An EphemeralValue is absent from the values after its step, as a DeltaChannel is
    between snapshots; only LangGraph's delta counters tell the two apart, so the thread is
    migrated, not refused (second review)."""
    builder = StateGraph(Flash)
    builder.add_node("a", lambda state: {"name": state["name"] + "!", "flash": "hi"})
    builder.add_node("b", lambda state: {"name": state["name"] + "?"})
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("b", END)
    saver = RepoSaver(tmp_path / "root", durable=False)
    builder.compile(checkpointer=saver).invoke({"name": "n"}, cfg("flash"))
    (result,) = migrate_threads(saver, StateMigration("title", rename={"name": "title"}), dry_run=True)
    assert result.status == "migrate" and result.changes == ["name -> title"], result


@pytest.mark.parametrize(
    "text",
    [
        "[" * 100_000 + "]" * 100_000,
        '{"name": "x", "rename": {}, "default": {"pad": "' + "a" * (1 << 20) + '"}}',
    ],
    ids=["nested too deep", "over a megabyte"],
)
def test_a_rules_file_too_deep_or_too_big_is_an_error_naming_it(tmp_path: Path, text: str) -> None:
    """The rules file may come with a pull request: read bounded, and a nesting too deep for
    the parser is the same clear error, not a RecursionError."""
    rules = tmp_path / "rules.json"
    rules.write_text(text, encoding="utf-8")
    with pytest.raises(BadInputError, match=f"{rules}: cannot read the migration"):
        StateMigration.from_file(rules)
