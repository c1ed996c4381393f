"""Pull-request ranges (issue 35; docs/review.md, "langgraph-repo review").

GitHub, GitLab and ``git diff`` readers take ``BASE...HEAD`` for what a branch adds: the
merge-base of the two compared with ``HEAD``. ``review`` refused it. After ``main`` moved on,
``review main..feature`` (git's two tips) shows main's new work as removed, and nothing said
so. The same holds for the commands that compare the work tree with a revision: ``diff
--from REV`` and ``history --since REV``.

The repository is the support desk's (tests/test_driver_order.py): ``main`` turns 1 and 2,
``feature`` turns 3 to 5; then ``main`` moves on: another turn of the same thread and a
memory of another customer.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from bench.support_desk import THREAD, build_support_desk, config
from langchain_core.messages import HumanMessage

from helpers import cli, one_line_error
from langgraph_checkpoint_repo import RepoSaver, RepoStore
from langgraph_checkpoint_repo.review.report import review as make_report
from test_driver_order import build_desk
from test_git import commit_all, git

MAIN_TURN = "Where is my order A-1003?"  # main's own new turn, after feature left it
BOB = ("customers", "bob")


@pytest.fixture(scope="module")
def moved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The support desk's branch, and ``main`` moved on: a turn of the same thread (a fork
    of it: both continue turn 2) and another customer's memory."""
    repo = build_desk(tmp_path_factory.mktemp("ranges") / "repo")
    root = repo / ".langgraph"
    git(repo, "checkout", "-q", "main")
    desk = build_support_desk(RepoSaver(root, durable=False), RepoStore(root))
    desk.invoke({"messages": [HumanMessage(content=MAIN_TURN, id="user-main-3")]}, config())
    RepoStore(root).put(BOB, "preferences", {"fact": "prefers phone calls"})
    commit_all(repo, "main moves on: another turn, another memory")
    git(repo, "checkout", "-q", "feature")
    return repo


@pytest.fixture
def copy(moved: Path, tmp_path: Path) -> Path:
    """A copy to change (a branch moved elsewhere, a checkout)."""
    target = tmp_path / "repo"
    shutil.copytree(moved, target, symlinks=True)
    return target


def review_json(repo: Path, rng: str | None) -> tuple[int, Any]:
    proc = cli(repo / ".langgraph", "review", *([rng] if rng else []), "--json", cwd=repo)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def removed_checkpoints(data: Any) -> int:
    return sum(len(n["removed"]) for t in data["threads"] for n in t["namespaces"])


def merge_base(repo: Path, a: str = "main", b: str = "feature") -> str:
    return git(repo, "merge-base", a, b).stdout.strip()


# ----------------------------------------------------------------------------
# review: three dots, two dots, the default
# ----------------------------------------------------------------------------
def test_three_dots_review_only_what_the_branch_adds_after_main_moved_on(moved: Path) -> None:
    code, data = review_json(moved, "main...feature")
    assert code == 0 and data["flags"] == []
    assert (
        data["base"] == merge_base(moved)
        and data["head"] == git(moved, "rev-parse", "feature").stdout.strip()
    )
    assert [t["thread_id"] for t in data["threads"]] == [THREAD] and removed_checkpoints(data) == 0
    assert [(i["namespace"], i["status"]) for i in data["items"]] == [(["customers", "ada"], "added")]
    text = cli(moved / ".langgraph", "review", "main...feature", cwd=moved).stdout
    assert MAIN_TURN not in text and "bob" not in text
    assert "Please refund order A-1001" in text and "Where is my order A-1002?" in text


def test_two_dots_keep_gits_meaning_and_the_report_says_main_moved_on(moved: Path) -> None:
    """``main..feature`` compares the two tips: main's new turn reads as removed checkpoints
    (the thread continuing elsewhere) and its memory as removed; the report's range says why
    and which range to use."""
    _, data = review_json(moved, "main..feature")
    assert data["base"] == git(moved, "rev-parse", "main").stdout.strip()
    assert removed_checkpoints(data) >= 5
    assert (["customers", "bob"], "removed") in [(i["namespace"], i["status"]) for i in data["items"]]
    report = make_report(moved / ".langgraph", spec="main..feature")
    assert report.range.note == (
        "main moved on since feature left it: its new work shows as removed here; "
        "main...feature shows what feature adds"
    )
    work_tree = make_report(moved / ".langgraph", spec="main")  # to the work tree
    assert work_tree.range.head is None and work_tree.range.note.startswith(
        "main moved on since HEAD left it"
    )
    assert work_tree.range.note.endswith("main...HEAD shows what HEAD adds (committed)")


def test_no_note_when_the_base_is_an_ancestor_or_moved_on_outside_the_state(
    moved: Path, tmp_path: Path
) -> None:
    for spec in ("main...feature", "feature~2..feature", f"{merge_base(moved)}..feature"):
        assert make_report(moved / ".langgraph", spec=spec).range.note == "", spec
    other = tmp_path / "other"  # a base that moved on in the README only
    git(moved, "worktree", "add", "-q", "-b", "docs-only", str(other), merge_base(moved))
    try:
        (other / "README.md").write_text("app, documented\n", encoding="utf-8")
        commit_all(other, "docs")
        report = make_report(moved / ".langgraph", spec="docs-only..feature")
        assert report.range.note == "" and removed_checkpoints_of(report) == 0
    finally:
        git(moved, "worktree", "remove", "--force", str(other))
        git(moved, "branch", "-q", "-D", "docs-only")


def removed_checkpoints_of(report: Any) -> int:
    return sum(len(n.removed) for t in report.threads for n in t.namespaces)


def test_the_default_range_is_the_pull_requests(moved: Path) -> None:
    """No RANGE: the merge-base of HEAD and the default branch, to the work tree (as before:
    a guard, it passed before the three-dot form)."""
    code, data = review_json(moved, None)
    assert data["range"] == "merge-base of HEAD and main" and data["head"] is None
    assert data["base"] == merge_base(moved) and removed_checkpoints(data) == 0 and code == 0


def test_a_bad_three_dot_range_is_one_clear_line(copy: Path) -> None:
    empty = git(copy, "hash-object", "-t", "tree", "-w", "--stdin").stdout.strip()
    orphan = git(copy, "commit-tree", empty, "-m", "unrelated").stdout.strip()
    git(copy, "branch", "unrelated", orphan)
    root = copy / ".langgraph"
    said = one_line_error(cli(root, "review", "unrelated...feature", cwd=copy), 2, "no common ancestor")
    assert "unrelated..feature" in said  # what to use instead
    one_line_error(cli(root, "review", "main....feature", cwd=copy), 2, "bad range")
    one_line_error(cli(root, "review", "nosuch...feature", cwd=copy), 3, "unknown revision")


# ----------------------------------------------------------------------------
# the class: diff --from REV, history --since REV
# ----------------------------------------------------------------------------
def _continued_at(repo: Path, rev: str) -> str:
    """The checkpoint that continued the thread at ``rev`` (its newest, by id)."""
    names = git(
        repo, "ls-tree", "--name-only", rev, f".langgraph/threads/{THREAD}/checkpoints/"
    ).stdout.split()
    return max(Path(n).stem for n in names)


def test_diff_from_a_revision_that_moved_on_says_so_and_rev_dots_is_where_the_branch_left_it(
    moved: Path,
) -> None:
    root = moved / ".langgraph"
    plain = cli(root, "diff", THREAD, "--from", "main", cwd=moved).stdout
    assert "main moved on since HEAD left it: its new work shows as removed here" in plain
    assert "--from main... compares with where HEAD left it" in plain
    dots = json.loads(cli(root, "diff", THREAD, "--from", "main...", "--json", cwd=moved).stdout)
    assert dots["from"] == _continued_at(moved, merge_base(moved)) != _continued_at(moved, "main")
    assert "note" not in dots
    assert MAIN_TURN not in cli(root, "diff", THREAD, "--from", "main...", cwd=moved).stdout
    assert MAIN_TURN in plain  # main's turn, as removed: git's meaning, said


def test_history_since_rev_dots_lists_the_branchs_checkpoints_when_main_pruned_since(copy: Path) -> None:
    """``--since main`` lists what main's tip lacks: after main pruned the thread, that is
    its whole old history too; ``--since main...`` lists what the branch added."""
    root = copy / ".langgraph"
    git(copy, "checkout", "-q", "main")
    assert cli(root, "prune", THREAD, "--keep-last", "1", "--yes", cwd=copy).returncode == 0
    commit_all(copy, "main prunes the thread")
    git(copy, "checkout", "-q", "feature")

    def since(rev: str) -> set[str]:
        proc = cli(root, "history", THREAD, "--since", rev, "--json", cwd=copy)
        assert proc.returncode == 0, proc.stderr
        return {c["checkpoint_id"] for c in json.loads(proc.stdout)["checkpoints"]}

    base = merge_base(copy)
    branch = {
        Path(n).stem
        for n in git(
            copy, "diff", "--name-only", base, "feature", "--", f".langgraph/threads/{THREAD}/checkpoints/"
        ).stdout.split()
    }
    assert since("main...") == since("main...feature") == since(base) == branch
    assert since("main") > branch  # git's meaning of main's tip, pruned
