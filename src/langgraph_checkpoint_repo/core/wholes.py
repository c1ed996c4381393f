"""Whole checkpoint documents: a checkpoint file as every reader sees it.

Format 4 writes most checkpoints as a delta on their parent (bookkeeping.py); a reader wants
the whole document. ``WholeDocs`` walks a line of deltas down to a whole document (or the base
file prune left), builds it back up, and keeps what it built under the cache rule (one lstat
per file of the line); inside a snapshot (the checks' cache policy) each whole is made once.
The thread store (threads.py) turns these documents into records; the format's own walkers
(needs.py) and the checks of files read them as documents.
"""

from __future__ import annotations

import bisect
import os
from pathlib import Path
from typing import Any

from .caches import CACHE_ENTRIES, LRU, Dep, stat_key_of, thread_of
from .errors import FileFormatError, MissingReferenceError
from .files import Files
from .format.bookkeeping import MAX_DELTA_CHAIN, depth, materialize
from .layout import encode_segment


class WholeDocs:
    """The whole documents of the checkpoints and writes of one root."""

    def __init__(self, files: Files) -> None:
        self.files = files
        self.layout = files.layout
        # checkpoint path -> (its parse, its parent's whole document, its whole document)
        by_thread = thread_of(self.layout.threads_dir)
        self._full = LRU(CACHE_ENTRIES, by_thread)
        # delta checkpoint path -> (its parse, the files of its line below, each settled
        # (root first), its whole document): ``at`` checks their stat keys only
        self._chains = LRU(CACHE_ENTRIES, by_thread)
        # inside a snapshot: each checkpoint's whole document, with the count of deltas it
        # took (None: not counted)
        self._wholes: dict[str, tuple[dict[str, Any], int | None]] = {}

    @property
    def in_snapshot(self) -> bool:
        return self.files.snapshot is not None and self.files.snapshot.active

    def forget_under(self, folder: Path) -> None:
        self._full.drop_where(lambda p: p.is_relative_to(folder))
        self._chains.drop_where(lambda p: p.is_relative_to(folder))

    def let_go(self, seg: str) -> None:
        self._full.drop_group(seg)
        self._chains.drop_group(seg)

    def clear(self) -> None:
        self._wholes.clear()
        for lru in (self._full, self._chains):
            with lru.lock:
                lru.clear()

    def header(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> dict[str, Any]:
        """The checkpoint document whole (``at``), names checked against its place.
        FileNotFoundError if absent."""
        path = self.layout.checkpoint_path(thread_id, checkpoint_ns, checkpoint_id)
        return self._named(path, self.at(path), thread_id, checkpoint_ns, checkpoint_id)

    def header_depth(self, thread_id: str, ns: str, checkpoint_id: str) -> tuple[dict[str, Any], int]:
        """``header``, and how many deltas its own file is from a whole one (what a child
        written as a delta on it counts from): one read of the file, not two."""
        path = self.layout.checkpoint_path(thread_id, ns, checkpoint_id)
        doc, deltas = self.at_depth(path)
        return self._named(path, doc, thread_id, ns, checkpoint_id), deltas

    def own(self, path: Path, thread_id: str, ns: str, cid: str) -> dict[str, Any]:
        """A checkpoint document as its own file holds it (a delta is not completed: what
        its parent line holds is not read), names checked against its place."""
        return self._named(path, self.files.read_doc(path, "checkpoint"), thread_id, ns, cid)

    @staticmethod
    def _named(
        path: Path, doc: dict[str, Any], thread_id: str, checkpoint_ns: str, checkpoint_id: str
    ) -> dict[str, Any]:
        if (doc["thread_id"], doc["checkpoint_ns"], doc["checkpoint_id"]) != (
            thread_id,
            checkpoint_ns,
            checkpoint_id,
        ):
            raise FileFormatError(
                str(path),
                "/checkpoint_id",
                "thread_id, checkpoint_ns or checkpoint_id does not match the file's place",
            )
        return doc

    def at(self, path: Path) -> dict[str, Any]:
        """A checkpoint document whole, as every reader sees it: a delta (format 4,
        bookkeeping.py) applied to its parent's whole bookkeeping, the parent's own delta
        first, down to a whole document or the ``base`` file prune left for a removed parent.
        Each whole document is kept while every file of its line is unchanged (one lstat per
        file: a hand edit of any of them is seen). FileNotFoundError if the file is absent.
        In a snapshot, a delta whose parent's whole is known is that plus its changes."""
        return self.at_depth(path)[0]

    def at_depth(self, path: Path) -> tuple[dict[str, Any], int]:
        """``at``, and the depth of the file's own document (``bookkeeping.depth``)."""
        if self.in_snapshot:
            return self._snapshot_whole(path), depth(self.files.read_doc(path, "checkpoint"))
        raw = self.files.read_doc(path, "checkpoint")
        deltas = depth(raw)
        if not deltas:
            return raw, 0
        links, full, below = self._walk_down(path, raw)
        return self._build_up(links, full, below), deltas

    def _snapshot_whole(self, path: Path) -> dict[str, Any]:
        """``at`` inside a snapshot: each whole made once; anything but a delta on
        a known parent (a parent not made yet, a base file, a line too long or broken) is
        walked in full, which raises what any reader would."""
        key = str(path)
        got = self._wholes.get(key)
        if got is not None:
            return got[0]
        raw = self.files.read_doc(path, "checkpoint")
        if not depth(raw):
            self._wholes[key] = (raw, 0)
            return raw
        parent = raw["parent_checkpoint_id"]
        below = None
        if parent:
            head, sep, _ = key.rpartition(os.sep)  # os.path.join(os.path.dirname(key), ...), in one step
            pkey = f"{head}{sep}{encode_segment(parent)}.json"
            below = self._wholes.get(pkey) if pkey != key else None
        if below is not None and below[1] is not None and below[1] < MAX_DELTA_CHAIN:
            whole, deltas = materialize(raw, below[0]), below[1] + 1
        else:
            links, full, deps = self._walk_down(path, raw)
            whole, deltas = self._build_up(links, full, deps), None
        self._wholes[key] = (whole, deltas)
        return whole

    def _walk_down(
        self, path: Path, raw: dict[str, Any]
    ) -> tuple[list[tuple[Path, dict[str, Any]]], dict[str, Any], list[Dep]]:
        """The deltas from ``path`` down (newest first), the whole document under them, and
        the files that whole came from when they are settled (else none: nothing is kept).

        The walk reads each file of the line (``read_doc``: its stat, and the bytes of one
        not yet settled) until it comes to a checkpoint whose line below was found settled
        (``_chains``): the stat keys of those files are compared then, without reading them
        again (the cache rule, caches.py, one lstat per file)."""
        links: list[tuple[Path, dict[str, Any]]] = []
        seen: set[Path] = set()
        here, cur = path, raw
        while depth(cur):
            kept = self._kept_chain(here, cur, seen, len(links))
            if kept is not None:
                self.files.note_deps(kept[1])  # taken as unchanged: what the read came from
                return links, kept[0], kept[1]
            _check_line(path, here, cur, seen, links)
            seen.add(here)
            links.append((here, cur))
            parent = cur["parent_checkpoint_id"]
            if not parent:
                raise FileFormatError(str(here), "/delta", "a delta needs the parent it changes")
            ppath = self.layout.sibling(here, f"{encode_segment(parent)}.json")
            try:
                here, cur = ppath, self.files.read_doc(ppath, "checkpoint")
                continue
            except FileNotFoundError:
                pass
            # a line ending at a base file is not kept: a stat key cannot tell that the parent
            # it stands for came back (git restore), which every later read must follow
            return links, self._base_doc(here, parent), []
        return links, cur, [self.files.docs.dep(here, cur)]

    def _base_doc(self, here: Path, parent: str) -> dict[str, Any]:
        """The bookkeeping prune kept for the removed ``parent`` of the checkpoint at ``here``."""
        bpath = here.parent.parent / self.layout.base_rel(parent)
        try:
            return self.files.read_doc(bpath, "base")
        except FileNotFoundError:
            raise MissingReferenceError(
                str(here),
                "/parent_checkpoint_id",
                f"holds only what changed since checkpoint {parent}, which is missing "
                f"(and so is {bpath}, where prune keeps a removed parent's bookkeeping)",
            ) from None

    def _build_up(
        self, links: list[tuple[Path, dict[str, Any]]], full: dict[str, Any], below: list[Dep]
    ) -> dict[str, Any]:
        """Apply the deltas of ``links`` to ``full``, oldest first, keeping each whole made
        (``_full``) and, while every file below is settled, the line it was made from (``_chains``)."""
        for lpath, lraw in reversed(links):
            hit = self._full.get(lpath)
            if hit is not None and hit[0] is lraw and hit[1] is full:
                whole = hit[2]
            else:
                whole = materialize(lraw, full)
                self._full.put(lpath, (lraw, full, whole))
            if below and all(key is not None and digest is None for _, key, digest in below):
                self._chains.put(lpath, (lraw, tuple(below), whole))
            else:
                below = []  # a file below not settled: nothing above it is kept either
            if below:
                below.append(self.files.docs.dep(lpath, lraw))
            full = whole
        return full

    def _kept_chain(
        self, here: Path, cur: dict[str, Any], seen: set[Path], above: int
    ) -> tuple[dict[str, Any], list[Dep]] | None:
        """The whole document of the checkpoint at ``here`` (just read: ``cur``) when its line
        below was settled when it was kept and each of those files still has its stat key;
        with those files and its own. None: walk the line (and raise what it finds)."""
        kept = self._chains.get(here)
        if kept is None or kept[0] is not cur:
            return None
        lraw, deps, whole = kept
        if above + len(deps) > MAX_DELTA_CHAIN or here in seen:
            return None  # the walk names what is wrong
        above_paths = {str(p) for p in seen}
        for dep_path, key, _ in deps:
            if key != stat_key_of(dep_path) or dep_path in above_paths:
                return None
        return whole, [*deps, self.files.docs.dep(here, lraw)]

    def writes(
        self, thread_id: str, checkpoint_ns: str, checkpoint_id: str
    ) -> list[tuple[Path, dict[str, Any]]]:
        """Writes files of one checkpoint, oldest first (only the files: ``writes_records``
        also has what its children took from them)."""
        folder = self.layout.writes_dir(thread_id, checkpoint_ns)
        out = []
        for name in writes_names(self.files, folder, encode_segment(checkpoint_id)):
            path = folder / name
            doc = self.files.read_doc(path, "writes")
            if (doc["thread_id"], doc["checkpoint_ns"], doc["checkpoint_id"]) != (
                thread_id,
                checkpoint_ns,
                checkpoint_id,
            ):
                raise FileFormatError(str(path), "/checkpoint_id", "names do not match the file's place")
            out.append((path, doc))
        return out


def _check_line(
    path: Path, here: Path, cur: dict[str, Any], seen: set[Path], links: list[tuple[Path, dict[str, Any]]]
) -> None:
    """A line of deltas that cycles or is longer than a reader follows is refused, naming the file."""
    if here in seen:  # the same words as every other walk of parents (refchecks, plans)
        raise FileFormatError(
            str(links[-1][0]),
            "/parent_checkpoint_id",
            f"parent chain cycles back to checkpoint {cur['checkpoint_id']}",
        )
    if len(links) >= MAX_DELTA_CHAIN:
        raise FileFormatError(
            str(path),
            "/delta",
            f"more than {len(links)} deltas back to a whole checkpoint: this release "
            f"follows at most {MAX_DELTA_CHAIN}",
        )


def writes_names(files: Files, folder: Path, owner: str) -> list[str]:
    """Names of the writes files of one checkpoint (encoded id ``owner``), in order: the
    sorted listing's range ``<owner>~...`` (``~`` is 0x7e), found by bisection, so a
    fresh process does not group thousands of names to find one checkpoint's few."""
    lst = files.listings.get(folder)
    if lst is None:
        return []
    names = lst.names
    lo = bisect.bisect_left(names, owner + "~")
    hi = bisect.bisect_left(names, owner + "\x7f", lo)
    return [n for n in names[lo:hi] if files.layout.writes_owner(n) == owner]
