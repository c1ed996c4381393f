"""The write path's ordering rule, as the chat turn's speed work left it (docs/reliability.md).

``durable.write_batches`` writes every temp file of a put or put_writes first and fsyncs them
side by side, then renames batch by batch (objects and large values, then the checkpoint or
writes file), fsyncing each folder renamed into before the next batch is renamed. The tests
record every ``os`` call durable.py makes (the ``os`` module inside durable.py only, as
tests/test_faults.py does) while a real chat graph runs on a real root, and check the rule
on the log; then they stop a write at each of its calls in turn and check what a crash
there would leave.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from graphs import cfg, chat_graph
from langgraph_checkpoint_repo import RepoSaver
from langgraph_checkpoint_repo.core import durable as durable_mod
from langgraph_checkpoint_repo.core.checks import Validator, fsck
from langgraph_checkpoint_repo.core.errors import RepoCheckpointError
from langgraph_checkpoint_repo.core.format.objects import ref_nodes
from langgraph_checkpoint_repo.core.layout import Layout
from langgraph_checkpoint_repo.readmodel.reader import Reader


def final_path(path: str | os.PathLike[str]) -> Path:
    """The file a temp file stands for (``.name.random.tmp`` -> ``name``)."""
    p = Path(path)
    if p.name.startswith(".") and p.name.endswith(".tmp"):
        return p.with_name(p.name[1:].rsplit(".", 2)[0])
    return p


class Stop(BaseException):
    """Where a simulated crash stops a write (not an Exception: nothing may catch it)."""


class RecordingOS:
    """The ``os`` module as durable.py sees it, logging (in completion order for fsync, start
    order for rename) what reaches the disk; ``stop_at`` raises ``Stop`` at that call."""

    def __init__(self) -> None:
        self.log: list[tuple[str, Path]] = []  # ("fsync", file or folder) / ("replace", target)
        self.fds: dict[int, Path] = {}
        self.calls = 0
        self.stop_at: int | None = None
        self._mutex = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def _count(self) -> None:
        with self._mutex:
            self.calls += 1
            if self.stop_at is not None and self.calls == self.stop_at:
                raise Stop

    def open(self, path: Any, flags: int, mode: int = 0o777, *args: Any, **kwargs: Any) -> int:
        self._count()
        fd = os.open(path, flags, mode, *args, **kwargs)
        self.fds[fd] = Path(path)
        return fd

    def write(self, fd: int, data: Any) -> int:
        self._count()
        return os.write(fd, data)

    def fsync(self, fd: int) -> None:
        self._count()
        os.fsync(fd)
        self.log.append(("fsync", self.fds[fd]))

    def replace(self, src: Any, dst: Any) -> None:
        self._count()
        self.log.append(("replace", Path(dst)))
        os.replace(src, dst)

    def close(self, fd: int) -> None:
        self.fds.pop(fd, None)
        os.close(fd)


@pytest.fixture
def recording(monkeypatch: pytest.MonkeyPatch) -> Iterator[RecordingOS]:
    rec = RecordingOS()
    monkeypatch.setattr(durable_mod, "os", rec)
    yield rec


def referred(path: Path) -> set[Path]:
    """The files a checkpoint, writes or object file names directly: objects/ and large/
    files, and (format 4) the checkpoints holding the objects it names with ``$in``; an object
    the file holds itself is no other file."""
    if path.suffix != ".json" or "threads" not in path.parts:
        return set()
    doc = json.loads(path.read_bytes())
    tdir = next(p for p in path.parents if p.parent.name == "threads")
    own = set(doc.get("objects") or {}) if isinstance(doc, dict) else set()
    layout = Layout(tdir.parent.parent)
    out: set[Path] = set()
    for node in ref_nodes(doc):
        if "$in" in node:
            out.add(layout.checkpoint_path(doc["thread_id"], node.get("$ns", ""), node["$in"]))
        elif node["$ref"] not in own:
            out.add(tdir / "objects" / f"{node['$ref']}.json")
    text = path.read_text()
    for digest in {part.split('"')[0] for part in text.split('"large": "')[1:]}:
        out.add(tdir / "large" / f"{digest}.json")
    return out


#: a message over large_value_bytes: format 4 keeps it out of the file that introduces it, in
#: objects/ (a smaller one is held by that file)
OVER_LARGE = "a message long enough to be kept in objects/ of its own " * 200


def turn(graph: Any, i: int) -> None:
    graph.invoke({"messages": [HumanMessage(content=f"turn {i}: " + "tell me more " * 20)]}, cfg("t"))


def test_a_turns_renames_follow_their_fsyncs_and_referrers_follow_their_objects(
    tmp_path: Path, recording: RecordingOS
) -> None:
    root = tmp_path / "repo"
    graph = chat_graph(RepoSaver(root))
    for i in range(3):
        turn(graph, i)
    log = recording.log
    renames = [
        (i, path) for i, (what, path) in enumerate(log) if what == "replace" and path.suffix == ".json"
    ]
    assert renames, "the turn wrote files"
    # format 4: a message is held by the checkpoint of the step that made it
    held = [p for _, p in renames if p.parent.name == "checkpoints" and '"objects"' in p.read_text()]
    assert held, "a message was shared as an object"
    renamed_at: dict[Path, int] = {}
    for i, path in renames:
        renamed_at.setdefault(path, i)  # the first time: another call may write the same object again
    for i, path in renames:
        # the temp file's bytes were durable before its name appeared
        assert any(w == "fsync" and final_path(p) == path for w, p in log[:i]), path
        # its folder was fsynced after the rename (before the call returned: see below)
        assert any(w == "fsync" and p == path.parent for w, p in log[i + 1 :]), path
        # whatever it refers to was renamed and its folder fsynced before it (a writes file
        # the next checkpoint took is gone: that checkpoint refers to the same objects)
        for ref in referred(path) if path.exists() else set():
            assert ref.exists(), (path, ref)
            if ref in renamed_at:
                j = renamed_at[ref]
                assert j < i, (path, ref)
                assert any(w == "fsync" and p == ref.parent for w, p in log[j + 1 : i]), (path, ref)


def test_a_call_returns_only_once_every_name_it_made_is_durable(
    tmp_path: Path, recording: RecordingOS
) -> None:
    saver = RepoSaver(tmp_path / "repo")
    graph = chat_graph(saver)
    turn(graph, 0)
    latest = saver.get_tuple(cfg("t"))
    assert latest is not None
    recording.log.clear()
    saver.put_writes(latest.config, [("messages", [HumanMessage(content=OVER_LARGE)])], "task")
    log = list(recording.log)
    folders = {p.parent for w, p in log if w == "replace"}
    assert {f.name for f in folders} == {"objects", "writes"}
    for folder in folders:
        last_rename = max(i for i, (w, p) in enumerate(log) if w == "replace" and p.parent == folder)
        assert ("fsync", folder) in log[last_rename + 1 :]


def test_an_object_renamed_but_not_yet_fsynced_into_its_folder_is_not_relied_on(
    tmp_path: Path, recording: RecordingOS, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A put and a put_writes of one process run side by side: the one that finds an object
    the other has renamed but not yet made durable waits until it is, so its referrer never
    depends on a name a power loss could take back."""
    saver = RepoSaver(tmp_path / "repo")
    turn(chat_graph(saver), 0)
    latest = saver.get_tuple(cfg("t"))
    assert latest is not None
    askers: list[tuple[Path, threading.Thread, list[bool]]] = []
    real_fsync = RecordingOS.fsync

    def fsync(self: RecordingOS, fd: int) -> None:
        folder = self.fds[fd]
        if folder.name == "objects":  # after the object's rename, before its folder's fsync
            for what, path in list(self.log):
                if what == "replace" and path.parent == folder and path.exists():
                    answer: list[bool] = []
                    asker = threading.Thread(
                        target=lambda p=path, a=answer: a.append(saver.store.files.writer.durable_exists(p))
                    )
                    asker.start()
                    asker.join(0.3)
                    assert asker.is_alive() and answer == [], "relied on a name not yet durable"
                    askers.append((path, asker, answer))
        real_fsync(self, fd)

    monkeypatch.setattr(RecordingOS, "fsync", fsync)
    recording.log.clear()
    message = HumanMessage(content=OVER_LARGE)
    saver.put_writes(latest.config, [("messages", [message])], "task")
    assert askers, "the write renamed an object and then fsynced its folder"
    for _, asker, answer in askers:
        asker.join(10)
        assert answer == [True]  # once durable, relied on


def assert_referents_exist(root: Path) -> None:
    """What a crash may leave: every checkpoint, writes file and object names only files
    that exist (temp files, orphans and an unused object are debris fsck removes)."""
    for path in root.rglob("*.json"):
        if path.name.startswith(".") or ".cache" in path.parts:
            continue
        for ref in referred(path):
            assert ref.exists(), f"{path} refers to {ref}, which a crash here would have lost"


@pytest.mark.parametrize("alone", [False, True], ids=["writes-ride", "writes-alone"])
def test_a_crash_at_any_call_of_a_put_leaves_a_checkpoint_only_with_its_objects(
    tmp_path: Path, recording: RecordingOS, alone: bool, request: pytest.FixtureRequest
) -> None:
    """Stop the writes of one turn at each of durable.py's calls in turn (a fresh root each
    time): whatever got renamed by then refers only to files that are there, and the root
    validates once fsck has removed the debris. The step's writes ride in the checkpoints
    (ride.py), or are written alone (an interrupt, a slow sibling task) before them."""
    if alone:
        request.getfixturevalue("writes_alone")
    stops = 0
    for stop_at in range(1, 400):
        root = tmp_path / f"r{stop_at}"
        graph = chat_graph(RepoSaver(root))
        turn(graph, 0)
        recording.calls, recording.stop_at = 0, stop_at
        try:
            turn(graph, 1)
        except Stop:
            stops += 1
        else:
            break
        finally:
            recording.stop_at = None
        assert_referents_exist(root)
        findings = fsck(Reader(root).store)
        assert {f.kind for f in findings} <= {"temp", "orphan-object", "orphan-writes", "orphan-large"}
        validator = Validator(root)
        problems = [p for p in validator.run() if p not in validator.orphan_writes]
        assert problems == [], "\n".join(p.line() for p in problems)
    else:
        pytest.fail("the turn never finished")
    assert stops >= (20 if alone else 15), "the turn's writes were stopped at each of their calls"


def test_a_symlinked_folder_of_a_later_batch_refuses_the_whole_write(tmp_path: Path) -> None:
    """Every folder of a call is checked before anything is created: a writes/ folder
    swapped for a link keeps the put_writes' object from being written too."""
    root = tmp_path / "repo"
    saver = RepoSaver(root)
    turn(chat_graph(saver), 0)
    latest = saver.get_tuple(cfg("t"))
    assert latest is not None
    tdir = root / "threads" / "t"
    outside = tmp_path / "outside"
    (tdir / "writes").mkdir(exist_ok=True)  # the turn's writes rode in its checkpoints (ride.py)
    (tdir / "writes").rename(outside)
    (tdir / "writes").symlink_to(outside)
    (tdir / "objects").mkdir(exist_ok=True)
    objects_before = sorted(p.name for p in (tdir / "objects").iterdir())
    outside_before = sorted(p.name for p in outside.iterdir())
    message = HumanMessage(content=OVER_LARGE)
    with pytest.raises(RepoCheckpointError, match="writes"):
        saver.put_writes(latest.config, [("messages", [message])], "task")
    assert sorted(p.name for p in (tdir / "objects").iterdir()) == objects_before
    assert sorted(p.name for p in outside.iterdir()) == outside_before
    (tdir / "writes").unlink()
    outside.rename(tdir / "writes")
    saver.put_writes(latest.config, [("messages", [message])], "task")
    assert len(list((tdir / "objects").iterdir())) == len(objects_before) + 1


def test_a_failing_fsync_among_several_removes_every_temp_and_raises_its_own_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Temps are fsynced side by side: the error of the one that failed reaches the caller as
    it was, and no temp file nor any target of the batches is left."""
    boom = OSError(5, "injected")
    real_fsync = os.fsync
    opened: dict[int, str] = {}
    real_open = os.open

    class OS:
        def __getattr__(self, name: str) -> Any:
            return getattr(os, name)

        def open(self, path: Any, flags: int, mode: int = 0o777, **kw: Any) -> int:
            fd = real_open(path, flags, mode, **kw)
            opened[fd] = str(path)
            return fd

        def fsync(self, fd: int) -> None:
            if ".b2.json." in opened.get(fd, ""):
                raise boom
            real_fsync(fd)

    monkeypatch.setattr(durable_mod, "os", OS())
    folder = tmp_path / "f"
    folder.mkdir()
    batches = [
        [(folder / f"a{i}.json", b"{}\n") for i in range(3)],
        [(folder / f"b{i}.json", b"{}\n") for i in range(3)],
    ]
    with pytest.raises(OSError) as info:
        durable_mod.write_batches(batches)
    assert info.value is boom
    assert sorted(p.name for p in folder.iterdir()) == []
