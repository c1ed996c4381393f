"""Errors raised by the repo checkpointer.

Every error names what it is about (file, id, field) so a person can find and
fix the problem; none of them is ever swallowed inside the package.
"""

from __future__ import annotations


class RepoCheckpointError(Exception):
    """Base class for everything this package raises on purpose."""


class FileFormatError(RepoCheckpointError):
    """A file on disk is not a valid file of its kind (JSON, schema, names)."""

    def __init__(self, path: str, pointer: str, message: str) -> None:
        self.path = path
        self.pointer = pointer or "/"
        super().__init__(f"{path}: at {self.pointer}: {message}")


class SchemaVersionError(FileFormatError):
    """A file's schema_version is not one this release reads."""


class InvalidWriteError(RepoCheckpointError):
    """A document about to be written does not match its schema; nothing was written."""

    def __init__(self, kind: str, target: str, pointer: str, message: str) -> None:
        self.kind = kind
        self.target = target
        self.pointer = pointer or "/"
        super().__init__(f"refusing to write {kind} {target}: at {self.pointer}: {message}")


class UnrevivableValueError(RepoCheckpointError):
    """A stored value names a type outside the allowlist or cannot be rebuilt."""


class MissingReferenceError(FileFormatError):
    """A file refers to another file (value, base, large value) that is absent."""


class LockTimeoutError(RepoCheckpointError):
    """The lock of a thread could not be taken in time."""
