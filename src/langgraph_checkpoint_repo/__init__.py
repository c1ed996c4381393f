"""A LangGraph checkpointer that keeps graph state as reviewable JSON files in the repository.

Every public name is imported on first use (``__getattr__``): importing LangGraph takes
seconds, and ``langgraph-repo --help`` or a command that reads no values (this package's
``cli``) should not wait for it; the git diff driver (review/textconv_entry.py), which git
starts once per file version it prints, imports this package too, and reaches its own modules
only when this module imports nothing, not even ``typing``.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (mypy reads it so)
if TYPE_CHECKING:
    from typing import Any

    from .core.errors import (
        ConcurrentTurnError,
        FileFormatError,
        InvalidWriteError,
        ItemChangedError,
        LockTimeoutError,
        MissingReferenceError,
        RepoCheckpointError,
        SchemaVersionError,
        ThreadExistsError,
        ThreadNotFoundError,
        ThreadWaitsError,
        UnrevivableValueError,
    )
    from .repostore import RepoStore
    from .saver import RepoSaver
    from .statemigration import StateMigration, migrate_threads
    from .transfer import acopy_threads, copy_threads

_ERRORS = ".core.errors"
# public name -> the module that defines it, imported when the name is first used
_LAZY = {
    "ConcurrentTurnError": _ERRORS,
    "FileFormatError": _ERRORS,
    "InvalidWriteError": _ERRORS,
    "ItemChangedError": _ERRORS,
    "LockTimeoutError": _ERRORS,
    "MissingReferenceError": _ERRORS,
    "RepoCheckpointError": _ERRORS,
    "SchemaVersionError": _ERRORS,
    "ThreadExistsError": _ERRORS,
    "ThreadNotFoundError": _ERRORS,
    "ThreadWaitsError": _ERRORS,
    "UnrevivableValueError": _ERRORS,
    "RepoSaver": ".saver",
    "RepoStore": ".repostore",
    "StateMigration": ".statemigration",
    "acopy_threads": ".transfer",
    "copy_threads": ".transfer",
    "migrate_threads": ".statemigration",
}

__all__ = [
    "ConcurrentTurnError",
    "FileFormatError",
    "InvalidWriteError",
    "ItemChangedError",
    "LockTimeoutError",
    "MissingReferenceError",
    "RepoCheckpointError",
    "RepoSaver",
    "RepoStore",
    "SchemaVersionError",
    "StateMigration",
    "ThreadExistsError",
    "ThreadNotFoundError",
    "ThreadWaitsError",
    "UnrevivableValueError",
    "acopy_threads",
    "copy_threads",
    "migrate_threads",
]


def __getattr__(name: str) -> Any:
    """A public name, imported from its module when first asked for."""
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
