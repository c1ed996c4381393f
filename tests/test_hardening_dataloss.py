"""Data loss: what fsck, prune, delete and the command line may remove, and from where.

Three classes, each from an outside review, each with the callers it reaches:

* fsck took every dot-named entry for a leftover temp file: at the top of a git work tree
  ``fsck --repair`` removed ``.git``, ``.venv``, ``.env`` and ``.langgraph``; in a real root a
  user's ``.gitattributes`` and ``threads/t/.notes/``. It may only remove the saver's own
  temp names, in the folders where the saver writes them.
* a root without RepoSaver state was an empty success (``validate`` said ``ok: 0 files``);
  ``--root`` naming a file said "does not exist"; ``threads --root X`` was "No such option".
* a symlinked folder in a thread (``threads/t/large`` committed as a link to a folder outside
  the root) made prune delete every file in that folder. No delete path may follow a symlink.

Everything runs for real: compiled StateGraphs through RepoSaver on tmp_path, the command line
as a subprocess or through typer's CliRunner.
"""

from __future__ import annotations

import json
import os
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

from graphs import BIG_TEXT, big_graph, cfg, chat_graph, chat_root
from helpers import cli, cli_in_process, cli_process, one_line_error, tree
from langgraph_checkpoint_repo import RepoCheckpointError, RepoSaver, copy_threads
from langgraph_checkpoint_repo.core.checks import fsck, repair
from langgraph_checkpoint_repo.core.durable import write_files
from langgraph_checkpoint_repo.core.format.migrations import migrate_root
from langgraph_checkpoint_repo.core.threads import ThreadStore
from langgraph_checkpoint_repo.readmodel.reader import Reader


# ----------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------
def big_root(root: Path, thread_id: str = "t") -> RepoSaver:
    """A thread whose value lives in ``large/``, updated twice so an old large file can go."""
    saver = RepoSaver(root, durable=False)
    graph = big_graph(saver)
    graph.invoke({"document": BIG_TEXT}, cfg(thread_id))
    graph.invoke({"document": BIG_TEXT[::-1]}, cfg(thread_id))
    return saver


def precious(tmp_path: Path, name: str = "outside") -> Path:
    """A folder outside the root with files a user cares about (some named like state files)."""
    folder = tmp_path / name
    folder.mkdir()
    (folder / "thesis.txt").write_text("years of work")
    (folder / ("0" * 64 + ".json")).write_text('{"not": "state"}')
    (folder / "messages@1.json").write_text('{"not": "state either"}')
    (folder / "1f1ec0cf-0000-6000-8000-000000000000.json").write_text("{}")
    return folder


def link(path: Path, target: Path) -> None:
    """Replace ``path`` (a folder of the layout) by a symlink to ``target``, as a commit can."""
    if path.is_dir() and not path.is_symlink():
        for child in sorted(path.rglob("*"), reverse=True):
            child.rmdir() if child.is_dir() else child.unlink()
        path.rmdir()
    path.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, path, target_is_directory=target.is_dir())


def checkpoint_count(root: Path, thread_id: str = "t") -> int:
    return len(list((root / "threads" / thread_id / "checkpoints").glob("*.json")))


def repo_top(tmp_path: Path) -> Path:
    """The top of a git work tree with the usual dot entries and real state in .langgraph."""
    top = tmp_path / "repo"
    top.mkdir()
    (top / ".git" / "objects").mkdir(parents=True)
    (top / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (top / ".venv" / "bin").mkdir(parents=True)
    (top / ".venv" / "bin" / "python").write_text("#!/bin/sh\n")
    (top / ".env").write_text("OPENAI_API_KEY=not-a-real-one\n")
    (top / ".gitignore").write_text(".venv/\n.env\n")
    (top / "README.md").write_text("# my agent\n")
    chat_root(top / ".langgraph")
    return top


# ----------------------------------------------------------------------------
# 1. fsck removes only what the saver could have made
# ----------------------------------------------------------------------------
def test_fsck_repair_at_repo_top_never_removes_dotfiles(tmp_path: Path) -> None:
    """``--root . fsck --repair`` at the top of a git work tree is refused (no state there) and
    removes nothing; the repository's .git, .venv, .env and .langgraph all stay."""
    top = repo_top(tmp_path)
    before = tree(top)
    proc = cli(Path("."), "fsck", "--repair", cwd=top)
    one_line_error(proc, 3, f"no RepoSaver state under {top}", f"did you mean {top / '.langgraph'}?")
    assert tree(top) == before


def test_fsck_repair_through_the_api_at_repo_top_removes_only_its_own_temp_files(tmp_path: Path) -> None:
    """Even through the Python API (no root check), fsck at a repository top takes no dot entry
    for a temp file: .git, .venv, .env, .langgraph are reported as foreign and left alone."""
    top = repo_top(tmp_path)
    before = tree(top)
    reader = Reader(top)
    findings = fsck(reader.store)
    repair(reader.store, findings)
    assert tree(top) == before  # not even the repository's .gitignore was rewritten
    temp = [f for f in findings if f.kind == "temp"]
    assert temp == []
    foreign = {Path(f.path).name for f in findings if f.kind == "foreign"}
    assert {".git", ".venv", ".env", ".langgraph", ".gitignore"} <= foreign
    assert all(not f.repairable and not f.repaired for f in findings if f.kind == "foreign")


def test_fsck_repair_keeps_user_dotfiles_and_removes_only_the_savers_temp_names(tmp_path: Path) -> None:
    """In a real root, a user's .gitattributes, threads/t/.notes/, an editor's swap file and a
    file merely ending in .tmp are reported as foreign and kept; a temp file left by an
    interrupted write (the saver's own name pattern) and an interrupted delete's folder go."""
    root = tmp_path / ".langgraph"
    chat_root(root)
    tdir = root / "threads" / "t"
    user = {
        root / ".gitattributes": b"* -diff\n",
        tdir / ".notes" / "review.md": b"looked fine\n",
        tdir / "checkpoints" / ".notes.swp": b"vim swap\n",
        tdir / "scratch.tmp": b"mine\n",
        root / "threads" / ".keep": b"",
    }
    for path, data in user.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    (tdir / ".empty-user-folder").mkdir()
    # what the saver itself leaves when interrupted: a write's temp file, a delete's grave
    ckpt = sorted((tdir / "checkpoints").glob("*.json"))[-1]
    own_temp = ckpt.with_name(f".{ckpt.name}.0123456789ab.tmp")
    own_temp.write_bytes(b'{"half": ')
    grave = root / "threads" / ".gone.deleted.4242.1764519000000000000.tmp"
    (grave / "checkpoints").mkdir(parents=True)
    (grave / "checkpoints" / "x.json").write_text("{}")
    top_temp = root / "..gitignore.abcdef012345.tmp"
    top_temp.write_text("# lock")

    proc = cli(root, "fsck", "--repair", "--json")
    assert "Traceback" not in proc.stderr
    report = json.loads(proc.stdout)
    by_path = {f["path"]: f for f in report["findings"]}
    for path in [*user, tdir / ".empty-user-folder"]:
        assert path.exists(), path
    for path, data in user.items():
        assert path.read_bytes() == data
    for path in (root / ".gitattributes", tdir / ".notes", tdir / "checkpoints" / ".notes.swp"):
        f = by_path[str(path)]
        assert f["kind"] == "foreign" and not f["repairable"] and not f["repaired"], f
    assert not own_temp.exists() and not grave.exists() and not top_temp.exists()
    assert {by_path[str(p)]["kind"] for p in (own_temp, grave, top_temp)} == {"temp"}
    assert all(by_path[str(p)]["repaired"] for p in (own_temp, grave, top_temp))


def test_fsck_repair_leaves_a_thread_folder_that_holds_a_users_empty_folder(tmp_path: Path) -> None:
    """A thread folder without files but with a user's (empty) hidden folder is not an empty
    thread folder: neither it nor the user's folder is removed."""
    root = tmp_path / ".langgraph"
    chat_root(root)
    kept = root / "threads" / "kept"
    (kept / ".drafts").mkdir(parents=True)
    reader = Reader(root)
    findings = fsck(reader.store)
    repair(reader.store, findings)
    assert (kept / ".drafts").is_dir()
    assert [f.kind for f in findings if f.path == str(kept)] == []


def test_fsck_leftover_temp_of_a_real_interrupted_write_is_still_removed(tmp_path: Path) -> None:
    """The temp name durable.write_files makes, left by a write that failed before its rename, is
    found as the saver's own and removed by --repair (the narrowed rule still catches it)."""
    root = tmp_path / ".langgraph"
    chat_root(root)
    target = root / "threads" / "t" / "values" / "x@1.json"
    target.parent.mkdir()
    os.mkdir(target)  # os.replace of a file over a folder fails after the temp file is written
    real_unlink = os.unlink
    os.unlink = lambda p, *a, **k: None  # type: ignore[assignment]  # keep the temp, as a kill would
    try:
        with pytest.raises(OSError):
            write_files([(target, b"{}")], durable=False)
    finally:
        os.unlink = real_unlink
    os.rmdir(target)
    left = [p for p in target.parent.iterdir()]
    assert len(left) == 1 and left[0].name.startswith(".x@1.json.")
    reader = Reader(root)
    findings = fsck(reader.store)
    assert [(f.kind, f.path) for f in findings if f.kind == "temp"] == [("temp", str(left[0]))]
    repair(reader.store, findings)
    assert list(target.parent.iterdir()) == []


def test_fsck_repair_never_writes_through_a_symlinked_gitignore(tmp_path: Path) -> None:
    """A root .gitignore planted as a symlink to a file outside is neither read as the root's nor
    appended to: fsck reports it as not repairable and leaves the file it points at untouched."""
    root = tmp_path / ".langgraph"
    chat_root(root)
    victim = tmp_path / "victim.txt"
    victim.write_text("do not append here\n")
    (root / ".gitignore").unlink()
    os.symlink(victim, root / ".gitignore")
    reader = Reader(root)
    findings = fsck(reader.store)
    repair(reader.store, findings)
    assert victim.read_text() == "do not append here\n"
    assert (root / ".gitignore").is_symlink()
    [found] = [f for f in findings if f.kind == "gitignore"]
    assert "symlink" in found.message and not found.repairable and not found.repaired
    proc = cli(root, "fsck", "--repair")
    assert victim.read_text() == "do not append here\n"
    assert "Traceback" not in proc.stderr and proc.returncode == 1
    assert f"gitignore: {root / '.gitignore'}: is a symlink" in proc.stdout


# ----------------------------------------------------------------------------
# 2. a root without RepoSaver state is an error for every command
# ----------------------------------------------------------------------------
COMMANDS: list[list[str]] = [
    ["threads"],
    ["history", "t"],
    ["show", "t"],
    ["diff", "t"],
    ["tasks", "t"],
    ["render", "t"],
    ["validate"],
    ["fsck"],
    ["fsck", "--repair"],
    ["delete", "t", "--yes"],
    ["copy", "t", "u"],
    ["prune", "--keep-last", "1", "--yes"],
    ["migrate"],
    ["export", "sqlite:///{tmp}/out.db"],
    ["import", "sqlite:///{tmp}/in.db"],
    ["server", "sync", "--url", "http://127.0.0.1:9"],  # a sub-group's command; the root is checked first
]


def _args(command: list[str], tmp_path: Path) -> list[str]:
    return [a.replace("{tmp}", str(tmp_path)) for a in command]


def test_validate_at_repo_top_is_an_error_naming_the_dot_langgraph_folder(tmp_path: Path) -> None:
    """``validate`` at the repository top no longer says ``ok: 0 files`` with exit 0 (which a CI
    job accepts): it exits 3 and says where the state is."""
    top = repo_top(tmp_path)
    proc = cli(top, "validate")
    one_line_error(proc, 3, f"no RepoSaver state under {top}; did you mean {top / '.langgraph'}?")
    assert "ok:" not in proc.stdout + proc.stderr


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c))
def test_every_command_refuses_a_root_without_state(tmp_path: Path, command: list[str]) -> None:
    """Every command, at a folder that holds other things and no RepoSaver state, exits 3 with
    one line that says so and suggests .langgraph when there is one; nothing is written there."""
    top = repo_top(tmp_path)
    if command[0] == "import":
        with closing(sqlite3.connect(tmp_path / "in.db", check_same_thread=False)) as conn:
            chat_graph(SqliteSaver(conn)).invoke({"messages": [HumanMessage(content="hi")]}, cfg("s"))
    before = tree(top)
    proc = cli_in_process("--root", top, *_args(command, tmp_path))
    one_line_error(proc, 3, f"no RepoSaver state under {top}; did you mean {top / '.langgraph'}?")
    assert tree(top) == before


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c))
def test_a_folder_without_state_and_without_dot_langgraph_says_what_a_root_holds(
    tmp_path: Path, command: list[str]
) -> None:
    """Without a .langgraph to suggest, the error says what a root holds and what this one does."""
    folder = tmp_path / "src"
    folder.mkdir()
    (folder / "agent.py").write_text("print('hi')\n")
    proc = cli_in_process("--root", folder, *_args(command, tmp_path))
    line = one_line_error(proc, 3, f"no RepoSaver state under {folder}", "threads/", "agent.py")
    assert "did you mean" not in line
    assert sorted(p.name for p in folder.iterdir()) == ["agent.py"]


def test_an_empty_folder_is_not_a_root_but_an_initialised_empty_root_is(tmp_path: Path) -> None:
    """An empty folder holds no state (exit 3); a root RepoSaver has initialised and whose every
    thread was deleted is fine: validate says ok, threads lists none, both exit 0."""
    empty = tmp_path / "empty"
    empty.mkdir()
    one_line_error(
        cli_in_process("--root", empty, "validate"), 3, f"no RepoSaver state under {empty}", "is empty"
    )
    root = tmp_path / ".langgraph"
    saver = chat_root(root, turns=1)
    saver.delete_thread("t")
    assert not (root / "threads" / "t").exists()
    ok = cli_in_process("--root", root, "validate")
    assert ok.exit_code == 0 and "ok: 0 files" in ok.stderr, ok.stderr
    assert cli_in_process("--root", root, "threads").exit_code == 0
    fresh = tmp_path / "fresh"
    RepoSaver(fresh).delete_thread("nobody")  # initialises the root (.gitignore), no threads folder
    assert not (fresh / "threads").exists()
    assert cli_in_process("--root", fresh, "validate").exit_code == 0


def test_root_pointing_at_a_file_says_it_is_a_file(tmp_path: Path) -> None:
    """``--root`` naming a file says it is a file (exit 2), not that it does not exist."""
    root = tmp_path / ".langgraph"
    chat_root(root, turns=1)
    afile = root / "threads" / "t" / "checkpoints"
    afile = sorted(afile.glob("*.json"))[0]
    for command in (
        ["threads"],
        ["validate"],
        ["fsck"],
        ["migrate"],
        ["export", f"sqlite:///{tmp_path}/o.db"],
    ):
        proc = cli_in_process("--root", afile, *command)
        line = one_line_error(proc, 2, f"root {afile} is a file, not a folder")
        assert "does not exist" not in line
    missing = cli_in_process("--root", tmp_path / "nowhere", "threads")
    one_line_error(missing, 3, f"root {tmp_path / 'nowhere'} does not exist")


def test_import_makes_a_new_root_but_refuses_a_folder_holding_other_things(tmp_path: Path) -> None:
    """import may start a root (a new or empty folder); it never spreads threads/ over a folder
    that holds other things, such as the repository top."""
    db = tmp_path / "in.db"
    with closing(sqlite3.connect(db, check_same_thread=False)) as conn:
        chat_graph(SqliteSaver(conn)).invoke({"messages": [HumanMessage(content="hi")]}, cfg("s"))
    top = repo_top(tmp_path)
    before = tree(top)
    one_line_error(
        cli_in_process("--root", top, "import", f"sqlite:///{db}"), 3, f"no RepoSaver state under {top}"
    )
    assert tree(top) == before
    new = tmp_path / "new" / ".langgraph"
    assert cli_in_process("--root", new, "import", f"sqlite:///{db}").exit_code == 0
    assert RepoSaver(new).get_tuple(cfg("s")) is not None
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli_in_process("--root", empty, "import", f"sqlite:///{db}").exit_code == 0


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c))
def test_global_options_are_accepted_after_the_subcommand(tmp_path: Path, command: list[str]) -> None:
    """``langgraph-repo CMD ... --root X`` works like ``langgraph-repo --root X CMD ...``: the root
    after the command is the one used (here a folder without state, so every command says so)."""
    top = repo_top(tmp_path)
    proc = cli_in_process(*_args(command, tmp_path), "--root", top)
    assert "No such option" not in proc.stderr, proc.stderr
    one_line_error(proc, 3, f"no RepoSaver state under {top}")
    before = cli_in_process("--root", top, *_args(command, tmp_path))
    assert (before.exit_code, before.stderr) == (proc.exit_code, proc.stderr)


def test_root_after_the_subcommand_reads_that_root(tmp_path: Path) -> None:
    """``threads --root X --json`` lists X's threads, even with LANGGRAPH_REPO_ROOT set elsewhere
    and a different --root before the command (the one nearer the command wins)."""
    root = tmp_path / ".langgraph"
    chat_root(root, "only-here", turns=1)
    other = tmp_path / "other"
    chat_root(other, "elsewhere", turns=1)
    proc = cli_in_process("threads", "--root", root, "--json", env={"LANGGRAPH_REPO_ROOT": str(other)})
    assert proc.exit_code == 0, proc.stderr
    assert '"only-here"' in proc.stdout and "elsewhere" not in proc.stdout
    both = cli_in_process("--root", other, "threads", "--json", "--root", root)
    assert both.exit_code == 0 and '"only-here"' in both.stdout and "elsewhere" not in both.stdout
    sub = cli_process(None, "history", "only-here", "--root", root, "--json")  # and in a process
    assert sub.returncode == 0 and '"checkpoint_id"' in sub.stdout, sub.stderr


@pytest.mark.parametrize("where", ["before", "after"])
def test_version_is_accepted_before_and_after_the_subcommand(tmp_path: Path, where: str) -> None:
    """``--version`` prints the version, given first or after any command."""
    from importlib.metadata import version

    expected = f"langgraph-repo {version('langgraph-checkpoint-repo')}"
    calls = [["--version"]] if where == "before" else [[*c, "--version"] for c in COMMANDS]
    for args in calls:
        proc = cli_in_process(*_args(args, tmp_path))
        assert proc.exit_code == 0, (args, proc.stderr)
        assert proc.stdout.strip() == expected, (args, proc.stdout)
    assert cli_process(None, "--version").stdout.strip() == expected  # python -m prints it too


# ----------------------------------------------------------------------------
# 3. no delete path follows a symlink or removes anything outside the root
# ----------------------------------------------------------------------------
def test_saver_prune_never_deletes_through_a_symlinked_large_folder(tmp_path: Path, root: Path) -> None:
    """The review's case: threads/t/large committed as a link to a folder outside the root.
    saver.prune refuses, naming the link; every file outside and every checkpoint stays."""
    saver = chat_root(root)
    outside = precious(tmp_path)
    link(root / "threads" / "t" / "large", outside)
    before, thread_before = tree(outside), tree(root / "threads" / "t")
    with pytest.raises(RepoCheckpointError) as info:
        RepoSaver(root).prune(["t"])
    assert str(root / "threads" / "t" / "large") in str(info.value) and "symlink" in str(info.value)
    assert tree(outside) == before
    assert tree(root / "threads" / "t") == thread_before
    assert saver.get_tuple(cfg("t")) is not None


@pytest.mark.parametrize("folder", ["large", "values", "writes", "checkpoints"])
def test_cli_prune_refuses_a_symlinked_thread_folder_and_removes_nothing(
    tmp_path: Path, root: Path, folder: str, request: pytest.FixtureRequest
) -> None:
    """``prune --keep-last 1 --yes`` (and its dry run) with any folder of a thread linked outside:
    one line naming the link, no file removed inside or outside the root."""
    if folder == "writes":
        request.getfixturevalue("writes_alone")  # writes files made (and taken): the folder there
    chat_root(root)
    if folder == "values":
        RepoSaver(root).prune(["t"])  # makes values/
        chat_graph(RepoSaver(root, durable=False)).invoke(
            {"messages": [HumanMessage(content="more")]}, cfg("t")
        )
    outside = precious(tmp_path)
    path = root / "threads" / "t" / folder
    if folder in ("writes", "checkpoints"):
        # an identical copy outside, so the thread still reads the same through the link
        for child in sorted(path.iterdir()):
            (outside / child.name).write_bytes(child.read_bytes())
    link(path, outside)
    before, root_before = tree(outside), tree(root)
    for args in (["--dry-run"], ["--yes"]):
        proc = cli(root, "prune", "--keep-last", "1", *args)
        assert proc.returncode != 0, proc.stdout
        one_line_error(proc, proc.returncode, str(path))
        assert tree(outside) == before
        assert tree(root) == root_before


def test_delete_for_runs_never_deletes_through_a_symlinked_values_folder(tmp_path: Path, root: Path) -> None:
    """delete_for_runs (then garbage collection of values/) refuses a linked values/ folder."""
    chat_root(root, turns=2, run_id="run-1")
    chat_graph(RepoSaver(root, durable=False)).invoke(
        {"messages": [HumanMessage(content="later")]}, cfg("t", run_id="run-2")
    )
    outside = precious(tmp_path)
    link(root / "threads" / "t" / "values", outside)
    before, thread_before = tree(outside), tree(root / "threads" / "t")
    with pytest.raises(RepoCheckpointError, match="symlink") as info:
        RepoSaver(root).delete_for_runs(["run-1"])
    assert str(root / "threads" / "t" / "values") in str(info.value)
    assert tree(outside) == before
    assert tree(root / "threads" / "t") == thread_before


@pytest.mark.parametrize("where", ["threads", "thread", "inside"])
def test_delete_thread_never_removes_through_a_symlink(tmp_path: Path, root: Path, where: str) -> None:
    """delete_thread with threads/ linked outside, the thread folder linked outside, or a link
    inside the thread: refused naming the link; the linked folder, the link and the thread stay."""
    chat_root(root)
    outside = tmp_path / "outside"
    if where == "threads":
        os.rename(root / "threads", outside)
        os.symlink(outside, root / "threads", target_is_directory=True)
        named = root / "threads"
    elif where == "thread":
        os.rename(root / "threads" / "t", outside)
        os.symlink(outside, root / "threads" / "t", target_is_directory=True)
        named = root / "threads" / "t"
    else:
        precious(tmp_path)
        named = root / "threads" / "t" / "large"
        link(named, outside)
    before, root_before = tree(outside), tree(root)
    with pytest.raises(RepoCheckpointError, match="symlink") as info:
        RepoSaver(root).delete_thread("t")
    assert str(named) in str(info.value)
    assert tree(outside) == before
    assert tree(root) == root_before


def test_cli_delete_refuses_a_thread_with_a_symlinked_folder(tmp_path: Path, root: Path) -> None:
    """``delete t --yes`` with threads/t/writes linked outside: one line naming it, nothing gone."""
    chat_root(root)
    outside = precious(tmp_path)
    link(root / "threads" / "t" / "large", outside)
    before, root_before = tree(outside), tree(root)
    proc = cli(root, "delete", "t", "--yes")
    one_line_error(proc, 6, str(root / "threads" / "t" / "large"), "symlink")
    assert tree(outside) == before and tree(root) == root_before


def test_prune_strategy_delete_and_copy_threads_replace_refuse_a_symlinked_thread(
    tmp_path: Path, root: Path
) -> None:
    """prune(strategy="delete") and copy_threads(replace=True) delete through delete_thread: both
    refuse a thread holding a link and leave it as it was."""
    chat_root(root)
    outside = precious(tmp_path)
    link(root / "threads" / "t" / "large", outside)
    before, root_before = tree(outside), tree(root)
    with pytest.raises(RepoCheckpointError, match="symlink"):
        RepoSaver(root).prune(["t"], strategy="delete")
    source = InMemorySaver()
    chat_graph(source).invoke({"messages": [HumanMessage(content="other")]}, cfg("t"))
    with pytest.raises(RepoCheckpointError, match="symlink"):
        copy_threads(source, RepoSaver(root), ["t"], replace=True)
    assert tree(outside) == before and tree(root) == root_before


def test_copy_thread_refuses_a_source_with_a_symlinked_folder(tmp_path: Path, root: Path) -> None:
    """copy_thread reads the source through the same listing: a linked large/ is refused by name
    and no target thread is made (guard: this path already refused, with another message)."""
    big_root(root)
    outside = tmp_path / "outside"
    os.rename(root / "threads" / "t" / "large", outside)
    os.symlink(outside, root / "threads" / "t" / "large", target_is_directory=True)
    before = tree(outside)
    with pytest.raises(RepoCheckpointError) as info:
        RepoSaver(root).copy_thread("t", "u")
    assert str(root / "threads" / "t" / "large") in str(info.value)
    assert not (root / "threads" / "u" / "checkpoints").exists()
    assert tree(outside) == before


def test_garbage_collection_after_prune_keeps_a_linked_large_file(tmp_path: Path, root: Path) -> None:
    """A single large/ file planted as a link (to a file outside) is refused by prune's garbage
    collection rather than unlinked or followed."""
    big_root(root)
    victim = tmp_path / "victim.json"
    victim.write_text("precious")
    planted = root / "threads" / "t" / "large" / ("f" * 64 + ".json")
    os.symlink(victim, planted)
    root_before = tree(root)
    with pytest.raises(RepoCheckpointError, match="symlink") as info:
        RepoSaver(root).prune(["t"])
    assert str(planted) in str(info.value)
    assert victim.read_text() == "precious" and tree(root) == root_before


def test_fsck_repair_never_removes_through_a_symlinked_folder(tmp_path: Path, root: Path) -> None:
    """fsck --repair with a thread's values/ and large/ linked to a folder of look-alike files
    (orphan values, temp names): nothing outside is removed (guard: already held)."""
    chat_root(root)
    outside = precious(tmp_path)
    (outside / ".x.json.0123456789ab.tmp").write_text("looks like a temp file")
    os.symlink(outside, root / "threads" / "t" / "values", target_is_directory=True)
    os.symlink(outside, root / "threads" / "t" / "large", target_is_directory=True)
    before = tree(outside)
    proc = cli(root, "fsck", "--repair")
    assert "Traceback" not in proc.stderr and proc.returncode != 0
    assert tree(outside) == before


def test_migrate_refuses_a_symlinked_folder(tmp_path: Path, root: Path) -> None:
    """migrate with a thread folder linked outside writes nothing there (guard: already held)."""
    chat_root(root)
    outside = tmp_path / "outside"
    os.rename(root / "threads" / "t" / "checkpoints", outside)
    os.symlink(outside, root / "threads" / "t" / "checkpoints", target_is_directory=True)
    before = tree(outside)
    with pytest.raises(RepoCheckpointError):
        migrate_root(root)
    assert tree(outside) == before


def test_store_removals_and_listings_refuse_any_symlink_on_the_way(tmp_path: Path, root: Path) -> None:
    """The one place every delete goes through: files_in/value_files refuse a linked folder or a
    linked entry, remove_files a path through a link (checked for all paths before the first
    unlink), remove_tree a linked folder or a tree holding a link; each names the link."""
    chat_root(root)
    store = ThreadStore(root, durable=False)
    tdir = root / "threads" / "t"
    outside = precious(tmp_path)
    before = tree(outside)
    os.symlink(outside, tdir / "large", target_is_directory=True)
    with pytest.raises(RepoCheckpointError, match="symlink") as info:
        store.files.files_in(tdir / "large")
    assert str(tdir / "large") in str(info.value)
    own = sorted((tdir / "checkpoints").glob("*.json"))[0]
    with pytest.raises(RepoCheckpointError, match="symlink"):
        store.files.remove_files([own, tdir / "large" / "thesis.txt"])
    assert own.exists()  # checked before anything was removed
    with pytest.raises(RepoCheckpointError, match="outside"):
        store.files.remove_files([tmp_path / "outside" / "thesis.txt"])
    with pytest.raises(RepoCheckpointError, match="symlink"):
        store.files.remove_tree(tdir)
    assert tdir.is_dir() and (tdir / "large").is_symlink()
    os.unlink(tdir / "large")
    os.symlink(outside, tdir / "values", target_is_directory=True)
    with pytest.raises(RepoCheckpointError, match="symlink"):
        store.files.value_files(tdir)
    os.unlink(tdir / "values")
    (tdir / "values").mkdir()
    os.symlink(outside / "thesis.txt", tdir / "values" / "x@1.json")
    with pytest.raises(RepoCheckpointError, match="symlink") as info:
        store.files.value_files(tdir)
    assert str(tdir / "values" / "x@1.json") in str(info.value)
    other = root / "threads" / "u"
    other.mkdir()
    os.symlink(outside, root / "threads" / "v", target_is_directory=True)
    with pytest.raises(RepoCheckpointError, match="symlink"):
        store.files.remove_tree(root / "threads" / "v")
    assert tree(outside) == before
    store.files.remove_tree(other)  # an ordinary folder still goes
    assert not other.exists()


def test_prune_and_delete_still_work_without_symlinks(root: Path) -> None:
    """The checks refuse links only: an ordinary prune removes old checkpoints and unused large
    files, and an ordinary delete removes the thread."""
    saver = big_root(root)
    assert checkpoint_count(root) > 1
    saver.prune(["t"])
    assert checkpoint_count(root) == 1
    assert len(list((root / "threads" / "t" / "large").iterdir())) == 1
    saver.delete_thread("t")
    assert not (root / "threads" / "t").exists()
