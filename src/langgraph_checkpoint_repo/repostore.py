"""RepoStore: LangGraph's long-term memory store (``BaseStore``) kept as files in the repository.

Each item is one JSON file, ``store/<label>/.../<key>.json`` under the root (core/items.py),
so a memory is read, grepped, reviewed and diffed like code, and two branches that changed
different items merge without conflict. ``InMemoryStore`` is the reference for what every
operation returns (tests/test_store_differential.py); what differs, and why, is in
docs/store.md. A value that is plain JSON is stored as it is; any other value as the tree
LangGraph's serializer makes of it, revived under the strict allowlist as checkpoint values
are (serde.py). Text that looks like a secret is redacted before anything is written, as in
checkpoints (core/redaction.py).

The work is done by the sync ``batch``; ``abatch`` runs the same steps with the file work off
the event loop and the embedding calls awaited.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from langchain_core.embeddings import Embeddings
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.store.base import (
    NOT_PROVIDED,
    BaseStore,
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    NotProvided,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    ensure_embeddings,
    get_text_at_path,
    tokenize_path,
    validate_op_namespace,
)

from .core.caches import CACHE_ENTRIES, LRU
from .core.durable import check_lock_timeout
from .core.errors import BadInputError, InvalidWriteError, UnrevivableValueError
from .core.files import Files
from .core.items import ANY, ItemFiles, StoredItem, copy_plain, dotted, plain_tree, ttl_problem
from .core.itemsearch import filter_problem, matches, select_namespaces
from .core.layout import find_default_root
from .core.redaction import RedactOption, Redactor, resolve_redactor
from .core.sweeper import Sweeper
from .core.vectors import VectorCache, text_digest
from .saver import allow_keys, serde_with
from .serde import ValueCodec

_log = logging.getLogger(__name__)

#: ``if_updated_at`` not given: the write is unconditional
UNCONDITIONAL: Any = ANY


@dataclass
class _Plan:
    """A batch, checked: reads answered before any put of the batch is applied (as in
    InMemoryStore and the SQL stores), puts deduplicated, the last one of an item winning."""

    ops: list[Op]
    puts: dict[tuple[tuple[str, ...], str], PutOp] = field(default_factory=dict)
    expect: dict[tuple[tuple[str, ...], str], Any] = field(default_factory=dict)
    queries: dict[str, list[float]] = field(default_factory=dict)
    # per search op (by position): its candidates (item, value), newest first
    candidates: dict[int, list[tuple[StoredItem, dict[str, Any]]]] = field(default_factory=dict)
    texts: dict[tuple[tuple[str, ...], str], list[tuple[str, str]]] = field(default_factory=dict)


class RepoStore(BaseStore):
    """A LangGraph store whose items are validated, atomically written JSON files in the
    repository: ``.langgraph/store/`` at the top of the git work tree by default.

    Args:
        root: the folder holding ``store/`` (the same root a ``RepoSaver`` uses is fine).
        index: semantic search, as ``InMemoryStore``'s: ``{"dims": ..., "embed": ...,
            "fields": [...]}``; the embeddings are kept under ``.cache/embeddings/`` (never
            committed), keyed by the text embedded.
        ttl: ``TTLConfig``: ``default_ttl`` (minutes), ``refresh_on_read``, ``omit_expired``
            (expired items are not read before a sweep removes them), ``sweep_interval_minutes``
            (``start_ttl_sweeper``).
        serde: LangGraph's serializer for values that are not plain JSON (JsonPlusSerializer by
            default); ``allowlist`` the types a read may construct beyond LangGraph's safe types.
        redact: as ``RepoSaver``'s: the default patterns, yours, or False.
        durable: fsync every file and folder (False: atomic but not crash-durable).
        lock_timeout: seconds to wait for a namespace's lock.
        clock: what "now" is (timestamps and TTL), for tests and simulations.
    """

    supports_ttl = True

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        serde: SerializerProtocol | None = None,
        allowlist: Collection[tuple[str, ...]] | None = None,
        redact: RedactOption = True,
        durable: bool = True,
        lock_timeout: float = 60.0,
        clock: Callable[[], datetime] | None = None,
        unsafe_allow_pickle: bool = False,
    ) -> None:
        check_lock_timeout(lock_timeout)
        path = Path(root) if root is not None else find_default_root()
        self.root = path.absolute()
        self.documents = Files(self.root, durable=durable, lock_timeout=lock_timeout)
        self.files = ItemFiles(self.documents, clock)
        self.redactor: Redactor | None = resolve_redactor(redact)
        self.serde = serde_with(serde, allowlist)
        self.codec = ValueCodec(
            self.serde,
            self.redactor,
            allowlist=allow_keys(allowlist or ()),
            unsafe_allow_pickle=unsafe_allow_pickle,
        )
        default = ttl.get("default_ttl") if ttl else None
        problem = ttl_problem(default) if default is not None else None
        if problem is not None:  # said once, here (a server's start), not by every put
            raise BadInputError(f"RepoStore(ttl=...) default_ttl: {problem}")
        self.ttl_config = ttl
        self.index_config: IndexConfig | None = None
        self.embeddings: Embeddings | None = None
        self.vectors: VectorCache | None = None
        self._fields: list[tuple[str, Any]] = []
        if index:
            self.index_config = index.copy()
            self.embeddings = ensure_embeddings(index.get("embed"))
            self._fields = [(p, tokenize_path(p) if p != "$" else p) for p in (index.get("fields") or ["$"])]
            self.vectors = VectorCache(self.documents, embedder_name(index.get("embed")), index["dims"])
        self._texts = LRU(CACHE_ENTRIES)  # item path -> (its document, its texts)
        what = f"TTL sweep of {self.root}"
        self._sweeper = Sweeper("repostore-ttl-sweeper", what, "expired item(s)", self.files.sweep)

    def __repr__(self) -> str:
        return f"RepoStore(root={str(self.root)!r})"

    @property
    def _omit_expired(self) -> bool:
        return bool(self.ttl_config and self.ttl_config.get("omit_expired"))

    def path(self, namespace: tuple[str, ...], key: str) -> Path:
        """The file an item lives in (whether or not it exists)."""
        return self.files.path(namespace, key)

    # ------------------------------------------------------------------
    # BaseStore
    # ------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        plan = self._plan(ops)
        if self.embeddings is not None:
            plan.queries = {q: self.embeddings.embed_query(q) for q in self._queries(plan)}
        results = self._read(plan)
        missing = self._missing_texts(plan)
        if missing:
            assert self.embeddings is not None
            self._keep_vectors(missing, self.embeddings.embed_documents(missing))
        self._rank(plan, results)
        self._write(plan)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        plan = self._plan(ops)
        if self.embeddings is not None:
            queries = self._queries(plan)
            vectors = await asyncio.gather(*(self.embeddings.aembed_query(q) for q in queries))
            plan.queries = dict(zip(queries, vectors, strict=True))
        results = await asyncio.to_thread(self._read, plan)
        missing = await asyncio.to_thread(self._missing_texts, plan)
        if missing:
            assert self.embeddings is not None
            self._keep_vectors(missing, await self.embeddings.aembed_documents(missing))
        await asyncio.to_thread(self._rank_and_write, plan, results)
        return results

    def _rank_and_write(self, plan: _Plan, results: list[Result]) -> None:
        self._rank(plan, results)
        self._write(plan)

    # ------------------------------------------------------------------
    # compare-and-swap
    # ------------------------------------------------------------------
    def put(  # type: ignore[override]
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | NotProvided | None = NOT_PROVIDED,
        if_updated_at: datetime | None = UNCONDITIONAL,
    ) -> None:
        """As ``BaseStore.put``; with ``if_updated_at`` (the ``updated_at`` of the item you read,
        or None for "there was none") the write happens only if the item is still that
        version, else ``ItemChangedError`` and nothing is written."""
        op = self._put_op(namespace, key, value, index, ttl)
        self._plan_and_write(op, if_updated_at)

    async def aput(  # type: ignore[override]
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | NotProvided | None = NOT_PROVIDED,
        if_updated_at: datetime | None = UNCONDITIONAL,
    ) -> None:
        op = self._put_op(namespace, key, value, index, ttl)
        await self._aplan_and_write(op, if_updated_at)

    def delete(
        self, namespace: tuple[str, ...], key: str, *, if_updated_at: datetime | None = UNCONDITIONAL
    ) -> None:  # type: ignore[override]
        """As ``BaseStore.delete``; ``if_updated_at`` as for ``put``."""
        validate_op_namespace(GetOp(tuple(namespace), str(key)))
        self._plan_and_write(PutOp(tuple(namespace), str(key), None), if_updated_at)

    async def adelete(  # type: ignore[override]
        self, namespace: tuple[str, ...], key: str, *, if_updated_at: datetime | None = UNCONDITIONAL
    ) -> None:
        validate_op_namespace(GetOp(tuple(namespace), str(key)))
        await self._aplan_and_write(PutOp(tuple(namespace), str(key), None), if_updated_at)

    def _put_op(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Literal[False] | list[str] | None,
        ttl: float | NotProvided | None,
    ) -> PutOp:
        """The op ``BaseStore.put`` makes, with its checks (an empty namespace, the reserved
        root label, TTL defaults)."""
        namespace = tuple(namespace)
        if not namespace:
            raise InvalidNamespaceError("Namespace cannot be empty.")
        op = PutOp(namespace, str(key), value, index=index, ttl=None)
        validate_op_namespace(op)
        if namespace[0] == "langgraph":
            raise InvalidNamespaceError(f'Root label for namespace cannot be "langgraph". Got: {namespace}')
        if isinstance(ttl, NotProvided):
            minutes = self.ttl_config.get("default_ttl") if self.ttl_config else None
        else:
            minutes = ttl
        return op._replace(ttl=minutes)

    def _plan_and_write(self, op: PutOp, expect: Any) -> None:
        plan = self._plan([op])
        plan.expect[(op.namespace, op.key)] = expect
        missing = self._missing_texts(plan)
        if missing:
            assert self.embeddings is not None
            self._keep_vectors(missing, self.embeddings.embed_documents(missing))
        self._write(plan)

    async def _aplan_and_write(self, op: PutOp, expect: Any) -> None:
        plan = self._plan([op])
        plan.expect[(op.namespace, op.key)] = expect
        missing = self._missing_texts(plan)
        if missing:
            assert self.embeddings is not None
            self._keep_vectors(missing, await self.embeddings.aembed_documents(missing))
        await asyncio.to_thread(self._write, plan)

    # ------------------------------------------------------------------
    # TTL
    # ------------------------------------------------------------------
    def sweep_ttl(self) -> int:
        """Remove every expired item now; how many went."""
        return self.files.sweep()

    async def asweep_ttl(self) -> int:
        return await asyncio.to_thread(self.files.sweep)

    def start_ttl_sweeper(
        self, sweep_interval_minutes: float | None = None
    ) -> concurrent.futures.Future[None]:
        """Sweep every ``sweep_interval_minutes`` (default: the TTL config's, else 5) in a
        daemon thread until ``stop_ttl_sweeper``; the future ends with the thread."""
        minutes = sweep_interval_minutes or (self.ttl_config or {}).get("sweep_interval_minutes") or 5
        return self._sweeper.start(float(minutes))

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper; True when it has stopped within ``timeout`` seconds."""
        return self._sweeper.stop(timeout)

    # ------------------------------------------------------------------
    # the steps of a batch
    # ------------------------------------------------------------------
    def _plan(self, ops: Iterable[Op]) -> _Plan:
        plan = _Plan(list(ops))
        for op in plan.ops:
            if not isinstance(op, (GetOp, SearchOp, ListNamespacesOp, PutOp)):
                raise ValueError(f"Unknown operation type: {type(op)}")
            validate_op_namespace(op)
            if isinstance(op, (GetOp, PutOp)) and not isinstance(op.key, str):
                raise TypeError(f"an item's key must be a string, not {type(op.key).__name__} ({op.key!r})")
            if isinstance(op, PutOp):
                if not op.namespace:
                    raise InvalidNamespaceError("Namespace cannot be empty.")
                plan.puts[(tuple(op.namespace), op.key)] = op
            if isinstance(op, SearchOp):
                problem = filter_problem(op.filter)
                if problem is not None:
                    raise ValueError(f"search filter {op.filter!r}: {problem}")
        for (namespace, key), op in plan.puts.items():
            if op.value is not None and self.vectors is not None and op.index is not False:
                value = op.value if type(op.value) is dict else dict(op.value)
                plan.texts[(namespace, key)] = self._item_texts(value, op.index)
        return plan

    def _queries(self, plan: _Plan) -> list[str]:
        return list(dict.fromkeys(op.query for op in plan.ops if isinstance(op, SearchOp) and op.query))

    def _read(self, plan: _Plan) -> list[Result]:
        """Gets and namespace listings answered, searches' candidates found; refreshes done."""
        results: list[Result] = [None] * len(plan.ops)
        now = self.files.now()
        refresh: list[StoredItem] = []
        for i, op in enumerate(plan.ops):
            if isinstance(op, GetOp):
                item = self.files.get(tuple(op.namespace), op.key)
                if item is None or (self._omit_expired and item.expired(now)):
                    continue
                results[i] = Item(
                    value=self._value(item),
                    key=item.key,
                    namespace=item.namespace,
                    created_at=item.created_at,
                    updated_at=item.updated_at,
                )
                if op.refresh_ttl:
                    refresh.append(item)
            elif isinstance(op, SearchOp):
                plan.candidates[i] = self._candidates(op, now)
            elif isinstance(op, ListNamespacesOp):
                found = self.files.namespaces(now if self._omit_expired else None)
                conditions = [(c.match_type, tuple(c.path)) for c in op.match_conditions or ()]
                results[i] = select_namespaces(found, conditions, op.max_depth, op.limit, op.offset)
        self._refresh(refresh)
        return results

    def _refresh(self, items: list[StoredItem]) -> None:
        """The TTL refresh of what a read returns: a side effect, so a refresh that cannot be
        written (a read-only root, a full disk, a lock not taken in time) is logged and the
        read still answers; the items expire at their old time."""
        for namespace, exc in self.files.refresh(items):
            _log.warning(
                "TTL refresh of store items in namespace %r under %s not written: %s",
                dotted(namespace),
                self.root,
                exc,
            )

    def _candidates(self, op: SearchOp, now: datetime) -> list[tuple[StoredItem, dict[str, Any]]]:
        """Every item under the prefix that passes the filter, newest ``updated_at`` first
        (then namespace, key): the order of a search without a query."""
        out = []
        omit = self._omit_expired
        for item in self.files.walk(tuple(op.namespace_prefix)):
            if omit and item.expired(now):
                continue
            value = item.tree if item.plain else self._value(item)
            if matches(value, op.filter):
                out.append((item, value))
        out.sort(key=lambda c: (c[0].namespace, c[0].key))
        out.sort(key=lambda c: c[0].updated_at, reverse=True)
        return out

    def _missing_texts(self, plan: _Plan) -> list[str]:
        """The texts semantic search needs that have no embedding yet: of the items the
        batch puts, and of every candidate of a search with a query (items that arrived by
        ``git pull`` or were written without an index are embedded here, once)."""
        if self.vectors is None:
            return []
        by_digest = {text_digest(t): t for pairs in plan.texts.values() for _, t in pairs}
        for i, candidates in plan.candidates.items():
            op = plan.ops[i]
            assert isinstance(op, SearchOp)
            if op.query:
                for item, value in candidates:
                    pairs, digests = self._texts_of(item, value)
                    by_digest.update(zip(digests, (t for _, t in pairs), strict=True))
        return [by_digest[d] for d in self.vectors.missing(by_digest)]

    def _keep_vectors(self, texts: list[str], vectors: Sequence[Sequence[float]]) -> None:
        assert self.vectors is not None
        if len(vectors) != len(texts):
            raise ValueError(f"the embedder returned {len(vectors)} embeddings for {len(texts)} texts")
        self.vectors.add([(text_digest(t), v) for t, v in zip(texts, vectors, strict=True)])

    def _item_texts(
        self, value: dict[str, Any], index: Literal[False] | list[str] | None
    ) -> list[tuple[str, str]]:
        """(field path, text) of each text an item's value gives semantic search, as
        InMemoryStore picks them (``index``: the put's, else the configured fields)."""
        if index is False:
            return []
        paths = self._fields if index is None else [(p, tokenize_path(p)) for p in index]
        out: list[tuple[str, str]] = []
        for path, tokens in paths:
            texts = get_text_at_path(value, tokens)
            if len(texts) > 1:
                out.extend((f"{path}.{i}", text) for i, text in enumerate(texts))
            elif texts:
                out.append((path, texts[0]))
        return out

    def _texts_of(self, item: StoredItem, value: dict[str, Any]) -> tuple[list[tuple[str, str]], list[bytes]]:
        """An item's (field path, text) pairs and the digests of the texts, kept while the
        item's document is the one read (a changed file is a new document)."""
        hit = self._texts.get(item.path)
        if hit is not None and hit[0] is item.doc:
            return hit[1], hit[2]
        texts = self._item_texts(value, item.index)
        digests = [text_digest(t) for _, t in texts]
        self._texts.put(item.path, (item.doc, texts, digests))
        return texts, digests

    def _rank(self, plan: _Plan, results: list[Result]) -> None:
        """Each search's page: by score for a query (InMemoryStore's rules: an item scores its
        best text, items without an embedding fill a short page unscored), else newest first."""
        refresh: list[StoredItem] = []
        for i, candidates in plan.candidates.items():
            op = plan.ops[i]
            assert isinstance(op, SearchOp)
            kept: list[tuple[float | None, StoredItem, dict[str, Any]]]
            if op.query and self.vectors is not None and candidates:
                kept = self._scored(op, candidates, plan.queries[op.query])
            else:
                kept = [(None, item, value) for item, value in candidates[op.offset : op.offset + op.limit]]
            results[i] = [
                SearchItem(
                    namespace=item.namespace,
                    key=item.key,
                    value=copy_plain(value) if item.plain else value,
                    created_at=item.created_at,
                    updated_at=item.updated_at,
                    score=None if score is None else float(score),
                )
                for score, item, value in kept
            ]
            if op.refresh_ttl:
                refresh.extend(item for _, item, _ in kept)
        self._refresh(refresh)

    def _scored(
        self, op: SearchOp, candidates: list[tuple[StoredItem, dict[str, Any]]], query: list[float]
    ) -> list[tuple[float | None, StoredItem, dict[str, Any]]]:
        assert self.vectors is not None
        flat: list[tuple[StoredItem, dict[str, Any]]] = []
        vectors: list[list[float]] = []
        scoreless: list[tuple[StoredItem, dict[str, Any]]] = []
        each = [self._texts_of(item, value)[1] for item, value in candidates]
        known = self.vectors.known({d for digests in each for d in digests})  # the file read once
        for (item, value), digests in zip(candidates, each, strict=True):
            mine = [known[d] for d in digests if d in known]
            for vector in mine:
                flat.append((item, value))
                vectors.append(vector)
            if not mine:
                scoreless.append((item, value))
        scores = cosine_similarity(query, vectors)
        ranked = sorted(zip(scores, flat, strict=True), key=lambda pair: pair[0], reverse=True)
        seen: set[tuple[tuple[str, ...], str]] = set()
        kept: list[tuple[float | None, StoredItem, dict[str, Any]]] = []
        for score, (item, value) in ranked:
            name = (item.namespace, item.key)
            if name in seen:
                continue
            position = len(seen)
            seen.add(name)
            if position >= op.offset + op.limit:
                break
            if position < op.offset:
                continue
            kept.append((score, item, value))
        if scoreless and len(kept) < op.limit:
            kept.extend((None, item, value) for item, value in scoreless[: op.limit - len(kept)])
        return kept

    def _write(self, plan: _Plan) -> None:
        for (namespace, key), op in plan.puts.items():
            expect = plan.expect.get((namespace, key), ANY)
            if op.value is None:
                self.files.delete(namespace, key, expect=expect)
                continue
            tree = self._tree(namespace, key, op.value)
            index = op.index if op.index is None or op.index is False else list(op.index)
            self.files.put(namespace, key, tree, ttl_minutes=op.ttl, index=index, expect=expect)

    # ------------------------------------------------------------------
    # values
    # ------------------------------------------------------------------
    def _tree(self, namespace: tuple[str, ...], key: str, value: Any) -> dict[str, Any]:
        """A value as its stored tree: plain JSON as it is, anything else through the serde."""
        target = str(self.path(namespace, key))
        if not isinstance(value, Mapping):
            raise InvalidWriteError(
                "item", target, "/value", f"must be a mapping, not {type(value).__name__}"
            )
        value = value if type(value) is dict else dict(value)
        tree = plain_tree(value, self.redactor)
        if tree is None:
            tree = self.codec.tree(value, "item", target, "/value")
        if not isinstance(tree, dict):
            raise InvalidWriteError("item", target, "/value", "must serialise as a JSON object")
        return tree

    def _value(self, item: StoredItem) -> dict[str, Any]:
        """An item's value, new for the caller: a copy of a plain tree, else revived under the
        allowlist (a type outside it is refused before anything is imported)."""
        if item.plain:
            value: dict[str, Any] = copy_plain(item.tree)
            return value
        where = f"store item {item.key!r} of namespace {dotted(item.namespace)!r} ({item.path})"
        revived = self.codec.revive_tree(item.tree, where, str(item.path), "/value")
        if not isinstance(revived, dict):
            raise UnrevivableValueError(
                f"{where}: at /value: the value is a {type(revived).__name__}, not a dict"
            )
        return revived


def embedder_name(embed: Any) -> str:
    """What names an embedder in the embeddings cache: a provider string as it is, a model's
    class and model name, a function's module and name. Another embedder gets another file
    (the vectors of one model mean nothing to another)."""
    if isinstance(embed, str):
        return embed
    if isinstance(embed, Embeddings):
        cls = type(embed)
        model = getattr(embed, "model", None) or getattr(embed, "model_name", None)
        return f"{cls.__module__}.{cls.__qualname__}" + (f":{model}" if isinstance(model, str) else "")
    module = getattr(embed, "__module__", None) or "?"
    name = getattr(embed, "__qualname__", None) or type(embed).__qualname__
    return f"{module}.{name}"


def cosine_similarity(query: Sequence[float], vectors: Sequence[Sequence[float]]) -> list[float]:
    """The cosine of ``query`` with each vector, 0 for a zero vector: InMemoryStore's
    arithmetic (numpy when installed), so the same vectors give the same scores."""
    if not vectors:
        return []
    try:
        import numpy as np
    except ImportError:
        scores = []
        norm_x = sum(a * a for a in query) ** 0.5
        for vector in vectors:
            dot = sum(a * b for a, b in zip(query, vector, strict=False))
            norm_y = sum(b * b for b in vector) ** 0.5
            scores.append(dot / (norm_x * norm_y) if norm_x > 0 and norm_y > 0 else 0.0)
        return scores
    x = np.array(query)
    y = np.array(vectors)
    x_norm = np.linalg.norm(x)
    y_norm = np.linalg.norm(y, axis=1)
    mask = y_norm != 0
    out = np.zeros_like(y_norm)
    out[mask] = np.dot(y[mask], x) / (y_norm[mask] * x_norm)
    return [float(s) for s in out.tolist()]
