"""``langgraph-repo git-setup`` and the textconv driver, in real git repositories (docs/review.md).

A ``create_agent`` tool-calling agent (a fake chat model) writes turns that are committed; git
itself is then asked for ``check-attr``, ``diff``, ``log -p`` and ``show``, so what is checked is
what a person sees. The driver is also run on files of every kind, hostile ones included.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from bench.agent_graphs import build_create_agent, user_message

from graphs import BIG_TEXT, big_graph, cfg, chain_graph
from helpers import cli
from langgraph_checkpoint_repo import RepoSaver
from langgraph_checkpoint_repo.cli.gitsetup import BEGIN, END, attribute_line, driver_command
from langgraph_checkpoint_repo.review import textconv
from test_git import commit_all, git, init_repo

THREAD = "support-1"
ATTRS = "linguist-generated=true gitlab-generated diff=langgraph-repo"
#: what one turn of the agent says (turn 2 of bench/agent_graphs.py), as the driver shows it
TURN_2 = [
    "user: Where is my order A-1002? It was due last week. [turn-2-meadow]",
    'ai: → calls lookup_order({"order_id":"A-1002"})',
    "tool lookup_order [call-2]: Order A-1002: shipped, arriving in 3 days.",
    "ai: Good news: Order A-1002: shipped, arriving in 3 days.",
]


def turn(root: Path, n: int, thread: str = THREAD) -> None:
    build_create_agent(RepoSaver(root, durable=False)).invoke({"messages": [user_message(n)]}, cfg(thread))


def setup(repo: Path, *args: str, root: Path | None = None, cwd: Path | None = None) -> str:
    proc = cli(root, "git-setup", *args, cwd=cwd or repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def local_config(repo: Path) -> list[str]:
    return git(repo, "config", "--local", "--list").stdout.splitlines()


def attrs(repo: Path, path: str) -> dict[str, str]:
    out = git(repo, "check-attr", "linguist-generated", "gitlab-generated", "diff", "--", path).stdout
    return {line.split(": ")[1]: line.split(": ")[2] for line in out.splitlines()}


def added_lines(diff: str) -> list[str]:
    """The lines a diff adds or removes (not its file headers)."""
    return [ln for ln in diff.splitlines() if ln[:1] in "+-" and not ln.startswith(("+++ ", "--- "))]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """main: a README and the agent's first turn, committed."""
    repo = init_repo(tmp_path / "repo")
    (repo / "README.md").write_text("app\n", encoding="utf-8")
    turn(repo / ".langgraph", 1)
    commit_all(repo, "turn 1")
    return repo


def state_file(repo: Path, folder: str = "checkpoints") -> str:
    files = git(repo, "ls-files", f".langgraph/threads/{THREAD}/{folder}").stdout.split()
    return files[-1]


# ----------------------------------------------------------------------------
# the goal: one turn, readable, each message once; raw JSON collapsed on the forge
# ----------------------------------------------------------------------------
def test_git_diff_of_one_agent_turn_shows_each_message_once_in_at_most_60_lines(repo: Path) -> None:
    setup(repo)
    commit_all(repo, "git-setup")
    turn(repo / ".langgraph", 2)
    commit_all(repo, "turn 2")
    diff = git(repo, "diff", "HEAD~1", "HEAD").stdout
    changed = added_lines(diff)
    for said in TURN_2:
        assert sum(said in line for line in changed) == 1, (said, diff)
    assert len(diff.splitlines()) <= 60, diff  # the whole output, git's file headers included
    for bookkeeping in ("channel_versions", "versions_seen", '"$ref"', "00000000000000000000"):
        assert bookkeeping not in diff
    assert sum(line.startswith("+checkpoint ") for line in changed) == 5
    raw = git(repo, "diff", "--no-textconv", "HEAD~1", "HEAD").stdout
    # format 4: a delta lists only the versions that changed, always some versions seen
    assert "versions_seen" in raw and len(added_lines(raw)) > 5 * len(changed)


def test_state_files_are_marked_generated_for_the_forge_and_nothing_else_is(repo: Path) -> None:
    out = setup(repo)
    assert ".gitattributes: added /.langgraph/threads/** " + ATTRS in out
    # a turn leaves only checkpoint files (format 4): the other folders by a name they may hold
    others = [f".langgraph/threads/{THREAD}/{f}/x.json" for f in ("objects", "writes")]
    for path in (state_file(repo), *others):
        assert attrs(repo, path) == {
            "linguist-generated": "true",
            "gitlab-generated": "set",
            "diff": "langgraph-repo",
        }
    assert set(attrs(repo, "README.md").values()) == {"unspecified"}
    assert set(attrs(repo, ".langgraph/.gitignore").values()) == {"unspecified"}
    config = local_config(repo)
    assert "diff.langgraph-repo.cachetextconv=true" in config
    (textconv_line,) = [c for c in config if c.startswith("diff.langgraph-repo.textconv=")]
    assert textconv_line.endswith(f" --view {textconv.VIEW}")


def test_git_log_p_and_git_show_print_state_files_through_the_driver_and_cache_it(repo: Path) -> None:
    setup(repo)
    checkpoint = Path(state_file(repo)).stem
    log = git(repo, "log", "-p", "-1").stdout
    show = git(repo, "show", "HEAD").stdout
    for out in (log, show):
        assert f"+checkpoint {checkpoint} step " in out
        said = "user: Where is my order A-1001? It was due last week. [turn-1-lantern]"
        assert any(line.startswith("+") and said in line for line in out.splitlines())
        assert "channel_versions" not in out
    cache = git(repo, "rev-parse", "--verify", "--quiet", "refs/notes/textconv/langgraph-repo", check=False)
    assert cache.returncode == 0  # cachetextconv: git kept the converted text
    assert "channel_versions" in git(repo, "show", "--no-textconv", "HEAD").stdout


# ----------------------------------------------------------------------------
# idempotent, undone exactly, a root in a subfolder, refusals
# ----------------------------------------------------------------------------
USER_ATTRS = "# mine\n*.png binary\n"


def test_git_setup_twice_changes_nothing_and_keeps_the_users_lines(repo: Path) -> None:
    (repo / ".gitattributes").write_text(USER_ATTRS, encoding="utf-8")
    setup(repo)
    first = (repo / ".gitattributes").read_bytes()
    assert first.decode().startswith(USER_ATTRS)
    config = local_config(repo)
    assert "nothing to change: already set up" in setup(repo)
    assert (repo / ".gitattributes").read_bytes() == first
    assert local_config(repo) == config
    text = first.decode()
    assert text.count(BEGIN) == 1 and text.count(END) == 1 and text.count(ATTRS) == 1


def test_undo_removes_exactly_its_lines_its_config_and_gits_cache(repo: Path) -> None:
    (repo / ".gitattributes").write_text(USER_ATTRS, encoding="utf-8")
    git(repo, "config", "--local", "diff.mine.textconv", "cat")
    before = local_config(repo)
    setup(repo)
    with open(repo / ".gitattributes", "a", encoding="utf-8") as fh:
        fh.write("*.jpg binary\n")  # the user's, after the block
    git(repo, "log", "-p")  # fills git's cache of converted text
    out = setup(repo, "--undo")
    assert "removed /.langgraph/threads/**" in out and "removed diff.langgraph-repo" in out
    assert "removed /.langgraph/store/** merge=langgraph-repo-item" in out
    assert "removed merge.langgraph-repo-item" in out
    assert (repo / ".gitattributes").read_text(encoding="utf-8") == USER_ATTRS + "*.jpg binary\n"
    assert local_config(repo) == before
    cache = git(repo, "rev-parse", "--verify", "--quiet", "refs/notes/textconv/langgraph-repo", check=False)
    assert cache.returncode != 0
    assert "nothing to change" in setup(repo, "--undo")
    assert "channel_versions" in git(repo, "show", "HEAD").stdout  # git shows the JSON again


def test_undo_removes_a_gitattributes_it_created(repo: Path) -> None:
    setup(repo)
    assert (repo / ".gitattributes").is_file()
    setup(repo, "--undo")
    assert not (repo / ".gitattributes").exists()
    assert git(repo, "status", "--porcelain").stdout == ""


def test_a_root_in_a_subfolder_gets_its_own_line_at_the_top(repo: Path) -> None:
    """Two roots, one in a folder with a space and a glob character in its name: each its own
    line in the top-level .gitattributes, relative to the top; undo of one keeps the other."""
    app = repo / "apps" / "bot [v2] state"
    root = app / ".langgraph"
    turn(root, 1, thread="sub")
    commit_all(repo, "sub turn")
    setup(repo, root=root, cwd=app)  # run from the subfolder
    setup(repo)  # and the default root
    text = (repo / ".gitattributes").read_text(encoding="utf-8")
    assert attribute_line("apps/bot [v2] state/.langgraph") in text
    assert '"/apps/bot \\\\[v2] state/.langgraph/threads/**"' in text  # C-quoted, [ escaped
    sub_file = git(repo, "ls-files", str(root / "threads" / "sub" / "checkpoints")).stdout.splitlines()[-1]
    assert attrs(repo, sub_file)["linguist-generated"] == "true"
    assert attrs(repo, "apps/bot v state/.langgraph/threads/x/y.json")["diff"] == "unspecified"
    assert "+checkpoint " in git(repo, "show", "HEAD", "--", sub_file).stdout
    setup(repo, "--undo", root=root)
    assert attrs(repo, sub_file)["linguist-generated"] == "unspecified"
    assert attrs(repo, state_file(repo))["linguist-generated"] == "true"
    assert any(c.startswith("diff.langgraph-repo.textconv=") for c in local_config(repo))


#: line breaks of every kind (git's: \n; Python's splitlines: all of them), and a tab
BREAKS = {"lf": "\n", "cr": "\r", "crlf": "\r\n", "vt": "\x0b", "nel": "\x85", "ls": "\u2028", "tab": "\t"}


@pytest.mark.parametrize("brk", BREAKS.values(), ids=BREAKS.keys())
def test_a_line_break_in_the_roots_path_stays_inside_its_gitattributes_line(repo: Path, brk: str) -> None:
    """A root in a folder named ``state<break>README.md export-ignore x``: its line was
    C-quoted with the break raw, so git read the rest as a line of its own, giving README.md
    ``export-ignore`` and the driver, and Python's splitlines cut the block apart (a second
    run added the line again, --undo left pieces). Now every character that is not printable
    is an octal escape: each line of the block is one line, git matches the root's files with
    it, README.md gets nothing, a second run changes nothing and --undo removes the file."""
    folder = repo / f"state{brk}README.md export-ignore x"
    root = folder / ".langgraph"
    turn(root, 1, thread="odd")
    commit_all(repo, "a root whose folder name holds a line break")
    setup(repo, root=root)
    text = (repo / ".gitattributes").read_bytes().decode("utf-8")
    lines = text.split("\n")
    assert lines[0].startswith(BEGIN) and lines[3] == END and lines[4:] == [""], text
    assert all(line.isprintable() for line in lines), text
    assert attribute_line(root.relative_to(repo).as_posix()) == lines[1]
    state = min((root / "threads" / "odd" / "checkpoints").glob("*.json")).relative_to(repo).as_posix()
    assert (
        attrs(repo, state)["linguist-generated"] == "true" and attrs(repo, state)["diff"] == "langgraph-repo"
    )
    readme = git(repo, "check-attr", "export-ignore", "linguist-generated", "diff", "--", "README.md").stdout
    assert readme.count("unspecified") == 3, readme
    assert "nothing to change: already set up" in setup(repo, root=root)
    setup(repo, "--undo", root=root)
    assert not (repo / ".gitattributes").exists()


def test_git_config_values_from_a_path_cannot_add_config(tmp_path: Path, repo: Path) -> None:
    """The driver commands name this install's files (a script, the textconv's entry) by
    absolute path: a folder named with a line break and a config section
    (``bin\n[core]\n\tfsmonitor = …``) stays inside its value, which git quotes; no key is
    added and the value reads back whole. (git quotes it itself: this checks the class, it did
    not fail before.)"""
    from langgraph_checkpoint_repo.cli.gitsetup import _set_config, merge_command

    scripts = tmp_path / "bin\n[core]\n\tfsmonitor = touch pwned\n"
    scripts.mkdir()
    for name in ("langgraph-repo-textconv", "langgraph-repo-merge-item", "textconv_entry.py"):
        (scripts / name).write_text("#!/bin/sh\n", encoding="utf-8")
        (scripts / name).chmod(0o755)

    def keys() -> set[str]:
        return set(git(repo, "config", "--local", "--list", "--name-only", "-z").stdout.split("\0")) - {""}

    before = keys()
    command, merge = driver_command(scripts / "textconv_entry.py"), merge_command([scripts])
    assert str(scripts) in command
    _set_config(repo, command, merge)
    assert keys() - before == {
        "diff.langgraph-repo.textconv",
        "diff.langgraph-repo.cachetextconv",
        "merge.langgraph-repo-item.name",
        "merge.langgraph-repo-item.driver",
    }
    assert "core.fsmonitor" not in keys()
    got = git(repo, "config", "--local", "--get", "diff.langgraph-repo.textconv").stdout
    assert got == command + "\n"


def test_git_setup_outside_a_git_work_tree_is_one_line_and_exit_3(tmp_path: Path) -> None:
    loose = tmp_path / "loose"
    turn(loose / ".langgraph", 1)
    proc = cli(loose / ".langgraph", "git-setup", cwd=loose)
    assert proc.returncode == 3, proc.stderr
    assert "not in a git work tree" in proc.stderr and proc.stderr.count("\n") == 1
    assert not (loose / ".gitattributes").exists()


def test_git_setup_refuses_a_symlinked_gitattributes(repo: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("not yours\n", encoding="utf-8")
    (repo / ".gitattributes").symlink_to(elsewhere)
    for args in ([], ["--undo"]):
        proc = cli(None, "git-setup", *args, cwd=repo)
        assert proc.returncode == 5, proc.stderr
        assert "is a symlink" in proc.stderr and proc.stderr.count("\n") == 1
    assert elsewhere.read_text(encoding="utf-8") == "not yours\n"
    assert (repo / ".gitattributes").is_symlink()
    assert not any("langgraph-repo" in c for c in local_config(repo))


def test_git_setup_refuses_a_broken_block_and_leaves_the_file_alone(repo: Path) -> None:
    broken = f"*.png binary\n{BEGIN} (a copy, cut short)\n/x/** diff=langgraph-repo\n"
    (repo / ".gitattributes").write_text(broken, encoding="utf-8")
    for args in ([], ["--undo"]):
        proc = cli(None, "git-setup", *args, cwd=repo)
        assert proc.returncode == 5 and "broken" in proc.stderr and proc.stderr.count("\n") == 1
    assert (repo / ".gitattributes").read_text(encoding="utf-8") == broken


def test_git_setup_refuses_a_folder_that_holds_no_state(repo: Path) -> None:
    """Run with --root at the repository's top by mistake: refused, nothing written."""
    proc = cli(repo, "git-setup", cwd=repo)
    assert proc.returncode == 3 and "did you mean" in proc.stderr
    assert not (repo / ".gitattributes").exists()


# ----------------------------------------------------------------------------
# the driver: what it imports, where it imports from
# ----------------------------------------------------------------------------
HEAVY = ("typer", "rich", "langgraph", "langchain", "langchain_core", "pydantic", "jsonschema_rs")


def test_the_driver_never_imports_typer_rich_or_langgraph(repo: Path) -> None:
    code = (
        "import sys\n"
        "from langgraph_checkpoint_repo.review.textconv import main\n"
        "main([sys.argv[1]])\n"
        "print(' '.join(sorted(sys.modules)), file=sys.stderr)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(repo / state_file(repo))], capture_output=True, text=True, check=True
    )
    loaded = set(proc.stderr.split())
    assert proc.stdout.startswith("checkpoint ")
    assert "langgraph_checkpoint_repo.core.jsonread" in loaded  # the guard can see imports
    assert sorted(m for m in loaded if m.split(".")[0] in HEAVY) == []


#: every module of the package the driver imports (its entry file runs as ``__main__``):
#: textconv and its view's modules; git starts it once per file version it prints, so a module
#: added here costs every one of them
DRIVER_MODULES = {
    "langgraph_checkpoint_repo",
    "langgraph_checkpoint_repo.core",
    "langgraph_checkpoint_repo.core.cjson",
    "langgraph_checkpoint_repo.core.errors",
    "langgraph_checkpoint_repo.core.format",
    "langgraph_checkpoint_repo.core.format.fields",
    "langgraph_checkpoint_repo.core.format.inline",
    "langgraph_checkpoint_repo.core.format.markers",
    "langgraph_checkpoint_repo.core.format.messages",
    "langgraph_checkpoint_repo.core.format.onefile",
    "langgraph_checkpoint_repo.core.format.validation",
    "langgraph_checkpoint_repo.core.format.view",
    "langgraph_checkpoint_repo.core.jsonread",
    "langgraph_checkpoint_repo.core.jsontext",
    "langgraph_checkpoint_repo.core.masking",
    "langgraph_checkpoint_repo.review",
    "langgraph_checkpoint_repo.review.textconv",
}
#: standard modules the driver has no use for and a careless import brings in: ``site`` (and
#: with it every .pth file of the environment), typing (about a sixth of the driver's start),
#: pathlib (and urllib.parse, ipaddress), importlib (the package's lazy names), contextlib; and
#: on a state file holding no secret-looking text, ``re`` (with enum and functools, a third of
#: its start: a regex is compiled when a text needs one), the ``json`` package (which imports
#: ``re``: core/cjson.py calls its C half), collections, math and bisect
UNUSED = (
    "site",
    "typing",
    "contextlib",
    "pathlib",
    "urllib",
    "ipaddress",
    "importlib",
    "warnings",
    "dataclasses",
    "inspect",
    "re",
    "json",
    "enum",
    "functools",
    "collections",
    "math",
    "bisect",
)


def test_the_driver_as_git_runs_it_imports_the_standard_library_and_its_own_modules_only(
    repo: Path,
) -> None:
    """The command git-setup registers, run as git runs it, with ``-X importtime`` (the
    interpreter names every module an import loads): the package's modules it loads are
    exactly textconv's and its view's, everything else is the standard library, and no
    standard module it has no use for (``site`` included: the entry runs with ``-I -S``)."""
    python, *rest = shlex.split(driver_command())
    proc = subprocess.run(
        [python, "-X", "importtime", *rest, str(repo / state_file(repo))],
        capture_output=True,
        text=True,
        check=True,
    )
    assert proc.stdout.startswith("checkpoint ") and "ai: Good news: Order A-1001" in proc.stdout
    times = [line for line in proc.stderr.splitlines() if line.startswith("import time:")]
    loaded = {line.rsplit("|", 1)[1].strip() for line in times[1:]}  # the first line: the header
    ours = {m for m in loaded if m.split(".")[0] == "langgraph_checkpoint_repo"}
    assert ours == DRIVER_MODULES
    assert sorted(m for m in loaded - ours if m.split(".")[0] not in sys.stdlib_module_names) == []
    assert sorted(m for m in loaded if m.split(".")[0] in UNUSED) == []
    if any(importlib.util.find_spec(name) for name in ("_sha2", "_sha256")):  # CPython's own SHA-256
        assert sorted(loaded & {"hashlib", "_hashlib"}) == []  # OpenSSL, loaded for a few kilobytes


def run_registered(path: Path) -> tuple[str, set[str]]:
    """The view of ``path`` by the command git-setup registers, run as git runs it, and the
    modules it imported."""
    python, *rest = shlex.split(driver_command())
    proc = subprocess.run([python, "-X", "importtime", *rest, str(path)], capture_output=True, check=True)
    times = [line for line in proc.stderr.decode().splitlines() if line.startswith("import time:")]
    return proc.stdout.decode("utf-8"), {line.rsplit("|", 1)[1].strip() for line in times[1:]}


def test_the_driver_as_git_runs_it_masks_a_secret_and_escapes_control_characters(tmp_path: Path) -> None:
    """The screen of the registered command compiles a regex only where a line needs one: a
    state file holding a key is masked (``re`` imported then), and its escape sequence and
    bidi override escaped; a file that is no JSON, holding C0 and C1 controls and bytes that
    are not UTF-8, printed as it is with each escaped, and its ``\\ud800`` as the text it is
    (a lone surrogate never reaches a line: bytes are decoded with backslashreplace; the
    screen's escape of one is tests/test_masking_screen.py's)."""
    key = "sk-ant-" + "a" * 30
    tree = {
        "$fields": {"content": f"clear \x1b[2J screen {key} \u202e reversed\nsecond line", "type": "human"},
        "$method": "model_validate_json",
        "$pydantic": 2,
        "$type": ["langchain_core.messages.human", "HumanMessage"],
    }
    secret = tmp_path / "o.json"
    secret.write_text(json.dumps({"kind": "object", "schema_version": 3, "sha256": "0" * 64, "tree": tree}))
    got, loaded = run_registered(secret)
    assert got == "user: clear \\x1b[2J screen sk-a… \\u202e reversed\n  second line\n"
    assert "re" in loaded and "json" not in loaded
    hostile = tmp_path / "h.json"
    hostile.write_bytes(b'{"kind": "object", "x": "\\ud800 \x1b]0;title\x07 \xc2\x9b2J \xff"\n')
    got, loaded = run_registered(hostile)
    assert got == '{"kind": "object", "x": "\\ud800 \\x1b]0;title\\x07 \\x9b2J \\xff"\n'
    assert not {"re", "json", "enum"} & loaded  # not UTF-8: refused before a parse; no regex needed
    other = tmp_path / "p.json"  # strict JSON, but no state file: as it is, each control escaped
    other.write_text('{"kind": "sweets", "x": "\\u001b[31m \x9b \u2066 \u00a0 50% off desk-1"}\n', "utf-8")
    got, loaded = run_registered(other)
    assert got == '{"kind": "sweets", "x": "\\u001b[31m \\x9b \\u2066 \u00a0 50% off desk-1"}\n'
    assert not {"re", "json", "enum"} & loaded


PLANTED = "import pathlib; pathlib.Path({marker!r}).write_text('ran')\n"


@pytest.mark.parametrize("command", ["registered", "script", "fallback"])
def test_the_driver_never_imports_a_module_from_the_work_tree(
    repo: Path, tmp_path: Path, command: str
) -> None:
    """git runs the driver at the top of the work tree: a json.py or a package of our name
    planted there by a pull request must not run. Every command git-setup may register: the
    entry file (``-I -S``), and when it is not a file, the installed script or the snippet."""
    setup(repo)  # first: ``python -m`` itself would import a planted package of our name
    marker = tmp_path / "planted-code-ran"
    (repo / "json.py").write_text(PLANTED.format(marker=str(marker)), encoding="utf-8")
    (repo / "hashlib.py").write_text(PLANTED.format(marker=str(marker)), encoding="utf-8")
    (repo / "langgraph_checkpoint_repo").mkdir()
    (repo / "langgraph_checkpoint_repo" / "__init__.py").write_text(
        PLANTED.format(marker=str(marker)), encoding="utf-8"
    )
    if command != "registered":
        fallback = driver_command(None, search=None if command == "script" else [])
        assert ("langgraph-repo-textconv" in fallback) == (command == "script")
        git(repo, "config", "--local", "diff.langgraph-repo.textconv", fallback)
    out = git(repo, "show", "HEAD").stdout
    assert "+checkpoint " in out and "user: Where is my order A-1001?" in out
    assert not marker.exists()


# ----------------------------------------------------------------------------
# the driver on each kind of file, and on what is not one
# ----------------------------------------------------------------------------
def run_driver(path: Path) -> str:
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from langgraph_checkpoint_repo.review.textconv import main; sys.exit(main())",
            "--view",
            "1",
            str(path),
        ],
        capture_output=True,
        check=False,
    )
    assert proc.returncode == 0 and proc.stderr == b""
    return proc.stdout.decode("utf-8")


def test_the_driver_shows_each_kind_of_file(tmp_path: Path) -> None:
    root = tmp_path / "root"
    saver = RepoSaver(root, durable=False)
    big_graph(saver).invoke({"document": BIG_TEXT}, cfg("big"))
    latest = saver.get_tuple(cfg("big"))  # and a step that wrote, then stopped: a writes file
    assert latest is not None
    saver.put_writes(latest.config, [("document", "a pending edit")], "task-p")
    chain_graph(saver).invoke({"log": []}, cfg("chain"))
    assert cli(root, "prune", "chain", "--keep-last", "1", "--yes").returncode == 0
    large = next((root / "threads" / "big" / "large").glob("*.json"))
    writes = next((root / "threads" / "big" / "writes").glob("*.json"))
    got = run_driver(large)
    assert got.startswith(f"large value {large.stem[:12]}\nvalue: ") and "… (+" in got
    assert len(got.splitlines()[1]) < 300  # folded after 200 characters, with a digest
    for base in (root / "threads" / "chain" / "values").glob("@*.json"):  # format 4: kind base
        doc = json.loads(base.read_text())
        assert run_driver(base).startswith(f"bookkeeping of removed checkpoint {doc['checkpoint_id']} (#")
    for value in (root / "threads" / "chain" / "values").glob("[!@]*.json"):
        doc = json.loads(value.read_text())
        head, *body = run_driver(value).splitlines()
        assert head.startswith(f"value of channel {doc['channel']} at version {doc['version']} (#")
        if "value" in doc:
            # a list prune stored whole (its chain passed the removed checkpoints)
            whole = json.dumps(doc["value"]["json"], separators=(",", ":"), ensure_ascii=False)
            assert body == [f"{doc['channel']}: {whole}"]
        elif "append" in doc:
            assert body == [f"{doc['channel']}: +1 item: {json.dumps(doc['append']['items'][0])}"]
        else:
            assert body == [f"{doc['channel']}: (empty)"]
    doc = json.loads(writes.read_text())
    assert run_driver(writes).startswith(
        f"writes of checkpoint {doc['checkpoint_id']} task {doc['task_path']} (file #"
    )


def test_the_driver_shows_hostile_text_inert_and_masks_secrets(tmp_path: Path) -> None:
    """git prints the view to a terminal: an escape sequence in a message shows as text, a
    key is masked, a bidi override is escaped."""
    key = "sk-ant-" + "a" * 30
    tree = {
        "$fields": {"content": f"clear \x1b[2J screen {key} \u202e reversed\nsecond line", "type": "human"},
        "$method": "model_validate_json",
        "$pydantic": 2,
        "$type": ["langchain_core.messages.human", "HumanMessage"],
    }
    path = tmp_path / "o.json"
    path.write_text(json.dumps({"kind": "object", "schema_version": 3, "sha256": "0" * 64, "tree": tree}))
    got = run_driver(path)
    assert got == "user: clear \\x1b[2J screen sk-a… \\u202e reversed\n  second line\n"


@pytest.mark.parametrize(
    "data",
    [
        b"just text\nof a README\n",
        b'{"kind": "checkpoint", "kind": "object", "schema_version": 3}\n',  # duplicate key
        b'{"kind": "checkpoint", "schema_version": 3, "new_values": {"x": NaN}}\n',
        b'{"kind": "sweets", "schema_version": 3}\n',
        b"\xff\xfe not utf-8 \x9b2J\n",
    ],
    ids=["text", "duplicate-key", "nan", "other-kind", "binary"],
)
def test_a_file_that_is_not_a_state_file_is_printed_as_it_is(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "f.json"
    path.write_bytes(data)
    assert run_driver(path) == data.decode("utf-8", "backslashreplace")


def test_the_driver_never_follows_a_symlink(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("the contents\n")
    link = tmp_path / "link.json"
    link.symlink_to(secret)
    got = run_driver(link)
    assert "not followed" in got and "the contents" not in got


def test_a_change_the_view_folds_away_still_changes_a_line(repo: Path, tmp_path: Path) -> None:
    """Every part of a file is shown or stands in a digest on a shown line: an edit of a
    channel version (bookkeeping) changes the digest of the whole file on the first line, an
    edit of the end of a long value changes the view."""
    doc = json.loads((repo / state_file(repo)).read_text())
    before = tmp_path / "before.json"
    before.write_text(json.dumps(doc))
    versions = doc["checkpoint"].setdefault("channel_versions", {})  # a delta may list none
    versions[next(iter(versions), "messages")] = "00000099.00000005"
    after = tmp_path / "after.json"
    after.write_text(json.dumps(doc))
    old, new = run_driver(before).splitlines(), run_driver(after).splitlines()
    assert old[1:] == new[1:] and old[0] != new[0] and " (file #" in new[0]
    long = {"kind": "checkpoint", "schema_version": 3, "checkpoint_id": "c", "metadata": {}, "checkpoint": {}}
    views = []
    for end in ("a", "b"):
        long["new_values"] = {"notes": {"value": {"serde": "msgpack", "json": "x" * 500 + end}}}
        path = tmp_path / f"long-{end}.json"
        path.write_text(json.dumps(long))
        views.append(run_driver(path))
    assert views[0] != views[1] and "x" * 500 not in views[0]


def test_every_line_the_driver_prints_for_a_real_thread_is_screened(repo: Path) -> None:
    for path in git(repo, "ls-files", ".langgraph/threads").stdout.split():
        got = run_driver(repo / path)
        assert got and not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", got), path
