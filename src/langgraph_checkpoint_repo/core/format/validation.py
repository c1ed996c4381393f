"""JSON Schemas of every file kind, and validation of documents against them.

The schemas live in ``schemas/`` at the top of the repository and ship inside
the wheel as package data. Every document is checked here before it is
written and after it is read; the error names the file and the JSON pointer.
Checking runs on jsonschema-rs (a compiled draft 2020-12 validator, ~300x
faster than pure Python on value trees, which matters on every put); the tests check
the schemas themselves against the meta-schema with the reference ``jsonschema``.
"""

from __future__ import annotations

from ..cjson import loads
from ..errors import FileFormatError, InstallationError, InvalidWriteError, SchemaVersionError

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing: git's diff driver imports this
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any

SCHEMA_VERSION = 4
KNOWN_VERSIONS = frozenset({SCHEMA_VERSION})
MIGRATE_HINT = "langgraph-repo migrate"
# keys of the Checkpoint itself: checkpoint.extra may not hold them, or a file could replace
# the state a graph resumes from (channel_values) while every other view shows the real one
RESERVED_EXTRA_KEYS = frozenset(
    {"id", "v", "ts", "channel_values", "channel_versions", "versions_seen", "updated_channels"}
)


def schemas_dir() -> Path:
    """Packaged schemas in a wheel, the repository's schemas/ in a checkout."""
    from pathlib import Path  # here, not with the module: the git diff driver reads pointer_part

    package = Path(__file__).resolve().parents[2]
    packaged = package / "schemas"
    if packaged.is_dir():
        return packaged
    return package.parents[1] / "schemas"


def _schema(name: str) -> dict[str, Any]:
    """A schema of the package. Unreadable or not JSON, it is the installation's fault: said
    so, naming the schema (an OSError was reported as "cannot read" on every data file, a
    parse error as "cannot be validated" on every data file and every write)."""
    path = schemas_dir() / name
    try:
        tree = loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise _broken(path, getattr(exc, "strerror", None) or str(exc)) from exc
    if not isinstance(tree, dict):
        raise _broken(path, "not a JSON object")
    return tree


def _broken(path: Path, why: str) -> InstallationError:
    return InstallationError(
        f"cannot use the package's schema {path}: {why} "
        "(installed without its schemas/ folder, or with a damaged one? reinstall langgraph-checkpoint-repo)"
    )


class _Memo(dict):  # type: ignore[type-arg]
    """``functools.lru_cache`` of a function of one argument with few values ever (the file of
    the shared definitions, a kind): ``memo(arg)`` is ``function(arg)``, made once (an error
    is not kept), ``cache_clear`` forgets. Not functools' own: it imports collections, and
    git's diff driver imports this module for ``pointer_part`` once per file version git
    prints. A dict: a call that finds its value is one lookup in C, as fast as lru_cache's."""

    def __init__(self, function: Callable[[Any], Any]) -> None:
        super().__init__()
        self.__wrapped__ = function

    def __missing__(self, arg: Any) -> Any:
        value = self[arg] = self.__wrapped__(arg)
        return value

    __call__ = dict.__getitem__
    cache_clear = dict.clear


_DEFS = "defs.schema.json"


@_Memo
def _registry(defs: str) -> Any:
    """Every kind refers only to the shared definitions (defs.schema.json)."""
    import jsonschema_rs  # on first validation only (``_validator``)

    tree = _schema(defs)
    try:
        return jsonschema_rs.Registry([(tree["$id"], tree)])
    except (KeyError, TypeError, ValueError) as exc:
        raise _broken(schemas_dir() / defs, f"not a valid schema ({exc!r})") from exc


@_Memo
def _validator(kind: str) -> Any:
    """Built on first use, one kind at a time: a fresh process reading one checkpoint
    (a CLI call, a serverless handler) reads and compiles only that schema and the defs.
    The validator is imported here, not with the module (about 40 ms): the module's helpers
    (``pointer_part``, the kinds) are read by code that never validates, the git diff
    driver's view among them (tests/test_format_view.py)."""
    import jsonschema_rs

    schema, registry = _schema(f"{kind}.schema.json"), _registry(_DEFS)
    try:
        return jsonschema_rs.validator_for(schema, registry=registry)
    except (KeyError, TypeError, ValueError) as exc:
        raise _broken(schemas_dir() / f"{kind}.schema.json", f"not a valid schema ({exc})") from exc


def pointer_part(part: str) -> str:
    """One key as a JSON pointer segment (RFC 6901: ``~`` as ``~0``, ``/`` as ``~1``)."""
    return part.replace("~", "~0").replace("/", "~1")


def _pointer(path: Any) -> str:
    parts = [pointer_part(str(p)) for p in path]
    return "/" + "/".join(parts) if parts else "/"


def _first_error(kind: str, doc: Any) -> tuple[str, str] | None:
    reserved = _reserved_extra_key(doc) if kind == "checkpoint" else None
    if reserved is not None:  # the schema refuses it too; this says why, at the key's own pointer
        return reserved
    validator = _validator(kind)
    if validator.is_valid(doc):
        return None
    err = next(iter(validator.iter_errors(doc)))
    return _pointer(err.instance_path), err.message


def _written_error(kind: str, doc: Any) -> tuple[str, str] | None:
    """``_first_error``, with the long lists of scalars checked by their types, where the
    schema asks no more (hollow.py); a document refused so is checked again whole, so the
    error is the validator's own words on what would be written."""
    from .hollow import hollowed

    light = hollowed(doc, kind)
    if light is not doc:
        try:
            if _first_error(kind, light) is None:
                return None
        except ValueError:
            pass
    return _first_error(kind, doc)


def _reserved_extra_key(doc: Any) -> tuple[str, str] | None:
    cp = doc.get("checkpoint") if isinstance(doc, dict) else None
    extra = cp.get("extra") if isinstance(cp, dict) else None
    for key in extra if isinstance(extra, dict) else ():
        if key in RESERVED_EXTRA_KEYS:
            return (
                _pointer(["checkpoint", "extra", key]),
                f"{key!r} is a key of the checkpoint itself and cannot come from extra",
            )
    return None


def check_version(doc: Any, path: str) -> None:
    """Refuse, with a message saying what to do, a file from another format version."""
    if not isinstance(doc, dict):
        raise FileFormatError(path, "/", "expected a JSON object")
    version = doc.get("schema_version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise FileFormatError(path, "/schema_version", "missing or not an integer")
    if version in KNOWN_VERSIONS:
        return
    if version > SCHEMA_VERSION:
        raise SchemaVersionError(
            path,
            "/schema_version",
            f"schema_version {version} was written by a newer release of "
            f"langgraph-checkpoint-repo; this release reads {sorted(KNOWN_VERSIONS)}. "
            "Upgrade langgraph-checkpoint-repo to read it.",
        )
    raise SchemaVersionError(
        path,
        "/schema_version",
        f"schema_version {version} is older than this release reads "
        f"({sorted(KNOWN_VERSIONS)}); run `{MIGRATE_HINT}` to upgrade the files.",
    )


def validate_read(doc: Any, kind: str, path: str) -> None:
    """Validate a document just read from ``path``; raise naming file and pointer."""
    check_version(doc, path)
    if doc.get("kind") != kind:
        raise FileFormatError(path, "/kind", f"expected kind {kind!r}, found {doc.get('kind')!r}")
    try:
        problem = _first_error(kind, doc)
    except (ValueError, RecursionError) as exc:  # jsonschema-rs refuses deeply nested documents
        raise FileFormatError(path, "/", f"cannot be validated: {exc}") from None
    if problem is not None:
        raise FileFormatError(path, *problem)


def validate_write(doc: Any, kind: str, target: str) -> None:
    """Validate a document about to be written; nothing touches disk when it fails."""
    try:
        problem = _written_error(kind, doc)
    except ValueError as exc:  # a value JSON cannot hold (jsonschema-rs refuses it)
        raise InvalidWriteError(kind, target, "/", str(exc)) from None
    if problem is not None:
        raise InvalidWriteError(kind, target, *problem)
