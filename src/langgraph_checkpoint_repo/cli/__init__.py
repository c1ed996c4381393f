"""``langgraph-repo``: inspect, check and tidy the state RepoSaver keeps in a repository.

Commands are typer functions, one module per group: ``read`` (threads, history, show,
diff, tasks), ``health`` (validate, fsck), ``render``, ``maintain`` (delete, copy, prune,
migrate), ``transfer`` (import, export), ``heads``, ``review``, ``gitsetup`` (git-setup),
``server`` (``server sync``) and ``store`` (RepoStore's items). ``registry`` names each
command's function and help line; a run imports the module of the command it runs, no
other. What they show is worked out in ``readmodel`` and ``core.checks`` and drawn with
rich by ``output`` (the screening console, tables, JSON), ``views`` (rich text and
tables), ``shape`` (the ``--json`` shapes) and ``markdown`` (render's Markdown). ``app``
holds the typer app, its lazy groups, global options and the mapping of every error to its
exit code (``exits.EXIT_CODES``, docs/cli.md).
"""

from __future__ import annotations

from .app import app, main
from .exits import CliError

__all__ = ["CliError", "app", "main"]
