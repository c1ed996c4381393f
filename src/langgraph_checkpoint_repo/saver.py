"""RepoSaver: the LangGraph checkpointer contract over the documents of a root.

Every method has one synchronous core; the async twins run that core in a worker thread so
disk I/O never blocks the event loop, and nothing here depends on a loop, so sync calls from
inside a running loop are fine too.

Write path: saver -> values.py (bodies: inline, appended items, large files) -> serde.py
(values to JSON trees) -> core validation -> durable write, checkpoint file last (it is the
commit point). Read path is the mirror. Removals are core/plans.py's: each removal a plan,
carried out. Which types a read may construct: serde.py's policy, widened per graph
(graph_types.py, docs/types.md).
"""

from __future__ import annotations

import asyncio
import bisect
import builtins
import concurrent.futures
import copy
import heapq
import logging
import os
import re
from collections.abc import (
    AsyncIterator,
    Callable,
    Collection,
    Generator,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
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

from . import forks
from ._compat import with_msgpack_allowlist
from .configs import checkpoint_config, thread_ns
from .core.caches import KEPT_THREADS, KEPT_THREADS_MAX, one_look
from .core.durable import check_lock_timeout
from .core.errors import (
    ConcurrentTurnError,
    InstallationError,
    MissingReferenceError,
    RepoCheckpointError,
)
from .core.format.chains import MAX_APPEND_DEPTH
from .core.format.decode import extra_trees, langgraph_checkpoint
from .core.format.encode import extra_fields, stored_fields
from .core.format.entries import ValueEntry, entry_from_node
from .core.format.records import CheckpointRecord, TaskWrites
from .core.format.storing import LARGE_VALUE_BYTES, LargeValues
from .core.format.versions import for_file, next_version, seen_for_file
from .core.index import meta_needles
from .core.jsonread import MAX_FILE_BYTES
from .core.layout import find_default_root
from .core.lineage import is_deliberate
from .core.plans import PrunePlan, carry_out, copy_thread_files, plan_keep_latest, plan_runs
from .core.redaction import RedactOption, Redactor, resolve_redactor
from .core.roster import Roster, roster_of
from .core.sweeper import Sweeper
from .core.threads import ThreadStore, writes_key
from .core.typenames import Fix, graph_fix
from .core.writes import merged_writes, write_idx
from .forks import Head
from .graph_types import GraphViews, frame_above, graph_name, graph_types
from .readmodel.reader import Reader
from .readmodel.retention import retention_from, sweep_threads
from .ride import Waiting, WritesRide
from .serde import ValueCodec
from .values import ListState, ValueWriter

#: metadata keys that say which request wrote a checkpoint, not what it holds: the Agent Server
#: (langgraph-api) adds them to every checkpoint of every run (docs/agent-server.md)
REQUEST_METADATA = frozenset(
    {
        "langgraph_api_url",
        "langgraph_request_id",
        "langgraph_api_version",
        "langgraph_version",
        "langgraph_host",
        "langgraph_plan",
        "langgraph_auth_user_id",
        "langgraph_auth_permissions",
        "run_attempt",
    }
)

# the keys of parent_writes (schemas/checkpoint.schema.json): a writes file named otherwise stays a file
_WRITES_KEY = re.compile(r"[0-9A-Za-z_.-]{1,100}")

# how many times a file is decided again when a put beside it, whose objects it referred to,
# failed (each time it holds them itself); then that failure is its own
DECIDE_AGAIN = 3


_S = TypeVar("_S", bound="RepoSaver")
#: the newest checkpoints an in-thread filter matches first (``RepoSaver._matched``)
FIRST_RUN = 64
_Group = tuple[str, str, tuple[str, ...]]  # a thread, a namespace, its checkpoint ids


class _WritesCall(NamedTuple):
    """One ``put_writes`` call, as the retries of its file see it."""

    thread_id: str
    ns: str
    cid: str
    writes: Sequence[tuple[str, Any]]
    task_id: str
    task_path: str


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
        keep_request_metadata: also write the metadata keys that only say which request wrote
            a checkpoint (``REQUEST_METADATA``: the Agent Server's URL, request id, versions,
            attempt); by default they are left out, so a run changes only what it changed.
        strict_turns: refuse (``ConcurrentTurnError``, nothing written) a put that continues
            a checkpoint another writer already continued: two processes running turns on one
            thread then never fork it silently. A fork made through LangGraph's API (a replay,
            ``update_state`` on a past checkpoint) is allowed. Default off, as LangGraph's own
            savers behave (docs/forks.md, "Concurrent turns").
        ttl: retention, as LangGraph's ``checkpointer.ttl`` in ``langgraph.json``:
            ``{"strategy": "delete", "default_ttl": 43200, "sweep_interval_minutes": 60}``
            deletes a thread ``default_ttl`` minutes after its last checkpoint
            (``"keep_latest"``: keeps its latest state only); ``"keep_last": N`` keeps the newest
            N checkpoints of each namespace of the others. A thread waiting at an interrupt,
            or whose latest step did not finish, is never expired. ``sweep()`` applies it;
            ``start_ttl_sweeper()`` every ``sweep_interval_minutes`` (docs/reliability.md,
            "Retention").
        clock: what "now" is for ``ttl`` (an aware ``datetime``), for tests and simulations.
        kept_threads: how many threads this saver keeps what it read and wrote of, those used
            last (default 512): a server answering for more lets the one used longest ago go,
            and reads it from its files again when asked, so its memory stops growing with
            every thread it ever answered for (some 600 KB a thread of 12 turns). From 1.
    """

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        *,
        serde: SerializerProtocol | None = None,
        allowlist: Collection[tuple[str, ...]] | None = None,
        durable: bool = True,
        large_value_bytes: int = LARGE_VALUE_BYTES,
        snapshot_every: int = 64,
        lock_timeout: float = 60.0,
        redact: RedactOption = True,
        unsafe_allow_pickle: bool = False,
        keep_request_metadata: bool = False,
        strict_turns: bool = False,
        ttl: Mapping[str, Any] | None = None,
        clock: Callable[[], datetime] | None = None,
        kept_threads: int = KEPT_THREADS,
    ) -> None:
        _check_int_option("large_value_bytes", large_value_bytes, 0, MAX_FILE_BYTES)
        _check_int_option("kept_threads", kept_threads, 1, KEPT_THREADS_MAX)
        _check_int_option("snapshot_every", snapshot_every, 0, MAX_APPEND_DEPTH)
        check_lock_timeout(lock_timeout)
        super().__init__(serde=serde_with(serde, allowlist))
        self.unsafe_allow_pickle = unsafe_allow_pickle
        self.keep_request_metadata = keep_request_metadata
        self.strict_turns = strict_turns
        # the saver's own additions to LangGraph's safe types: checked whatever the serde
        self._allowlist: frozenset[tuple[str, ...]] = allow_keys(allowlist or ())
        path = Path(root) if root is not None else _default_root()
        self.root = path.absolute()
        self.store = ThreadStore(
            self.root, durable=durable, lock_timeout=lock_timeout, kept_threads=kept_threads
        )
        # applied by the codec to every value, metadata and write before any tree is built
        self.redactor: Redactor | None = resolve_redactor(redact)
        self._fix: Fix | None = None  # how a refused type is allowed
        self._classes: dict[tuple[str, ...], type] = {}  # allowed types known as classes (a graph's)
        self.codec = self._new_codec()
        self.large_value_bytes = large_value_bytes
        self.snapshot_every = snapshot_every
        self._lists: dict[tuple[str, str, str], ListState] = {}  # shared with the graphs' views
        self.store.on_let_go.append(self._let_go_lists)
        # the last values stored in large/: a put refers to what its put_writes just stored
        self._large_values = LargeValues()
        # put_writes waiting for, or writing beside, a child's put (ride.py): the put takes
        # them into its own file (format 4); shared with the graphs' views
        self._ride: WritesRide[_WritesCall] = WritesRide(self.store.files.locks.timeout)
        # one view per calling graph, with that graph's types (None: this is such a view)
        self._graph_views: GraphViews | None = GraphViews()
        self.ttl_config = dict(ttl) if ttl is not None else None
        self.retention = retention_from(ttl, "RepoSaver(ttl=...)")
        self._clock = clock or _utc_now
        # with a ttl: when this process last read or wrote each thread (shared with the
        # graphs' views): a run under durability="exit" writes nothing until it ends, so its
        # thread's files look idle while it runs; the sweep counts this use too
        self._used: dict[str, datetime] = {}
        what = f"retention sweep of {self.root}"
        self._sweeper = Sweeper("reposaver-ttl-sweeper", what, "thread(s)", self._swept)

    def _learn_graph_types(self: _S, depth: int) -> _S:
        """This saver as the graph calling the read entry ``depth`` frames up reads it: its
        own view, under the graph's state types too (graph_types.py). Not a graph: itself."""
        if self._graph_views is None:
            return self
        return self._graph_views.for_caller(self, frame_above(depth + 1), self._graph_view)

    def _graph_view(self: _S, graph: Pregel[Any, Any]) -> _S:
        keys, classes = graph_types(graph)
        grown = self.with_allowlist(keys)
        view = copy.copy(self) if grown is self else grown
        view._graph_views = None
        view._fix = graph_fix(graph_name(graph))
        view._classes = {**self._classes, **classes}
        view.codec = view._new_codec()
        return view

    def _new_codec(self) -> ValueCodec:
        """The codec for the current serde, under the saver's allowlist and pickle option."""
        return ValueCodec(
            self.serde,
            self.redactor,
            allowlist=self._allowlist,
            classes=self._classes,
            unsafe_allow_pickle=self.unsafe_allow_pickle,
            fix=self._fix,
        )

    def with_allowlist(self: _S, extra_allowlist: Collection[tuple[str, ...]]) -> _S:
        """As the base class, and the saver's own allowlist (checked whatever the serde) grows too."""
        clone = super().with_allowlist(extra_allowlist)
        assert isinstance(clone, type(self))
        extra = allow_keys(extra_allowlist)
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
        if self.retention is not None:
            self._used[thread_ns(config)[0]] = self._clock()
        with self.store.observing():  # a stat key the lineage check takes is not taken again
            return self._get_tuple_observed(config)

    def _get_tuple_observed(self, config: RunnableConfig) -> CheckpointTuple | None:
        thread_id, ns = thread_ns(config)
        checkpoint_id = get_checkpoint_id(config)
        for attempt in range(5):
            cid = checkpoint_id
            try:
                # each file and folder asked about once a try (caches.one_look), the head too
                with one_look():
                    if not cid:
                        cid = self.store.current(thread_id, ns)  # the head that continues (lineage.py)
                        if cid is None:
                            return None
                    return self._tuple(self.store.get(thread_id, ns, cid), remember_lists=not checkpoint_id)
            except (FileNotFoundError, MissingReferenceError) as exc:
                # removed while we read it (delete or prune in another process): that is
                # "not found", or for the latest, look again; so is a reference whose own file
                # went meanwhile (a prune takes a file only after those referring to it, so a
                # read that had read one of them finds what it refers to gone too, the head
                # found included); anything else is damage
                gone = not self.store.layout.checkpoint_path(thread_id, ns, cid).exists() if cid else False
                if attempt == 4 or not (gone or _referrer_gone(exc)):
                    raise
                if checkpoint_id and gone:
                    return None
                self.store.files.drop_listing(self.store.layout.checkpoints_dir(thread_id, ns))
        return None

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Generator[CheckpointTuple, None, None]:
        """As the base class; across threads or namespaces newest first by id, as SqliteSaver
        orders them, and a checkpoint removed since it was listed (by another process) is skipped."""
        if limit is not None and limit <= 0:
            return
        view = self._learn_graph_types(0)
        if view is not self:
            yield from view.list(config, filter=filter, before=before, limit=limit)
            return
        wanted = builtins.list(filter.items()) if filter else []
        roster = None
        listed: Iterable[tuple[str, str, str]]
        matched = bool(wanted)  # ``listed`` holds the checkpoints that matched, else all
        if config is None or config["configurable"].get("thread_id") is None:
            roster = roster_of(self.store)
            groups = _across_threads(roster, config, before, bool(wanted) and self.codec.revives_plain_trees)
            if wanted:
                listed = self._matching(groups, wanted)
            else:
                listed = heapq.merge(*(_newest_first(ids, t, ns) for t, ns, ids in groups), reverse=True)
        else:
            groups = _thread_groups(self.store, config, before)
            if wanted and limit is None:  # every checkpoint is asked about: in loops, newest first
                listed = self._matched(groups, wanted)
            else:  # one by one, newest first, until ``limit`` are found
                listed, matched = _listed(groups), False
        # a stat key the filter takes serves the lineage check a result needs: one read from
        # each step's start to the result it yields, none held across a yield
        yield from self.store.observing_each(self._listed_tuples(listed, wanted, roster, limit, matched))
        self.store.meta.persist()
        if roster is not None:
            roster.persist()

    def _listed_tuples(
        self,
        listed: Iterable[tuple[str, str, str]],
        wanted: builtins.list[tuple[str, Any]],
        roster: Roster | None,
        limit: int | None,
        matched: bool = False,
    ) -> Iterator[CheckpointTuple]:
        """``list``'s results: the checkpoints of ``listed`` whose metadata holds every (key,
        value) of ``wanted``, read, at most ``limit``. ``matched``: ``listed`` was filtered
        already; each result's metadata as read is still checked (a file edited since it
        matched is left out, as a one-by-one filter would leave it)."""
        remaining = limit
        matches = self.store.meta.matches
        prepared: set[tuple[str, str]] = set()
        for cid, thread_id, ns in listed:
            try:
                if wanted and not matched:
                    ok = matches(thread_id, ns, cid, wanted)
                    if ok is None:
                        meta = self.checkpoint_metadata(thread_id, ns, cid)
                        ok = all(meta.get(k) == v for k, v in wanted)
                    if not ok:
                        continue
                if roster is not None and (thread_id, ns) not in prepared:
                    prepared.add((thread_id, ns))  # its results' pending writes: their known children
                    roster.lineage_of(thread_id, ns)
                tup = self._tuple(self.store.get(thread_id, ns, cid))
                if matched and not all(tup.metadata.get(k) == v for k, v in wanted):
                    continue
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

    def _matched(
        self, groups: builtins.list[_Group], wanted: builtins.list[tuple[str, Any]]
    ) -> Iterator[tuple[str, str, str]]:
        """``_matching`` of one thread's namespaces, made when a result is asked for: inside
        that step's read (``observing_each``), whose lineage check takes the stat keys the
        filter took instead of an lstat of each checkpoint again. One namespace is matched
        newest first in runs that double (``FIRST_RUN`` ids, then twice as many...): a caller
        that stops at its first result pays for a run, one that reads all about one loop."""
        if len(groups) != 1:
            yield from self._matching(groups, wanted, note=True)
            return
        thread_id, ns, ids = groups[0]
        end, size = len(ids), FIRST_RUN
        while end > 0:
            start = max(0, end - size)
            yield from self._matching([(thread_id, ns, ids[start:end])], wanted, note=True)
            end, size = start, 2 * size

    def _matching(
        self,
        groups: builtins.list[_Group],
        wanted: builtins.list[tuple[str, Any]],
        note: bool = False,
    ) -> builtins.list[tuple[str, str, str]]:
        """The checkpoints of ``groups`` (thread, namespace, ids) whose metadata holds every
        (key, value) of ``wanted``, newest first by id: what is kept of a checkpoint's
        metadata is checked by one lstat of its file (``MetaCache.matching``), the rest is read."""
        out: builtins.list[tuple[str, str, str]] = []
        needles = meta_needles(wanted)  # once, not per namespace
        found = self.store.meta.matching_all(groups, wanted, needles, self.codec.revives_plain_trees, note)
        for thread_id, ns, matched, unknown in found:
            if matched:
                out.extend((cid, thread_id, ns) for cid in matched)
            for cid in unknown:
                try:
                    meta = self.checkpoint_metadata(thread_id, ns, cid)
                except (FileNotFoundError, MissingReferenceError):
                    if self.store.layout.checkpoint_path(thread_id, ns, cid).exists():
                        raise  # damage; a checkpoint removed since it was listed is skipped
                    continue
                if all(meta.get(k) == v for k, v in wanted):
                    out.append((cid, thread_id, ns))
        out.sort(reverse=True)
        return out

    def checkpoint_metadata(self, thread_id: str, ns: str, cid: str, fresh: bool = False) -> dict[str, Any]:
        """A checkpoint's decoded metadata, kept per checkpoint while its file is unchanged
        (``ThreadStore.metadata``); ``fresh``: read the file itself, never a cache."""
        meta = self.store.metadata(
            thread_id, ns, cid, self._decode_metadata, plain_ok=self.codec.revives_plain_trees, fresh=fresh
        )
        return meta  # type: ignore[no-any-return]

    def _decode_metadata(self, record: CheckpointRecord, path: Path) -> Any:
        return self.codec.revive_tree(
            record.metadata, self._where(record, "/metadata"), str(path), "/metadata"
        )

    def _tuple(self, record: CheckpointRecord, remember_lists: bool = False) -> CheckpointTuple:
        thread_id, ns, cid = record.thread_id, record.checkpoint_ns, record.checkpoint_id
        values: dict[str, Any] = {}
        versions = record.channel_versions
        for channel, ref in record.values.items():
            entry = self.store.channel_value(record, channel, note=remember_lists)
            if entry.empty:
                continue
            where = f"thread {thread_id!r} checkpoint {cid} channel {channel!r} ({entry.where})"
            values[channel] = self.revive(entry, where)
            if remember_lists and entry.is_list:
                self._remember_list((thread_id, ns, channel), versions[channel], ref, entry)
        checkpoint = langgraph_checkpoint(record, values)
        cpath = str(self.store.layout.checkpoint_path(thread_id, ns, cid))
        for name, pointer, tree in extra_trees(record, cpath):
            checkpoint[name] = self.codec.revive_tree(tree, self._where(record, pointer), cpath, pointer)
        metadata = self.codec.revive_tree(
            record.metadata, self._where(record, "/metadata"), cpath, "/metadata"
        )
        parent = record.parent_id
        return CheckpointTuple(
            config=checkpoint_config(thread_id, ns, cid),
            checkpoint=checkpoint,  # type: ignore[arg-type]
            metadata=metadata,
            parent_config=checkpoint_config(thread_id, ns, parent) if parent else None,
            pending_writes=self._pending_writes(thread_id, ns, cid),
        )

    def _remember_list(self, key: tuple[str, str, str], version: Any, ref: str, entry: ValueEntry) -> None:
        """The list a channel holds at the latest checkpoint read, so the next put can append."""
        known = self._lists.get(key)
        if known is None or known.version != version:
            deps = entry.deps if entry.checkable else ((entry.file, None, None),)
            # the tree is made when the next put compares with it (an indexed list's is parsed then)
            count, depth = entry.count, entry.depth
            state = ListState(version=version, ref=ref, count=count, depth=depth, read=entry, deps=deps)
            state.weight = entry.weight
            self._lists[key] = state  # one step: another thread may let this thread go (let_go)

    def _pending_writes(self, thread_id: str, ns: str, cid: str) -> builtins.list[PendingWrite]:
        out: builtins.list[PendingWrite] = []
        for w in merged_writes(self.store, thread_id, ns, cid):
            where = (
                f"thread {thread_id!r} checkpoint {cid} pending write {w.channel!r} of task {w.task_id} "
                f"({w.path} at {w.pointer})"
            )
            value = self._revive_node(w.node, w.path, where, w.pointer)
            out.append((w.task_id, w.channel, value))
        return out

    def _where(self, record: CheckpointRecord, pointer: str) -> str:
        thread_id, cid = record.thread_id, record.checkpoint_id
        path = self.store.layout.checkpoint_path(thread_id, record.checkpoint_ns, cid)
        return f"thread {thread_id!r} checkpoint {cid} ({path} at {pointer})"

    def _revive_node(self, node: dict[str, Any], path: Path, where: str, pointer: str = "") -> Any:
        node, holder = self.store.values.resolve_node(node, path, pointer)
        if holder != path:
            where = f"{where} (value in {holder})"
        entry = entry_from_node(node, str(holder))
        entry.file, entry.root = str(holder), f"{pointer}/json" if holder == path else "/value/json"
        return self.revive(entry, where)

    def revive(self, entry: ValueEntry, where: str, *, readable: bool = False) -> Any:
        """A resolved value as ``get_tuple`` revives it (``ValueCodec.revive``)."""
        return self.codec.revive(entry, where, readable=readable)

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
        thread_id, ns = thread_ns(config)
        if self.retention is not None:
            self._used[thread_id] = self._clock()
        parent_id = config["configurable"].get("checkpoint_id")
        cid = checkpoint["id"]
        checkpoint, new_versions = _versions_for_file(checkpoint, new_versions)
        with self._ride.putting(thread_id):
            # the parent's put_writes waiting or under way: taken into this file (before the
            # lock: those writing their own files take it too)
            riders = self._ride.claim((thread_id, ns, parent_id)) if parent_id and cid > parent_id else []
            try:
                with self.store.thread_lock(thread_id):
                    if self.strict_turns:
                        self._refuse_a_second_child(thread_id, ns, parent_id, cid, metadata)
                    for attempt in range(DECIDE_AGAIN + 1):
                        again = attempt < DECIDE_AGAIN
                        if self._put_file(
                            thread_id, ns, config, checkpoint, metadata, new_versions, riders, again=again
                        ):
                            break
            finally:
                # the file holding them let them go as soon as it was durable (_put_file): any
                # left were not written (the put failed) and write their own files
                self._ride.settle(riders, ok=False)
        return checkpoint_config(thread_id, ns, cid)

    def _refuse_a_second_child(
        self, thread_id: str, ns: str, parent_id: str | None, cid: str, metadata: CheckpointMetadata
    ) -> None:
        """Strict turns, under the thread's lock: the parent must be a head still (or have only
        this checkpoint below it), and a put with no parent must find its namespace empty (two
        writers starting one thread at once made two first checkpoints, and the turn of the one
        whose line did not continue was lost), unless LangGraph says the put starts a line on
        purpose."""
        if is_deliberate(metadata):
            return
        lineage = self.store.lineage(thread_id, ns)
        where = f"thread {thread_id!r}" + (f" namespace {ns!r}" if ns else "")
        again = (
            "; nothing was written. Read the thread again (get_state) and run the turn again, or fork "
            "on purpose (update_state, or a replay from a checkpoint)"
        )
        if parent_id is None:
            others = sorted(c for c in lineage.links if c != cid)
            if others:
                raise ConcurrentTurnError(
                    f"{where}: another writer started it (checkpoint {others[-1]}) before this put of "
                    f"{cid}, written as its first checkpoint{again}"
                )
            return
        if parent_id not in lineage.links or any(h.checkpoint_id == parent_id for h in lineage.heads()):
            return
        others = [c for c in lineage.children(parent_id) if c != cid]
        if others:
            raise ConcurrentTurnError(
                f"{where}: checkpoint {parent_id} was continued by another writer ({', '.join(others)}) "
                f"before this put of {cid}{again}"
            )

    def _put_file(
        self,
        thread_id: str,
        ns: str,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
        riders: builtins.list[Waiting[_WritesCall]],
        *,
        again: bool,
    ) -> bool:
        """Decide the checkpoint file (alone among this process's writers of the thread,
        ``Pending.deciding``: a message a put beside it decided to hold is referred to there),
        then write it once what it refers to is durable. False, nothing written, when a put
        it referred to failed (``again``): the caller decides it again, holding that put's
        objects itself; never a reference into a file that is not there."""
        parent_id = config["configurable"].get("checkpoint_id")
        cid = checkpoint["id"]
        writer = self._value_writer()
        # deciding writes nothing: each file it asks about is asked once (caches.one_look)
        with self.store.deciding(thread_id) as ticket, one_look():
            host = writer.for_file(thread_id, ticket, replacing=(ns, cid))
            stored = writer.checkpoint_values(thread_id, ns, checkpoint, new_versions, parent_id)
            taken, taken_files = self._take_parent_writes(
                thread_id, ns, cid, parent_id, writer, stored.large, riders
            )
            target = f"thread {thread_id!r} checkpoint {cid}"
            extra = {k: writer.tree(v, target, f"/checkpoint/extra/{k}") for k, v in extra_fields(checkpoint)}
            record = CheckpointRecord(
                thread_id=thread_id,
                checkpoint_ns=ns,
                checkpoint_id=cid,
                parent_id=parent_id,
                checkpoint=stored_fields(checkpoint),
                extra=extra,
                metadata=writer.tree(self._metadata(config, metadata), target, "/metadata"),
                values=stored.carried,
                new_values=stored.bodies,
                parent_writes=taken,
                objects=host.objects,
            )
            staged = self.store.stage_checkpoint(record, host, stored.large, writer.parent_read)
        if not self.store.commit(staged, again=again):
            return False
        self._ride.settle(riders, ok=True)  # durable in this file: whatever follows may fail
        riders.clear()
        writer.remember(thread_id, ns, cid, stored)
        if taken_files:  # durable in the checkpoint now: the files go (format 4)
            self.store.files.discard_files(taken_files)
        return True

    def _take_parent_writes(
        self,
        thread_id: str,
        ns: str,
        cid: str,
        parent_id: str | None,
        writer: ValueWriter,
        large: builtins.list[tuple[Path, bytes]],
        riders: builtins.list[Waiting[_WritesCall]],
    ) -> tuple[dict[str, Any], builtins.list[Path]]:
        """The parent's writes files, as the records a new checkpoint holds (``parent_writes``),
        so the files can go once it is durable; and those files. Each value is stored again as
        this checkpoint stores its own (a message it holds, or one stored before, is referred
        to, not copied: the writes file may have been written before the checkpoint holding
        it was). Nothing when one of them does not read (they stay, for readers to report).
        Then the ``put_writes`` calls that waited for this put (``riders``), after the files
        (they are later); one this file cannot hold is let go to write its own."""
        if not parent_id or cid <= parent_id:
            return {}, []  # a child whose id is not later stays apart: readers look after the parent
        try:
            docs = self.store.docs.writes(thread_id, ns, parent_id)
        except (FileNotFoundError, RepoCheckpointError):
            self._let_go(riders)
            return {}, []
        taken: dict[str, Any] = {}
        files: builtins.list[Path] = []
        target = f"thread {thread_id!r} checkpoint {cid}"
        for path, doc in docs:
            key = writes_key(path.name)
            if not _WRITES_KEY.fullmatch(key):
                continue  # a name this release would not write: left as it is
            entries = []
            try:
                for i, w in enumerate(doc["writes"]):
                    node = w["value"]
                    if "json" in node:
                        pointer = f"/parent_writes/{key}/writes/{i}/value"
                        tree = self.store.values.expand(node["json"], path, f"/writes/{i}/value/json")
                        node = writer.stored_node(thread_id, {"json": tree}, large, (target, pointer))
                    entries.append({**w, "value": node})
            except InstallationError:
                raise
            except RepoCheckpointError:
                self._let_go(riders)
                return {}, []  # it does not read: every file stays, for readers to report
            taken[key] = {"task_id": doc["task_id"], "task_path": doc["task_path"], "writes": entries}
            files.append(path)
        if riders:
            self._take_riders(thread_id, ns, parent_id, riders, taken, writer, large, target)
        return taken, files

    def _take_riders(
        self,
        thread_id: str,
        ns: str,
        parent_id: str,
        riders: builtins.list[Waiting[_WritesCall]],
        taken: dict[str, Any],
        writer: ValueWriter,
        large: builtins.list[tuple[Path, bytes]],
        target: str,
    ) -> None:
        """The waiting ``put_writes`` calls as records of this checkpoint, each as its own file
        would have held it (``_writes_entries``: the first regular write of a task wins). A call
        whose values do not store here is let go: it writes its own file and raises its own
        error, never this put's."""
        existing = self._regular_writes(thread_id, ns, parent_id)
        for rider in builtins.list(riders):
            call = rider.call
            key = str(uuid6())
            mark = len(large)
            try:
                entries = self._writes_entries(
                    call, existing, writer, large, target, f"/parent_writes/{key}/writes/{{i}}/value"
                )
            except Exception:
                del large[mark:]
                self._let_go([rider])
                riders.remove(rider)
                continue
            existing.update((call.task_id, e["idx"]) for e in entries if e["idx"] >= 0)
            if entries:
                taken[key] = {"task_id": call.task_id, "task_path": call.task_path, "writes": entries}

    def _writes_entries(
        self,
        call: _WritesCall,
        existing: Collection[tuple[str, int]],
        writer: ValueWriter,
        large: builtins.list[tuple[Path, bytes]],
        target: str,
        pointer: str,
    ) -> builtins.list[dict[str, Any]]:
        """One ``put_writes`` call's entries as stored (``pointer`` with ``{i}`` for each):
        per task and ``idx`` the first regular write wins; a special one replaces."""
        entries: builtins.list[dict[str, Any]] = []
        for i, (channel, value) in enumerate(call.writes):
            idx = write_idx(channel, i)
            if idx >= 0 and (call.task_id, idx) in existing:
                continue
            at = pointer.format(i=len(entries))
            serde, data = writer.dumps(value, "writes", target, at)
            node = writer.value_node(call.thread_id, serde, data, large, (target, at), value)
            entries.append({"idx": idx, "channel": channel, "value": node})
        return entries

    def _regular_writes(self, thread_id: str, ns: str, cid: str) -> set[tuple[str, int]]:
        """(task, idx) of the regular writes a checkpoint has: a later one of these loses."""
        return {(w.task_id, w.idx) for w in merged_writes(self.store, thread_id, ns, cid) if w.idx >= 0}

    def _let_go(self, riders: builtins.list[Waiting[_WritesCall]]) -> None:
        """Calls this put cannot hold: they write their own files (and the list is emptied)."""
        self._ride.settle(riders, ok=False)
        riders.clear()

    def _metadata(self, config: RunnableConfig, metadata: CheckpointMetadata) -> CheckpointMetadata:
        """The checkpoint's metadata as LangGraph builds it, without what only says which request
        wrote it (``REQUEST_METADATA``: the Agent Server's URL with its random port, request id,
        versions), which would change every file of every run without changing the state."""
        merged = get_checkpoint_metadata(config, metadata)
        if self.keep_request_metadata:
            return merged
        return {k: v for k, v in merged.items() if k not in REQUEST_METADATA}  # type: ignore[return-value]

    def _value_writer(self) -> ValueWriter:
        """Value storage under the current codec (it changes when a graph's types are learnt)."""
        return ValueWriter(
            self.store,
            self.codec,
            self._lists,
            self.large_value_bytes,
            self.snapshot_every,
            recent=self._large_values,
        )

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """As the base class: per task and ``idx`` the first regular write wins and a special
        one replaces; each call adds one writes file, never changing one already written."""
        thread_id, ns = thread_ns(config)
        cid = config["configurable"]["checkpoint_id"]
        call = _WritesCall(
            thread_id=thread_id, ns=ns, cid=str(cid), writes=writes, task_id=task_id, task_path=task_path
        )
        # wait a moment for the child's put to hold these writes (ride.py)
        with self._ride.writes((thread_id, ns, str(cid)), call, wait=True) as rode:
            if rode:
                return
            with self.store.thread_lock(thread_id):
                for attempt in range(DECIDE_AGAIN + 1):
                    if self._writes_file(call, again=attempt < DECIDE_AGAIN):
                        return

    def _writes_file(self, call: _WritesCall, *, again: bool) -> bool:
        """Decide and write one writes file, as ``_put_file`` a checkpoint (its own objects
        are never referred to from elsewhere: the child checkpoint stores them again); False
        when a write it referred to failed and it must decide again."""
        thread_id, ns, cid, _, task_id, task_path = call
        writer = self._value_writer()
        with self.store.deciding(thread_id) as ticket:
            host = writer.for_file(thread_id, ticket)
            existing = self._regular_writes(thread_id, ns, cid)
            large: builtins.list[tuple[Path, bytes]] = []
            target = f"thread {thread_id!r} checkpoint {cid} task {task_id}"
            entries = self._writes_entries(call, existing, writer, large, target, "/writes/{i}/value")
            if not entries:
                return True
            record = TaskWrites(thread_id, ns, cid, task_id, task_path, entries, host.objects)
            staged = self.store.stage_writes(record, str(uuid6()), host, large)
        return self.store.commit(staged, again=again)

    # ------------------------------------------------------------------
    # maintenance (maintenance.py): each removal is a plan, carried out
    # ------------------------------------------------------------------
    def delete_thread(self, thread_id: str) -> None:
        """As the base class; the thread's folder is renamed away first, so no reader sees half."""
        with self.store.thread_lock(thread_id, exclusive=True):
            self.store.files.remove_tree(self.store.layout.thread_dir(thread_id))
            self._forget(thread_id)

    def _forget(self, thread_id: str) -> None:
        self.store.forget_thread(thread_id)
        self._let_go_lists(thread_id)
        self._large_values.forget(thread_id)

    def _let_go_lists(self, thread_id: str) -> None:
        """The lists a put appends to, of a thread forgotten or let go (ThreadStore.let_go):
        the next ``get_tuple`` of it reads them again."""
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
                carry_out(self.store, plan_runs(self.store, self._fresh_metadata, thread_id, wanted))

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
                carry_out(self.store, plan_keep_latest(self.store, self._fresh_metadata, thread_id))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """As the base class (every file, so whole parent chains); copying a thread onto itself
        does nothing."""
        if source_thread_id == target_thread_id:
            return
        copy_thread_files(self.store, source_thread_id, target_thread_id)
        self._forget(target_thread_id)

    def sweep(self, *, dry_run: bool = False) -> builtins.list[PrunePlan]:
        """Apply ``ttl`` to every thread now: each thread's plan (``skipped`` says why a thread
        is kept; an empty plan: nothing to do), carried out unless ``dry_run``. Without ``ttl``
        or before anything was written: nothing."""
        if self.retention is None or not self.root.is_dir():
            return []
        reader, now = Reader(self.root), self._clock()
        used = dict(self._used)
        return sweep_threads(reader, self.retention, now, dry_run=dry_run, forget=self._forget, used=used)

    def _swept(self) -> int:
        """One sweep of the background sweeper: how many threads it changed."""
        return sum(1 for plan in self.sweep() if plan.doomed)

    def start_ttl_sweeper(
        self, sweep_interval_minutes: float | None = None
    ) -> concurrent.futures.Future[None]:
        """Sweep at once, then every ``sweep_interval_minutes`` (default: ``ttl``'s, else 5) in a
        daemon thread until ``stop_ttl_sweeper``; the future ends with the thread."""
        configured = self.retention.sweep_interval_minutes if self.retention else None
        return self._sweeper.start(float(sweep_interval_minutes or configured or 5), at_once=True)

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper (between two sweeps); True when it has stopped within ``timeout`` seconds."""
        return self._sweeper.stop(timeout)

    def _fresh_metadata(self, thread_id: str, ns: str, cid: str) -> Mapping[str, Any]:
        """What decides a removal: metadata read from the file itself, never from a cache."""
        return self.checkpoint_metadata(thread_id, ns, cid, fresh=True)

    # ------------------------------------------------------------------
    # forks: heads, choose, edit, merge (forks.py; docs/forks.md)
    # ------------------------------------------------------------------
    def heads(self, config: RunnableConfig) -> builtins.list[Head]:
        """The heads of ``config``'s namespace, settled or not: the one that continues first,
        then the others newest first (docs/forks.md)."""
        return forks.heads(self._learn_graph_types(0), config)

    def choose_head(self, config: RunnableConfig) -> RunnableConfig:
        """Make the head ``config`` names continue, the choice recorded (forks.choose_head)."""
        return forks.choose_head(self, config)

    async def aheads(self, config: RunnableConfig) -> builtins.list[Head]:
        """``heads`` in a worker thread."""
        return await asyncio.to_thread(self.heads, config)

    async def achoose_head(self, config: RunnableConfig) -> RunnableConfig:
        """``choose_head`` in a worker thread."""
        return await asyncio.to_thread(self.choose_head, config)

    def edit_state(
        self, config: RunnableConfig, values: Mapping[str, Any], *, force: bool = False
    ) -> RunnableConfig:
        """A supported edit, as LangGraph's ``update_state`` writes one (forks.edit_state);
        refused on a head that waits unless ``force``."""
        return forks.edit_state(self, config, values, force=force)

    def merge_heads(self, config: RunnableConfig, other: str) -> RunnableConfig:
        """Keep both branches' turns (forks.merge_heads)."""
        return forks.merge_heads(self, config, other)

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
        thread_id, ns = thread_ns(config)
        ns_dir = self.store.layout.ns_dir(thread_id, ns)
        cid = get_checkpoint_id(config)
        if not cid:
            cid = self.store.current(thread_id, ns)
        collected: dict[str, builtins.list[PendingWrite]] = {c: [] for c in channels}
        seeds: dict[str, Any] = {}
        remaining = set(channels)
        for record in self.store.ancestors(thread_id, ns, cid) if cid and remaining else ():
            current = record.checkpoint_id
            ended: dict[str, Any] = {}
            for ch in remaining:
                ref = record.values.get(ch)
                if ref is None:
                    continue
                entry = self.store.values.value_entry(ns_dir, ch, record.channel_versions.get(ch), ref)
                if not entry.empty:
                    where = f"thread {thread_id!r} checkpoint {current} channel {ch!r} ({entry.where})"
                    ended[ch] = self.revive(entry, where)
            for write in reversed(self._pending_writes(thread_id, ns, current)):
                if write[1] in remaining:
                    collected[write[1]].append(write)
            for ch, value in ended.items():
                seeds[ch] = value
                remaining.discard(ch)
            if not remaining:
                break
        result: dict[str, DeltaChannelHistory] = {}
        for ch in channels:
            entry_h: DeltaChannelHistory = {"writes": list(reversed(collected[ch]))}
            if ch in seeds:
                entry_h["seed"] = seeds[ch]
            result[ch] = entry_h
        return result

    def get_next_version(self, current: str | None, channel: None) -> str:
        """``"00000017.9f3a61c2"``: short, increasing as LangGraph compares versions (as
        strings), greater than every older form it continues (core/format/versions.py); the random
        part keeps versions written on two git branches apart. Reads show LangGraph the
        versions widened (``for_langgraph``), so another saver continues them too."""
        return next_version(current)

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
        """``list`` in a worker thread, each checkpoint yielded as soon as it is read."""
        view = self._learn_graph_types(0)  # here, where the calling graph is on the stack
        rows = view.list(config, filter=filter, before=before, limit=limit)
        try:
            while True:
                item = await asyncio.to_thread(next, rows, None)
                if item is None:
                    return
                yield item
        finally:
            rows.close()

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

    async def asweep(self, *, dry_run: bool = False) -> builtins.list[PrunePlan]:
        return await asyncio.to_thread(self.sweep, dry_run=dry_run)

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """``get_delta_channel_history`` in a worker thread."""
        view = self._learn_graph_types(0)
        return await asyncio.to_thread(
            lambda: view.get_delta_channel_history(config=config, channels=channels)
        )


def _versions_for_file(
    checkpoint: Checkpoint, new_versions: ChannelVersions
) -> tuple[Checkpoint, ChannelVersions]:
    """The versions of a put as the files keep them (short, core/format/versions.py); the caller's
    checkpoint is LangGraph's, still in use, and is not changed."""
    stored: Any = dict(checkpoint)
    if "channel_versions" in checkpoint:
        stored["channel_versions"] = {k: for_file(v) for k, v in checkpoint["channel_versions"].items()}
    if "versions_seen" in checkpoint:
        stored["versions_seen"] = seen_for_file(checkpoint["versions_seen"])
    return stored, {k: for_file(v) for k, v in new_versions.items()}


def _across_threads(
    roster: Roster, config: RunnableConfig | None, before: RunnableConfig | None, seed_meta: bool
) -> builtins.list[_Group]:
    """``list``'s namespaces across threads, as (thread, namespace, ids): from the roster
    (roster.py: checked against each folder's stat key), ``before`` and the config's
    namespace and checkpoint applied."""
    conf = config["configurable"] if config else {}
    ns_filter = conf.get("checkpoint_ns")
    narrow = conf.get("checkpoint_id") is not None or before is not None
    groups = []
    for tid, ns, ids in roster.spaces(seed_meta=seed_meta):
        if ns_filter is not None and ns != ns_filter:
            continue
        if narrow:
            ids = _narrowed(ids, conf, before)
        if ids:
            groups.append((tid, ns, ids))
    return groups


def _narrowed(ids: tuple[str, ...], conf: Any, before: RunnableConfig | None) -> tuple[str, ...]:
    """A namespace's ids (oldest first) as ``list`` asks for them: the config's checkpoint
    alone when it names one, those older than ``before``."""
    want_id = conf.get("checkpoint_id")
    if want_id is not None:
        ids = tuple([i for i in ids if i == want_id])
    before_id = get_checkpoint_id(before) if before else None
    if before_id is not None:
        ids = ids[: bisect.bisect_left(ids, before_id)]
    return ids


def _newest_first(ids: Sequence[str], thread_id: str, ns: str) -> Iterator[tuple[str, str, str]]:
    for cid in reversed(ids):
        yield cid, thread_id, ns


def _thread_groups(
    store: ThreadStore, config: RunnableConfig | None, before: RunnableConfig | None
) -> builtins.list[_Group]:
    """``list``'s namespaces of the config's thread, as (thread, namespace, ids), ``before``
    and the config's namespace and checkpoint applied."""
    conf = config["configurable"] if config else {}
    threads = [str(conf["thread_id"])] if conf.get("thread_id") is not None else store.thread_ids()
    ns_filter = conf.get("checkpoint_ns")
    groups: list[_Group] = []
    for thread_id in threads:
        namespaces = [ns_filter] if ns_filter is not None else store.namespaces(thread_id)
        for ns in namespaces:
            # a tuple, as the roster's: a view compares them
            ids = _narrowed(tuple(store.checkpoint_ids(thread_id, ns)), conf, before)
            if ids:
                groups.append((thread_id, ns, ids))
    return groups


def _listed(groups: builtins.list[_Group]) -> Iterable[tuple[str, str, str]]:
    """The checkpoints of ``groups`` as (id, thread, namespace): newest first within one
    namespace, and across namespaces newest first by id, as SqliteSaver orders them."""
    if len(groups) == 1:
        thread_id, ns, ids = groups[0]
        return ((cid, thread_id, ns) for cid in reversed(ids))
    return sorted(((c, t, n) for t, n, ids in groups for c in ids), reverse=True)


def serde_with(
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


def allow_keys(items: Iterable[Any]) -> frozenset[tuple[str, ...]]:
    """Allowlist entries as (module, name) keys; a class stands for its own."""
    return frozenset(
        (item.__module__, item.__name__) if isinstance(item, type) else tuple(item) for item in items
    )


_log = logging.getLogger(__name__)


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


def _default_root() -> Path:
    """``RepoSaver()``'s root; a new one outside any git work tree is said once, naming it: run
    from the wrong folder, a saver would otherwise start an empty history there unseen."""
    path = find_default_root()
    if not path.exists() and not (path.parent / ".git").exists() and path not in _WARNED:
        _WARNED.add(path)
        _log.warning(
            "RepoSaver(): no git work tree here, so the state goes to a new folder %s (give "
            "RepoSaver(root) to use another)",
            path,
        )
    return path


_WARNED: set[Path] = set()


def _referrer_gone(exc: Exception) -> bool:
    """A missing reference whose own file is gone too: the read raced a removal."""
    return isinstance(exc, MissingReferenceError) and exc.names_referrer and not os.path.lexists(exc.path)
