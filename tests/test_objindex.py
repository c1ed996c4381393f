"""The objects index (core/objindex.py, issue 37): a fresh process reads a long thread's
messages from one derived file instead of a file per message, and the files still win.

Real graphs on a real saver and filesystem; each "fresh process" is a new RepoSaver on the
root (empty caches), and one test runs a real second process.
"""

from __future__ import annotations

import json
import os
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from graphs import cfg, chat_graph, contents
from helpers import second_process_read, without_values_index
from langgraph_checkpoint_repo import RepoSaver
from langgraph_checkpoint_repo.core.caches import RACY_NS
from langgraph_checkpoint_repo.core.errors import FileFormatError
from langgraph_checkpoint_repo.core.index import OBJECTS_SUFFIX, decode_lines, encode_line, index_path
from langgraph_checkpoint_repo.core.layout import Layout
from langgraph_checkpoint_repo.core.threads import LINEAGE_SAVE_EVERY

TURNS = 40
SETTLE = RACY_NS / 1e9 + 0.02
# a whole copy of the list every 16 puts: a read walks at most that many links of its chain
SNAPSHOT_EVERY = 16
BOUND = 3 * SNAPSHOT_EVERY  # files a fresh read of the latest opens, however long the thread


@contextmanager
def opened() -> Iterator[list[str]]:
    """Every file ``os.open`` opened meanwhile."""
    seen: list[str] = []
    real = os.open

    def counting(path: Any, *args: Any, **kwargs: Any) -> int:
        seen.append(str(path))
        return real(path, *args, **kwargs)

    os.open = counting  # type: ignore[assignment]
    try:
        yield seen
    finally:
        os.open = real  # type: ignore[assignment]


def chat(root: Path, turns: int = TURNS) -> list[str]:
    """A thread of ``turns`` turns, each put after the previous ones settled (as turns a
    person waits for do), plus one more so the last ones are written down too; its texts."""
    graph = chat_graph(RepoSaver(root, durable=False, snapshot_every=SNAPSHOT_EVERY))
    for i in range(turns + 1):
        graph.invoke({"messages": [HumanMessage(f"turn {i}", id=f"u{i}")]}, cfg("t"))
        if i % 8 == 7 or i >= turns - 1:
            time.sleep(SETTLE)
    return contents(graph.get_state(cfg("t")).values["messages"])


def objects_file(root: Path) -> Path:
    layout = Layout(root)
    path = index_path(layout, layout.thread_dir("t"), OBJECTS_SUFFIX)
    assert path is not None
    return path


def entries(root: Path) -> dict[str, Any]:
    got = decode_lines(Layout(root).thread_dir("t"), objects_file(root).read_bytes())
    assert got is not None
    return got


def fresh_read(root: Path) -> tuple[list[str], list[str]]:
    """The latest state's texts as a new saver reads them, and the checkpoint files it opened
    (through the objects index: the values index, which would serve the whole list, removed)."""
    without_values_index(root)
    saver = RepoSaver(root)
    with opened() as seen:
        got = saver.get_tuple(cfg("t"))
    assert got is not None
    checkpoints = [p for p in seen if f"{os.sep}checkpoints{os.sep}" in p]
    return contents(got.checkpoint["channel_values"]["messages"]), checkpoints


def test_a_fresh_read_of_a_long_thread_opens_a_bounded_number_of_files_not_one_per_message(
    tmp_path: Path,
) -> None:
    """The files of the list's chain back to its last whole copy, not every checkpoint that
    first held one of its messages."""
    root = tmp_path / ".langgraph"
    want = chat(root)
    assert len(want) == 2 * (TURNS + 1)
    holders = {e[0] for e in entries(root).values()}
    assert len(holders) >= 2 * TURNS  # each message in the checkpoint that first held it
    fresh_read(root)  # the first also derives which checkpoint continues (the lineage index)
    texts, opened_files = fresh_read(root)
    assert texts == want
    assert len(opened_files) <= BOUND, len(opened_files)
    objects_file(root).unlink()  # without it: a file per message-bearing checkpoint
    texts, opened_files = fresh_read(root)
    assert texts == want and len(opened_files) >= len(holders)
    assert objects_file(root).exists()  # the read wrote down what it read (settled files)
    texts, opened_files = fresh_read(root)
    assert texts == want and len(opened_files) <= BOUND


def test_a_second_process_reads_the_thread_through_the_index(tmp_path: Path) -> None:
    root = tmp_path / ".langgraph"
    want = chat(root)
    fresh_read(root)  # the lineage index written
    without_values_index(root)  # the objects index, not the values index, serves the list
    texts, opened_files = second_process_read(root)
    assert texts == want and len(opened_files) <= BOUND, len(opened_files)


def test_a_holder_edited_in_place_is_read_from_its_file(tmp_path: Path) -> None:
    """Same size, same name: its stat key changed, so the index is not used for it, and the
    read refuses the edited message as it does without an index."""
    root = tmp_path / ".langgraph"
    chat(root)
    holder = next(Path(e[0]) for e in entries(root).values() if b'"turn 3"' in Path(e[0]).read_bytes())
    holder.write_bytes(holder.read_bytes().replace(b'"turn 3"', b'"turn X"'))
    with pytest.raises(FileFormatError) as info:
        RepoSaver(root).get_tuple(cfg("t"))
    assert str(holder) in str(info.value)


def test_a_forged_or_damaged_line_serves_nothing_but_the_object_named(tmp_path: Path) -> None:
    root = tmp_path / ".langgraph"
    want = chat(root)
    index = objects_file(root)
    tdir = Layout(root).thread_dir("t")
    name, (holder, key, tree) = next(iter(entries(root).items()))
    forged = json.loads(json.dumps(tree).replace("turn", "TURN"))
    assert forged != tree
    rel = Path(holder).relative_to(tdir).as_posix()
    with index.open("ab") as fh:
        fh.write(encode_line(rel, key, {name: forged}))  # the real holder and key, another tree
        fh.write(encode_line("../elsewhere/checkpoints/x.json", key, {name: forged}))
        fh.write(b"00000000 " + encode_line(rel, key, {name: forged})[9:])  # a checksum that fails
        fh.write(b"garbage\n")
    assert entries(root)[name][2] == forged  # the forged line is the one the index now gives
    texts, _ = fresh_read(root)
    assert texts == want  # its tree does not match its name: the holder was read instead


def test_a_file_is_written_down_only_once_it_has_settled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An edit made in the same clock tick as a write leaves its stat key as it was: a line
    is written only for a file older than RACY_NS that still holds the bytes written. (The
    window is widened to an hour for the first turn, so a slow machine cannot let the turn's
    first files settle before its last put.)"""
    from langgraph_checkpoint_repo.core import objindex

    root = tmp_path / ".langgraph"
    chat(root, turns=20)
    folder = root / "threads" / "t" / "checkpoints"
    graph = chat_graph(RepoSaver(root, durable=False))
    before = set(folder.iterdir())
    monkeypatch.setattr(objindex, "RACY_NS", 3600 * 10**9)
    graph.invoke({"messages": [HumanMessage("just now", id="n0")]}, cfg("t"))
    new = {str(p) for p in set(folder.iterdir()) - before}
    assert not new & {e[0] for e in entries(root).values()}  # not settled yet
    monkeypatch.setattr(objindex, "RACY_NS", RACY_NS)
    time.sleep(SETTLE)
    graph.invoke({"messages": [HumanMessage("later", id="n1")]}, cfg("t"))
    assert new & {e[0] for e in entries(root).values()}  # settled, still the bytes written


def test_fsck_reports_a_damaged_objects_index_and_repair_removes_it(tmp_path: Path) -> None:
    from helpers import cli

    root = tmp_path / ".langgraph"
    want = chat(root, turns=20)
    assert objects_file(root).exists() and cli(root, "fsck").returncode == 0
    objects_file(root).write_bytes(b"damaged")
    found = cli(root, "fsck", "--json")
    assert found.returncode == 1
    kinds = {f["path"]: f["kind"] for f in json.loads(found.stdout)["findings"]}
    assert kinds == {str(objects_file(root)): "index"}
    assert cli(root, "fsck", "--repair").returncode == 0
    assert not objects_file(root).exists()
    assert fresh_read(root)[0] == want


def test_a_deleted_thread_leaves_no_objects_index_behind(tmp_path: Path) -> None:
    """The index holds the thread's messages: deleting the thread deletes it too."""
    root = tmp_path / ".langgraph"
    chat(root, turns=20)
    assert objects_file(root).exists()
    RepoSaver(root).delete_thread("t")
    assert not objects_file(root).exists()


def test_an_index_read_again_after_checkouts_is_compacted_not_grown(tmp_path: Path) -> None:
    """A checkout gives every file a new stat key: a fresh read writes its holders down again.
    Over half the lines dead, the next fresh read writes the file anew with the live ones."""
    root = tmp_path / ".langgraph"
    want = chat(root, turns=40)
    sizes = []
    for i in range(4):
        for holder in (root / "threads" / "t" / "checkpoints").iterdir():
            os.utime(holder, ns=(holder.stat().st_atime_ns, holder.stat().st_mtime_ns - 10**9 * (i + 1)))
        assert fresh_read(root)[0] == want
        sizes.append(objects_file(root).stat().st_size)
    assert fresh_read(root)[0] == want  # reads the grown file: over half of it dead, compacted
    live = len({e[0] for e in entries(root).values()})
    lines = objects_file(root).read_bytes().count(b"\n") - 1
    assert lines <= 2 * live + 1 and objects_file(root).stat().st_size < max(sizes), (sizes, lines, live)


def test_a_line_too_deep_to_hash_is_no_match_and_the_holder_is_read(tmp_path: Path) -> None:
    root = tmp_path / ".langgraph"
    want = chat(root, turns=20)
    tdir = Layout(root).thread_dir("t")
    name, (holder, _, _) = next(iter(entries(root).items()))
    deep: Any = "x"
    for _ in range(300):
        deep = [deep]
    rel = Path(holder).relative_to(tdir).as_posix()
    st = os.lstat(holder)
    key = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)
    body = json.dumps([rel, list(key), {name: deep}], separators=(",", ":")).encode()
    with objects_file(root).open("ab") as fh:  # as only someone on this machine could
        fh.write(b"%08x %s\n" % (zlib.crc32(body), body))
    assert fresh_read(root)[0] == want


def test_the_first_fresh_read_after_a_writer_reads_few_checkpoint_headers(tmp_path: Path) -> None:
    """The writer writes its lineage down every LINEAGE_SAVE_EVERY checkpoints that settled
    holding its bytes: the next process reads the headers of the checkpoints added since, not
    every header of the thread."""
    root = tmp_path / ".langgraph"
    want = chat(root, turns=80)
    checkpoints = len(list((root / "threads" / "t" / "checkpoints").iterdir()))
    texts, opened_files = fresh_read(root)  # no read before it: as after the writer exits
    assert texts == want
    assert len(opened_files) <= BOUND + LINEAGE_SAVE_EVERY + 16 < checkpoints, (
        len(opened_files),
        checkpoints,
    )


def test_compaction_keeps_no_line_whose_holder_lies_through_a_planted_link(tmp_path: Path) -> None:
    """A line naming a file through a folder linked outside the root (planted by a pull
    request, with that file's real stat key) is dropped when the file is written anew, and
    nothing through the link is even stat-ed."""
    root = tmp_path / ".langgraph"
    want = chat(root, turns=40)
    outside = tmp_path / "outside" / "x" / "checkpoints"
    outside.mkdir(parents=True)
    planted = outside / "planted.json"
    planted.write_text("{}")
    (root / "threads" / "t" / "ns").symlink_to(tmp_path / "outside", target_is_directory=True)
    st = planted.stat()
    key = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)
    data = objects_file(root).read_bytes()
    header, _, body = data.partition(b"\n")
    line = encode_line("ns/x/checkpoints/planted.json", key, {"f" * 16: "forged"})
    objects_file(root).write_bytes(header + b"\n" + body * 8 + line)  # big, over half of it dead
    seen: list[str] = []
    real = os.lstat

    def noting(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        seen.append(os.fsdecode(path))
        return real(path, *args, **kwargs)

    os.lstat = noting  # type: ignore[assignment]
    try:
        texts, _ = fresh_read(root)
    finally:
        os.lstat = real  # type: ignore[assignment]
    assert texts == want
    assert objects_file(root).stat().st_size < len(data) * 2  # written anew
    assert b"planted" not in objects_file(root).read_bytes()
    assert not [p for p in seen if p.endswith("planted.json")], seen[:5]
