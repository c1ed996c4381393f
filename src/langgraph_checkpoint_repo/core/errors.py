"""Errors raised by the repo checkpointer.

Every error names what it is about (file, id, field) so a person can find and
fix the problem; none of them is ever swallowed inside the package. A leaf of the core
(it imports only masking.py), so any module may raise them without an import cycle.
Each survives pickling (a worker process, ``concurrent.futures``) with its attributes.
"""

from __future__ import annotations

from .masking import safe_message

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing: git's diff driver imports this
if TYPE_CHECKING:
    from typing import Any


class RepoCheckpointError(Exception):
    """Base class for everything this package raises on purpose.

    Its message is made safe once, here, for every subclass: a secret it quotes (a key
    carried in a thread id, also as an encoded path segment) is masked as ``validate``
    masks it, and control characters (a file name or a type name from a tampered file)
    are escaped, so printing the error can neither leak a key nor drive a terminal.
    The attributes (``path``, ``pointer``) keep the exact values, for code.
    """

    def __init__(self, *args: object) -> None:
        super().__init__(*(safe_message(a) if isinstance(a, str) else a for a in args))


class FileFormatError(RepoCheckpointError):
    """A file on disk is not a valid file of its kind (JSON, schema, names)."""

    def __init__(self, path: str, pointer: str, message: str) -> None:
        self.path = path
        self.pointer = pointer or "/"
        self.detail = message
        super().__init__(f"{path}: at {self.pointer}: {message}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.path, self.pointer, self.detail))

    def restated(self, detail: str) -> FileFormatError:
        """The same error (its kind, file, pointer and what else it carries) saying ``detail``."""
        again = type(self)(self.path, self.pointer, detail)
        again.__dict__.update({k: v for k, v in vars(self).items() if k not in vars(again)})
        return again


class LfsPointerError(FileFormatError):
    """A state file is a Git LFS pointer, not the file it stands for: git-lfs is not
    installed, or the file was not fetched (``git lfs pull``). The file is not damaged:
    ``validate`` and every reader say so instead of "invalid JSON" (core/jsonread.py)."""


class SchemaVersionError(FileFormatError):
    """A file's schema_version is not one this release reads."""


class MissingReferenceError(FileFormatError):
    """A file refers to another file (value, base, large value) that is absent."""

    #: whether ``path`` names the file holding the reference (a reader that finds that file
    #: gone too raced a removal, and looks again); False: it names the missing file itself
    names_referrer = True

    @classmethod
    def of_missing(cls, path: str, pointer: str, message: str) -> MissingReferenceError:
        """The error naming the missing file, where the file referring to it is not known."""
        err = cls(path, pointer, message)
        err.names_referrer = False
        return err


class InvalidWriteError(RepoCheckpointError):
    """A document about to be written does not match its schema; nothing was written."""

    def __init__(self, kind: str, target: str, pointer: str, message: str) -> None:
        self.kind = kind
        self.target = target
        self.pointer = pointer or "/"
        self.detail = message
        super().__init__(f"refusing to write {kind} {target}: at {self.pointer}: {message}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.kind, self.target, self.pointer, self.detail))


class UnrevivableValueError(RepoCheckpointError):
    """A stored value names a type outside the allowlist or cannot be rebuilt."""


class LockTimeoutError(RepoCheckpointError, TimeoutError):
    """The lock of a thread could not be taken in time (a ``TimeoutError``, as filelock's is)."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), tuple(str(a) for a in self.args[:1]))


class NotFoundError(RepoCheckpointError):
    """A root, thread, namespace or checkpoint that is not there."""


class BadInputError(RepoCheckpointError):
    """An argument that cannot name anything: a malformed or ambiguous id, a bad date."""


class ThreadExistsError(RepoCheckpointError):
    """The target already holds a thread being copied; nothing was written."""


class ConcurrentTurnError(RepoCheckpointError):
    """A put refused in strict turns (``RepoSaver(strict_turns=True)``): another writer had
    already continued the checkpoint it continues. Nothing was written (docs/forks.md)."""


class ThreadWaitsError(RepoCheckpointError):
    """An edit refused: the checkpoint it continues has pending work (an interrupt waiting for
    an answer, scheduled tool calls, saved writes) that a new checkpoint would not carry;
    ``force`` writes it anyway (docs/cli.md, "edit"). Nothing was written."""


class ThreadNotFoundError(RepoCheckpointError):
    """A thread asked for is not in the source; nothing was written."""


class SaverSpecError(RepoCheckpointError):
    """A SOURCE/TARGET that names no saver we can open."""


class InstallationError(RepoCheckpointError):
    """The package cannot read a file of its own (a schema): the installation is broken, not
    the state; no data file is blamed for it."""


class ItemChangedError(RepoCheckpointError):
    """A store item was changed (or added, or removed) since the caller read it: the
    compare-and-swap of ``RepoStore.put(..., if_updated_at=...)`` refused the write."""

    def __init__(
        self, namespace: tuple[str, ...], key: str, expected: str | None, found: str | None, path: str
    ) -> None:
        self.namespace = tuple(namespace)
        self.key = key
        self.expected = expected  # the updated_at the caller read (ISO 8601), None: "absent"
        self.found = found  # the updated_at the file holds now, None: absent
        self.path = path
        want = "no item" if expected is None else f"updated_at {expected}"
        now = "no item" if found is None else f"updated_at {found}"
        super().__init__(
            f"item {key!r} of namespace {self.namespace!r} ({path}) changed since it was read: "
            f"expected {want}, found {now}; nothing was written (read it again and retry)"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.namespace, self.key, self.expected, self.found, self.path))


def symlink_refused(path: object) -> FileFormatError:
    """A file or folder below the root that is a symlink: the saver makes none, so one was
    planted or checked out, and it may lead anywhere (every read refuses it, by this text)."""
    return FileFormatError(
        str(path), "/", "is a symlink, which may lead outside the root; refusing to follow it"
    )


def outside_refused(path: object) -> FileFormatError:
    """A file or folder whose way from the root passes a symlink (``Layout.contains``)."""
    return FileFormatError(str(path), "/", "resolves outside the root (through a symlink on the way)")
