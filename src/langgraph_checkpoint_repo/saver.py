"""RepoSaver: the LangGraph checkpointer contract over the file store.

Every method has one synchronous core; the async twins run that core in a
worker thread so disk I/O never blocks the event loop, and nothing here
depends on a loop, so sync calls from inside a running loop are fine too.

Write path: saver -> codec (values to JSON trees) -> validation -> durable
write, checkpoint file last (it is the commit point). Read path is the mirror.
"""

from __future__ import annotations

import asyncio
import bisect
import builtins
import copy
import json
import os
import random
import sys
import time
from collections.abc import AsyncIterator, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
    PendingWrite,
    get_checkpoint_id,
    get_checkpoint_metadata,
    writes_sort_key,
)
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.pregel import Pregel

from . import codec as codec_mod
from ._compat import with_msgpack_allowlist
from .codec import ValueCodec, graph_fix
from .durable import check_lock_timeout, json_size
from .errors import (
    FileFormatError,
    MissingReferenceError,
    RepoCheckpointError,
    UnrevivableValueError,
)
from .graph_types import GraphViews, graph_allowlist, graph_name
from .layout import encode_segment, find_default_root
from .redaction import RedactOption, Redactor, resolve_redactor
from .store import (
    MAX_APPEND_DEPTH,
    MAX_FILE_BYTES,
    RACY_NS,
    ChainGuard,
    Dep,
    FileStore,
    ValueEntry,
    digest_node,
    msgpack_array_header,
    msgpack_array_split,
    refresh,
    stat_key_of,
)
from .validation import RESERVED_EXTRA_KEYS, SCHEMA_VERSION

_MISSING = object()
# the Checkpoint keys kept under "checkpoint"; its "id" is the file's checkpoint_id (format 2)
_CHECKPOINT_KEYS = ("v", "ts", "channel_versions", "versions_seen", "updated_channels")


@dataclass
class _ListState:
    """What we last wrote or read of a list channel, to store the next version as an append."""

    version: str | int | float
    ref: str  # where that version's value lives
    count: int
    depth: int
    body: bytes | None  # the serde's msgpack items (no array header), when we wrote it
    tree: list[Any] | None  # the JSON tree, when we read it from disk
    # the files that version's list is rebuilt from, with their stat keys when we wrote or
    # read them: an append is only made onto a chain no one has changed since
    deps: tuple[Dep, ...] = ()


class RepoSaver(BaseCheckpointSaver[str]):
    """A checkpointer that keeps graph state as reviewable JSON files in the repository.

    Args:
        root: folder of the state; default ``.langgraph`` at the top of the
            current git work tree (the current folder outside git).
        serde: serializer; default LangGraph's JsonPlusSerializer. Whatever the serde, the
            saver checks every stored value against its own strict msgpack allowlist
            (LangGraph's safe types, the calling graph's state types, ``allowlist``) before
            the serde sees it; a serde that allows every type does not widen it. With an
            ``EncryptedSerializer`` a value stored in the clear is refused.
        allowlist: extra ``(module, name)`` types a stored value may construct.
        durable: fsync every file and folder before returning (default). False
            skips fsync for throwaway runs: files stay atomic, not crash-durable.
        large_value_bytes: values whose JSON is larger than this go to a file of
            their own named by content hash; smaller ones sit inline in the
            checkpoint that introduced their version.
            From 0 to the 256 MiB a read accepts per file.
        snapshot_every: a list that grows by appending is stored as the appended
            items only; after this many appends in a row a full copy is written.
            From 0 (every version whole) to 1024, the longest append chain a read
            follows, so whatever a saver writes a fresh saver reads back.
        lock_timeout: seconds to wait for another writer of the same thread, from 0
            to a day (a timeout that never ends would be a hang).
        redact: keeps secrets out of the files (docs/secrets.md). Default (``True``):
            substrings that look like API keys and tokens (OpenAI, Anthropic, AWS,
            GitHub, Slack, Google, Stripe, JWTs, PEM private keys, bearer tokens) are
            stored as ``[REDACTED:<kind>]`` in values, metadata and pending writes.
            ``False`` stores values verbatim; a function ``str -> str`` or patterns
            (regex strings, ``re.Pattern``, ``{kind: pattern}``) are applied after the
            defaults; a ``redaction.Redactor`` gives full control.
        unsafe_allow_pickle: load (and write) pickle payloads. Unpickling a file runs any
            code it holds, so this is for roots whose every file you trust; by default a
            pickle payload is refused on read and a value that only pickles is refused on write.
    """

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        *,
        serde: SerializerProtocol | None = None,
        allowlist: Collection[tuple[str, ...]] | None = None,
        durable: bool = True,
        large_value_bytes: int = 8 * 1024,
        snapshot_every: int = 64,
        lock_timeout: float = 60.0,
        redact: RedactOption = True,
        unsafe_allow_pickle: bool = False,
    ) -> None:
        _check_int_option("large_value_bytes", large_value_bytes, 0, MAX_FILE_BYTES)
        _check_int_option("snapshot_every", snapshot_every, 0, MAX_APPEND_DEPTH)
        check_lock_timeout(lock_timeout)
        if serde is None:
            serde = JsonPlusSerializer(allowed_msgpack_modules=list(allowlist or []) or None)
        elif allowlist and isinstance(
            serde.serde if isinstance(serde, EncryptedSerializer) else serde, JsonPlusSerializer
        ):  # a strict serde of the caller's must construct these types too
            serde = with_msgpack_allowlist(serde, allowlist)
        super().__init__(serde=serde)
        self.unsafe_allow_pickle = unsafe_allow_pickle
        # the saver's own additions to LangGraph's safe types: checked whatever the serde
        self._allowlist: frozenset[tuple[str, ...]] = _allow_keys(allowlist or ())
        path = Path(root) if root is not None else find_default_root()
        self.root = path.absolute()
        self.store = FileStore(self.root, durable=durable, lock_timeout=lock_timeout)
        # applied by the codec to every value, metadata and write before any tree is built
        self.redactor: Redactor | None = resolve_redactor(redact)
        self._fix: codec_mod.Fix | None = None  # how a refused type is allowed
        self.codec = self._new_codec()
        self.large_value_bytes = large_value_bytes
        self.snapshot_every = snapshot_every
        self._lists: dict[tuple[str, str, str], _ListState] = {}
        # one view per calling graph, with that graph's types (None: this is such a view)
        self._graph_views: GraphViews | None = GraphViews()

    def _learn_graph_types(self, depth: int) -> RepoSaver:
        """This saver as the graph calling the read entry ``depth`` frames up reads it: its
        own view, under the graph's state types too (graph_types.py). Not a graph: itself."""
        if self._graph_views is None:
            return self
        return self._graph_views.for_caller(self, sys._getframe(depth + 1), self._graph_view)

    def _graph_view(self, graph: Pregel[Any, Any]) -> RepoSaver:
        grown = self.with_allowlist(graph_allowlist(graph))
        view = copy.copy(self) if grown is self else grown
        view._graph_views = None
        view._fix = graph_fix(graph_name(graph))
        view.codec = view._new_codec()
        return view

    def _new_codec(self) -> ValueCodec:
        """The codec for the current serde, under the saver's allowlist and pickle option."""
        return ValueCodec(
            self.serde,
            self.redactor,
            allowlist=self._allowlist,
            unsafe_allow_pickle=self.unsafe_allow_pickle,
            fix=self._fix,
        )

    def with_allowlist(self, extra_allowlist: Collection[tuple[str, ...]]) -> RepoSaver:
        clone = super().with_allowlist(extra_allowlist)
        assert isinstance(clone, RepoSaver)
        extra = _allow_keys(extra_allowlist)
        if clone is self and extra <= self.codec.allowed:
            return self
        grown = copy.copy(self) if clone is self else clone  # a serde allowing every type returns self
        grown._allowlist = self._allowlist | extra
        grown.codec = grown._new_codec()
        if grown._graph_views is not None:
            grown._graph_views = GraphViews()  # its graphs' views widen it, not this saver
        return grown

    # ------------------------------------------------------------------
    # reading
    # ------------------------------------------------------------------
    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self._learn_graph_types(0)._get_tuple(config)

    def _get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        thread_id, ns = _thread_ns(config)
        checkpoint_id = get_checkpoint_id(config)
        for attempt in range(5):
            cid = checkpoint_id
            if not cid:
                ids = self.store.checkpoint_ids(thread_id, ns)
                if not ids:
                    return None
                cid = ids[-1]
            try:
                return self._tuple(self.store.header(thread_id, ns, cid), remember_lists=not checkpoint_id)
            except (FileNotFoundError, MissingReferenceError):
                # removed while we read it (delete or prune in another process): that is
                # "not found", or for the latest, look again; anything else is damage
                if self.store.layout.checkpoint_path(thread_id, ns, cid).exists() or attempt == 4:
                    raise
                if checkpoint_id:
                    return None
                self.store.drop_listing(self.store.layout.checkpoints_dir(thread_id, ns))
        return None

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        if limit is not None and limit <= 0:
            return
        view = self._learn_graph_types(0)
        if view is not self:
            yield from view.list(config, filter=filter, before=before, limit=limit)
            return
        conf = config["configurable"] if config else {}
        want_id = conf.get("checkpoint_id")
        before_id = get_checkpoint_id(before) if before else None
        threads = [str(conf["thread_id"])] if conf.get("thread_id") is not None else self.store.thread_ids()
        ns_filter = conf.get("checkpoint_ns")
        groups: builtins.list[tuple[str, str, builtins.list[str]]] = []
        for thread_id in threads:
            namespaces = [ns_filter] if ns_filter is not None else self.store.namespaces(thread_id)
            for ns in namespaces:
                ids = self.store.checkpoint_ids(thread_id, ns)
                if want_id is not None:
                    ids = [i for i in ids if i == want_id]
                if before_id is not None:
                    ids = ids[: bisect.bisect_left(ids, before_id)]
                if ids:
                    groups.append((thread_id, ns, ids))
        ordered: Iterable[tuple[str, str, str]]
        if len(groups) == 1:
            thread_id, ns = groups[0][0], groups[0][1]
            ordered = ((cid, thread_id, ns) for cid in reversed(groups[0][2]))
        else:  # newest first across threads and namespaces, as SqliteSaver orders them
            ordered = sorted(((c, t, n) for t, n, ids in groups for c in ids), reverse=True)
        wanted = builtins.list(filter.items()) if filter else []
        remaining = limit
        for cid, thread_id, ns in ordered:
            try:
                if wanted:
                    meta = self._filter_meta(thread_id, ns, cid)
                    if any(meta.get(k) != v for k, v in wanted):
                        continue
                tup = self._tuple(self.store.cached_header(thread_id, ns, cid))
            except (FileNotFoundError, MissingReferenceError):
                # removed since it was listed (prune or delete in another process): skip it;
                # anything else missing is damage, and raises
                if self.store.layout.checkpoint_path(thread_id, ns, cid).exists():
                    raise
                continue
            yield tup
            if remaining is not None:
                remaining -= 1
                if remaining <= 0:
                    return

    def _filter_meta(self, thread_id: str, ns: str, cid: str) -> dict[str, Any]:
        """Decoded metadata, kept per checkpoint so filters scan thousands quickly: reused
        while its file's stat key is unchanged (one lstat), so a hand edit is seen."""
        per_ns = self.store.meta.setdefault((thread_id, ns), {})
        hit = per_ns.get(cid)
        if hit is not None and stat_key_of(hit[0]) == hit[1]:
            return hit[2]  # type: ignore[no-any-return]
        path = self.store.layout.checkpoint_path(thread_id, ns, cid)
        st = os.lstat(path)  # before the read: an edit after it changes the key
        doc = self.store.header(thread_id, ns, cid)
        meta = self._decode_tree(doc["metadata"], self._where(doc, "/metadata"), str(path), "/metadata")
        if time.time_ns() - st.st_mtime_ns > RACY_NS:  # else it may change again unseen: re-read
            per_ns[cid] = (str(path), (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino), meta)
        else:
            per_ns.pop(cid, None)
        return meta  # type: ignore[no-any-return]

    def _tuple(self, doc: dict[str, Any], remember_lists: bool = False) -> CheckpointTuple:
        thread_id, ns, cid = doc["thread_id"], doc["checkpoint_ns"], doc["checkpoint_id"]
        ns_dir = self.store.layout.ns_dir(thread_id, ns)
        values: dict[str, Any] = {}
        versions = doc["checkpoint"]["channel_versions"]
        for channel, ref in doc["values"].items():
            entry = self.store.value_entry(ns_dir, channel, versions.get(channel), ref)
            if entry.empty:
                continue
            where = f"thread {thread_id!r} checkpoint {cid} channel {channel!r} ({entry.where})"
            values[channel] = self._revive(entry, where)
            if remember_lists and isinstance(entry.tree, list):
                key = (thread_id, ns, channel)
                known = self._lists.get(key)
                if known is None or known.version != versions[channel]:
                    deps = entry.deps if entry.checkable else ((entry.file, None, None),)
                    self._lists[key] = _ListState(
                        versions[channel], ref, len(entry.tree), entry.depth, None, entry.tree, deps
                    )
        stored = doc["checkpoint"]
        checkpoint: dict[str, Any] = {
            "v": stored["v"],
            "id": cid,
            "ts": stored["ts"],
            "channel_values": values,
            "channel_versions": dict(stored["channel_versions"]),
            "versions_seen": {k: dict(v) for k, v in stored["versions_seen"].items()},
        }
        if "updated_channels" in stored:
            uc = stored["updated_channels"]
            checkpoint["updated_channels"] = list(uc) if uc is not None else None
        cpath = str(self.store.layout.checkpoint_path(thread_id, ns, cid))
        for key, tree in stored.get("extra", {}).items():
            if key in RESERVED_EXTRA_KEYS or key in checkpoint:
                raise FileFormatError(
                    cpath,
                    f"/checkpoint/extra/{_escape(key)}",
                    f"{key!r} is a key of the checkpoint itself and cannot come from extra",
                )
            pointer = f"/checkpoint/extra/{key}"
            checkpoint[key] = self._decode_tree(tree, self._where(doc, pointer), cpath, pointer)
        metadata = self._decode_tree(doc["metadata"], self._where(doc, "/metadata"), cpath, "/metadata")
        parent = doc["parent_checkpoint_id"]
        return CheckpointTuple(
            config=_config(thread_id, ns, cid),
            checkpoint=checkpoint,  # type: ignore[arg-type]
            metadata=metadata,
            parent_config=_config(thread_id, ns, parent) if parent else None,
            pending_writes=self._pending_writes(thread_id, ns, cid),
        )

    def _pending_writes(self, thread_id: str, ns: str, cid: str) -> builtins.list[PendingWrite]:
        merged: dict[tuple[str, int], tuple[str, str, str, Any, Path, int]] = {}
        for path, doc in self.store.writes_docs(thread_id, ns, cid):
            for i, w in enumerate(doc["writes"]):
                key = (doc["task_id"], w["idx"])
                if w["idx"] >= 0 and key in merged:
                    continue
                merged[key] = (doc["task_id"], w["channel"], doc["task_path"], w["value"], path, i)
        out: builtins.list[PendingWrite] = []
        for key in sorted(merged, key=lambda k: writes_sort_key(merged[k][2], *k)):
            task_id, channel, _, node, path, i = merged[key]
            where = (
                f"thread {thread_id!r} checkpoint {cid} pending write {channel!r} of task {task_id} "
                f"({path} at /writes/{i}/value)"
            )
            out.append((task_id, channel, self._revive_node(node, path, where, f"/writes/{i}/value")))
        return out

    def _where(self, doc: dict[str, Any], pointer: str) -> str:
        path = self.store.layout.checkpoint_path(doc["thread_id"], doc["checkpoint_ns"], doc["checkpoint_id"])
        return f"thread {doc['thread_id']!r} checkpoint {doc['checkpoint_id']} ({path} at {pointer})"

    def _decode_tree(self, tree: Any, where: str, file: str = "", root: str = "") -> Any:
        """Metadata and checkpoint extras: trees the saver keeps readable even when it encrypts.
        ``file`` and ``root`` (its pointer there) let an error name where inside it a type
        rejected its data."""
        entry = ValueEntry(False, tree, None, frozenset(codec_mod.named_types(tree)), 0, where)
        entry.file, entry.root = file, root
        return self._revive(entry, where, readable=True)

    def _revive_node(self, node: dict[str, Any], path: Path, where: str, pointer: str = "") -> Any:
        node, holder = self.store.resolve_node(node, path, pointer)
        if holder != path:
            where = f"{where} (value in {holder})"
        entry = FileStore.entry_from_node(node, str(holder))
        entry.file, entry.root = str(holder), f"{pointer}/json" if holder == path else "/value/json"
        return self._revive(entry, where)

    def _revive(self, entry: ValueEntry, where: str, *, readable: bool = False) -> Any:
        """Revive a value, refusing (before any import) types outside the allowlist.

        Every kind of stored payload passes the saver's checks before the serde sees it: a
        JSON tree (``readable``: metadata, which is never encrypted) by the types it names,
        a base64 payload by the codec (decrypted, parsed and checked, or refused)."""
        if not readable and (entry.raw is None or "+" not in entry.raw[0]):
            self.codec.refuse_plaintext(where)
        self.codec.check_types(entry.types, where, lambda key: codec_mod.locate_type(entry, key))
        if entry.raw is not None:
            return self.codec.loads(entry.raw, where, entry.locate)
        if not entry.types and self.codec.revives_plain_trees:
            try:
                return codec_mod.plain_value(entry.tree)
            except (ValueError, TypeError, KeyError) as exc:
                raise UnrevivableValueError(f"{where}: malformed value: {exc}") from exc
        try:
            typed = entry.typed()
        except FileFormatError as exc:
            raise UnrevivableValueError(f"{where}: {exc}") from exc
        return self.codec.loads_checked(typed[1], where, entry.locate)

    # writing
    # ------------------------------------------------------------------
    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        thread_id, ns = _thread_ns(config)
        parent_id = config["configurable"].get("checkpoint_id")
        cid = checkpoint["id"]
        layout = self.store.layout
        own_ref = layout.checkpoint_rel(cid)
        values = checkpoint["channel_values"]
        with self.store.thread_lock(thread_id):
            large: builtins.list[tuple[Path, bytes]] = []
            new_values: dict[str, Any] = {}
            refs: dict[str, str] = {}
            states: dict[str, _ListState | None] = {}
            for channel, version in new_versions.items():
                where = (f"thread {thread_id!r} checkpoint {cid}", f"/new_values/{channel}")
                body, state = self._body(
                    thread_id, ns, channel, version, values.get(channel, _MISSING), large, where
                )
                new_values[channel] = body
                refs[channel] = own_ref
                states[channel] = state
            carried = self._carried_refs(thread_id, ns, parent_id, checkpoint["channel_versions"], refs)
            for channel in carried:
                # a copy or fork whose version lives nowhere we can point at: store it here
                where = (f"thread {thread_id!r} checkpoint {cid}", f"/new_values/{channel}")
                body, state = self._body(
                    thread_id, ns, channel, carried[channel], values.get(channel, _MISSING), large, where
                )
                new_values[channel] = body
                refs[channel] = own_ref
                states[channel] = state
            stored: dict[str, Any] = {k: checkpoint[k] for k in _CHECKPOINT_KEYS if k in checkpoint}  # type: ignore[literal-required]
            target = f"thread {thread_id!r} checkpoint {cid}"
            extra = {
                k: self._tree(v, target, f"/checkpoint/extra/{k}")
                for k, v in checkpoint.items()
                if k not in _CHECKPOINT_KEYS and k not in ("id", "channel_values")
            }
            if extra:
                stored["extra"] = extra
            cdoc: dict[str, Any] = {
                "schema_version": SCHEMA_VERSION,
                "kind": "checkpoint",
                "thread_id": thread_id,
                "checkpoint_ns": ns,
                "checkpoint_id": cid,
                "parent_checkpoint_id": parent_id,
                "metadata": self._tree(get_checkpoint_metadata(config, metadata), target, "/metadata"),
                "checkpoint": stored,
                "values": refs,
            }
            if new_values:
                cdoc["new_values"] = new_values
            cpath = layout.checkpoint_path(thread_id, ns, cid)
            # large values first, the checkpoint (the commit point) last
            prepared = self.store.prepare("checkpoint", cdoc, cpath)
            self.store.write([large, [prepared]])
            self.store.remember(cpath, cdoc, prepared[1])
            for channel, state in states.items():
                key = (thread_id, ns, channel)
                if state is None:
                    self._lists.pop(key, None)
                else:
                    state.ref = own_ref
                    # what we just wrote, under the thread's lock, by its stat key alone: a
                    # check of its bytes on every later put would cost a read per recent file,
                    # and an edit in the same clock tick that changes the item count is still
                    # refused on read, naming the edited file
                    own: builtins.list[Dep] = [(str(cpath), stat_key_of(cpath), None)]
                    node = new_values[channel].get("value")
                    if isinstance(node, dict) and "large" in node:
                        lpath = layout.large_path(thread_id, node["large"])
                        own.append((str(lpath), stat_key_of(lpath), None))
                    state.deps = (*own, *state.deps)
                    self._lists[key] = state
        return _config(thread_id, ns, cid)

    def _carried_refs(
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
        parent: dict[str, Any] | None = None
        if parent_id:
            try:
                parent = self.store.header(thread_id, ns, parent_id)
            except FileNotFoundError:
                parent = None
        ns_dir = self.store.layout.ns_dir(thread_id, ns)
        unresolved: builtins.list[str] = []
        for channel in missing:
            if (
                parent is not None
                and parent["checkpoint"]["channel_versions"].get(channel) == versions[channel]
            ):
                ref = parent["values"].get(channel)
                if ref is not None:
                    refs[channel] = ref
                    continue
            state = self._lists.get((thread_id, ns, channel))
            if state is not None and state.version == versions[channel]:
                refs[channel] = state.ref
                continue
            rel = self.store.layout.value_rel(channel, versions[channel])
            if (ns_dir / rel).exists():
                refs[channel] = rel
                continue
            unresolved.append(channel)
        if unresolved:
            self._refs_by_version(thread_id, ns, versions, unresolved, refs)
        return {ch: versions[ch] for ch in unresolved if ch not in refs}

    def _refs_by_version(
        self,
        thread_id: str,
        ns: str,
        versions: ChannelVersions,
        channels: builtins.list[str],
        refs: dict[str, str],
    ) -> None:
        """Find each channel's ref at its version in any checkpoint of the namespace, newest first."""
        wanted = set(channels)
        for cid in reversed(self.store.checkpoint_ids(thread_id, ns)):
            doc = self.store.header(thread_id, ns, cid)
            stored = doc["checkpoint"]["channel_versions"]
            for channel in [ch for ch in wanted if stored.get(ch) == versions[ch]]:
                ref = doc["values"].get(channel)
                if ref is not None:
                    refs[channel] = ref
                    wanted.discard(channel)
            if not wanted:
                return

    def _tree(self, value: Any, target: str, pointer: str) -> Any:
        # readable even with EncryptedSerializer (list(filter=...) reads it), as SqliteSaver does
        return self.codec.tree(value, "checkpoint", target, pointer)

    def _body(
        self,
        thread_id: str,
        ns: str,
        channel: str,
        version: str | int | float,
        value: Any,
        large: builtins.list[tuple[Path, bytes]],
        where: tuple[str, str],
    ) -> tuple[dict[str, Any], _ListState | None]:
        """How one new channel version is stored: empty, whole, or as the items appended."""
        if value is _MISSING:
            return {"empty": True}, None
        type_, data = self.codec.dumps(value, "checkpoint", *where)
        if type_ != "msgpack":
            node: dict[str, Any] = {"serde": type_, "base64": codec_mod._b64(data)}
            return {"value": self._maybe_large(thread_id, node, large)}, None
        state: _ListState | None = None
        if type(value) is list:
            split = msgpack_array_split(data)
            if split is not None:
                count, body = split
                appended = self._as_append(thread_id, ns, channel, count, body, data)
                if appended is not None:
                    base_deps = self._lists[(thread_id, ns, channel)].deps
                    state = _ListState(version, "", count, appended["depth"], body, None, base_deps)
                    return {"append": appended}, state
                state = _ListState(version, "", count, 0, body, None)
        node = {"serde": "msgpack", "json": codec_mod.msgpack_to_tree(data)}
        return {"value": self._maybe_large(thread_id, node, large)}, state

    def _as_append(
        self, thread_id: str, ns: str, channel: str, count: int, body: bytes, data: bytes
    ) -> dict[str, Any] | None:
        """The appended items when this list extends the last version we saw, else None."""
        state = self._lists.get((thread_id, ns, channel))
        if state is None or state.depth + 1 > self.snapshot_every or count < state.count:
            return None
        deps = refresh(state.deps) if state.deps else None
        if deps is None:
            return None  # the base was changed (by hand, git, prune) since we wrote or read it
        state.deps = deps
        items: builtins.list[Any] | None = None
        if state.body is not None and body.startswith(state.body):
            suffix = body[len(state.body) :]
            items = codec_mod.msgpack_to_tree(msgpack_array_header(count - state.count) + suffix)
        elif state.tree is not None:
            full = codec_mod.msgpack_to_tree(data)
            if full[: state.count] == state.tree:
                items = full[state.count :]
        if items is None or json_size(items) > self.large_value_bytes:
            return None
        return {
            "base": state.version,
            "base_ref": state.ref,
            "base_length": state.count,
            "depth": state.depth + 1,
            "items": items,
        }

    def _maybe_large(
        self, thread_id: str, node: dict[str, Any], large: builtins.list[tuple[Path, bytes]]
    ) -> dict[str, Any]:
        """Values over ``large_value_bytes`` go to a file named by their content hash."""
        if json_size(node) <= self.large_value_bytes:
            return node
        digest = digest_node(node)
        path = self.store.layout.large_path(thread_id, digest)
        if not path.exists() and all(p != path for p, _ in large):
            doc = {"schema_version": SCHEMA_VERSION, "kind": "large_value", "sha256": digest, "value": node}
            large.append(self.store.prepare("large_value", doc, path))
        return {"large": digest}

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        thread_id, ns = _thread_ns(config)
        cid = config["configurable"]["checkpoint_id"]
        with self.store.thread_lock(thread_id):
            existing = {
                (doc["task_id"], w["idx"])
                for _, doc in self.store.writes_docs(thread_id, ns, cid)
                for w in doc["writes"]
                if w["idx"] >= 0
            }
            large: builtins.list[tuple[Path, bytes]] = []
            entries: builtins.list[dict[str, Any]] = []
            for i, (channel, value) in enumerate(writes):
                idx = WRITES_IDX_MAP.get(channel, i)
                if idx >= 0 and (task_id, idx) in existing:
                    continue  # first write wins for regular writes; special ones replace
                target = f"thread {thread_id!r} checkpoint {cid} task {task_id}"
                encoded = self.codec.encode(value, "writes", target, f"/writes/{len(entries)}/value")
                node = self._maybe_large(thread_id, encoded, large)
                entries.append({"idx": idx, "channel": channel, "value": node})
            if not entries:
                return
            doc = {
                "schema_version": SCHEMA_VERSION,
                "kind": "writes",
                "thread_id": thread_id,
                "checkpoint_ns": ns,
                "checkpoint_id": cid,
                "task_id": task_id,
                "task_path": task_path,
                "writes": entries,
            }
            layout = self.store.layout
            path = layout.writes_dir(thread_id, ns) / layout.writes_name(cid, str(uuid6()))
            prepared = self.store.prepare("writes", doc, path)
            self.store.write([large, [prepared]])
            self.store.remember(path, doc, prepared[1])

    # ------------------------------------------------------------------
    # maintenance
    # ------------------------------------------------------------------
    def delete_thread(self, thread_id: str) -> None:
        with self.store.thread_lock(thread_id, exclusive=True):
            self.store.remove_tree(self.store.layout.thread_dir(thread_id))
            self._forget(thread_id)

    def _forget(self, thread_id: str) -> None:
        self.store.forget_thread(thread_id)
        for key in [k for k in self._lists if k[0] == thread_id]:
            del self._lists[key]

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        wanted = set(run_ids)
        if not wanted:
            return
        for thread_id in self.store.thread_ids():
            with self.store.thread_lock(thread_id, exclusive=True):
                doomed = {
                    ns: [
                        cid
                        for cid in self.store.checkpoint_ids(thread_id, ns)
                        if self._filter_meta(thread_id, ns, cid).get("run_id") in wanted
                    ]
                    for ns in self.store.namespaces(thread_id)
                }
                self._remove_checkpoints(thread_id, {ns: ids for ns, ids in doomed.items() if ids})

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        if strategy not in ("keep_latest", "delete"):
            raise ValueError(f"unknown prune strategy {strategy!r}; use 'keep_latest' or 'delete'")
        for thread_id in thread_ids:
            if strategy == "delete":
                self.delete_thread(thread_id)
                continue
            with self.store.thread_lock(thread_id, exclusive=True):
                doomed: dict[str, builtins.list[str]] = {}
                for ns in self.store.namespaces(thread_id):
                    ids = self.store.checkpoint_ids(thread_id, ns)
                    if ids:
                        keep = self._needed_for_latest(thread_id, ns, ids[-1])
                        doomed[ns] = [cid for cid in ids if cid not in keep]
                self._remove_checkpoints(thread_id, {ns: ids for ns, ids in doomed.items() if ids})

    def _needed_for_latest(self, thread_id: str, ns: str, latest: str) -> set[str]:
        """The latest checkpoint plus the ancestors a DeltaChannel needs to rebuild its value:
        back to the nearest one holding a stored value (a snapshot) for each delta channel
        that is empty at the latest. Delta channels are the ones LangGraph counts in the
        metadata's ``counters_since_delta_snapshot``; other empty channels (consumed
        triggers) need nothing."""
        ns_dir = self.store.layout.ns_dir(thread_id, ns)
        keep = {latest}
        doc = self.store.header(thread_id, ns, latest)
        versions = doc["checkpoint"]["channel_versions"]
        delta = self._filter_meta(thread_id, ns, latest).get("counters_since_delta_snapshot") or {}
        unseeded = {
            ch
            for ch, ref in doc["values"].items()
            if ch in delta and self.store.value_entry(ns_dir, ch, versions.get(ch), ref).empty
        }
        walked: set[str] = set()
        parent = _parent_of(self.store, doc, walked) if unseeded else None
        while unseeded and parent:
            try:
                doc = self.store.header(thread_id, ns, parent)
            except FileNotFoundError:
                break
            keep.add(parent)
            versions = doc["checkpoint"]["channel_versions"]
            for ch in list(unseeded):
                ref = doc["values"].get(ch)
                if ref is not None and not self.store.value_entry(ns_dir, ch, versions.get(ch), ref).empty:
                    unseeded.discard(ch)
            parent = _parent_of(self.store, doc, walked) if unseeded else None
        return keep

    def _remove_checkpoints(self, thread_id: str, doomed: dict[str, builtins.list[str]]) -> None:
        """Delete checkpoints (and their writes) without losing what the others still use.

        Values the survivors refer to that sit inline in a doomed checkpoint are first
        written to value files (readers fall back to them); then the doomed checkpoint
        files go (they are the commit points); then their writes and unreferenced files.
        """
        if not doomed:
            return
        layout = self.store.layout
        # a symlink anywhere in the thread refuses the whole removal before anything is written
        self.store.check_tree(layout.thread_dir(thread_id), f"remove checkpoints of thread {thread_id!r}")
        for ns, ids in doomed.items():
            ns_dir = layout.ns_dir(thread_id, ns)
            gone: set[str] = set(ids)
            keep = [c for c in self.store.checkpoint_ids(thread_id, ns) if c not in gone]
            rescued: dict[Path, tuple[Path, bytes]] = {}
            for cid in keep:
                doc = self.store.header(thread_id, ns, cid)
                versions = doc["checkpoint"]["channel_versions"]
                for ch, ref in doc["values"].items():
                    self._rescue_chain(ns_dir, ch, versions.get(ch), ref, gone, rescued)
            self.store.write([list(rescued.values())])
            self.store.remove_files([layout.checkpoint_path(thread_id, ns, cid) for cid in ids])
            owners = {encode_segment(cid) for cid in ids}
            self.store.remove_files(
                [
                    p
                    for p in self.store.files_in(layout.writes_dir(thread_id, ns))
                    if layout.writes_owner(p.name) in owners
                ]
            )
        self.store.forget_thread(thread_id)
        self._collect_garbage(thread_id)

    def _rescue_chain(
        self,
        ns_dir: Path,
        channel: str,
        version: Any,
        ref: str,
        gone: set[str],
        rescued: dict[Path, tuple[Path, bytes]],
    ) -> None:
        """Give every link of a value's chain that lives in a doomed checkpoint a value file.

        A cycle or an over-long chain raises (naming the file) before anything is removed."""
        layout = self.store.layout
        guard = ChainGuard()
        while True:
            vpath = ns_dir / layout.value_rel(channel, version)
            body: dict[str, Any]
            if ref.startswith("checkpoints/") and (ns_dir / ref).exists():
                guard.enter(ns_dir / ref)
                pointer = f"/new_values/{channel}"
                host = self.store.read_doc(ns_dir / ref, "checkpoint")
                body = host["new_values"][channel]
                if host["checkpoint_id"] in gone and vpath not in rescued and not vpath.exists():
                    doc = {
                        "schema_version": SCHEMA_VERSION,
                        "kind": "value",
                        "channel": channel,
                        "version": version,
                        **body,
                    }
                    rescued[vpath] = self.store.prepare("value", doc, vpath)
            elif vpath in rescued:
                guard.enter(vpath)
                pointer = ""
                body = json.loads(rescued[vpath][1])
            else:
                guard.enter(vpath)
                pointer = ""
                body = self.store.read_doc(vpath, "value")
            if "append" not in body:
                return
            guard.follow(ns_dir / ref if pointer else vpath, pointer, body["append"])
            version, ref = body["append"]["base"], body["append"]["base_ref"]

    def _collect_garbage(self, thread_id: str) -> None:
        """Remove value and large files that nothing left refers to."""
        layout = self.store.layout
        used_large: set[str] = set()
        for ns, ns_dir in self.store.namespace_folders(layout.thread_dir(thread_id)):
            needed: set[Path] = set()
            followed: set[tuple[str, str]] = set()
            for cid in self.store.checkpoint_ids(thread_id, ns):
                doc = self.store.header(thread_id, ns, cid)
                for body in doc.get("new_values", {}).values():
                    _large_in(body, used_large)
                versions = doc["checkpoint"]["channel_versions"]
                for ch, ref in doc["values"].items():
                    self._mark_files(ns_dir, ch, versions.get(ch), ref, needed, used_large, followed)
                for _, wdoc in self.store.writes_docs(thread_id, ns, cid):
                    for w in wdoc["writes"]:
                        _large_in(w, used_large)
            self.store.remove_files([p for p in self.store.value_files(ns_dir) if p not in needed])
        large_dir = layout.thread_dir(thread_id) / "large"
        self.store.remove_files([p for p in self.store.files_in(large_dir) if p.name[:-5] not in used_large])
        self.store.forget_thread(thread_id)

    def _mark_files(
        self,
        ns_dir: Path,
        channel: str,
        version: Any,
        ref: str,
        needed: set[Path],
        used_large: set[str],
        followed: set[tuple[str, str]],
    ) -> None:
        """Mark the value files and large files one value's chain uses; each link once.

        A cycle within this chain raises (a link followed by an earlier chain ends the walk)."""
        layout = self.store.layout
        guard = ChainGuard()
        while True:
            in_checkpoint = ref.startswith("checkpoints/") and (ns_dir / ref).exists()
            vpath = ns_dir / layout.value_rel(channel, version)
            path = ns_dir / ref if in_checkpoint else vpath
            guard.enter(path)
            if (ref, channel) in followed:
                return
            followed.add((ref, channel))
            if in_checkpoint:
                body = self.store.read_doc(ns_dir / ref, "checkpoint")["new_values"][channel]
            else:
                if vpath in needed:
                    return
                needed.add(vpath)
                body = self.store.read_doc(vpath, "value")
            _large_in(body, used_large)
            if "append" not in body:
                return
            guard.follow(path, f"/new_values/{channel}" if in_checkpoint else "", body["append"])
            version, ref = body["append"]["base"], body["append"]["base_ref"]

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every file of a thread (whole parent chains, so DeltaChannels rebuild)."""
        if source_thread_id == target_thread_id:
            return
        layout = self.store.layout
        src_dir = layout.thread_dir(source_thread_id)
        dst_dir = layout.thread_dir(target_thread_id)
        first, second = sorted((source_thread_id, target_thread_id))
        # both locks, in id order: the source must hold still while it is read
        with self.store.thread_lock(first, exclusive=True), self.store.thread_lock(second, exclusive=True):
            self.store.check_tree(src_dir, f"copy thread {source_thread_id!r}")
            large = [
                self.store.prepare(
                    "large_value", self.store.read_doc(p, "large_value"), dst_dir / "large" / p.name
                )
                for p in self.store.files_in(src_dir / "large")
            ]
            values: builtins.list[tuple[Path, bytes]] = []
            writes: builtins.list[tuple[Path, bytes]] = []
            checkpoints: builtins.list[tuple[Path, bytes]] = []
            for ns, src_ns in self.store.namespace_folders(src_dir):
                dst_ns = layout.ns_dir(target_thread_id, ns)
                for path in self.store.value_files(src_ns):
                    doc = self.store.read_doc(path, "value")
                    values.append(self.store.prepare("value", doc, dst_ns / path.relative_to(src_ns)))
                for path in self.store.files_in(layout.writes_dir(source_thread_id, ns)):
                    wdoc = {**self.store.read_doc(path, "writes"), "thread_id": target_thread_id}
                    writes.append(self.store.prepare("writes", wdoc, dst_ns / path.relative_to(src_ns)))
                for cid in self.store.checkpoint_ids(source_thread_id, ns):
                    cdoc = {**self.store.header(source_thread_id, ns, cid), "thread_id": target_thread_id}
                    checkpoints.append(
                        self.store.prepare(
                            "checkpoint", cdoc, layout.checkpoint_path(target_thread_id, ns, cid)
                        )
                    )
            self.store.write([large, values, writes, checkpoints])
            self._forget(target_thread_id)

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Walk parent links through checkpoint files only; an ancestor's values are
        read just for the channels still looking for their seed."""
        if not channels:
            return {}
        view = self._learn_graph_types(0)
        if view is not self:
            return view.get_delta_channel_history(config=config, channels=channels)
        thread_id, ns = _thread_ns(config)
        ns_dir = self.store.layout.ns_dir(thread_id, ns)
        cid = get_checkpoint_id(config)
        if not cid:
            ids = self.store.checkpoint_ids(thread_id, ns)
            cid = ids[-1] if ids else None
        collected: dict[str, builtins.list[PendingWrite]] = {c: [] for c in channels}
        seeds: dict[str, Any] = {}
        remaining = set(channels)
        current: str | None = None
        walked: set[str] = set()
        if cid:
            try:
                current = _parent_of(self.store, self.store.header(thread_id, ns, cid), walked)
            except FileNotFoundError:
                current = None
        while current is not None and remaining:
            try:
                doc = self.store.header(thread_id, ns, current)
            except FileNotFoundError:
                break
            versions = doc["checkpoint"]["channel_versions"]
            ended: dict[str, Any] = {}
            for ch in remaining:
                ref = doc["values"].get(ch)
                if ref is None:
                    continue
                entry = self.store.value_entry(ns_dir, ch, versions.get(ch), ref)
                if not entry.empty:
                    where = f"thread {thread_id!r} checkpoint {current} channel {ch!r} ({entry.where})"
                    ended[ch] = self._revive(entry, where)
            for write in reversed(self._pending_writes(thread_id, ns, current)):
                if write[1] in remaining:
                    collected[write[1]].append(write)
            for ch, value in ended.items():
                seeds[ch] = value
                remaining.discard(ch)
            current = _parent_of(self.store, doc, walked) if remaining else None
        result: dict[str, DeltaChannelHistory] = {}
        for ch in channels:
            entry_h: DeltaChannelHistory = {"writes": list(reversed(collected[ch]))}
            if ch in seeds:
                entry_h["seed"] = seeds[ch]
            result[ch] = entry_h
        return result

    def get_next_version(self, current: str | None, channel: None) -> str:
        """Same shape as InMemorySaver/PostgresSaver, so threads move between them;
        the random part keeps versions written on two git branches apart."""
        if current is None:
            current_v = 0
        elif isinstance(current, int):
            current_v = current
        else:
            current_v = int(current.split(".")[0])
        return f"{current_v + 1:032}.{random.random():016}"

    # ------------------------------------------------------------------
    # async twins: the same core, off the event loop
    # ------------------------------------------------------------------
    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        view = self._learn_graph_types(0)  # here, where the calling graph is on the stack
        return await asyncio.to_thread(view._get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        view = self._learn_graph_types(0)
        items = await asyncio.to_thread(
            lambda: list(view.list(config, filter=filter, before=before, limit=limit))
        )
        for item in items:
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await asyncio.to_thread(self.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await asyncio.to_thread(lambda: self.prune(thread_ids, strategy=strategy))

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        view = self._learn_graph_types(0)
        return await asyncio.to_thread(
            lambda: view.get_delta_channel_history(config=config, channels=channels)
        )


def _thread_ns(config: RunnableConfig) -> tuple[str, str]:
    conf = config["configurable"]
    thread_id = conf.get("thread_id")
    if thread_id is None:
        raise RepoCheckpointError("config['configurable']['thread_id'] is required")
    return str(thread_id), str(conf.get("checkpoint_ns") or "")


def _parent_of(store: FileStore, doc: dict[str, Any], walked: set[str]) -> str | None:
    """The parent to go to next on a walk up the history; one the walk has been through
    closes a cycle, which would walk forever: a FileFormatError naming the file instead."""
    walked.add(doc["checkpoint_id"])
    parent: str | None = doc["parent_checkpoint_id"]
    if parent is not None and parent in walked:
        path = store.layout.checkpoint_path(doc["thread_id"], doc["checkpoint_ns"], doc["checkpoint_id"])
        raise FileFormatError(
            str(path), "/parent_checkpoint_id", f"parent chain cycles back to checkpoint {parent}"
        )
    return parent


def _check_int_option(name: str, value: Any, low: int, high: int) -> None:
    """An integer option inside the range whose data reads back (bool is not an integer here)."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{name}={value!r}: expected an integer from {low} to {high}")


def _config(thread_id: str, ns: str, cid: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": cid}}


def _allow_keys(items: Iterable[Any]) -> frozenset[tuple[str, ...]]:
    """Allowlist entries as (module, name) keys; a class stands for its own."""
    return frozenset(
        (item.__module__, item.__name__) if isinstance(item, type) else tuple(item) for item in items
    )


def _escape(part: str) -> str:
    """One JSON pointer segment."""
    return part.replace("~", "~0").replace("/", "~1")


def _large_in(body: dict[str, Any], used: set[str]) -> None:
    """Collect the large-value digests a value body or write refers to."""
    node = body.get("value")
    if isinstance(node, dict) and "large" in node:
        used.add(node["large"])
