"""The derived index under .cache/index (index.py): used by a fresh saver, never over the files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.graphs import LogState, cfg, line_graph

from langgraph_checkpoint_repo import RepoSaver
from langgraph_checkpoint_repo.core.caches import RACY_NS
from langgraph_checkpoint_repo.core.index import decode_listing, decode_meta, encode_listing, meta_from_rows
from langgraph_checkpoint_repo.core.layout import Layout

TURNS = 25  # three checkpoints a turn: over index.MIN_NAMES, so the folder gets an index


def note(state: LogState) -> dict[str, Any]:
    return {"log": [f"entry {len(state['log'])}"]}


#: the folder of the module's written threads (``written``), one per thread id
TEMPLATES: dict[str, Path] = {}


@pytest.fixture(scope="module", autouse=True)
def _templates(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    TEMPLATES["folder"] = tmp_path_factory.mktemp("index-templates")
    yield
    TEMPLATES.clear()


def written(thread_id: str) -> Path:
    """A root whose thread ``thread_id`` a graph ran TURNS turns on (durable, as a user's),
    written once per module: the tests read or damage copies of it."""
    if thread_id not in TEMPLATES:
        root = TEMPLATES["folder"] / thread_id / ".langgraph"
        graph = line_graph(LogState, RepoSaver(root), note=note)
        for turn in range(TURNS):
            graph.invoke({"log": [f"user {turn}"]}, cfg(thread_id))
        TEMPLATES[thread_id] = root
    return TEMPLATES[thread_id]


def _no_index(folder: str, names: list[str]) -> list[str]:
    """What copytree leaves out: the derived index (the writer's own reads may have left one
    once its files aged past the racy window; its stat keys would not match the copies)."""
    return ["index"] if Path(folder).name == ".cache" else []


def filled_root(tmp_path: Path, thread_id: str = "t") -> Path:
    """``tmp_path``'s root with the thread ``thread_id`` of ``written`` copied in (files with
    their mtimes, no derived index: a fresh saver builds that), settled as between processes."""
    root = tmp_path / ".langgraph"
    template = written(thread_id)
    if root.exists():
        shutil.copytree(template / "threads" / thread_id, root / "threads" / thread_id)
    else:
        shutil.copytree(template, root, ignore=_no_index)
    settle()
    return root


def settle() -> None:
    """Let the files age past the racy window, as they do between two processes."""
    time.sleep(2 * RACY_NS / 1e9)


def index_of(root: Path, suffix: str, thread_id: str = "t") -> Path:
    return root / ".cache" / "index" / "threads" / thread_id / f"checkpoints{suffix}"


def summary(saver: RepoSaver, thread_id: str = "t", **filters: Any) -> list[tuple[str, Any, Any]]:
    return [
        (t.config["configurable"]["checkpoint_id"], t.metadata["step"], t.checkpoint["channel_values"])
        for t in saver.list(cfg(thread_id), filter=filters or None)
    ]


class ListdirSpy:
    """Counts real ``os.listdir`` calls per folder (the call itself still runs)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[str] = []
        real = os.listdir

        def listdir(path: Any = ".") -> list[str]:
            self.calls.append(str(path))
            return real(path)

        monkeypatch.setattr(os, "listdir", listdir)

    def listed(self, folder: Path) -> bool:
        return str(folder) in self.calls


def test_a_fresh_saver_finds_the_latest_checkpoint_without_listing_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = filled_root(tmp_path)
    want = RepoSaver(root).get_tuple(cfg("t"))  # the first process lists, and leaves the index
    assert want is not None
    assert index_of(root, ".list").is_file()
    spy = ListdirSpy(monkeypatch)
    got = RepoSaver(root).get_tuple(cfg("t"))
    assert got is not None and got.checkpoint == want.checkpoint and got.config == want.config
    assert not spy.listed(Layout(root).checkpoints_dir("t", ""))


def test_a_fresh_saver_filters_from_the_index_with_the_same_results(tmp_path: Path) -> None:
    root = filled_root(tmp_path)
    first = summary(RepoSaver(root), step=4)
    assert len(first) == 1
    assert index_of(root, ".meta").is_file()
    for step in (4, 0, 1):
        assert summary(RepoSaver(root), step=step) == summary(RepoSaver(root, durable=False), step=step)
    shutil.rmtree(root / ".cache" / "index")
    assert summary(RepoSaver(root), step=4) == first


def test_a_checkpoint_added_by_another_process_is_seen_despite_the_index(tmp_path: Path) -> None:
    root = filled_root(tmp_path)
    RepoSaver(root).get_tuple(cfg("t"))
    list(RepoSaver(root).list(cfg("t"), filter={"step": 3}))
    graph = line_graph(LogState, RepoSaver(root), note=note)
    graph.invoke({"log": ["one more"]}, cfg("t"))  # another saver: this process's caches don't know
    fresh = RepoSaver(root)
    latest = fresh.get_tuple(cfg("t"))
    assert latest is not None and latest.checkpoint["channel_values"]["log"][-2:] == [
        "one more",
        f"entry {2 * TURNS + 1}",
    ]
    assert len(list(fresh.list(cfg("t")))) == 3 * TURNS + 3


def test_a_hand_edit_of_metadata_is_seen_by_the_next_fresh_filter(tmp_path: Path) -> None:
    root = filled_root(tmp_path)
    assert len(summary(RepoSaver(root), step=5)) == 1  # the index now holds every step
    path = RepoSaver(root).store.layout.checkpoint_path("t", "", summary(RepoSaver(root), step=5)[0][0])
    text = path.read_text()
    assert '"step": 5' in text
    with open(path, "r+") as fh:  # in place: same inode, same folder, only the file's stat changes
        fh.write(text.replace('"step": 5', '"step": 9005'))
        fh.truncate()
    fresh = RepoSaver(root)
    assert summary(fresh, step=5) == []
    assert [s for _, s, _ in summary(RepoSaver(root), step=9005)] == [9005]


def test_a_fresh_filter_and_the_lineage_check_of_its_first_result_stat_each_checkpoint_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fresh filter checks each kept metadata entry by one lstat of its checkpoint; its first
    result's pending writes need the lineage, checked by one lstat a checkpoint too: the keys
    the filter took up to that result serve it (ThreadStore.observing), so no checkpoint is
    stat-ed twice for the two (5,000 lstats fewer at 5,000 checkpoints, k = 0)."""
    root = filled_root(tmp_path)
    want = summary(RepoSaver(root), step=1)
    assert index_of(root, ".meta").is_file() and index_of(root, ".lineage").is_file()
    folder = str(Layout(root).checkpoints_dir("t", "")) + os.sep
    stats: dict[str, int] = {}
    real_lstat = os.lstat

    def lstat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        caller = sys._getframe(1).f_code.co_filename
        if caller.endswith("caches.py"):  # stat_key_of: count it for whoever called it
            caller = sys._getframe(2).f_code.co_filename
        name = os.fsdecode(path)  # metaview.py's loop asks by bytes
        if name.startswith(folder) and caller.endswith(("index.py", "metaview.py", "threads.py")):
            stats[name] = stats.get(name, 0) + 1
        return real_lstat(path, *args, **kwargs)

    monkeypatch.setattr(os, "lstat", lstat)
    got = next(RepoSaver(root).list(cfg("t"), filter={"step": 1}))
    monkeypatch.undo()
    assert got.config["configurable"]["checkpoint_id"] == want[0][0]
    assert len(stats) == len(os.listdir(folder))  # every checkpoint: the scan, then the lineage
    twice = sorted(p for p, n in stats.items() if n > 1)
    assert not twice, (len(twice), len(stats), twice[:2])


@pytest.mark.parametrize("damage", [b"", b"{not json", b'{"index_version": 99}\nx', None])
def test_a_damaged_index_is_ignored_and_rewritten(tmp_path: Path, damage: bytes | None) -> None:
    root = filled_root(tmp_path)
    want_latest = RepoSaver(root).get_tuple(cfg("t"))
    want = summary(RepoSaver(root), step=6)
    for suffix in (".list", ".meta"):
        path = index_of(root, suffix)
        data = path.read_bytes()
        # None: a listing that lost its last name, a metadata file cut short
        path.write_bytes(
            damage if damage is not None else data[: data.rindex(b"\n" if suffix == ".list" else b"]")]
        )
    fresh = RepoSaver(root)
    got = fresh.get_tuple(cfg("t"))
    assert got is not None and want_latest is not None and got.config == want_latest.config
    assert summary(fresh, step=6) == want
    layout = Layout(root)
    folder = layout.checkpoints_dir("t", "")
    listing = decode_listing(layout, folder, index_of(root, ".list").read_bytes())
    assert listing is not None and len(listing[1]) == 3 * TURNS
    assert decode_meta(layout, folder, index_of(root, ".meta").read_bytes()) is not None


@pytest.mark.parametrize("key", ["$type", "\\u0024type", "\\u0024TYPE"])
def test_an_index_entry_naming_a_type_is_never_used(tmp_path: Path, key: str) -> None:
    root = filled_root(tmp_path)
    want = summary(RepoSaver(root), step=2)
    path = index_of(root, ".meta")
    doc = json.loads(path.read_text())
    for row in doc["entries"]:
        row[5] = {"step": 2, "forged": {"X": ["os", "system"]}}
    path.write_text(json.dumps(doc).replace('"X"', f'"{key}"'))
    layout = Layout(root)
    assert decode_meta(layout, layout.checkpoints_dir("t", ""), path.read_bytes()) is None
    assert summary(RepoSaver(root), step=2) == want


def test_the_index_is_never_written_or_read_through_a_symlink(tmp_path: Path) -> None:
    root = filled_root(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / ".cache").mkdir(exist_ok=True)
    shutil.rmtree(root / ".cache" / "index", ignore_errors=True)  # the writer's own, if it left one
    (root / ".cache" / "index").symlink_to(outside, target_is_directory=True)
    saver = RepoSaver(root)
    assert saver.get_tuple(cfg("t")) is not None
    assert len(summary(saver, step=3)) == 1
    assert list(outside.iterdir()) == []


def test_reads_work_when_the_index_cannot_be_written(tmp_path: Path) -> None:
    root = filled_root(tmp_path)
    (root / ".cache").mkdir(exist_ok=True)
    shutil.rmtree(root / ".cache" / "index", ignore_errors=True)
    (root / ".cache" / "index").write_text("a file where the index folder would go")
    saver = RepoSaver(root)
    assert saver.get_tuple(cfg("t")) is not None
    assert len(summary(saver, step=3)) == 1


def test_the_index_is_never_committed(tmp_path: Path) -> None:
    root = filled_root(tmp_path)
    summary(RepoSaver(root), step=1)
    assert index_of(root, ".list").is_file() and index_of(root, ".meta").is_file()
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@t"
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "add", "-A"], check=True, env=env)
    staged = subprocess.run(
        ["git", "-C", str(tmp_path), "diff", "--cached", "--name-only"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    assert any(name.startswith(".langgraph/threads/") for name in staged)
    assert not any("/.cache/" in name for name in staged)


def test_fsck_reports_a_damaged_or_orphaned_index_and_repair_rebuilds_it(tmp_path: Path) -> None:
    from tests.helpers import cli

    root = filled_root(tmp_path)
    filled_root(tmp_path, "gone")
    for thread_id in ("t", "gone"):
        summary(RepoSaver(root), thread_id, step=1)
    index_of(root, ".list").write_bytes(b"damaged")
    RepoSaver(root).delete_thread("gone")
    leftover = index_of(root, ".list").parent / ".checkpoints.list.abc123.tmp"
    leftover.write_bytes(b"half")

    found = cli(root, "fsck", "--json")
    assert found.returncode == 1, found.stdout + found.stderr
    index_findings = {f["path"]: f for f in json.loads(found.stdout)["findings"] if f["kind"] == "index"}
    # the writer may have recorded the lineage of "gone" too (format 4 reads it to find a
    # checkpoint's children): orphaned as well
    index_findings.pop(str(index_of(root, ".lineage", "gone")), None)
    assert set(index_findings) == {
        str(index_of(root, ".list")),
        str(index_of(root, ".list", "gone")),
        str(index_of(root, ".meta", "gone")),
        str(leftover),
    }
    assert all(f["repairable"] for f in index_findings.values())

    repaired = cli(root, "fsck", "--repair")
    assert repaired.returncode == 0, repaired.stdout + repaired.stderr
    assert not index_of(root, ".list", "gone").exists() and not leftover.exists()
    layout = Layout(root)
    listing = decode_listing(layout, layout.checkpoints_dir("t", ""), index_of(root, ".list").read_bytes())
    assert listing is not None and len(listing[1]) == 3 * TURNS
    again = cli(root, "fsck")
    assert again.returncode == 0, again.stdout


def test_a_listing_that_names_a_missing_checkpoint_is_listed_again_not_trusted_twice(tmp_path: Path) -> None:
    """A recorded listing whose folder key still matches but names a checkpoint that is gone
    (forged, or a filesystem whose clock is too coarse for the key): the latest is read anyway."""
    root = filled_root(tmp_path)
    want = RepoSaver(root).get_tuple(cfg("t"))
    assert want is not None
    layout = Layout(root)
    folder = layout.checkpoints_dir("t", "")
    path = index_of(root, ".list")
    key, names = decode_listing(layout, folder, path.read_bytes()) or ((0, 0, 0, 0), [])
    path.write_bytes(
        encode_listing(layout, folder, key, [*names, "ffffffff-ffff-6fff-bfff-ffffffffffff.json"])
    )
    got = RepoSaver(root).get_tuple(cfg("t"))
    assert got is not None and got.config == want.config


def test_a_fifo_in_the_index_is_never_waited_on(tmp_path: Path) -> None:
    root = filled_root(tmp_path)
    path = index_of(root, ".list")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    assert RepoSaver(root).get_tuple(cfg("t")) is not None  # would block forever on open()


def test_reads_work_when_an_index_file_cannot_be_replaced(tmp_path: Path) -> None:
    """A folder where the index file goes: the rename fails, the read goes on, no temp is left."""
    root = filled_root(tmp_path)
    index_of(root, ".list").mkdir(parents=True)
    index_of(root, ".meta").mkdir(parents=True)
    saver = RepoSaver(root)
    assert saver.get_tuple(cfg("t")) is not None
    assert len(summary(saver, step=3)) == 1
    assert sorted(p.name for p in index_of(root, ".list").parent.iterdir()) == [
        "checkpoints.lineage",  # a file where none was in the way: written
        "checkpoints.list",
        "checkpoints.meta",
    ]


def test_fsck_repair_rebuilds_the_index_around_a_checkpoint_that_does_not_read(tmp_path: Path) -> None:
    from tests.helpers import cli

    root = filled_root(tmp_path)
    summary(RepoSaver(root), step=1)
    index_of(root, ".meta").write_bytes(b"damaged")
    broken = sorted(Layout(root).checkpoints_dir("t", "").iterdir())[3]
    broken.write_text("{not json")
    repaired = cli(root, "fsck", "--repair")
    assert repaired.returncode == 1, repaired.stdout + repaired.stderr
    assert str(broken.name) in repaired.stdout and "error" not in repaired.stderr.lower()
    assert not index_of(root, ".meta").exists() or index_of(root, ".meta").read_bytes() != b"damaged"


def test_a_file_changed_on_a_whole_second_is_not_settled_for_two_seconds(tmp_path: Path) -> None:
    """Filesystems with whole-second timestamps can change a file again unseen within that second."""
    from langgraph_checkpoint_repo.core.caches import settled

    path = tmp_path / "f.json"
    path.write_text("{}")
    whole = (time.time_ns() // 1_000_000_000 - 1) * 1_000_000_000
    os.utime(path, ns=(whole, whole))
    st = os.lstat(path)
    assert not settled(st, whole + 500_000_000)  # half a second later: not yet
    assert settled(st, whole + 2_500_000_000)
    os.utime(path, ns=(whole + 1_234_567, whole + 1_234_567))  # a nanosecond clock
    assert settled(os.lstat(path), whole + 500_000_000)


def forge_meta(root: Path, change: Any) -> None:
    path = index_of(root, ".meta")
    doc = json.loads(path.read_text())
    for row in doc["entries"]:
        change(row)
    path.write_text(json.dumps(doc))


def test_delete_for_runs_judges_the_files_never_the_index(tmp_path: Path) -> None:
    root = filled_root(tmp_path)
    summary(RepoSaver(root), step=1)
    forge_meta(root, lambda row: row[5].__setitem__("run_id", "r1"))  # stat keys kept: trusted by filters
    before = len(list(RepoSaver(root).list(cfg("t"))))
    RepoSaver(root).delete_for_runs(["r1"])
    assert len(list(RepoSaver(root).list(cfg("t")))) == before


def test_an_index_entry_too_deep_to_write_back_never_fails_a_filter(tmp_path: Path) -> None:
    root = filled_root(tmp_path)
    want = summary(RepoSaver(root), step=2)

    def change(row: list[Any]) -> None:
        row[1] += 1  # every entry stale: the filter reads every header and writes the index back

    forge_meta(root, change)
    path = index_of(root, ".meta")
    deep = '{"x":' * 1020 + "1" + "}" * 1020  # orjson reads it; json.dumps cannot write it back
    path.write_text(path.read_text()[:-2] + ',["zzzz",1,1,1,1,' + deep + "]]}")
    assert summary(RepoSaver(root), step=2) == want


def test_a_recorded_name_that_is_no_id_makes_the_folder_listed_again(tmp_path: Path) -> None:
    root = filled_root(tmp_path)
    want = RepoSaver(root).get_tuple(cfg("t"))
    layout = Layout(root)
    folder = layout.checkpoints_dir("t", "")
    key, names = decode_listing(layout, folder, index_of(root, ".list").read_bytes()) or ((0, 0, 0, 0), [])
    index_of(root, ".list").write_bytes(encode_listing(layout, folder, key, sorted([*names, "zz%%%.json"])))
    got = RepoSaver(root).get_tuple(cfg("t"))
    assert got is not None and want is not None and got.config == want.config


def test_fsck_reports_a_listing_that_hides_a_checkpoint_though_its_folder_is_unchanged(
    tmp_path: Path,
) -> None:
    from tests.helpers import cli

    root = filled_root(tmp_path)
    RepoSaver(root).get_tuple(cfg("t"))
    layout = Layout(root)
    folder = layout.checkpoints_dir("t", "")
    key, names = decode_listing(layout, folder, index_of(root, ".list").read_bytes()) or ((0, 0, 0, 0), [])
    index_of(root, ".list").write_bytes(encode_listing(layout, folder, key, names[:-1]))
    found = cli(root, "fsck", "--json")
    kinds = {f["path"]: f["kind"] for f in json.loads(found.stdout)["findings"]}
    assert kinds.get(str(index_of(root, ".list"))) == "index", found.stdout
    assert cli(root, "fsck", "--repair").returncode == 0
    fresh = RepoSaver(root).get_tuple(cfg("t"))
    assert fresh is not None and fresh.config["configurable"]["checkpoint_id"] == names[-1][:-5]


GOOD_ROW: list[Any] = ["1f0-a", 10, 11, 120, 7, {"step": 1}]
BAD_ROWS: dict[str, Any] = {
    "not a list": ("1f0-a", 10, 11, 120, 7, {}),
    "five columns": ["1f0-a", 10, 11, 120, 7],
    "seven columns": [*GOOD_ROW, 1],
    "an id not a string": [1, 10, 11, 120, 7, {}],
    "an empty id": ["", 10, 11, 120, 7, {}],
    "a hidden name": [".1f0", 10, 11, 120, 7, {}],
    "a slash": ["a/b", 10, 11, 120, 7, {}],
    "a backslash": ["a\\b", 10, 11, 120, 7, {}],
    "a key of floats": ["1f0-b", 10.0, 11, 120, 7, {}],
    "a key of booleans": ["1f0-b", 10, 11, True, 7, {}],
    "a tree not an object": ["1f0-b", 10, 11, 120, 7, []],
}


@pytest.mark.parametrize("bad", sorted(BAD_ROWS))
def test_a_metadata_index_with_one_bad_row_among_good_ones_is_not_used(bad: str) -> None:
    """The rows are checked column by column for speed: one row off anywhere among thousands
    still makes the whole file unused (read from the checkpoints instead), as the row-by-row
    check did; good rows give each checkpoint its file, stat key and metadata."""
    good = [[f"1f0-{i:04d}", 10, 11, 120 + i, 7, {"step": i}] for i in range(2000)]
    assert meta_from_rows("/r/t/checkpoints", good) == {
        f"1f0-{i:04d}": (f"/r/t/checkpoints/1f0-{i:04d}.json", (10, 11, 120 + i, 7), {"step": i}, {"step": i})
        for i in range(2000)
    }
    assert meta_from_rows("/r/t/checkpoints", []) == {}
    for at in (0, 1000, 1999):
        rows = [*good[:at], BAD_ROWS[bad], *good[at:]]
        assert meta_from_rows("/r/t/checkpoints", rows) is None, (bad, at)
