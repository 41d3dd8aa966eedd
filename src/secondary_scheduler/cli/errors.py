"""One error contract for every `secsched` command.

Bad input: `error: FILE[:LINE]: FIELD: what is wrong: how to fix it` on stderr, exit 1.
A usage error (an unknown flag, a bad flag value): Click's usage message, exit 2.
A missing optional dependency: `error: secsched CMD needs PACKAGE ...: pip install ...`, naming
the extra that installs it (from a clone: the package is on no index), exit 1. The same for the
dev tooling (`cluster`, `demo`), a package of its own (devtools/, secondary-scheduler-devtools):
its extras, or the whole package when it is not installed.
A bug: one `error: internal error ...` line, exit 1; its traceback only with `--v=5` (or more)
or `SECSCHED_DEBUG=1`, because a traceback tells a user nothing about their input. Nothing else
may end there: input and missing extras have their own lines above.
"""

from __future__ import annotations

import errno
import os
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import click

import secondary_scheduler
from secondary_scheduler.safeyaml import YamlLimitError, read_limited

DEBUG_ENV = "SECSCHED_DEBUG"
DEBUG_VERBOSITY = 5


@dataclass(frozen=True)
class Project:
    """A package of this repository, which pip installs from a clone (none is on an index)."""

    distribution: str
    directory: str
    """Where its pyproject.toml is, in the clone."""


RUNTIME = Project("secondary-scheduler", ".")
DEVTOOLS = Project("secondary-scheduler-devtools", "devtools")
"""The dev tooling: the local cluster, the demo, the image builder; never in the images."""

EXTRA_OF_PACKAGE = {"rich": "cli", "matplotlib": "replay", "kopf": "operator"}
"""Optional dependencies of this package, and its extra (pyproject.toml) that installs each."""

EXTRA_OF_COMMAND = {"operator run": "operator"}
"""Commands that need a whole extra of this package: the one to name, whichever of its packages
is missing."""

DEVTOOLS_EXTRA_OF_COMMAND = {"cluster": "cluster", "demo": "demo"}
"""The dev tooling's commands, and the extra of devtools/ each needs, whichever of its packages
is missing (the [cluster] extra brings rich too, so `cluster up` without rich asks for [cluster])."""

DEVTOOLS_OPTIONAL = frozenset({"httpx", "rich", "matplotlib", "kopf"})
"""What devtools/'s extras install: one of them missing under a dev-tooling command is an extra."""


def where(source: str, line: int | None = None, field: str | None = None) -> str:
    """`FILE[:LINE][: FIELD]`, the prefix of every message about an input."""
    text = f"{source}:{line}" if line is not None else source
    return f"{text}: {field}" if field else text


class InputError(click.ClickException):
    """Bad input: shown as `error: FILE[:LINE]: FIELD: problem: fix`, exit 1."""

    exit_code = 1

    def __init__(
        self,
        source: str,
        problem: str,
        *,
        line: int | None = None,
        field: str | None = None,
        fix: str = "",
        more: Sequence[str] = (),
    ) -> None:
        self.source = source
        self.line = line
        self.field = field
        self.problem = problem
        self.fix = fix
        self.more = list(more)
        """Further problems, each already `FILE[:LINE]: FIELD: problem: fix`: one `error:` line each."""
        message = f"{where(source, line, field)}: {problem}"
        super().__init__(f"{message}: {fix}" if fix else message)

    def format_message(self) -> str:
        return "\nerror: ".join([self.message, *self.more])


def read_input(path: str, what: str, limit: int) -> str:
    """The text of the file at `path` ("-": standard input), or an InputError saying why not."""
    try:
        data = sys.stdin.buffer.read(limit + 1) if path == "-" else read_limited(path, limit, what)
    except YamlLimitError as error:
        raise InputError(_shown(path), str(error.problem)) from error
    except FileNotFoundError as error:
        raise InputError(_shown(path), f"{what} not found", fix="check the path") from error
    except IsADirectoryError as error:
        raise InputError(_shown(path), "is a directory", fix=f"give the {what} file itself") from error
    except PermissionError as error:
        raise InputError(
            _shown(path), "cannot be read (permission denied)", fix="check the file's permissions"
        ) from error
    except OSError as error:
        raise InputError(_shown(path), f"cannot be read ({error.strerror or error})") from error
    if path == "-" and len(data) > limit:
        raise InputError("<stdin>", f"{what} is larger than {limit // (1024 * 1024)} MiB, the most read")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise InputError(
            _shown(path),
            f"is not UTF-8 text (byte {error.start} is 0x{data[error.start]:02x})",
            fix=f"give a YAML or JSON {what}; a binary file or another encoding cannot be read",
        ) from error


def _shown(path: str) -> str:
    return "<stdin>" if path == "-" else path


def install_hint(extra: str, project: Project = RUNTIME) -> str:
    """How to add `project` with `extra` to this installation. No package of the repository is on
    an index, so pip installs it from a clone: this one's path when the running code is an
    editable install of it."""
    source = Path(secondary_scheduler.__file__).resolve().parents[2] / project.directory
    pyproject = source / "pyproject.toml"
    if pyproject.is_file() and f'name = "{project.distribution}"' in pyproject.read_text(errors="replace"):
        return f"pip install -e {shlex.quote(f'{source}[{extra}]')}"
    within = "" if project is RUNTIME else f"/{project.directory}"
    return (
        f"in a clone of the repository, pip install '.{within}[{extra}]' "
        f"(from elsewhere: pip install '/path/to/the/clone{within}[{extra}]')"
    )


def missing_extra(error: ModuleNotFoundError, command: str) -> click.ClickException | None:
    """The error to show for `error` if it is an optional dependency missing (None if it is not:
    a module of ours or a pinned dependency missing is a broken installation, reported as a bug)."""
    package = (error.name or "").partition(".")[0]
    tool = command.partition(" ")[0]
    if tool in DEVTOOLS_EXTRA_OF_COMMAND:
        if package not in DEVTOOLS_OPTIONAL:
            return None
        extra, project = DEVTOOLS_EXTRA_OF_COMMAND[tool], DEVTOOLS
        whose = f" of {DEVTOOLS.distribution}"
    else:
        if package not in EXTRA_OF_PACKAGE:
            return None
        extra = next(
            (extra for prefix, extra in EXTRA_OF_COMMAND.items() if f"{command} ".startswith(f"{prefix} ")),
            EXTRA_OF_PACKAGE[package],
        )
        project, whose = RUNTIME, ""
    return click.ClickException(
        f"`secsched {command}` needs {package}, which this installation lacks "
        f"(the [{extra}] extra{whose}): {install_hint(extra, project)}"
    )


def missing_devtools(command: str) -> click.ClickException:
    """`secsched cluster` or `demo` where the dev tooling's package is not installed: which to install."""
    extra = DEVTOOLS_EXTRA_OF_COMMAND[command]
    return click.ClickException(
        f"`secsched {command}` is dev tooling, in the {DEVTOOLS.distribution} package, which this "
        f"installation lacks (the images never hold it): {install_hint(extra, DEVTOOLS)}"
    )


def debug_requested(args: Sequence[str]) -> bool:
    """`SECSCHED_DEBUG=1`, or a klog verbosity of 5 or more among the arguments."""
    if os.environ.get(DEBUG_ENV, "").lower() in ("1", "true", "yes", "on"):
        return True
    for index, arg in enumerate(args):
        value: str | None = None
        for prefix in ("--v=", "-v="):
            if arg.startswith(prefix):
                value = arg[len(prefix) :]
        if arg in ("-v", "--v") and index + 1 < len(args):
            value = args[index + 1]
        if value is not None and value.isdigit() and int(value) >= DEBUG_VERBOSITY:
            return True
    return False


class ContractGroup(click.Group):
    """The root group: runs a command and turns whatever escapes it into the contract above."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        arguments = list(sys.argv[1:] if args is None else args)
        try:
            result = super().main(arguments, prog_name, complete_var, standalone_mode=False, **extra)
        except click.UsageError as error:
            error.show()
            sys.exit(error.exit_code)
        except click.ClickException as error:
            click.echo(f"error: {error.format_message()}", err=True)
            sys.exit(error.exit_code)
        except (click.Abort, KeyboardInterrupt, EOFError):
            click.echo("Aborted!", err=True)
            sys.exit(130)
        except SystemExit:
            raise
        except ModuleNotFoundError as error:
            friendly = missing_extra(error, _command_words(self, arguments))
            if friendly is None:
                _internal_error(error, arguments)
            click.echo(f"error: {friendly.format_message()}", err=True)
            sys.exit(friendly.exit_code)
        except OSError as error:
            if error.errno == errno.EPIPE:  # `secsched ... | head`: the reader left; not an error
                sys.exit(1)
            _internal_error(error, arguments)
        except Exception as error:
            _internal_error(error, arguments)
        sys.exit(result if isinstance(result, int) else 0)


def _command_words(group: click.Group, arguments: Sequence[str]) -> str:
    """`operator run` for `operator run --namespace x`: the sub-command names leading `arguments`."""
    words: list[str] = []
    command: click.Command | None = group
    context = click.Context(group)
    for argument in arguments:
        if not isinstance(command, click.Group) or argument.startswith("-"):
            break
        try:
            command = command.get_command(context, argument)
        except (click.ClickException, ImportError):  # its import failed: its name is still the word
            command = None
        words.append(argument)
    return " ".join(words)


def _internal_error(error: BaseException, arguments: Sequence[str]) -> NoReturn:
    if debug_requested(arguments):
        raise error
    summary = f"{type(error).__name__}: {error}".strip().rstrip(":")
    if len(summary) > 500:
        summary = summary[:500] + "…"
    click.echo(
        f"error: internal error (a bug in secsched, not in your input): {summary}: rerun with "
        f"{DEBUG_ENV}=1 for the traceback and report it",
        err=True,
    )
    sys.exit(1)
