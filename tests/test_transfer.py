"""Moving threads between RepoSaver and the other checkpointers, with the real savers.

Graphs run on SqliteSaver (or PostgresSaver against a real server), their threads are
imported into repo files and exported into a fresh saver of the first kind; every
``get_tuple`` and ``list`` result must then be identical to the original. The PostgreSQL
tests need a server: ``.ci/run`` starts one and sets LANGGRAPH_REPO_TEST_POSTGRES; without
it they fail (they never skip), so run ``pytest -m "not postgres"`` on a machine without one.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

from graphs import cfg, chat_graph, resume_fixture_tree, run_fixture_graphs
from langgraph_checkpoint_repo import RepoSaver
from langgraph_checkpoint_repo.transfer import (
    ThreadExistsError,
    acopy_threads,
    copy_threads,
    thread_ids_of,
)

FIXTURE_THREADS = ["ask", "big", "chat", "delta", "fan", "fork", "sub"]
POSTGRES_ENV = "LANGGRAPH_REPO_TEST_POSTGRES"


def sqlite_saver(path: Path) -> SqliteSaver:
    # graphs run fan-out tasks on worker threads, so the connection is shared across them
    return SqliteSaver(sqlite3.connect(path, check_same_thread=False))


def everything(saver: BaseCheckpointSaver[Any], threads: list[str]) -> dict[str, Any]:
    """Every answer the contract gives about these threads, in a comparable form."""
    out: dict[str, Any] = {}
    for t in threads:
        listed = list(saver.list({"configurable": {"thread_id": t}}))
        out[f"list {t}"] = listed
        namespaces = sorted({tup.config["configurable"]["checkpoint_ns"] for tup in listed})
        for ns in namespaces:
            out[f"latest {t}/{ns}"] = saver.get_tuple(cfg(t, checkpoint_ns=ns))
            out[f"list {t}/{ns}"] = list(saver.list(cfg(t, checkpoint_ns=ns)))
        for tup in listed:
            out[f"get {t}/{tup.config['configurable']['checkpoint_id']}"] = saver.get_tuple(tup.config)
        out[f"filtered {t}"] = list(saver.list(cfg(t), filter={"source": "loop"}, limit=3))
    return out


def assert_same(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert a.keys() == b.keys()
    for key in a:
        assert a[key] == b[key], key


def count_checkpoints(result: dict[str, Any]) -> int:
    return sum(len(v) for k, v in result.items() if k.startswith("list ") and "/" not in k)


@pytest.fixture(scope="module")
def sqlite_source(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A SQLite file holding one thread per situation (interrupts, subgraph, fork, writes...)."""
    path = tmp_path_factory.mktemp("sqlite") / "state.db"
    with closing(sqlite3.connect(path, check_same_thread=False)) as conn:
        run_fixture_graphs(SqliteSaver(conn))
    yield path


def test_sqlite_to_repo_to_sqlite_gives_identical_get_tuple_and_list(
    sqlite_source: Path, tmp_path: Path
) -> None:
    with closing(sqlite_saver(sqlite_source).conn) as conn:
        source = SqliteSaver(conn)
        assert thread_ids_of(source) == FIXTURE_THREADS
        original = everything(source, FIXTURE_THREADS)
        repo = RepoSaver(tmp_path / ".langgraph")
        report = copy_threads(source, repo)
    assert report.threads == FIXTURE_THREADS
    assert report.checkpoints == count_checkpoints(original) > 30
    assert report.writes > 0
    # the repo answers as SQLite did
    assert_same(original, everything(RepoSaver(tmp_path / ".langgraph"), FIXTURE_THREADS))
    with closing(sqlite3.connect(tmp_path / "back.db", check_same_thread=False)) as conn:
        back = SqliteSaver(conn)
        copy_threads(RepoSaver(tmp_path / ".langgraph"), back)
        assert_same(original, everything(back, FIXTURE_THREADS))


def test_imported_threads_validate_and_resume_like_the_original(sqlite_source: Path, tmp_path: Path) -> None:
    root = tmp_path / ".langgraph"
    with closing(sqlite_saver(sqlite_source).conn) as conn:
        copy_threads(SqliteSaver(conn), RepoSaver(root))
    check = subprocess.run(
        [sys.executable, "-m", "langgraph_checkpoint_repo", "--root", str(root), "validate"],
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    on_repo = resume_fixture_tree(RepoSaver(root))
    db = tmp_path / "copy.db"
    db.write_bytes(sqlite_source.read_bytes())
    with closing(sqlite3.connect(db, check_same_thread=False)) as conn:
        on_sqlite = resume_fixture_tree(SqliteSaver(conn))
    assert normalised(on_repo) == normalised(on_sqlite)
    assert on_repo["fan"]["ran"] == ["bad"]  # the writes of "a" and "c" came across


def normalised(states: dict[str, Any]) -> dict[str, Any]:
    """Final states with messages as (type, content): message ids are random per run."""
    out = dict(states)
    out["chat"] = [(m.type, m.content) for m in states["chat"]["messages"]]
    return out


def test_copy_only_the_threads_asked_for(sqlite_source: Path, tmp_path: Path) -> None:
    with closing(sqlite_saver(sqlite_source).conn) as conn:
        report = copy_threads(SqliteSaver(conn), RepoSaver(tmp_path), ["sub", "chat"])
    assert report.threads == ["sub", "chat"]
    assert thread_ids_of(RepoSaver(tmp_path)) == ["chat", "sub"]


def test_thread_already_in_target_is_refused_then_replaced(tmp_path: Path) -> None:
    source, target = InMemorySaver(), RepoSaver(tmp_path)
    chat_graph(source).invoke({"messages": [HumanMessage(content="from source")]}, cfg("t"))
    chat_graph(target).invoke({"messages": [HumanMessage(content="already here")]}, cfg("t"))
    before = list(target.list(cfg("t")))
    with pytest.raises(ThreadExistsError, match="'t' already exists in the target"):
        copy_threads(source, target)
    assert list(RepoSaver(tmp_path).list(cfg("t"))) == before  # nothing of it written
    copy_threads(source, target, replace=True)
    assert_same(everything(source, ["t"]), everything(RepoSaver(tmp_path), ["t"]))


def test_missing_source_thread_is_an_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="'nope' is not in the source"):
        copy_threads(InMemorySaver(), RepoSaver(tmp_path), ["nope"])


async def test_async_copy_between_in_memory_and_repo(tmp_path: Path) -> None:
    source = InMemorySaver()
    graph = chat_graph(source)
    for word in ("one", "two"):
        await graph.ainvoke({"messages": [HumanMessage(content=word)]}, cfg("a"))
    repo = RepoSaver(tmp_path)
    report = await acopy_threads(source, repo)
    assert report.threads == ["a"] and report.checkpoints == 6
    back = InMemorySaver()
    await acopy_threads(RepoSaver(tmp_path), back)
    assert_same(everything(source, ["a"]), everything(back, ["a"]))


def test_progress_reports_every_checkpoint(tmp_path: Path) -> None:
    source = InMemorySaver()
    chat_graph(source).invoke({"messages": [HumanMessage(content="hi")]}, cfg("p"))
    seen: list[tuple[str, int, int]] = []
    copy_threads(source, RepoSaver(tmp_path), progress=lambda t, done, total: seen.append((t, done, total)))
    assert seen == [("p", 1, 3), ("p", 2, 3), ("p", 3, 3)]


# ----------------------------------------------------------------------------
# PostgreSQL: a real server, started by .ci/run
# ----------------------------------------------------------------------------
@pytest.fixture
def postgres_uri() -> Iterator[str]:
    """A fresh database on the test server; fails (never skips) when there is no server."""
    import psycopg

    base = os.environ.get(POSTGRES_ENV)
    if not base:
        pytest.fail(
            f"{POSTGRES_ENV} is not set: these tests need a PostgreSQL server (.ci/run starts one); "
            'deselect them with -m "not postgres" on a machine without one'
        )
    name = f"lgr_{uuid.uuid4().hex[:12]}"
    try:
        with psycopg.connect(base, autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {name}")
    except psycopg.OperationalError as exc:
        pytest.fail(f"cannot reach the PostgreSQL server at {base}: {exc}")
    uri = base.rsplit("/", 1)[0] + f"/{name}"
    yield uri
    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.mark.postgres
def test_postgres_to_repo_to_postgres_gives_identical_get_tuple_and_list(
    postgres_uri: str, tmp_path: Path
) -> None:
    from langgraph.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(postgres_uri) as source:
        source.setup()
        run_fixture_graphs(source)
        assert thread_ids_of(source) == FIXTURE_THREADS
        original = everything(source, FIXTURE_THREADS)
        report = copy_threads(source, RepoSaver(tmp_path / ".langgraph"))
        assert report.checkpoints == count_checkpoints(original)
        assert_same(original, everything(RepoSaver(tmp_path / ".langgraph"), FIXTURE_THREADS))
        for t in FIXTURE_THREADS:
            source.delete_thread(t)
        assert thread_ids_of(source) == []
        copy_threads(RepoSaver(tmp_path / ".langgraph"), source)
        assert_same(original, everything(source, FIXTURE_THREADS))
        assert resume_fixture_tree(source)["fan"]["ran"] == ["bad"]
