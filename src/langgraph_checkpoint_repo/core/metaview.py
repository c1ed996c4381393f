"""A namespace's kept metadata laid out for a filter across thousands of threads.

A warm ``list(None, filter)`` asks every namespace of every thread which of its checkpoints
match. Asked entry by entry (a dict of entries, each a tuple holding a metadata dict), the
loop touched some 30,000 small objects scattered over memory at 3,000 threads, and that,
not the lstats the cache rule needs, made it twice the rule's floor. Here each namespace's
entries are laid out once (ids, file paths and stat keys in flat lists, the string values
of its metadata in one set), so a namespace none of whose kept metadata holds the strings
asked for costs one lstat per file and nothing else, as the roster's ``KeptMeta`` does.

Nothing is trusted that the rule would not trust: a file whose stat key is not the one
laid out, or that has no entry, is answered as unknown (the caller reads it).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

#: types whose values equal a str only when they are one (a str subclass or another object
#: may define ``__eq__`` as it likes: metadata holding one is never ruled out by its strings)
_PLAIN = frozenset({str, int, float, bool, type(None), list, dict})


def stale(cids: Sequence[str], kept: Sequence[str], paths: Sequence[str], keys: Sequence[int]) -> list[str]:
    """Those of ``cids`` whose file's stat key is not the one kept for it (``kept``: the ids
    laid out, ``paths`` their files, ``keys`` their stat keys four integers each), or that
    have none. One lstat each. The listing is the kept ids in their order unless a file came
    or went, so the keys are read by position (no table built per namespace)."""
    if cids != kept:
        return _stale_by_id(cids, kept, paths, keys)
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
    cids: Sequence[str], kept: Sequence[str], paths: Sequence[str], keys: Sequence[int]
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
    as of ``version`` of ``source``: ``may_match`` rules a filter out on their strings alone, ``stale``
    names the files to read again."""

    __slots__ = ("cids", "keys", "paths", "source", "strings", "version")

    def __init__(self, version: int, source: object, entries: Sequence[tuple[str, Any]]) -> None:
        self.version, self.source = version, source  # what it was made from, to tell it is current
        self.cids: list[str] = []
        self.paths: list[str] = []
        self.keys: list[int] = []
        # (key, value) of every str value; None: some metadata may equal a str it does not hold
        strings: set[tuple[str, str]] | None = set()
        for cid, (path, key, meta, _tree) in sorted(entries):
            self.cids.append(cid)
            self.paths.append(path)
            self.keys.extend(key)
            if strings is not None:
                strings = _with_strings(strings, meta)
        self.strings = strings

    def may_match(self, wanted: Sequence[tuple[str, Any]]) -> bool:
        """False only when a str ``wanted`` asks for is under its key in no entry's metadata
        (a number is not looked for: ``1 == 1.0 == True``)."""
        strings = self.strings
        if strings is None:
            return True
        for key, value in wanted:
            if type(value) is str and (key, value) not in strings:
                return False
        return True

    def stale(self, cids: Sequence[str]) -> list[str]:
        return stale(cids, self.cids, self.paths, self.keys)


def _with_strings(strings: set[tuple[str, str]], meta: Any) -> set[tuple[str, str]] | None:
    """``strings`` with the str values of ``meta`` under their keys; None when ``meta`` is
    not a dict of str keys and plain values (a filter could match it unseen here)."""
    if type(meta) is not dict:
        return None
    for key, value in meta.items():
        kind = type(value)
        if type(key) is not str or kind not in _PLAIN:
            return None
        if kind is str:
            strings.add((key, value))
    return strings
