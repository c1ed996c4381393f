"""A LangGraph checkpointer that keeps graph state as reviewable JSON files in the repository."""

from .errors import (
    FileFormatError,
    InvalidWriteError,
    LockTimeoutError,
    MissingReferenceError,
    RepoCheckpointError,
    SchemaVersionError,
    UnrevivableValueError,
)
from .saver import RepoSaver
from .transfer import ThreadExistsError, ThreadNotFoundError, acopy_threads, copy_threads

__all__ = [
    "FileFormatError",
    "InvalidWriteError",
    "LockTimeoutError",
    "MissingReferenceError",
    "RepoCheckpointError",
    "RepoSaver",
    "SchemaVersionError",
    "ThreadExistsError",
    "ThreadNotFoundError",
    "UnrevivableValueError",
    "acopy_threads",
    "copy_threads",
]
