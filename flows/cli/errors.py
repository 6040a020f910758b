"""How every `threadmed` command reports what the user must fix: one line, no traceback."""

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from tasks.core.preflight import UserError, describe_os_error, validation_message

errors = Console(stderr=True)
Command = TypeVar("Command", bound=Callable[..., Any])


def reports_errors(*writing: str) -> Callable[[Command], Command]:
    """Run a command inside `reported_errors`; `writing` names its parameters that are output folders."""

    def decorate(command: Command) -> Command:
        @functools.wraps(command)  # Typer reads the parameters through __wrapped__
        def run(**arguments: Any) -> Any:
            folders = [Path(arguments[name]) for name in writing if arguments.get(name) is not None]
            with reported_errors(*folders):
                return command(**arguments)

        return run  # type: ignore[return-value]

    return decorate


@contextmanager
def reported_errors(*writing: Path) -> Iterator[None]:
    """Bad options exit 2 with click's usage message; bad inputs and a full or locked disk print one line
    and exit 1. `writing` names the output folders, for a failed write that names no file."""
    try:
        yield
    except UserError as error:
        if error.option:
            raise typer.BadParameter(str(error), param_hint=[error.option]) from None
        fail(str(error))
    except ValidationError as error:  # settings built from the options
        raise typer.BadParameter(validation_message(error)) from None
    except OSError as error:
        message = describe_os_error(error, writing)
        if message is None:
            raise
        fail(message)


def warn(message: str) -> None:
    """Something the command skipped or doubts, on stderr, one line; the command goes on."""
    errors.print(f"[yellow]Warning:[/yellow] {escape(message)}", soft_wrap=True)


def fail(message: str) -> NoReturn:
    errors.print(f"[red]Error:[/red] {escape(message)}", soft_wrap=True)
    raise typer.Exit(1)
