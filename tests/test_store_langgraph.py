"""LangGraph's own store tests that are not about SQL, run on RepoStore.

Ported (adapted, not copied) from the langgraph repository: ``libs/checkpoint/tests/test_store.py``
(InMemoryStore's namespace listing, namespace rules, semantic search), the SQLite store's
``libs/checkpoint-sqlite/tests/test_store.py`` and ``test_async_store.py`` (batches, basic
operations, filters, namespace boundaries and literal labels, scores) and the Postgres store's
``libs/checkpoint-postgres/tests/test_store.py`` (TTL and ``omit_expired``). Where those tests
sleep or rewrite rows with SQL to make time pass, these move RepoStore's clock; where they
check SQL escaping, these check the same behaviour (labels and values are literal). Each test
names the one it ports.
"""

from __future__ import annotations

import asyncio
import math
import random
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import Embeddings
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)

from langgraph_checkpoint_repo import RepoStore
from storeref import Clock


class CharacterEmbeddings(Embeddings):
    """LangGraph's test embedding: character frequencies through random projections (a
    projection per character, drawn the first time it is seen, from a seeded generator)."""

    def __init__(self, dims: int = 50, seed: int = 42) -> None:
        self.dims = dims
        self._rng = random.Random(seed)
        self._projection: defaultdict[str, list[float]] = defaultdict(
            lambda: [self._rng.gauss(0, 1 / math.sqrt(self.dims)) for _ in range(self.dims)]
        )

    def _one(self, text: str) -> list[float]:
        counts = Counter(text)
        total = sum(counts.values())
        if not total:
            return [0.0] * self.dims
        out = [0.0] * self.dims
        for char, count in counts.items():
            for i, x in enumerate(self._projection[char]):
                out[i] += count / total * x
        norm = math.sqrt(sum(x * x for x in out))
        return [x / norm for x in out] if norm else out

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._one(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._one(text)


@pytest.fixture
def store(tmp_path: Path) -> RepoStore:
    return RepoStore(tmp_path / "root", durable=False)


@pytest.fixture
def fake_embeddings() -> CharacterEmbeddings:
    return CharacterEmbeddings(dims=500)


@pytest.fixture
def vector_store(tmp_path: Path, fake_embeddings: CharacterEmbeddings) -> Callable[..., RepoStore]:
    def make(fields: list[str] | None = None) -> RepoStore:
        index: dict[str, Any] = {"dims": fake_embeddings.dims, "embed": fake_embeddings}
        if fields is not None:
            index["fields"] = fields
        return RepoStore(tmp_path / f"root-{uuid.uuid4().hex[:6]}", index=index, durable=False)  # type: ignore[arg-type]

    return make


# ----------------------------------------------------------------------------
# libs/checkpoint/tests/test_store.py (InMemoryStore)
# ----------------------------------------------------------------------------
def put_all(store: RepoStore, namespaces: list[tuple[str, ...]]) -> None:
    for i, ns in enumerate(namespaces):
        store.put(ns, f"id_{i}", {"data": f"value_{i:02d}"})


def test_list_namespaces_basic(store: RepoStore) -> None:
    put_all(
        store,
        [
            ("a", "b", "c"),
            ("a", "b", "d", "e"),
            ("a", "b", "d", "i"),
            ("a", "b", "f"),
            ("a", "c", "f"),
            ("b", "a", "f"),
            ("users", "123"),
            ("users", "456", "settings"),
            ("admin", "users", "789"),
        ],
    )
    abd = [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f")]
    assert store.list_namespaces(prefix=("a", "b")) == abd
    assert store.list_namespaces(suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert store.list_namespaces(prefix=("a",), suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a", "b"), max_depth=3) == [
        ("a", "b", "c"),
        ("a", "b", "d"),
        ("a", "b", "f"),
    ]
    assert store.list_namespaces(prefix=("a", "b"), limit=2) == abd[:2]
    assert store.list_namespaces(prefix=("a", "b"), offset=2) == abd[2:]
    assert store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(suffix=("*", "f")) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert store.list_namespaces(prefix=("nonexistent",)) == []
    assert store.list_namespaces(prefix=("users", "123")) == [("users", "123")]


def test_list_namespaces_with_wildcards(store: RepoStore) -> None:
    put_all(
        store,
        [
            ("users", "123"),
            ("users", "456"),
            ("users", "789", "settings"),
            ("admin", "users", "789"),
            ("guests", "123"),
            ("guests", "456", "preferences"),
        ],
    )
    assert store.list_namespaces(prefix=("users", "*")) == [
        ("users", "123"),
        ("users", "456"),
        ("users", "789", "settings"),
    ]
    assert store.list_namespaces(suffix=("*", "preferences")) == [("guests", "456", "preferences")]
    assert store.list_namespaces(prefix=("*", "users"), suffix=("*", "settings")) == []
    store.put(("admin", "users", "settings", "789"), "foo", {"data": "some_val"})
    assert store.list_namespaces(prefix=("*", "users"), suffix=("settings", "*")) == [
        ("admin", "users", "settings", "789")
    ]


def test_list_namespaces_pagination(store: RepoStore) -> None:
    for i in range(20):
        store.put(("namespace", f"sub_{i:02d}"), f"id_{i:02d}", {"data": f"value_{i:02d}"})
    for offset in (0, 5, 15):
        got = store.list_namespaces(prefix=("namespace",), limit=5, offset=offset)
        assert got == [("namespace", f"sub_{i:02d}") for i in range(offset, offset + 5)]


def test_list_namespaces_max_depth(store: RepoStore) -> None:
    put_all(
        store, [("a", "b", "c", "d"), ("a", "b", "c", "e"), ("a", "b", "f"), ("a", "g"), ("h", "i", "j", "k")]
    )
    assert store.list_namespaces(max_depth=2) == [("a", "b"), ("a", "g"), ("h", "i")]


def test_list_namespaces_no_conditions_and_empty_store(store: RepoStore) -> None:
    assert store.list_namespaces() == []
    put_all(store, [("a", "b"), ("c", "d"), ("e", "f", "g")])
    assert store.list_namespaces() == [("a", "b"), ("c", "d"), ("e", "f", "g")]


async def test_cannot_put_empty_namespace(store: RepoStore) -> None:
    doc = {"foo": "bar"}
    for bad in [(), ("the", "thing.about"), ("some", "fun", ""), ("langgraph", "foo")]:
        with pytest.raises(InvalidNamespaceError):
            store.put(bad, "foo", doc)
        with pytest.raises(InvalidNamespaceError):
            await store.aput(bad, "foo", doc)
    ns = ("foo", "langgraph", "foo")
    await store.aput(ns, "bar", doc)
    assert (await store.aget(ns, "bar")).value == doc  # type: ignore[union-attr]
    assert (await store.asearch(ns, query="bar"))[0].value == doc
    await store.adelete(ns, "bar")
    assert await store.aget(ns, "bar") is None
    store.put(ns, "bar", doc)
    assert store.get(ns, "bar").value == doc  # type: ignore[union-attr]
    store.delete(ns, "bar")
    assert store.get(ns, "bar") is None
    # past the public put: the root label "langgraph" is the platform's, and batch takes it
    await store.abatch([PutOp(("langgraph", "foo"), "bar", doc)])
    assert (await store.aget(("langgraph", "foo"), "bar")).value == doc  # type: ignore[union-attr]
    assert (await store.asearch(("langgraph", "foo")))[0].value == doc
    await store.adelete(("langgraph", "foo"), "bar")
    assert await store.aget(("langgraph", "foo"), "bar") is None
    # a batch is checked too (InMemoryStore takes anything there; a file needs a namespace)
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp((), "k", doc)])
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp(("a.b",), "k", doc)])


def test_vector_store_initialization(
    vector_store: Callable[..., RepoStore], fake_embeddings: CharacterEmbeddings
) -> None:
    store = vector_store()
    assert store.index_config is not None
    assert store.index_config["dims"] == fake_embeddings.dims
    assert store.index_config["embed"] is fake_embeddings
    assert store.embeddings is fake_embeddings


DOCS = [
    ("doc1", {"text": "short text"}),
    ("doc2", {"text": "longer text document"}),
    ("doc3", {"text": "longest text document here"}),
    ("doc4", {"description": "text in description field"}),
    ("doc5", {"content": "text in content field"}),
    ("doc6", {"body": "text in body field"}),
]


def test_vector_insert_with_auto_embedding(vector_store: Callable[..., RepoStore]) -> None:
    store = vector_store()
    for key, value in DOCS:
        store.put(("test",), key, value)
    keys = [r.key for r in store.search(("test",), query="long text")]
    assert "doc2" in keys and "doc3" in keys


async def test_async_vector_insert_with_auto_embedding(vector_store: Callable[..., RepoStore]) -> None:
    store = vector_store()
    for key, value in DOCS:
        await store.aput(("test",), key, value)
    keys = [r.key for r in await store.asearch(("test",), query="long text")]
    assert "doc2" in keys and "doc3" in keys


@pytest.mark.parametrize("use_async", [False, True])
async def test_vector_update_with_embedding(vector_store: Callable[..., RepoStore], use_async: bool) -> None:
    store = vector_store()

    async def put(key: str, value: dict[str, Any], index: Any = None) -> None:
        if use_async:
            await store.aput(("test",), key, value, index=index)
        else:
            store.put(("test",), key, value, index=index)

    async def search(query: str, limit: int = 10) -> list[Any]:
        if use_async:
            return await store.asearch(("test",), query=query, limit=limit)
        return store.search(("test",), query=query, limit=limit)

    await put("doc1", {"text": "zany zebra Xerxes"})
    await put("doc2", {"text": "something about dogs"})
    await put("doc3", {"text": "text about birds"})
    initial = await search("Zany Xerxes")
    assert initial[0].key == "doc1"
    initial_score = initial[0].score
    assert initial_score is not None
    await put("doc1", {"text": "new text about dogs"})
    after = next(r.score for r in await search("Zany Xerxes") if r.key == "doc1")
    assert after is not None and after < initial_score
    for r in await search("new text about dogs"):
        if r.key == "doc1":
            assert r.score > after
    await put("doc4", {"text": "new text about dogs"}, index=False)
    assert not any(r.key == "doc4" for r in await search("new text about dogs", limit=3))


FILTER_DOCS = [
    ("doc1", {"text": "red apple", "color": "red", "score": 4.5}),
    ("doc2", {"text": "red car", "color": "red", "score": 3.0}),
    ("doc3", {"text": "green apple", "color": "green", "score": 4.0}),
    ("doc4", {"text": "blue car", "color": "blue", "score": 3.5}),
]


@pytest.mark.parametrize("use_async", [False, True])
async def test_vector_search_with_filters(vector_store: Callable[..., RepoStore], use_async: bool) -> None:
    store = vector_store()
    for key, value in FILTER_DOCS:
        await store.aput(("test",), key, value) if use_async else store.put(("test",), key, value)

    async def search(query: str, filter: dict[str, Any]) -> list[Any]:
        if use_async:
            return await store.asearch(("test",), query=query, filter=filter)
        return store.search(("test",), query=query, filter=filter)

    got = await search("apple", {"color": "red"})
    assert len(got) == 2 and got[0].key == "doc1"
    got = await search("car", {"color": "red"})
    assert len(got) == 2 and got[0].key == "doc2"
    got = await search("bbbbluuu", {"score": {"$gt": 3.2}})
    assert len(got) == 3 and got[0].key == "doc4"
    got = await search("apple", {"score": {"$gte": 4.0}, "color": "green"})
    assert [r.key for r in got] == ["doc3"]


async def test_concurrent_vector_searches_with_filters(vector_store: Callable[..., RepoStore]) -> None:
    """test_async_batched_vector_search_concurrent: puts, deletes, puts and searches at once."""
    store = vector_store()
    colors = ["red", "blue", "green", "yellow", "purple"]
    things = ["apple", "car", "house", "book", "phone"]
    scores = [3.0, 3.5, 4.0, 4.5, 5.0]
    docs = [
        (
            f"doc{i}",
            {
                "text": f"{colors[i % 5]} {things[i % 5]}",
                "color": colors[i % 5],
                "score": scores[i % 5],
                "index": i,
            },
        )
        for i in range(50)
    ]
    await asyncio.gather(*[store.aput(("test",), k, v) for k, v in docs])
    await asyncio.gather(*[store.adelete(("test",), k) for k, _ in docs])
    await asyncio.gather(*[store.aput(("test",), k, v) for k, v in docs])
    queries: list[tuple[str, dict[str, Any]]] = [
        ("apple", {"color": "red"}),
        ("car", {"color": "blue"}),
        ("phone", {"score": {"$gt": 4.99}}),
        ("book", {"score": {"$lte": 3.5}}),
        ("car", {"score": {"$lt": 5.1}, "color": "blue"}),
        ("house", {"index": {"$gt": 25}}),
        ("phone", {"index": {"$lte": 10}}),
    ]
    found = await asyncio.gather(*[store.asearch(("test",), query=q, filter=f) for q, f in queries])
    checks = {
        "$gt": lambda a, b: a > b,
        "$gte": lambda a, b: a >= b,
        "$lt": lambda a, b: a < b,
        "$lte": lambda a, b: a <= b,
    }
    for results, (query, filter_) in zip(found, queries, strict=True):
        assert results, (query, filter_)
        for r in results:
            for field, cond in filter_.items():
                if isinstance(cond, dict):
                    assert all(checks[op](r.value[field], v) for op, v in cond.items())
                else:
                    assert r.value[field] == cond


@pytest.mark.parametrize("use_async", [False, True])
async def test_vector_search_pagination(vector_store: Callable[..., RepoStore], use_async: bool) -> None:
    store = vector_store()
    for i in range(5):
        store.put(("test",), f"doc{i}", {"text": f"test document number {i}"})
    search = store.asearch if use_async else store.search
    page1 = search(("test",), query="test", limit=2)
    page2 = search(("test",), query="test", limit=2, offset=2)
    every = search(("test",), query="test", limit=10)
    if use_async:
        page1, page2, every = await page1, await page2, await every  # type: ignore[misc]
    assert len(page1) == 2 and len(page2) == 2  # type: ignore[arg-type]
    assert page1[0].key != page2[0].key  # type: ignore[index]
    assert len(every) == 5  # type: ignore[arg-type]


async def test_embed_with_path(vector_store: Callable[..., RepoStore]) -> None:
    store = vector_store(["key0", "key1", "key3"])
    await store.aput(("test",), "doc1", {"key1": "xxx", "key2": "yyy", "key3": "zzz"})  # two vectors
    await store.aput(("test",), "doc2", {"key0": "uuu", "key1": "vvv", "key2": "www", "key3": "xxx"})  # three
    results = await store.asearch(("test",), query="xxx")
    assert len(results) == 2 and results[0].key != results[1].key
    ascore, bscore = results[0].score, results[1].score
    assert ascore is not None and bscore is not None and ascore == pytest.approx(bscore, abs=1e-5)
    results = await store.asearch(("test",), query="uuu")
    assert results[0].key == "doc2" and results[0].score > results[1].score  # type: ignore[operator]
    assert ascore == pytest.approx(results[0].score, abs=1e-5)
    results = await store.asearch(("test",), query="www")  # not indexed: low for both
    assert len(results) == 2 and all(r.score < ascore for r in results)  # type: ignore[operator]

    other = vector_store(["key17"])
    doc3 = {"key0": "aaa", "key1": "bbb", "key2": "ccc", "key3": "ddd"}
    doc4 = {"key0": "eee", "key1": "bbb", "key2": "fff", "key3": "ggg"}
    await other.aput(("test",), "doc3", doc3, index=["key0", "key1"])
    await other.aput(("test",), "doc4", doc4, index=["key1", "key3"])
    results = await other.asearch(("test",), query="aaa")
    assert results[0].key == "doc3" and results[0].score > results[1].score  # type: ignore[operator]
    results = await other.asearch(("test",), query="ggg")
    assert results[0].key == "doc4" and results[0].score > results[1].score  # type: ignore[operator]
    results = await other.asearch(("test",), query="bbb")
    assert results[0].key != results[1].key and results[0].score == results[1].score
    results = await other.asearch(("test",), query="ccc")
    assert len(results) == 2 and all(r.score < ascore for r in results)  # type: ignore[operator]
    await other.aput(("test",), "doc5", {"key0": "hhh", "key1": "iii"}, index=False)
    results = await other.asearch(("test",), query="hhh")
    assert len(results) == 3
    assert next(r for r in results if r.key == "doc5").score is None


def test_non_ascii(vector_store: Callable[..., RepoStore]) -> None:
    store = vector_store()
    texts = ["这是中文", "これは日本語です", "이건 한국어야", "Это русский", "यह रूसी है"]
    for i, text in enumerate(texts, 1):
        store.put(("user_123", "memories"), str(i), {"text": text})
    for i, text in enumerate(texts, 1):
        assert store.search(("user_123", "memories"), query=text)[0].key == str(i)


# ----------------------------------------------------------------------------
# libs/checkpoint-sqlite/tests/test_store.py and test_async_store.py
# ----------------------------------------------------------------------------
def test_batch_order(store: RepoStore) -> None:
    store.put(("test", "foo"), "key1", {"data": "value1"})
    store.put(("test", "bar"), "key2", {"data": "value2"})
    results = store.batch(
        [
            GetOp(("test", "foo"), "key1"),
            PutOp(("test", "bar"), "key2", {"data": "value2"}),
            SearchOp(("test",), {"data": "value1"}, 10, 0),
            ListNamespacesOp(None, None, 10, 0),
            GetOp(("test",), "key3"),
        ]
    )
    assert isinstance(results[0], Item) and results[0].value == {"data": "value1"}
    assert results[0].namespace == ("test", "foo") and results[0].key == "key1"
    assert results[1] is None
    assert [i.key for i in results[2]] == ["key1"]  # type: ignore[union-attr]
    assert ("test", "foo") in results[3] and ("test", "bar") in results[3]  # type: ignore[operator]
    assert results[4] is None
    again = store.batch(
        [
            SearchOp(("test",), None, 5, 0),
            GetOp(("test", "bar"), "key2"),
            ListNamespacesOp(None, None, 5, 0),
            PutOp(("test",), "key3", {"data": "value3"}),
            GetOp(("test", "foo"), "key1"),
        ]
    )
    assert len(again[0]) == 2  # type: ignore[arg-type]
    assert again[1].value == {"data": "value2"}  # type: ignore[union-attr]
    assert again[3] is None
    assert again[4].value == {"data": "value1"}  # type: ignore[union-attr]
    assert store.get(("test",), "key3").value == {"data": "value3"}  # type: ignore[union-attr]


def test_batch_get_put_and_delete_ops(store: RepoStore) -> None:
    """test_batch_get_ops and test_batch_put_ops."""
    assert store.batch(
        [
            PutOp(("test",), "key1", {"data": "value1"}),
            PutOp(("test",), "key2", {"data": "value2"}),
            PutOp(("test",), "key3", None),
        ]
    ) == [None, None, None]
    got = store.batch([GetOp(("test",), "key1"), GetOp(("test",), "key2"), GetOp(("test",), "key3")])
    assert [g.key if g else None for g in got] == ["key1", "key2", None]  # type: ignore[union-attr]
    assert got[0].value == {"data": "value1"}  # type: ignore[union-attr]


def test_batch_search_ops(store: RepoStore) -> None:
    for ns, key, value in [
        (("test", "foo"), "key1", {"data": "value1", "tag": "a"}),
        (("test", "bar"), "key2", {"data": "value2", "tag": "a"}),
        (("test", "baz"), "key3", {"data": "value3", "tag": "b"}),
    ]:
        store.put(ns, key, value)
    tagged, two, foo = store.batch(
        [
            SearchOp(("test",), {"tag": "a"}, 10, 0),
            SearchOp(("test",), None, 2, 0),
            SearchOp(("test", "foo"), None, 10, 0),
        ]
    )
    assert sorted(i.key for i in tagged) == ["key1", "key2"]  # type: ignore[union-attr]
    assert len(two) == 2  # type: ignore[arg-type]
    assert [i.namespace for i in foo] == [("test", "foo")]  # type: ignore[union-attr]


def test_batch_list_namespaces_ops(store: RepoStore) -> None:
    data = [
        (("test", "documents", "public"), "doc1"),
        (("test", "documents", "private"), "doc2"),
        (("test", "images", "public"), "img1"),
        (("prod", "documents", "public"), "doc3"),
    ]
    for ns, key in data:
        store.put(ns, key, {"content": key})
    every, shallow, public = store.batch(
        [
            ListNamespacesOp(None, None, 10, 0),
            ListNamespacesOp(None, 2, 10, 0),
            ListNamespacesOp((MatchCondition("suffix", ("public",)),), None, 10, 0),
        ]
    )
    assert len(every) == 4  # type: ignore[arg-type]
    assert shallow == [("prod", "documents"), ("test", "documents"), ("test", "images")]
    assert public == [
        ("prod", "documents", "public"),
        ("test", "documents", "public"),
        ("test", "images", "public"),
    ]


def test_basic_store_ops(store: RepoStore) -> None:
    """TestSqliteStore.test_basic_store_ops and test_basic_store_operations."""
    uid = uuid.uuid4().hex
    ns = (uid, "test", "documents")
    assert store.search((uid,)) == []
    store.put(ns, "doc1", {"title": "Test Document", "content": "Hello, World!"})
    item = store.get(ns, "doc1")
    assert item is not None and item.namespace == ns and item.key == "doc1"
    assert item.value == {"title": "Test Document", "content": "Hello, World!"}
    store.put(ns, "doc1", {"title": "Updated", "content": "Hello, LangGraph!"})
    updated = store.get(ns, "doc1")
    assert updated is not None and updated.value["title"] == "Updated"
    assert updated.updated_at > item.updated_at and updated.created_at == item.created_at
    assert store.get((uid, "test", "other_documents"), "doc1") is None
    store.put(ns, "doc2", {"title": "Another Document", "content": "Greetings!"})
    assert {i.key for i in store.search((uid, "test"), limit=10)} == {"doc1", "doc2"}
    assert (uid, "test", "documents") in store.list_namespaces(prefix=(uid, "test"))
    store.delete(ns, "doc1")
    store.delete(ns, "doc2")
    assert store.get(ns, "doc1") is None and store.get(ns, "doc2") is None
    assert store.search((uid, "test"), limit=10) == []


def test_list_namespaces_operations(store: RepoStore) -> None:
    """TestSqliteStore.test_list_namespaces and test_list_namespaces_operations."""
    p = str(uuid.uuid4())
    spaces = [
        (p, "test", "documents", "public", p),
        (p, "test", "documents", "private", p),
        (p, "test", "images", "public", p),
        (p, "test", "images", "private", p),
        (p, "prod", "documents", "public", p),
        (p, "prod", "documents", "some", "nesting", "public", p),
        (p, "prod", "documents", "private", p),
    ]
    for ns in spaces:
        store.put(ns, "dummy", {"content": "dummy"})
    assert len(store.list_namespaces(prefix=(p, "test"))) == 4
    assert all(
        ns[1:3] == ("test", "documents") for ns in store.list_namespaces(prefix=(p, "test", "documents"))
    )
    assert len(store.list_namespaces(suffix=("public", p))) == 4
    assert len(store.list_namespaces(prefix=(p, "test"), suffix=("public", p))) == 2
    assert len(store.list_namespaces(prefix=(p, "*", "documents"))) == 5
    assert len(store.list_namespaces(suffix=("*", "public", p))) == 4
    assert store.list_namespaces(suffix=("some", "*", "public", p)) == [spaces[5]]
    assert all(len(ns) <= 3 for ns in store.list_namespaces(max_depth=3))
    deep = store.list_namespaces(max_depth=4, prefix=(p, "*", "documents"))
    assert len(set(deep)) == len(deep) == 5
    assert len(store.list_namespaces(prefix=(p,), limit=3)) == 3
    assert len(store.list_namespaces(prefix=(p,), offset=3)) == len(spaces) - 3
    assert set(store.list_namespaces(prefix=(p,))) == set(spaces)
    for ns in spaces:
        store.delete(ns, "dummy")
    assert store.list_namespaces() == []


def test_search_items(store: RepoStore) -> None:
    """TestSqliteStore.test_search and test_search_items."""
    base = "test_search_items"
    rows = [
        ((base, "documents", "user1"), {"title": "Doc 1", "author": "John Doe", "tags": ["important"]}),
        ((base, "documents", "user2"), {"title": "Doc 2", "author": "Jane Smith", "tags": ["draft"]}),
        ((base, "reports", "department1"), {"title": "Report A", "author": "John Doe", "tags": ["final"]}),
        (
            (base, "reports", "department2"),
            {"title": "Report B", "author": "Alice Johnson", "tags": ["draft"]},
        ),
    ]
    for ns, value in rows:
        store.put(ns, f"item_{ns[-1]}", value)
    assert {i.namespace[1] for i in store.search((base, "documents"))} == {"documents"}
    assert len(store.search((base, "reports"))) == 2
    first, second = store.search((base,), limit=2, offset=0), store.search((base,), limit=2, offset=2)
    assert len(first) == len(second) == 2 and {i.key for i in first}.isdisjoint(i.key for i in second)
    assert len(store.search((base,))) == 4
    assert len(store.search((base,), offset=3)) == 1
    john = store.search((base,), filter={"author": "John Doe"})
    assert len(john) == 2 and all(i.value["author"] == "John Doe" for i in john)
    draft = store.search((base,), filter={"tags": ["draft"]})
    assert len(draft) == 2 and all("draft" in i.value["tags"] for i in draft)


def test_vector_search_edge_cases(vector_store: Callable[..., RepoStore]) -> None:
    store = vector_store()
    store.put(("test",), "doc1", {"text": "test document"})
    for query in ["", None, "test " * 100, "test!@#$%^&*()"]:
        assert len(store.search(("test",), query=query)) == 1


def test_embed_with_path_operation_config(vector_store: Callable[..., RepoStore]) -> None:
    store = vector_store(["key17"])
    store.put(
        ("test",),
        "doc3",
        {"key0": "aaa", "key1": "bbb", "key2": "ccc", "key3": "ddd"},
        index=["key0", "key1"],
    )
    store.put(
        ("test",),
        "doc4",
        {"key0": "eee", "key1": "bbb", "key2": "fff", "key3": "ggg"},
        index=["key1", "key3"],
    )
    results = store.search(("test",), query="aaa")
    assert results[0].key == "doc3" and len({r.key for r in results}) == 2
    assert results[0].score > results[1].score  # type: ignore[operator]
    results = store.search(("test",), query="ggg")
    assert results[0].key == "doc4" and results[0].score > results[1].score  # type: ignore[operator]
    results = store.search(("test",), query="bbb")
    assert abs(results[0].score - results[1].score) < 0.1  # type: ignore[operator]
    assert all(r.score < 0.9 for r in store.search(("test",), query="ccc"))  # type: ignore[operator]
    store.put(("test",), "doc5", {"key0": "hhh", "key1": "iii"}, index=False)
    assert any(r.key == "doc5" for r in store.search(("test",)))


@pytest.mark.parametrize("query", ["aaa", "bbb", "ccc", "abcd", "poisson"])
def test_scores(
    vector_store: Callable[..., RepoStore], fake_embeddings: CharacterEmbeddings, query: str
) -> None:
    store = vector_store(["key0"])
    store.put(("test",), "doc", {"key0": "aaa"}, index=["key0", "key1"])
    results = store.search((), query=query)
    a, b = fake_embeddings.embed_query("aaa"), fake_embeddings.embed_query(query)
    want = sum(x * y for x, y in zip(a, b, strict=True)) / (
        math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    )
    assert len(results) == 1 and results[0].score == pytest.approx(want, abs=1e-6)


def test_filter_values_are_literal(store: RepoStore) -> None:
    """test_sql_injection_filter_values: a filter value is a value, whatever characters it holds."""
    store.put(("docs",), "doc1", {"access": "public", "title": "Public Document"})
    store.put(("docs",), "doc2", {"access": "private", "title": "Private Document"})
    for value in [
        "public' OR '1'='1",
        "public'; --",
        "public' UNION SELECT * FROM store --",
        "public\x00' OR '1'='1",
        "''''",
    ]:
        assert store.search(("docs",), filter={"access": value}) == []
    store.put(("docs",), "doc4", {"title": "O'Brien's Document", "access": "public"})
    assert [r.key for r in store.search(("docs",), filter={"title": "O'Brien's Document"})] == ["doc4"]


def test_numeric_filter_safety(store: RepoStore) -> None:
    for i, (price, quantity) in enumerate([(10, 5), (20, 3), (30, 1)], 1):
        store.put(("items",), f"item{i}", {"price": price, "quantity": quantity})
    assert {r.key for r in store.search(("items",), filter={"price": {"$gt": 15}})} == {"item2", "item3"}
    assert len(store.search(("items",), filter={"price": {"$lt": float("inf")}})) == 3
    assert len(store.search(("items",), filter={"price": {"$gt": float("-inf")}})) == 3
    assert store.search(("items",), filter={"price": {"$eq": float("nan")}}) == []
    assert len(store.search(("items",), filter={"price": {"$lt": 10**100}})) == 3
    store.put(("items",), "item4", {"price": -10, "quantity": 0})
    assert [r.key for r in store.search(("items",), filter={"price": {"$lt": 0}})] == ["item4"]


def test_boolean_filter_safety(store: RepoStore) -> None:
    store.put(("flags",), "flag1", {"active": True, "name": "Feature A"})
    store.put(("flags",), "flag2", {"active": False, "name": "Feature B"})
    store.put(("flags",), "flag3", {"active": True, "name": "Feature C"})
    assert {r.key for r in store.search(("flags",), filter={"active": True})} == {"flag1", "flag3"}
    assert [r.key for r in store.search(("flags",), filter={"active": False})] == ["flag2"]


def test_filter_keys_with_hyphens_and_digits(store: RepoStore) -> None:
    """As SQLite's test, with nested keys as nested filters (InMemoryStore's and PostgresStore's
    rule; a dotted key names a key with a dot in it, as there)."""
    store.put(("docs",), "hyphen", {"access-level": "public", "user": {"access-level": "nested"}})
    store.put(("docs",), "digit", {"123abc": "ok", "user": {"123abc": "ok2"}})
    assert [r.key for r in store.search(("docs",), filter={"access-level": "public"})] == ["hyphen"]
    assert [r.key for r in store.search(("docs",), filter={"user": {"access-level": "nested"}})] == ["hyphen"]
    assert [r.key for r in store.search(("docs",), filter={"123abc": "ok"})] == ["digit"]
    assert [r.key for r in store.search(("docs",), filter={"user": {"123abc": "ok2"}})] == ["digit"]


def namespaces_found(store: RepoStore, prefix: tuple[str, ...]) -> set[tuple[str, ...]]:
    return {item.namespace for item in store.search(prefix, limit=100)}


def test_search_namespace_segment_boundary(store: RepoStore) -> None:
    for ns in [
        ("foo",),
        ("foo", "child"),
        ("foo", "child", "deep"),
        ("foobar",),
        ("foobar", "baz"),
        ("foo2",),
    ]:
        store.put(ns, "k", {"v": 1})
    assert namespaces_found(store, ("foo",)) == {("foo",), ("foo", "child"), ("foo", "child", "deep")}
    assert namespaces_found(store, ("foobar",)) == {("foobar",), ("foobar", "baz")}
    assert namespaces_found(store, ("foo2",)) == {("foo2",)}
    assert namespaces_found(store, ("fo",)) == set()


def test_search_namespace_wildcard_chars_are_literal(store: RepoStore) -> None:
    for ns in [("user_1",), ("user_1", "child"), ("userX1",), ("a%b",), ("axxb",), ("star*",), ("starX",)]:
        store.put(ns, "k", {"v": 1})
    assert namespaces_found(store, ("user_1",)) == {("user_1",), ("user_1", "child")}
    assert namespaces_found(store, ("a%b",)) == {("a%b",)}
    assert namespaces_found(store, ("star*",)) == {("star*",)}


def test_search_namespace_is_case_sensitive(store: RepoStore) -> None:
    store.put(("Foo",), "k", {"v": "upper"})
    store.put(("foo",), "k", {"v": "lower"})
    assert namespaces_found(store, ("foo",)) == {("foo",)}
    assert namespaces_found(store, ("Foo",)) == {("Foo",)}
    assert store.get(("Foo",), "k").value == {"v": "upper"}  # type: ignore[union-attr]


def test_list_namespaces_segment_boundary(store: RepoStore) -> None:
    for ns in [
        ("foo",),
        ("foo", "child"),
        ("foobar",),
        ("foobar", "baz"),
        ("uid", "users", "alice"),
        ("uid", "users", "malice"),
        ("uid", "a", "b", "alice"),
    ]:
        store.put(ns, "k", {"v": 1})
    assert set(store.list_namespaces(prefix=["foo"], limit=100)) == {("foo",), ("foo", "child")}  # type: ignore[arg-type]
    assert set(store.list_namespaces(suffix=["alice"], limit=100)) == {
        ("uid", "users", "alice"),
        ("uid", "a", "b", "alice"),
    }  # type: ignore[arg-type]
    assert set(store.list_namespaces(prefix=["uid", "*", "alice"], limit=100)) == {("uid", "users", "alice")}  # type: ignore[arg-type]
    assert len(store.list_namespaces(prefix=["uid"], limit=100)) == 3  # type: ignore[arg-type]


def test_search_empty_prefix_is_unconstrained(store: RepoStore) -> None:
    for ns in [("a",), ("b", "c"), ("d", "e", "f")]:
        store.put(ns, "k", {"v": 1})
    assert namespaces_found(store, ()) == {("a",), ("b", "c"), ("d", "e", "f")}


def test_namespace_labels_with_trailing_newline(store: RepoStore) -> None:
    store.put(("users", "alice"), "k", {"v": 1})
    store.put(("users", "alice\n"), "k", {"v": 2})
    assert set(store.list_namespaces(suffix=["alice"], limit=100)) == {("users", "alice")}  # type: ignore[arg-type]
    assert set(store.list_namespaces(prefix=["users", "alice"], limit=100)) == {("users", "alice")}  # type: ignore[arg-type]
    assert store.get(("users", "alice\n"), "k").value == {"v": 2}  # type: ignore[union-attr]


def test_list_namespaces_metacharacter_labels(store: RepoStore) -> None:
    pairs = [
        ("star*", "starX"),
        ("q?m", "qXm"),
        ("br[ack]et", "brXacXket"),
        ("user_1", "userX1"),
        ("a%b", "axxb"),
        ("plus+", "plusX"),
    ]
    for label, decoy in pairs:
        store.put((label,), "k", {"v": 1})
        store.put((decoy,), "k", {"v": 1})
        store.put((label, "child"), "k", {"v": 1})
    for label, _ in pairs:
        assert set(store.list_namespaces(prefix=[label], limit=100)) == {(label,), (label, "child")}  # type: ignore[arg-type]
        assert store.list_namespaces(prefix=[label, "child"], limit=100) == [(label, "child")]  # type: ignore[arg-type]


async def test_large_batches_async(store: RepoStore) -> None:
    n, m = 20, 4
    coros: list[Any] = []
    for j in range(m):
        for i in range(n):
            ns = ("test", "foo", "bar", "baz", str(j % 2))
            coros += [
                store.aput(ns, f"key{i}", value={"foo": "bar" + str(i)}),
                store.aget(ns, f"key{i}"),
                store.alist_namespaces(prefix=None, max_depth=j + 1),
                store.asearch(("test",)),
                store.aput(ns, f"key{i}", value={"foo": "bar" + str(i)}),
                store.adelete(ns, f"key{i}"),
            ]
    assert len(await asyncio.gather(*coros)) == m * n * 6


async def test_abatch_order(store: RepoStore) -> None:
    await store.aput(("test", "foo"), "key1", {"data": "value1"})
    await store.aput(("test", "bar"), "key2", {"data": "value2"})
    results = await store.abatch(
        [
            GetOp(("test", "foo"), "key1"),
            PutOp(("test", "bar"), "key2", {"data": "value2"}),
            SearchOp(("test",), {"data": "value1"}, 10, 0),
            ListNamespacesOp(None, None, 10, 0),
            GetOp(("test",), "key3"),
        ]
    )
    assert results[0].value == {"data": "value1"}  # type: ignore[union-attr]
    assert results[1] is None and results[4] is None
    assert [i.key for i in results[2]] == ["key1"]  # type: ignore[union-attr]
    assert set(results[3]) == {("test", "foo"), ("test", "bar")}  # type: ignore[arg-type]


# ----------------------------------------------------------------------------
# libs/checkpoint-postgres/tests/test_store.py: TTL, the clock moved instead of sleeps
# ----------------------------------------------------------------------------
@pytest.fixture
def clock() -> Clock:
    return Clock()


def ttl_store(tmp_path: Path, clock: Clock, **ttl: Any) -> RepoStore:
    return RepoStore(tmp_path / "ttl", ttl=ttl or None, clock=clock, durable=False)  # type: ignore[arg-type]


def test_store_ttl(tmp_path: Path, clock: Clock) -> None:
    store = ttl_store(tmp_path, clock, omit_expired=True)
    seconds = 60
    store.put(("foo",), "item1", {"foo": "bar"}, ttl=1)
    clock.tick(seconds=seconds - 2)
    assert store.get(("foo",), "item1", refresh_ttl=True) is not None
    clock.tick(seconds=seconds - 2)
    assert len(store.search(("foo",), query="foo", refresh_ttl=True)) == 1
    clock.tick(seconds=seconds - 2)
    assert store.get(("foo",), "item1", refresh_ttl=False) is not None
    clock.tick(seconds=seconds - 1)
    assert store.search(("foo",), query="bar", refresh_ttl=False) == []
    assert store.sweep_ttl() == 1
    assert not store.path(("foo",), "item1").exists()


def test_omit_expired_filters_read_paths(tmp_path: Path, clock: Clock) -> None:
    store = ttl_store(tmp_path, clock, omit_expired=True)
    store.put(("omit", "expired"), "e", {"data": "gone"}, ttl=1)
    store.put(("omit", "control"), "c", {"data": "keep"}, ttl=None)
    clock.tick(minutes=2)
    assert store.path(("omit", "expired"), "e").exists()  # expired, not swept
    assert store.get(("omit", "expired"), "e") is None
    assert store.get(("omit", "control"), "c") is not None
    assert store.search(("omit", "expired")) == []
    assert [i.key for i in store.search(("omit", "control"))] == ["c"]
    assert store.list_namespaces(prefix=("omit",)) == [("omit", "control")]


@pytest.mark.parametrize("omit", [None, False], ids=["default", "explicit-false"])
def test_omit_expired_disabled_preserves_expired_rows(
    tmp_path: Path, clock: Clock, omit: bool | None
) -> None:
    store = ttl_store(tmp_path, clock) if omit is None else ttl_store(tmp_path, clock, omit_expired=omit)
    store.put(("keep",), "k", {"data": "still-here"}, ttl=1)
    clock.tick(minutes=2)
    assert store.get(("keep",), "k", refresh_ttl=False) is not None
    assert [i.key for i in store.search(("keep",), refresh_ttl=False)] == ["k"]
    assert ("keep",) in store.list_namespaces(prefix=("keep",))


def expires(store: RepoStore, ns: tuple[str, ...], key: str) -> str:
    return str(store.files.get(ns, key).doc["expires_at"])  # type: ignore[union-attr]


def test_omit_expired_refresh_ttl_only_refreshes_live_rows(tmp_path: Path, clock: Clock) -> None:
    store = ttl_store(tmp_path, clock, omit_expired=True)
    ns = ("refresh",)
    store.put(ns, "expired", {"n": 0}, ttl=1)
    clock.tick(seconds=30)
    store.put(ns, "live_get", {"n": 1}, ttl=1)
    store.put(ns, "live_search", {"n": 2}, ttl=1)
    clock.tick(seconds=45)  # "expired" is past its minute, the others are not
    before = {k: expires(store, ns, k) for k in ("expired", "live_get", "live_search")}
    assert store.get(ns, "expired", refresh_ttl=True) is None
    assert "expired" not in [i.key for i in store.search(ns, refresh_ttl=True)]
    assert expires(store, ns, "expired") == before["expired"]
    assert store.get(ns, "live_get", refresh_ttl=True) is not None
    assert expires(store, ns, "live_get") > before["live_get"]
    assert expires(store, ns, "live_search") > before["live_search"]


def test_omit_expired_search_pagination(tmp_path: Path, clock: Clock) -> None:
    store = ttl_store(tmp_path, clock, omit_expired=True)
    ns = ("page",)
    # written c, b, expired, a: newest first is a, expired, b, c, the expired one on page one
    for key in ("c", "b"):
        store.put(ns, key, {"k": key}, ttl=10)
        clock.tick(seconds=1)
    store.put(ns, "expired", {"k": "x"}, ttl=0.05)
    clock.tick(seconds=1)
    store.put(ns, "a", {"k": "a"}, ttl=10)
    clock.tick(seconds=5)  # only "expired" is past its 3 seconds
    assert [i.key for i in store.search(ns, limit=2, offset=0)] == ["a", "b"]
    assert [i.key for i in store.search(ns, limit=2, offset=2)] == ["c"]


def test_namespaces_are_listed_sorted_and_deduplicated_like_in_memory_store(store: RepoStore) -> None:
    """(ours) one more case of the pages above, for max_depth cutting several namespaces to one."""
    put_all(store, [("x", "a", "1"), ("x", "a", "2"), ("x", "b")])
    assert store.list_namespaces(max_depth=2) == [("x", "a"), ("x", "b")]
