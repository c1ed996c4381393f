"""Faults at each step of a durable write, with a real graph on a real filesystem.

A write (durable.py) is: open a temp file next to the target, write it, fsync it, rename it
over the target with ``os.replace``, fsync the folder. ``FaultyOS`` stands in for the
``os`` module *inside durable.py only* (nothing else in the process is touched) and makes
one chosen call fail for one chosen file: the Nth checkpoint, writes or large-value file
written while a real graph runs. The faults:

* ``fsync``: the temp file is written, its fsync fails (EIO);
* ``replace``: the temp file is written and fsynced, the rename fails (EIO);
* ``after-replace``: the rename happened, then an error before the folder fsync (EIO);
* ``fsync-dir``: the fsync of the folder fails (EIO);
* ``enospc``: ``os.write`` writes part of the file, then fails with ENOSPC;
* ``eacces``: opening the temp file fails with EACCES.

Each time the very exception object raised by the injected call reaches the caller
(``graph.invoke``, ``put``, ``put_writes``); every checkpoint put before it loads, the
root validates and fsck finds no debris; once the fault is gone the same saver (warm
caches and all) finishes the graph in the state of a run that never failed.

A read-only root is made with ``chmod 0o555`` on every folder of the tree. As root that
stops nothing, so ``FaultyOS`` also applies the permission check root skips: a call that
would create, rename or remove an entry in a folder without write permission fails with
EACCES, as it does for everybody else. The same test therefore runs as root and not.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint

from crash_child import build_graph, cfg, run_thread, turn_input
from langgraph_checkpoint_repo import RepoSaver, RepoStore
from langgraph_checkpoint_repo.core import durable as durable_mod
from langgraph_checkpoint_repo.core.checks import Validator, fsck
from langgraph_checkpoint_repo.core.writing import Writer
from langgraph_checkpoint_repo.readmodel.reader import Reader

TURNS = 4
FAULT_TURN = 2  # turns before it run cleanly; the fault hits a write of this turn
# kind -> folder name
KINDS = {
    "checkpoint": "checkpoints",
    "writes": "writes",
    "large": "large",
    "object": "objects",
    "item": "memories",  # a RepoStore item of namespace (..., "memories")
}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT


def final_path(path: str | os.PathLike[str]) -> Path:
    """The file a temp file stands for (``.name.random.tmp`` -> ``name``)."""
    p = Path(path)
    if p.name.startswith(".") and p.name.endswith(".tmp"):
        return p.with_name(p.name[1:].rsplit(".", 2)[0])
    return p


class FaultyOS:
    """The ``os`` module as durable.py sees it, with one fault armed (or a read-only tree)."""

    def __init__(self, fault: str | None = None, kind: str = "checkpoint", nth: int = 1) -> None:
        self.fault, self.folder, self.nth = fault, KINDS[kind], nth
        self.seen = 0  # target files of this kind opened so far
        self.target: Path | None = None  # the file the fault hit
        self.raised: BaseException | None = None
        self.fds: dict[int, Path] = {}
        self.renamed = False
        self.writes_to_target = 0
        self.read_only = False

    def arm(self, fault: str, kind: str, nth: int) -> None:
        """Make the ``nth`` file of ``kind`` opened from now on meet ``fault``."""
        self.fault, self.folder, self.nth = fault, KINDS[kind], nth
        self.seen, self.target, self.raised, self.renamed, self.writes_to_target = 0, None, None, False, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def _fire(self, exc: BaseException) -> BaseException:
        self.raised = exc
        self.fault = None  # one shot
        return exc

    def _deny_if_read_only(self, path: str | os.PathLike[str]) -> None:
        # the permission check root is exempt from: no new or removed entry in a folder
        # without write permission (for other users the real call fails the same way)
        if self.read_only and not os.stat(Path(path).parent).st_mode & stat.S_IWUSR:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))

    def open(self, path: Any, flags: int, mode: int = 0o777, *args: Any, **kwargs: Any) -> int:
        if flags & _WRITE_FLAGS:
            self._deny_if_read_only(path)
        target = final_path(path)
        armed = self.fault is not None and flags & os.O_CREAT and target.parent.name == self.folder
        if armed:
            self.seen += 1
        if armed and self.seen == self.nth:
            self.target = target
            if self.fault == "eacces":
                raise self._fire(PermissionError(errno.EACCES, "injected: permission denied", str(path)))
        fd = os.open(path, flags, mode, *args, **kwargs)
        self.fds[fd] = Path(path)
        return fd

    def close(self, fd: int) -> None:
        self.fds.pop(fd, None)
        os.close(fd)

    def write(self, fd: int, data: Any) -> int:
        path = self.fds.get(fd)
        if self.fault == "enospc" and path is not None and final_path(path) == self.target:
            self.writes_to_target += 1
            if self.writes_to_target > 1:
                raise self._fire(OSError(errno.ENOSPC, "injected: no space left on device", str(path)))
            return os.write(fd, bytes(data)[: max(1, len(data) // 2)])  # a short write first
        return os.write(fd, data)

    def fsync(self, fd: int) -> None:
        path = self.fds.get(fd)
        if path is not None and self.target is not None:
            if self.fault == "fsync" and final_path(path) == self.target:
                raise self._fire(OSError(errno.EIO, "injected: fsync of the temp file failed", str(path)))
            if self.fault == "fsync-dir" and self.renamed and path == self.target.parent:
                raise self._fire(OSError(errno.EIO, "injected: fsync of the folder failed", str(path)))
        os.fsync(fd)

    def replace(self, src: Any, dst: Any) -> None:
        self._deny_if_read_only(dst)
        if self.target is not None and Path(dst) == self.target:
            if self.fault == "replace":
                raise self._fire(OSError(errno.EIO, "injected: rename failed", str(dst)))
            os.replace(src, dst)
            self.renamed = True
            if self.fault == "after-replace":
                raise self._fire(OSError(errno.EIO, "injected: error after the rename", str(dst)))
            return
        os.replace(src, dst)

    def mkdir(self, path: Any, mode: int = 0o777, *args: Any, **kwargs: Any) -> None:
        self._deny_if_read_only(path)
        os.mkdir(path, mode, *args, **kwargs)

    def unlink(self, path: Any, *args: Any, **kwargs: Any) -> None:
        self._deny_if_read_only(path)
        os.unlink(path, *args, **kwargs)


@pytest.fixture
def faulty(monkeypatch: pytest.MonkeyPatch) -> Iterator[FaultyOS]:
    fake = FaultyOS()
    monkeypatch.setattr(durable_mod, "os", fake)
    yield fake


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The final state of the graph run without any fault."""
    graph = build_graph(RepoSaver(tmp_path_factory.mktemp("reference") / "root"))
    run_thread(graph, "t", TURNS)
    return dict(graph.get_state(cfg("t")).values)


def data_files(root: Path) -> dict[Path, bytes]:
    """Every file of the tree except lock files (temp files included)."""
    return {p: p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and ".cache" not in p.parts}


def assert_clean(root: Path, allowed: frozenset[str] = frozenset()) -> None:
    validator = Validator(root)
    problems = validator.run()
    if "orphan-writes" in allowed:  # writes saved beside a put that then failed (LangGraph overlaps them)
        problems = [p for p in problems if p not in validator.orphan_writes]
    assert problems == [], "\n".join(p.line() for p in problems)
    findings = fsck(Reader(root).store)
    assert {f.kind for f in findings} <= allowed, [(f.kind, f.path) for f in findings]
    assert [f for f in findings if f.kind == "temp"] == [], "a temp file was left behind"


def assert_still_there(root: Path, before: dict[Path, bytes], tuples: list[Any]) -> None:
    """Nothing written before the fault changed, and each earlier checkpoint still loads."""
    after = data_files(root)
    assert {p: after.get(p) for p in before} == before
    reader = RepoSaver(root)  # cold: reads the disk, not this process's caches
    for tup in tuples:
        again = reader.get_tuple(tup.config)
        assert again is not None
        assert again.checkpoint == tup.checkpoint
        assert again.pending_writes == tup.pending_writes


def finish_and_compare(
    graph: Any, root: Path, reference: dict[str, Any], debris: frozenset[str] = frozenset()
) -> None:
    run_thread(graph, "t", TURNS)  # resumes the failed turn, then the rest
    assert dict(graph.get_state(cfg("t")).values) == reference
    assert dict(build_graph(RepoSaver(root)).get_state(cfg("t")).values) == reference
    assert_clean(root, debris)


STEP_FAULTS = ["fsync", "replace", "after-replace", "fsync-dir", "enospc", "eacces"]
ERRNO = {"eacces": errno.EACCES, "enospc": errno.ENOSPC}


# format 4 writes no objects/ file in a turn (a checkpoint holds its objects): "object" is
# left out; an object over large_value_bytes goes the way of a large value
@pytest.mark.parametrize("kind", ["checkpoint", "writes", "large"])
@pytest.mark.parametrize("fault", STEP_FAULTS)
def test_fault_in_a_write_reaches_the_graph_and_loses_nothing(
    root: Path,
    faulty: FaultyOS,
    reference: dict[str, Any],
    fault: str,
    kind: str,
    request: pytest.FixtureRequest,
) -> None:
    """A real graph; the fault hits the 2nd file of ``kind`` written in turn FAULT_TURN. A
    fault in a checkpoint file is one in the writes riding in it too (ride.py): they are let
    go to be written alone. Writes files are made where writes are written alone."""
    if kind == "writes":
        request.getfixturevalue("writes_alone")
    saver = RepoSaver(root)
    graph = build_graph(saver)
    run_thread(graph, "t", FAULT_TURN)
    before = data_files(root)
    history = list(saver.list(cfg("t")))

    faulty.arm(fault, kind, 2)
    with pytest.raises(OSError) as info:
        graph.invoke(turn_input(FAULT_TURN), cfg("t"), durability="sync")
    assert faulty.raised is not None and faulty.target is not None, "the fault never fired"
    assert info.value is faulty.raised  # the very exception, not wrapped, errno intact
    assert info.value.errno == ERRNO.get(fault, errno.EIO)
    assert faulty.fault is None

    target = faulty.target
    renamed = fault in ("after-replace", "fsync-dir")
    if kind == "writes" and renamed and not target.exists():
        # whole and in place, then taken by the child checkpoint LangGraph put beside it (format
        # 4): its record is there, under the unique part of its name
        key = target.stem.split("~", 1)[1]
        holders = [p for p in target.parent.parent.glob("checkpoints/*.json") if key in p.read_text()]
        assert holders, "a writes file in place is neither there nor in a child"
    elif kind not in ("large", "object"):  # content-addressed: a later put may write it whole
        assert target.exists() == renamed  # before the rename nothing is in place; after, all of it
    assert_still_there(root, before, history)
    # the temp file is gone; a large value or an object whose referrer was never written is
    # debris fsck removes. An object is written by the put of a checkpoint (a Send it holds)
    # whose tasks LangGraph may already have run and saved: their writes are orphans then
    debris = frozenset({"orphan-large", "orphan-object"} | ({"orphan-writes"} if kind == "object" else set()))
    assert_clean(root, allowed=debris)

    latest = RepoSaver(root).get_tuple(cfg("t"))
    assert latest is not None
    if kind == "checkpoint" and renamed:
        # the checkpoint is whole and in place though put raised: its durability was not confirmed
        assert latest.config["configurable"]["checkpoint_id"] == target.stem

    finish_and_compare(graph, root, reference, debris & {"orphan-writes"})


@pytest.mark.parametrize("fault", STEP_FAULTS)
def test_fault_in_put_and_put_writes_reaches_the_caller(root: Path, faulty: FaultyOS, fault: str) -> None:
    """saver.put and saver.put_writes called directly raise the injected error; the
    previous checkpoint stays the latest (unless the rename had happened), and the same
    call succeeds once the fault is gone."""
    saver = RepoSaver(root)
    graph = build_graph(saver)
    run_thread(graph, "t", 1)
    latest = saver.get_tuple(cfg("t"))
    assert latest is not None
    before = data_files(root)

    # a put of a copy of the latest checkpoint under a new id, with a big value changed
    checkpoint = {**latest.checkpoint, "id": "1ffffffe-0000-6000-8000-000000000000"}
    version = saver.get_next_version(checkpoint["channel_versions"]["blob"], None)
    checkpoint["channel_versions"] = {**checkpoint["channel_versions"], "blob": version}
    checkpoint["channel_values"] = {**checkpoint["channel_values"], "blob": "x" * 20_000}
    args = (latest.config, checkpoint, {"source": "update", "step": 99, "parents": {}}, {"blob": version})

    for kind in ("large", "checkpoint"):  # the large value is written first, in its own batch
        faulty.arm(fault, kind, 1)
        with pytest.raises(OSError) as info:
            saver.put(*args)  # type: ignore[arg-type]
        assert info.value is faulty.raised
        assert info.value.errno == ERRNO.get(fault, errno.EIO)
        renamed = fault in ("after-replace", "fsync-dir")
        assert_still_there(root, before, [latest])
        assert_clean(root, allowed=frozenset({"orphan-large"}))
        top = RepoSaver(root).get_tuple(cfg("t"))
        assert top is not None
        expected_top = checkpoint["id"] if kind == "checkpoint" and renamed else latest.checkpoint["id"]
        assert top.checkpoint["id"] == expected_top
    new_config = saver.put(*args)  # type: ignore[arg-type]
    got = RepoSaver(root).get_tuple(new_config)
    assert got is not None and got.checkpoint["channel_values"]["blob"] == "x" * 20_000

    before = data_files(root)
    writes = [("results", ["w" * 10_000]), ("turn", 7)]
    faulty.arm(fault, "writes", 1)
    with pytest.raises(OSError) as info:
        saver.put_writes(new_config, writes, "task-1")
    assert info.value is faulty.raised
    assert info.value.errno == ERRNO.get(fault, errno.EIO)
    assert_still_there(root, before, [])
    assert_clean(root, allowed=frozenset({"orphan-large"}))
    renamed = fault in ("after-replace", "fsync-dir")
    pending = RepoSaver(root).get_tuple(new_config)
    assert pending is not None
    assert [w[0] for w in pending.pending_writes or []] == (["task-1", "task-1"] if renamed else [])
    saver.put_writes(new_config, writes, "task-1")  # first write wins: not written twice
    pending = RepoSaver(root).get_tuple(new_config)
    assert pending is not None
    assert pending.pending_writes == [("task-1", "results", ["w" * 10_000]), ("task-1", "turn", 7)]
    assert_clean(root)


@pytest.mark.parametrize("fault", STEP_FAULTS)
def test_fault_in_a_store_put_reaches_the_caller_and_keeps_the_item(
    root: Path, faulty: FaultyOS, fault: str
) -> None:
    """RepoStore.put raises the injected error; the item keeps its old value (or has the new
    one whole, when the rename had happened), nothing else changed, no temp file is left, and
    the same store writes it once the fault is gone."""
    store = RepoStore(root)
    namespace = ("users", "memories")
    store.put(namespace, "prefs", {"theme": "light"})
    store.put(namespace, "other", {"n": 1})
    before = data_files(root)
    faulty.arm(fault, "item", 1)
    with pytest.raises(OSError) as info:
        store.put(namespace, "prefs", {"theme": "dark"})
    assert info.value is faulty.raised
    assert info.value.errno == ERRNO.get(fault, errno.EIO)
    renamed = fault in ("after-replace", "fsync-dir")
    fresh = RepoStore(root)
    got = fresh.get(namespace, "prefs")
    assert got is not None and got.value == ({"theme": "dark"} if renamed else {"theme": "light"})
    after = data_files(root)
    changed = {p for p in before if after.get(p) != before[p]}
    assert changed <= ({store.path(namespace, "prefs")} if renamed else set())
    assert_clean(root)
    store.put(namespace, "prefs", {"theme": "dark"})
    again = RepoStore(root).get(namespace, "prefs")
    assert again is not None and again.value == {"theme": "dark"}
    assert RepoStore(root).get(namespace, "other") is not None
    assert_clean(root)


def _chmod_tree(root: Path, mode: int) -> None:
    for folder in [root, *[p for p in root.rglob("*") if p.is_dir() and ".cache" not in p.parts]]:
        os.chmod(folder, mode)


def test_read_only_root_refuses_writes_and_keeps_the_state(
    root: Path, faulty: FaultyOS, reference: dict[str, Any]
) -> None:
    """Every folder of the tree 0o555: the graph's next write fails with EACCES (as root
    too), nothing changes and no temp file is left; writable again, the graph finishes."""
    saver = RepoSaver(root)
    graph = build_graph(saver)
    run_thread(graph, "t", FAULT_TURN)
    before = data_files(root)
    history = list(saver.list(cfg("t")))
    latest = history[0]

    faulty.read_only = True
    _chmod_tree(root, 0o555)
    try:
        with pytest.raises(PermissionError) as info:
            graph.invoke(turn_input(FAULT_TURN), cfg("t"), durability="sync")
        assert info.value.errno == errno.EACCES
        with pytest.raises(PermissionError) as info:
            saver.put_writes(latest.config, [("results", ["late"])], "task-ro")
        assert info.value.errno == errno.EACCES
        assert data_files(root) == before  # readable, unchanged, no temp file
        top = RepoSaver(root).get_tuple(cfg("t"))
        assert top is not None and top.checkpoint == latest.checkpoint
    finally:
        _chmod_tree(root, 0o755)
        faulty.read_only = False
    assert_still_there(root, before, history)
    assert_clean(root)
    finish_and_compare(graph, root, reference)


def _durable_log(monkeypatch: pytest.MonkeyPatch, fail: Path | None = None) -> list[tuple[str, Path]]:
    """durable.py's folder fsyncs and renames, in order (``fail``: the first fsync of that
    folder raises EIO)."""
    log: list[tuple[str, Path]] = []
    real_fsync_dir = durable_mod.fsync_dir
    failed: list[Path] = []

    def fsync_dir(path: Path) -> None:
        if path == fail and not failed:
            failed.append(path)
            raise OSError(errno.EIO, "injected: folder fsync failed", str(path))
        real_fsync_dir(path)
        log.append(("fsync_dir", path))

    class LoggingOS:
        def __getattr__(self, name: str) -> Any:
            return getattr(os, name)

        def replace(self, src: Any, dst: Any) -> None:
            os.replace(src, dst)
            log.append(("replace", Path(dst)))

    monkeypatch.setattr(durable_mod, "fsync_dir", fsync_dir)
    monkeypatch.setattr(durable_mod, "os", LoggingOS())
    return log


def _settled_before_first_rename(log: list[tuple[str, Path]], below: str = "threads") -> set[Path]:
    """The folders fsynced before the first file was renamed into a folder named ``below``
    (or under one)."""
    first = next(i for i, (w, p) in enumerate(log) if w == "replace" and below in p.parts)
    return {p for w, p in log[:first] if w == "fsync_dir"}


def test_a_new_folders_entry_is_durable_before_a_name_is_renamed_into_it_and_a_failed_one_is_fsynced_again(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new thread's folders are made, and their parents fsynced beside the temp files (one
    round, not one per folder), before anything is renamed into them. When one of those
    fsyncs fails nothing is renamed and the put raises; the folders it made are removed, and
    the next write makes and settles them again (else a folder would exist whose entry was
    never made durable)."""
    log = _durable_log(monkeypatch, fail=root / "threads")
    saver = RepoSaver(root)
    config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    checkpoint = empty_checkpoint()
    with pytest.raises(OSError, match="folder fsync failed"):
        saver.put(config, checkpoint, {"source": "input", "step": -1}, {})
    assert not [p for w, p in log if w == "replace" and "threads" in p.parts]  # nothing renamed
    assert not (root / "threads").exists()  # the folders it made: removed, as before it
    log.clear()
    saver.put(config, checkpoint, {"source": "input", "step": -1}, {})
    assert {root, root / "threads", root / "threads" / "t"} <= _settled_before_first_rename(log)
    log.clear()
    saver.put(config, empty_checkpoint(), {"source": "loop", "step": 0}, {})
    assert [p for w, p in log if w == "fsync_dir"] == [root / "threads" / "t" / "checkpoints"]
    assert Validator(root).run() == []


def test_a_folder_removed_and_made_again_is_settled_again(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder this saver settled once, removed since (another process deleted the thread),
    is made again by a write into a new folder below it: its entry is made durable again
    before anything is renamed under it (the writer's memory of it does not count)."""
    saver, other = RepoSaver(root), RepoSaver(root)
    saver.put(
        {"configurable": {"thread_id": "a", "checkpoint_ns": ""}},
        empty_checkpoint(),
        {"source": "input", "step": -1},
        {},
    )
    other.delete_thread("a")
    log = _durable_log(monkeypatch)
    saver.put(
        {"configurable": {"thread_id": "a", "checkpoint_ns": "sub:1"}},
        empty_checkpoint(),
        {"source": "loop", "step": 0},
        {},
    )
    assert {root / "threads", root / "threads" / "a"} <= _settled_before_first_rename(log)
    assert Validator(root).run() == []


def test_a_store_namespace_pruned_and_made_again_is_settled_again(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """RepoStore removes a namespace's folder with its last item: the writer is told, so the
    folder found again below is settled again, not trusted as the one it settled (here
    another put of the process made it again a moment before, its round still under way)."""
    store = RepoStore(root)
    store.put(("a",), "x", {"v": 1})
    store.delete(("a",), "x")
    assert not (root / "store" / "a").exists()
    os.mkdir(root / "store" / "a")
    log = _durable_log(monkeypatch)
    store.put(("a", "d"), "k", {"v": 2})
    assert {root / "store", root / "store" / "a"} <= _settled_before_first_rename(log, "store")
    assert store.get(("a", "d"), "k") is not None


def test_a_failed_writes_folder_swapped_for_a_link_after_its_check_removes_nothing_outside(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failed first write removes the folders it made, each from its parent opened without
    following links: a folder swapped for a symlink to an empty folder outside the root between
    the containment check and the removal is left, and so is what it points to."""
    outside = tmp_path / "outside"
    (outside / "checkpoints").mkdir(parents=True)
    saver = RepoSaver(root)
    layout_type = type(saver.store.layout)
    real_off = layout_type.off_the_way
    swapped: list[Path] = []
    removing = []

    def off_then_swap(self: Any, path: Path, *args: Any) -> Any:
        got = real_off(self, path, *args)
        if got is None and removing and path.name == "checkpoints" and not swapped:
            swapped.append(path)  # its parent, threads/t, becomes a link to a folder outside
            shutil.rmtree(path.parent)
            os.symlink(outside, path.parent)
        return got

    real_remove = Writer._remove_made

    def remove_made(self: Writer, folders: list[Path]) -> None:
        removing.append(True)
        real_remove(self, folders)

    real_write_temp = durable_mod._write_temp

    def full(path: Path, data: bytes) -> Any:
        if path.parent.name == "checkpoints":
            raise OSError(errno.ENOSPC, "injected: no space", str(path))
        return real_write_temp(path, data)

    monkeypatch.setattr(durable_mod, "_write_temp", full)
    monkeypatch.setattr(layout_type, "off_the_way", off_then_swap)
    monkeypatch.setattr(Writer, "_remove_made", remove_made)
    config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    with pytest.raises(OSError, match="no space"):
        saver.put(config, empty_checkpoint(), {"source": "input", "step": -1}, {})
    assert swapped and (outside / "checkpoints").is_dir()
