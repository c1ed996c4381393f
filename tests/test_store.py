"""RepoStore's own rules: the files it writes, values, secrets, compare-and-swap, timestamps,
the embeddings cache, TTL, and writers in several processes (docs/store.md)."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import textwrap
import time
import uuid
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import GetOp, PutOp

from forkserver import Parent
from langgraph_checkpoint_repo import InvalidWriteError, ItemChangedError, RepoStore, UnrevivableValueError
from langgraph_checkpoint_repo.core.errors import BadInputError
from langgraph_checkpoint_repo.core.items import MAX_PATH_CHARS
from langgraph_checkpoint_repo.core.vectors import FOLDER
from storeref import DIMS, START, Clock, fake_embed


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(tmp_path: Path, clock: Clock) -> RepoStore:
    return RepoStore(tmp_path / "root", clock=clock, durable=False)


# ----------------------------------------------------------------------------
# the files
# ----------------------------------------------------------------------------
def test_an_item_is_one_readable_json_file_named_by_its_namespace_and_key(store: RepoStore) -> None:
    store.put(("users", "alice"), "prefs", {"theme": "dark", "langs": ["en", "fr"]})
    path = store.root / "store" / "users" / "alice" / "prefs.json"
    assert store.path(("users", "alice"), "prefs") == path
    assert path.read_text() == textwrap.dedent(
        """\
        {
          "created_at": "2026-01-01T12:00:00.000000+00:00",
          "key": "prefs",
          "kind": "item",
          "namespace": ["users", "alice"],
          "schema_version": 4,
          "updated_at": "2026-01-01T12:00:00.000000+00:00",
          "value": {"langs": ["en", "fr"], "theme": "dark"}
        }
        """
    )
    assert (store.root / ".gitignore").read_text().splitlines()[1] == "/.cache"  # lock files stay out of git


def test_odd_labels_and_keys_are_segments_that_stay_in_their_folder(store: RepoStore) -> None:
    cases = [
        (("Users", "a/b"), "../../etc/passwd", "^users/a%2fb/%2e.%2f..%2fetc%2fpasswd.json"),
        (("con",), "nul", "%63on/%6eul.json"),
        (("x",), "", "x/%.json"),
        (("tools",), "helper.py", "tools/helper%2epy.json"),
    ]
    for ns, key, rel in cases:
        store.put(ns, key, {"v": key})
        assert store.path(ns, key) == store.root / "store" / rel
        assert store.get(ns, key).value == {"v": key}  # type: ignore[union-attr]
    long_label, long_key = "L" * 300, "K" * 300
    store.put((long_label,), long_key, {"v": 1})
    folder = store.path((long_label,), long_key).parent
    assert folder.name.startswith("~") and len(folder.name) == 65
    assert store.list_namespaces(prefix=(long_label,)) == [(long_label,)]
    assert store.search((long_label,))[0].key == long_key


def test_values_that_are_not_plain_json_are_trees_revived_as_they_were(store: RepoStore) -> None:
    value = {
        "when": date(2024, 5, 1),
        "id": uuid.UUID(int=7),
        "set": {3, 1, 2},
        "raw": b"\x00\x01",
        "$odd": 1,
    }
    store.put(("ns",), "k", value)
    assert store.get(("ns",), "k").value == value  # type: ignore[union-attr]
    doc = json.loads(store.path(("ns",), "k").read_text())
    assert doc["value"]["$map"][0] == ["when", {"$args": [2024, 5, 1], "$type": ["datetime", "date"]}]
    again = RepoStore(store.root)  # another instance: nothing from the writer's caches
    assert again.get(("ns",), "k").value == value  # type: ignore[union-attr]


def test_a_tuple_comes_back_as_a_list_as_from_the_sql_stores(store: RepoStore) -> None:
    store.put(("ns",), "k", {"pair": (1, 2)})
    assert store.get(("ns",), "k").value == {"pair": [1, 2]}  # type: ignore[union-attr]


def test_what_a_caller_changes_in_a_value_is_not_the_store_s(store: RepoStore) -> None:
    mine = {"list": [1]}
    store.put(("ns",), "k", mine)
    mine["list"].append(2)
    got = store.get(("ns",), "k")
    assert got is not None and got.value == {"list": [1]}
    got.value["list"].append(3)
    store.search(("ns",))[0].value["list"].append(4)
    assert store.get(("ns",), "k").value == {"list": [1]}  # type: ignore[union-attr]


def test_a_type_outside_the_allowlist_is_refused_before_anything_is_imported(store: RepoStore) -> None:
    store.put(("ns",), "k", {"v": 1})
    path = store.path(("ns",), "k")
    doc = json.loads(path.read_text())
    doc["value"] = {"v": {"$type": ["antigravity", "fly"], "$arg": 1}}
    path.write_text(json.dumps(doc))
    with pytest.raises(UnrevivableValueError, match=r"antigravity\.fly") as caught:
        RepoStore(store.root).get(("ns",), "k")
    assert str(path) in str(caught.value)
    assert "antigravity" not in sys.modules
    allowed = RepoStore(store.root, allowlist=[("datetime", "date")])
    with pytest.raises(UnrevivableValueError):
        allowed.search(("ns",))


def test_secrets_are_redacted_before_anything_is_written(store: RepoStore) -> None:
    key = "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0" * 2
    store.put(("ns",), "plain", {"note": f"my key is {key}"})
    store.put(("ns",), "tree", {"note": f"my key is {key}", "when": date(2024, 1, 1)})
    for name in ("plain", "tree"):
        text = store.path(("ns",), name).read_text()
        assert key not in text and "[REDACTED:openai-key]" in text
        assert store.get(("ns",), name).value["note"] == "my key is [REDACTED:openai-key]"  # type: ignore[union-attr]
    verbatim = RepoStore(store.root / "other", redact=False, durable=False)
    verbatim.put(("ns",), "k", {"note": key})
    assert key in verbatim.path(("ns",), "k").read_text()


def test_a_key_that_is_not_unicode_is_refused_naming_where(store: RepoStore) -> None:
    with pytest.raises(InvalidWriteError, match="/key"):
        store.put(("ns",), "bad\ud800", {"v": 1})
    with pytest.raises(InvalidWriteError, match="/namespace/0"):
        store.put(("bad\udfff",), "k", {"v": 1})
    assert store.search(()) == []


def test_a_namespace_too_long_for_a_path_is_refused_naming_it(store: RepoStore) -> None:
    ns = tuple(f"label{i}-" + "x" * 110 for i in range(20))
    with pytest.raises(BadInputError, match=f"at most {MAX_PATH_CHARS}"):
        store.put(ns, "k", {"v": 1})


def test_a_value_that_is_no_mapping_is_refused(store: RepoStore) -> None:
    with pytest.raises(InvalidWriteError, match="must be a mapping"):
        store.batch([PutOp(("ns",), "k", ["not", "a", "dict"])])  # type: ignore[arg-type]


# ----------------------------------------------------------------------------
# timestamps and compare-and-swap
# ----------------------------------------------------------------------------
def test_created_at_is_kept_and_updated_at_grows_with_every_write(store: RepoStore, clock: Clock) -> None:
    store.put(("ns",), "k", {"v": 1})
    first = store.get(("ns",), "k")
    store.put(("ns",), "k", {"v": 2})  # the clock has not moved
    second = store.get(("ns",), "k")
    clock.tick(minutes=1)
    store.put(("ns",), "k", {"v": 3})
    third = store.get(("ns",), "k")
    assert first and second and third
    assert first.created_at == second.created_at == third.created_at == START
    assert second.updated_at == START + timedelta(microseconds=1)
    assert third.updated_at == START + timedelta(minutes=1)


def test_a_put_with_if_updated_at_writes_only_over_the_version_read(store: RepoStore) -> None:
    store.put(("ns",), "k", {"v": 1}, if_updated_at=None)  # None: only if there is none
    read = store.get(("ns",), "k")
    assert read is not None
    store.put(("ns",), "k", {"v": 2}, if_updated_at=read.updated_at)
    with pytest.raises(ItemChangedError) as caught:
        store.put(("ns",), "k", {"v": 3}, if_updated_at=read.updated_at)  # a stale read
    assert store.get(("ns",), "k").value == {"v": 2}  # type: ignore[union-attr]
    err = caught.value
    assert (err.namespace, err.key, err.expected) == (
        ("ns",),
        "k",
        read.updated_at.isoformat(timespec="microseconds"),
    )
    assert str(store.path(("ns",), "k")) in str(err)
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is ItemChangedError and vars(back) == vars(err) and str(back) == str(err)
    with pytest.raises(ItemChangedError, match="expected no item"):
        store.put(("ns",), "k", {"v": 4}, if_updated_at=None)
    with pytest.raises(ItemChangedError):
        store.delete(("ns",), "k", if_updated_at=read.updated_at)
    now = store.get(("ns",), "k")
    assert now is not None
    store.delete(("ns",), "k", if_updated_at=now.updated_at)
    assert store.get(("ns",), "k") is None


async def test_the_async_compare_and_swap_is_the_same(store: RepoStore) -> None:
    await store.aput(("ns",), "k", {"v": 1}, if_updated_at=None)
    read = await store.aget(("ns",), "k")
    assert read is not None
    await store.aput(("ns",), "k", {"v": 2}, if_updated_at=read.updated_at)
    with pytest.raises(ItemChangedError):
        await store.aput(("ns",), "k", {"v": 3}, if_updated_at=read.updated_at)
    with pytest.raises(ItemChangedError):
        await store.adelete(("ns",), "k", if_updated_at=None)


def writer(root: str, me: str, rounds: int) -> None:
    """A writer process (forked by tests/forkserver.py from a parent that loaded this module):
    its own items in one namespace, and a read-modify-write of one shared counter a round."""
    store = RepoStore(root)
    for i in range(rounds):
        store.put(("shared",), f"{me}-{i}", {"by": me, "i": i})  # different items, one namespace
        while True:  # one item, read-modify-write: no increment may be lost
            item = store.get(("shared",), "counter")
            try:
                store.put(
                    ("shared",),
                    "counter",
                    {"n": (item.value["n"] if item else 0) + 1},
                    if_updated_at=item.updated_at if item else None,
                )
                break
            except ItemChangedError:
                continue
    print("done")


def test_writers_in_several_processes_lose_no_acknowledged_write(tmp_path: Path) -> None:
    """Real processes, each with its own store, caches and file locks: forked from one parent
    that imported the store once (a new interpreter each would cost more than the writes)."""
    root, procs, rounds = tmp_path / "root", 4, 15
    parent = Parent(__file__, "store_writers")
    try:
        children = [parent.start("writer", str(root), f"p{n}", rounds) for n in range(procs)]
        for child in children:
            out, err = child.communicate(timeout=300)
            assert child.returncode == 0 and out.strip() == "done", err
    finally:
        parent.close()
    store = RepoStore(root)
    assert store.get(("shared",), "counter").value == {"n": procs * rounds}  # type: ignore[union-attr]
    keys = {i.key for i in store.search(("shared",), limit=1000)}
    assert keys == {"counter"} | {f"p{n}-{i}" for n in range(procs) for i in range(rounds)}
    leftovers = [p for p in (root / "store").rglob("*") if p.name.startswith(".") or p.name.endswith(".tmp")]
    assert leftovers == []


# ----------------------------------------------------------------------------
# TTL
# ----------------------------------------------------------------------------
def test_a_read_refreshes_only_items_with_a_ttl_and_never_touches_the_others(
    store: RepoStore, clock: Clock
) -> None:
    store.put(("ns",), "plain", {"v": 1})
    store.put(("ns",), "ttl", {"v": 2}, ttl=10)
    plain = store.path(("ns",), "plain")
    before = (plain.read_bytes(), os.stat(plain).st_mtime_ns)
    clock.tick(minutes=5)
    store.get(("ns",), "plain")
    store.get(("ns",), "ttl")
    store.search(("ns",))
    assert (plain.read_bytes(), os.stat(plain).st_mtime_ns) == before
    doc = json.loads(store.path(("ns",), "ttl").read_text())
    assert doc["expires_at"] == (START + timedelta(minutes=15)).isoformat(timespec="microseconds")
    assert doc["updated_at"] == START.isoformat(timespec="microseconds")  # a refresh is no update
    store.get(("ns",), "ttl", refresh_ttl=False)
    clock.tick(minutes=11)
    assert json.loads(store.path(("ns",), "ttl").read_text())["expires_at"] == doc["expires_at"]


def test_default_ttl_and_refresh_on_read_come_from_the_ttl_config(tmp_path: Path, clock: Clock) -> None:
    store = RepoStore(
        tmp_path / "root", ttl={"default_ttl": 2, "refresh_on_read": False}, clock=clock, durable=False
    )
    store.put(("ns",), "k", {"v": 1})
    clock.tick(minutes=1)
    store.get(("ns",), "k")
    doc = json.loads(store.path(("ns",), "k").read_text())
    assert doc["ttl_minutes"] == 2 and doc["expires_at"] == (START + timedelta(minutes=2)).isoformat(
        timespec="microseconds"
    )
    store.put(("ns",), "forever", {"v": 1}, ttl=None)
    assert "ttl_minutes" not in json.loads(store.path(("ns",), "forever").read_text())


def test_the_sweeper_thread_removes_expired_items(tmp_path: Path) -> None:
    later = datetime.now(timezone.utc) + timedelta(days=1)
    writer = RepoStore(tmp_path / "root", durable=False)
    writer.put(("ns",), "old", {"v": 1}, ttl=1)
    writer.put(("ns",), "keep", {"v": 1})
    sweeper = RepoStore(tmp_path / "root", clock=lambda: later, durable=False)
    done = sweeper.start_ttl_sweeper(sweep_interval_minutes=0.001)
    deadline = time.monotonic() + 60  # a bound on a hung thread, not a speed check
    while writer.path(("ns",), "old").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sweeper.stop_ttl_sweeper(timeout=30) and done.done()
    assert not writer.path(("ns",), "old").exists()
    assert [i.key for i in writer.search(("ns",))] == ["keep"]


# ----------------------------------------------------------------------------
# semantic search: the embeddings cache
# ----------------------------------------------------------------------------
class Counting:
    def __init__(self) -> None:
        self.texts: list[str] = []

    def __call__(self, texts: list[str]) -> list[list[float]]:
        self.texts.extend(texts)
        return fake_embed(texts)


def index_of(embed: Any) -> Any:
    return {"dims": DIMS, "embed": embed, "fields": ["text"]}


def test_each_text_is_embedded_once_and_a_fresh_process_embeds_nothing_known(tmp_path: Path) -> None:
    root = tmp_path / "root"
    first = Counting()
    store = RepoStore(root, index=index_of(first), durable=False)
    for i, text in enumerate(["red apple", "green pear", "red apple"]):
        store.put(("docs",), f"d{i}", {"text": text})
    assert sorted(first.texts) == ["green pear", "red apple"]
    assert list((root / ".cache" / FOLDER).glob("*.vec"))
    again = Counting()
    fresh = RepoStore(root, index=index_of(again), durable=False)
    ranked = fresh.search(("docs",), query="green pear")
    assert ranked[0].key == "d1" and ranked[0].score == pytest.approx(1.0)
    assert again.texts == ["green pear"]  # the query only: every document's vector came from the cache
    fresh.put(("docs",), "d1", {"text": "yellow plum"})
    assert again.texts == ["green pear", "yellow plum"]


def test_items_that_arrive_without_embeddings_are_embedded_on_the_first_search(tmp_path: Path) -> None:
    """An item written by a store without an index, or by another clone (git pull), has no
    embedding here: the first search with a query makes it, once."""
    root = tmp_path / "root"
    RepoStore(root, durable=False).put(("docs",), "pulled", {"text": "blue fig"})
    counting = Counting()
    store = RepoStore(root, index=index_of(counting), durable=False)
    assert store.search(("docs",), query="blue fig")[0].score == pytest.approx(1.0)
    store.search(("docs",), query="blue fig")
    assert counting.texts.count("blue fig") == 3  # the query twice, the document once
    assert len(store.vectors or []) == 1


def test_a_damaged_embeddings_file_is_ignored_and_started_again(tmp_path: Path) -> None:
    root = tmp_path / "root"
    store = RepoStore(root, index=index_of(fake_embed), durable=False)
    store.put(("docs",), "a", {"text": "kiwi lime"})
    (vec,) = (root / ".cache" / FOLDER).glob("*.vec")
    vec.write_bytes(b"garbage" * 100)
    fresh = RepoStore(root, index=index_of(fake_embed), durable=False)
    assert fresh.search(("docs",), query="kiwi lime")[0].score == pytest.approx(1.0)
    assert vec.read_bytes().startswith(b'{"format":2')
    with vec.open("ab") as fh:
        fh.write(b"\x01" * 17)  # a record cut short by a killed process
    third = RepoStore(root, index=index_of(fake_embed), durable=False)
    third.put(("docs",), "b", {"text": "date yuzu"})
    assert third.search(("docs",), query="date yuzu")[0].key == "b"
    assert RepoStore(root, index=index_of(fake_embed)).vectors.missing([]) == []  # type: ignore[union-attr]


def test_an_item_holding_one_text_in_two_fields_is_embedded_once(tmp_path: Path) -> None:
    """InMemoryStore raises here ("Number of embeddings ... does not match")."""
    counting = Counting()
    store = RepoStore(
        tmp_path / "root", index={"dims": DIMS, "embed": counting, "fields": ["a", "b"]}, durable=False
    )
    store.put(("ns",), "k", {"a": "same", "b": "same"})
    assert counting.texts == ["same"]
    assert store.search(("ns",), query="same")[0].score == pytest.approx(1.0)


def test_a_batch_reads_the_state_before_its_puts(store: RepoStore) -> None:
    store.put(("ns",), "k", {"v": 1})
    got, _, after = store.batch([GetOp(("ns",), "k"), PutOp(("ns",), "k", {"v": 2}), GetOp(("ns",), "k")])
    assert got.value == {"v": 1} and after.value == {"v": 1}  # type: ignore[union-attr]
    assert store.get(("ns",), "k").value == {"v": 2}  # type: ignore[union-attr]


def test_the_memory_example_remembers_across_processes_in_one_file(tmp_path: Path) -> None:
    """``python examples/memory.py`` as the README runs it, in a git work tree of its own."""
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    example = Path(__file__).resolve().parents[1] / "examples" / "memory.py"
    proc = subprocess.run(
        [sys.executable, str(example)], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    second = proc.stdout[proc.stdout.index("a fresh process") :]
    assert "agent: theme = dark" in second
    root = tmp_path / ".langgraph"
    assert RepoStore(root).get(("users", "ada", "preferences"), "theme").value == {"value": "dark"}  # type: ignore[union-attr]
    assert (root / "threads" / "memory-1").is_dir() and (root / "threads" / "memory-2").is_dir()
    from langgraph_checkpoint_repo.core.checks import Validator

    assert Validator(root).run() == []


def test_a_fresh_instance_uses_the_derived_index_of_a_big_folder_and_still_sees_every_edit(
    tmp_path: Path,
) -> None:
    from langgraph_checkpoint_repo.core.checks import fsck
    from langgraph_checkpoint_repo.core.index import decode_items
    from langgraph_checkpoint_repo.core.threads import ThreadStore

    root = tmp_path / "root"
    writer = RepoStore(root, durable=False)
    for i in range(80):
        writer.put(("big",), f"k{i:02d}", {"n": i})
    folder = root / "store" / "big"
    old = time.time() - 60  # settled: last changed long before it is read (the cache rule)
    for path in [*folder.iterdir(), folder]:
        os.utime(path, (old, old))
    assert len(RepoStore(root).search(("big",), limit=100)) == 80
    index = root / ".cache" / "index" / "store" / "big.items"
    recorded = decode_items(ThreadStore(root).layout, folder, index.read_bytes())
    assert recorded is not None and len(recorded) == 80
    assert not [f for f in fsck(ThreadStore(root)) if f.kind == "index"]

    edited = folder / "k07.json"
    edited.write_text(edited.read_text().replace('"n": 7', '"n": 700'))  # a hand edit after the index
    os.utime(edited, (old, old))  # an editor that keeps the mtime: the size and ctime still tell
    found = {i.key: i.value["n"] for i in RepoStore(root).search(("big",), limit=100)}
    assert found["k07"] == 700 and found["k08"] == 8 and len(found) == 80

    forged = [["k08.json", 1, 2, 3, 4, {}]]  # a stat key no file has: never used
    index.write_text(
        json.dumps({"index_version": 1, "kind": "items", "folder": "store/big", "entries": forged})
    )
    assert RepoStore(root).get(("big",), "k08").value == {"n": 8}  # type: ignore[union-attr]
    assert {i.key: i.value["n"] for i in RepoStore(root).search(("big",), limit=100)} == found
    index.write_bytes(b"garbage")
    assert [f.kind for f in fsck(ThreadStore(root)) if f.path == str(index)] == ["index"]
    assert {i.key: i.value["n"] for i in RepoStore(root).search(("big",), limit=100)} == found
    rewritten = decode_items(
        ThreadStore(root).layout, folder, index.read_bytes()
    )  # the read recorded it again
    assert rewritten is not None and len(rewritten) == 80
