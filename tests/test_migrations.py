"""Format versions and ``langgraph-repo migrate``.

Every fixture tree under tests/fixtures/ (one per format version, written by the release
that introduced it) must migrate to the current version, validate, and let the graphs
that wrote it resume. Each migration step has its own test; the command is shown to be
idempotent, all-or-nothing before it writes, and safe to kill half way.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from graphs import build_fixture_tree, cfg, chat_graph, normalised, resume_fixture_tree
from helpers import cli
from langgraph_checkpoint_repo import FileFormatError, RepoSaver, RepoStore, SchemaVersionError
from langgraph_checkpoint_repo.core.format.canonical import dump_json
from langgraph_checkpoint_repo.core.format.migrations import STEPS, migrate_root, upgrade, v1_to_v2
from langgraph_checkpoint_repo.core.format.validation import SCHEMA_VERSION, validate_read

FIXTURES = Path(__file__).parent / "fixtures"
FIXTURE_TREES = sorted(p for p in FIXTURES.iterdir() if p.is_dir() and p.name.startswith("v"))


def json_files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*.json"))
        if ".cache" not in p.parts and not p.name.startswith(".")
    }


def version_of(data: bytes) -> int:
    return int(json.loads(data)["schema_version"])


def copy_tree(src: Path, tmp_path: Path) -> Path:
    dst = tmp_path / src.name
    shutil.copytree(src, dst)
    return dst


# ----------------------------------------------------------------------------
# the fixture trees
# ----------------------------------------------------------------------------
def test_a_fixture_tree_is_committed_for_the_current_version() -> None:
    assert (FIXTURES / f"v{SCHEMA_VERSION}" / "threads").is_dir(), "run tests/fixtures/regenerate.py"
    assert [p.name for p in FIXTURE_TREES] == [f"v{n}" for n in range(min(STEPS), SCHEMA_VERSION + 1)]


@pytest.mark.parametrize(
    "tree", [t for t in FIXTURE_TREES if (FIXTURES / f"{t.name}.reads.json").is_file()], ids=lambda p: p.name
)
def test_a_migrated_tree_reads_exactly_as_the_release_that_wrote_it_read_it(
    tree: Path, tmp_path: Path
) -> None:
    """Every checkpoint of the migrated tree (values, channel versions, versions seen,
    metadata, parent, pending writes) reads the same as the previous release read the tree
    before it was migrated (``v<N>.reads.json``, written by that release with
    tests/fixtures/reads.py)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("fixture_reads", FIXTURES / "reads.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    root = copy_tree(tree, tmp_path)
    assert cli(root, "migrate").returncode == 0
    expected = json.loads((FIXTURES / f"{tree.name}.reads.json").read_text(encoding="utf-8"))
    got = module.reads(root)
    assert sorted(got) == sorted(expected)
    assert {k: v for k, v in got.items() if v != expected[k]} == {}


@pytest.mark.parametrize("tree", FIXTURE_TREES, ids=lambda p: p.name)
def test_every_fixture_tree_migrates_validates_and_resumes(tree: Path, tmp_path: Path) -> None:
    root = copy_tree(tree, tmp_path)
    old = json_files(root)
    done = cli(root, "migrate", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    stale = [rel for rel, data in old.items() if version_of(data) != SCHEMA_VERSION]
    assert report["changed"] == stale and report["files"] == len(old)
    assert all(version_of(d) == SCHEMA_VERSION for d in json_files(root).values())
    check = cli(root, "validate")
    assert check.returncode == 0, check.stdout + check.stderr
    # the graphs that wrote the tree carry on from it as from a tree this release wrote
    resumed = resume_fixture_tree(RepoSaver(root))
    fresh_root = tmp_path / "fresh"
    build_fixture_tree(fresh_root)
    fresh = resume_fixture_tree(RepoSaver(fresh_root))
    assert normalised(resumed) == normalised(fresh)
    assert resumed["fan"]["ran"] == ["bad"]  # the saved writes of "a" and "c" survived the migration
    assert resumed["ask"]["answer"] == "Ada" and len(resumed["big"]["document"]) == 16 * 1024


def test_store_items_of_an_older_format_are_migrated_and_read_back(tmp_path: Path) -> None:
    """RepoStore's items (store/) are files of the root like the threads: migrate upgrades
    them too, under their namespace's lock, and the store reads them as written."""
    root = copy_tree(FIXTURES / "v3", tmp_path)
    items = sorted(p.relative_to(root).as_posix() for p in (root / "store").rglob("*.json"))
    assert items and all(version_of((root / rel).read_bytes()) == 3 for rel in items)
    with pytest.raises(SchemaVersionError):
        RepoStore(root).get(("users", "ada"), "profile")
    done = cli(root, "migrate", "--json")
    assert done.returncode == 0, done.stderr
    assert set(items) <= set(json.loads(done.stdout)["changed"])
    assert all(version_of((root / rel).read_bytes()) == SCHEMA_VERSION for rel in items)
    store = RepoStore(root)
    got = store.get(("users", "ada"), "profile")
    assert got is not None and got.value == {"name": "Ada", "notes": ["likes tea"]}
    found = store.search(("users", "ada"))
    assert {(tuple(i.namespace), i.key) for i in found} == {
        (("users", "ada"), "profile"),
        (("users", "ada", "preferences"), "theme"),
    }


# ----------------------------------------------------------------------------
# the steps, one by one
# ----------------------------------------------------------------------------
def v1_files(kind_folder: str) -> list[Path]:
    return sorted((FIXTURES / "v1" / "threads").rglob(f"{kind_folder}/*.json"))


def test_v1_to_v2_drops_the_repeated_checkpoint_id_and_changes_nothing_else() -> None:
    files = v1_files("checkpoints")
    assert len(files) > 30
    for path in files:
        doc = json.loads(path.read_bytes())
        before = copy.deepcopy(doc)
        out = v1_to_v2(doc, str(path))
        assert doc == before  # a pure function: its input is untouched
        assert out["schema_version"] == 2 and "id" not in out["checkpoint"]
        expected = copy.deepcopy(before)
        expected["schema_version"] = 2
        del expected["checkpoint"]["id"]
        assert out == expected
        if SCHEMA_VERSION == 2:
            validate_read(out, "checkpoint", str(path))


@pytest.mark.parametrize("folder", ["writes", "large"])
def test_v1_to_v2_changes_only_the_version_of_other_files(folder: str) -> None:
    files = v1_files(folder)
    assert files
    for path in files:
        doc = json.loads(path.read_bytes())
        assert v1_to_v2(doc, str(path)) == {**doc, "schema_version": 2}


def test_v1_to_v2_refuses_two_ids_that_disagree_naming_the_file() -> None:
    path = v1_files("checkpoints")[0]
    doc = json.loads(path.read_bytes())
    doc["checkpoint"]["id"] = "1f000000-0000-6000-8000-000000000000"
    with pytest.raises(FileFormatError) as info:
        v1_to_v2(doc, str(path))
    assert info.value.path == str(path) and info.value.pointer == "/checkpoint/id"
    assert "differs from checkpoint_id" in str(info.value)


def test_upgrade_chains_steps_and_refuses_unknown_versions() -> None:
    path = v1_files("checkpoints")[0]
    doc = json.loads(path.read_bytes())
    out = upgrade(doc, str(path))
    assert out is not None and out["schema_version"] == SCHEMA_VERSION
    assert upgrade(out, str(path)) is None  # already current: nothing to do
    with pytest.raises(SchemaVersionError, match="newer release"):
        upgrade({**doc, "schema_version": SCHEMA_VERSION + 1}, str(path))
    with pytest.raises(SchemaVersionError, match="older than any version this release migrates"):
        upgrade({**doc, "schema_version": 0}, str(path))


# ----------------------------------------------------------------------------
# the command
# ----------------------------------------------------------------------------
def test_dry_run_lists_what_a_real_run_changes_and_changes_nothing(tmp_path: Path) -> None:
    root = copy_tree(FIXTURES / "v1", tmp_path)
    before = json_files(root)
    dry = cli(root, "migrate", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    assert json_files(root) == before
    real = cli(root, "migrate", "--json")
    assert json.loads(dry.stdout)["changed"] == json.loads(real.stdout)["changed"] == sorted(before)
    changed = {rel for rel, data in json_files(root).items() if data != before[rel]}
    assert changed == set(before)


def test_second_run_changes_nothing(tmp_path: Path) -> None:
    root = copy_tree(FIXTURES / "v1", tmp_path)
    assert cli(root, "migrate").returncode == 0
    after_first = json_files(root)
    again = cli(root, "migrate")
    assert again.returncode == 0
    assert again.stdout.startswith(
        f"nothing to migrate: {len(after_first)} files, all at version {SCHEMA_VERSION}"
    )
    assert json_files(root) == after_first


@pytest.mark.parametrize(
    ("damage", "words"),
    [
        ("ids", "differs from checkpoint_id"),
        ("json", "invalid JSON"),
        ("newer", "newer release"),
        ("schema", "/metadata"),
    ],
)
def test_one_bad_file_stops_the_run_before_any_file_changes(tmp_path: Path, damage: str, words: str) -> None:
    root = copy_tree(FIXTURES / "v1", tmp_path)
    victim = sorted((root / "threads" / "sub").rglob("checkpoints/*.json"))[-1]  # near the end of the walk
    doc = json.loads(victim.read_bytes())
    if damage == "ids":
        doc["checkpoint"]["id"] = "1f000000-0000-6000-8000-000000000000"
    elif damage == "newer":
        doc["schema_version"] = SCHEMA_VERSION + 1
    elif damage == "schema":
        doc["metadata"] = ["not", "an", "object"]
    victim.write_bytes(b'{"schema_version": 1,' if damage == "json" else dump_json(doc))
    before = json_files(root)
    run = cli(root, "migrate")
    assert run.returncode != 0
    assert str(victim) in run.stderr and words in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1  # one line, no traceback
    assert json_files(root) == before


def _to_v1(doc: dict[str, Any]) -> dict[str, Any]:
    """The inverse of v1_to_v2: how this release's files looked in format 1."""
    out = copy.deepcopy(doc)
    out["schema_version"] = 1
    if out["kind"] == "checkpoint":
        out["checkpoint"]["id"] = out["checkpoint_id"]
    return out


@pytest.fixture
def big_v1_root(tmp_path: Path) -> Path:
    """Some 600 files in format 1: enough that a migration takes a while to write."""
    root = tmp_path / "big"
    saver = RepoSaver(root, durable=False)
    graph = chat_graph(saver)
    for t in range(30):
        for turn in range(4):
            graph.invoke({"messages": [HumanMessage(content=f"turn {turn}")]}, cfg(f"thread-{t:02d}"))
    for path in root.rglob("*.json"):
        path.write_bytes(dump_json(_to_v1(json.loads(path.read_bytes()))))
    return root


def _wait_for_version(path: Path, proc: subprocess.Popen[bytes], deadline: float) -> None:
    while version_of(path.read_bytes()) != SCHEMA_VERSION:
        assert proc.poll() is None, "migrate finished before it could be killed"
        assert time.monotonic() < deadline, "migrate never reached the file"
        time.sleep(0.0005)


def test_killed_half_way_loses_no_file_and_a_rerun_finishes(big_v1_root: Path) -> None:
    root = big_v1_root
    original = json_files(root)
    expected = {rel: dump_json(upgrade(json.loads(data), rel)) for rel, data in original.items()}
    order = list(original)  # the walk's order: threads sorted, then folders and files sorted
    # kill when a file a quarter of the way, then one three quarters of the way, has been replaced
    for mark in (order[len(order) // 4], order[3 * len(order) // 4]):
        proc = subprocess.Popen(
            [sys.executable, "-m", "langgraph_checkpoint_repo", "--root", str(root), "migrate"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            _wait_for_version(root / mark, proc, time.monotonic() + 120)
            os.kill(proc.pid, signal.SIGKILL)
        finally:
            proc.wait()
        assert proc.returncode == -signal.SIGKILL
        now = json_files(root)
        assert now.keys() == original.keys()  # no file lost or added
        old = [rel for rel in now if now[rel] == original[rel]]
        new = [rel for rel in now if now[rel] == expected[rel]]
        assert sorted(old + new) == sorted(now)  # every file wholly old or wholly new
        assert old and new  # the kill really landed half way
        assert order.index(mark) < len(order) - 1 and order[-1] in old
        # readers skip the leftovers a kill may leave: only temp files, named as such
        leftovers = [p for p in root.rglob("*") if p.is_file() and not p.name.endswith((".json", ".lock"))]
        assert all(
            p.name.endswith(".tmp") and p.name.startswith(".") for p in leftovers if p.name != ".gitignore"
        )
    rerun = cli(root, "migrate", "--json")
    assert rerun.returncode == 0, rerun.stderr
    assert json_files(root) == expected
    assert cli(root, "validate").returncode == 0
    assert cli(root, "migrate", "--json").stdout.count('"migrated": 0') == 1
    graph = chat_graph(RepoSaver(root))
    out = graph.invoke({"messages": [HumanMessage(content="after")]}, cfg("thread-29"))
    assert [m.content for m in out["messages"]][-2:] == ["after", "echo: after"]


def all_paths(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


def test_dry_run_creates_no_file_at_all(tmp_path: Path) -> None:
    root = copy_tree(FIXTURES / "v1", tmp_path)
    (root / ".gitignore").unlink()
    before = all_paths(root)
    assert cli(root, "migrate", "--dry-run").returncode == 0
    assert all_paths(root) == before  # no lock files, no .gitignore


@pytest.mark.parametrize(
    ("plant", "words"),
    [
        ("threads/Not-A-Thread/checkpoints/x.json", "not a thread folder name"),
        ("threads/chat/notes/x.json", "stray file"),
    ],
)
def test_stray_entries_stop_migrate_with_one_line_naming_them(tmp_path: Path, plant: str, words: str) -> None:
    root = copy_tree(FIXTURES / "v1", tmp_path)
    target = root / plant
    target.parent.mkdir(parents=True)
    target.write_text('{"schema_version": 1, "kind": "note"}')
    before = json_files(root)
    run = cli(root, "migrate")
    assert run.returncode == 4, run.stderr
    assert words in run.stderr and len(run.stderr.strip().splitlines()) == 1
    assert json_files(root) == before


@pytest.mark.parametrize("removed", ["store/users/ada/profile.json", "threads/fork"])
def test_a_file_removed_between_the_passes_is_passed_over_and_the_rest_migrated(
    tmp_path: Path, removed: str
) -> None:
    """An item deleted (RepoStore.delete) or a thread deleted while migrate runs: the second
    pass passes it over and upgrades every other file; it crashed on the missing file, with
    the thread files already rewritten and the items after it left at the old version."""
    root = copy_tree(FIXTURES / "v3", tmp_path)
    total = len(json_files(root))
    target = root / removed
    done = {"files": 0}

    def between_the_passes(n: int) -> None:
        done["files"] += n
        if done["files"] == total + 1 and target.exists():  # the first file of the second pass
            shutil.rmtree(target) if target.is_dir() else target.unlink()

    report = migrate_root(root, progress=between_the_passes)
    assert not target.exists() and report.files == total
    assert all(version_of(d) == SCHEMA_VERSION for d in json_files(root).values())
    check = cli(root, "validate")
    assert check.returncode == 0, check.stdout + check.stderr
