"""What the store tests share: a clock they move, a deterministic embedding, and the reference.

The reference is LangGraph's ``InMemoryStore`` doing the work, with what it does not have
modelled beside it, as docs/store.md states RepoStore's rules:

* timestamps and TTL (InMemoryStore has no TTL and takes the wall clock): ``created_at`` kept
  from the item a put replaces (as PostgresStore keeps it), ``updated_at`` the clock's now or
  one microsecond after the replaced one's, ``expires_at`` now + ttl on a put and on a read
  that refreshes; with ``omit_expired`` an expired item is invisible until swept;
* the order of results without a query: newest ``updated_at`` first, then namespace, key
  (InMemoryStore keeps insertion order, which files do not have); with a query, InMemoryStore's
  scores, ties broken in that same order;
* two quirks of InMemoryStore are kept out of the comparison: it lists a namespace that has
  held an item (or was only read) after its last item went, and it keeps the embeddings of an
  item's previous value when a put indexes other fields; the reference deletes an item before
  putting it again and drops empty namespaces, so both answer about what the store holds now.
"""

from __future__ import annotations

import hashlib
import math
import struct
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from typing import Any

from langgraph.store.base import GetOp, Item, ListNamespacesOp, PutOp, SearchItem, SearchOp
from langgraph.store.memory import InMemoryStore

DIMS = 8
START = datetime(2026, 1, 1, 12, 0, tzinfo=timezone.utc)
MICRO = timedelta(microseconds=1)


class Clock:
    """Now, as the test says: moves only when told."""

    def __init__(self, start: datetime = START) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def tick(self, **delta: float) -> None:
        self.now += timedelta(**delta)


def fake_embed(texts: list[str]) -> list[list[float]]:
    """A deterministic embedding: the SHA-256 of the text as ``DIMS`` numbers in [-1, 1]
    (no model, no network; equal texts, equal vectors)."""
    out = []
    for text in texts:
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
        out.append([struct.unpack(">i", digest[i * 4 : i * 4 + 4])[0] / 2**31 for i in range(DIMS)])
    return out


async def afake_embed(texts: list[str]) -> list[list[float]]:
    return fake_embed(texts)


def normal(value: Any) -> Any:
    """A value in a form two processes can compare as JSON: sets sorted, other types tagged."""
    if isinstance(value, dict):
        return {"$dict": sorted(([normal(k), normal(v)] for k, v in value.items()), key=repr)}
    if isinstance(value, list):
        return [normal(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return {"$set": sorted((normal(v) for v in value), key=repr)}
    if isinstance(value, float) and not math.isfinite(value):
        return {"$float": repr(value)}
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (datetime, date, uuid.UUID, bytes)):
        return {"$" + type(value).__name__: repr(value)}
    raise TypeError(f"no normal form for {type(value).__name__}")


def shown(item: Item | None) -> Any:
    """An item as the comparison sees it (a search item with its score, rounded past noise)."""
    if item is None:
        return None
    out: list[Any] = [
        list(item.namespace),
        item.key,
        normal(item.value),
        item.created_at.isoformat(),
        item.updated_at.isoformat(),
    ]
    if isinstance(item, SearchItem):
        out.append(None if item.score is None else round(item.score, 9))
    return out


@dataclass
class Meta:
    created: datetime
    updated: datetime
    ttl: float | None
    expires: datetime | None

    def expired(self, now: datetime) -> bool:
        return self.expires is not None and self.expires <= now


@dataclass
class Reference:
    """InMemoryStore plus the model of what it lacks (module docstring)."""

    clock: Clock
    index: dict[str, Any] | None = None
    omit_expired: bool = False
    mem: InMemoryStore = field(init=False)
    meta: dict[tuple[tuple[str, ...], str], Meta] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.mem = InMemoryStore(index=self.index)  # type: ignore[arg-type]

    # -- what InMemoryStore holds --------------------------------------------------
    def _tidy(self) -> None:
        """Drop the namespaces InMemoryStore keeps after their last item (or after a read);
        with ``omit_expired``, items past their expiry leave it (they are invisible)."""
        if self.omit_expired:
            now = self.clock()
            for (ns, key), meta in self.meta.items():
                if meta.expired(now) and key in self.mem._data.get(ns, {}):
                    self.mem.batch([PutOp(ns, key, None)])
        for ns in [ns for ns, items in self.mem._data.items() if not items]:
            del self.mem._data[ns]

    def _order(self, name: tuple[tuple[str, ...], str]) -> tuple[Any, ...]:
        meta = self.meta[name]
        return (-(meta.updated - START) // MICRO, name[0], name[1])

    def _item(self, item: Item, score: float | None = None, search: bool = False) -> Item:
        meta = self.meta[(item.namespace, item.key)]
        if search:
            return SearchItem(item.namespace, item.key, item.value, meta.created, meta.updated, score)
        return Item(
            value=item.value,
            key=item.key,
            namespace=item.namespace,
            created_at=meta.created,
            updated_at=meta.updated,
        )

    def _refresh(self, names: Iterable[tuple[tuple[str, ...], str]]) -> None:
        now = self.clock()
        for name in names:
            meta = self.meta[name]
            if meta.ttl is not None:
                meta.expires = now + timedelta(minutes=meta.ttl)

    # -- the operations --------------------------------------------------------------
    def batch(self, ops: list[Any]) -> list[Any]:
        """Reads first, against the state before the batch's puts (the last put of an item wins)."""
        self._tidy()
        results: list[Any] = []
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in ops:
            self._tidy()  # a get of a missing item leaves its namespace in InMemoryStore
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self.mem.batch([op])[0])
            else:
                puts[(op.namespace, op.key)] = op
                results.append(None)
        for op in puts.values():
            self._put(op)
        self._tidy()
        return results

    def _get(self, op: GetOp) -> Item | None:
        found = self.mem.batch([op])[0]
        if found is None:
            return None
        if op.refresh_ttl:
            self._refresh([(found.namespace, found.key)])
        return self._item(found)

    def _put(self, op: PutOp) -> None:
        name = (op.namespace, op.key)
        self.mem.batch([PutOp(op.namespace, op.key, None)])  # no embeddings of the old value
        if op.value is None:
            self.meta.pop(name, None)
            return
        self.mem.batch([PutOp(op.namespace, op.key, op.value, op.index)])
        now = self.clock()
        old = self.meta.get(name)
        updated = now if old is None or now > old.updated else old.updated + MICRO
        created = updated if old is None else old.created
        expires = None if op.ttl is None else now + timedelta(minutes=op.ttl)
        self.meta[name] = Meta(created, updated, op.ttl, expires)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        """InMemoryStore's candidates and scores; RepoStore's order (module docstring)."""
        everything = self.mem.batch([op._replace(limit=10**9, offset=0)])[0]
        if not (op.query and self.index):
            everything.sort(key=lambda i: self._order((i.namespace, i.key)))
            page = everything[op.offset : op.offset + op.limit]
        else:
            scored = [i for i in everything if i.score is not None]
            scoreless = [i for i in everything if i.score is None]
            scored.sort(key=lambda i: self._order((i.namespace, i.key)))
            scored.sort(key=lambda i: i.score, reverse=True)  # type: ignore[arg-type,return-value]
            scoreless.sort(key=lambda i: self._order((i.namespace, i.key)))
            page = scored[op.offset : op.offset + op.limit]
            if scoreless and len(page) < op.limit:
                page += scoreless[: op.limit - len(page)]
        if op.refresh_ttl:
            self._refresh((i.namespace, i.key) for i in page)
        return [self._item(i, i.score, search=True) for i in page]  # type: ignore[misc]

    def sweep(self) -> int:
        now = self.clock()
        gone = [name for name, meta in self.meta.items() if meta.expired(now)]
        for ns, key in gone:
            self.mem.batch([PutOp(ns, key, None)])
            del self.meta[(ns, key)]
        self._tidy()
        return len(gone)


def dump(items: Iterable[Item]) -> list[Any]:
    return sorted((shown(i) for i in items), key=repr)


def plain_dict(value: Mapping[str, Any]) -> dict[str, Any]:
    return dict(value)
