"""A namespace's kept metadata laid out for a filter across thousands of threads.

A warm ``list(None, filter)`` asks every namespace of every thread which of its checkpoints
match. Asked entry by entry (a dict of entries, each a tuple holding a metadata dict), the
loop touched some 30,000 small objects scattered over memory at 3,000 threads, and that,
not the lstats the cache rule needs, made it twice the rule's floor. Here each namespace's
entries are laid out once (ids, file paths and stat keys in flat lists, its metadata's scalar values
indexed), so a namespace none of whose kept metadata holds what is asked for costs one lstat
per file and nothing else, as the roster's ``KeptRows`` do, and one that does costs that and
an index lookup (``list(config, filter={"step": k})`` in a thread of 5,000 checkpoints).

Nothing is trusted that the rule would not trust: a file whose stat key is not the one
laid out, or that has no entry, is answered as unknown (the caller reads it).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from itertools import chain
from typing import Any

from .caches import all_unchanged

#: types whose values equal a str only when they are one (a str subclass or another object
#: may define ``__eq__`` as it likes: metadata holding one is never ruled out by its strings)
_PLAIN = frozenset({str, int, float, bool, type(None), list, dict})
#: a view of this many entries or fewer is indexed when it is made (a filter across threads
#: meets thousands of small namespaces once each per change); a bigger one once filters have
#: scanned it all (a fresh process's one filter of a long thread scans for less)
EAGER = 64


def stale(
    cids: Sequence[str], kept: Sequence[str], paths: Sequence[str | bytes], keys: tuple[int, ...]
) -> list[str]:
    """Those of ``cids`` whose file's stat key is not the one kept for it (``kept``: the ids
    laid out, ``paths`` their files, ``keys`` their stat keys four integers each), or that
    have none. One lstat each. The listing is the kept ids in their order unless a file came
    or went, so the keys are read by position (no table built per namespace). Most of a warm
    filter across 10,000 threads is here: every key taken and compared in C first, and the
    loop only to name the files when one differs or is gone."""
    if cids != kept:
        return _stale_by_id(cids, kept, paths, keys)
    if all_unchanged(paths, keys):
        return []  # else the loop names what changed or is gone
    out: list[str] = []
    lstat = os.lstat
    at = 0
    for cid, path in zip(cids, paths, strict=True):
        try:
            st = lstat(path)
        except OSError:
            out.append(cid)
        else:
            if (
                st.st_mtime_ns != keys[at]
                or st.st_ctime_ns != keys[at + 1]
                or st.st_size != keys[at + 2]
                or st.st_ino != keys[at + 3]
            ):
                out.append(cid)
        at += 4
    return out


def _stale_by_id(
    cids: Sequence[str], kept: Sequence[str], paths: Sequence[str | bytes], keys: Sequence[int]
) -> list[str]:
    """``stale`` when the listing is not the kept ids: each looked up by id."""
    where = {cid: i for i, cid in enumerate(kept) if type(cid) is str}
    out: list[str] = []
    for cid in cids:
        i = where.get(cid)
        if i is None:
            out.append(cid)
            continue
        try:
            st = os.lstat(paths[i])
        except OSError:
            out.append(cid)
            continue
        if (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino) != tuple(keys[4 * i : 4 * i + 4]):
            out.append(cid)
    return out


class MetaView:
    """The entries of one namespace (``MetaCache``'s: id -> (file, stat key, metadata, tree)),
    as of ``version`` of ``source``: ``matching`` answers a filter, from an index of their
    scalar values once filters have scanned them all (``candidates``), and ``stale`` names the
    files to read again."""

    __slots__ = (
        "_flat",
        "_scanned",
        "_values",
        "_where",
        "bpaths",
        "cids",
        "keys",
        "metas",
        "paths",
        "source",
        "version",
    )

    def __init__(self, version: int, source: object, entries: Sequence[tuple[str, Any]]) -> None:
        self.version, self.source = version, source  # what it was made from, to tell it is current
        cids: list[str] = []
        self.paths: list[str] = []
        self.keys: list[tuple[int, int, int, int]] = []
        self.metas: list[Any] = []
        for cid, (path, key, meta, _tree) in sorted(entries):
            cids.append(cid)
            self.paths.append(path)
            # made now, side by side: the entries' own keys and paths were made one header read
            # at a time among everything else a read makes, and the lstat loop (a warm filter
            # across 10,000 threads asks 100,000 files) waited on memory more than on Python
            self.keys.append((key[0] + 0, key[1] + 0, key[2] + 0, key[3] + 0))
            self.metas.append(meta)
        self.bpaths = [os.fsencode(path) for path in self.paths]
        self.cids = tuple(cids)  # as the roster and the thread store's groups hold ids: compared
        # key -> scalar value -> the id, or the ids, of the entries whose metadata holds it;
        # made once filters have scanned more than every entry (one filter, a fresh process's,
        # scans for less than the index costs); _UNPLAIN: some metadata may equal a value it
        # does not hold (``_PLAIN``)
        self._values: dict[str, dict[Any, Any]] | object | None = None
        if len(cids) <= EAGER:  # a small namespace (most threads'): indexed now, for little
            self._values = _index(cids, self.metas)
        self._scanned = 0
        self._where: dict[str, int] | None = None  # id -> position, for ids asked out of order
        self._flat: tuple[int, ...] | None = None  # the keys one after another (``changed``)

    def changed(self) -> list[str]:
        """``stale`` of every entry laid out: the files whose stat key is not the one laid out,
        every key taken and compared in C first (a filter across threads asks this of each
        namespace its index rules out), the loop only to name them."""
        flat = self._flat
        if flat is None:
            flat = self._flat = tuple(chain.from_iterable(self.keys))
        if all_unchanged(self.bpaths, flat):
            return []
        return self._stale(self.cids, range(len(self.cids)), None)

    def matching(
        self, cids: Sequence[str], wanted: Sequence[tuple[str, Any]], noted: dict[str, Any] | None
    ) -> tuple[list[str], list[str]]:
        """(those of ``cids`` whose file is unchanged and whose kept metadata holds every (key,
        value) of ``wanted``, those whose file changed or that have no entry: ``stale``)."""
        at = self._at(cids)
        stale = self._stale(cids, at, noted)
        changed = set(stale)
        found = self.candidates(wanted, len(cids))
        if found is not None:  # the few found, not every id asked about, go through the tests
            asked = None if type(at) is range and len(at) == len(self.cids) else set(cids)
            return sorted(cid for cid in found - changed if asked is None or cid in asked), stale
        metas, matched = self.metas, []
        for cid, i in zip(cids, at, strict=True):
            if i is not None and cid not in changed:
                meta = metas[i]
                if all(meta.get(key) == value for key, value in wanted):
                    matched.append(cid)
        return matched, stale

    def candidates(self, wanted: Sequence[tuple[str, Any]], scanning: int = 0) -> set[str] | None:
        """The ids whose kept metadata holds every (key, value) of ``wanted`` (each compared
        as ``meta.get(key) == value`` would: a dict finds a key by hash and ``==``, and equal
        scalars hash alike, ``1 == 1.0 == True``); None when the index cannot tell (a value
        that is no scalar, None, which a missing key also matches, or metadata not plain) or
        is not made yet (``scanning``: the ids a scan would go through instead)."""
        if not wanted:
            return None
        index = self._values
        if index is None:
            self._scanned += scanning
            if self._scanned <= len(self.cids):
                return None
            index = self._values = _index(self.cids, self.metas)
        if type(index) is not dict:
            return None
        out: set[str] | None = None
        for key, value in wanted:
            if value is None or not _scalar(value):
                return None
            by_value = index.get(key)
            ids = None if by_value is None else by_value.get(value)
            if ids is None:
                return set()
            found = {ids} if type(ids) is str else set(ids)
            out = found if out is None else out & found
        return out

    def _at(self, cids: Sequence[str]) -> range | list[int | None]:
        """Where each of ``cids`` is laid out (None: nowhere); a range when they are a run of
        the ids laid out, in order (all of them, or the runs of an in-thread filter)."""
        laid = self.cids
        if cids == laid:
            return range(len(laid))
        where = self._where
        if where is None:
            where = self._where = {cid: i for i, cid in enumerate(laid)}
        first = where.get(cids[0]) if cids else None
        if first is not None and laid[first : first + len(cids)] == tuple(cids):
            return range(first, first + len(cids))
        return [where.get(cid) for cid in cids]

    def _stale(
        self, cids: Sequence[str], at: range | list[int | None], noted: dict[str, Any] | None
    ) -> list[str]:
        """``stale`` of this layout (a key a tuple, ``at``: ``_at``'s); ``noted``: gets the stat
        key of each file found unchanged, by path (the read's lineage check takes it then)."""
        lstat, keys, paths = os.lstat, self.keys, self.paths
        out: list[str] = []
        if type(at) is range:  # a run: the loop a filter spends its time in, nothing looked up
            lo, hi = at.start, at.stop
            for cid, path, key in zip(cids, self.bpaths[lo:hi], keys[lo:hi], strict=True):
                try:
                    st = lstat(path)
                except OSError:
                    out.append(cid)
                    continue
                if (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino) != key:
                    out.append(cid)
            if noted is not None and not out:
                noted.update(zip(paths[lo:hi], keys[lo:hi], strict=True))
            elif noted is not None:
                gone = set(out)
                noted.update(
                    (path, key)
                    for cid, path, key in zip(cids, paths[lo:hi], keys[lo:hi], strict=True)
                    if cid not in gone
                )
            return out
        for cid, i in zip(cids, at, strict=True):
            if i is None:
                out.append(cid)
                continue
            try:
                st = lstat(self.bpaths[i])
            except OSError:
                out.append(cid)
                continue
            if (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino) != keys[i]:
                out.append(cid)
            elif noted is not None:
                noted[paths[i]] = keys[i]
        return out


_UNPLAIN = object()


def _index(cids: Sequence[str], metas: Sequence[Any]) -> dict[str, dict[Any, Any]] | object:
    """The scalar values of ``metas``, by key then value, each to its entry's id (or ids);
    _UNPLAIN when some metadata is not a dict of str keys and plain values (a filter could
    match it unseen here). Dicts of strings and no tuple per value: the garbage collector
    tracks little of it (thousands of namespaces are indexed in one call across threads)."""
    values: dict[str, dict[Any, Any]] = {}
    for cid, meta in zip(cids, metas, strict=True):
        if type(meta) is not dict:
            return _UNPLAIN
        for key, value in meta.items():
            if type(key) is not str or type(value) not in _PLAIN:
                return _UNPLAIN
            if _scalar(value):
                by_value = values.get(key)
                if by_value is None:
                    by_value = values[key] = {}
                ids = by_value.get(value)
                if ids is None:
                    by_value[value] = cid  # most values are one checkpoint's (its step): no list
                elif type(ids) is str:
                    by_value[value] = [ids, cid]
                else:
                    ids.append(cid)
    return values


def _scalar(value: Any) -> bool:
    """A value the index holds: str, int, bool, None, or a float that equals itself (a NaN
    equals nothing, but a dict would find the very same NaN object by identity)."""
    kind = type(value)
    return kind is str or kind is int or kind is bool or value is None or (kind is float and value == value)
