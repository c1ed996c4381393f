"""The roster (core/roster.py): what reads across threads need of every thread, kept for the
next call and the next process under the one cache rule, so a cross-thread ``list`` and
``langgraph-repo threads`` cost what changed, not what the root holds. Counts, never times."""

from __future__ import annotations

import gc
import json
import os
import shutil
import sqlite3
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from tests.graphs import ask_graph, cfg, chat_graph, sub_graph
from tests.helpers import cli

from langgraph_checkpoint_repo import RepoSaver
from langgraph_checkpoint_repo.core import files as files_module
from langgraph_checkpoint_repo.core import index as index_module
from langgraph_checkpoint_repo.core import metaview as metaview_module
from langgraph_checkpoint_repo.core import wholes
from langgraph_checkpoint_repo.core.caches import RACY_NS, DocCache
from langgraph_checkpoint_repo.core.format import resolve
from langgraph_checkpoint_repo.core.index import (
    ROSTER_META_SUFFIX,
    ROSTER_SHARDS,
    ROSTER_SUFFIX,
    KeptLineage,
    KeptMeta,
    NsFacts,
    decode_roster,
    decode_roster_meta,
    encode_roster,
    roster_path,
    roster_shard,
)
from langgraph_checkpoint_repo.core.layout import Layout
from langgraph_checkpoint_repo.readmodel.overview import overviews
from langgraph_checkpoint_repo.readmodel.reader import Reader

THREADS = 16  # chat threads, 8 threads waiting on an interrupt and one with a subgraph too
SMALL = 8  # a cache bound far below the files of THREADS threads
DEEP_TURNS = 22  # three checkpoints a turn: over index.MIN_NAMES


class Tee(RepoSaver):
    """A RepoSaver that makes every ``put`` and ``put_writes`` on a second saver too, with the
    same arguments: the two hold the same checkpoints, ids included."""

    other: SqliteSaver

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        self.other.put(config, checkpoint, metadata, new_versions)
        return super().put(config, checkpoint, metadata, new_versions)

    def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        self.other.put_writes(config, writes, task_id, task_path)
        super().put_writes(config, writes, task_id, task_path)


TEMPLATE: dict[str, Path] = {}


@pytest.fixture(scope="module", autouse=True)
def _template(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    TEMPLATE["folder"] = tmp_path_factory.mktemp("roster-template")
    yield
    TEMPLATE.clear()


def written() -> tuple[Path, Path]:
    """(root, SqliteSaver database) written once per module by the same graph calls."""
    if "root" not in TEMPLATE:
        folder = TEMPLATE["folder"]
        root, db = folder / ".langgraph", folder / "sqlite.db"
        conn = sqlite3.connect(str(db), check_same_thread=False)
        saver = Tee(root, durable=False)
        saver.other = SqliteSaver(conn)
        chat, ask = chat_graph(saver), ask_graph(saver)
        for t in range(THREADS):
            for turn in range(2):
                text = f"user {t} turn {turn}"
                chat.invoke({"messages": [HumanMessage(text)]}, cfg(f"t{t:02d}", user_id=f"user-{t % 4}"))
            if t % 3 == 0:
                ask.invoke({"log": []}, cfg(f"ask{t:02d}"))
        sub_graph(saver).invoke({"log": []}, cfg("sub"))
        for turn in range(DEEP_TURNS):  # a namespace too big for the roster: its own index files
            chat.invoke({"messages": [HumanMessage(f"deep turn {turn}")]}, cfg("deep"))
        conn.commit()
        conn.close()
        TEMPLATE["root"], TEMPLATE["db"] = root, db
    return TEMPLATE["root"], TEMPLATE["db"]


def settle() -> None:
    """Let the files age past the racy window, as they do between two processes."""
    time.sleep(2 * RACY_NS / 1e9)


def copied(tmp_path: Path) -> tuple[Path, SqliteSaver]:
    """A copy of the written root (no derived index) and a SqliteSaver on a copy of its twin."""
    root, db = written()
    shutil.copytree(root, tmp_path / ".langgraph", ignore=shutil.ignore_patterns(".cache"))
    shutil.copy(db, tmp_path / "sqlite.db")
    settle()
    return tmp_path / ".langgraph", SqliteSaver(sqlite3.connect(str(tmp_path / "sqlite.db")))


def seen(tuples: Any) -> list[tuple[Any, ...]]:
    """What a list gives, comparable across savers: each checkpoint's config, parent, metadata,
    channels and pending writes (a message LangGraph gave an id after SqliteSaver stored it
    keeps it in RepoSaver's files, so values are compared by channel)."""
    return [
        (
            t.config,
            t.parent_config,
            t.metadata,
            sorted(t.checkpoint["channel_values"]),
            [(task, channel) for task, channel, _ in t.pending_writes or []],
        )
        for t in tuples
    ]


class Reads:
    """Counts the checkpoint files read to be parsed (``json_bytes``), by path."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.paths: Counter[str] = Counter()
        real = files_module.json_bytes

        def json_bytes(path: Any, *args: Any, **kwargs: Any) -> Any:
            if "/checkpoints/" in str(path):
                self.paths[str(path)] += 1
            return real(path, *args, **kwargs)

        monkeypatch.setattr(files_module, "json_bytes", json_bytes)


LISTS: list[dict[str, Any]] = [
    {},
    {"filter": {"source": "loop"}},
    {"filter": {"user_id": "user-1", "step": 1}},
    {"limit": 7},
]


def test_a_list_across_threads_equals_sqlitesavers_for_the_same_calls(tmp_path: Path) -> None:
    root, sqlite = copied(tmp_path)
    everything = list(sqlite.list(None))
    before = {
        "configurable": {
            "thread_id": "t05",
            "checkpoint_ns": "",
            "checkpoint_id": everything[40].checkpoint["id"],
        }
    }
    for args in [*LISTS, {"before": before, "filter": {"source": "loop"}, "limit": 4}]:
        want = seen(sqlite.list(None, **args))
        assert want, args
        shutil.rmtree(root / ".cache", ignore_errors=True)
        first = RepoSaver(root)
        assert seen(first.list(None, **args)) == want, args  # the first process writes the roster
        assert seen(RepoSaver(root).list(None, **args)) == want, args  # the next reads it
        assert seen(first.list(None, **args)) == want, args  # and the first again, warm


def test_a_warm_list_across_more_threads_than_a_cache_holds_reads_each_checkpoint_at_most_once_then_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, _ = copied(tmp_path)
    for module in (files_module, wholes, resolve):  # every cache of documents and values
        monkeypatch.setattr(module, "CACHE_ENTRIES", SMALL)
    monkeypatch.setattr(DocCache.__init__, "__defaults__", (SMALL, None))
    saver = RepoSaver(root)
    matched = {"filter": {"user_id": "user-1", "step": 2}}
    first = seen(saver.list(None, **matched))
    assert len(first) == THREADS // 4
    reads = Reads(monkeypatch)
    assert seen(saver.list(None, **matched)) == first
    assert reads.paths and max(reads.paths.values()) == 1, reads.paths.most_common(3)
    again = Reads(monkeypatch)  # the caches grew to what the list reads again (caches.LRU)
    assert seen(saver.list(None, **matched)) == first
    assert not again.paths
    # a thread without a result is not read at all: the roster knows what a filter matches on
    assert {Path(p).parent.parent.name for p in reads.paths} <= {
        c["configurable"]["thread_id"] for c, *_ in first
    }


def test_a_fresh_filter_across_threads_reads_only_its_results_and_their_children(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, sqlite = copied(tmp_path)
    args: dict[str, Any] = {"filter": {"user_id": "user-1", "step": 1}}
    want = seen(sqlite.list(None, **args))
    assert seen(RepoSaver(root).list(None, **args)) == want  # leaves the roster
    assert any(roster_path(Layout(root), shard).is_file() for shard in range(ROSTER_SHARDS))
    reads = Reads(monkeypatch)
    assert seen(RepoSaver(root).list(None, **args)) == want
    layout = Layout(root)
    allowed: set[Path] = set()  # a result, its line of deltas down to a whole one, its child
    for config, *_ in want:
        thread_id, cid = config["configurable"]["thread_id"], config["configurable"]["checkpoint_id"]
        ids = sorted(p.stem for p in layout.checkpoints_dir(thread_id, "").iterdir())
        allowed.update(layout.checkpoint_path(thread_id, "", i) for i in ids[: ids.index(cid) + 2])
    assert reads.paths and {Path(p) for p in reads.paths} <= allowed
    assert max(reads.paths.values()) == 1


def test_a_fresh_filter_sees_an_in_place_edit_and_a_new_thread_despite_the_roster(tmp_path: Path) -> None:
    root, _ = copied(tmp_path)
    args: dict[str, Any] = {"filter": {"user_id": "user-1", "step": 1}}
    found = seen(RepoSaver(root).list(None, **args))
    cid = found[0][0]["configurable"]["checkpoint_id"]
    path = Layout(root).checkpoint_path(found[0][0]["configurable"]["thread_id"], "", cid)
    text = path.read_text()
    assert '"user_id": "user-1"' in text
    with open(path, "r+") as fh:  # in place: same inode, same folder; only the file's stat changes
        fh.write(text.replace('"user_id": "user-1"', '"user_id": "user-9"'))
        fh.truncate()
    chat_graph(RepoSaver(root)).invoke({"messages": [HumanMessage("hi")]}, cfg("new", user_id="user-1"))
    got = seen(RepoSaver(root).list(None, **args))
    assert cid not in {c["configurable"]["checkpoint_id"] for c, *_ in got}
    assert "new" in {c["configurable"]["thread_id"] for c, *_ in got}
    assert len(got) == len(found)  # one gone by the edit, one come with the new thread


def rows(root: Path) -> list[dict[str, Any]]:
    proc = cli(root, "threads", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def test_threads_from_the_roster_shows_what_reading_every_thread_shows(tmp_path: Path) -> None:
    root, _ = copied(tmp_path)
    first = rows(root)
    reader = Reader(root)
    by_summary = [reader.summary(r["thread_id"]) for r in first]
    assert [(s.thread_id, s.latest_id, s.checkpoints, s.next, len(s.waiting)) for s in by_summary] == [
        (r["thread_id"], r["latest_checkpoint_id"], r["checkpoints"], r["next"], len(r["waiting"]))
        for r in first
    ]
    assert any(r["waiting"] for r in first) and any(len(r["namespaces"]) > 1 for r in first)
    assert rows(root) == first  # from the roster this time
    text = cli(root, "threads")
    assert text.returncode == 0 and "t00" in text.stdout


def test_a_list_across_threads_decodes_no_row_of_threads_and_writes_them_back_as_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rows of ``threads`` are a roster line of their own, decoded when ``threads`` asks:
    a filter across threads decodes none, and a roster written back undecoded holds the very
    bytes it was read from."""
    root, _ = copied(tmp_path)
    want = rows(root)  # leaves the roster, rows and all
    decoded: list[bytes] = []
    real = index_module._row_of
    monkeypatch.setattr(index_module, "_row_of", lambda line: decoded.append(line) or real(line))
    assert seen(RepoSaver(root).list(None, filter={"user_id": "user-1"}))
    assert decoded == []
    layout, shard = Layout(root), roster_shard("t03")
    data = roster_path(layout, shard).read_bytes()
    facts = decode_roster(layout, shard, data)
    assert facts is not None and decoded == []
    assert encode_roster(layout, shard, list(facts.values())) == data
    kept = [json.loads(line) for line in data.split(b"\n")[3::3]]  # head, then 3 lines a thread
    assert [index_module.thread_row(f) for f in facts.values()] == kept
    assert len(decoded) == len(kept) == len(facts) and all(kept)
    assert "t03" in {r["thread_id"] for r in want}


def test_threads_in_a_fresh_process_reads_the_roster_not_the_checkpoints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, _ = copied(tmp_path)
    want = rows(root)  # leaves the roster
    reads = Reads(monkeypatch)
    got = [(tid, o.summary.latest_id) for tid, o in overviews(Reader(root, snapshots=True))]
    assert got == [(r["thread_id"], r["latest_checkpoint_id"]) for r in want]
    assert not reads.paths


def test_threads_sees_an_added_thread_a_removed_one_and_an_in_place_edit_of_the_latest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, _ = copied(tmp_path)
    before = {r["thread_id"]: r for r in rows(root)}
    chat_graph(RepoSaver(root)).invoke({"messages": [HumanMessage("hi")]}, cfg("added"))
    RepoSaver(root).delete_thread("t01")
    path = Layout(root).checkpoint_path("t02", "", before["t02"]["latest_checkpoint_id"])
    text = path.read_text()
    step = before["t02"]["latest_step"]
    with open(path, "r+") as fh:
        fh.write(text.replace(f'"step": {step}', f'"step": {step + 100}'))
        fh.truncate()
    reads = Reads(monkeypatch)
    after = {r["thread_id"]: r for r in rows(root)}
    assert set(after) == set(before) - {"t01"} | {"added"}
    assert after["t02"]["latest_step"] == step + 100
    assert {Path(p).parent.parent.name for p in reads.paths} == {"added", "t02"}


def shard_file(root: Path, suffix: str = ROSTER_SUFFIX) -> Path:
    return roster_path(Layout(root), roster_shard("t03"), suffix)


def forged(line: Any, damage: str, trees: list[Any] | None = None, row: Any = None) -> None:
    """A roster line damaged or forged in place: another machine's stat keys (a checkout's, a
    pull request's) with another step, a row that names no file, a tree that names a type.
    ``trees``: the line after it (a roster's parent links, the metadata file's trees);
    ``row``: a roster's third line, the thread's row of ``threads``."""
    roster = "id" in line  # a roster's facts, else a line of the metadata file
    if damage == "forged" and roster:
        line["key"][3] += 1
        for ns, links in zip(line["ns"], trees or [], strict=True):
            ns["key"][3] += 1
            for link in links:
                link[4] += 1
        for dep in row["deps"]:
            if dep[1] is not None:  # None: a folder that is not there (writes/: all taken)
                dep[1][3] += 1
        row["step"] = 999
    elif damage == "forged" and trees is not None:  # a line of the metadata file
        for (_, _, keys), kept in zip(line["ns"], trees, strict=True):
            for i, tree in enumerate(kept):
                keys[4 * i + 3] += 1  # the inode
                tree["step"] = 999
    elif damage in ("type", "escaped type") and not roster and trees is not None:
        _, cids, keys = line["ns"][0]
        cids.append(cids[0])
        keys.extend([1, 2, 3, 4])
        trees[0].append({"step": {"$type": ["os", "system"]}})
    elif damage == "id not a string" and not roster and trees is not None:
        line["ns"][0][1][0] = 5  # a filter made a file's path of it (TypeError), review of 64e2236
    elif damage == "empty-deps" and roster:
        row["deps"] = []
        row["step"] = 999
    elif damage == "latest" and roster:  # not the pairs a row's deps are checked by
        row["latest"] = 5


def damaged(path: Path, damage: str) -> bytes:
    if damage == "bytes":
        return path.read_bytes()[:-40]
    head, _, body = path.read_bytes().partition(b"\n")
    if damage == "two values":  # a first line holding two JSON values: one row more than lines
        first, _, rest = body.partition(b"\n")
        return _with_crc(head, first + b',{"x":1}\n' + rest)
    lines = [json.loads(line) for line in body.split(b"\n")]
    per = 3 if path.name.endswith(ROSTER_SUFFIX) else 2  # facts, links, row; or ids, trees
    for group in zip(*(lines[i::per] for i in range(per)), strict=True):
        forged(group[0], damage, group[1], group[2] if per == 3 else None)
    body = b"\n".join(json.dumps(line, separators=(",", ":")).encode() for line in lines)
    if damage == "escaped type":  # no "$" byte in the file: the key is an escape
        body = body.replace(b'"$type"', b'"\\u0024type"')
    return _with_crc(head, body)


DAMAGES = ["bytes", "forged", "type", "escaped type", "id not a string", "empty-deps", "latest", "two values"]


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_or_forged_roster_is_ignored_and_fsck_reports_and_repairs_it(
    tmp_path: Path, damage: str
) -> None:
    root, _ = copied(tmp_path)
    want = rows(root)
    loops = seen(RepoSaver(root).list(None, filter={"source": "loop"}))  # the metadata files too
    layout, shard = Layout(root), roster_shard("t03")
    files = {shard_file(root): decode_roster, shard_file(root, ROSTER_META_SUFFIX): decode_roster_meta}
    data = {path: damaged(path, damage) for path in files}
    for path, bad in data.items():
        path.write_bytes(bad)
    assert rows(root) == want  # not used: read from the files, and the files written again
    assert seen(RepoSaver(root).list(None, filter={"step": 999})) == []
    assert seen(RepoSaver(root).list(None, filter={"source": "loop"})) == loops
    if damage not in ("bytes", "type", "escaped type", "id not a string", "two values"):
        return  # well formed: kept, and every entry is checked on use (its stat keys)
    broken = [path for path, decode in files.items() if decode(layout, shard, data[path]) is None]
    assert broken
    for path, decode in files.items():
        assert decode(layout, shard, path.read_bytes()) is not None
        path.write_bytes(data[path])
    findings = [f for f in json.loads(cli(root, "fsck", "--json").stdout)["findings"] if f["kind"] == "index"]
    assert sorted(f["path"] for f in findings) == sorted(map(str, broken))
    assert all(f["repairable"] for f in findings)
    assert cli(root, "fsck", "--repair").returncode == 0
    assert all(decode(layout, shard, path.read_bytes()) is not None for path, decode in files.items())
    assert cli(root, "fsck").returncode == 0
    assert rows(root) == want


def _with_crc(head: bytes, body: bytes) -> bytes:
    import zlib

    fields = json.loads(head)
    fields["crc32"] = zlib.crc32(body)
    return json.dumps(fields, separators=(",", ":")).encode() + b"\n" + body


def test_a_symlinked_roster_is_never_followed_and_fsck_reports_it(tmp_path: Path) -> None:
    root, _ = copied(tmp_path)
    want = rows(root)
    path = shard_file(root)
    head, _, body = path.read_bytes().partition(b"\n")
    lines = [json.loads(line) for line in body.split(b"\n")]
    for row in lines[2::3]:  # what this machine's files hold (their stat keys), another step
        row["step"] = 999
    decoy = tmp_path / "elsewhere.roster"
    decoy.write_bytes(_with_crc(head, b"\n".join(json.dumps(line).encode() for line in lines)))
    before = decoy.read_bytes()
    path.unlink()
    os.symlink(decoy, path)
    findings = [
        f for f in json.loads(cli(root, "fsck", "--json").stdout)["findings"] if f["path"] == str(path)
    ]
    assert [f["kind"] for f in findings] == ["foreign"]
    assert rows(root) == want  # the link is not followed (the roster is written in its place)
    assert decoy.read_bytes() == before


CELL_PIECES = ["t01", "42", "", "-", "chat", "ask: What?", "日本語", "é", "a b", "\x1b[31m", "x\ty"]
CELL_PIECES.append("ghp_" + "a" * 36)  # a secret, masked


def test_a_table_into_a_pipe_is_printed_as_rich_prints_it() -> None:
    """``threads`` prints thousands of rows without rich laying out each cell: the lines are
    rich's own (wide characters, escapes, masked secrets, right-justified columns); a table
    rich must lay out itself (a tab, spaces to keep) is left to rich."""
    import random

    from rich.table import Table

    from langgraph_checkpoint_repo.cli.output import Text, out_console, plain_table_lines, rich_table_lines

    rng, plain_ones = random.Random(37), 0
    for _ in range(60):
        table = Table(box=None, header_style="bold", pad_edge=False)
        for i in range(rng.randint(1, 5)):
            table.add_column(f"col{i}", justify=rng.choice(["left", "right"]))
        for _ in range(rng.randint(0, 6)):
            cells = ["".join(rng.choices(CELL_PIECES, k=rng.randint(0, 2))) for _ in table.columns]
            table.add_row(*[Text(c, style="bold") if rng.random() < 0.3 else c for c in cells])
        plain = plain_table_lines(table)
        if plain is not None:
            plain_ones += 1
            assert plain == rich_table_lines(out_console(), table)
    assert plain_ones >= 10  # the usual table is printed without rich's layout


def test_a_cache_grows_to_hold_what_is_read_again_but_not_for_one_pass() -> None:
    from langgraph_checkpoint_repo.core.caches import LRU

    lru = LRU(4)
    for key in range(100):  # one pass over many: it stays as it was
        lru.put(key, key)
    assert lru.size == 4 and len(lru) == 4
    cycle = LRU(4)
    misses = []
    for _ in range(3):  # a working set of 6, read again and again
        missed = 0
        for key in range(6):
            if cycle.get(key) is None:
                missed += 1
                cycle.put(key, key)
        misses.append(missed)
    assert misses == [6, 2, 0] and cycle.size == 6  # each evicted key wanted again: one more


def test_a_fresh_filter_for_a_string_decodes_the_kept_metadata_of_only_the_threads_that_may_hold_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The roster keeps each thread's metadata trees and parent links on lines of their own; a
    filter looking for a string decodes the trees of the lines that hold it (the four threads
    of user-1), not the others, whose files are still checked by their stat keys, and the
    links of its results' threads alone: what it finds is SqliteSaver's."""
    root, sqlite = copied(tmp_path)
    args: dict[str, Any] = {"filter": {"user_id": "user-1"}}
    want = seen(sqlite.list(None, **args))
    assert seen(RepoSaver(root).list(None, **args)) == want  # leaves the roster
    decoded: list[str] = []
    real = KeptMeta.decoded

    def counted(self: KeptMeta) -> Any:
        decoded.append(Path(self.folder).parent.name)
        return real(self)

    monkeypatch.setattr(KeptMeta, "decoded", counted)
    linked: list[str] = []  # whose parent links were parsed: the results' threads alone
    real_links = KeptLineage.rows

    def links(self: KeptLineage) -> Any:
        got = real_links(self)
        linked.append(str(got[0][0]) if got else "")
        return got

    monkeypatch.setattr(KeptLineage, "rows", links)
    assert seen(RepoSaver(root).list(None, **args)) == want
    assert sorted(decoded) == ["t01", "t05", "t09", "t13"]
    firsts = {  # each thread's first checkpoint id: whose links a row of links starts with
        t: sorted(p.stem for p in Layout(root).checkpoints_dir(t, "").glob("*.json"))[0]
        for t in ("t01", "t05", "t09", "t13")
    }
    assert sorted(linked) == sorted(firsts.values())
    decoded.clear()
    both: dict[str, Any] = {"filter": {"user_id": "user-1", "step": 1}}  # a number is not looked for
    assert seen(RepoSaver(root).list(None, **both)) == seen(sqlite.list(None, **both))
    assert sorted(decoded) == ["t01", "t05", "t09", "t13"]


def test_a_fresh_filter_makes_objects_of_the_threads_of_its_results_and_of_the_changed_ones_only(
    tmp_path: Path,
) -> None:
    """A fresh process keeps each thread a roster file holds as the file has it (plain tuples,
    which the garbage collector stops tracking) while its folders' stat keys are unchanged: a
    filter across threads makes objects of the threads of its results (their parent links) and
    of a thread written since, not of every thread of the root."""
    root, sqlite = copied(tmp_path)
    args: dict[str, Any] = {"filter": {"user_id": "user-1"}}
    want = seen(sqlite.list(None, **args))
    assert seen(RepoSaver(root).list(None, **args)) == want  # leaves the roster
    more = {"messages": [HumanMessage("one more")]}
    chat_graph(RepoSaver(root, durable=False)).invoke(more, cfg("t02", user_id="user-2"))
    gc.collect()
    saver = RepoSaver(root)
    assert seen(saver.list(None, **args)) == want
    gc.collect()
    made = [o for o in gc.get_objects() if type(o) is NsFacts and o.folder.startswith(f"{root}{os.sep}")]
    assert sorted(Path(ns.folder).parent.name for ns in made) == ["t01", "t02", "t05", "t09", "t13"]
    folder = Layout(root).checkpoints_dir("t03", "")  # kept as the file has it, until it changes
    old = {p.stem for p in folder.glob("*.json")}
    chat_graph(RepoSaver(root, durable=False)).invoke(more, cfg("t03", user_id="user-1"))
    new = {p.stem for p in folder.glob("*.json")} - old
    got = seen(saver.list(None, **args))
    assert new and len(got) == len(want) + len(new)
    assert new <= {c["configurable"]["checkpoint_id"] for c, *_ in got}


def test_a_fresh_filter_finds_a_checkpoint_edited_in_place_to_match_in_a_thread_that_never_did(
    tmp_path: Path,
) -> None:
    """A thread whose kept metadata never held the string is not decoded, but each of its files
    is checked by its stat key: one edited in place (same inode, same size) to match is read."""
    root, _ = copied(tmp_path)
    args: dict[str, Any] = {"filter": {"user_id": "user-1"}}
    before = seen(RepoSaver(root).list(None, **args))  # leaves the roster
    folder = Layout(root).checkpoints_dir("t02", "")
    path = sorted(folder.glob("*.json"))[-1]
    text = path.read_text()
    assert '"user_id": "user-2"' in text
    with open(path, "r+") as fh:  # in place: same inode, same folder, same size
        fh.write(text.replace('"user_id": "user-2"', '"user_id": "user-1"'))
    got = seen(RepoSaver(root).list(None, **args))
    assert len(got) == len(before) + 1
    assert path.stem in {c["configurable"]["checkpoint_id"] for c, *_ in got}


def test_a_fresh_filter_reads_the_checkpoints_added_since_a_thread_s_metadata_was_kept(
    tmp_path: Path,
) -> None:
    """The kept metadata of an earlier process, one turn short of the thread's files (a
    writer that left the index as it was): the ids listed are not the ids kept, and the ones
    never kept are read, so the filter finds the turn that matches."""
    root, _ = copied(tmp_path)
    args: dict[str, Any] = {"filter": {"user_id": "user-1"}}
    before = seen(RepoSaver(root).list(None, **args))  # leaves the roster
    kept = tmp_path / "kept-cache"
    shutil.copytree(root / ".cache", kept)
    folder = Layout(root).checkpoints_dir("t02", "")
    old = {p.stem for p in folder.glob("*.json")}
    more = {"messages": [HumanMessage("one more")]}
    chat_graph(RepoSaver(root, durable=False)).invoke(more, cfg("t02", user_id="user-1"))
    new = {p.stem for p in folder.glob("*.json")} - old
    shutil.rmtree(root / ".cache")
    shutil.copytree(kept, root / ".cache")
    settle()
    got = seen(RepoSaver(root).list(None, **args))
    assert new and len(got) == len(before) + len(new)
    assert new <= {c["configurable"]["checkpoint_id"] for c, *_ in got}


def test_a_warm_filter_answers_each_thread_from_the_index_of_its_kept_metadata(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a process that read every checkpoint itself (no roster on disk), a warm filter for a
    string is answered per namespace from the index of its kept metadata's values (metaview.py,
    made at the second filter): the namespaces that hold it (user-1's threads) give their ids,
    the others none, each file checked by its stat key and nothing more, no metadata compared.
    Same answer as SqliteSaver's, also after a hand edit in place and a turn written by the same
    saver."""
    root, sqlite = copied(tmp_path)
    args: dict[str, Any] = {"filter": {"user_id": "user-1"}}
    saver = RepoSaver(root)
    assert seen(saver.list(None, **args)) == seen(sqlite.list(None, **args))  # reads every header
    list(saver.list(None, **args))  # lays each namespace's entries out, and the second indexes them
    found: dict[str, int] = {}  # thread folder -> how many ids the index gave for the string
    real = index_module.MetaCache.matching

    def matching(self: Any, thread_id: str, ns: str, *rest: Any) -> Any:
        before = self._views.get((thread_id, ns))
        got = real(self, thread_id, ns, *rest)
        view = self._views.get((thread_id, ns))
        if view is not None:
            ids = view.candidates(rest[1])
            assert ids is not None  # answered from the index, no metadata compared
            found[thread_id] = len(ids)
        assert view is before  # laid out once, not again for each call
        return got

    real_changed = metaview_module.MetaView.changed
    ruled_out: list[Any] = []  # views whose index ruled every entry out: their files checked only

    def changed(self: Any) -> list[str]:
        assert self.candidates(args["filter"].items()) == set()  # answered from the index
        ruled_out.append(self)
        return real_changed(self)

    spaces = {
        (c["configurable"]["thread_id"], c["configurable"]["checkpoint_ns"])
        for c, *_ in seen(saver.list(None))
    }
    monkeypatch.setattr(index_module.MetaCache, "matching", matching)
    monkeypatch.setattr(metaview_module.MetaView, "changed", changed)
    reads = Reads(monkeypatch)
    assert seen(saver.list(None, **args)) == seen(sqlite.list(None, **args))
    assert sorted(t for t, n in found.items() if n) == ["t01", "t05", "t09", "t13"]
    assert len(found) >= 4
    assert len(ruled_out) + sum(1 for (t, _) in spaces if t in found) >= len(spaces)  # every namespace
    assert not reads.paths
    folder = Layout(root).checkpoints_dir("t02", "")
    path = sorted(folder.glob("*.json"))[-1]
    text = path.read_text()
    with open(path, "r+") as fh:  # in place: same inode, same folder, same size
        fh.write(text.replace('"user_id": "user-2"', '"user_id": "user-1"'))
    got = seen(saver.list(None, **args))
    assert path.stem in {c["configurable"]["checkpoint_id"] for c, *_ in got}
    assert list(reads.paths) == [str(path)]  # the edited file alone is read
    monkeypatch.setattr(index_module.MetaCache, "matching", real)
    monkeypatch.setattr(metaview_module.MetaView, "changed", real_changed)
    more = {"messages": [HumanMessage("one more")]}
    chat_graph(saver).invoke(more, cfg("t03", user_id="user-1"))
    added = {c["configurable"]["checkpoint_id"] for c, *_ in saver.list(cfg("t03"), limit=3)}
    found = {c["configurable"]["checkpoint_id"] for c, *_ in seen(saver.list(None, **args))}
    assert added <= found


class _Loose:
    """A metadata value equal to every string, as any object may define ``__eq__``."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, str)

    __hash__ = object.__hash__


class _Label(str):
    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and other.lower() == self.lower()

    __hash__ = str.__hash__


@pytest.mark.parametrize("value", [_Loose(), _Label("USER-1")], ids=["object", "str-subclass"])
def test_metadata_that_may_equal_a_value_it_is_not_is_never_ruled_out_by_the_index(
    tmp_path: Path, value: Any
) -> None:
    """The index answers only for plain values: metadata holding an object or a str subclass
    (whose ``==`` it cannot know) is compared, so a filter still matches it, the first time (a
    scan) and the next (where a plain namespace is answered from the index)."""
    from langgraph_checkpoint_repo.core.caches import stat_key
    from langgraph_checkpoint_repo.core.metaview import MetaView

    (tmp_path / "c1.json").write_text("{}")
    file, key = str(tmp_path / "c1.json"), stat_key(os.lstat(tmp_path / "c1.json"))
    assert value == "user-1"
    loose = MetaView(0, None, [("c1", (file, key, {"user_id": value}, None))])
    plain = MetaView(0, None, [("c1", (file, key, {"user_id": "user-2", "step": 1}, None))])
    for _ in range(3):
        assert loose.matching(["c1"], [("user_id", "user-1")], None) == (["c1"], [])
        assert plain.matching(["c1"], [("user_id", "user-1")], None) == ([], [])
        assert plain.matching(["c1"], [("step", 1.0), ("user_id", "user-2")], None) == (["c1"], [])
    assert plain.candidates([("user_id", "user-1")]) == set()
    assert loose.candidates([("user_id", "user-1")]) is None


def _add_lines(path: Path, shard: int, lines: list[bytes], per: int) -> None:
    """``lines`` (a thread's group: ``per`` lines) added to a roster file of ``shard``, made
    whole when it is absent: head line counted and checksummed again."""
    if path.exists():
        head, _, body = path.read_bytes().partition(b"\n")
        fields = json.loads(head)
    else:
        fields, body = None, b""
    body = b"\n".join([body, *lines]) if body else b"\n".join(lines)
    if fields is None:
        kind = "roster-metadata" if per == 2 else "roster"
        fields = {"index_version": 1, "kind": kind, "folder": "threads", "shard": shard}
    fields["count"] = len(body.split(b"\n")) // per
    path.write_bytes(_with_crc(json.dumps(fields, separators=(",", ":")).encode(), body))


def test_a_roster_line_of_a_missing_folder_claiming_a_thread_s_id_leaves_that_thread_s_kept_metadata(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A forged line for a folder that is not there, naming a real thread's id, and its metadata
    line (another machine's stat keys) in a later roster file: the real thread keeps its own
    kept metadata (rows go by thread folder, which a line cannot claim), so a fresh filter
    reads none of its files, as without the forged lines."""
    root, _ = copied(tmp_path)
    args: dict[str, Any] = {"filter": {"user_id": "user-1"}}  # t03 is user-3's: no result of it
    want = seen(RepoSaver(root).list(None, **args))  # leaves the roster
    settle()
    layout = Layout(root)
    victim = roster_shard("t03")
    ghost = next(f"g{i}" for i in range(1000) if roster_shard(f"g{i}") > victim)
    for suffix, per in ((ROSTER_SUFFIX, 3), (ROSTER_META_SUFFIX, 2)):
        body = roster_path(layout, victim, suffix).read_bytes().partition(b"\n")[2].split(b"\n")
        group = next(
            body[i : i + per] for i in range(0, len(body), per) if json.loads(body[i])["seg"] == "t03"
        )
        line = json.loads(group[0])
        line["seg"] = ghost
        if per == 2:
            for _, _, keys in line["ns"]:
                keys[3::4] = [inode + 1 for inode in keys[3::4]]  # another machine's inodes
        first = json.dumps(line, separators=(",", ":")).encode()
        _add_lines(
            roster_path(layout, roster_shard(ghost), suffix), roster_shard(ghost), [first, *group[1:]], per
        )
    reads = Reads(monkeypatch)
    assert seen(RepoSaver(root).list(None, **args)) == want
    assert not [p for p in reads.paths if "/threads/t03/" in p]


def test_a_thread_held_as_objects_sees_every_change_of_its_folders_as_inmemorysaver_does(
    tmp_path: Path,
) -> None:
    """A warm filter across threads takes a thread it holds as objects as it is while its
    folder's, its ``ns/`` folder's and each checkpoints folder's keys are the recorded ones
    (``Roster._holds``): a checkpoint or a namespace added (settled or not), a thread deleted
    or copied, each is seen by the next call, with InMemorySaver's answer."""
    repo, memory = RepoSaver(tmp_path / ".langgraph", durable=False), InMemorySaver()
    wanted = {"user_id": "u1"}

    def put(thread: str, ns: str, count: int) -> None:
        configs: list[Any] = [{"configurable": {"thread_id": thread, "checkpoint_ns": ns}}] * 2
        for _ in range(count):
            checkpoint = empty_checkpoint()
            configs = [
                s.put(c, checkpoint, dict(wanted), {}) for s, c in zip((repo, memory), configs, strict=True)
            ]

    def agree(step: str) -> None:
        for _ in range(2):  # the call that finds the change, then the one that holds it
            got = sorted(t.config["configurable"]["checkpoint_id"] for t in repo.list(None, filter=wanted))
            want = sorted(t.config["configurable"]["checkpoint_id"] for t in memory.list(None, filter=wanted))
            assert got == want, step

    put("a", "", 2)
    put("b", "sub:x", 2)
    settle()
    agree("first")
    for step, (thread, ns, count) in enumerate(
        [("a", "", 1), ("a", "sub:1", 1), ("a", "sub:1", 1), ("b", "sub:x", 1)]
    ):
        put(thread, ns, count)
        agree(f"{step}: {thread} {ns} unsettled")
        settle()
        agree(f"{step}: {thread} {ns} settled")
    repo.delete_thread("a")
    memory.delete_thread("a")
    agree("deleted")
    repo.copy_thread("b", "c")
    for ns, saved in memory.storage["b"].items():
        memory.storage["c"][ns] = dict(saved)
    agree("copied")
    settle()
    agree("copied, settled")
