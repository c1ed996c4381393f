"""How a put turns channel values into the bodies of its files.

Each channel version a put brings (``new_versions``) is stored in the new checkpoint file under
``new_values``, in one of three shapes:

* ``{"empty": true}``: the channel has no value;
* ``{"value": node}``: the whole value, a readable JSON tree (``{"serde": "msgpack", "json":
  ...}``; None as ``{"json": null}``), or base64 for what is not JSON (bytes, ciphertext);
* ``{"append": {...}}``: a list that extends the version this saver last wrote or read
  (``ListState``), stored as the items appended and where its base lives. After
  ``snapshot_every`` appends in a row, or when a file of the base chain changed on disk, the
  list is stored whole again.

A node whose JSON is over ``large_value_bytes`` goes to ``large/<sha256>.json`` and the body
keeps ``{"large": digest}`` (``ValueWriter.maybe_large``); ``large_digest`` is the one reader of
that rule (core/format/objects.py). Every other channel is referred to where its version already lives
(``ValueWriter.carried_refs``), found by version as InMemorySaver finds it.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any

import orjson
from langchain_core.messages import convert_to_messages
from langgraph.checkpoint.base import ChannelVersions, Checkpoint

from .core.caches import Dep, refresh, stat_key_of
from .core.durable import TOO_DEEP, json_size, too_deep
from .core.errors import InvalidWriteError, RepoCheckpointError
from .core.format.chains import append_body
from .core.format.entries import ValueEntry, appended_weight
from .core.format.objects import (
    Cut,
    Frame,
    KnownChunk,
    input_tag,
    is_pair_tag,
    large_digest,
    location_of,
    named_from,
    object_ref,
    ref_digest,
    weight_problem,
)
from .core.format.packed import msgpack_array_header, starts_structured
from .core.format.records import CheckpointRecord
from .core.format.storing import Host, LargeValues, Prepared, Stored, chunked_list, shared_tree, stored_value
from .core.format.tree import model_fields, msgpack_to_tree, payload_node
from .core.threads import ThreadStore
from .serde import ValueCodec, packed_strings

MISSING: Any = object()  # a channel in new_versions without a value: stored as empty
# the roles of a message input stored as a reference to its message (ValueWriter.message_input)
_ROLES = frozenset({"user", "human", "ai", "assistant", "system"})
ListKey = tuple[str, str, str]  # (thread_id, checkpoint_ns, channel)


@dataclass(kw_only=True)
class ListState:
    """What we last wrote or read of a list channel, to store the next version as an append."""

    version: str | int | float
    ref: str  # where that version's value lives
    count: int
    depth: int
    body: bytes | None = None  # the serde's msgpack items (no array header), when we wrote it
    tree: list[Any] | None = None  # the JSON tree, when we read it from disk
    read: ValueEntry | None = None  # or the entry read, whose tree is made when first compared
    # the files that version's list is rebuilt from, with their stat keys when we wrote or
    # read them: an append is only made onto a chain no one has changed since
    deps: tuple[Dep, ...] = ()
    # what the whole list expands to (objects.weight_problem): an append may not take it past
    # what a read rebuilds (entries.append_entry); None: not known, written whole instead
    weight: tuple[int, int, int] | None = None
    # each item as the files of this version store it (a reference names the file that holds
    # it), with its height, when we wrote every one of them: the next whole copy of the list
    # reuses them (``whole_by_items``) instead of looking each item up again
    items: tuple[list[Any], list[int]] | None = None
    # the chunks of the last whole copy of the list we wrote, each as a later file refers to
    # it (``Sharer.chunked``), and the files holding them with their stat keys when we wrote
    # or found them there: the next whole copy refers to a chunk whose tree is unchanged where
    # it is, if every one of these files is unchanged, instead of hashing and looking it up
    chunks: dict[str, KnownChunk] | None = None
    holders: dict[tuple[str, str], Dep] = field(default_factory=dict)
    # how that copy cut the list, its chunks as later files refer to them (in ``chunks``,
    # under the same check): the next copy cuts only what its new items changed
    frame: Frame | None = None


@dataclass(frozen=True)
class AppendedItems:
    """Items a list channel appended in the file being written: the very objects, their
    bytes as the serializer (and the redactor) gave them, as a list of their own, and its
    tree. msgpack packs a list as its header and each item's bytes, and the redactor rewrites
    each item on its own (redaction.redact_msgpack), so these are the bytes ``codec.dumps``
    gives a list of those objects: a step's write riding in the put is not serialised,
    redacted and unpacked again (tests/test_ride.py)."""

    items: list[Any]
    data: bytes
    tree: list[Any]


@dataclass
class NewValues:
    """What a put stores: bodies for ``new_values``, every channel's ref, the list states to
    remember once the checkpoint is written, and the large files to write before it."""

    bodies: dict[str, dict[str, Any]] = field(default_factory=dict)
    refs: dict[str, str] = field(default_factory=dict)
    states: dict[str, ListState | None] = field(default_factory=dict)
    large: Prepared = field(default_factory=list)

    @property
    def carried(self) -> dict[str, str]:
        """The refs a checkpoint file lists: those of channels it does not hold itself (a
        channel in ``new_values`` is read from the same file; ``ThreadStore`` fills it in)."""
        return {ch: ref for ch, ref in self.refs.items() if ch not in self.bodies}


@dataclass
class ValueWriter:
    """The value storage of one saver: its store, codec, options and list memory.

    Made for each put (the saver's codec changes when it learns a graph's types); ``lists``
    is the saver's own dict, shared, so what one put remembers the next one finds.
    """

    store: ThreadStore
    codec: ValueCodec
    lists: dict[ListKey, ListState]
    large_value_bytes: int
    snapshot_every: int
    shared_weight: tuple[int, int, int] = (0, 0, 0)  # of the tree ``shared`` last stored
    # what the file being written holds of its own (format 4: its objects); None: objects/
    host: Host | None = None
    # message inputs already turned into their messages: (form, role, content, id) -> tree
    inputs: dict[str, tuple[dict[str, str], Any]] = field(default_factory=dict)
    # the parent of the checkpoint being written, whole (None: none, or unread)
    parent: CheckpointRecord | None = None
    # and how many deltas its file is from a whole one (bookkeeping.depth)
    parent_depth: int = 0
    # the file the checkpoint being written goes to (relative to its namespace)
    writing: str = ""
    # the saver's last values stored in large/, shared like ``lists`` (None: none kept)
    recent: LargeValues | None = None
    # the last big value this writer encoded and what it gave (``dumps``)
    encoded: tuple[Any, tuple[str, bytes]] | None = None
    # the items each list channel of this file appended, with their bytes and tree (``dumps``)
    tails: list[AppendedItems] = field(default_factory=list)
    # per channel appended: the base's ref, the items' tree and its weight (``remember``)
    appended: dict[str, tuple[str, list[Any], tuple[int, int, int]]] = field(default_factory=dict)

    @property
    def parent_read(self) -> tuple[CheckpointRecord, int] | None:
        """The parent whole and its depth, as ``checkpoint_values`` read them (None: not read)."""
        return None if self.parent is None else (self.parent, self.parent_depth)

    def for_file(self, thread_id: str, ticket: int, replacing: tuple[str, str] | None = None) -> Host:
        """A new file of ``thread_id`` is written: it holds the objects it introduces. Its
        ``ticket`` (``Pending.deciding``) says which files being written beside it it may
        refer to: those decided before it; never the checkpoint it is (``replacing``: the
        same checkpoint put again replaces the file, and what it held with it)."""
        self.host = self.store.sharing(thread_id, ticket, replacing, self.message_input)
        return self.host

    def message_input(self, node: Any) -> tuple[dict[str, str], Any] | None:
        """A message input (``{"role": "user", "content": ...}``, optionally with ``id``, or
        ``["user", text]``, as a graph is invoked with) and the message LangChain's own
        ``convert_to_messages`` makes of it, which is what ``add_messages`` puts in the
        channel: stored as a reference to that message (objects.Sharer), so its text is
        stored once. Only when the message gives back exactly this input (its content
        equal, its id the given one), else None and the input is stored as it is."""
        if isinstance(node, dict):
            role = node.get("role")
            if (
                not isinstance(role, str)
                or role not in _ROLES
                or "content" not in node
                or not node.keys() <= {"role", "content", "id"}
                or not isinstance(node.get("id", ""), str)
            ):
                return None
            tag, content, ident = input_tag(role, pair=False), node["content"], node.get("id")
            given: Any = dict(node)
        elif isinstance(node, list):
            if len(node) != 2 or not all(isinstance(x, str) for x in node) or node[0] not in _ROLES:
                return None
            tag, content, ident = input_tag(node[0], pair=True), node[1], None
            given = (node[0], node[1])
        else:
            return None
        key = orjson.dumps(node, option=orjson.OPT_SORT_KEYS).decode() + ("p" if is_pair_tag(tag) else "r")
        known = self.inputs.get(key)
        if known is not None:
            return known
        try:
            message = convert_to_messages([given])[0]
            type_, data = self.codec.dumps(message, "checkpoint", "a message input", "/")
        except Exception:
            return None
        if type_ != "msgpack":
            return None
        tree = msgpack_to_tree(data)
        got = model_fields(tree)
        if got is None or _canonical(got.get("content")) != _canonical(content) or got.get("id") != ident:
            return None
        if len(self.inputs) >= 256:
            self.inputs.clear()
        self.inputs[key] = (tag, tree)
        return tag, tree

    def checkpoint_values(
        self,
        thread_id: str,
        ns: str,
        checkpoint: Checkpoint,
        new_versions: ChannelVersions,
        parent_id: str | None,
    ) -> NewValues:
        """The new versions stored in the checkpoint, the others referred to where they live."""
        out = NewValues()
        self.parent = None
        self.writing = self.store.layout.checkpoint_rel(checkpoint["id"])
        self.writing_id = str(checkpoint["id"])
        if parent_id:
            try:
                self.parent, self.parent_depth = self.store.get_parent(thread_id, ns, parent_id)
            except (FileNotFoundError, RepoCheckpointError):
                self.parent = None
        for channel, version in new_versions.items():
            self._store_here(out, thread_id, ns, checkpoint, channel, version)
        carried = self.carried_refs(thread_id, ns, parent_id, checkpoint["channel_versions"], out.refs)
        for channel, ref in list(out.refs.items()):
            if ref == self.writing and channel not in out.bodies:
                # the same checkpoint put again: the value it held goes with the file it replaces
                del out.refs[channel]
                carried[channel] = checkpoint["channel_versions"][channel]
        for channel, version in carried.items():
            # a copy or fork whose version lives nowhere we can point at: store it here
            self._store_here(out, thread_id, ns, checkpoint, channel, version)
        return out

    def _store_here(
        self,
        out: NewValues,
        thread_id: str,
        ns: str,
        checkpoint: Checkpoint,
        channel: str,
        version: str | int | float,
    ) -> None:
        cid = checkpoint["id"]
        value = checkpoint["channel_values"].get(channel, MISSING)
        where = (f"thread {thread_id!r} checkpoint {cid}", f"/new_values/{channel}")
        out.bodies[channel], out.states[channel] = self.body(
            thread_id, ns, channel, version, value, out.large, where
        )
        out.refs[channel] = self.store.layout.checkpoint_rel(cid)

    def remember(self, thread_id: str, ns: str, cid: str, stored: NewValues) -> None:
        """After the checkpoint is written: the lists the next put may append to."""
        layout = self.store.layout
        cpath = layout.checkpoint_path(thread_id, ns, cid)
        for channel, state in stored.states.items():
            key = (thread_id, ns, channel)
            if state is None:
                self.lists.pop(key, None)
                continue
            state.ref = layout.checkpoint_rel(cid)
            # what we just wrote, under the thread's lock, by its stat key alone: a
            # check of its bytes on every later put would cost a read per recent file,
            # and an edit in the same clock tick that changes the item count is still
            # refused on read, naming the edited file
            own: list[Dep] = [(str(cpath), stat_key_of(cpath), None)]
            digest = large_digest(stored.bodies[channel])
            if digest is not None:
                lpath = layout.large_path(thread_id, digest)
                own.append((str(lpath), stat_key_of(lpath), None))
            state.deps = (*own, *state.deps)
            self.kept_chunks(state, self.lists.get(key), (ns, cid), own[0])
            self.lists[key] = state
            if channel in self.appended:  # the next read takes the list as written
                base_ref, tree, weight = self.appended[channel]
                ns_dir = layout.ns_dir(thread_id, ns)
                self.store.values.keep_appended(ns_dir, channel, state.ref, base_ref, tree, weight)

    @staticmethod
    def kept_chunks(state: ListState, before: ListState | None, where: tuple[str, str], own: Dep) -> None:
        """The chunks the next whole copy may refer to: a whole copy's own (in the file just
        written, ``where``, known by its stat key alone, as ``deps``), which each append after
        it carries on."""
        if state.chunks is not None:
            if where in state.holders:  # ``chunk_memo`` left its place for the stat key
                state.holders = {**state.holders, where: own}
        elif state.depth > 0 and before is not None and before.chunks is not None:
            state.chunks, state.holders, state.frame = before.chunks, before.holders, before.frame

    def carried_refs(
        self,
        thread_id: str,
        ns: str,
        parent_id: str | None,
        versions: ChannelVersions,
        refs: dict[str, str],
    ) -> dict[str, str | int | float]:
        """Where the unchanged channels' values live, found by version as InMemorySaver does.

        Usually the parent holds the same version. A ``__copy__`` fork is put under the
        copied checkpoint's parent with no new versions, so its channels can be at versions
        the parent does not have: those are looked up among the namespace's checkpoints.
        Returns the channels found nowhere: the caller stores their values inline.
        """
        missing = [ch for ch in versions if ch not in refs]
        if not missing:
            return {}
        parent: CheckpointRecord | None = self.parent if parent_id else None  # read by this put
        if parent_id and parent is None:
            try:
                parent = self.store.get(thread_id, ns, parent_id)
            except FileNotFoundError:
                parent = None
        ns_dir = self.store.layout.ns_dir(thread_id, ns)
        unresolved: list[str] = []
        for channel in missing:
            if parent is not None and parent.channel_versions.get(channel) == versions[channel]:
                ref = parent.values.get(channel)
                if ref is not None:
                    refs[channel] = ref
                    continue
            state = self.lists.get((thread_id, ns, channel))
            if state is not None and state.version == versions[channel]:
                refs[channel] = state.ref
                continue
            rel = self.store.layout.value_rel(channel, versions[channel])
            if (ns_dir / rel).exists():
                refs[channel] = rel
                continue
            unresolved.append(channel)
        if unresolved:
            self.refs_by_version(thread_id, ns, versions, unresolved, refs)
        return {ch: versions[ch] for ch in unresolved if ch not in refs}

    def refs_by_version(
        self,
        thread_id: str,
        ns: str,
        versions: ChannelVersions,
        channels: list[str],
        refs: dict[str, str],
    ) -> None:
        """Find each channel's ref at its version in any checkpoint of the namespace, newest first."""
        wanted = set(channels)
        for cid in reversed(self.store.checkpoint_ids(thread_id, ns)):
            record = self.store.get(thread_id, ns, cid)
            stored = record.channel_versions
            for channel in [ch for ch in wanted if stored.get(ch) == versions[ch]]:
                ref = record.values.get(channel)
                if ref is not None:
                    refs[channel] = ref
                    wanted.discard(channel)
            if not wanted:
                return

    def dumps(self, value: Any, kind: str, target: str, pointer: str) -> tuple[str, bytes]:
        """``codec.dumps``; the same big value asked again of this writer (one put: the
        step's write the checkpoint holds, of the value it holds, the ``put_writes`` riding
        in it) gives what it gave, not serialised and redacted twice. A writer lives for one
        file: the value is the very object, encoded microseconds before."""
        if self.encoded is not None and self.encoded[0] is value:
            return self.encoded[1]
        tail = self.tail_of(value)
        if tail is not None:
            return "msgpack", tail.data
        got = self.codec.dumps(value, kind, target, pointer)
        if len(got[1]) >= _TREE_OF_BYTES:
            self.encoded = (value, got)
        return got

    def tail_of(self, value: Any) -> AppendedItems | None:
        """The items a list channel of this file appended, when ``value`` is a list of those
        very objects (a step's write riding in the put: the messages the channel appended)."""
        if type(value) is not list or not value:
            return None
        for tail in self.tails:
            if len(tail.items) == len(value) and all(map(operator.is_, tail.items, value)):
                return tail
        return None

    def tree(self, value: Any, target: str, pointer: str) -> Any:
        """Metadata and checkpoint extras: readable even with EncryptedSerializer (``list(filter=...)``
        reads them), as SqliteSaver keeps them."""
        return self.codec.tree(value, "checkpoint", target, pointer)

    def body(
        self,
        thread_id: str,
        ns: str,
        channel: str,
        version: str | int | float,
        value: Any,
        large: Prepared,
        where: tuple[str, str],
    ) -> tuple[dict[str, Any], ListState | None]:
        """How one new channel version is stored: empty, whole, or as the items appended."""
        if value is MISSING:
            return {"empty": True}, None
        type_, data = self.dumps(value, "checkpoint", *where)
        if type_ != "msgpack":
            return {"value": self.value_node(thread_id, type_, data, large, where)}, None
        state: ListState | None = None
        if type(value) is list:
            split = self.codec.split_of(data)
            if split is not None:
                count, body = split
                appended, base = self.as_append(thread_id, ns, channel, count, body, data, value)
                if appended is not None and base is not None:
                    tree = appended["items"]
                    appended["items"] = self.shared(thread_id, tree, large, where, items=True)
                    self.appended[channel] = (base.ref, tree, self.shared_weight)
                    weight = appended_weight(base.weight, self.shared_weight)
                    problem = weight_problem(weight) if weight is not None else None
                    if problem is not None:  # entries.append_entry refuses the same on read
                        why = f"the list with the items appended {problem.replace('expands', 'would expand')}"
                        raise InvalidWriteError("value", where[0], where[1], why)
                    state = ListState(
                        version=version,
                        ref="",
                        count=count,
                        depth=base.depth + 1,
                        body=body,
                        deps=base.deps,
                        weight=weight,
                        items=self.extended(base.items, appended["items"], ns),
                    )
                    return {"append": appended}, state
                packed = (count, body, data)
                try:
                    whole = self.whole_by_items(thread_id, ns, channel, version, packed, large, where)
                except TypeError as exc:  # JSON cannot nest it that deep: refused below, naming it
                    if not too_deep(exc):
                        raise
                    whole = None
                if whole is not None:
                    return whole
                state = ListState(version=version, ref="", count=count, depth=0, body=body)
        stored = self.value_node(thread_id, type_, data, large, where, value)
        if state is not None:
            state.weight = self.shared_weight
        return {"value": stored}, state

    def whole_by_items(
        self,
        thread_id: str,
        ns: str,
        channel: str,
        version: str | int | float,
        packed: tuple[int, bytes, bytes],
        large: Prepared,
        where: tuple[str, str],
    ) -> tuple[dict[str, Any], ListState] | None:
        """A list written whole, item by item then chunked: the same bytes as sharing the whole
        list (``Sharer.chunk_refs``), but the items the version we last wrote already had keep
        the references they had there, so the periodic whole copy of a long conversation
        looks up its new items and its chunks, not every message again. None (the list is
        shared whole) for a message input or a list too big for its file."""
        count, body, data = packed  # the item count, the items' msgpack, the whole msgpack
        state = self.lists.get((thread_id, ns, channel))
        known = self.known_items(state, count, body)
        if known is not None and state is not None and state.body is not None:
            (old_refs, old_heights), start = known, state.count
            tree = msgpack_to_tree(msgpack_array_header(count - start) + body[len(state.body) :])
        else:  # shared item by item once, so that the next whole copy knows them
            if state is None or not starts_structured(body):
                return None  # a first value, or numbers and strings: nothing to look up again
            old_refs, old_heights, tree = [], [], msgpack_to_tree(data)
            if self.host is None or self.host.convert is None or self.host.convert(tree) is not None:
                return None
        host = self.host
        assert host is not None
        files = self.store.files
        refs, weight, new = shared_tree(files, thread_id, tree, large, where, items=True, host=host)
        heights = list(host.item_heights)
        listed = ([*old_refs, *refs], [*old_heights, *heights])
        known_chunks = self.known_chunks(state, ns)
        frame = state.frame if state is not None and known_chunks is not None else None
        out, chunks, chunked, cuts = chunked_list(host, thread_id, *listed, where, known_chunks, frame)
        candidate = {"json": out}
        whole_weight = appended_weight(state.weight, weight) if known is not None and state else weight
        if whole_weight is None or json_size(candidate) > self.large_value_bytes:
            return None
        problem = weight_problem(whole_weight)
        if problem is not None:  # entries.append_entry refuses the same on read
            raise InvalidWriteError("value", where[0], where[1], problem.replace("expands", "would expand"))
        host.adopt(files, thread_id, {**new, **chunks}, self.large_value_bytes, large)
        items = self.extended((old_refs, old_heights), refs, ns)
        after = ListState(version=version, ref="", count=count, depth=0, body=body, weight=whole_weight)
        after.items = items
        after.chunks, after.holders = self.chunk_memo(thread_id, ns, chunked, state, cuts)
        after.frame = self.frame_of((listed[0], len(old_refs)), items, cuts, after.chunks, after.holders)
        return {"value": candidate}, after

    def known_chunks(self, state: ListState | None, ns: str) -> dict[str, KnownChunk] | None:
        """The chunks of the last whole copy of the list, when every file holding one still
        has the stat key it had (the cache rule: one lstat per file) and none is the file
        being written (put again, it is replaced); else None, every chunk looked up."""
        if state is None or not state.chunks or (ns, self.writing_id) in state.holders:
            return None
        deps = refresh(tuple(state.holders.values()))
        if deps is None:
            state.chunks, state.holders = None, {}
            return None
        state.holders = dict(zip(state.holders, deps, strict=True))
        return state.chunks

    def chunk_memo(
        self,
        thread_id: str,
        ns: str,
        chunked: dict[str, KnownChunk],
        state: ListState | None,
        cuts: list[Cut],
    ) -> tuple[dict[str, KnownChunk], dict[tuple[str, str], Dep]]:
        """The chunks of the copy being written, each as a later file refers to it, for the
        next copy: those this file holds (its stat key is added once it is written,
        ``remember``: its place is kept for it) and those held by a file whose parse, holding
        them, is kept with its stat key (``known_chunks`` checked it, or ``locate_object`` just
        read it); any other is looked up again next time. Chunks taken from the last copy's
        frame (``cuts``) are not in ``chunked``: its chunks and their holders are kept too."""
        host = self.host
        assert host is not None
        checked = dict(state.holders) if state is not None and state.chunks else {}
        taken = state is not None and state.chunks is not None and any(cut.settled for cut in cuts)
        holders: dict[tuple[str, str], Dep] = dict(checked) if taken else {}
        memo: dict[str, KnownChunk] = dict(state.chunks or {}) if taken and state is not None else {}
        here = (ns, self.writing_id)
        for key, (tree, ref, height) in chunked.items():
            where, name = location_of(ref), ref_digest(ref)
            if where is not None:
                dep = checked.get(where) or self.holder(thread_id, where, name)
                if dep is None:
                    memo.pop(key, None)
                    continue
                holders[where] = dep
            elif name in host.objects:
                ref = object_ref(name, here)
                holders[here] = (str(self.store.layout.checkpoint_path(thread_id, *here)), None, None)
            else:
                memo.pop(key, None)
                continue  # in objects/ (too big for its file): looked up again
            memo[key] = (tree, ref, height)
        if taken:  # only the chunks of this copy, and their holders: the old ones are no use
            live = {key for cut in cuts for key in cut.keys}
            memo = {key: chunk for key, chunk in memo.items() if key in live or key in chunked}
            places = {location_of(ref) for _, ref, _ in memo.values()}
            holders = {where: dep for where, dep in holders.items() if where in places}
        return memo, holders

    @staticmethod
    def frame_of(
        listed: tuple[list[Any], int],
        items: tuple[list[Any], list[int]] | None,
        cuts: list[Cut],
        memo: dict[str, KnownChunk],
        holders: dict[tuple[str, str], Dep],
    ) -> Frame | None:
        """How the copy being written cut its list (``listed``: its items as this file holds
        them, and how many came as later files refer to them), for the next copy
        (``Sharer.chunk_refs``): each level up to its first chunk not in ``memo`` (looked up
        again next time), each chunk as later files refer to it, and how many leading items
        and chunks this file refers to so (``items``: each item as later files refer to it)."""
        if items is None or not cuts:
            return None
        whole, old = listed
        settled = old + next(
            (i for i, r in enumerate(whole[old:]) if items[0][old + i] is not r), len(whole) - old
        )
        return Frame(whole, settled, tuple(_later_cut(cut, memo, holders) for cut in cuts))

    def holder(self, thread_id: str, where: tuple[str, str], name: str) -> Dep | None:
        """How to tell later that the checkpoint ``where`` still holds the object ``name``: the
        stat key its kept parse was read with (``DocCache.dep``), when that parse holds it."""
        files = self.store.files
        path = self.store.layout.checkpoint_path(thread_id, *where)
        doc = files.docs.doc(path)
        if doc is None or name not in (doc.get("objects") or {}):
            return None
        dep = files.docs.dep(path, doc)
        return dep if dep[1] is not None else None

    def known_items(
        self, state: ListState | None, count: int, body: bytes
    ) -> tuple[list[Any], list[int]] | None:
        """The stored items of the version we last wrote, when this list extends it and every
        file it was built from is unchanged (the cache rule); else None."""
        if state is None or state.items is None or state.body is None or count < state.count:
            return None
        if state.ref == self.writing or not body.startswith(state.body):
            return None
        deps = refresh(state.deps) if state.deps else None
        if deps is None:
            return None
        state.deps = deps
        return state.items

    def extended(
        self, base: tuple[list[Any], list[int]] | None, refs: list[Any], ns: str
    ) -> tuple[list[Any], list[int]] | None:
        """``base``'s items and the items just shared (their heights from the host), each as
        a later file refers to it: an object this file holds gets this file's ``$in``. None
        when not every item is known, or an item is no reference and holds one (such an item
        is not taken apart here: the next whole copy shares the list again)."""
        host = self.host
        if base is None or host is None or len(host.item_heights) != len(refs):
            return None
        out = list(base[0])
        for ref in refs:
            named = named_from(ref, host.objects, ns, self.writing_id)
            if named is None:
                return None
            out.append(named)
        return out, [*base[1], *host.item_heights]

    def as_append(
        self, thread_id: str, ns: str, channel: str, count: int, body: bytes, data: bytes, value: list[Any]
    ) -> tuple[dict[str, Any] | None, ListState | None]:
        """The appended items when this list extends the last version we saw, and that version
        (the saver may let the thread go meanwhile: it is looked up once), else None, None.
        Appended after the bytes we wrote (``value``: the list), they are kept (``tails``)."""
        state = self.lists.get((thread_id, ns, channel))
        if state is None or state.depth + 1 > self.snapshot_every or count < state.count:
            return None, None
        if state.ref == self.writing:
            return None, None  # the same checkpoint put again: the file it would build on is being replaced
        deps = refresh(state.deps) if state.deps else None
        if deps is None:
            return None, None  # the base was changed (by hand, git, prune) since we wrote or read it
        state.deps = deps
        items: list[Any] | None = None
        tail: AppendedItems | None = None
        if state.body is not None and body.startswith(state.body):
            packed = msgpack_array_header(count - state.count) + body[len(state.body) :]
            items = msgpack_to_tree(packed)
            tail = AppendedItems(value[state.count :], packed, items)
        elif state.tree is not None or state.read is not None:
            if state.tree is None and state.read is not None:
                state.tree, state.read = state.read.tree, None
            full = msgpack_to_tree(data)
            if full[: state.count] == state.tree:
                items = full[state.count :]
        if items is None or json_size(items) > self.large_value_bytes:
            return None, None
        if tail is not None:
            self.tails.append(tail)
        parent = self.parent
        if (
            parent is None
            or parent.values.get(channel) != state.ref
            or not _same_version(parent.channel_versions.get(channel), state.version)
        ):  # not the list its parent holds: named (format 4 leaves the parent's unnamed)
            return append_body(state.count, items, (state.version, state.ref)), state
        return append_body(state.count, items), state

    def value_node(
        self,
        thread_id: str,
        serde: str,
        data: bytes,
        large: Prepared,
        where: tuple[str, str],
        value: Any = MISSING,
    ) -> dict[str, Any]:
        """The node the serializer's bytes are stored as (a JSON tree for msgpack, format 4, and
        for None; base64 else). A big value this saver stored in the thread just before (the step's
        ``put_writes`` of what the checkpoint now holds) is referred to where it is, its files
        intact, instead of being built, shared and hashed again (``LargeValues``). ``value``:
        what the serializer was given, when known (``tree_of``)."""
        stored = self.recent.find(self.store.files, thread_id, serde, data, large) if self.recent else None
        if stored is None:
            # format 4: a json node is msgpack's (base64 only for what is not: a 5 MB value's
            # base64 was made, then dropped, on every first put)
            node: dict[str, Any]
            exact = self.codec.strings_of(value, data) if serde == "msgpack" else None
            strings = None
            if exact is not None:  # strings only, packed by the codec: what it packed is the tree
                node, strings = {"json": exact[0]}, exact[1]
            elif serde == "msgpack":
                tail = self.tail_of(value)
                node = {"json": tree_of(value, data) if tail is None or tail.data is not data else tail.tree}
            else:  # the serde's null (None, a trigger's value) is JSON too: payload_node
                node = payload_node(serde, data)
            stored = self.stored(thread_id, node, large, where, strings)
            if self.recent is not None:
                self.recent.keep(thread_id, serde, data, stored)
        elif stored.weight is not None:
            self.shared_weight = stored.weight
        return stored.node

    def stored_node(
        self, thread_id: str, node: dict[str, Any], large: Prepared, where: tuple[str, str] | None = None
    ) -> dict[str, Any]:
        """``stored``'s node."""
        return self.stored(thread_id, node, large, where).node

    def stored(
        self,
        thread_id: str,
        node: dict[str, Any],
        large: Prepared,
        where: tuple[str, str] | None = None,
        strings: int | None = None,
    ) -> Stored:
        """A node as stored (core/format/storing.py); remembers the weight of its shared tree. A node
        the serializer took but JSON cannot hold for its depth is refused, naming where.
        ``strings``: the node's tree is strings only, of so many characters (``stored_value``)."""
        try:
            files, limit = self.store.files, self.large_value_bytes
            stored = stored_value(files, thread_id, node, limit, large, where, self.host, strings)
        except TypeError as exc:
            if not too_deep(exc):
                raise
            target, pointer = where if where is not None else (f"thread {thread_id!r}", "/")
            raise InvalidWriteError("value", target, pointer, TOO_DEEP) from None
        if stored.weight is not None:
            self.shared_weight = stored.weight
        return stored

    def shared(
        self,
        thread_id: str,
        tree: Any,
        large: Prepared,
        where: tuple[str, str] | None = None,
        *,
        items: bool = False,
    ) -> Any:
        """The tree with its shared subtrees replaced by references (core/format/storing.py)."""
        out, self.shared_weight, new = shared_tree(
            self.store.files, thread_id, tree, large, where, items=items, host=self.host
        )
        if self.host is not None:
            self.host.adopt(self.store.files, thread_id, new, self.large_value_bytes, large)
        return out


#: msgpack shorter than this is unpacked as it is (``tree_of``)
_TREE_OF_BYTES = 64 * 1024


def tree_of(value: Any, data: bytes) -> Any:
    """``msgpack_to_tree(data)``, where ``data`` is what the serializer (and the redactor)
    made of ``value``. A big list of strings is its own tree: when the strings pack, as
    exact ``str`` (``OPT_PASSTHROUGH_SUBCLASS`` refuses a subclass), to these very bytes,
    unpacking them gives those strings back, and the tree of a list of strings is the list.
    Packing and comparing is a third of unpacking 50,000 strings and making their tree
    (anything else, or bytes the redactor changed: unpacked as before); a list the codec
    packed so itself is not packed again (``ValueCodec.strings_of``: ``value_node``). The
    copy that was packed is returned: what the bytes hold, whatever the app does with its list."""
    packed = packed_strings(value, least=0) if len(data) >= _TREE_OF_BYTES else None
    if packed is not None and packed[0] == data:
        return packed[2]
    return msgpack_to_tree(data)


def _later_cut(cut: Cut, memo: dict[str, KnownChunk], holders: dict[tuple[str, str], Dep]) -> Cut:
    """A level of a copy's chunks (``Sharer.cuts``) as a later file refers to them (from
    ``memo``, which ``chunk_memo`` made), up to the first not there; ``settled``: how many
    leading ones the copy's file refers to so too."""
    refs, settled = cut.refs[: cut.settled], cut.settled
    for key, ref in zip(cut.keys[cut.settled :], cut.refs[cut.settled :], strict=True):
        known = memo.get(key)
        if known is None or ref_digest(known[1]) != ref_digest(ref):  # two chunks of one key
            break
        place = location_of(known[1])
        if place is not None and place not in holders:
            break
        if settled == len(refs) and known[1] == ref:
            settled += 1
        refs.append(known[1])
    n = len(refs)
    return Cut(cut.keys[:n], refs, cut.heights[:n], cut.ends[:n], settled)


def _canonical(tree: Any) -> bytes:
    """A tree's bytes with keys sorted: equal only for equal trees, 1 and 1.0 and True apart."""
    return orjson.dumps(tree, option=orjson.OPT_SORT_KEYS)


def _same_version(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b
