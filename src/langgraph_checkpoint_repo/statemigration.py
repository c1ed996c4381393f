"""Your own state migrations across stored threads (``langgraph-repo migrate-state``,
docs/migrating.md, "Migrating your state schema").

A migration is a function from a thread's old state (its channel values, as a graph reads
them) to its new state, or declared renames and defaults of channels and of fields inside
values (a JSON or TOML file: data, no code), or both (the declarations first). Each thread
it changes gets one new checkpoint continuing the checkpoint the thread continues from, as
``update_state`` writes one (``forks.write_update``: ``source: "update"``, the next step,
each changed channel at a new version), its metadata naming the migration
(``{"migration": NAME}``); nothing already written changes, so the migration is a pull
request ``review`` shows thread by thread, and history keeps the state before it.

A thread is left alone when its latest checkpoint names the migration already, or the
migration changes nothing in it (a rename whose old channel is gone, a default already
filled), so a second run writes nothing. A thread that waits (an interrupt, scheduled tool
calls, a finished task's saved writes) is refused unless ``include_waiting``, as an edit
is: the new checkpoint does not carry what waits (the interrupted task asks again). A
namespace whose heads wait for a choice (a race, a merge: docs/forks.md) is refused: the
migration would continue one line and leave the other on the old schema.

Namespaces: as ``graph.update_state`` does, a migration writes in the namespace it is given,
the root by default. A subgraph's namespace is the state of one call of it; the next call
starts a namespace of its own (from the parent's task), so the root is what continues. A
subgraph whose state is kept across calls (a stable namespace: ``checkpointer=True``) is
migrated by naming it (``ns``).
"""

from __future__ import annotations

import copy
import json
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .configs import checkpoint_config
from .core.errors import BadInputError, NotFoundError
from .core.format.fields import MIGRATION_KEY, migration_name
from .core.lineage import where_of
from .core.sends import TASKS
from .edits import scheduled_calls
from .forks import Update, waits, write_update
from .readmodel.tasks import is_internal
from .saver import RepoSaver

MAX_RULES_BYTES = 1024 * 1024  # renames and defaults of a schema: a megabyte is plenty

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the tests run on 3.11
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]


StateFunction = Callable[[dict[str, Any]], Mapping[str, Any]]


class MigrationError(BadInputError):
    """A migration that cannot be applied to a thread (a declared field inside a value that
    is not an object, a function that fails or returns no mapping); nothing was written."""


@dataclass(frozen=True)
class StateMigration:
    """A named migration: ``rename`` (``"old": "new"`` for a channel, ``"channel.field":
    "new_field"`` for a field inside a channel's value, nested with more dots), ``default``
    (``"channel"`` or ``"channel.field"`` to a value, filled where it is missing), applied in
    that order, then ``function`` (old state in, new state out: every channel it returns is
    the thread's, one it leaves out is dropped)."""

    name: str
    function: StateFunction | None = None
    rename: Mapping[str, str] = field(default_factory=dict)
    default: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise BadInputError("a migration needs a name (it is written in each new checkpoint's metadata)")
        if self.function is None and not self.rename and not self.default:
            raise BadInputError(
                f"migration {self.name!r} declares nothing: give renames, defaults or a function"
            )
        for old, new in self.rename.items():
            if not isinstance(new, str) or not new or not isinstance(old, str) or not old:
                raise BadInputError(f"migration {self.name!r}: rename {old!r} = {new!r}: expected two names")
            if "." in new and new.rpartition(".")[0] != old.rpartition(".")[0]:
                raise BadInputError(
                    f"migration {self.name!r}: rename {old!r} = {new!r}: a field is renamed in its own "
                    f"object (give the new name alone, e.g. {new.rpartition('.')[2]!r})"
                )

    @classmethod
    def from_file(
        cls, path: Path, name: str | None = None, function: StateFunction | None = None
    ) -> StateMigration:
        """Declared renames and defaults from a JSON or TOML file (by its suffix: ``.toml``
        is TOML, anything else JSON): ``name`` (else the file's stem), ``rename``, ``default``;
        ``function`` runs after them. Reading it runs no code."""
        try:
            with path.open("rb") as fh:  # bounded: a file in a pull request can be anything
                raw = fh.read(MAX_RULES_BYTES + 1)
            if len(raw) > MAX_RULES_BYTES:
                raise ValueError(f"over {MAX_RULES_BYTES:,} bytes")
            text = raw.decode("utf-8")
            data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
        except (OSError, ValueError, RecursionError) as exc:  # RecursionError: nested too deep
            raise BadInputError(f"{path}: cannot read the migration: {exc}") from None
        unknown = sorted(set(data) - {"name", "rename", "default"}) if isinstance(data, dict) else []
        if not isinstance(data, dict) or unknown:
            raise BadInputError(f'{path}: expected "name", "rename" and "default" (not {unknown})')
        for key in ("rename", "default"):
            if not isinstance(data.get(key, {}), dict):
                raise BadInputError(f"{path}: {key!r} must be a table (an object) of names")
        return cls(
            name or str(data.get("name") or path.stem),
            function,
            data.get("rename", {}),
            data.get("default", {}),
        )

    def apply(self, state: Mapping[str, Any]) -> dict[str, Any]:
        """The new state of ``state`` (left as it is: the function gets a copy)."""
        new = copy.deepcopy(dict(state))
        for old, to in self.rename.items():
            _rename(new, old.split("."), to.rpartition(".")[2], self.name)
        for path, value in self.default.items():
            _fill(new, path.split("."), value, self.name)
        if self.function is None:
            return new
        made = self.function(new)
        if not isinstance(made, Mapping):
            raise MigrationError(
                f"migration {self.name!r}: the function returned a {type(made).__name__}, not the new state"
            )
        return dict(made)


def _container(state: dict[str, Any], path: list[str], name: str) -> dict[str, Any] | None:
    """The object holding the last name of ``path`` (the state itself for a channel); None
    when a part on the way is missing; refused when one is not an object."""
    here: Any = state
    for i, part in enumerate(path[:-1]):
        if part not in here or here[part] is None:
            return None
        here = here[part]
        if not isinstance(here, dict):
            where = ".".join(path[: i + 1])
            raise MigrationError(
                f"migration {name!r}: {where} holds a {type(here).__name__}, not an object: declared "
                "fields apply to JSON objects (a function migrates other values)"
            )
    return here  # type: ignore[no-any-return]


def _rename(state: dict[str, Any], path: list[str], new: str, name: str) -> None:
    """Move ``path``'s value to ``new`` in its object; nothing when it is not there (migrated)."""
    holder = _container(state, path, name)
    if holder is None or path[-1] not in holder:
        return
    if new in holder:
        where = ".".join([*path[:-1], new])
        raise MigrationError(
            f"migration {name!r}: cannot rename {'.'.join(path)} to {where}: both hold a value"
        )
    holder[new] = holder.pop(path[-1])


def _fill(state: dict[str, Any], path: list[str], value: Any, name: str) -> None:
    """Set ``path`` to ``value`` where it is missing; an object on the way that is missing is
    not made (a field default fills the objects there are)."""
    holder = _container(state, path, name)
    if holder is not None and path[-1] not in holder:
        holder[path[-1]] = copy.deepcopy(value)


@dataclass
class ThreadMigration:
    """What a migration did (or would do) to one thread: ``status`` is ``migrate`` (planned),
    ``migrated``, ``already migrated``, ``unchanged``, ``refused`` or ``no namespace``;
    ``checkpoint`` the one it continues, ``new_checkpoint`` the one written; ``changes`` in
    words (``notes -> summary``, ``profile: +tier = "free"``); ``reason`` why it was refused."""

    thread_id: str
    ns: str
    status: str
    checkpoint: str | None = None
    new_checkpoint: str | None = None
    changes: list[str] = field(default_factory=list)
    reason: str = ""
    values: dict[str, Any] = field(default_factory=dict, repr=False)  # changed and added channels
    dropped: frozenset[str] = frozenset()

    def to_json(self) -> dict[str, Any]:
        return {
            "thread_id": self.thread_id,
            "checkpoint_ns": self.ns,
            "status": self.status,
            "checkpoint": self.checkpoint,
            "new_checkpoint": self.new_checkpoint,
            "changes": self.changes,
            "reason": self.reason,
        }


def migrate_threads(
    saver: RepoSaver,
    migration: StateMigration,
    thread_ids: Iterable[str] | None = None,
    *,
    ns: str = "",
    dry_run: bool = False,
    include_waiting: bool = False,
) -> list[ThreadMigration]:
    """Apply ``migration`` to every thread (or ``thread_ids``) in namespace ``ns``: one new
    checkpoint per thread it changes (module docstring). Every thread is planned first, so
    a migration that fails on one (``MigrationError``) writes nothing; ``dry_run`` returns
    the plan. Each write re-plans its thread under the thread's lock if it moved meanwhile."""
    known = sorted(saver.store.thread_ids())
    ids = known if thread_ids is None else list(dict.fromkeys(thread_ids))
    missing = [t for t in ids if t not in known]
    if missing:
        raise NotFoundError(f"no thread {missing[0]!r} under {saver.root}; nothing was migrated")
    plans = [plan_thread(saver, migration, t, ns, include_waiting=include_waiting) for t in ids]
    if dry_run:
        return plans
    for i, plan in enumerate(plans):
        if plan.status == "migrate":
            plans[i] = _write(saver, migration, plan, include_waiting)
    return plans


def plan_thread(
    saver: RepoSaver,
    migration: StateMigration,
    thread_id: str,
    ns: str = "",
    *,
    include_waiting: bool = False,
) -> ThreadMigration:
    """What ``migration`` would write in one thread, nothing written (``migrate_threads``)."""
    if ns not in saver.store.namespaces(thread_id):
        return ThreadMigration(
            thread_id, ns, "no namespace", reason=f"{where_of(thread_id, ns)} is not there"
        )
    lineage = saver.store.lineage(thread_id, ns)
    unsettled = [h.checkpoint_id for h in lineage.heads() if not h.settled]
    if len(unsettled) > 1:
        why = (
            f"its heads wait for a choice ({', '.join(unsettled)}): settle them first "
            f"(langgraph-repo heads {thread_id} --choose ID, docs/forks.md)"
        )
        return ThreadMigration(thread_id, ns, "refused", lineage.current(), reason=why)
    head = saver.get_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ns}})
    if head is None:
        return ThreadMigration(
            thread_id, ns, "no namespace", reason=f"{where_of(thread_id, ns)} has no checkpoint"
        )
    cid = str(head.checkpoint["id"])
    if migration_name(head.metadata) == migration.name:
        return ThreadMigration(thread_id, ns, "already migrated", cid)
    partial = not_whole(head.checkpoint, head.metadata)
    if partial:
        why = (
            f"channel {', '.join(partial)} is not stored whole at its latest checkpoint (a "
            "DeltaChannel keeps what each step added; the graph rebuilds it): a migration without "
            "the graph cannot read it; migrate this thread with the graph's update_state"
        )
        return ThreadMigration(thread_id, ns, "refused", cid, reason=why)
    values = head.checkpoint["channel_values"]
    old = {k: v for k, v in values.items() if not is_internal(k)}
    new = _migrated(migration, thread_id, old)
    if new == old:
        return ThreadMigration(thread_id, ns, "unchanged", cid)
    changed = {k: v for k, v in new.items() if k not in old or old[k] != v}
    plan = ThreadMigration(thread_id, ns, "migrate", cid, None, describe(old, new), "", changed)
    plan.dropped = frozenset(set(old) - set(new))
    waiting = waits(head, scheduled_calls(values.get(TASKS)))
    if waiting and not include_waiting:
        plan.status = "refused"
        plan.reason = f"it waits: {'; '.join(waiting)} (--include-waiting migrates it anyway)"
    return plan


def not_whole(checkpoint: Mapping[str, Any], metadata: Mapping[str, Any]) -> list[str]:
    """The DeltaChannels of the checkpoint: between snapshots one is absent from the values
    (LangGraph counts its updates in the metadata's ``counters_since_delta_snapshot``), at one
    it is LangGraph's snapshot object, not the value. Only the graph's reducer makes their
    value, so a migration that read the stored values would see nothing there, or the wrong
    thing (hostile review). An EphemeralValue or UntrackedValue, absent by design, is not one."""
    from ._compat import DeltaSnapshot

    values = checkpoint["channel_values"]
    counted = metadata.get("counters_since_delta_snapshot")
    counted = counted if isinstance(counted, Mapping) else {}
    return sorted(
        name
        for name in checkpoint["channel_versions"]
        if not is_internal(name)
        and ((name not in values and name in counted) or isinstance(values.get(name), DeltaSnapshot))
    )


def _migrated(migration: StateMigration, thread_id: str, old: dict[str, Any]) -> dict[str, Any]:
    """The thread's new state; any failure of the migration (the user's function raising
    included) is one ``MigrationError`` naming the thread, so the run stops before writing."""
    try:
        new = migration.apply(old)
    except MigrationError as exc:
        raise MigrationError(f"thread {thread_id!r}: {exc}") from None
    except Exception as exc:  # the user's function failed: say where, in one line
        raise MigrationError(
            f"thread {thread_id!r}: migration {migration.name!r} raised {type(exc).__name__}: {exc}"
        ) from exc
    internal = sorted(k for k in new if is_internal(k))
    if internal:
        raise MigrationError(
            f"thread {thread_id!r}: migration {migration.name!r} returned LangGraph's own channel "
            f"{internal[0]!r}: a migration changes the state's channels only"
        )
    return new


def _write(
    saver: RepoSaver, migration: StateMigration, plan: ThreadMigration, include_waiting: bool
) -> ThreadMigration:
    """Write one planned thread, under its lock; planned again when its head moved since."""
    with saver.store.thread_lock(plan.thread_id):
        if saver.store.current(plan.thread_id, plan.ns) != plan.checkpoint:
            plan = plan_thread(saver, migration, plan.thread_id, plan.ns, include_waiting=include_waiting)
            if plan.status != "migrate":
                return plan
        assert plan.checkpoint is not None
        update = Update(plan.values, plan.dropped, True, {MIGRATION_KEY: migration.name})
        config = checkpoint_config(plan.thread_id, plan.ns, plan.checkpoint)
        written = write_update(saver, config, update, force=include_waiting)
    plan.status, plan.new_checkpoint = "migrated", str(written["configurable"]["checkpoint_id"])
    return plan


def describe(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """What changed from ``old`` to ``new``, channel by channel, in words: ``a -> b`` (a
    channel renamed: its value moved), ``+c = VALUE``, ``-d``, and inside an object the same
    of its fields (``profile: name -> full_name, +tier = "free"``)."""
    out = _renames_and_more(old, new)
    for key in sorted(set(old) & set(new)):
        if old[key] == new[key]:
            continue
        if isinstance(old[key], dict) and isinstance(new[key], dict):
            out.append(f"{key}: {', '.join(_renames_and_more(old[key], new[key], nested=True))}")
        elif isinstance(old[key], list) and isinstance(new[key], list):
            out.append(f"{key}: {_list_change(old[key], new[key])}")
        else:
            out.append(f"{key}: {_inline(old[key])} -> {_inline(new[key])}")
    return out


def _list_change(old: list[Any], new: list[Any]) -> str:
    """A list's change in words: the items appended, else how many items it holds now."""
    if len(new) > len(old) and new[: len(old)] == old:
        added = new[len(old) :]
        return f"+{len(added)} item{'s' if len(added) > 1 else ''} {_inline(added)}"
    return f"{len(old)} items -> {len(new)} items, changed"


def _renames_and_more(old: Mapping[str, Any], new: Mapping[str, Any], nested: bool = False) -> list[str]:
    """The keys ``new`` renamed (an old key gone whose value a new key holds), added and
    removed; with ``nested``, the keys both hold that changed too (one level down only)."""
    gone = [k for k in old if k not in new]
    came = [k for k in new if k not in old]
    out = []
    for k in list(gone):
        twin = next((c for c in came if new[c] == old[k]), None)
        if twin is not None:
            out.append(f"{k} -> {twin}")
            gone.remove(k)
            came.remove(twin)
    out += [f"+{k} = {_inline(new[k])}" for k in came] + [f"-{k}" for k in gone]
    if nested:
        both = [k for k in new if k in old and old[k] != new[k]]
        out += [f"{k}: {_inline(old[k])} -> {_inline(new[k])}" for k in both]
    return out


def _inline(value: Any, most: int = 60) -> str:
    """A value on one line, as JSON where it is JSON, cut at ``most`` characters."""
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        text = repr(value)
    text = " ".join(text.split())
    return text if len(text) <= most else text[: most - 1] + "…"
