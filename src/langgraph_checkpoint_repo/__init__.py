"""A LangGraph checkpointer that keeps graph state as reviewable JSON files in the repository.

The public names that need LangGraph (``RepoSaver``, ``copy_threads`` ...) are imported on
first use (``__getattr__``): importing LangGraph takes seconds, and ``langgraph-repo --help``
or a command that reads no values (this package's ``cli``) should not wait for it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .core.errors import (
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

if TYPE_CHECKING:
    from .repostore import RepoStore
    from .saver import RepoSaver
    from .transfer import acopy_threads, copy_threads

# public name -> the module that defines it, imported when the name is first used
_LAZY = {
    "RepoSaver": ".saver",
    "RepoStore": ".repostore",
    "acopy_threads": ".transfer",
    "copy_threads": ".transfer",
}

__all__ = [
    "FileFormatError",
    "InvalidWriteError",
    "ItemChangedError",
    "LockTimeoutError",
    "MissingReferenceError",
    "RepoCheckpointError",
    "RepoSaver",
    "RepoStore",
    "SchemaVersionError",
    "ThreadExistsError",
    "ThreadNotFoundError",
    "ThreadWaitsError",
    "UnrevivableValueError",
    "acopy_threads",
    "copy_threads",
]


def __getattr__(name: str) -> Any:
    """``RepoSaver``, ``RepoStore``, ``copy_threads``, ``acopy_threads``: imported when first asked for."""
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
