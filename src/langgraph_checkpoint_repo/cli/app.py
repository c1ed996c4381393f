"""The typer app of ``langgraph-repo``: its group class (errors to exit codes), global
options, settings, root checks and the option types the commands share.

Exit codes (docs/cli.md): 0 ok, 1 problems found, 2 usage error or malformed/ambiguous
id, 3 not found, 4 a file that cannot be read as its kind, 5 refused or not confirmed,
6 any other error (I/O, lock timeout), 7 an unexpected error (a bug); ``exits.EXIT_CODES``
maps each error type to its code. Errors are one line on stderr, never a traceback."""

from __future__ import annotations

import os
import re
import sys
import traceback
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
import typer.main
from rich.console import Console
from typer.core import TyperCommand, TyperGroup
from typer.models import CommandInfo

from ..core.errors import BadInputError, NotFoundError, RepoCheckpointError
from ..core.layout import find_default_root, holds_state
from . import registry
from .exits import INTERNAL, OK, exit_code
from .output import (
    Text,
    err_console,
    out_console,
)
from .restore import restore_hint

if TYPE_CHECKING:
    from datetime import datetime

    from ..project_types import Allowed
    from ..readmodel.reader import Reader
    from ..saver import RepoSaver

PROG = "langgraph-repo"


def _fail(message: str, code: int) -> NoReturn:
    err_console().print(Text.assemble((f"{PROG}: error: ", "bold red"), message.replace("\n", " ")))
    raise typer.Exit(code)


def _where_hint(ctx: Any, exc: BaseException) -> str:
    """For something not found: how the root was found, and other roots nearby that hold state."""
    settings = ctx.obj
    if not isinstance(exc, NotFoundError) or not isinstance(settings, Settings):
        return ""
    hint = f" (root found {settings.found_by})" if settings.found_by != "--root" else ""
    # near the folder the user named, else near here; a root the message names already is left out
    near = settings.root if settings.found_by == "--root" and settings.root.is_dir() else None
    others = [p for p in other_roots(settings.root, cwd=near) if str(p) not in str(exc)]
    if others:
        names = ", ".join(str(_rel_path(p)) for p in others)
        hint += f"; state also in {names} (give it with --root)"
    return hint


def _rel_path(path: Path) -> Path:
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path


def unexpected(exc: BaseException) -> str:
    """The one line of an error nobody expected: its type, its text and where it was raised
    (the innermost frame of this package), so a report of it can be acted on."""
    where = ""
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        parts = Path(frame.filename).parts
        if "langgraph_checkpoint_repo" in parts:
            rel = "/".join(parts[len(parts) - parts[::-1].index("langgraph_checkpoint_repo") :])
            where = f" at {rel}:{frame.lineno} ({frame.name})"
            break
    return (
        f"unexpected {type(exc).__name__}{where}: {exc} "
        f"(a bug of {PROG}: please report it with the command that raised it)"
    )


class _Commands(MutableMapping[str, Any]):
    """A group's commands as the registry names them (its keys, in ``--help``'s order), each
    built on first use: typer's own lookups (``get_command``, a typo's "did you mean") see
    every name and import only the module of the one they take."""

    def __init__(self, group: str | None) -> None:
        self.group = group
        self.built: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in self.built:
            entry = registry.find(self.group, name)
            if entry is None:
                raise KeyError(name)
            self.built[name] = _build(entry)
        return self.built[name]

    def __setitem__(self, name: str, command: Any) -> None:
        self.built[name] = command

    def __delitem__(self, name: str) -> None:
        raise TypeError("the registry's commands cannot be removed")

    def __iter__(self) -> Iterator[str]:
        return iter([e.name for e in registry.entries(self.group)])

    def __len__(self) -> int:
        return len(registry.entries(self.group))


class _Group(TyperGroup):
    """A group whose commands come from the registry, built when run; turns every expected
    error into one line on stderr and its exit code."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.commands = _Commands(None)  # the top's; a sub-group's are set where it is built

    def list_commands(self, ctx: Any) -> list[str]:
        """click's lazy-group hook: the names, from the registry (nothing imported)."""
        return list(self.commands)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        """click's lazy-group hook: the command, its module imported now; None if unknown."""
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """The list ``--help`` prints, from the registry's help lines: as typer prints it
        from the built commands, without importing a command module."""
        listed = registry.entries(self.commands.group if isinstance(self.commands, _Commands) else None)
        if not listed:
            return
        limit = formatter.width - 6 - max(len(e.name) for e in listed)
        rows = [(e.name, TyperCommand(name=e.name, help=e.help).get_short_help_str(limit)) for e in listed]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except RepoCheckpointError as exc:  # its exit code: the one table, exits.EXIT_CODES
            _fail(str(exc) + restore_hint(exc) + _where_hint(ctx, exc), exit_code(exc))
        except BrokenPipeError:
            # the reader of our output went away (``| head``): stop quietly
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            raise typer.Exit(OK) from None
        except OSError as exc:
            where = f"{exc.filename}: " if exc.filename else ""
            _fail(f"{where}{exc.strerror or exc}", exit_code(exc))
        except (typer.Exit, typer.Abort, typer.exceptions.TyperException):
            raise  # typer's own: an exit code asked for, a usage error, ^C at a prompt
        except Exception as exc:  # a bug: exit 7, never 1 ("problems found") with a traceback
            _fail(unexpected(exc), INTERNAL)


def _build(entry: registry.Entry) -> Any:
    """The click command of a registry entry, as typer builds a registered one, with the
    global options after it."""
    if isinstance(entry, registry.Group):
        group = typer.main.get_group(
            typer.Typer(
                cls=_Group,
                name=entry.name,
                help=entry.help,
                no_args_is_help=True,
                rich_markup_mode=None,
                context_settings={"help_option_names": ["-h", "--help"]},
            )
        )
        group.commands = _Commands(entry.name)
        command: Any = group
    else:
        info = CommandInfo(name=entry.name, cls=TyperCommand, callback=registry.load(entry))
        command = typer.main.get_command_from_info(
            info, pretty_exceptions_short=app.pretty_exceptions_short, rich_markup_mode=app.rich_markup_mode
        )
    command.params.extend(_after_command_options())
    return command


def _after_command_options() -> list[Any]:
    """Every command also takes the global options after its name (``threads --root X``,
    ``server sync --root X``): the top group's own (built afresh from ``_main``, so their help
    is the same), setting what those set. A root given after the command wins over one given
    before it and over LANGGRAPH_REPO_ROOT."""
    params, _, _ = typer.main.get_params_convertors_ctx_param_name_from_function(_main)
    after = {
        "root": _root_after_command,
        "allow": _allow_after_command,
        "trust_project": _trust_after_command,
    }
    for param in params:
        param.expose_value = False
        param.envvar = None
        param.callback = after.get(param.name or "", param.callback)
    return params


app = typer.Typer(
    cls=_Group,
    name=PROG,
    help="Inspect, check and tidy LangGraph state kept by RepoSaver in a repository.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


@dataclass
class Settings:
    root: Path
    out: Console
    err: Console
    allow: list[str] = field(default_factory=list)  # --allow module:Name items
    found_by: str = "--root"  # how the root was found, for messages that name it
    trust_project: bool = False  # --trust-project: also the project's own list of types

    def allowed(self) -> Allowed:
        """The types a command that constructs values may construct: what ``--allow`` names,
        and with ``--trust-project`` the project's list (langgraph.json's, else the table's),
        which imports the project's modules (docs/types.md)."""
        from ..project_types import cli_types, project_types

        return project_types(self.root, self.allow) if self.trust_project else cli_types(self.allow)

    def saver(self) -> RepoSaver:
        """The saver a command writes or copies through (imports LangGraph): it constructs
        ``allowed()``, and a type it refuses is named with the option that allows it."""
        from ..saver import RepoSaver

        allowed = self.allowed()
        saver = RepoSaver(self.root, allowlist=sorted(allowed.types) or None)
        saver.codec.fix = allowed.fix
        return saver


def _show_version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        sys.stdout.write(f"{PROG} {version('langgraph-checkpoint-repo')}\n")
        raise typer.Exit(OK)


def _root_after_command(ctx: Any, param: Any, value: Any) -> None:
    """``--root`` given after the command: replaces the root the group worked out."""
    if value is not None:
        settings = ctx.obj
        assert isinstance(settings, Settings)
        settings.root = Path(value).absolute()
        settings.found_by = "--root"


def _trust_after_command(ctx: Any, param: Any, value: Any) -> None:
    """``--trust-project`` given after the command."""
    if value:
        settings = ctx.obj
        assert isinstance(settings, Settings)
        settings.trust_project = True


def _allow_after_command(ctx: Any, param: Any, value: Any) -> None:
    """``--allow`` given after the command: adds to those given before it."""
    if value:
        settings = ctx.obj
        assert isinstance(settings, Settings)
        settings.allow.extend(value)


@app.callback()
def _main(
    ctx: typer.Context,
    root: Annotated[
        Path | None,
        typer.Option(
            "--root",
            help="State folder (default: .langgraph at the top of the git work tree, as RepoSaver()).",
            envvar="LANGGRAPH_REPO_ROOT",
            show_default=False,
        ),
    ] = None,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_show_version, is_eager=True, help="Print the version and exit."),
    ] = False,
    allow: Annotated[
        list[str] | None,
        typer.Option(
            "--allow",
            metavar="MODULE:NAME",
            help="A type of your state that a command may construct where it shows or writes "
            "values (show, diff, render, tasks, edit, heads --choose/--merge, migrate-state, import, "
            "export): module:Name, or module:* for all classes of a module; repeatable. Imports "
            "that module; without it such values are shown as stored (docs/types.md).",
        ),
    ] = None,
    trust_project: Annotated[
        bool,
        typer.Option(
            "--trust-project",
            help="Also construct the types the project lists (langgraph.json's "
            "checkpointer.serde.allowed_msgpack_modules, else the [tool.langgraph-repo] table of "
            "pyproject.toml) where a command shows or writes values. Imports the project's "
            "modules: only on a checkout you trust (docs/types.md).",
        ),
    ] = False,
) -> None:
    """Inspect, check and tidy LangGraph state kept by RepoSaver in a repository."""
    path, found_by = (root, "--root") if root is not None else default_root()
    ctx.obj = Settings(
        path.absolute(), out_console(), err_console(), list(allow or []), found_by, trust_project
    )


def default_root(cwd: Path | None = None) -> tuple[Path, str]:
    """The root a command reads without ``--root``: where the Agent Server keeps it (``.langgraph``
    beside the nearest ``langgraph.json`` from here up, within the git work tree) when state is
    there, else where ``RepoSaver()`` keeps it (``.langgraph`` at the top of the git work tree);
    with how it was found, for messages."""
    here = (cwd or Path.cwd()).absolute()
    top = find_default_root(here).parent
    for folder in (here, *here.parents):
        if (folder / "langgraph.json").is_file() and holds_state(folder / ".langgraph"):
            return folder / ".langgraph", f"beside {folder / 'langgraph.json'}"
        if folder == top:
            break
    where = "at the top of the git work tree" if (top / ".git").exists() else "in this folder"
    return top / ".langgraph", where


def other_roots(root: Path, cwd: Path | None = None, most: int = 3) -> list[Path]:
    """Other folders nearby that hold RepoSaver state (a ``.langgraph`` below the git work
    tree's top, or below here outside git, a few levels deep), for a message that found none."""
    here = (cwd or Path.cwd()).absolute()
    top = find_default_root(here).parent
    found: list[Path] = []
    skip = {".git", ".venv", "venv", "node_modules", "__pycache__", ".cache"}
    for dirpath, dirnames, _ in os.walk(top):
        depth = len(Path(dirpath).relative_to(top).parts)
        deeper = depth < 4
        dirnames[:] = sorted(
            d for d in dirnames if deeper and d not in skip and (d == ".langgraph" or not d.startswith("."))
        )
        if Path(dirpath).name == ".langgraph" and Path(dirpath) != root and holds_state(Path(dirpath)):
            found.append(Path(dirpath))
            dirnames[:] = []
            if len(found) >= most:
                break
    return found


def require_root(root: Path, *, creating: bool = False) -> None:
    """Refuse a root that holds no RepoSaver state (docs/cli.md, "Root"), so a command run at
    the wrong folder (the repository top) fails instead of finding nothing and passing.

    ``creating`` (import): a folder that does not exist yet or is empty is fine too. A root
    that is a symlink, or lies behind one inside the repository, is refused whatever the
    command: it may be another project's state (``Layout.guarded``).
    """
    from ..core.layout import Layout
    from ..core.removal import root_link_error

    link = Layout(root).root_link()
    if link is not None:
        raise root_link_error(f"use {root}", link)
    if not root.exists():
        if creating:
            return
        raise NotFoundError(f"root {root} does not exist")
    if not root.is_dir():
        raise BadInputError(
            f"root {root} is a file, not a folder: --root takes the folder RepoSaver(root) was given"
        )
    if holds_state(root):
        return
    names = sorted(os.listdir(root))
    if creating and not names:
        return
    hint = root / ".langgraph"
    if hint.is_dir():
        raise NotFoundError(f"no RepoSaver state under {root}; did you mean {hint}?")
    holds = (
        "it is empty"
        if not names
        else "it holds " + ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    )
    raise NotFoundError(
        f"no RepoSaver state under {root}: a RepoSaver root holds a threads/ folder or the "
        f".gitignore RepoSaver writes there; {holds}"
    )


def settings_of(ctx: typer.Context) -> Settings:
    settings = ctx.obj
    assert isinstance(settings, Settings)
    return settings


def open_reader(ctx: typer.Context, *, revive: bool = False) -> Reader:
    """A reader of the root. By default it constructs nothing and imports no LangGraph (the
    files are read, validated and shown as stored). ``revive`` (show, diff, render): values are
    constructed as a graph would read them, LangGraph's safe types and what ``--allow`` names;
    the project's list only with ``--trust-project`` (docs/types.md)."""
    from ..readmodel.reader import Reader

    settings = settings_of(ctx)
    require_root(settings.root)
    if not revive:
        return Reader(settings.root)
    from ..serde import reader_codec

    allowed = settings.allowed()
    return Reader(settings.root, reviver=reader_codec(allowed.types, allowed.fix))


_AGE = re.compile(r"^(\d+)([smhdw])$")
_AGE_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_age(text: str) -> float:
    """``90m``, ``12h``, ``30d``, ``2w`` to seconds."""
    match = _AGE.match(text.strip())
    if not match:
        raise BadInputError(f"bad age {text!r}: use a number and s, m, h, d or w (e.g. 30d)")
    return int(match.group(1)) * _AGE_SECONDS[match.group(2)]


def parse_date(text: str) -> datetime:
    """An ISO date or date-time; without a zone it is UTC."""
    from datetime import datetime, timezone

    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise BadInputError(
            f"bad date {text!r}: use an ISO date like 2026-01-31 or 2026-01-31T12:00"
        ) from None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def progress_columns() -> tuple[Any, ...]:
    """The columns of every progress bar; a label from a file is plain text, never markup,
    and screened (rich's own column would make a Text that drops ``\\r`` and ``\\b``)."""
    from rich.progress import BarColumn, MofNCompleteColumn, ProgressColumn, Task, TimeElapsedColumn

    class LabelColumn(ProgressColumn):
        def render(self, task: Task) -> Text:
            return Text(task.description)

    return (
        LabelColumn(),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )


@contextmanager
def progress_bar(settings: Settings, label: str, total: int) -> Iterator[Any]:
    """A progress bar on stderr when it is a terminal; nothing otherwise."""
    if not settings.err.is_terminal:
        yield None
        return
    from rich.progress import Progress

    with Progress(*progress_columns(), console=settings.err, transient=True) as progress:
        task = progress.add_task(label, total=total)
        yield lambda n: progress.advance(task, n)


JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts instead of text.")]
ThreadArg = Annotated[str, typer.Argument(help="Thread id.")]
ThreadsArg = Annotated[list[str] | None, typer.Argument(metavar="THREAD", help="Threads (default: all).")]
NsOpt = Annotated[
    str,
    typer.Option(
        "--ns", help="Checkpoint namespace (a subgraph), or a node name that names one. Default: the root."
    ),
]
YesOpt = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]
DryRunOpt = Annotated[
    bool, typer.Option("--dry-run", help="Say what would be done (every file, thread or item); do nothing.")
]
CheckpointOpt = Annotated[
    str | None,
    typer.Option(
        "--checkpoint",
        "-c",
        metavar="ID",
        help=(
            "Checkpoint: an id, its unique start or end (4+ characters), latest, or latest~N for N "
            "steps back (default: latest, the one that continues, docs/forks.md)."
        ),
    ),
]


def main() -> None:
    """Entry point of ``python -m langgraph_checkpoint_repo``."""
    app(prog_name=PROG)
