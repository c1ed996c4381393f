"""Resolving the value a checkpoint refers to: inline, in a value file, in ``large/``, or
rebuilt from an append chain.

Invariants:

* a reference is read where it points, or, when that checkpoint is gone, from the value
  file prune wrote in its place; neither there is a ``MissingReferenceError`` naming both;
* a body must be the value of that channel at that version, else a ``FileFormatError``;
* an append chain is walked once (chains.walk_chain, so a cycle or an over-long chain is
  refused) and built back up from its whole base without recursion;
* a resolved value is reused only while every file it was built from is unchanged
  (caches.py); one built from a file that cannot be checked is not kept.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from functools import partial
from pathlib import Path
from typing import Any

import orjson

from ..bodyindex import MIN_ITEMS, MIN_LINKS, BodyIndex, Kept, Sources
from ..caches import CACHE_ENTRIES, LRU, Dep, DocCache, StatKey, look_memo, lstat, refresh, thread_of
from ..errors import FileFormatError, MissingReferenceError
from ..layout import CHECKPOINTS, LARGE, OBJECTS, WRITES, Layout, encode_segment
from . import fields
from .canonical import digest_node
from .chains import Link, walk_chain
from .entries import IndexedEntry, ValueEntry, append_entry, entry_from_node
from .objects import CHUNKS, EDITED, Expander, Known, Weight, large_ref, location_of, names_object
from .packed import msgpack_array_header
from .tree import holds_extension

# objects whose place a process remembers per thread, for writers to refer to (Overlap.locate_object)
LOCATED_PER_THREAD = 200_000
ReadDoc = Callable[[Path, str], dict[str, Any]]
# (thread folder, object name, holder (its path's text), what the index found of holders and
# folders in this read: a dict it keeps) -> the tree the derived index has for it, or None
FindObject = Callable[[Path, str, str, dict[str, Any]], Any]
# (thread folder, holder, its lstat before the read, the objects it holds, time before the read)
ReadHolder = Callable[[Path, Path, os.stat_result, dict[str, Any], int], None]
# the folders whose files may hold objects of their own (format 4), and their kind
_HOLDS_OBJECTS = {CHECKPOINTS: "checkpoint", WRITES: "writes"}


def _may_be_long(body: dict[str, Any]) -> bool:
    """Whether a value body may be a list worth writing down (bodyindex.py): an append (its
    chain's length is known once walked), or a whole list of many items or of chunks. Else
    the read records nothing: a chat turn reads a few small whole values every time."""
    if "append" in body:
        return True
    node = body.get("value")
    tree = node.get("json") if isinstance(node, dict) else None
    if isinstance(tree, list):
        return len(tree) >= MIN_ITEMS
    return isinstance(tree, dict) and CHUNKS in tree


def kind_of_holder(path: str | Path) -> str | None:
    """The kind of a file that may hold objects of its own (format 4), else None."""
    return _HOLDS_OBJECTS.get(Path(path).parent.name)


class ValueResolver:
    """The values of one root, each kept against the files it was built from."""

    def __init__(self, layout: Layout, read_doc: ReadDoc, docs: DocCache) -> None:
        self.layout = layout
        self._read_doc = read_doc
        self._docs = docs
        self._values = LRU(CACHE_ENTRIES, thread_of(layout.threads_dir))  # (file, channel) -> ValueEntry
        # per thread folder, objects expanded before (objects.Expander)
        self._objects: dict[Path, dict[str, Known]] = {}
        # per thread folder, the folders of the files those objects were taken from (a file
        # of objects/, a checkpoint of any namespace, a writes file): the objects, and values
        # kept with them, are reused by name only while each of those folders is clear
        # (``_homes_clear``)
        self._homes: dict[Path, dict[str, Path]] = {}
        # per thread folder, digest -> (namespace, checkpoint id) whose objects hold it: found
        # on a read or written by this process; what a writer refers to with $in (format 4)
        self.located: dict[Path, dict[str, tuple[str, str]]] = {}
        # per thread folder, the same as a values index line has it, not parsed yet (located_in)
        self._located_lines: dict[Path, bytes] = {}
        # (channel, link) -> the base an append without ``base`` extends (ThreadStore sets it)
        self.implied_base: Callable[[str, Link], tuple[Any, str]] | None = None
        # the objects index (objindex.py, ThreadStore sets them): objects a fresh process
        # takes without opening their holders, and holders read, to be written down
        self.find_object: FindObject | None = None
        self.read_holder: ReadHolder | None = None
        self.read_done: Callable[[Path], None] | None = None  # an expansion is over
        # the lists reads rebuilt from long chains, for a fresh process (bodyindex.py; None
        # in the checks, which read the files)
        self.bodies: BodyIndex | None = None
        # the stat keys this read took already, by path (ThreadStore.observing)
        self.observed: Callable[[], dict[str, StatKey] | None] | None = None
        # how a read records the files it reads (Files.recording; None in the checks)
        self.recording: Callable[[], AbstractContextManager[list[Dep]]] | None = None
        # per thread of Python: while a list is read to be written down, the objects it
        # expands, by thread folder, loaded afresh (so each one's file is recorded)
        self._local = threading.local()
        # a run of the checks reads the root as one snapshot (snapshot.py): a kept value is
        # reused without checking the files it was built from again
        self.trust_kept = False
        self._threads_head = str(layout.threads_dir) + os.sep
        self._tdirs: dict[str, Path] = {}  # thread folder name -> its folder (_thread_dir)
        # while trust_kept: (namespace folder, ref) -> the file it names and its lstat, each
        # file lstat'ed once (a snapshot's rule; consecutive checkpoints name the same files)
        self._places: dict[tuple[Path, str], tuple[Path, os.stat_result]] = {}
        # while trust_kept: id of a held object's tree -> (that tree, the name it was found to
        # match): the checks check every object a file holds, then resolve values through them
        self._named: dict[int, tuple[Any, str]] = {}
        # while trust_kept: each file read in the snapshot, by its path's text (snapshot.py
        # fills it): a reference to it is found without a Path made per reference (``child``)
        self.read_paths: dict[str, Path] = {}

    def value_entry(
        self, ns_dir: Path, channel: str, version: Any, ref: str, *, derived: bool = True, note: bool = False
    ) -> ValueEntry:
        """The value of ``channel`` at ``version``: inline in the checkpoint ``ref`` names,
        or in its value file (where prune moves values whose checkpoint it removes).

        An append chain is resolved without recursion: walk down to a whole value (or a
        link resolved before, or one the values index holds, still unchanged on disk), then
        build the links back up from it. Each entry records every file it was built from
        (``deps``) and is reused only while all of them are unchanged. ``derived=False``:
        from the files alone, nothing the values index gave (an error names where); ``note``:
        a list rebuilt from many links is written down in it (the latest state of a thread:
        what a fresh process reads first).
        """
        first = self._link(ns_dir, channel, version, ref, derived)
        if first.known is not None:
            return self._rebuildable(first.known, ns_dir, channel, version, ref)
        if not (note and self.bodies is not None and self.recording is not None and _may_be_long(first.body)):
            got = self._built(ns_dir, channel, first, derived)
            return self._rebuildable(got, ns_dir, channel, version, ref)
        # every file the value is read from is recorded, each object loaded afresh (not
        # taken from what this process expanded before, whose files are not known here)
        with self.recording() as read:
            self._local.fresh_objects = {}
            try:
                got = self._built(ns_dir, channel, first, derived, read)
            finally:
                self._local.fresh_objects = None
        return self._rebuildable(got, ns_dir, channel, version, ref)

    def _built(
        self, ns_dir: Path, channel: str, first: Link, derived: bool, read: list[Dep] | None = None
    ) -> ValueEntry:
        """``value_entry`` from its first link, read from its file; ``read``: the files read
        meanwhile (``recording``), when a list rebuilt from many links is written down."""
        # a snapshot's entries are dropped with it, never checked against their files: no deps
        trust = self.trust_kept
        if "append" not in first.body:  # a whole value (or none): no chain to walk
            entry = self._entry_from_body(channel, first)
            self._keep(first, channel, entry, () if trust else (self._docs.dep(first.path, first.doc),))
            if read is not None and entry.is_list and entry.count >= MIN_ITEMS:
                self._index(first.path, channel, entry, read, ())
            return entry
        ahead = [first]

        def link_at(version: Any, ref: str) -> Link:
            return ahead.pop() if ahead else self._link(ns_dir, channel, version, ref, derived)

        links: list[tuple[Link, tuple[Dep, ...]]] = []
        got: ValueEntry | None = None
        parsed = False  # the walk ended at a whole list read from its file
        implied = partial(self.implied_base, channel) if self.implied_base is not None else None
        for link in walk_chain(link_at, first.version, first.ref, implied):
            if link.known is not None:
                got = link.known
                break
            own: tuple[Dep, ...] = () if trust else (self._docs.dep(link.path, link.doc),)
            if "append" not in link.body:
                got = self._entry_from_body(channel, link)
                self._keep(link, channel, got, own)
                parsed = True
                break
            links.append((link, own))
        assert got is not None  # the walk ends at a whole value or a kept one
        # the files a base kept from an earlier read came from are known only of a line's
        below = got.sources.deps() if isinstance(got, IndexedEntry) else None if links and not parsed else ()
        for link, own in reversed(links):
            got = self._entry_from_body(channel, link, got)
            self._keep(link, channel, got, own + self._parent_dep(link.path, link.body, link.doc))
        many = len(links) >= MIN_LINKS or (parsed and got.is_list and got.count >= MIN_ITEMS)
        if read is not None and below is not None and many:
            self._index(first.path, channel, got, read, below)
        return got

    def _parent_dep(self, path: Path, body: dict[str, Any], doc: Any) -> tuple[Dep, ...]:
        """The parent whose bookkeeping names the base of an append without ``base`` (format
        4; ``body``: the append's, in the file ``path`` whose document is ``doc``): one more
        file the link's value comes from. A read asks once its walk is over, when the walk
        has read that parent (``implied_base``); asked as each link was read, before, it was
        never yet read in a fresh process, and no link built there could be kept."""
        if self.trust_kept or "base" in body["append"] or not isinstance(doc, dict):
            return ()
        parent = doc.get("parent_checkpoint_id")
        if not isinstance(parent, str):
            return ()
        ppath = self.layout.sibling(path, f"{encode_segment(parent)}.json")
        return (self._docs.dep(ppath, self._docs.doc(ppath)),)

    def _rebuildable(
        self, entry: ValueEntry, ns_dir: Path, channel: str, version: Any, ref: str
    ) -> ValueEntry:
        """``entry``, made again from the files alone when reviving it fails, when part of it
        came from the values index (its error then names the file and pointer)."""
        if entry.derived and entry.rebuild is None:
            entry.rebuild = self._from_files(ns_dir, channel, version, ref)
        return entry

    def _from_files(self, ns_dir: Path, channel: str, version: Any, ref: str) -> Callable[[], ValueEntry]:
        """How to make a value again from the files alone, nothing the values index gave (and
        write its line again: the one it gave did not hold)."""
        return partial(self.value_entry, ns_dir, channel, version, ref, derived=False, note=True)

    def _index(
        self, path: Path, channel: str, entry: ValueEntry, read: list[Dep], below: tuple[Dep, ...]
    ) -> None:
        """Write down a list a read rebuilt from many links (bodyindex.py), when every file
        it came from was settled then and its messages pass (the body is made now, and kept
        for the revive that follows). Its deps are the chain's (what a kept entry is checked
        against); its sources every other file the read took something from (``read``: the
        holders of its objects, the records the walk read; ``below``: a line's it built on)."""
        if self.bodies is None or self.trust_kept or not entry.is_list:
            return
        deps = tuple(dict.fromkeys(entry.deps))
        seen = {p for p, _k, _d in deps}
        sources = tuple(d for d in dict.fromkeys((*read, *below)) if d[0] not in seen)
        if len({p for p, _k, _d in sources}) != len(sources):
            return  # one file under two keys: it changed during the read
        if any(key is None or digest is not None for _, key, digest in (*deps, *sources)):
            return
        tdir = self._thread_dir(path)
        kept_sources = Sources.of(tdir, sources)
        if kept_sources is None:
            return
        if not entry.where.startswith(str(path)):
            return  # a large value's (its errors name its own file): left to the files
        try:
            body = entry.list_body()
            tree = orjson.dumps(entry.tree)
        except FileFormatError:
            return  # the revive that follows says why
        except orjson.JSONEncodeError:
            return  # a number past 64 bits: left to the files
        homes = entry.homes or {}
        kept = Kept(
            path=str(path),
            channel=channel,
            pointer=entry.root,
            where=entry.where[len(str(path)) :],
            depth=entry.depth,
            weight=entry.weight,
            deps=deps,
            sources=kept_sources,
            homes=tuple(homes),
            types=frozenset(entry.types),
            count=entry.count,
            tree=tree,
            body=body,
            located=orjson.dumps(self.located_in(tdir)),
        )
        self.bodies.save(tdir, kept)

    def _indexed(
        self, ns_dir: Path, channel: str, version: Any, ref: str, path: Path, st: os.stat_result
    ) -> ValueEntry | None:
        """The list the values index holds for ``channel`` in the link ``path`` (``st``: its
        lstat now), kept as any entry, while every file it came from is as recorded and every
        folder clear; it is made again from the files (``ValueEntry.rebuild``) when it fails."""
        if self.bodies is None or self.trust_kept:
            return None
        tdir = self._thread_dir(path)
        kept = self.bodies.find(tdir, path, channel)
        if kept is None:
            return None
        if not kept.types and holds_extension(msgpack_array_header(kept.count) + kept.body):
            return None  # said to name no type, yet it holds one: the files say what it is
        folders = {os.path.dirname(p) for p, _k, _d in kept.deps} | kept.sources.folders()
        if (
            refresh(kept.deps, st) is None
            or not kept.sources.unchanged(self.observed() if self.observed is not None else None)
            or not self._all_clear([Path(f) for f in folders])
            or not self._all_clear([Path(h) for h in kept.homes])
        ):
            return None
        homes = self._homes.get(tdir)
        if homes is None:
            homes = self._homes.setdefault(tdir, {})
        for h in kept.homes:  # the thread's one set: its kept objects are checked with these too
            if h not in homes:
                homes[h] = Path(h)
        entry = IndexedEntry(
            tree_json=kept.tree,
            items=kept.count,
            sources=kept.sources,
            empty=False,
            types=kept.types,
            depth=kept.depth,
            where=f"{path}{kept.where}",
            file=str(path),
            root=kept.pointer,
            weight=kept.weight,
            deps=kept.deps,
            homes=homes,
        )
        entry.rebuild = self._from_files(ns_dir, channel, version, ref)
        entry.keep_body(kept.body)
        self._located_lines.setdefault(tdir, kept.located)
        self._values.put((path, channel), entry)
        return entry

    def keep_appended(
        self, ns_dir: Path, channel: str, ref: str, base_ref: str, items: list[Any], weight: Weight
    ) -> None:
        """What a put has just written of a list (the file ``ref``, its ``new_values`` an
        append onto the value in ``base_ref``) kept as the entry a read would build: the
        base's entry, kept and built as any other, with ``items``, the tree of the appended
        items the writer shared (a read expands the file's references back to it), and
        ``weight``, the weight the writer gave them (``Sharer``'s, the Expander's rule). Its
        deps are those a read would record (the file, from the document the writer keeps, its
        bytes' digest while unsettled; the parent whose bookkeeping names the base; the
        base's), each checked on use as always. Nothing is kept when the base is not kept or
        the append does not fit it: the next read builds the entry from the files."""
        if self.trust_kept:
            return
        path = self.child(ns_dir, ref)
        base: ValueEntry | None = self._values.get((self.child(ns_dir, base_ref), channel))
        doc = self._docs.doc(path)
        if base is None or not isinstance(doc, dict):
            return
        body = doc.get("new_values", {}).get(channel)
        if not isinstance(body, dict) or not isinstance(body.get("append"), dict):
            return
        pointer = f"/new_values/{channel}"
        own: tuple[Dep, ...] = (self._docs.dep(path, doc), *self._parent_dep(path, body, doc))
        if any(key is None for _, key, _ in own):
            return  # what cannot be checked is not kept (a kept base's deps all can)
        app = {**body["append"], "items": items}
        try:
            entry = append_entry(channel, app, path, pointer, f"{path} at {pointer}", base, weight)
        except FileFormatError:
            return  # not what the base holds now: a read says why
        entry.deps = (*own, *entry.deps)
        entry.homes = base.homes  # its items are this file's, or taken by name as the base's were
        self._values.put((path, channel), entry)

    def located_in(self, tdir: Path) -> dict[str, tuple[str, str]]:
        """Where this process knows the thread's objects are held (``located``), with what a
        values index line it read says, merged in when first asked (a hint: the writer checks)."""
        raw = self._located_lines.pop(tdir, None)
        located = self.located.setdefault(tdir, {})
        if raw is not None:
            try:
                hints = orjson.loads(raw)
            except orjson.JSONDecodeError:
                hints = None
            if isinstance(hints, dict) and len(located) + len(hints) <= LOCATED_PER_THREAD:
                for name, loc in hints.items():
                    if type(loc) is list and len(loc) == 2 and all(type(x) is str for x in loc):
                        located.setdefault(name, (loc[0], loc[1]))
        return located

    def drop_under(self, folder: Path) -> None:
        self._values.drop_where(lambda k: k[0].is_relative_to(folder))
        # list(...) copies the keys in one step under the GIL: chat threads add objects meanwhile
        for tdir in [t for t in list(self._objects) if t.is_relative_to(folder) or folder.is_relative_to(t)]:
            self._objects.pop(tdir, None)
            self._homes.pop(tdir, None)
        for kept in (self.located, self._located_lines):
            for tdir in [t for t in list(kept) if t.is_relative_to(folder) or folder.is_relative_to(t)]:
                kept.pop(tdir, None)

    def let_go(self, tdir: Path) -> None:
        """Drop the values and objects kept of one thread (caches.KeptThreads). Its set of
        folders stays (``_homes``: one a thread, never replaced, a few paths): an entry kept
        meanwhile by a read under way checks the set its objects were noted in."""
        self._values.drop_group(tdir.name)
        self._objects.pop(tdir, None)
        self.located.pop(tdir, None)
        self._located_lines.pop(tdir, None)

    def clear(self) -> None:
        """Forget every value and object kept (a run of the checks is done with a thread)."""
        with self._values.lock:
            self._values.clear()
        self._places.clear()
        self._named.clear()
        self.read_paths.clear()
        self._objects.clear()
        self._homes.clear()
        self.located.clear()
        self._located_lines.clear()

    def _keep(self, link: Link, channel: str, entry: ValueEntry, own: tuple[Dep, ...]) -> None:
        entry.deps, entry.folders = (*own, *entry.deps), None
        entry.homes = self._homes.get(self._thread_dir(link.path))
        if self.trust_kept or entry.checkable:  # a run of the checks keeps it for the run
            self._values.put((link.path, channel), entry)

    def _link(self, ns_dir: Path, channel: str, version: Any, ref: str, derived: bool = True) -> Link:
        """One link, strictly: a kept entry still fresh, else one the values index holds
        (``derived``), else its body, checked."""
        while True:
            path, st, ref = self._value_file(ns_dir, channel, version, ref)
            hit: ValueEntry | None = self._values.get((path, channel))
            if hit is not None and self.trust_kept:
                return Link(version, ref, path, known=hit)
            if hit is not None and (derived or not hit.derived):
                deps = refresh(hit.deps, st, self._docs.settle)
                if deps is not None and self._on_the_way_clear(hit):
                    hit.deps = deps
                    return Link(version, ref, path, known=hit)
            if derived:
                indexed = self._indexed(ns_dir, channel, version, ref, path, st)
                if indexed is not None:
                    return Link(version, ref, path, known=indexed)
            found = self._value_body(ns_dir, channel, version, ref, path)
            if found is not None:
                body, pointer, doc = found
                return Link(version, ref, path, pointer, body, doc)
            ref = self.layout.value_rel(channel, version)  # removed since the lstat: rescued

    def _on_the_way_clear(self, entry: ValueEntry) -> bool:
        """Whether every folder a kept value was read from still lies in the root with no
        symlink on the way (each folder asked once a look): a folder swapped for a link to it
        leaves its files' keys as kept, and the value is read again, where the read refuses
        the link by name, as a fresh process's does."""
        folders = entry.folders
        if folders is None:
            folders = entry.folders = tuple(Path(f) for f in {os.path.dirname(p) for p, _k, _d in entry.deps})
        return self._all_clear(folders) and self._homes_clear(entry.homes)

    def _homes_clear(self, homes: dict[str, Path] | None) -> bool:
        """Whether every folder objects were taken from still lies in the root with no symlink
        on the way (each asked once a look): objects are reused by name, and a folder swapped
        for a link leaves the name as it was; read again, the holder is refused by name."""
        if not homes:
            return True
        memo = look_memo()
        if memo is None:
            return self._all_clear(list(homes.values()))
        # once a look for each set of folders (a Send-based agent adds a namespace a turn, so a
        # thread's set grows with the conversation and a read reuses dozens of entries), and
        # each folder once a look whatever set holds it
        key = ("homes", id(homes))
        got = memo.get(key)
        if got is not None and got[0] is homes and got[1] == len(homes):
            return bool(got[2])
        clear = self._all_clear(list(homes.values()))
        memo[key] = (homes, len(homes), clear)
        return clear

    def _all_clear(self, folders: Iterable[Path]) -> bool:
        """Whether each folder lies in the root with no symlink on the way: asked once a look."""
        memo = look_memo()
        if memo is None:
            return all(self.layout.contains(folder, lstat) for folder in folders)
        for folder in folders:
            got = memo.get(("clear", folder))
            if got is None:
                got = memo[("clear", folder)] = self.layout.contains(folder, lstat)
            if not got:
                return False
        return True

    def _value_file(
        self, ns_dir: Path, channel: str, version: Any, ref: str
    ) -> tuple[Path, os.stat_result, str]:
        """Where one value lives (path, its stat, the ref that found it): the checkpoint
        ``ref`` names, or the value file that took its place when prune removed it."""
        if self.trust_kept:
            got = self._places.get((ns_dir, ref))
            if got is not None:
                return got[0], got[1], ref
        path = self.child(ns_dir, ref)
        try:
            st = lstat(path)
            if self.trust_kept:
                self._places[ns_dir, ref] = path, st
        except FileNotFoundError:
            if not ref.startswith(CHECKPOINTS + "/"):
                raise MissingReferenceError.of_missing(
                    str(path), "/", f"value of channel {channel!r} is missing"
                ) from None
            missing = path
            ref = self.layout.value_rel(channel, version)
            path = ns_dir / ref
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                raise MissingReferenceError.of_missing(
                    str(missing),
                    "/",
                    f"value of channel {channel!r} at {version}: this checkpoint is missing and so is {path}",
                ) from None
        return path, st, ref

    def _value_body(
        self, ns_dir: Path, channel: str, version: Any, ref: str, path: Path
    ) -> tuple[dict[str, Any], str, dict[str, Any]] | None:
        """The value body in ``path``, its JSON pointer there and the document holding it;
        None when the checkpoint was removed since it was found (prune rescued its values)."""
        if ref.startswith(CHECKPOINTS + "/"):
            try:
                doc = self._read_doc(path, "checkpoint")
            except FileNotFoundError:
                return None
            body = doc.get("new_values", {}).get(channel)
            if body is None or fields.channel_versions(doc).get(channel) != version:
                raise MissingReferenceError(
                    str(path), f"/new_values/{channel}", f"holds no value of channel {channel!r} at {version}"
                )
            return body, f"/new_values/{channel}", doc
        doc = self._read_doc(path, "value")
        if (
            doc["channel"] != channel
            or doc["version"] != version
            or ns_dir / self.layout.value_rel(channel, version) != path
        ):
            raise FileFormatError(str(path), "/version", f"expected channel {channel!r} at {version}")
        return doc, "", doc

    def _entry_from_body(self, channel: str, link: Link, base: ValueEntry | None = None) -> ValueEntry:
        """One value from its body; an append body extends ``base``, its resolved base value."""
        body, path, pointer = link.body, link.path, link.pointer
        where = f"{path}{' at ' + pointer if pointer else ''}"
        if body.get("empty"):
            return ValueEntry(empty=True, where=where, file=str(path), root=pointer)
        if "append" in body:
            app = body["append"]
            items, items_weight = self.expand_weighed(app["items"], path, f"{pointer}/append/items")
            app = {**app, "items": items}
            typed = not self.trust_kept
            return append_entry(channel, app, path, pointer, where, base, items_weight, typed=typed)
        stored, holder = self._follow_large(body["value"], path, pointer)
        # ``is``: the very path unless it is a large value's (large/ is never a checkpoint's)
        node, weight = self._expanded_weighed(stored, holder, pointer if holder is path else "")
        where = where if holder is path else f"{holder}, referenced from {where}"
        # a snapshot's entries only tell the checks whether a value resolves (snapshot.py):
        # the types a value names are judged in the trees that store them (checks.py)
        entry = entry_from_node(node, where, typed=not self.trust_kept)
        entry.weight = weight
        entry.file = str(holder)
        entry.root = f"{pointer}/value/json" if holder is path else "/value/json"
        if holder is not path:  # a large value: its file is one more this entry comes from
            ldoc = self._docs.doc(holder)
            entry.deps = (
                self._docs.dep(holder, ldoc if ldoc is not None and ldoc["value"] is stored else None),
            )
        return entry

    def resolve_node(
        self, node: dict[str, Any], where: Path, pointer: str = ""
    ) -> tuple[dict[str, Any], Path]:
        """The node a stored one stands for, whole: a large value followed to its file, and
        its shared subtrees (``objects/``) put back; with the file that holds it."""
        stored, holder = self._follow_large(node, where, pointer)
        return self._expanded(stored, holder, pointer if holder == where else ""), holder

    def _follow_large(
        self, node: dict[str, Any], where: Path, pointer: str = ""
    ) -> tuple[dict[str, Any], Path]:
        """Follow a large-value reference: the node it stands for and the file holding it."""
        digest = large_ref(node)
        if digest is None:
            return node, where
        lpath = self._thread_dir(where) / LARGE / f"{digest}.json"
        try:
            ldoc = self._read_doc(lpath, "large_value")
        except FileNotFoundError:
            raise MissingReferenceError(
                str(where), f"{pointer}/value/large", f"large value {lpath} is missing"
            ) from None
        if ldoc["sha256"] != digest or digest_node(ldoc["value"]) != digest:
            raise FileFormatError(str(lpath), "/sha256", EDITED)
        return ldoc["value"], lpath

    def _expanded(self, node: dict[str, Any], holder: Path, pointer: str) -> dict[str, Any]:
        return self._expanded_weighed(node, holder, pointer)[0]

    def _expanded_weighed(
        self, node: dict[str, Any], holder: Path, pointer: str
    ) -> tuple[dict[str, Any], Weight | None]:
        if "json" not in node:
            return node, None
        tree, weight = self.expand_weighed(node["json"], holder, f"{pointer}/value/json")
        return {**node, "json": tree}, weight

    def expand(self, tree: Any, holder: Path, pointer: str) -> Any:
        """A stored tree with the subtrees it shares through ``objects/`` put back."""
        return self.expand_weighed(tree, holder, pointer)[0]

    def expand_weighed(self, tree: Any, holder: Path, pointer: str) -> tuple[Any, Weight]:
        """``expand``, with the weight of what it expanded to (objects.weight_problem)."""
        tdir = self._thread_dir(holder)
        # one set of folders a thread, never replaced (a folder that fails stays in it, and
        # everything kept from the thread is read again until it is clear again): what a
        # kept entry holds is the set its objects were noted in, whatever other threads do
        homes = self._homes.get(tdir)
        if homes is None:
            homes = self._homes.setdefault(tdir, {})
        fresh: dict[Path, dict[str, Known]] | None = getattr(self._local, "fresh_objects", None)
        done = self._objects.get(tdir) if fresh is None else fresh.setdefault(tdir, {})
        if fresh is None and (
            done is None
            or len(done) > CACHE_ENTRIES * 16
            or not (self.trust_kept or self._homes_clear(homes))
        ):
            done = self._objects[tdir] = {}
        load = partial(self._load_home, tdir, holder, pointer, {}, homes)
        expander = Expander(load, str(holder), pointer, done)
        try:
            return expander.expand(tree), expander.weight
        finally:
            if self.read_done is not None:
                self.read_done(tdir)

    def _load_home(
        self,
        tdir: Path,
        referrer: Path,
        pointer: str,
        seen: dict[str, Any],
        homes: dict[str, Path],
        digest: str,
        node: dict[str, Any],
        holder: str,
    ) -> tuple[Any, str]:
        """``_load_object``, the folder of the file it came from noted in ``homes``."""
        tree, found = self._load_object(tdir, referrer, pointer, seen, digest, node, holder)
        folder = found[: found.rfind(os.sep)]
        if folder not in homes:
            homes[folder] = Path(folder)
        return tree, found

    def _load_object(
        self,
        tdir: Path,
        referrer: Path,
        pointer: str,
        seen: dict[str, Any],
        digest: str,
        node: dict[str, Any],
        holder: str,
    ) -> tuple[Any, str]:
        """One object's tree, checked against its name (a hand edit cannot pass as the
        original), and the file it lies in: the checkpoint ``$in`` names, else the file holding
        the reference (format 4 keeps objects in the file that introduced them), else
        ``objects/`` (format 3, and where prune keeps the objects of a checkpoint it removes)."""
        loc = location_of(node)
        if loc is not None:
            if self.find_object is not None and not self.trust_kept:
                text = self._checkpoint_text(tdir, *loc)
                indexed = self.find_object(tdir, digest, text, seen)
                if indexed is not None and self._names_quietly(digest, indexed):
                    self.located.setdefault(tdir, {}).setdefault(digest, loc)
                    return indexed, text
            path = self.checkpoint_in(tdir, *loc)
            doc = self._read_holder(tdir, path)
            if doc is not None:
                tree = fields.held_objects(doc).get(digest)
                if tree is None:
                    raise MissingReferenceError(
                        str(referrer), pointer or "/", f"object {digest} is not among the objects of {path}"
                    )
                return self._checked(path, digest, tree, tdir, doc), str(path)
        else:
            # the name of its folder (os.path.basename(os.path.dirname(holder)), in one step)
            kind = _HOLDS_OBJECTS.get(holder.rpartition(os.sep)[0].rpartition(os.sep)[2])
            if kind is not None:
                hpath = referrer if holder == str(referrer) else Path(holder)
                try:
                    doc = self._read_doc(hpath, kind)
                except FileNotFoundError:
                    # a writes file goes once its child checkpoint has taken it; the record being
                    # resolved came from its last parse, which (files never change) still holds
                    doc = self._docs.doc(hpath) if kind == "writes" else None
                tree = fields.held_objects(doc).get(digest) if doc is not None else None
                if tree is not None and doc is not None:
                    return self._checked(hpath, digest, tree, tdir, doc), holder
        path = tdir / OBJECTS / f"{digest}.json"
        try:
            odoc = self._read_doc(path, "object")
        except FileNotFoundError:
            why = f"object {path} is missing"
            if loc is not None or kind_of_holder(holder):
                looked = self.layout.checkpoint_in(tdir, *loc) if loc is not None else holder
                why = f"object {digest} is neither among the objects of {looked} nor in {path}"
            raise MissingReferenceError(str(referrer), pointer or "/", why) from None
        if odoc["sha256"] != digest or not names_object(digest, odoc["tree"]):
            raise FileFormatError(str(path), "/sha256", EDITED)
        return odoc["tree"], str(path)

    def _read_holder(self, tdir: Path, path: Path) -> dict[str, Any] | None:
        """The checkpoint holding an object, None when it is gone (prune keeps its objects in
        objects/ first); one settled before the read goes into the objects index."""
        noting = self.read_holder is not None and not self.trust_kept
        try:
            before = os.lstat(path) if noting else None
            read_at = time.time_ns()
            doc = self._read_doc(path, "checkpoint")
        except FileNotFoundError:
            return None
        if noting and before is not None and self.read_holder is not None:
            self.read_holder(tdir, path, before, fields.held_objects(doc), read_at)
        return doc

    def _checked(self, path: Path, digest: str, tree: Any, tdir: Path, doc: dict[str, Any]) -> Any:
        """An object a file holds, checked against its name; where it is noted for writers."""
        if not self.names(digest, tree):
            raise FileFormatError(str(path), f"/objects/{digest}", EDITED)
        if doc.get("kind") == "checkpoint":  # where references name it (its first home) stays
            self.located.setdefault(tdir, {}).setdefault(digest, (doc["checkpoint_ns"], doc["checkpoint_id"]))
        return tree

    def _names_quietly(self, digest: str, tree: Any) -> bool:
        """``names`` of a derived tree (the objects index): one it cannot even hash (nested
        too deep, a number JSON cannot hold) is no match, and the holder is read instead."""
        try:
            return self.names(digest, tree)
        except (TypeError, ValueError, RecursionError):
            return False

    def names(self, digest: str, tree: Any) -> bool:
        """``names_object``, once per tree a snapshot holds (its files never change in it)."""
        if not self.trust_kept:
            return names_object(digest, tree)
        got = self._named.get(id(tree))
        if got is not None and got[0] is tree and got[1] == digest:
            return True
        if not names_object(digest, tree):
            return False
        self._named[id(tree)] = (tree, digest)
        return True

    def child(self, folder: Path, rel: str) -> Path:
        """``folder / rel``: in a snapshot, a file read there already is found by its text
        (``read_paths``), without a Path parsed per reference (validate asks for every value
        and object of every checkpoint). A text that is no read file's, as pathlib spells it
        (another separator, a ``..``, an absolute ``rel``), is joined as before."""
        if self.read_paths:
            got = self.read_paths.get(f"{folder}{os.sep}{rel}")
            if got is not None:
                return got
        return self.layout.child(folder, rel)

    def sibling(self, path: Path, name: str) -> Path:
        """``path.parent / name`` (``name``: one segment), found as ``child`` finds a file."""
        if self.read_paths:
            head, sep, _ = str(path).rpartition(os.sep)
            if sep:
                got = self.read_paths.get(f"{head}{sep}{name}")
                if got is not None:
                    return got
        return self.layout.sibling(path, name)

    def checkpoint_in(self, tdir: Path, ns: str, cid: str) -> Path:
        """``Layout.checkpoint_in``, a file read in the snapshot found as ``child`` finds it."""
        if ns == "" and self.read_paths:
            return self.child(tdir, f"{CHECKPOINTS}{os.sep}{encode_segment(cid)}.json")
        return self.layout.checkpoint_in(tdir, ns, cid)

    def _checkpoint_text(self, tdir: Path, ns: str, cid: str) -> str:
        """``str(checkpoint_in(...))`` without a Path made: a fresh read of a long thread asks
        for the holder of every object it takes from the objects index."""
        if ns == "":
            return f"{tdir}{os.sep}{CHECKPOINTS}{os.sep}{encode_segment(cid)}.json"
        return str(self.layout.checkpoint_in(tdir, ns, cid))

    def _thread_dir(self, path: Path) -> Path:
        """The thread folder ``path`` lies in; by its name, without a Path made per call
        (every value read asks)."""
        head = self._threads_head
        spath = str(path)
        name = spath[len(head) :].partition(os.sep)[0] if spath.startswith(head) else ""
        got = self._tdirs.get(name) if name else None
        if got is None:
            got = self.layout.threads_dir / path.relative_to(self.layout.threads_dir).parts[0]
            if len(self._tdirs) < CACHE_ENTRIES:
                self._tdirs[got.name] = got
        return got
