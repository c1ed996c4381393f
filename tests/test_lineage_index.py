"""The lineage index a writer keeps (core/index.py ``LineageFiles``, issue 37 item 3): a save
appends the links settled since the last one instead of writing every link again, and the
file stays derived: a torn, forged or foreign segment makes the whole file ignored.

Unit tests on real files under a temp root (no graph: each builds its lineage directly).
"""

from __future__ import annotations

import os
import zlib
from pathlib import Path
from typing import Any

import orjson
import pytest

from langgraph_checkpoint_repo.core import index
from langgraph_checkpoint_repo.core.index import (
    LINEAGE_SUFFIX,
    LineageFiles,
    decode_lineage,
    encode_lineage,
    index_path,
    lineage_segment,
    load_lineage,
)
from langgraph_checkpoint_repo.core.layout import Layout
from langgraph_checkpoint_repo.core.lineage import Choice, Lineage, Node

SAVE_EVERY = 64


def cid(i: int) -> str:
    return f"1f000000-0000-6000-8000-{i:012x}"


def chain(n: int, start: int = 0, into: Lineage | None = None) -> Lineage:
    """A lineage of ``n`` links (each the parent of the next), every one settled."""
    out = into if into is not None else Lineage()
    links, keys = dict(out.links), dict(out.keys)
    for i in range(start, start + n):
        links[cid(i)] = Node(cid(i - 1) if i else None)
        keys[cid(i)] = (i, i + 1, 100 + i, 7000 + i)
    out.links, out.keys = links, keys
    return out


@pytest.fixture
def place(tmp_path: Path) -> tuple[Layout, Path, Path]:
    layout = Layout(tmp_path / ".langgraph")
    folder = layout.checkpoints_dir("t", "")
    folder.mkdir(parents=True)
    path = index_path(layout, folder, LINEAGE_SUFFIX)
    assert path is not None
    return layout, folder, path


def links_of(got: Lineage | None) -> tuple[dict[str, Node], dict[str, Any]]:
    assert got is not None
    return got.links, got.keys


@pytest.fixture
def encoded_rows(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many rows each save encoded."""
    counts: list[int] = []
    real = index.lineage_segment

    def counting(layout: Layout, folder: Path, rows: list[list[Any]]) -> bytes:
        counts.append(len(rows))
        return real(layout, folder, rows)

    monkeypatch.setattr(index, "lineage_segment", counting)
    return counts


def test_a_save_appends_only_the_links_added_since_the_last(
    place: tuple[Layout, Path, Path], encoded_rows: list[int]
) -> None:
    layout, folder, path = place
    files, lineage = LineageFiles(layout), chain(300)
    files.save(folder, lineage)
    first = path.read_bytes()
    for step in range(3):
        start = 300 + step * SAVE_EVERY
        chain(SAVE_EVERY, start, lineage)
        files.save(folder, lineage, [cid(i) for i in range(start, start + SAVE_EVERY)])
    assert encoded_rows == [300, SAVE_EVERY, SAVE_EVERY, SAVE_EVERY]  # not 364, 428, 492
    data = path.read_bytes()
    assert data.startswith(first + b"\n") and data.count(b'"kind":"lineage"') == 4
    assert links_of(decode_lineage(layout, folder, data)) == (lineage.links, lineage.keys)
    assert links_of(load_lineage(layout, folder)) == (lineage.links, lineage.keys)


def test_a_file_changed_since_this_process_wrote_it_is_written_whole(
    place: tuple[Layout, Path, Path], encoded_rows: list[int]
) -> None:
    layout, folder, path = place
    files, lineage = LineageFiles(layout), chain(100)
    files.save(folder, lineage)
    path.write_bytes(encode_lineage(layout, folder, chain(20)))  # another process, a hand edit
    chain(SAVE_EVERY, 100, lineage)
    files.save(folder, lineage, [cid(i) for i in range(100, 100 + SAVE_EVERY)])
    assert encoded_rows[-1] == 100 + SAVE_EVERY
    data = path.read_bytes()
    assert data.count(b'"kind":"lineage"') == 1  # one segment: nothing appended to theirs
    assert links_of(decode_lineage(layout, folder, data)) == (lineage.links, lineage.keys)
    path.unlink()  # removed: written whole again
    chain(SAVE_EVERY, 100 + SAVE_EVERY, lineage)
    files.save(folder, lineage, [cid(i) for i in range(100 + SAVE_EVERY, 100 + 2 * SAVE_EVERY)])
    assert links_of(load_lineage(layout, folder)) == (lineage.links, lineage.keys)


def test_a_file_holding_twice_the_rows_it_needs_is_written_whole(
    place: tuple[Layout, Path, Path], encoded_rows: list[int]
) -> None:
    """Rows appended again for the same checkpoints (put again, its key changed) do not make
    the file grow without end: past twice the links it holds, it is written anew."""
    layout, folder, path = place
    files, lineage = LineageFiles(layout), chain(SAVE_EVERY)
    files.save(folder, lineage)
    again = [cid(i) for i in range(SAVE_EVERY)]
    for round_ in range(3):
        lineage.keys = {c: (k[0], k[1], k[2] + round_ + 1, k[3]) for c, k in lineage.keys.items()}
        files.save(folder, lineage, again)
    assert encoded_rows == [SAVE_EVERY, SAVE_EVERY, SAVE_EVERY, SAVE_EVERY]
    assert path.read_bytes().count(b'"kind":"lineage"') == 2  # whole, appended, whole, appended
    # a later row of a checkpoint replaces an earlier one
    assert links_of(load_lineage(layout, folder)) == (lineage.links, lineage.keys)


def test_a_torn_forged_or_foreign_segment_makes_the_whole_file_ignored(
    place: tuple[Layout, Path, Path],
) -> None:
    layout, folder, path = place
    lineage = chain(100)
    whole = encode_lineage(layout, folder, lineage)
    more = chain(10, 100, Lineage())
    segment = lineage_segment(layout, folder, index.lineage_rows(more))
    assert decode_lineage(layout, folder, whole + b"\n" + segment) is not None
    other = layout.checkpoints_dir("u", "")
    bad = {
        "torn": whole + b"\n" + segment[: len(segment) // 2],
        "foreign folder": whole + b"\n" + lineage_segment(layout, other, index.lineage_rows(more)),
        "another crc": whole + b"\n" + segment.replace(b'"crc32":', b'"crc32":1'),
        "a row too many": whole + b"\n" + segment + b"\n" + segment.split(b"\n")[1],
        "no newline between": whole + segment,
        "a length past the end": whole + b"\n" + segment.replace(b'"bytes":', b'"bytes":9'),
    }
    path.parent.mkdir(parents=True)
    for why, data in bad.items():
        assert decode_lineage(layout, folder, data) is None, why
        path.write_bytes(data)
        assert load_lineage(layout, folder).links == {}, why


def test_a_file_of_one_segment_written_before_segments_still_reads(place: tuple[Layout, Path, Path]) -> None:
    """The head of the version before has no length: the rows are the rest of the file."""
    layout, folder, _path = place
    lineage = chain(80)
    lineage.links[cid(5)] = Node(cid(4), Choice(cid(3), (cid(2),)))
    body = b"\n".join(orjson.dumps(r) for r in index.lineage_rows(lineage))
    head = orjson.dumps(
        {"index_version": 1, "kind": "lineage", "folder": "threads/t/checkpoints", "count": 80, "crc32": 0}
    )
    head = head.replace(b'"crc32":0', b'"crc32":%d' % zlib.crc32(body))
    assert links_of(decode_lineage(layout, folder, head + b"\n" + body)) == (lineage.links, lineage.keys)


def test_nothing_is_appended_through_a_symlink(place: tuple[Layout, Path, Path], tmp_path: Path) -> None:
    layout, folder, path = place
    files, lineage = LineageFiles(layout), chain(100)
    files.save(folder, lineage)
    outside = tmp_path / "outside"
    outside.write_bytes(path.read_bytes())
    st = os.lstat(path)
    path.unlink()
    path.symlink_to(outside)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns), follow_symlinks=False)
    chain(SAVE_EVERY, 100, lineage)
    files.save(folder, lineage, [cid(i) for i in range(100, 100 + SAVE_EVERY)])
    assert outside.read_bytes().count(b'"kind":"lineage"') == 1  # the file outside untouched
