"""The command line's exit codes (docs/cli.md, "Exit codes"): one table, here.

0 ok, 1 problems found (validate, fsck, review), 2 usage error or a malformed/ambiguous id, 3
not found, 4 a file that cannot be read as its kind, 5 refused or not confirmed, 6 any other
error (I/O, lock timeout), 7 an unexpected error: a bug of this program, never to be read as
"problems found" (a CI job that posts ``review``'s output tells the two apart by it). An error
takes the entry of the nearest type in its MRO.
"""

from __future__ import annotations

from ..core.errors import (
    BadInputError,
    FileFormatError,
    ItemChangedError,
    LockTimeoutError,
    NotFoundError,
    RepoCheckpointError,
    SaverSpecError,
    ThreadExistsError,
    ThreadNotFoundError,
    ThreadWaitsError,
    UnrevivableValueError,
)

OK, PROBLEMS, USAGE, NOT_FOUND, BAD_FILE, REFUSED, FAILED, INTERNAL = 0, 1, 2, 3, 4, 5, 6, 7
INTERRUPTED = 130  # Ctrl-C, as a shell reports it: a long copy says what it did first


class CliError(RepoCheckpointError):
    """An error of the command line to report as one line with its own exit code."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (str(self), self.code))


#: error type -> exit code; ``exit_code`` picks the nearest type in an error's MRO
EXIT_CODES: dict[type[BaseException], int] = {
    BadInputError: USAGE,
    SaverSpecError: USAGE,
    NotFoundError: NOT_FOUND,
    ThreadNotFoundError: NOT_FOUND,
    FileFormatError: BAD_FILE,
    UnrevivableValueError: BAD_FILE,
    ThreadExistsError: REFUSED,
    ItemChangedError: REFUSED,
    ThreadWaitsError: REFUSED,
    LockTimeoutError: FAILED,
    RepoCheckpointError: FAILED,
    OSError: FAILED,
}


def exit_code(exc: BaseException) -> int:
    """The exit code for ``exc``: a ``CliError``'s own, else the ``EXIT_CODES`` entry of the
    nearest type in its MRO; FAILED for a type the table does not know."""
    if isinstance(exc, CliError):
        return exc.code
    for kind in type(exc).__mro__:
        if kind in EXIT_CODES:
            return EXIT_CODES[kind]
    return FAILED
