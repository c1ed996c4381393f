"""Every command-line example in the docs, from a real run: ``python docs/examples.py [--check] [FILE...]``.

Without ``--check`` it rewrites the output of every marked block of README.md and docs/*.md
(or of the FILEs given) with what the commands print now; with ``--check`` it changes nothing
and exits 1, naming the file, the block and the difference, when a block no longer matches
(tests/test_docs_examples.py does the same in the default test run). ``--build`` first makes
the example state again by running the graphs (docs/example_graphs.py): only when the file
format or the graphs change; commit the result, and update the ids that marked commands name
(``--checkpoint``, ``--choose``, ``--from``: the run shows the error of an unknown id).

**The marker.** An HTML comment on the line just before a fenced block:

    <!-- langgraph-repo: run STATE [fresh] [input=ANSWER] -->
    ```console
    $ langgraph-repo threads
    (output, rewritten)
    $ echo $?
    0
    ```

Each line of the block that starts with ``$ `` is a command; the lines after it, up to the
next command, are its output: stdout and stderr in the order written, as a terminal shows
them, and ``input=ANSWER`` typed at a ``[y/N]`` question (shown after it, as on a terminal).
``langgraph-repo ...`` runs in this process (typer's test runner), also with ``| head -N``,
``| tail -N`` or ``> FILE`` after it and ``NAME=value`` before it; ``echo $?`` prints the
previous exit code; ``cd DIR`` changes the folder; any other command (``git``, ``cat``,
``sed``, ``ln``) runs in bash. A block that is one command's whole output (a Markdown page)
names the command in the marker instead: ``<!-- langgraph-repo: run review $ langgraph-repo
review main..work --markdown -->``.

A block without a marker is left alone. A ``$ langgraph-repo`` line followed by output in one
is an error (the output would not be checked), unless the line before the block says why it
cannot run here: ``<!-- langgraph-repo: not run: needs an Agent Server -->``. Commands whose
output differs on every run (timings, ``--progress``) are not shown with output.

**STATE** names the example state a block runs on (``SETUPS`` below). Blocks of one file with
the same STATE share one copy, in the order of the file, so a ``prune`` changes what later
blocks see; ``fresh`` starts from a new copy. Every copy is a git repository at
``<temp>/my-agent`` (commits with a fixed author and dates, so their hashes are the same on
every run), and its top is the commands' folder.

**Determinism.** The state is committed (docs/example-state/, made by real graphs), so
checkpoint ids, times and commit hashes are the same on every run. What still differs from
run to run is replaced, and only that:

1. the temporary folder holding the copy is shown as ``/home/ada`` (``/home/ada/my-agent``
   is the project);
2. the folder of this install's scripts (``git-setup`` registers the interpreter there) is
   shown as ``/path/to/.venv/bin``, and the folder this package is imported from (the driver's
   entry file is in it) as ``/path/to/site-packages``;
3. a checkpoint a command writes while the examples run (``edit``, ``heads --choose``,
   ``heads --merge``) gets a time-based id and the current time: the n-th new id of a copy is
   shown as the id LangGraph's ``uuid6`` gives n minutes after the newest checkpoint of the
   state, with the same step and node field ``n`` (``…-000000000001``), and its time as that
   time; a new writes file's id likewise.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from functools import cache
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TOP = HERE.parent
STATE = HERE / "example-state"
PROJECT = "my-agent"  # the example project's folder; its parent is shown as /home/ada
SHOWN_HOME = "/home/ada"
SHOWN_SCRIPTS = "/path/to/.venv/bin"
SHOWN_PACKAGES = "/path/to/site-packages"

MARKER = re.compile(r"^<!-- langgraph-repo: run (?P<args>.+?) -->\s*$")
NOT_RUN = re.compile(r"^<!-- langgraph-repo: not run: .+ -->\s*$")
FENCE = re.compile(r"^(?P<fence>`{3,})[\w-]*\s*$")
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
#: git's identity and clock for the commits of a copy, so their hashes never change
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Ada",
    "GIT_AUTHOR_EMAIL": "ada@example.com",
    "GIT_COMMITTER_NAME": "Ada",
    "GIT_COMMITTER_EMAIL": "ada@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}
#: what would steer the command line behind the examples' back (a root, colour, a width)
STEERING = (
    "LANGGRAPH_REPO_ROOT",
    "TTY_COMPATIBLE",
    "TTY_INTERACTIVE",
    "FORCE_COLOR",
    "COLUMNS",
    "LINES",
    "VISUAL",
    "EDITOR",
    "NO_COLOR",
)


@cache
def packages_folder() -> str:
    """The folder this package is imported from: site-packages, or an editable install's src/."""
    import langgraph_checkpoint_repo

    return str(Path(langgraph_checkpoint_repo.__file__).parent.parent)


def docs() -> list[Path]:
    """The files whose marked blocks are examples."""
    return [TOP / "README.md", *sorted(HERE.glob("*.md"))]


# ----------------------------------------------------------------------------
# the example state: a copy of what --build made, per STATE
# ----------------------------------------------------------------------------
def git(cwd: Path, *args: str, when: int = 0) -> str:
    """git in ``cwd`` with the fixed identity; ``when``: minutes after the fixed clock."""
    date = f"2026-12-01T12:{when:02d}:00+00:00"
    env = {**os.environ, **GIT_ENV, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True)
    return done.stdout


def new_repo(project: Path) -> None:
    """The example project: a git work tree holding the application's own module."""
    shutil.copytree(STATE / "project", project, ignore=shutil.ignore_patterns("__pycache__"))
    git(project, "init", "-q", "-b", "main")


def commit(project: Path, message: str, when: int = 0) -> None:
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", message, when=when)


def copy_root(name: str, project: Path) -> None:
    shutil.copytree(STATE / name, project / ".langgraph", dirs_exist_ok=True)


def setup_demo(project: Path) -> None:
    """docs/cli.md's state, committed: seven threads made by real graphs."""
    new_repo(project)
    copy_root("demo", project)
    commit(project, "the agent's state")


def setup_broken(project: Path) -> None:
    """The demo state, committed, then damaged: a checkpoint of refund-7 edited by hand (its
    parent a number), the latest of batch-1 truncated, account-1's latest from a newer release
    (schema_version one higher), the third and fourth checkpoints of support-42 lost, a temp
    file left by a crash in report-3."""
    from langgraph_checkpoint_repo.core.format.validation import SCHEMA_VERSION

    setup_demo(project)
    threads = project / ".langgraph" / "threads"

    def checkpoints(thread: str) -> list[Path]:
        return sorted((threads / thread / "checkpoints").glob("*.json"))

    edited = checkpoints("refund-7")[-1]
    doc = json.loads(edited.read_text())
    doc["parent_checkpoint_id"] = 7
    edited.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    cut = checkpoints("batch-1")[-1]
    cut.write_text(cut.read_text()[:200])
    newer = checkpoints("account-1")[-1]
    newer.write_text(
        newer.read_text().replace(
            f'"schema_version": {SCHEMA_VERSION}', f'"schema_version": {SCHEMA_VERSION + 1}'
        )
    )
    for lost in checkpoints("support-42")[2:4]:
        lost.unlink()
    (threads / "report-3" / "checkpoints" / ".1f1ec169-0000.json.8f2a1c3b9d04.tmp").write_text("{")


def setup_forks(project: Path) -> None:
    """docs/forks.md's state: two branches that both continued refund-7 and notes-3, merged."""
    new_repo(project)
    copy_root("forks", project)
    commit(project, "both branches merged")


def setup_secrets(project: Path) -> None:
    """A thread written with ``redact=False`` whose messages hold a (made-up) OpenAI key."""
    new_repo(project)
    copy_root("secrets", project)
    commit(project, "a key in the state")


def setup_review(project: Path) -> None:
    """docs/review.md's repository: ``main`` holds the agent's first turn, the branch ``work``
    its second, checked out."""
    new_repo(project)
    copy_root("review-1", project)
    commit(project, "turn 1", when=1)
    git(project, "checkout", "-q", "-b", "work")
    copy_root("review-2", project)
    commit(project, "turn 2", when=2)


def setup_review_merge(project: Path) -> None:
    """docs/review.md's pull request as CI sees it: ``main`` took another turn of the thread
    after ``work`` left it, and GitHub's merge of ``work`` into ``main`` is checked out."""
    setup_review(project)
    git(project, "checkout", "-q", "main")
    copy_root("review-3", project)
    commit(project, "another turn on main", when=3)
    git(project, "merge", "-q", "--no-ff", "-m", "Merge branch 'work'", "work", when=4)


def setup_desk(project: Path) -> None:
    """docs/review.md's support desk: ``main`` holds turns 1 and 2, branch ``feature`` (checked
    out) turn 3 asking for approval, the approval, then turns 4 and 5, a commit each."""
    new_repo(project)
    copy_root("desk-1", project)
    commit(project, "turns 1 and 2", when=1)
    git(project, "checkout", "-q", "-b", "feature")
    for when, (name, message) in enumerate(
        (
            ("desk-2", "turn 3: a refund, asked"),
            ("desk-3", "the refund approved"),
            ("desk-4", "turns 4 and 5"),
        ),
        2,
    ):
        copy_root(name, project)
        commit(project, message, when=when)


def setup_v2(project: Path) -> None:
    """A root an older release wrote (schema_version 2: tests/fixtures/v2), to migrate."""
    new_repo(project)
    shutil.copytree(TOP / "tests" / "fixtures" / "v2", project / ".langgraph")
    commit(project, "state of an older release")


def setup_profiles(project: Path) -> None:
    """docs/migrating.md's state migration: five customer threads of version 1 of
    ``myapp.profiles``, and the migration's rules beside them, committed on ``main``."""
    new_repo(project)
    shutil.copy(HERE / "example_profiles.py", project / "myapp" / "profiles.py")
    copy_root("profiles", project)
    (project / "profile-v2.toml").write_text(PROFILE_V2, encoding="utf-8")
    commit(project, "customer threads, state version 1")


PROFILE_V2 = """\
name = "profile-v2"

[rename]
notes = "summary"             # a channel
"profile.name" = "full_name"  # a field inside the profile channel's value

[default]
"profile.tier" = "free"       # a new field, filled where it is missing
"""


def setup_sqlite(project: Path) -> None:
    """A project with no repo files yet and the demo's threads in a SQLite file, ``agent.db``
    (put there by ``export``), to import from (docs/migrating.md)."""
    new_repo(project)
    elsewhere = project.parent / "exported" / ".langgraph"
    shutil.copytree(STATE / "demo", elsewhere)
    with isolated(project):  # account-1 holds myapp.state types: --allow imports them from here
        args = ["--root", str(elsewhere), "--allow", "myapp.state:*", "export", "sqlite:///agent.db"]
        code, output, _, _ = invoke(args, {}, None)
    assert code == 0, output
    shutil.rmtree(elsewhere.parent)
    commit(project, "the agent's SQLite file")


SETUPS: dict[str, Callable[[Path], None]] = {
    "demo": setup_demo,
    "broken": setup_broken,
    "forks": setup_forks,
    "secrets": setup_secrets,
    "review": setup_review,
    "review-merge": setup_review_merge,
    "desk": setup_desk,
    "v2": setup_v2,
    "sqlite": setup_sqlite,
    "profiles": setup_profiles,
}


# ----------------------------------------------------------------------------
# running the commands of a block
# ----------------------------------------------------------------------------
def uuid6_at(when: datetime, clock_seq: int, node: int) -> str:
    """The id LangGraph's uuid6 gives at ``when`` (its layout: langgraph.checkpoint.base.id)."""
    ticks = int((when - datetime(1582, 10, 15, tzinfo=timezone.utc)).total_seconds()) * 10_000_000
    value = ((ticks >> 12) & 0xFFFFFFFFFFFF) << 80 | 0x6 << 76 | (ticks & 0x0FFF) << 64
    value |= (0x8000 | (clock_seq & 0x3FFF)) << 48 | node & 0xFFFFFFFFFFFF
    text = f"{value:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


@cache
def committed_ids() -> frozenset[str]:
    """The ids in the names of the committed state's files: a command that copies them (import,
    copy) writes no new id."""
    folders = (STATE, TOP / "tests" / "fixtures" / "v2")
    return frozenset(i for folder in folders for p in folder.rglob("*.json") for i in UUID.findall(p.name))


def short_time(iso: str) -> str:
    return iso[:19].replace("T", " ")


@dataclass
class Session:
    """One copy of a STATE: its folder, the commands' folder, the last exit code, and the
    stand-ins of what commands wrote during the run (normalisation 3)."""

    base: Path  # shown as /home/ada
    cwd: Path
    code: int = 0
    names: set[str] = field(default_factory=set)  # ids in file names, at the start and since
    newest: datetime | None = None
    times: set[str] = field(default_factory=set)  # the state's own times, as shown
    swaps: dict[str, str] = field(default_factory=dict)

    @classmethod
    def start(cls, state: str, base: Path) -> Session:
        """A copy of ``state`` in ``base``; each state is set up once per run (in ``base``'s
        parent) and copied from there, its git repository included."""
        template = base.parent / "states" / state / PROJECT
        if not template.exists():
            template.parent.mkdir(parents=True)
            SETUPS[state](template)
        project = base / PROJECT
        shutil.copytree(template, project, symlinks=True)
        session = cls(base, project, names=set(committed_ids()))
        for path in session.files():
            session.names.update(UUID.findall(path.name))
            if path.parent.name == "checkpoints":
                try:
                    ts = json.loads(path.read_text(encoding="utf-8"))["checkpoint"]["ts"]
                except (ValueError, KeyError, TypeError):
                    continue  # damaged on purpose (the broken state)
                session.times.add(short_time(ts))
                when = datetime.fromisoformat(ts).replace(microsecond=0)
                session.newest = max(session.newest or when, when)
        return session

    def files(self) -> list[Path]:
        root = self.base / PROJECT / ".langgraph"
        return [p for p in root.glob("threads/**/*.json") if p.parent.name in ("checkpoints", "writes")]

    def note_new_files(self) -> None:
        """Stand-ins for the ids and times of checkpoints and writes written just now."""
        for path in sorted(self.files()):
            for real in UUID.findall(path.name):
                if real in self.names:
                    continue
                self.names.add(real)
                n = len([s for s in self.swaps if UUID.fullmatch(s)]) + 1
                when = (self.newest or datetime(2026, 1, 1, tzinfo=timezone.utc)) + timedelta(minutes=n)
                step = (
                    int(real[19:23], 16) & 0x3FFF
                    if path.parent.name == "checkpoints" and path.stem == real
                    else 0
                )
                self.swaps[real] = uuid6_at(when, step, n)
                if path.stem == real:
                    ts = json.loads(path.read_text(encoding="utf-8"))["checkpoint"]["ts"]
                    if short_time(ts) in self.times:  # its stand-in would replace the state's too
                        raise RuntimeError(f"{path.name} was written in a second of the state: run again")
                    self.swaps[ts] = when.isoformat()
                    self.swaps[short_time(ts)] = short_time(when.isoformat())

    def shown(self, text: str) -> str:
        """Output as the docs show it: normalisations 1 to 3."""
        for real, stand_in in self.swaps.items():
            text = text.replace(real, stand_in)
        for base in {str(self.base), os.path.realpath(self.base)}:
            text = text.replace(base, SHOWN_HOME)
        text = text.replace(packages_folder(), SHOWN_PACKAGES)
        return text.replace(sysconfig.get_path("scripts"), SHOWN_SCRIPTS)

    def run(self, line: str, answer: str | None) -> str:
        """One command line of a block; its output as a terminal shows it."""
        if line.strip() == "echo $?":
            return f"{self.code}\n"
        cwd = self.cwd
        rest = line
        moved = re.match(r"^cd (\S+)( && (.*))?$", line)
        if moved:
            target = (self.cwd / moved.group(1)).resolve()
            if moved.group(3) is None:
                self.cwd, self.code = target, 0
                return ""
            cwd, rest = target, moved.group(3)
        words = shlex.split(rest)
        env = {}
        while words and re.match(r"^[A-Z_]+=", words[0]):
            name, _, value = words.pop(0).partition("=")
            env[name] = value
        piped = [w for w in words if w in ("|", ";", "&&", "||", "<")]
        simple = not piped or (piped == ["|"] and words[-3] == "|")  # at most `| head -N`
        if words and words[0] == "langgraph-repo" and simple:
            output = self.in_process(words[1:], cwd, env, answer)
        else:
            path = os.pathsep.join([sysconfig.get_path("scripts"), os.environ.get("PATH", "")])
            proc = subprocess.run(
                ["bash", "-c", rest],
                cwd=cwd,
                env={**os.environ, **GIT_ENV, **env, "PATH": path},
                capture_output=True,
                text=True,
                input=answer,
            )
            self.code, output = proc.returncode, proc.stdout + proc.stderr
        self.note_new_files()
        return self.shown(output)

    def in_process(self, args: list[str], cwd: Path, env: dict[str, str], answer: str | None) -> str:
        """``langgraph-repo ARGS [| head -N | tail -N | > FILE]`` in this process."""
        head = tail = into = None
        if len(args) >= 3 and args[-3] == "|" and args[-2] == "head":
            head, args = int(args[-1].lstrip("-n")), args[:-3]
        elif len(args) >= 3 and args[-3] == "|" and args[-2] == "tail":
            tail, args = int(args[-1].lstrip("-n")), args[:-3]
        elif len(args) >= 2 and args[-2] == ">":
            into, args = cwd / args[-1], args[:-2]
        steering: dict[str, str | None] = dict.fromkeys(STEERING)
        with isolated(cwd):
            self.code, output, stdout, stderr = invoke(
                args, {**steering, **GIT_ENV, **env}, None if answer is None else answer + "\n"
            )
        if answer is not None:
            # CliRunner echoes the answer as a terminal does, and the command, whose input is
            # not a terminal, ends the question's line itself: shown once, as on a terminal
            return output.replace(f": {answer}\n\n", f": {answer}\n", 1)
        if head is not None:
            return "".join(stdout.splitlines(keepends=True)[:head]) + stderr
        if tail is not None:
            return stderr + "".join(stdout.splitlines(keepends=True)[-tail:])
        if into is not None:
            into.write_text(stdout, encoding="utf-8")
            return stderr
        return output


@cache
def command() -> Any:
    """The command line as click runs it, made once (typer's CliRunner makes it per call)."""
    import typer.main

    from langgraph_checkpoint_repo.cli import app

    return typer.main.get_command(app)


def invoke(args: list[str], env: dict[str, str | None], answer: str | None) -> tuple[int, str, str, str]:
    """``langgraph-repo ARGS`` in this process, as typer's CliRunner runs it: its exit code, what
    a terminal shows (stdout and stderr as they were written), stdout, stderr. An exception the
    command line does not turn into an exit code is raised."""
    from typer.testing import CliRunner

    code = 0
    with CliRunner().isolation(input=answer, env=env) as (out, err, mixed):
        for stream in (sys.stdout, sys.stderr):  # in the order written, as on a terminal
            stream.reconfigure(write_through=True)  # type: ignore[union-attr]
        try:
            command().main(args=args, prog_name="langgraph-repo")
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
        return code, *(s.getvalue().decode("utf-8") for s in (mixed, out, err))  # type: ignore[return-value]


@contextmanager
def isolated(cwd: Path) -> Iterator[None]:
    """Run a command in ``cwd`` and leave this process as it was: the current folder, sys.path
    and the modules ``--allow`` imported from the example project."""
    before_cwd, before_path, before_modules = os.getcwd(), list(sys.path), set(sys.modules)
    writes_bytecode = sys.dont_write_bytecode
    sys.dont_write_bytecode = True  # no __pycache__ in the example project
    os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(before_cwd)
        sys.path[:] = before_path
        sys.dont_write_bytecode = writes_bytecode
        for name in set(sys.modules) - before_modules:
            if name == "myapp" or name.startswith("myapp."):
                del sys.modules[name]


# ----------------------------------------------------------------------------
# the blocks of a file
# ----------------------------------------------------------------------------
@dataclass
class Block:
    """A marked fenced block: ``start``/``end`` are the indexes of its first and last content
    lines' neighbours (the fence lines)."""

    state: str
    fresh: bool
    answer: str | None
    command: str | None  # the marker's own command: the block is its whole output
    start: int  # index of the opening fence
    end: int  # index of the closing fence
    lines: list[str]

    def where(self, doc: Path) -> str:
        """``file:line: block `first command``` (the marker's line)."""
        first = self.command or next((ln[2:] for ln in self.lines if ln.startswith("$ ")), "?")
        name = doc.relative_to(TOP) if doc.is_relative_to(TOP) else doc
        return f"{name}:{self.start - 1}: block `{first}`"


def blocks(lines: list[str], doc: Path) -> list[Block]:
    found = []
    for i, line in enumerate(lines):
        marker = MARKER.match(line)
        if not marker:
            continue
        args, _, command = marker.group("args").partition(" $ ")
        words = args.split()
        if not words or words[0] not in SETUPS:
            raise ValueError(f"{doc}:{i + 1}: unknown state in {line.strip()!r}; known: {', '.join(SETUPS)}")
        fence = FENCE.match(lines[i + 1]) if i + 1 < len(lines) else None
        if fence is None:
            raise ValueError(f"{doc}:{i + 1}: a marker must be followed by a fenced block")
        end = next(j for j in range(i + 2, len(lines)) if lines[j].rstrip() == fence.group("fence"))
        options = dict(w.partition("=")[::2] for w in words[1:])
        found.append(
            Block(
                state=words[0],
                fresh="fresh" in options,
                answer=options.get("input"),
                command=command.strip() or None,
                start=i + 2,
                end=end,
                lines=lines[i + 2 : end],
            )
        )
    return found


def unmarked_outputs(lines: list[str]) -> list[int]:
    """Line numbers of ``$ langgraph-repo`` commands outside marked blocks that are followed by
    output: an output no run checks."""
    marked = set()
    for i, line in enumerate(lines):
        if (MARKER.match(line) or NOT_RUN.match(line)) and i + 1 < len(lines) and FENCE.match(lines[i + 1]):
            fence = FENCE.match(lines[i + 1]).group("fence")  # type: ignore[union-attr]
            end = next((j for j in range(i + 2, len(lines)) if lines[j].rstrip() == fence), len(lines))
            marked.update(range(i + 1, end + 1))
    found, fence = [], None
    for i, line in enumerate(lines):
        opened = FENCE.match(line.strip())
        if fence is None and opened:
            fence = opened.group("fence")
        elif fence is not None and line.strip() == fence:
            fence = None
        elif fence and i not in marked and line.startswith("$ langgraph-repo"):
            following = lines[i + 1].strip() if i + 1 < len(lines) else fence
            if following != fence and not following.startswith("$ "):
                found.append(i + 1)
    return found


def run_block(block: Block, session: Session) -> list[str]:
    """The block's lines as the commands print them now."""
    if block.command is not None:
        return session.run(block.command, block.answer).splitlines()
    out: list[str] = []
    for line in block.lines:
        if line.startswith("$ "):
            out.append(line)
            out.extend(session.run(line[2:], block.answer).splitlines())
    return out


def regenerate(doc: Path, tmp: Path) -> tuple[str, list[tuple[Block, list[str]]]]:
    """The file with every marked block's output as it is now, and the blocks that changed
    (each with its new lines). The copies are made below ``tmp`` and removed when done (the
    states they are copied from stay for the next file)."""
    text = doc.read_text(encoding="utf-8")
    lines = text.split("\n")
    sessions: dict[str, Session] = {}
    changed = []
    for number, block in enumerate(blocks(lines, doc)):
        if block.fresh or block.state not in sessions:
            base = tmp / f"{doc.stem}-{number}"
            base.mkdir(parents=True)
            sessions[block.state] = Session.start(block.state, base)
        new = run_block(block, sessions[block.state])
        if new != block.lines:
            changed.append((block, new))
    for copy in tmp.glob(f"{doc.stem}-*"):
        shutil.rmtree(copy)
    for block, new in reversed(changed):
        lines[block.start : block.end] = new
    return "\n".join(lines), changed


@contextmanager
def scratch() -> Iterator[Path]:
    """A temporary folder for the copies: in memory (/dev/shm) when there is room, where the
    fsync of every file the commands write costs nothing; nothing in it is kept."""
    memory = Path("/dev/shm")
    roomy = memory.is_dir() and os.access(memory, os.W_OK) and shutil.disk_usage(memory).free > 512 << 20
    with tempfile.TemporaryDirectory(prefix="langgraph-docs-", dir=memory if roomy else None) as tmp:
        yield Path(tmp)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", type=Path, help="default: README.md and docs/*.md")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 when a block differs")
    parser.add_argument("--build", action="store_true", help="make docs/example-state/ again first")
    parser.add_argument("--build-desk", action="store_true", help="make only the support desk's state again")
    parser.add_argument("--build-profiles", action="store_true", help="make only the migration's state again")
    given = parser.parse_args(argv)
    if given.build:
        build()
    elif given.build_desk:
        build_desk()
    elif given.build_profiles:
        build_profiles()
    failed = 0
    with scratch() as tmp:
        for doc in [p.resolve() for p in given.files] or docs():
            new_text, changed = regenerate(doc, tmp)
            for block, new in changed:
                failed += 1
                diff = difflib.unified_diff(block.lines, new, "in the doc", "printed now", lineterm="")
                print(f"{block.where(doc)} {'differs' if given.check else 'rewritten'}:")
                print("\n".join(diff) if given.check else "", end="\n" if given.check else "")
            if changed and not given.check:
                doc.write_text(new_text, encoding="utf-8")
    return 1 if failed and given.check else 0


# ----------------------------------------------------------------------------
# --build: the example state, from real graphs
# ----------------------------------------------------------------------------
DESK = ("desk-1", "desk-2", "desk-3", "desk-4")


def build_desk() -> None:
    """Only the support desk's state (``--build-desk``): the other states and their ids stay."""
    with tempfile.TemporaryDirectory(prefix="langgraph-docs-build-") as tmp:
        made = Path(tmp)
        sys.path.insert(0, str(HERE))
        import example_graphs

        example_graphs.desk(made, *DESK)
        for name in DESK:
            shutil.rmtree(STATE / name, ignore_errors=True)
            shutil.copytree(made / name, STATE / name, ignore=shutil.ignore_patterns(".cache"))


def build_profiles() -> None:
    """Only the state migration's threads (``--build-profiles``): the other states and their
    ids stay."""
    with tempfile.TemporaryDirectory(prefix="langgraph-docs-build-") as tmp:
        made = Path(tmp)
        sys.path.insert(0, str(HERE))
        import example_graphs

        example_graphs.customers(made / "profiles")
        shutil.rmtree(STATE / "profiles", ignore_errors=True)
        shutil.copytree(made / "profiles", STATE / "profiles", ignore=shutil.ignore_patterns(".cache"))


def build() -> None:
    """Run the example graphs and keep what RepoSaver wrote under docs/example-state/."""
    with tempfile.TemporaryDirectory(prefix="langgraph-docs-build-") as tmp:
        made = Path(tmp)
        sys.path.insert(0, str(HERE))
        import example_graphs

        example_graphs.build_all(made)
        for name in ("demo", "forks", "secrets", "review-1", "review-2", "review-3", "profiles", *DESK):
            shutil.rmtree(STATE / name, ignore_errors=True)
            shutil.copytree(made / name, STATE / name, ignore=shutil.ignore_patterns(".cache"))


if __name__ == "__main__":
    sys.exit(main())
