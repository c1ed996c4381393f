"""RepoSaver: the LangGraph checkpointer contract over the file store.

Every method has one synchronous core; the async twins run that core in a
worker thread so disk I/O never blocks the event loop, and nothing here
depends on a loop, so sync calls from inside a running loop are fine too.

Write path: saver -> values.py (bodies: inline, appended items, large files) -> codec
(values to JSON trees) -> validation -> durable write, checkpoint file last (it is the
commit point). Read path is the mirror. Removals and copies are maintenance.py's: each
removal a plan, carried out.
"""

from __future__ import annotations

import asyncio
import bisect
import builtins
import copy
import os
import random
import time
from collections.abc import AsyncIterator, Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

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
)
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.pregel import Pregel

from . import codec as codec_mod
from ._compat import with_msgpack_allowlist
from .caches import settled, stat_key
from .chains import MAX_APPEND_DEPTH
from .codec import ValueCodec, graph_fix
from .durable import check_lock_timeout
from .entries import ValueEntry, entry_from_node
from .errors import (
    FileFormatError,
    MissingReferenceError,
    RepoCheckpointError,
    UnrevivableValueError,
)
from .graph_types import GraphViews, frame_above, graph_allowlist, graph_name
from .heads import Head, choose, read_heads
from .index import is_plain
from .jsonread import MAX_FILE_BYTES
from .layout import find_default_root
from .maintenance import carry_out, copy_thread_files, parent_of, plan_keep_latest, plan_runs
from .redaction import RedactOption, Redactor, resolve_redactor
from .store import FileStore
from .validation import RESERVED_EXTRA_KEYS, SCHEMA_VERSION, pointer_part
from .values import ListState as _ListState  # the name _tuple uses
from .values import ValueWriter, merged_writes

# the Checkpoint keys kept under "checkpoint"; its "id" is the file's checkpoint_id (format 2)
_CHECKPOINT_KEYS = ("v", "ts", "channel_versions", "versions_seen", "updated_channels")


# RepoSaver is defined in two classes, so that neither passes 300 lines: this one holds the
# options, the type policy and the read half of the contract (get_tuple, list, reviving stored
# values); RepoSaver below adds writing, maintenance, DeltaChannel history and the async twins.
_S = TypeVar("_S", bound="_RepoSaverBase")


class _RepoSaverBase(BaseCheckpointSaver[str]):
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
        super().__init__(serde=_serde_with(serde, allowlist))
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

    def _learn_graph_types(self: _S, depth: int) -> _S:
        """This saver as the graph calling the read entry ``depth`` frames up reads it: its
        own view, under the graph's state types too (graph_types.py). Not a graph: itself."""
        if self._graph_views is None:
            return self
        return self._graph_views.for_caller(self, frame_above(depth + 1), self._graph_view)

    def _graph_view(self: _S, graph: Pregel[Any, Any]) -> _S:
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

    def with_allowlist(self: _S, extra_allowlist: Collection[tuple[str, ...]]) -> _S:
        """As the base class, and the saver's own allowlist (checked whatever the serde) grows too."""
        clone = super().with_allowlist(extra_allowlist)
        assert isinstance(clone, type(self))
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
        """As the base class, read under the calling graph's state types (graph_types.py).
        A checkpoint removed while it is read (by another process) is not found; for the
        latest, the new latest is read."""
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
        """As the base class; across threads or namespaces newest first by id, as SqliteSaver
        orders them, and a checkpoint removed since it was listed (by another process) is skipped."""
        if limit is not None and limit <= 0:
            return
        view = self._learn_graph_types(0)
        if view is not self:
            yield from view.list(config, filter=filter, before=before, limit=limit)
            return
        wanted = builtins.list(filter.items()) if filter else []
        remaining = limit
        for cid, thread_id, ns in _listed(self.store, config, before):
            try:
                if wanted:
                    meta = self.checkpoint_metadata(thread_id, ns, cid)
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
                    break
        self.store.meta.persist()

    def checkpoint_metadata(self, thread_id: str, ns: str, cid: str, fresh: bool = False) -> dict[str, Any]:
        """A checkpoint's decoded metadata, kept per checkpoint so filters scan thousands quickly
        (index.py: in process, and for a fresh process in the derived index): reused while its
        file's stat key is unchanged (one lstat), so a hand edit is seen. ``fresh``: what
        decides a removal reads the file itself, never a cache."""
        plain_ok = self.codec.revives_plain_trees
        hit = None if fresh else self.store.meta.get(thread_id, ns, cid, plain_ok)
        if hit is not None:
            return hit  # type: ignore[no-any-return]
        path = self.store.layout.checkpoint_path(thread_id, ns, cid)
        read_at = time.time_ns()  # the cache rule (caches.py): both taken before the read
        st = os.lstat(path)
        doc = self.store.header(thread_id, ns, cid)
        meta = self._decode_tree(doc["metadata"], self._where(doc, "/metadata"), str(path), "/metadata")
        tree = doc["metadata"] if plain_ok and is_plain(doc["metadata"]) else None
        kept = (str(path), stat_key(st), meta, tree) if settled(st, read_at) else None
        self.store.meta.keep(thread_id, ns, cid, kept)  # not settled: it may change again unseen
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
            values[channel] = self.revive(entry, where)
            if remember_lists and isinstance(entry.tree, list):
                key = (thread_id, ns, channel)
                known = self._lists.get(key)
                if known is None or known.version != versions[channel]:
                    deps = entry.deps if entry.checkable else ((entry.file, None, None),)
                    self._lists[key] = _ListState(
                        versions[channel], ref, len(entry.tree), entry.depth, None, entry.tree, deps
                    )
                    self._lists[key].weight = entry.weight
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
                    f"/checkpoint/extra/{pointer_part(key)}",
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
        out: builtins.list[PendingWrite] = []
        for w in merged_writes(self.store, thread_id, ns, cid):
            where = (
                f"thread {thread_id!r} checkpoint {cid} pending write {w.channel!r} of task {w.task_id} "
                f"({w.path} at /writes/{w.index}/value)"
            )
            value = self._revive_node(w.node, w.path, where, f"/writes/{w.index}/value")
            out.append((w.task_id, w.channel, value))
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
        return self.revive(entry, where, readable=True)

    def _revive_node(self, node: dict[str, Any], path: Path, where: str, pointer: str = "") -> Any:
        node, holder = self.store.resolve_node(node, path, pointer)
        if holder != path:
            where = f"{where} (value in {holder})"
        entry = entry_from_node(node, str(holder))
        entry.file, entry.root = str(holder), f"{pointer}/json" if holder == path else "/value/json"
        return self.revive(entry, where)

    def revive(self, entry: ValueEntry, where: str, *, readable: bool = False) -> Any:
        """Revive a value as ``get_tuple`` does (also for review.py), refusing (before any
        import) types outside the allowlist; ``where`` names it in errors.

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


class RepoSaver(_RepoSaverBase):
    # the options are the constructor's, documented with it
    __doc__ = _RepoSaverBase.__doc__

    # ------------------------------------------------------------------
    # writing
    # ------------------------------------------------------------------
    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """As the base class; only the channels in ``new_versions`` are stored, in this
        checkpoint's file (a list that grew as the items appended, a large value in a file of
        its own, values.py); the others are referred to where their version already lives.
        Large files are written first, the checkpoint file (the commit point) last."""
        thread_id, ns = _thread_ns(config)
        parent_id = config["configurable"].get("checkpoint_id")
        cid = checkpoint["id"]
        writer = self._value_writer()
        with self.store.thread_lock(thread_id):
            stored = writer.checkpoint_values(thread_id, ns, checkpoint, new_versions, parent_id)
            target = f"thread {thread_id!r} checkpoint {cid}"
            kept: dict[str, Any] = {k: checkpoint[k] for k in _CHECKPOINT_KEYS if k in checkpoint}  # type: ignore[literal-required]
            extra = {
                k: writer.tree(v, target, f"/checkpoint/extra/{k}")
                for k, v in checkpoint.items()
                if k not in _CHECKPOINT_KEYS and k not in ("id", "channel_values")
            }
            if extra:
                kept["extra"] = extra
            cdoc: dict[str, Any] = {
                "schema_version": SCHEMA_VERSION,
                "kind": "checkpoint",
                "thread_id": thread_id,
                "checkpoint_ns": ns,
                "checkpoint_id": cid,
                "parent_checkpoint_id": parent_id,
                "metadata": writer.tree(get_checkpoint_metadata(config, metadata), target, "/metadata"),
                "checkpoint": kept,
                "values": stored.carried,
            }
            if stored.bodies:
                cdoc["new_values"] = stored.bodies
            cpath = self.store.layout.checkpoint_path(thread_id, ns, cid)
            prepared = self.store.prepare("checkpoint", cdoc, cpath)
            self.store.write([stored.large, [prepared]])
            self.store.remember(cpath, cdoc, prepared[1])
            writer.remember(thread_id, ns, cid, stored)
        return _config(thread_id, ns, cid)

    def _value_writer(self) -> ValueWriter:
        """Value storage under the current codec (it changes when a graph's types are learnt)."""
        return ValueWriter(self.store, self.codec, self._lists, self.large_value_bytes, self.snapshot_every)

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """As the base class: per task and ``idx`` the first regular write wins and a special
        one replaces; each call adds one writes file, never changing one already written."""
        thread_id, ns = _thread_ns(config)
        cid = config["configurable"]["checkpoint_id"]
        writer = self._value_writer()
        with self.store.thread_lock(thread_id):
            existing = {
                (w.task_id, w.idx) for w in merged_writes(self.store, thread_id, ns, cid) if w.idx >= 0
            }
            large: builtins.list[tuple[Path, bytes]] = []
            entries: builtins.list[dict[str, Any]] = []
            for i, (channel, value) in enumerate(writes):
                idx = WRITES_IDX_MAP.get(channel, i)
                if idx >= 0 and (task_id, idx) in existing:
                    continue  # first write wins for regular writes; special ones replace
                target = f"thread {thread_id!r} checkpoint {cid} task {task_id}"
                pointer = f"/writes/{len(entries)}/value"
                encoded = self.codec.encode(value, "writes", target, pointer)
                node = writer.stored_node(thread_id, encoded, large, (target, pointer))
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
    # maintenance (maintenance.py): each removal is a plan, carried out
    # ------------------------------------------------------------------
    def delete_thread(self, thread_id: str) -> None:
        """As the base class; the thread's folder is renamed away first, so no reader sees half."""
        with self.store.thread_lock(thread_id, exclusive=True):
            self.store.remove_tree(self.store.layout.thread_dir(thread_id))
            self._forget(thread_id)

    def _forget(self, thread_id: str) -> None:
        self.store.forget_thread(thread_id)
        for key in [k for k in list(self._lists) if k[0] == thread_id]:  # copied in one step
            self._lists.pop(key, None)

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """As the base class; values the remaining checkpoints use are first moved out of the
        removed ones into ``values/`` files."""
        wanted = set(run_ids)
        if not wanted:
            return
        for thread_id in self.store.thread_ids():
            with self.store.thread_lock(thread_id, exclusive=True):
                carry_out(self.store, plan_runs(self, thread_id, wanted))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """As the base class, but ``keep_latest`` also keeps the ancestors a DeltaChannel needs
        (back to its nearest snapshot), and values the kept checkpoints use are first moved out
        of the removed ones into ``values/`` files. An unknown strategy is a ValueError."""
        if strategy not in ("keep_latest", "delete"):
            raise ValueError(f"unknown prune strategy {strategy!r}; use 'keep_latest' or 'delete'")
        for thread_id in thread_ids:
            if strategy == "delete":
                self.delete_thread(thread_id)
                continue
            with self.store.thread_lock(thread_id, exclusive=True):
                carry_out(self.store, plan_keep_latest(self, thread_id))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """As the base class (every file, so whole parent chains); copying a thread onto itself
        does nothing."""
        if source_thread_id == target_thread_id:
            return
        copy_thread_files(self.store, source_thread_id, target_thread_id)
        self._forget(target_thread_id)

    def heads(self, config: RunnableConfig) -> builtins.list[Head]:
        """The heads of ``config``'s namespace, newest first, settled or not (docs/forks.md)."""
        return read_heads(self._learn_graph_types(0), config)

    def choose_head(self, config: RunnableConfig) -> RunnableConfig:
        """Make the head ``config`` names continue, the choice recorded (heads.py, docs/forks.md)."""
        return choose(self, config)

    async def aheads(self, config: RunnableConfig) -> builtins.list[Head]:
        """``heads`` in a worker thread."""
        return await asyncio.to_thread(self._learn_graph_types(0).heads, config)

    async def achoose_head(self, config: RunnableConfig) -> RunnableConfig:
        """``choose_head`` in a worker thread."""
        return await asyncio.to_thread(self.choose_head, config)

    # ------------------------------------------------------------------
    # history and versions
    # ------------------------------------------------------------------
    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """As the base class, but walks parent links through checkpoint files only; an
        ancestor's values are read just for the channels still looking for their seed."""
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
                current = parent_of(self.store, self.store.header(thread_id, ns, cid), walked)
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
                    ended[ch] = self.revive(entry, where)
            for write in reversed(self._pending_writes(thread_id, ns, current)):
                if write[1] in remaining:
                    collected[write[1]].append(write)
            for ch, value in ended.items():
                seeds[ch] = value
                remaining.discard(ch)
            current = parent_of(self.store, doc, walked) if remaining else None
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
        """``get_tuple`` in a worker thread."""
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
        """``list`` in a worker thread, collected there, then yielded."""
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
        """``put`` in a worker thread."""
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """``put_writes`` in a worker thread."""
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        """``delete_thread`` in a worker thread."""
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """``delete_for_runs`` in a worker thread."""
        await asyncio.to_thread(self.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """``copy_thread`` in a worker thread."""
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """``prune`` in a worker thread."""
        await asyncio.to_thread(lambda: self.prune(thread_ids, strategy=strategy))

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """``get_delta_channel_history`` in a worker thread."""
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


def _listed(
    store: FileStore, config: RunnableConfig | None, before: RunnableConfig | None
) -> Iterable[tuple[str, str, str]]:
    """``list``'s checkpoints as (id, thread, namespace): newest first within one namespace,
    and across threads and namespaces newest first by id, as SqliteSaver orders them."""
    conf = config["configurable"] if config else {}
    want_id = conf.get("checkpoint_id")
    before_id = get_checkpoint_id(before) if before else None
    threads = [str(conf["thread_id"])] if conf.get("thread_id") is not None else store.thread_ids()
    ns_filter = conf.get("checkpoint_ns")
    groups: list[tuple[str, str, list[str]]] = []
    for thread_id in threads:
        namespaces = [ns_filter] if ns_filter is not None else store.namespaces(thread_id)
        for ns in namespaces:
            ids = store.checkpoint_ids(thread_id, ns)
            if want_id is not None:
                ids = [i for i in ids if i == want_id]
            if before_id is not None:
                ids = ids[: bisect.bisect_left(ids, before_id)]
            if ids:
                groups.append((thread_id, ns, ids))
    if len(groups) == 1:
        thread_id, ns, ids = groups[0]
        return ((cid, thread_id, ns) for cid in reversed(ids))
    return sorted(((c, t, n) for t, n, ids in groups for c in ids), reverse=True)


def _serde_with(
    serde: SerializerProtocol | None, allowlist: Collection[tuple[str, ...]] | None
) -> SerializerProtocol:
    """LangGraph's serde allowing ``allowlist``; a strict serde of the caller's must construct
    these types too (the saver's own check comes first either way)."""
    if serde is None:
        return JsonPlusSerializer(allowed_msgpack_modules=list(allowlist or []) or None)
    inner = serde.serde if isinstance(serde, EncryptedSerializer) else serde
    if allowlist and isinstance(inner, JsonPlusSerializer):
        return with_msgpack_allowlist(serde, allowlist)
    return serde


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


