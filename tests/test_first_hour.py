"""A new user's first hour: one damaged file, the wrong folder (the first-hour issue).

Each test is what a user meets: a whole-root command that meets one broken thread goes on with
the others; a file that does not read says how git gives it back; a saver started outside any
repository says where its state goes; a command run in an Agent Server app's folder reads that
app's state, and one that finds nothing says where it looked and where state is.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import subprocess
from contextlib import closing
from pathlib import Path

import pytest

from graphs import ask_graph, cfg, chat_graph
from helpers import checkpoint_files, cli, cli_in_process
from langgraph_checkpoint_repo import RepoSaver
from langgraph_checkpoint_repo.core.errors import FileFormatError
from test_git import commit_all, init_repo


def chat(root: Path, thread: str, *texts: str) -> None:
    graph = chat_graph(RepoSaver(root, durable=False))
    for text in texts:
        graph.invoke({"messages": [("user", text)]}, cfg(thread))


def test_threads_goes_on_past_a_broken_thread_and_exits_non_zero(tmp_path: Path) -> None:
    root = tmp_path / "root"
    for thread in ("a", "b", "c"):
        chat(root, thread, "one", "two", "three")
    damaged = checkpoint_files(root, "b")[-1]
    damaged.write_text("{ not json", encoding="utf-8")
    proc = cli(root, "threads")
    assert proc.returncode == 4, proc.stderr
    listed = [line.split()[0] for line in proc.stdout.splitlines()[1:]]
    assert listed == ["a", "c"]
    (line,) = proc.stderr.splitlines()
    assert line.startswith("thread b: ") and str(damaged) in line
    as_json = cli(root, "threads", "--json")
    assert as_json.returncode == 4 and [t["thread_id"] for t in json.loads(as_json.stdout)] == ["a", "c"]


def test_a_file_that_does_not_read_says_how_git_gives_it_back(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    root = repo / ".langgraph"
    chat(root, "t", "one", "two")
    commit_all(repo, "state")
    commit = subprocess.run(
        ["git", "-C", str(repo), "log", "-1", "--format=%h"], capture_output=True, text=True, check=True
    )
    damaged = checkpoint_files(root, "t")[-1]
    damaged.write_text("{ not json", encoding="utf-8")
    proc = cli(root, "show", "t", cwd=repo)
    assert proc.returncode == 4
    assert f"git checkout {commit.stdout.strip()} -- {damaged}" in proc.stderr


def test_a_root_given_without_state_names_the_roots_below_it_each_once(tmp_path: Path) -> None:
    """``--root`` at a folder that holds no state: the error names the ``.langgraph`` inside
    it once (not again among the others) and the other roots below that folder, wherever
    the command runs from."""
    work = tmp_path / "work"
    chat(work / ".langgraph", "t", "hi")
    chat(work / "sub" / ".langgraph", "u", "hi")
    elsewhere = tmp_path / "elsewhere"
    chat(elsewhere / ".langgraph", "v", "hi")
    out = cli(work, "threads", cwd=elsewhere)
    assert out.returncode == 3, out.stderr
    assert out.stderr.count(str(work / ".langgraph")) == 1, out.stderr
    assert "sub/.langgraph" in out.stderr and "elsewhere" not in out.stderr.replace(str(work), ""), out.stderr


def test_a_saver_outside_any_repository_says_where_its_new_state_goes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with caplog.at_level(logging.WARNING, logger="langgraph_checkpoint_repo.saver"):
        RepoSaver()
        RepoSaver()
    said = [r.getMessage() for r in caplog.records if "no git work tree" in r.getMessage()]
    assert said == [said[0]] and str(tmp_path / ".langgraph") in said[0]
    caplog.clear()
    inside = init_repo(tmp_path / "repo")
    monkeypatch.chdir(inside)
    with caplog.at_level(logging.WARNING, logger="langgraph_checkpoint_repo.saver"):
        RepoSaver()
    assert not [r for r in caplog.records if "no git work tree" in r.getMessage()]


def test_a_command_in_an_agent_server_app_reads_that_apps_state(tmp_path: Path) -> None:
    """Run from the folder of a ``langgraph.json`` (or below it), the command line reads the
    root the Agent Server writes (beside it); one that finds nothing says where it looked
    and which other roots hold state."""
    repo = init_repo(tmp_path / "repo")
    app = repo / "examples" / "server"
    app.mkdir(parents=True)
    (app / "langgraph.json").write_text("{}", encoding="utf-8")
    chat(app / ".langgraph", "served", "hello")
    env = {k: None for k in ("LANGGRAPH_REPO_ROOT",)}
    here = cli(None, "threads", cwd=app, env=env)
    assert here.returncode == 0 and "served" in here.stdout, here.stderr
    deeper = app / "src"
    deeper.mkdir()
    assert "served" in cli(None, "threads", cwd=deeper, env=env).stdout
    top = cli(None, "show", "served", cwd=repo, env=env)
    assert top.returncode == 3
    assert "root found at the top of the git work tree" in top.stderr
    assert os.path.join("examples", "server", ".langgraph") in top.stderr


def test_prune_keep_last_leaves_the_kept_checkpoints_readable_from_few_files(tmp_path: Path) -> None:
    """prune --keep-last 3 of a long chat: each list channel of the kept checkpoints reads
    from one value file, not a rescued link per removed checkpoint, and reads back the same."""
    root = tmp_path / "root"
    chat(root, "t", *(f"turn {i}" for i in range(16)))  # 33 checkpoints, one append chain
    saver = RepoSaver(root)
    before = [(s.config, s.values) for s in chat_graph(saver).get_state_history(cfg("t"), limit=3)]
    proc = cli(root, "prune", "--keep-last", "3", "--yes")
    assert proc.returncode == 0, proc.stderr
    tdir = root / "threads" / "t"
    assert len(checkpoint_files(root, "t")) == 3
    values = sorted(p.name.split("@")[0] for p in (tdir / "values").iterdir())
    assert values.count("messages") == 1, values
    assert len(values) <= 3, values  # messages and the two bookkeeping channels at most
    after = [(s.config, s.values) for s in chat_graph(RepoSaver(root)).get_state_history(cfg("t"))]
    assert after == before
    assert cli(root, "validate").returncode == 0
    assert cli(root, "fsck").returncode == 0


def test_a_damaged_link_of_a_chain_names_the_file_the_thread_and_the_way_back(tmp_path: Path) -> None:
    """An old checkpoint the newest message list is rebuilt through, made invalid JSON: the
    app's read names that file, the thread and checkpoint that needed it and how to restore
    it; fsck lists the file."""
    repo = init_repo(tmp_path / "repo")
    root = repo / ".langgraph"
    chat(root, "t", *(f"turn {i}" for i in range(6)))
    commit_all(repo, "state")
    hosts = [p for p in checkpoint_files(root, "t") if "messages" in json.loads(p.read_text())["new_values"]]
    damaged = hosts[2]
    damaged.write_text("{ not json", encoding="utf-8")
    newest = checkpoint_files(root, "t")[-1].stem
    with pytest.raises(FileFormatError) as caught:
        chat_graph(RepoSaver(root)).get_state(cfg("t"))
    message = str(caught.value)
    assert caught.value.path == str(damaged)
    assert f"checkpoint {newest} of thread 't' reads channel 'messages'" in message
    assert "restore it from git" in message and "langgraph-repo fsck" in message
    fsck = cli(root, "fsck", cwd=repo)
    assert fsck.returncode != 0 and str(damaged.relative_to(repo)) in fsck.stdout + fsck.stderr
    shown = cli(root, "show", "t", cwd=repo)
    commit = subprocess.run(
        ["git", "-C", str(repo), "log", "-1", "--format=%h"], capture_output=True, text=True, check=True
    ).stdout.strip()
    restore = f"git checkout {commit} -- {damaged}"
    assert shown.returncode == 4 and shown.stderr.count(restore) == 1, shown.stderr
    listed = cli(root, "threads", cwd=repo)  # the whole-root command's line for the thread says it too
    assert listed.returncode == 4 and restore in listed.stderr, listed.stderr


def test_export_of_several_threads_goes_on_past_a_broken_one(tmp_path: Path) -> None:
    """export copies every thread that reads, names the one that does not on its own line,
    writes nothing of it, and exits non-zero; asked for that thread alone it is one error."""
    root = tmp_path / "root"
    for thread in ("a", "b", "c"):
        chat(root, thread, "one", "two")
    damaged = checkpoint_files(root, "b")[-1]
    damaged.write_text("{ not json", encoding="utf-8")
    db = tmp_path / "out.db"
    proc = cli(root, "export", f"sqlite:///{db}")
    assert proc.returncode == 4, proc.stderr
    assert proc.stdout.startswith("copied 2 threads") and "1 not copied" in proc.stdout
    (line,) = proc.stderr.splitlines()
    assert line.startswith("thread b: ") and str(damaged) in line
    with closing(sqlite3.connect(db)) as conn:
        copied = {row[0] for row in conn.execute("select distinct thread_id from checkpoints")}
    assert copied == {"a", "c"}
    alone = cli(root, "export", f"sqlite:///{tmp_path / 'alone.db'}", "-t", "b")
    assert alone.returncode == 4 and alone.stderr.startswith("langgraph-repo: error: ")


def test_a_table_into_a_pipe_keeps_each_row_on_one_line(tmp_path: Path) -> None:
    """Into a pipe, ``threads`` prints one line per thread however wide the row (docs/cli.md,
    "Output": lines not wrapped), so ``grep`` and ``awk`` see whole rows. Before, a row wider
    than 160 columns had its last cell wrapped onto a line of its own."""
    root = tmp_path / "root"
    long_id = "a-thread-whose-id-alone-takes-up-a-good-part-of-the-line-0123456789"
    ask_graph(RepoSaver(root, durable=False)).invoke({"log": []}, cfg(long_id))
    chat(root, "t", "hello")
    proc = cli_in_process("--root", root, "threads")
    assert proc.exit_code == 0, proc.output
    lines = proc.stdout.splitlines()
    assert [line.split()[0] for line in lines] == ["thread", long_id, "t"]
    assert len(lines[1]) > 160 and lines[1].endswith("chars)"), lines[1]
