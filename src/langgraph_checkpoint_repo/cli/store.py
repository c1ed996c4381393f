"""``langgraph-repo store``: RepoStore's items from the command line (ls, get, search, put,
delete, sweep).

Everything goes through the file layer (core/items.py), so no command imports LangGraph: a
value is shown as stored (one the serializer built shows its tree, tags and all), and ``put``
takes JSON, redacted as RepoStore redacts. A namespace is written with its labels joined by
``.`` (``users.alice``), which no label holds; ``""`` is the whole store. The search of
``ls``/``search`` and the redaction of ``put`` are imported where they run, so the other
commands start without them.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime
from typing import Annotated, Any

import typer

from ..core.errors import BadInputError, FileFormatError, NotFoundError
from ..core.files import Files
from ..core.items import ANY, ItemFiles, StoredItem, check_namespace, plain_tree
from ..core.jsonread import parse_strict
from .app import DryRunOpt, JsonOpt, parse_date, require_root, settings_of
from .output import Text, print_json

NamespaceArg = Annotated[str, typer.Argument(help="Namespace labels joined by '.', e.g. users.alice.")]
PrefixArg = Annotated[str, typer.Argument(help="Namespace prefix, labels joined by '.' (default: all).")]
KeyArg = Annotated[str, typer.Argument(help="The item's key.")]
LimitOpt = Annotated[int, typer.Option("--limit", help="At most this many.")]
OffsetOpt = Annotated[int, typer.Option("--offset", help="Skip this many first.")]
IfUpdatedOpt = Annotated[
    str | None,
    typer.Option(
        "--if-updated-at",
        metavar="TIME",
        help="Only if the item is still the version read (its updated_at, ISO 8601); 'absent': only "
        "if there is none. Else nothing is written (exit 5).",
    ),
]


def namespace_of(text: str, *, prefix: bool = False) -> tuple[str, ...]:
    """``users.alice`` as ``("users", "alice")``; the labels checked as the store checks them."""
    labels = tuple(text.split(".")) if text else ()
    return check_namespace(labels, of_item=not prefix)


def _files(ctx: typer.Context, *, writing: bool = False) -> ItemFiles:
    root = settings_of(ctx).root
    require_root(root, creating=writing)
    return ItemFiles(Files(root))


def _expect(text: str | None) -> Any:
    if text is None:
        return ANY
    if text == "absent":
        return None
    return parse_date(text)


def _shown(item: StoredItem) -> dict[str, Any]:
    out: dict[str, Any] = {
        "namespace": list(item.namespace),
        "key": item.key,
        "value": item.tree,
        "created_at": item.doc["created_at"],
        "updated_at": item.doc["updated_at"],
        "path": str(item.path),
    }
    if item.ttl_minutes is not None:
        out["ttl_minutes"] = item.ttl_minutes
        out["expires_at"] = item.doc["expires_at"]
    return out


def ls(
    ctx: typer.Context,
    prefix: PrefixArg = "",
    suffix: Annotated[
        str, typer.Option("--suffix", help="Namespaces ending with these labels ('*': any).")
    ] = "",
    max_depth: Annotated[
        int | None, typer.Option("--max-depth", help="Cut namespaces to this many labels.")
    ] = None,
    limit: LimitOpt = 1000,
    offset: OffsetOpt = 0,
    as_json: JsonOpt = False,
) -> None:
    """The namespaces that hold items, sorted ('*' in a prefix or suffix matches any label)."""
    from ..core.itemsearch import select_namespaces

    files = _files(ctx)
    conditions = []
    if prefix:
        conditions.append(("prefix", prefix.split(".")))
    if suffix:
        conditions.append(("suffix", suffix.split(".")))
    found = select_namespaces(files.namespaces(), conditions, max_depth, limit, offset)
    if as_json:
        print_json([list(ns) for ns in found])
        return
    for ns in found:
        settings_of(ctx).out.print(Text(".".join(ns)))


def get(ctx: typer.Context, namespace: NamespaceArg, key: KeyArg, as_json: JsonOpt = False) -> None:
    """One item: its value as JSON (with --json: its namespace, key, times and file too)."""
    files = _files(ctx)
    ns = namespace_of(namespace)
    item = files.get(ns, key)
    if item is None:
        raise NotFoundError(f"no item {key!r} in namespace {namespace!r} ({files.path(ns, key)})")
    print_json(_shown(item) if as_json else item.tree)


def search(
    ctx: typer.Context,
    prefix: PrefixArg = "",
    filter: Annotated[
        str | None,
        typer.Option(
            "--filter", metavar="JSON", help='As RepoStore.search: {"field": value} or {"n": {"$gt": 3}}.'
        ),
    ] = None,
    limit: LimitOpt = 10,
    offset: OffsetOpt = 0,
    as_json: JsonOpt = False,
) -> None:
    """Items under a namespace prefix that pass a filter, newest updated_at first (no semantic
    search here: that needs the embedder, in Python)."""
    from ..core.itemsearch import filter_problem, matches

    wanted = _json_arg(filter, "--filter") if filter is not None else None
    if wanted is not None and not isinstance(wanted, dict):
        raise BadInputError("--filter takes a JSON object")
    problem = filter_problem(wanted)
    if problem is not None:
        raise BadInputError(f"--filter: {problem}")
    files = _files(ctx)
    found = [i for i in files.walk(namespace_of(prefix, prefix=True)) if matches(i.tree, wanted)]
    found.sort(key=lambda i: (i.namespace, i.key))
    found.sort(key=lambda i: i.updated_at, reverse=True)
    page = found[offset : offset + limit]
    if as_json:
        print_json([_shown(i) for i in page])
        return
    out = settings_of(ctx).out
    for item in page:
        value = json.dumps(item.tree, ensure_ascii=False, sort_keys=True)
        out.print(Text(f"{'.'.join(item.namespace)} {item.key}: {value}"))


def put(
    ctx: typer.Context,
    namespace: NamespaceArg,
    key: KeyArg,
    value: Annotated[str, typer.Argument(help="The value: a JSON object, or - to read it from stdin.")],
    ttl: Annotated[
        float | None, typer.Option("--ttl", help="Expire this many minutes after the write.")
    ] = None,
    if_updated_at: IfUpdatedOpt = None,
) -> None:
    """Write an item (its created_at kept when it replaces one); secrets are redacted first."""
    from ..core.redaction import Redactor

    data = _json_arg(sys.stdin.read() if value == "-" else value, "VALUE")
    if not isinstance(data, dict):
        raise BadInputError("VALUE must be a JSON object")
    redactor = Redactor()
    tree = plain_tree(data, redactor)
    if tree is None:  # "$" keys: stored as the serializer stores a dict, a $map
        import ormsgpack

        from ..core.format.tree import msgpack_to_tree

        tree = msgpack_to_tree(redactor.redact_msgpack(ormsgpack.packb(data)))
    files = _files(ctx, writing=True)
    ns = namespace_of(namespace)
    item = files.put(ns, key, tree, ttl_minutes=ttl, expect=_expect(if_updated_at))
    settings_of(ctx).err.print(Text(f"wrote {item.path} (updated_at {item.doc['updated_at']})"))


def delete(
    ctx: typer.Context, namespace: NamespaceArg, key: KeyArg, if_updated_at: IfUpdatedOpt = None
) -> None:
    """Remove an item (and its namespace's folders, once empty)."""
    files = _files(ctx, writing=True)
    ns = namespace_of(namespace)
    if not files.delete(ns, key, expect=_expect(if_updated_at)):
        raise NotFoundError(f"no item {key!r} in namespace {namespace!r} ({files.path(ns, key)})")
    settings_of(ctx).err.print(Text(f"removed {files.path(ns, key)}"))


def sweep(
    ctx: typer.Context,
    dry_run: DryRunOpt = False,
    at: Annotated[
        str | None,
        typer.Option("--at", metavar="TIME", help="Judge expiry at this time (ISO 8601), not now."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Remove every item whose TTL has run out (RepoStore.sweep_ttl)."""
    files = _files(ctx)
    moment: datetime = parse_date(at) if at else files.now()
    expired = [i for i in files.walk(()) if i.expired(moment)]
    removed = 0 if dry_run else files.sweep(moment)
    if as_json:
        print_json({"expired": [_shown(i) for i in expired], "removed": removed})
        return
    out = settings_of(ctx).out
    for item in expired:
        out.print(Text(f"{'expired' if dry_run else 'removed'} {'.'.join(item.namespace)} {item.key}"))
    settings_of(ctx).err.print(Text(f"{len(expired) if dry_run else removed} expired item(s)"))


def _json_arg(text: str, what: str) -> Any:
    try:
        return parse_strict(text.encode("utf-8", "surrogatepass"), what)
    except FileFormatError as exc:  # it names the argument: a usage error here
        raise BadInputError(str(exc)) from None
