"""RepoSaver behind a real ``langgraph dev`` server, driven with langgraph-sdk.

One server (the ``server`` extra: langgraph-cli[inmem], langgraph-sdk) runs
examples/agent_server/ from a copy in a temp folder, with no ``LANGGRAPH_REPO_ROOT``, so the
package's factory puts the files in ``.langgraph`` next to ``langgraph.json``. The tests run
in file order against it: the server found every extended method, an interrupt and its resume
read back as InMemorySaver has them, a prebuilt agent's run, a thread copy and delete, the store
(RepoStore) through the server's /store API and a memory agent's run,
``langgraph-repo server sync`` after a fresh clone (the server knows no committed thread), and at
the end the files validate and no write under ``.langgraph/`` made the server reload (a
``.py`` file written last must, so the reload check is seen to work). The copy's langgraph.json
holds ``checkpointer.ttl``: the first test after the start sees an expired thread swept and one
waiting at an interrupt kept (``seed_retention``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson
import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from typer.testing import Result

from graphs import cfg, chat_graph
from helpers import cli, cli_in_process, one_line_error, rewrite, sigint_as_at_a_terminal
from langgraph_checkpoint_repo import RepoCheckpointError, RepoSaver
from langgraph_checkpoint_repo.agent_server import checkpointer, server_root, server_saver, store
from langgraph_checkpoint_repo.saver import REQUEST_METADATA
from test_git import commit_all, git

# not a missing service: langgraph-api itself installs only on Python 3.11 and later
pytestmark = pytest.mark.skipif(
    sys.version_info < (3, 11), reason="LangGraph's Agent Server (langgraph-api) needs Python 3.11+"
)
APP = Path(__file__).resolve().parent.parent / "examples" / "agent_server"
START_LIMIT_S = 180.0  # a bound on a hung start, not a speed check
RELOADED = "Reloading"  # what uvicorn's reloader logs before it restarts the server
STARTUP_FAILED = "Application startup failed"


@dataclass
class Server:
    url: str
    folder: Path
    log: Path
    proc: subprocess.Popen[bytes]

    @property
    def root(self) -> Path:
        return self.folder / ".langgraph"

    def text(self) -> str:
        return self.log.read_text(errors="replace")


def test_root_is_the_environment_variable_else_next_to_the_nearest_langgraph_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "langgraph.json").write_text("{}")
    deep = tmp_path / "src" / "app"
    deep.mkdir(parents=True)
    monkeypatch.delenv("LANGGRAPH_REPO_ROOT", raising=False)
    assert server_root(deep) == tmp_path / ".langgraph"
    monkeypatch.setenv("LANGGRAPH_REPO_ROOT", "state")
    assert server_root(deep) == deep / "state"
    monkeypatch.setenv("LANGGRAPH_REPO_ROOT", str(tmp_path / "elsewhere"))
    assert server_root(deep) == tmp_path / "elsewhere"
    monkeypatch.setenv("LANGGRAPH_REPO_ROOT", "~/state")  # from a .env file: no shell expands it
    assert server_root(deep) == Path.home() / "state"


def test_the_threads_the_servers_saver_keeps_come_from_the_environment_and_a_bad_value_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LANGGRAPH_REPO_ROOT", str(tmp_path / "root"))
    monkeypatch.delenv("LANGGRAPH_REPO_KEPT_THREADS", raising=False)
    assert server_saver(tmp_path).store.kept.size == 512
    monkeypatch.setenv("LANGGRAPH_REPO_KEPT_THREADS", "2000")
    assert server_saver(tmp_path).store.kept.size == 2000
    for bad in ("0", "-3", "many", "1.5", "1_0", "\u0665", "99999999999", "1\x1b[2J"):
        monkeypatch.setenv("LANGGRAPH_REPO_KEPT_THREADS", bad)
        with pytest.raises(RepoCheckpointError, match="LANGGRAPH_REPO_KEPT_THREADS") as caught:
            server_saver(tmp_path)
        assert repr(bad) in str(caught.value)
        assert "\x1b" not in str(caught.value)  # a control character is shown escaped, not sent


def test_a_root_that_is_a_file_is_refused_naming_it(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("")
    with pytest.raises(RepoCheckpointError, match="is not a folder") as caught:
        RepoSaver(tmp_path / "afile")
    assert str(tmp_path / "afile") in str(caught.value)


def test_without_langgraph_json_or_the_variable_the_factory_says_what_to_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LANGGRAPH_REPO_ROOT", raising=False)
    with pytest.raises(RepoCheckpointError, match="LANGGRAPH_REPO_ROOT") as caught:
        server_root(tmp_path)
    assert str(tmp_path) in str(caught.value)


async def test_factory_is_an_async_context_manager_yielding_a_saver_on_that_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LANGGRAPH_REPO_ROOT", str(tmp_path / "root"))
    async with checkpointer() as saver:
        assert saver.root == tmp_path / "root"
        assert await saver.aget_tuple({"configurable": {"thread_id": "none"}}) is None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_ready(server: Server) -> None:
    deadline = time.monotonic() + START_LIMIT_S
    while time.monotonic() < deadline:
        # a factory that raises stops the app, but uvicorn's reloader process lives on
        if server.proc.poll() is not None or STARTUP_FAILED in server.text():
            pytest.fail(f"langgraph dev exited with {server.proc.returncode}:\n{server.text()[-4000:]}")
        try:
            with urllib.request.urlopen(f"{server.url}/ok", timeout=5) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    pytest.fail(f"langgraph dev did not answer /ok within {START_LIMIT_S} s:\n{server.text()[-4000:]}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    """The reloader and its server child share a process group: stop both. Nothing is
    asserted after the stop, so a server that has not left 5 s after SIGINT is killed (one
    run of the whole suite under load waited the 30 s this used to allow)."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    langgraph = Path(sys.executable).parent / "langgraph"
    if not langgraph.exists():
        pytest.fail(f'{langgraph} is missing: install the server extra (pip install -e ".[server]")')
    base = tmp_path_factory.mktemp("agent-server")
    folder = base / "app"
    shutil.copytree(APP, folder, ignore=shutil.ignore_patterns("__pycache__", ".langgraph*"))
    seed_retention(folder)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "LANGGRAPH_REPO_ROOT"}
    env |= {"LANGGRAPH_CLI_NO_ANALYTICS": "1", "LANGSMITH_TRACING": "false", "NO_COLOR": "1"}
    log = base / "server.log"  # outside the watched folder
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [str(langgraph), "dev", "--host", "127.0.0.1", "--port", str(port), "--no-browser"],
            cwd=folder,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=sigint_as_at_a_terminal,
        )
    running = Server(f"http://127.0.0.1:{port}", folder, log, proc)
    try:
        wait_ready(running)
        yield running
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def client(server: Server) -> Any:
    from langgraph_sdk import get_sync_client

    return get_sync_client(url=server.url, api_key=None)


def app_graphs() -> ModuleType:
    """The example's graphs, imported here to run them on InMemorySaver too."""
    spec = importlib.util.spec_from_file_location("agent_server_graphs", APP / "graphs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # a dataclass looks its module up while it is made
    spec.loader.exec_module(module)
    return module


def thread_folder(server: Server, thread_id: str) -> Path:
    return server.root / "threads" / thread_id


#: the copy's checkpointer.ttl (issue 39): a thread expires a minute after its last checkpoint;
#: the factory sweeps as it is entered, then hourly, so no later test's thread ages away meanwhile
TTL = {"strategy": "delete", "default_ttl": 1, "sweep_interval_minutes": 60}
AGED_DONE, AGED_WAITS = "aged-done", "aged-waits"


def seed_retention(folder: Path) -> None:
    """Before the server starts: langgraph.json's ``checkpointer.ttl``, and two threads of the
    approval graph, one finished, one waiting at its interrupt, both last written two minutes
    ago in the test's clock (their checkpoints' ``ts``, what retention judges, set back by hand:
    a hand edit the saver reads as any), so no test waits a minute."""
    config = json.loads((folder / "langgraph.json").read_text())
    config["checkpointer"]["ttl"] = TTL
    (folder / "langgraph.json").write_text(json.dumps(config, indent=2))
    graph = app_graphs().approval.copy(
        update={"checkpointer": RepoSaver(folder / ".langgraph", durable=False)}
    )
    for thread in (AGED_DONE, AGED_WAITS):
        graph.invoke({"ask": "refund for order 3"}, cfg(thread))
    graph.invoke(Command(resume="send it"), cfg(AGED_DONE))
    for path in (folder / ".langgraph" / "threads").rglob("checkpoints/*.json"):
        rewrite(path, lambda doc: doc["checkpoint"].update(ts=_minutes_earlier(doc["checkpoint"]["ts"], 2)))


def _minutes_earlier(ts: str, minutes: float) -> str:
    return (datetime.fromisoformat(ts) - timedelta(minutes=minutes)).isoformat()


def test_server_uses_repo_saver_with_every_extended_method(server: Server, client: Any) -> None:
    client.assistants.search()  # the saver is entered once the server serves
    text = server.text()
    assert "Using custom checkpointer: RepoSaver" in text
    for method in ("adelete_thread", "adelete_for_runs", "acopy_thread", "aprune"):
        assert f"missing {method}" not in text, text[-3000:]


def test_checkpointer_ttl_sweeps_an_expired_thread_and_keeps_one_waiting_at_an_interrupt(
    server: Server, client: Any
) -> None:
    """Issue 39's goal: the server's langgraph.json holds ``checkpointer.ttl`` (delete, 1 minute);
    the factory's sweeper deletes the thread idle for two minutes and keeps the one waiting at
    its interrupt, whole (``seed_retention``). The waiting thread is deleted afterwards, so the
    later tests see the root they expect."""
    from langgraph_checkpoint_repo.readmodel.reader import Reader

    client.assistants.search()  # the factory is entered, and sweeps at once, when the server serves
    deadline = time.monotonic() + 60  # a bound on a hung sweep, not a speed check
    while thread_folder(server, AGED_DONE).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        assert not thread_folder(server, AGED_DONE).exists(), server.text()[-3000:]
        assert "checkpointer.ttl): threads idle for 1 minute are deleted whole" in server.text()
        summary = Reader(server.root).summary(AGED_WAITS)
        assert [i.task_name for i in summary.waiting] == ["ask_a_person"] and summary.checkpoints == 3
    finally:
        cli_in_process("--root", server.root, "delete", AGED_WAITS, "--yes")


def _interrupt_values(tasks: list[dict[str, Any]]) -> list[Any]:
    return [i["value"] for t in tasks for i in t.get("interrupts", [])]


def test_interrupt_and_resume_read_back_as_in_memory_saver_has_them(server: Server, client: Any) -> None:
    thread = client.threads.create()["thread_id"]
    first = {"ask": "refund for order 17"}
    client.runs.wait(thread, "approval", input=first)
    paused = client.threads.get_state(thread)  # read by the server with no graph: the project's table
    assert paused["next"] == ["ask_a_person"]
    assert paused["values"]["request"] == {"order": "17", "reason": "refund"}
    assert _interrupt_values(paused["tasks"])[0]["question"] == "Send this draft?"
    client.runs.wait(thread, "approval", command={"resume": "send it"})
    remote = client.threads.get_history(thread, limit=100)

    graph = app_graphs().approval.copy(update={"checkpointer": InMemorySaver()})
    config = {"configurable": {"thread_id": "reference"}}
    graph.invoke(first, config)
    graph.invoke(Command(resume="send it"), config)
    local = list(graph.get_state_history(config))

    # the server sends a dataclass as its fields, as orjson writes it
    assert [s["values"] for s in remote] == [orjson.loads(orjson.dumps(s.values)) for s in local]
    assert [tuple(s["next"]) for s in remote] == [s.next for s in local]
    assert [[t["name"] for t in s["tasks"]] for s in remote] == [[t.name for t in s.tasks] for s in local]
    assert [_interrupt_values(s["tasks"]) for s in remote] == [
        [i.value for t in s.tasks for i in t.interrupts] for s in local
    ]
    assert remote[0]["values"]["decision"] == "send it"
    assert len(list((thread_folder(server, thread) / "checkpoints").glob("*.json"))) == len(local)
    stored = "".join(p.read_text() for p in thread_folder(server, thread).rglob("*.json"))
    assert "Request" in stored and "__graphs" not in stored  # the type by the name it imports by


def test_prebuilt_agent_run_calls_its_tool_and_keeps_the_messages_in_files(
    server: Server, client: Any
) -> None:
    thread = client.threads.create()["thread_id"]
    question = {"messages": [{"role": "user", "content": "Where is order 4411?"}]}
    result = client.runs.wait(thread, "agent", input=question)
    kinds = [m["type"] for m in result["messages"]]
    assert kinds == ["human", "ai", "tool", "ai"]
    assert "Order 4411 shipped yesterday" in result["messages"][-1]["content"]
    on_disk = "".join(p.read_text() for p in thread_folder(server, thread).rglob("*.json"))
    assert "Order 4411 shipped yesterday" in on_disk
    assert client.threads.get_state(thread)["values"]["messages"] == result["messages"]
    # the request-scoped metadata (the server's URL with its random port, the request id, the
    # versions) is not written: a run changes only what it changed; run_id stays (delete_for_runs)
    for path in (thread_folder(server, thread) / "checkpoints").glob("*.json"):
        metadata = json.loads(path.read_text())["metadata"]
        assert not set(metadata) & REQUEST_METADATA, (path, sorted(metadata))
        assert "run_id" in metadata and "langgraph_request_id" not in path.read_text()


def test_copy_and_delete_of_a_thread_act_on_its_files(server: Server, client: Any) -> None:
    thread = client.threads.create()["thread_id"]
    client.runs.wait(thread, "approval", input={"ask": "new address for order 5"})
    before = {t["thread_id"] for t in client.threads.search(limit=100)}
    client.threads.copy(thread)
    (copy,) = {t["thread_id"] for t in client.threads.search(limit=100)} - before
    assert client.threads.get_state(copy)["values"] == client.threads.get_state(thread)["values"]
    copied = sorted(p.name for p in (thread_folder(server, copy) / "checkpoints").glob("*.json"))
    assert copied == sorted(p.name for p in (thread_folder(server, thread) / "checkpoints").glob("*.json"))
    client.threads.delete(copy)
    assert not thread_folder(server, copy).exists()
    assert thread_folder(server, thread).is_dir()


# ----------------------------------------------------------------------------
# the store: RepoStore behind the server's /store API and a graph's runtime.store
# ----------------------------------------------------------------------------
async def test_store_factory_is_an_async_context_manager_yielding_a_store_on_the_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "langgraph.json").write_text(json.dumps({"store": {"ttl": {"default_ttl": 5}}}))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LANGGRAPH_REPO_ROOT", raising=False)
    async with store() as made:
        assert made.root == tmp_path / ".langgraph"
        assert made.ttl_config == {"default_ttl": 5}
        await made.aput(("ns",), "k", {"v": 1})
        assert (tmp_path / ".langgraph" / "store" / "ns" / "k.json").is_file()


def test_server_uses_repo_store(server: Server, client: Any) -> None:
    client.store.list_namespaces()  # the store is entered on first use
    assert "Using custom store: RepoStore(root=" in server.text(), server.text()[-3000:]


def test_items_put_through_the_api_are_files_and_read_back(server: Server, client: Any) -> None:
    ns = ["users", "api-user", "preferences"]
    client.store.put_item(ns, key="theme", value={"value": "dark"})
    client.store.put_item(ns, key="lang", value={"value": "fr"}, ttl=60)
    path = server.root / "store" / "users" / "api-user" / "preferences" / "theme.json"
    assert json.loads(path.read_text())["value"] == {"value": "dark"}
    lang = json.loads(path.with_name("lang.json").read_text())
    assert lang["ttl_minutes"] == 60 and "expires_at" in lang
    assert client.store.get_item(ns, key="theme")["value"] == {"value": "dark"}
    found = client.store.search_items(["users", "api-user"], filter={"value": "fr"})["items"]
    assert [(i["namespace"], i["key"]) for i in found] == [(ns, "lang")]
    assert ns in client.store.list_namespaces(prefix=["users"])["namespaces"]
    client.store.delete_item(ns, key="lang")
    assert not path.with_name("lang.json").exists()


def test_a_memory_agent_run_writes_and_reads_the_store(server: Server, client: Any) -> None:
    config = {"configurable": {"user_id": "run-user"}}
    first = client.threads.create()["thread_id"]
    said = {"messages": [{"role": "user", "content": "remember theme is dark"}]}
    result = client.runs.wait(first, "memory", input=said, config=config)
    assert result["messages"][-1]["content"] == "Noted: theme = dark."
    path = server.root / "store" / "users" / "run-user" / "preferences" / "theme.json"
    assert json.loads(path.read_text())["value"] == {"value": "dark"}
    client.store.put_item(["users", "run-user", "preferences"], key="lang", value={"value": "fr"})
    later = client.threads.create()["thread_id"]  # another thread: the memory is the store's
    asked = {"messages": [{"role": "user", "content": "what do you know about me?"}]}
    result = client.runs.wait(later, "memory", input=asked, config=config)
    assert result["messages"][-1]["content"] == "lang = fr; theme = dark"


def sync(server: Server, *args: str) -> Result:
    """``server sync`` in this process: no interpreter start-up and langgraph-sdk import per run."""
    return cli_in_process("--root", server.root, "server", "sync", "--url", server.url, *args)


def test_server_sync_after_a_fresh_clone_makes_committed_threads_answer_and_continue(
    server: Server, client: Any
) -> None:
    from langgraph_sdk.errors import NotFoundError

    thread = client.threads.create()["thread_id"]
    ask = {"messages": [{"role": "user", "content": "Where is 4411?"}]}
    first = client.runs.wait(thread, "agent", input=ask)
    git(server.folder, "init", "-q", "-b", "main")
    git(server.folder, "config", "user.name", "Test Author")
    git(server.folder, "config", "user.email", "test@example.invalid")
    commit_all(server.folder, "the app and its state")
    # a fresh clone: the committed files are there, the server's thread list (.langgraph_api/,
    # git-ignored) does not have the thread; made here by deleting it on the server (its
    # record and its files) and taking the files back from git
    client.threads.delete(thread)
    assert not thread_folder(server, thread).exists()
    git(server.folder, "checkout", "HEAD", "--", ".langgraph")
    assert thread in cli(server.root, "threads").stdout
    with pytest.raises(NotFoundError):
        client.threads.get_state(thread)

    dry = sync(server, "--dry-run")
    assert dry.exit_code == 0, dry.stdout + dry.stderr
    assert f"would create {thread}  graph agent" in dry.stdout.splitlines()
    assert dry.stderr.startswith(f"would create 1 thread on {server.url}")
    with pytest.raises(NotFoundError):
        client.threads.get_state(thread)

    before = {p: p.stat().st_mtime_ns for p in server.root.rglob("*")}
    synced = cli(server.root, "server", "sync", "--url", server.url)  # as a person runs it
    assert synced.returncode == 0, synced.stdout + synced.stderr
    assert {p: p.stat().st_mtime_ns for p in server.root.rglob("*")} == before  # no file written
    assert f"created      {thread}  graph agent" in synced.stdout.splitlines()
    assert synced.stderr.startswith(f"created 1 thread on {server.url}")
    assert client.threads.get_state(thread)["values"]["messages"] == first["messages"]
    more = client.runs.wait(thread, "agent", input={"messages": [{"role": "user", "content": "And 12?"}]})
    assert more["messages"][: len(first["messages"])] == first["messages"]
    assert "Order 12 shipped yesterday" in more["messages"][-1]["content"]

    again = sync(server, "--json")
    assert again.exit_code == 0, again.stdout + again.stderr
    assert {t["action"] for t in json.loads(again.stdout)} == {"known"}
    assert again.stderr.startswith(f"nothing to create on {server.url}")


def test_server_sync_says_why_a_thread_is_left_off_and_fails_for_one_it_cannot_put_there(
    server: Server, client: Any, tmp_path: Path
) -> None:
    """A thread a script wrote names no graph; an id that is not a UUID is no server thread; a
    graph the server does not serve is refused; a server on another root is caught by reading
    the state back; each on its own line."""
    from langgraph_sdk.errors import NotFoundError

    script = "01a2aaaa-0000-7000-8000-00000000beef"
    graph = app_graphs().agent.copy(update={"checkpointer": RepoSaver(server.root)})
    question = {"messages": [("user", "Where is 77?")]}
    graph.invoke(question, {"configurable": {"thread_id": script}})
    graph.invoke(question, {"configurable": {"thread_id": "chat-1"}})

    left = sync(server, "--dry-run", "--json")
    assert left.exit_code == 0, left.stdout + left.stderr  # neither was a server's thread
    said = {t["thread_id"]: t for t in json.loads(left.stdout)}
    assert said[script]["action"] == "skipped" and "--graph" in said[script]["reason"]
    assert said["chat-1"]["action"] == "skipped" and "not a UUID" in said["chat-1"]["reason"]

    refused = sync(server, script, "--graph", "nosuch")
    assert refused.exit_code == 1
    assert refused.stdout.startswith(f"skipped      {script}  graph 'nosuch' is not served there (it serves ")
    named = sync(server, "chat-1")
    assert named.exit_code == 1 and "not a UUID" in named.stdout  # asked for by name: a problem
    with pytest.raises(NotFoundError):
        client.threads.get_state(script)

    # --root after the command's name, as for every other command
    args = ("server", "sync", script, "--graph", "agent", "--url", server.url, "--root", server.root)
    given = cli_in_process(*args)
    assert given.exit_code == 0, given.stdout + given.stderr
    assert given.stdout == f"created      {script}  graph agent\n"
    assert client.threads.get_state(script)["values"]["messages"][-1]["content"].endswith("on Friday.")
    assert len(client.runs.wait(script, "agent", input=question)["messages"]) == 8

    elsewhere = tmp_path / ".langgraph"  # not the root the server reads
    lost = "01a2aaaa-0000-7000-8000-00000000f00d"
    app_graphs().agent.copy(update={"checkpointer": RepoSaver(elsewhere)}).invoke(question, cfg(lost))
    wrong = cli_in_process("--root", elsewhere, "server", "sync", "--url", server.url, "--graph", "agent")
    assert wrong.exit_code == 1
    assert wrong.stdout.startswith(f"created      {lost}  the server reads checkpoint none for it, not ")


def test_server_sync_says_in_one_line_that_no_server_answers(tmp_path: Path) -> None:
    root = tmp_path / ".langgraph"
    chat_graph(RepoSaver(root)).invoke({"messages": [("user", "hi")]}, cfg("t"))
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    started = time.monotonic()
    proc = cli_in_process("--root", root, "server", "sync", "--url", url)
    one_line_error(proc, 6, f"cannot reach the Agent Server at {url}: ", "is langgraph dev running?")
    assert proc.stdout == ""
    assert time.monotonic() - started < 5  # at once, not after the SDK's retries


def test_files_validate_and_no_write_made_the_server_reload(server: Server, client: Any) -> None:
    thread = client.threads.create()["thread_id"]
    client.runs.wait(thread, "approval", input={"ask": "exchange for order 8"})
    client.runs.wait(thread, "approval", command={"resume": "no"})
    checked = cli(server.root, "validate")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "checkpoints valid" in checked.stderr
    # a change to a .py file does make the server reload, so the log is seen to tell; any reload
    # a write under .langgraph/ caused, reported late or not, is in the log before that one
    (server.folder / "touched.py").write_text("CHANGED = True\n")
    deadline = time.monotonic() + 60
    while RELOADED not in server.text() and time.monotonic() < deadline:
        time.sleep(0.5)
    reloads = [line for line in server.text().splitlines() if RELOADED in line]
    assert reloads, server.text()[-3000:]
    assert all("touched.py" in line for line in reloads), reloads
