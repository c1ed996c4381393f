"""The ``git diff`` driver's view of a real branch: in time order, with text (issue 35; docs/review.md,
"What git diff shows").

The support desk (bench/support_desk.py: a parent graph whose ``agent`` node is a
``create_agent`` subgraph, an approval, a tool that fails, a memory) writes its turns into a
real git repository: ``main`` holds turns 1 and 2, a commit each (turn 2's tool fails); the
branch ``feature`` turns 3 to 5, turn 3's refund stopping for approval, the approval committed
on its own. With ``git-setup``, git itself is asked for ``diff``, ``log -p`` and ``show``: what
is checked is what a person sees.

git prints six lines of its own per file, and a turn of the support desk is ten checkpoint
files (five of the parent graph, five of the subgraph call): sixty lines before the view says
anything, so the view's own lines are what is bounded there; a ``create_agent`` turn (five
files) fits in sixty lines in all.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from bench.agent_graphs import build_create_agent, user_message
from bench.support_desk import approve, build_support_desk, user_turn

from graphs import cfg, invoke_in_order
from helpers import cli
from langgraph_checkpoint_repo import RepoSaver, RepoStore
from langgraph_checkpoint_repo.cli.gitsetup import ORDER_NAME, order_lines
from langgraph_checkpoint_repo.core import caches
from langgraph_checkpoint_repo.core.format.messages import ERROR_MARK
from langgraph_checkpoint_repo.review import textconv
from test_git import commit_all, git, init_repo

DESK = "desk-1"
HEADERS = 6  # diff --git, new file mode, index, ---, +++, @@: git's own, per file


def build_desk(path: Path) -> Path:
    """``main``: turns 1 and 2 of the support desk, a commit each; ``feature``: turn 3 (a
    refund waiting for approval), the approval, turns 4 and 5, a commit each."""
    repo = init_repo(path)
    root = repo / ".langgraph"
    (repo / "README.md").write_text("app\n", encoding="utf-8")
    commit_all(repo, "start")

    def desk() -> Any:
        return build_support_desk(RepoSaver(root, durable=False), RepoStore(root))

    user_turn(desk(), 1, durability="sync")
    commit_all(repo, "turn 1")
    user_turn(desk(), 2, durability="sync")
    commit_all(repo, "turn 2: the warehouse is down")
    git(repo, "checkout", "-q", "-b", "feature")
    user_turn(desk(), 3, durability="sync")
    commit_all(repo, "turn 3: a refund waits for approval")
    approve(desk(), durability="sync")
    commit_all(repo, "the refund approved")
    user_turn(desk(), 4, durability="sync")
    commit_all(repo, "turn 4: a memory")
    user_turn(desk(), 5, durability="sync")
    commit_all(repo, "turn 5")
    return repo


def git_setup(repo: Path, root: Path | None = None) -> str:
    proc = cli(root or repo / ".langgraph", "git-setup", cwd=repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def _usual_layout(repo: Path) -> bool:
    """The parent's checkpoint after the approved call refers to the call's messages."""
    items = _agent_return(repo)["new_values"]["messages"].get("append", {}).get("items", [])
    return bool(items) and all("$ref" in item for item in items)


@pytest.fixture(scope="module")
def desk(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The branch, laid out the same however soon each turn's saver reads what the one before
    wrote: a list read within ``RACY_NS`` of its write was written whole, its messages held by
    the parent's checkpoint rather than referred to (the fixture built it again, up to four
    times, until it had the usual layout)."""
    repo = build_desk(tmp_path_factory.mktemp("desk") / "repo")
    assert _usual_layout(repo)
    git_setup(repo)
    return repo


def per_file(out: str) -> list[tuple[str, list[str]]]:
    """Each file of git's patch output: its path (the new side's) and its lines, headers
    included."""
    files: list[tuple[str, list[str]]] = []
    for line in out.splitlines():
        if line.startswith("diff --git "):
            files.append((line.split(" b/", 1)[1], []))
        if files:
            files[-1][1].append(line)
    return files


def view_lines(out: str) -> list[str]:
    """What the driver printed: the lines a patch adds or removes, without the sign."""
    return [ln[1:] for ln in out.splitlines() if ln[:1] in "+-" and not ln.startswith(("+++ ", "--- "))]


# ----------------------------------------------------------------------------
# the branch: the approval and every new message, as text, once
# ----------------------------------------------------------------------------
QUESTION = 'interrupt in a Send: {"order":"A-1001","question":"Approve a refund of $18.50 for A-1001?"}'
ANSWER = 'resumed with: {"approved":true}'
#: each message the branch adds that the file holding it shows, as the driver shows it
BRANCH_MESSAGES = [
    "user: Please refund order A-1001, it arrived broken: $18.50. (id user-3)",
    'ai: → calls issue_refund({"amount":18.5,"order_id":"A-1001"}) [call-3] (id ai-call-3)',
    "tool issue_refund [call-3]: Refund of $18.50 for A-1001 issued.",
    "ai: Done: Refund of $18.50 for A-1001 issued. (id ai-answer-3)",
    "user: Remember that I prefer email updates. (id user-4)",
    'ai: → calls remember({"fact":"prefers email updates"}) [call-4] (id ai-call-4)',
    "tool remember [call-4]: Remembered: prefers email updates",
    "ai: Done: Remembered: prefers email updates (id ai-answer-4)",
    "user: Where is my order A-1002? (id user-5)",
    'ai: → calls lookup_order({"order_id":"A-1002"}) [call-5] (id ai-call-5)',
    "tool lookup_order [call-5]: Order A-1002: shipped, arriving in 3 days.",
    "ai: Done: Order A-1002: shipped, arriving in 3 days. (id ai-answer-5)",
]


def test_git_diff_of_the_branch_shows_the_question_the_answer_and_each_new_message_once(desk: Path) -> None:
    """The resume value is shown (it was a task name and a digest), after the question, in the
    subgraph call's checkpoint that ran the tool; the parent's checkpoint shows the answer the
    graph was resumed with. Each message is text in the file that holds it, once; a reference
    to one another file holds is its message id (it was ``-> object <hash> (in <id>) (ns
    <namespace>)``, three on a line), and no line restates what a task wrote."""
    out = git(desk, "diff", "main...feature").stdout
    lines = view_lines(out)
    for said in BRANCH_MESSAGES:
        assert sum(said in line for line in lines) == 1, (said, out)
    question = [i for i, line in enumerate(lines) if line.strip() == QUESTION]
    answers = [i for i, line in enumerate(lines) if line.strip() == ANSWER]
    assert len(question) == 1 and len(answers) == 2, out  # the subgraph's task and the graph's input
    assert question[0] + 1 in answers  # the answer right under the question it answers
    returned = [line for line in lines if " by agent " in line]
    assert any(
        re.fullmatch(r"  messages: \+3 items: -> ai-call-3, -> [0-9a-f-]{36}, -> ai-answer-3", line)
        for line in lines
    ), returned
    assert "(parent's writes" not in out and " (in 1f" not in out and "(ns agent:" not in out
    assert "channel_versions" not in out and '"$ref"' not in out


def test_a_checkpoint_that_only_restates_is_one_line(desk: Path) -> None:
    """The parent's checkpoint after its input (the user's message moved into ``messages``),
    after the subgraph returned its messages and after ``wrap_up`` (its message's text is held
    by turn 1's checkpoint: the same content, stored once) restate what other files hold: one
    line each, its bookkeeping in the digest of the whole file at its end."""
    out = git(desk, "diff", "main...feature", "--", f".langgraph/threads/{DESK}/checkpoints").stdout
    one_line = {}
    for path, lines in per_file(out):
        body = lines[HEADERS:]
        if any(f" by {who} " in body[0] for who in ("__start__", "wrap_up")):
            one_line[path] = body
    assert len(one_line) == 6, out  # two a turn, three turns
    for path, body in one_line.items():
        assert len(body) == 1 and re.search(r": messages: .*-> .* \(file #[0-9a-f]{8}\)$", body[0]), (
            path,
            body,
        )
    assert any(
        re.search(r"by wrap_up parent \S+: messages: \+1 item: -> wrap-4 \(file #", b[0])
        for b in one_line.values()
    )


def test_a_support_desk_turn_adds_at_most_25_lines_to_gits_own_headers(desk: Path) -> None:
    """Ten checkpoint files a turn, six lines of git's each: what the view adds was 51 lines a
    turn (the bookkeeping line of each file, a line for each of its parent's writes, each
    list a file holds only to group references); now 19: each file's bookkeeping is its first
    line's digest, a checkpoint that restates is that line."""
    out = git(desk, "diff", "main...feature", "--", f".langgraph/threads/{DESK}").stdout
    files = per_file(out)
    assert len(files) == 30
    viewed = sum(len(lines) - HEADERS for _, lines in files)
    assert viewed <= 25 * 3, out


def test_the_approval_alone_shows_the_question_taken_and_the_answer(desk: Path) -> None:
    """The commit that approves removes the pending writes that held the question and adds
    the checkpoints that took them with the answer: both shown."""
    approved = git(desk, "rev-parse", "feature~2").stdout.strip()
    assert git(desk, "log", "-1", "--format=%s", approved).stdout.strip() == "the refund approved"
    out = git(desk, "diff", f"{approved}~1", approved).stdout
    removed = [ln[1:].strip() for ln in out.splitlines() if ln.startswith("-") and not ln.startswith("---")]
    added = [ln[1:].strip() for ln in out.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    assert QUESTION in removed and QUESTION in added and ANSWER in added, out
    assert "interrupt in agent: -> object " in "\n".join(
        removed + added
    )  # the parent's task: its subgraph holds it
    assert any(
        line.startswith("interrupt in agent: -> object ") and "(in namespace agent:" in line for line in added
    )


def test_a_failed_tool_is_marked_where_a_screen_reader_and_grep_find_it(desk: Path) -> None:
    """Turn 2's tool fails (``status: "error"``): its result is marked with a word, not only
    parentheses, and ``git log -p -G`` for it finds the turn."""
    out = git(desk, "diff", "main~1", "main").stdout
    (marked,) = [line for line in view_lines(out) if "check_stock [call-2]" in line]
    assert (
        f"tool check_stock [call-2] {ERROR_MARK}: Warehouse API timed out while checking 'blue mug'."
        in marked
    )
    assert re.search(r"\berror\b", marked) and "(error)" not in marked
    found = git(desk, "log", "--format=%s", "-G", ERROR_MARK, "main").stdout
    assert found.splitlines() == ["turn 2: the warehouse is down"]


# ----------------------------------------------------------------------------
# the order git prints files in: diff.orderFile
# ----------------------------------------------------------------------------
def _order_of(paths: list[str]) -> list[str]:
    """Each state file as the kind the order puts it in."""
    kinds = []
    for path in paths:
        if "/threads/" in path and "/checkpoints/" in path:
            kinds.append("checkpoint")
        elif "/threads/" in path and "/writes/" in path:
            kinds.append("writes")
        else:
            kinds.append("other")
    return kinds


@pytest.mark.parametrize("how", ["diff", "show", "log -p"])
def test_git_prints_checkpoints_first_in_time_order_then_writes_then_the_rest(desk: Path, how: str) -> None:
    """``git diff``, ``git show`` and ``git log -p`` take git-setup's ``diff.orderFile``: a
    thread's checkpoints first (a namespace's in time order: a file is named by its
    time-ordered id), then pending writes, then any other file (the memory turn 4 wrote sorts
    before the threads by path, and came first)."""
    turn3, turn4 = (git(desk, "rev-parse", f"feature~{n}").stdout.strip() for n in (3, 1))
    for commit in (turn3, turn4):
        args = {
            "diff": ["diff", f"{commit}~1", commit],
            "show": ["show", commit],
            "log -p": ["log", "-p", "-1", commit],
        }
        paths = [path for path, _ in per_file(git(desk, *args[how]).stdout)]
        kinds = _order_of(paths)
        assert kinds == sorted(kinds, key=["checkpoint", "writes", "other"].index), paths
        assert kinds.count("checkpoint") >= 5
        by_folder: dict[str, list[str]] = {}
        for path in paths:
            if "/checkpoints/" in path:
                folder, _, name = path.rpartition("/")
                by_folder.setdefault(folder, []).append(name)
        assert all(names == sorted(names) for names in by_folder.values())
        assert next(iter(by_folder)) == f".langgraph/threads/{DESK}/checkpoints"  # the parent graph first
    memory = [p for p, _ in per_file(git(desk, "show", turn4).stdout) if "/store/" in p]
    assert memory and _order_of(memory) == ["other"]
    assert [p for p, _ in per_file(git(desk, "show", turn4).stdout)][-1] == memory[0]
    writes = [p for p, _ in per_file(git(desk, "show", turn3).stdout) if "/writes/" in p]
    assert len(writes) == 2


def test_git_setup_writes_the_order_once_leaves_a_users_own_and_undo_removes_it(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    (repo / "README.md").write_text("app\n", encoding="utf-8")
    commit_all(repo, "start")
    order = Path(git(repo, "rev-parse", "--absolute-git-dir").stdout.strip()) / ORDER_NAME
    said = git_setup(repo)
    assert f"git config diff.orderFile {order}" in said
    assert order.read_text(encoding="utf-8").splitlines() == order_lines(".langgraph")
    assert git(repo, "config", "--get", "diff.orderFile").stdout.strip() == str(order)
    assert "nothing to change" in git_setup(repo)
    undone = cli(repo / ".langgraph", "git-setup", "--undo", cwd=repo).stdout
    assert "git config: removed diff.orderFile" in undone and not order.exists()
    assert git(repo, "config", "--get", "diff.orderFile", check=False).returncode == 1
    git(repo, "config", "diff.orderFile", "my.order")  # the user's own: left alone, said so
    said = git_setup(repo)
    assert "diff.orderFile is my.order: left as it is" in said and not order.exists()
    cli(repo / ".langgraph", "git-setup", "--undo", cwd=repo)
    assert git(repo, "config", "--get", "diff.orderFile").stdout.strip() == "my.order"


def test_a_root_whose_path_holds_glob_characters_a_hash_and_a_line_break_is_ordered(tmp_path: Path) -> None:
    """The order file is read a line at a time, each line a glob, ``#`` starting a comment: the
    root ``#x [1]*\\nstate/.langgraph`` is escaped, its line break matched by ``?``, and git
    still puts its checkpoints first (before a file that sorts before them by path); a second
    root adds its own lines, each kind with its kind."""
    repo = init_repo(tmp_path / "repo")
    odd = repo / "#x [1]*\nstate" / ".langgraph"
    build_create_agent(RepoSaver(odd, durable=False)).invoke({"messages": [user_message(1)]}, cfg("t"))
    (odd.parent / "!first.txt").write_text("a\n", encoding="utf-8")  # before .langgraph by path
    commit_all(repo, "a turn in an odd folder")
    git_setup(repo, odd)
    git_setup(repo)  # a second root, empty yet
    order = Path(git(repo, "rev-parse", "--absolute-git-dir").stdout.strip()) / ORDER_NAME
    lines = order.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "\\#x \\[1]\\*?state/.langgraph/threads/*/checkpoints/*"
    assert [ln.rsplit("/", 2)[-2:] for ln in lines] == [
        ["checkpoints", "*"],
        ["checkpoints", "*"],
        ["writes", "*"],
        ["writes", "*"],
        [".langgraph", "threads"],
        [".langgraph", "threads"],
    ]
    paths = git(repo, "show", "--format=", "--name-only", "-z", "HEAD").stdout.split("\0")
    kinds = ["cp" if "/checkpoints/" in p else "w" if "/writes/" in p else "other" for p in paths]
    # a put_writes that waited in vain for its put (a loaded machine: ride.py) writes its own
    # file, which its lines put after the checkpoints
    n = kinds.count("w")
    assert kinds[: 6 + n] == ["cp"] * 5 + ["w"] * n + ["other"], paths
    assert paths[5 + n].endswith("!first.txt"), paths


# ----------------------------------------------------------------------------
# the view itself: one-line checkpoints, digests, bounds
# ----------------------------------------------------------------------------
def _agent_return(desk: Path) -> dict[str, Any]:
    """The parent's checkpoint of turn 3 after its subgraph call: references into the
    subgraph's namespace, an interrupt held there, the answer."""
    folder = desk / ".langgraph" / "threads" / DESK / "checkpoints"
    for path in sorted(folder.glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        if any(
            w.get("channel") == "__resume__"
            for r in doc.get("parent_writes", {}).values()
            for w in r["writes"]
        ):
            return doc  # type: ignore[no-any-return]
    raise AssertionError("no resumed checkpoint")


def test_an_edit_of_what_a_short_reference_leaves_out_changes_the_first_line(
    desk: Path, tmp_path: Path
) -> None:
    """A reference is shown by its message id; where it is held (``$in``, ``$ns``) and its
    object's full name are in the digest of the whole file on the first line."""
    doc = _agent_return(desk)
    before = textconv.render(doc)
    assert before is not None
    for change in ("$in", "$ns", "$ref"):
        edited = json.loads(json.dumps(doc))
        item = edited["new_values"]["messages"]["append"]["items"][0]
        item[change] = item[change][:-1] + ("0" if item[change][-1] != "0" else "1")
        after = textconv.render(edited)
        assert after is not None and after[1:] == before[1:] and after[0] != before[0], change


@contextmanager
def shallow_stack(room: int = 60) -> Iterator[None]:
    depth, frame = 0, sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    saved = sys.getrecursionlimit()
    sys.setrecursionlimit(depth + room)
    try:
        yield
    finally:
        sys.setrecursionlimit(saved)


def test_objects_held_in_a_long_chain_or_a_cycle_are_read_without_recursion() -> None:
    """A file may hold lists of references that refer to each other, as long a chain as it
    likes, or in a cycle: each is read once, under a stack a few frames deep; a chain of
    references is one line, a cycle is shown as the objects it is."""
    n = 20_000
    chain = {
        f"{i:016x}": [{"$id": f"m{i}", "$ref": "a" * 16, "$in": "x"}, {"$ref": f"{i + 1:016x}"}]
        for i in range(n)
    }
    chain[f"{n:016x}"] = [{"$ref": "b" * 16, "$in": "x"}]
    cycle = {"c" * 16: [{"$ref": "d" * 16}], "d" * 16: [{"$ref": "c" * 16}]}
    for objects, one_line in ((chain, True), (cycle, False)):
        doc = {
            "checkpoint": {},
            "checkpoint_id": "1f1f0000-0000-6000-8001-000000000000",
            "kind": "checkpoint",
            "metadata": {"source": "loop", "step": 1},
            "new_values": {"messages": {"append": {"base_length": 0, "items": [{"$ref": min(objects)}]}}},
            "objects": objects,
            "schema_version": 4,
        }
        with shallow_stack():
            lines = textconv.budgeted(textconv.render(doc) or [])
        assert (len(lines) == 1) is one_line, lines[:3]
        assert sum(len(line) + 1 for line in lines) <= textconv.BUDGET + textconv.TEXT
        if one_line:
            assert ": messages: +1 item: -> m0, -> m1, " in lines[0]
        else:
            assert lines[1].startswith("  messages: +1 item: ")


# ----------------------------------------------------------------------------
# create_agent: a turn in sixty lines
# ----------------------------------------------------------------------------
def _create_agent_turn(path: Path) -> str:
    """``git diff`` of a create_agent thread's second turn, with the driver. Each turn's saves
    in LangGraph's order (``invoke_in_order``): a step's writes saved after the next checkpoint
    would be a sixth file, and the restating checkpoint would not say ``by __start__``."""
    repo = init_repo(path)
    root = repo / ".langgraph"
    agent = build_create_agent(RepoSaver(root, durable=False))
    invoke_in_order(agent, {"messages": [user_message(1)]}, cfg("support-1"))
    commit_all(repo, "turn 1")
    git_setup(repo)
    agent = build_create_agent(RepoSaver(root, durable=False))
    invoke_in_order(agent, {"messages": [user_message(2)]}, cfg("support-1"))
    commit_all(repo, "turn 2")
    return git(repo, "diff", "HEAD~1", "HEAD", "--", ".langgraph").stdout


#: the restating checkpoint's one line: its list extended by one item
RESTATING = (
    r"checkpoint \S+ step 5 source loop by __start__ parent \S+: messages: \+1 item: -> \S+"
    r" \(file #[0-9a-f]{8}\)"
)


@pytest.mark.parametrize("racy_ns", [-1, 10**12], ids=["read-settled", "read-just-written"])
def test_a_create_agent_turn_fits_in_60_lines_its_restating_checkpoint_in_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, racy_ns: int
) -> None:
    """The same turn is laid out the same however soon the second saver reads what the first
    wrote. The list read within ``RACY_NS`` of its write (a fast machine: turn 2 came some
    30 ms after turn 1) could not be checked by its stat key alone and was written whole
    ("messages: -> user-1, -> ai-call-1, ... -> user-2"), failing this test in a full run on
    an idle machine; its bytes' digest now checks it. Here no file is settled when it is
    read, or every file is, whatever the machine's speed."""
    monkeypatch.setattr(caches, "RACY_NS", racy_ns)
    out = _create_agent_turn(tmp_path / "repo")
    assert len(out.splitlines()) <= 60, out
    files = per_file(out)
    assert len(files) == 5
    bodies = [lines[HEADERS:] for _, lines in files]
    assert [len(b) for b in bodies] == [2, 1, 3, 2, 2], out
    assert re.fullmatch(RESTATING, bodies[1][0][1:]), bodies
