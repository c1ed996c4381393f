"""Big values through Git LFS (issue 39, item 4; docs/cli.md "git-setup", docs/format.md "kind: large_value").

``git-setup --lfs`` marks the threads' ``large/`` files for LFS; a clone without git-lfs, or
one that did not ``git lfs pull``, has LFS pointer files where the values should be, and every
reader names the file and ``git lfs pull`` instead of calling it invalid JSON. The review reads
git's blobs, which are pointers whenever LFS is used: it reads the object git-lfs keeps in the
repository when it is there.

Real git repositories; git-lfs itself is never needed: a pointer is written by hand (its
three-line format) and an object is put where git-lfs keeps it, as git-lfs would.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from graphs import BIG_TEXT, big_graph, cfg
from helpers import cli
from langgraph_checkpoint_repo import RepoSaver
from langgraph_checkpoint_repo.core.errors import LfsPointerError
from langgraph_checkpoint_repo.review import textconv
from langgraph_checkpoint_repo.review.revisions import materialize
from test_git import commit_all, git, init_repo

LFS = "filter=lfs diff=lfs merge=lfs -text"


def pointer(data: bytes) -> bytes:
    """The Git LFS pointer of ``data`` (https://github.com/git-lfs/git-lfs/blob/main/docs/spec.md)."""
    oid = hashlib.sha256(data).hexdigest()
    return f"version https://git-lfs.github.com/spec/v1\noid sha256:{oid}\nsize {len(data)}\n".encode()


def lfs_lines(repo: Path) -> list[str]:
    return [ln for ln in (repo / ".gitattributes").read_text(encoding="utf-8").splitlines() if LFS in ln]


def check_attr(repo: Path, path: str) -> dict[str, str]:
    out = git(repo, "check-attr", "filter", "diff", "merge", "text", "--", path).stdout
    return {line.split(": ")[1]: line.split(": ")[2] for line in out.splitlines()}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """main: a thread whose document is big (two ``large/`` files), committed."""
    repo = init_repo(tmp_path / "repo")
    big_graph(RepoSaver(repo / ".langgraph", durable=False)).invoke({"document": BIG_TEXT}, cfg("doc"))
    commit_all(repo, "a big document")
    return repo


def large_files(repo: Path) -> list[Path]:
    files = sorted((repo / ".langgraph" / "threads" / "doc" / "large").iterdir())
    assert len(files) == 2
    return files


def test_git_setup_lfs_marks_large_once_last_and_undo_removes_it(repo: Path) -> None:
    """``git-setup --lfs`` writes one LFS line, for ``large/`` only (not a thread named large),
    after the line of ``threads/**`` so git takes ``diff=lfs`` from it; a second run, and a run
    without ``--lfs``, change nothing; ``--undo`` removes it with the rest."""
    first = cli(None, "git-setup", "--lfs", cwd=repo)
    assert first.returncode == 0, first.stderr
    assert ".gitattributes: added /.langgraph/threads/*/large/** " + LFS in first.stdout
    assert lfs_lines(repo) == ["/.langgraph/threads/*/large/** " + LFS]
    block = (repo / ".gitattributes").read_text(encoding="utf-8").splitlines()
    assert block[-2] == lfs_lines(repo)[0]  # last in the block: its diff=lfs wins for large/
    big = large_files(repo)[0].relative_to(repo).as_posix()
    assert check_attr(repo, big) == {"filter": "lfs", "diff": "lfs", "merge": "lfs", "text": "unset"}
    named_large = ".langgraph/threads/large/checkpoints/x.json"
    assert check_attr(repo, named_large)["filter"] == "unspecified"
    assert check_attr(repo, named_large)["diff"] == "langgraph-repo"
    text = (repo / ".gitattributes").read_bytes()
    for again in (["--lfs"], []):
        proc = cli(None, "git-setup", *again, cwd=repo)
        assert "nothing to change: already set up" in proc.stdout
        assert (repo / ".gitattributes").read_bytes() == text
    undo = cli(None, "git-setup", "--undo", cwd=repo)
    assert ".gitattributes: removed /.langgraph/threads/*/large/** " + LFS in undo.stdout
    assert not (repo / ".gitattributes").exists()


def test_git_setup_lfs_without_git_lfs_says_to_install_it(repo: Path, tmp_path: Path) -> None:
    """Where ``git lfs version`` fails (git-lfs not installed: a PATH holding git alone), the
    attributes are written and stderr says to install git-lfs and run ``git lfs install``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").symlink_to(git(repo, "--exec-path").stdout.strip() + "/git")
    proc = cli(None, "git-setup", "--lfs", cwd=repo, env={"PATH": str(bin_dir)})
    assert proc.returncode == 0, proc.stderr
    assert "install git-lfs" in proc.stderr and "git lfs install" in proc.stderr
    assert len(lfs_lines(repo)) == 1


def test_a_pointer_in_large_names_the_file_and_git_lfs_pull_for_every_reader(repo: Path) -> None:
    """A clone that did not ``git lfs pull``: each ``large/`` file is its pointer. get_tuple,
    list, ``show`` and ``validate`` name the file and ``git lfs pull`` (validate says LFS
    pointer, not invalid JSON), and the git diff driver says what the file is."""
    root = repo / ".langgraph"
    for path in large_files(repo):
        path.write_bytes(pointer(path.read_bytes()))
    read = large_files(repo)[-1]
    saver = RepoSaver(root, durable=False)
    for attempt in (lambda: saver.get_tuple(cfg("doc")), lambda: list(saver.list(cfg("doc")))):
        with pytest.raises(LfsPointerError) as got:
            attempt()
        assert Path(got.value.path).name in {p.name for p in large_files(repo)}
        assert "git lfs pull" in str(got.value) and "restore it from git" not in str(got.value)
    shown = cli(root, "show", "doc")
    assert shown.returncode != 0 and read.name in shown.stderr and "git lfs pull" in shown.stderr
    valid = cli(root, "validate")
    problems = [ln for ln in valid.stdout.splitlines() if "/large/" in ln]
    assert valid.returncode == 1 and len(problems) == 2
    for problem in problems:
        assert "Git LFS pointer" in problem and "git lfs pull" in problem and "invalid JSON" not in problem
    (line,) = textconv.view(str(read))
    assert line.startswith("Git LFS pointer: sha256 ") and "git lfs pull" in line


def test_review_reads_a_pointer_through_the_lfs_object_and_names_one_it_lacks(tmp_path: Path) -> None:
    """The review reads git's blobs: with LFS every ``large/`` blob is a pointer. Without the
    object in the repository the review names the file and ``git lfs pull``; with it where
    git-lfs keeps it (``.git/lfs/objects/ab/cd/<oid>``) the review shows the value. Against
    the work tree, a file ``git lfs pull`` wrote whole is its committed pointer: unchanged."""
    repo = init_repo(tmp_path / "repo")
    (repo / "README.md").write_text("app\n", encoding="utf-8")
    commit_all(repo, "app")
    big_graph(RepoSaver(repo / ".langgraph", durable=False)).invoke({"document": BIG_TEXT}, cfg("doc"))
    values = {p: p.read_bytes() for p in large_files(repo)}
    for path, data in values.items():
        path.write_bytes(pointer(data))  # what git-lfs's clean filter commits
    commit_all(repo, "a big document, its large files in LFS")
    lacking = cli(None, "review", "HEAD~1..HEAD", cwd=repo)
    said = lacking.stdout + lacking.stderr
    assert lacking.returncode == 1 and "git lfs pull" in said
    assert all(p.name in said for p in values)
    for data in values.values():
        oid = hashlib.sha256(data).hexdigest()
        store = repo / ".git" / "lfs" / "objects" / oid[:2] / oid[2:4]
        store.mkdir(parents=True, exist_ok=True)
        (store / oid).write_bytes(data)
    whole = cli(None, "review", "HEAD~1..HEAD", cwd=repo)
    assert whole.returncode == 0 and "git lfs pull" not in whole.stdout + whole.stderr
    assert "summarise set summary: (none) → 16384 characters" in whole.stdout, whole.stdout
    for path, data in values.items():
        path.write_bytes(data)  # as `git lfs pull` checks them out
    pulled = cli(None, "review", "HEAD", cwd=repo)
    assert pulled.returncode == 0 and "no thread changed" in pulled.stdout, pulled.stdout


def test_review_reads_lfs_objects_only_for_large_files(tmp_path: Path) -> None:
    """Only a ``large/`` file (what ``git-setup --lfs`` marks) is read through git-lfs's store:
    a pointer committed in place of a checkpoint is what a checkout gives the app there, so the
    review reads the pointer too, though the store holds its object."""
    repo = init_repo(tmp_path / "repo")
    data = b'{"kind": "large_value"}\n'
    oid = hashlib.sha256(data).hexdigest()
    (repo / ".git" / "lfs" / "objects" / oid[:2] / oid[2:4]).mkdir(parents=True)
    (repo / ".git" / "lfs" / "objects" / oid[:2] / oid[2:4] / oid).write_bytes(data)
    paths = ["threads/t/large/a.json", "threads/t/checkpoints/a.json"]
    for path in paths:
        (repo / ".langgraph" / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / ".langgraph" / path).write_bytes(pointer(data))
    commit_all(repo, "pointers")
    made = materialize(repo, "HEAD", ".langgraph", ["threads"], tmp_path / "out")
    assert (made.root / paths[0]).read_bytes() == data
    assert (made.root / paths[1]).read_bytes() == pointer(data)
