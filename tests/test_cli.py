"""The ``langgraph-repo`` command line, driven over states made by real graphs (helpers.cli: in this
process, as a fresh one would run it; a process where only a process shows it).

One module-scoped root holds threads written by compiled StateGraphs through RepoSaver:
a chat, an interrupt, a subgraph interrupt, a forked history, a failed Send fan-out, a
dict-valued state that changes keys, a state type the command line may not revive and
a DeltaChannel loop. Read-only tests share it; tests that change files work on a copy.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage
from langgraph.graph import MessagesState
from typing_extensions import TypedDict

from graphs import (
    ask_graph,
    cfg,
    chain_graph,
    chat_graph,
    delta_graph,
    fan_graph,
    line_graph,
    run_fixture_graphs,
    sub_graph,
)
from helpers import checkpoint_files, cli_env, cli_process, file_digests, one_line_error
from helpers import cli as run_cli
from langgraph_checkpoint_repo import RepoSaver
from langgraph_checkpoint_repo.core.format.validation import SCHEMA_VERSION
from langgraph_checkpoint_repo.readmodel.reader import Reader

LONG_TEXT = "lorem ipsum " * 100  # 1,200 characters: folded by show


def cli(
    root: Path | None, *args: Any, stdin: str | None = None, cwd: Path | None = None, process: bool = False
) -> subprocess.CompletedProcess[str]:
    """helpers.cli, in this process; a fresh process (helpers.cli_process) when ``stdin``
    answers a prompt or ``process`` asks for the exit code and output as a process returns them."""
    if stdin is not None or process:
        return cli_process(root, *args, stdin=stdin or "", cwd=cwd, timeout=120)
    return run_cli(root, *args, cwd=cwd, timeout=120)


def cli_many(*calls: tuple[Any, ...]) -> list[subprocess.CompletedProcess[str]]:
    """Several independent runs, one after another (keyword arguments in a dict last)."""
    return [cli(*c[:-1], **c[-1]) if c and isinstance(c[-1], dict) else cli(*c) for c in calls]


def cli_json(root: Path, *args: str) -> Any:
    proc = cli(root, *args, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


# ----------------------------------------------------------------------------
# graphs
# ----------------------------------------------------------------------------
def long_reply(state: MessagesState) -> dict[str, Any]:
    """echo, but "say a lot" gets LONG_TEXT (for show's folding)."""
    last = state["messages"][-1]
    text = LONG_TEXT if last.content == "say a lot" else f"echo: {last.content}"
    return {"messages": [AIMessage(content=text)]}


class ProfileState(MessagesState, total=False):
    profile: dict[str, Any]
    note: str


def profile_graph(saver: RepoSaver) -> Any:
    def first(state: ProfileState) -> dict[str, Any]:
        return {
            "profile": {"name": "Ada", "age": 36},
            "note": "first pass",
            "messages": [AIMessage(content="hello Ada", id="m-hello")],
        }

    def second(state: ProfileState) -> dict[str, Any]:
        return {"profile": {"name": "Grace", "city": "Paris"}, "messages": [RemoveMessage(id="m-hello")]}

    return line_graph(ProfileState, saver, first=first, second=second)


@dataclass
class Point:
    """A graph's own state type: the graph may revive it, the command line (no graph) may not."""

    x: int
    y: int


class PointState(TypedDict):
    point: Point


def point_graph(saver: RepoSaver) -> Any:
    return line_graph(PointState, saver, move=lambda s: {"point": Point(s["point"].x + 1, s["point"].y + 2)})


ROOT_DIGEST: dict[str, str] = {}  # the shared root's files before any command ran


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A root with one thread per situation the command line has to explain."""
    path = tmp_path_factory.mktemp("state") / ".langgraph"
    saver = RepoSaver(path, durable=False)
    run_fixture_graphs(saver, chat_words=("hello", "say a lot"), reply=long_reply, big=False)
    profile_graph(saver).invoke({"messages": [HumanMessage(content="hi", id="m-hi")]}, cfg("profile"))
    point_graph(saver).invoke({"point": Point(1, 1)}, cfg("point"))
    ROOT_DIGEST.update(file_digests(path))
    return path


@pytest.fixture
def copy_root(root: Path, tmp_path: Path) -> Path:
    """A private copy of the shared root for tests that change files."""
    dst = tmp_path / ".langgraph"
    shutil.copytree(root, dst)
    return dst


def orphan_writes_doc(root: Path, thread: str) -> dict[str, Any]:
    """A writes file of ``thread`` whose checkpoint does not exist, made from a real one (any
    thread's: format 4 leaves a writes file only where no child took it), in its folder."""
    some = sorted((root / "threads").glob("*/writes/*.json"))[0]
    wdoc = json.loads(some.read_text())
    wdoc["thread_id"] = thread
    wdoc["checkpoint_id"] = "1f1ec0cf-0000-6000-8000-000000000000"
    (root / "threads" / thread / "writes").mkdir(exist_ok=True)
    return dict(wdoc)


def chat_state(root: Path, thread: str = "chat") -> list[tuple[str, Any]]:
    """The messages of a thread as LangGraph reads them back."""
    tup = RepoSaver(root).get_tuple(cfg(thread))
    assert tup is not None
    return [(m.type, m.content) for m in tup.checkpoint["channel_values"]["messages"]]


# ----------------------------------------------------------------------------
# threads
# ----------------------------------------------------------------------------
def test_threads_json_lists_counts_latest_step_forks_and_waiting_interrupts(root: Path) -> None:
    """One row per thread with namespaces, checkpoints, latest step, forks and what it waits on."""
    rows = {r["thread_id"]: r for r in cli_json(root, "threads")}
    assert set(rows) == {"chat", "ask", "sub", "fork", "fan", "profile", "point", "delta"}
    saver = RepoSaver(root, allowlist=[(Point.__module__, "Point")])
    for tid, row in rows.items():
        listed = list(saver.list(cfg(tid)))
        assert row["checkpoints"] == len(listed)
        latest = saver.get_tuple(cfg(tid, checkpoint_ns=""))
        assert latest is not None
        assert row["latest_checkpoint_id"] == latest.config["configurable"]["checkpoint_id"]
        assert row["latest_step"] == latest.metadata["step"]
    assert rows["chat"]["latest_step"] == 4 and rows["chat"]["next"] == [] and rows["chat"]["waiting"] == []
    assert rows["fork"]["forks"] == 2  # the replay and the update_state each started a branch
    assert [w["value"] for w in rows["ask"]["waiting"]] == [
        {"choices": ["Ada", "Grace"], "question": "What is your name?"}
    ]
    assert rows["ask"]["waiting"][0]["node"] == "ask"
    assert len(rows["sub"]["namespaces"]) == 2 and rows["sub"]["namespaces"][1].startswith("sub:")
    assert rows["sub"]["next"] == ["inner_ask", "sub"]
    assert rows["fan"]["next"] == ["work"]


def test_threads_filters_waiting_at_has_meta_and_since(root: Path) -> None:
    """Each filter keeps exactly the threads it describes."""

    filters = [
        ("--waiting-at", "inner_ask"),  # a node inside a subgraph
        ("--waiting-at", "ask"),
        ("--has", "profile", "--meta", "source=loop"),
        ("--meta", "user=ada"),
        ("--since", "2999-01-01"),
    ]
    runs = cli_many(*((root, "threads", *f, "--json") for f in filters))
    assert [p.returncode for p in runs] == [0] * len(filters)
    found = [[r["thread_id"] for r in json.loads(p.stdout)] for p in runs]
    assert found == [["sub"], ["ask"], ["profile"], ["chat"], []]


def test_threads_table_is_plain_text_into_a_pipe(root: Path) -> None:
    """Piped output has every thread and no colour codes (colour is for terminals only)."""
    proc = cli(root, "threads")
    assert proc.returncode == 0, proc.stderr
    assert "\x1b[" not in proc.stdout
    lines = proc.stdout.splitlines()
    assert lines[0].split()[:3] == ["thread", "namespaces", "checkpoints"]
    assert {line.split()[0] for line in lines[1:]} == {
        "chat",
        "ask",
        "sub",
        "fork",
        "fan",
        "profile",
        "point",
        "delta",
    }
    assert all(line == line.rstrip() for line in lines)


def _pty_run(args: list[str]) -> bytes:
    master, slave = os.openpty()
    env = {k: v for k, v in cli_env().items() if k != "NO_COLOR"}
    proc = subprocess.Popen(
        args, stdout=slave, stderr=slave, stdin=subprocess.DEVNULL, env={**env, "TERM": "xterm"}
    )
    os.close(slave)
    out = b""
    while select.select([master], [], [], 60)[0]:
        try:
            data = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        out += data
    os.close(master)
    assert proc.wait(60) == 0
    return out


def test_terminal_gets_colour_and_a_validate_progress_bar(root: Path) -> None:
    """On a terminal the same commands colour their output and validate shows its progress."""
    out = _pty_run([sys.executable, "-m", "langgraph_checkpoint_repo", "--root", str(root), "validate"])
    assert b"validating" in out  # the progress bar (transient, so only a terminal sees it)
    assert b"\x1b[" in out


# ----------------------------------------------------------------------------
# history
# ----------------------------------------------------------------------------
def test_history_newest_first_with_steps_sources_writers_parents(root: Path) -> None:
    """Every checkpoint, newest first, as LangGraph's own history has them, with who wrote each."""
    data = cli_json(root, "history", "fork")
    rows = data["checkpoints"]
    saver = RepoSaver(root)
    expected = list(chain_graph(saver).get_state_history(cfg("fork")))
    assert [r["checkpoint_id"] for r in rows] == [s.config["configurable"]["checkpoint_id"] for s in expected]
    assert [r["parent_checkpoint_id"] for r in rows] == [
        s.parent_config["configurable"]["checkpoint_id"] if s.parent_config else None for s in expected
    ]
    assert [(r["step"], r["source"]) for r in rows] == [
        (s.metadata["step"], s.metadata["source"]) for s in expected
    ]
    by_step_source = {(r["step"], r["source"]): r["written_by"] for r in rows}
    assert by_step_source[(-1, "input")] == ["(input)"]
    assert by_step_source[(1, "update")] == ["(update_state)"]
    assert by_step_source[(2, "fork")] == ["(fork)"]
    loop_writers = sorted(w for r in rows if r["source"] == "loop" and r["step"] > 0 for w in r["written_by"])
    assert loop_writers == ["a", "b", "b", "c", "c"]  # a once, then b and c on both branches
    children = {r["checkpoint_id"]: r["children"] for r in rows}
    assert sum(1 for c in children.values() if len(c) == 2) == 2  # two fork points


def test_history_draws_forks_as_a_tree_and_honours_limit_and_ns(root: Path) -> None:
    """The text view joins each branch to its fork point; --limit cuts, --ns reads a subgraph."""
    proc, sub = cli_many(
        (root, "history", "fork"), (root, "history", "sub", "--ns", "sub", "--limit", "1", "--json")
    )
    assert proc.returncode == 0, proc.stderr
    assert "2 forks" in proc.stdout.splitlines()[0]
    joins = [line for line in proc.stdout.splitlines() if "●─┘" in line]
    assert len(joins) == 2  # both fork points show a branch joining
    limited = json.loads(sub.stdout)
    assert limited["checkpoint_ns"].startswith("sub:")
    assert len(limited["checkpoints"]) == 1 and limited["checkpoints"][0]["step"] == 1


# ----------------------------------------------------------------------------
# show
# ----------------------------------------------------------------------------
def test_show_renders_messages_as_role_text_and_folds_long_values(root: Path) -> None:
    """Messages read as ``role: text`` in order; a 1,200-character message is folded."""
    proc = cli(root, "show", "chat")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "  1. human: hello\n" in out
    assert "  2. ai: echo: hello\n" in out
    assert "  3. human: say a lot\n" in out
    line4 = next(line for line in out.splitlines() if line.startswith("  4. ai: lorem ipsum"))
    assert line4.endswith(f"… (+{len(LONG_TEXT) - 400} chars)")
    assert "none: the graph has finished" in out


def test_show_interrupt_payload_next_task_and_pending_write(root: Path) -> None:
    """A paused thread shows who waits, with the interrupt's payload, as LangGraph's get_state does."""
    as_json, as_text = cli_many((root, "show", "ask", "--json"), (root, "show", "ask"))
    data = json.loads(as_json.stdout)
    state = ask_graph(RepoSaver(root)).get_state(cfg("ask"))
    (task,) = state.tasks
    assert [t["name"] for t in data["next"]] == list(state.next) == ["ask"]
    assert data["next"][0]["id"] == task.id and data["next"][0]["status"] == "interrupted"
    assert [(i["interrupt_id"], i["value"]) for i in data["interrupts"]] == [
        (i.id, i.value) for i in task.interrupts
    ]
    assert [(w["task_id"], w["channel"]) for w in data["pending_writes"]] == [(task.id, "__interrupt__")]
    assert data["values"] == {"log": ["prepared"], "question": "What is your name?"}
    text = as_text.stdout
    assert "Interrupts (waiting for an answer)" in text and "question: What is your name?" in text


def test_show_a_value_the_allowlist_refuses_prints_its_raw_json(root: Path) -> None:
    """A graph's own type cannot be revived without the graph: show prints the stored JSON tree."""
    proc, as_json = cli_many((root, "show", "point"), (root, "show", "point", "--json"))
    assert proc.returncode == 0, proc.stderr
    assert "(not revived: refusing to construct" in proc.stdout
    assert '"$type": [' in proc.stdout and '"Point"' in proc.stdout and '"x": 2' in proc.stdout
    data = json.loads(as_json.stdout)
    assert data["values"]["point"]["$kwargs"] == {"x": 2, "y": 3}
    assert "not in the msgpack allowlist" in data["not_revived"]["point"]


def test_show_a_given_checkpoint_by_unique_prefix(root: Path) -> None:
    """--checkpoint takes a full id or a unique prefix and shows that checkpoint."""
    oldest = Reader(root).checkpoint_ids("chat", "")[0]
    data = cli_json(root, "show", "chat", "--checkpoint", oldest[:23])
    assert data["checkpoint_id"] == oldest and data["step"] == -1
    assert [t["name"] for t in data["next"]] == ["__start__"]


def test_next_tasks_derived_from_files_match_langgraph_get_state_everywhere(root: Path) -> None:
    """For every checkpoint of every thread, the task names and ids the command line derives from
    the files equal the ones LangGraph's get_state computes from the compiled graph."""
    saver = RepoSaver(root)
    graphs = {
        "chat": chat_graph(saver, long_reply),
        "ask": ask_graph(saver),
        "sub": sub_graph(saver),
        "fork": chain_graph(saver),
        "fan": fan_graph(saver, fail=True),
        "profile": profile_graph(saver),
        "delta": delta_graph(saver),
    }
    reader = Reader(root)
    compared = 0
    for tid, graph in graphs.items():
        for tup in saver.list(cfg(tid)):
            conf = tup.config["configurable"]
            if conf["checkpoint_ns"]:
                continue  # subgraph states are compared through the parent's get_state below
            expected = graph.get_state(tup.config, subgraphs=True)
            view = reader.state(tid, "", conf["checkpoint_id"])
            assert sorted((t.name, t.id) for t in view.tasks) == sorted(
                (t.name, t.id) for t in expected.tasks
            )
            for task in expected.tasks:
                if task.state is not None and not isinstance(task.state, dict):
                    sub_conf = task.state.config["configurable"]
                    sub_view = reader.state(tid, sub_conf["checkpoint_ns"], sub_conf["checkpoint_id"])
                    assert [(t.name, t.id) for t in sub_view.tasks] == [
                        (t.name, t.id) for t in task.state.tasks
                    ]
            compared += 1
    assert compared >= 30


# ----------------------------------------------------------------------------
# diff
# ----------------------------------------------------------------------------
def test_diff_default_is_latest_against_parent_messages_added(root: Path) -> None:
    """Without ids, diff compares the latest checkpoint with its parent: the reply was added."""
    proc = cli(root, "diff", "chat")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[1] == "messages: 1 added"
    assert lines[2].startswith("  + [3] ai: lorem ipsum")


def test_diff_from_to_keys_changed_items_removed_values_removed(root: Path) -> None:
    """Between two checkpoints: object keys added, changed, removed; list items removed; a
    channel absent on the newer side is reported removed."""
    reader = Reader(root)
    step = {reader.get("profile", "", c).metadata["step"]: c for c in reader.checkpoint_ids("profile", "")}
    forward, backward, text = cli_many(
        (root, "diff", "profile", "--from", step[1], "--to", step[2], "--json"),
        (root, "diff", "profile", "--from", step[1], "--to", step[-1], "--json"),
        (root, "diff", "profile", "--from", step[1], "--to", step[2]),
    )
    data = json.loads(forward.stdout)
    changes = {c["channel"]: c for c in data["changes"]}
    assert set(changes) == {"profile", "messages"}
    assert changes["profile"]["kind"] == "keys"
    assert changes["profile"]["keys_added"] == {"city": "Paris"}
    assert changes["profile"]["keys_removed"] == {"age": 36}
    assert changes["profile"]["keys_changed"] == {"name": {"old": "Ada", "new": "Grace"}}
    removed = changes["messages"]["removed"]
    assert [(r["index"], r["value"]["$fields"]["content"]) for r in removed] == [(1, "hello Ada")]
    assert changes["messages"]["added"] == []
    kinds = {c["channel"]: c["kind"] for c in json.loads(backward.stdout)["changes"]}
    assert kinds["note"] == "removed" and kinds["profile"] == "removed"
    assert "  ~ name: Ada → Grace" in text.stdout and "  - [1] ai: hello Ada" in text.stdout


# ----------------------------------------------------------------------------
# tasks
# ----------------------------------------------------------------------------
def test_tasks_failed_fan_out_done_failed_and_what_runs_again(root: Path) -> None:
    """A Send fan-out where one task failed: two done (kept), one failed (runs again)."""
    as_json, as_text = cli_many((root, "tasks", "fan", "--json"), (root, "tasks", "fan"))
    (block,) = json.loads(as_json.stdout)["namespaces"]
    statuses = sorted((t["status"], t["runs_on_resume"]) for t in block["tasks"])
    assert statuses == [("done", False), ("done", False), ("failed", True)]
    failed = next(t for t in block["tasks"] if t["status"] == "failed")
    assert "boom on bad" in failed["error"]
    text = as_text.stdout
    assert "on resume: 1 task runs (work), 2 keep their saved writes" in text
    assert "work ✗ error: failed with RuntimeError('boom on bad')" in text


def test_tasks_subgraph_interrupt_shows_parent_and_subgraph(root: Path) -> None:
    """The recovery view follows the interrupted subgraph into its namespace."""
    data = cli_json(root, "tasks", "sub")
    blocks = data["namespaces"]
    assert [b["checkpoint_ns"].split(":")[0] for b in blocks] == ["", "sub"]
    assert [(t["name"], t["status"]) for b in blocks for t in b["tasks"]] == [
        ("sub", "interrupted"),
        ("inner_ask", "interrupted"),
    ]
    assert blocks[1]["checkpoint_ns"] == f"sub:{blocks[0]['tasks'][0]['id']}"


CRASH_CHILD = textwrap.dedent(
    """
    import json, operator, os, sys, time
    from pathlib import Path
    from typing import Annotated
    from typing_extensions import TypedDict
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import Send
    from langgraph_checkpoint_repo import RepoSaver

    root = Path(sys.argv[1])
    writes = root / "threads" / "crashy" / "writes"

    class S(TypedDict, total=False):
        items: list
        results: Annotated[list, operator.add]

    def work(arg):
        if arg["item"] == "charge-card":
            # the side effect happens, then the process dies before the task's writes are saved
            (root.parent / "side-effect.txt").write_text("card charged")
            for _ in range(600):  # until the sibling's writes are on disk
                names = [n for n in os.listdir(writes) if not n.startswith(".")] if writes.is_dir() else []
                docs = [json.loads((writes / n).read_text()) for n in names]
                saved = root / "threads" / "crashy" / "checkpoints"
                # the sibling's writes, and the checkpoint they belong to, are on disk
                if any(
                    "sent email" in json.dumps(d) and (saved / (d["checkpoint_id"] + ".json")).exists()
                    for d in docs
                ):
                    os._exit(3)
                time.sleep(0.05)
            os._exit(4)
        return {"results": ["sent email"]}

    b = StateGraph(S)
    b.add_node("work", work)
    b.add_conditional_edges(START, lambda s: [Send("work", {"item": i}) for i in s["items"]], ["work"])
    b.add_edge("work", END)
    g = b.compile(checkpointer=RepoSaver(root))
    g.invoke({"items": ["email", "charge-card"]}, {"configurable": {"thread_id": "crashy"}})
    """
)


def test_tasks_flags_a_task_that_may_have_run_without_saved_writes(tmp_path: Path) -> None:
    """A process killed mid-step: the finished sibling is kept, the killed task is shown as
    one that may already have had its side effects."""
    root = tmp_path / ".langgraph"
    child = subprocess.run(
        [sys.executable, "-c", CRASH_CHILD, str(root)], capture_output=True, text=True, timeout=120
    )
    assert child.returncode == 3, child.stderr
    assert (tmp_path / "side-effect.txt").read_text() == "card charged"
    as_json, as_text = cli_many((root, "tasks", "crashy", "--json"), (root, "tasks", "crashy"))
    tasks = json.loads(as_json.stdout)["namespaces"][0]["tasks"]
    by_status = {t["status"]: t for t in tasks}
    assert set(by_status) == {"done", "may have run"}
    assert by_status["may have run"]["may_have_run"] is True and by_status["may have run"]["runs_on_resume"]
    assert by_status["done"]["may_have_run"] is False
    text = as_text.stdout
    assert "may have run  runs again: check its side effects first" in text
    assert "Check them before resuming." in text


# ----------------------------------------------------------------------------
# validate
# ----------------------------------------------------------------------------
def test_validate_clean_root_exits_zero(root: Path) -> None:
    """Every file of states made by real graphs validates."""
    proc = cli(root, "validate")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout == ""
    assert proc.stderr.startswith("ok: ")


def test_validate_reports_each_problem_as_path_and_json_pointer(copy_root: Path) -> None:
    """Hand edits, a truncated file, a missing referenced checkpoint, a hole in the history and
    an orphaned writes file: exit 1 and one line each with the file and the JSON pointer."""
    chat = checkpoint_files(copy_root, "chat")
    ask = checkpoint_files(copy_root, "ask")
    doc = json.loads(ask[-1].read_text())
    doc["metadata"] = "edited by hand"
    ask[-1].write_text(json.dumps(doc))
    fork = checkpoint_files(copy_root, "fork")
    fork[0].write_text(fork[0].read_text()[:50])  # truncated
    chat[2].unlink()  # later checkpoints refer to values stored in it
    chat[3].unlink()  # the next turn's input: chat[4] names it as parent, and a message it holds
    orphan = (
        copy_root
        / "threads"
        / "profile"
        / "writes"
        / ("1f1ec0cf-0000-6000-8000-000000000000~1f1ec0cf-0000-6000-8000-000000000001.json")
    )
    orphan.write_text(json.dumps(orphan_writes_doc(copy_root, "profile")))

    proc = cli(copy_root, "validate", process=True)  # exit 1 as a process returns it
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert any(line.startswith(f"{ask[-1]}: /metadata: ") for line in lines)
    assert any(line.startswith(f"{fork[0]}: /: invalid JSON") for line in lines)
    chat_lines = [line for line in lines if "/threads/chat/" in line]
    # format 4: chat[4] builds on chat[3] (a delta) and names a message chat[3] held ($in)
    hole = [line for line in chat_lines if line.startswith(f"{chat[4]}: /parent_checkpoint_id: ")]
    objects = [line for line in chat_lines if "refers to object" in line and "which is missing" in line]
    gone = f"holds only what changed since checkpoint {chat[3].stem}, which is missing"
    assert len(hole) == 1 and gone in hole[0]
    assert objects and all(line.startswith(f"{chat[4]}: /") for line in objects)
    assert len(hole) + len(objects) == len(chat_lines)
    assert any(line.startswith(f"{orphan}: /checkpoint_id: writes of checkpoint") for line in lines)
    assert all(line.split(": ")[1].startswith("/") for line in lines)
    assert proc.stderr.startswith(f"{len(lines)} problems ")


def cli_json_allowing(root: Path, code: int, *args: str) -> Any:
    proc = cli(root, *args, "--json")
    assert proc.returncode == code, proc.stderr
    return json.loads(proc.stdout)


def test_validate_paths_checks_only_the_threads_holding_them(copy_root: Path) -> None:
    """Given paths (as a pre-commit hook passes them), only those threads are checked."""
    bad = checkpoint_files(copy_root, "ask")[0]
    bad.write_text("{}")
    good = checkpoint_files(copy_root, "chat")[0]
    clean, proc, outside = cli_many(
        (copy_root, "validate", str(good)),
        (copy_root, "validate", str(bad)),
        (copy_root, "validate", "/etc/hostname"),
    )
    assert clean.returncode == 0, clean.stdout
    assert proc.returncode == 1 and proc.stdout.startswith(f"{bad}: /")
    one_line_error(outside, 2, "/etc/hostname", "not under the root")


# ----------------------------------------------------------------------------
# fsck
# ----------------------------------------------------------------------------
def test_fsck_repair_removes_only_leftovers_and_orphans_never_a_checkpoint(copy_root: Path) -> None:
    """Temp files, orphaned writes, values and large values, a missing .gitignore: reported, then
    removed or rebuilt by --repair, with every checkpoint file byte for byte unchanged."""
    tdir = copy_root / "threads" / "chat"
    (tdir / "checkpoints" / ".x.json.0123456789ab.tmp").write_text("half a file")  # the saver's temp name
    orphan_writes = (
        tdir / "writes" / "1f1ec0cf-0000-6000-8000-000000000000~1f1ec0cf-0000-6000-8000-000000000001.json"
    )
    orphan_writes.write_text(json.dumps(orphan_writes_doc(copy_root, "chat")))
    (tdir / "values").mkdir()
    orphan_value = tdir / "values" / "note@1.json"
    orphan_value.write_text(
        json.dumps(
            {
                "schema_version": SCHEMA_VERSION,
                "kind": "value",
                "channel": "note",
                "version": "1",
                "value": {"serde": "msgpack", "json": "old"},
            }
        )
    )
    orphan_value.rename(tdir / "values" / "note@1.json")
    (tdir / "large").mkdir()
    node = {"serde": "msgpack", "json": "x" * 10}
    from langgraph_checkpoint_repo.core.format.canonical import digest_node

    digest = digest_node(node)
    (tdir / "large" / f"{digest}.json").write_text(
        json.dumps({"schema_version": SCHEMA_VERSION, "kind": "large_value", "sha256": digest, "value": node})
    )
    (copy_root / ".gitignore").unlink()
    before = {p: p.read_bytes() for p in copy_root.rglob("checkpoints/*.json")}

    found = cli_json_allowing(copy_root, 1, "fsck")
    kinds = sorted(f["kind"] for f in found["findings"])
    assert kinds == ["gitignore", "orphan-large", "orphan-value", "orphan-writes", "temp"]
    assert all(f["repairable"] and not f["repaired"] for f in found["findings"])

    repaired = cli(copy_root, "fsck", "--repair")
    assert repaired.returncode == 0, repaired.stdout + repaired.stderr
    assert repaired.stdout.count("removed ") == 4 and "rebuilt gitignore" in repaired.stdout
    assert not orphan_writes.exists() and not orphan_value.exists()
    assert not (tdir / "large" / f"{digest}.json").exists()
    assert (copy_root / ".gitignore").read_text().startswith("# lock files")
    assert {p: p.read_bytes() for p in copy_root.rglob("checkpoints/*.json")} == before
    again, valid = cli_many((copy_root, "fsck"), (copy_root, "validate"))
    assert again.returncode == 0 and valid.returncode == 0, again.stdout + valid.stdout


def test_fsck_reports_but_never_repairs_a_corrupt_checkpoint(copy_root: Path) -> None:
    """A corrupt checkpoint is reported as invalid and left exactly as it is."""
    bad = checkpoint_files(copy_root, "chat")[-1]
    bad.write_text(f'{{"schema_version": {SCHEMA_VERSION}, "kind": "checkpoint"}}')
    proc = cli(copy_root, "fsck", "--repair")
    assert proc.returncode == 1
    assert f"invalid: {bad}: /: " in proc.stdout
    assert bad.read_text() == f'{{"schema_version": {SCHEMA_VERSION}, "kind": "checkpoint"}}'


# ----------------------------------------------------------------------------
# render
# ----------------------------------------------------------------------------
def test_render_markdown_view_is_made_on_demand_and_never_stored(root: Path) -> None:
    """A Markdown page with status, state, the waiting question and history; no file is written."""
    proc, html = cli_many(
        (root, "render", "ask", "--format", "markdown"), (root, "render", "ask", "--format", "html")
    )
    assert proc.returncode == 0, proc.stderr
    md = proc.stdout
    assert md.startswith("# Thread `ask`\n")
    assert "| Status | waiting for input at `ask` |" in md
    assert "## Waiting for input" in md and "question: What is your name?" in md
    assert "| `ask` | interrupted | runs again |" in md
    assert md.count("| loop |") + md.count("| input |") == 3  # every checkpoint in the history table
    assert file_digests(root) == ROOT_DIGEST  # as the graphs left it
    one_line_error(html, 2, "html")


# ----------------------------------------------------------------------------
# prune, delete, copy
# ----------------------------------------------------------------------------
def test_prune_dry_run_lists_exactly_what_a_real_run_removes(copy_root: Path) -> None:
    """The dry run's file list equals what the real run removes and writes; state and the
    next run are unaffected."""
    before = file_digests(copy_root)
    state_before = chat_state(copy_root)
    dry = cli_json(copy_root, "prune", "chat", "fork", "--keep-last", "2", "--dry-run")
    assert dry["dry_run"] is True and all(t["remove"] for t in dry["threads"])
    assert file_digests(copy_root) == before  # a dry run changes nothing
    real = cli_json(copy_root, "prune", "chat", "fork", "--keep-last", "2", "--yes")
    assert [(t["thread_id"], t["remove"], t["write"]) for t in real["threads"]] == [
        (t["thread_id"], t["remove"], t["write"]) for t in dry["threads"]
    ]
    assert all(not Path(p).exists() for t in real["threads"] for p in t["remove"])
    assert len(checkpoint_files(copy_root, "chat")) == 2
    assert chat_state(copy_root) == state_before
    valid = cli(copy_root, "validate")
    assert valid.returncode == 0, valid.stdout
    out = chat_graph(RepoSaver(copy_root), long_reply).invoke(
        {"messages": [HumanMessage(content="again")]}, cfg("chat")
    )
    assert [m.content for m in out["messages"]][-2:] == ["again", "echo: again"]
    assert len(out["messages"]) == 6


def test_prune_never_cuts_a_thread_waiting_on_an_interrupt(copy_root: Path) -> None:
    """Threads paused at an interrupt are kept whole, even when pruning everything."""
    before = file_digests(copy_root / "threads" / "ask")
    sub_before = file_digests(copy_root / "threads" / "sub")
    data = cli_json(copy_root, "prune", "--keep-last", "1", "--yes")
    skipped = {t["thread_id"]: t["skipped"] for t in data["threads"] if t["skipped"]}
    assert skipped == {"ask": "waits on an interrupt at ask", "sub": "waits on an interrupt at sub"}
    assert file_digests(copy_root / "threads" / "ask") == before
    assert file_digests(copy_root / "threads" / "sub") == sub_before


def test_prune_keeps_what_a_delta_channel_needs_to_rebuild(copy_root: Path) -> None:
    """--keep-last 1 on a DeltaChannel thread keeps the chain back to its snapshot, so the
    value reads back whole."""
    plan = cli_json(copy_root, "prune", "delta", "--keep-last", "1", "--yes")["threads"][0]
    kept = checkpoint_files(copy_root, "delta")
    assert 1 < len(kept) < 9  # more than the latest (its value is a delta), fewer than all 9
    assert len(plan["checkpoints"][""]) == 9 - len(kept)
    state = delta_graph(RepoSaver(copy_root)).get_state(cfg("delta"))
    assert state.values == {"items": [f"item{i}" for i in range(7)], "n": 7}
    assert cli(copy_root, "validate").returncode == 0


def test_destroying_commands_ask_first_and_do_nothing_without_yes(copy_root: Path) -> None:
    """prune and delete ask; "n" or no answer changes nothing and exits 5; prune without what
    to keep is a usage error, exit 2 (processes reading their answer from a pipe, as a script
    or CI runs them, exiting as a process does)."""
    before = file_digests(copy_root)
    said_no, no_answer, usage = cli_many(
        (copy_root, "prune", "chat", "--keep-last", "1", {"stdin": "n\n"}),
        (copy_root, "delete", "chat", {"stdin": ""}),  # no answer at all (EOF)
        (copy_root, "prune", "chat", {"process": True}),
    )
    # format 4: 5 checkpoint files (no writes file: each child took its parent's)
    for proc, question in ((said_no, "Remove 5 files from 1 thread?"), (no_answer, "Delete thread 'chat'")):
        assert proc.returncode == 5
        first, last = proc.stderr.strip().splitlines()
        assert first.startswith(question) and last.startswith("langgraph-repo: error: not confirmed")
    assert file_digests(copy_root) == before
    one_line_error(usage, 2, "--keep-last")


def test_delete_and_copy_threads(copy_root: Path) -> None:
    """copy makes an independent thread with the same state; delete removes one after a yes."""
    proc = cli(copy_root, "copy", "chat", "chat-copy")
    assert proc.returncode == 0, proc.stderr
    assert chat_state(copy_root, "chat-copy") == chat_state(copy_root)
    refused, deleted = cli_many(
        (copy_root, "copy", "chat-copy", "ask"), (copy_root, "delete", "chat", {"stdin": "y\n"})
    )
    one_line_error(refused, 5, "'ask' already exists")
    assert deleted.returncode == 0, deleted.stderr
    assert not (copy_root / "threads" / "chat").exists()
    assert (copy_root / "threads" / "chat-copy" / "checkpoints").is_dir()


# ----------------------------------------------------------------------------
# bad input
# ----------------------------------------------------------------------------
def test_bad_input_gives_one_line_and_the_documented_exit_code(copy_root: Path, tmp_path: Path) -> None:
    """Unknown thread or checkpoint, malformed or too short id, missing root, corrupt file,
    unknown schema_version: one line naming the thing (and file), never a traceback. Exit 3
    and 4 also as a process returns them (commands that start without LangGraph: cheap)."""
    process = {"process": True}
    runs = cli_many(
        (copy_root, "show", "nobody"),
        (copy_root, "show", "chat", "--checkpoint", "1f1ec0cf-dead-beef"),
        (copy_root, "diff", "chat", "--from", "not/an-id"),
        (copy_root, "show", "chat", "--checkpoint", "1f1"),
        (tmp_path / "nowhere", "threads", process),
    )
    one_line_error(runs[0], 3, "'nobody'", "not found")
    one_line_error(runs[1], 3, "1f1ec0cf-dead-beef", "not found")
    one_line_error(runs[2], 2, "malformed", "not/an-id")
    one_line_error(runs[3], 2, "too short")
    one_line_error(runs[4], 3, "nowhere", "does not exist")
    latest = checkpoint_files(copy_root, "chat")[-1]
    latest.write_text(latest.read_text().replace('"kind": "checkpoint"', '"kind": "checkpoint", "kind": "x"'))
    ask = checkpoint_files(copy_root, "ask")[-1]
    ask.write_text(ask.read_text().replace(f'"schema_version": {SCHEMA_VERSION}', '"schema_version": 7'))
    corrupt, newer = cli_many((copy_root, "show", "chat"), (copy_root, "history", "ask", process))
    one_line_error(corrupt, 4, str(latest), "duplicate key")
    one_line_error(newer, 4, str(ask), "schema_version 7", "newer release")


def test_default_root_is_dot_langgraph_at_the_git_top_and_console_script_exists(
    root: Path, tmp_path: Path
) -> None:
    """Without --root the command reads .langgraph at the top of the git work tree, as RepoSaver();
    the installed ``langgraph-repo`` script is the same program."""
    repo = tmp_path / "repo"
    (repo / "deep" / "er").mkdir(parents=True)
    (repo / ".git").mkdir()
    shutil.copytree(root, repo / ".langgraph")
    script = Path(sys.executable).parent / "langgraph-repo"
    assert script.exists()
    listed = cli(None, "threads", "--json", cwd=repo / "deep" / "er")
    # the installed script is an entry point of its own: only a process of it shows it works
    proc = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60)
    data = json.loads(listed.stdout)
    assert "chat" in [r["thread_id"] for r in data]
    assert proc.returncode == 0 and "validate" in proc.stdout and "prune" in proc.stdout
