"""The `paradise` command: commands are assembled here, one module per command.

This is the only place that turns ParadiseError into a one-line message and exit code 2.
"""

from __future__ import annotations

import sys

import typer

from paradise.cli.helptext import readable
from paradise.errors import ParadiseError, visible

readable()
app = typer.Typer(
    name="paradise",
    help="Post-mortem trace analysis and optimization hints for parallel programs.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    add_completion=False,
)


def version() -> str:
    """The installed paradise's version ("unknown" when run from a tree that was never installed)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("paradise")
    except PackageNotFoundError:
        return "unknown"


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"paradise {version()}")
        raise typer.Exit()


@app.callback()
def _root(
    show_version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                      help="Print paradise's version and exit."),
) -> None:
    pass


def _register() -> None:
    from paradise.cli import (
        analyze,
        compare,
        demo,
        export,
        import_cmd,
        info,
        merge,
        policy,
        report,
        synth,
        trace_cmd,
        tune,
        whatif,
    )

    app.add_typer(import_cmd.app, name="import")
    app.add_typer(trace_cmd.app, name="trace")
    app.add_typer(export.app, name="export")
    app.add_typer(tune.app, name="tune")
    for module in (info, analyze, report, merge, whatif, compare, policy, demo, synth):
        module.register(app)


_register()


def main() -> None:
    """Console-script entry point."""
    try:
        rc = app(standalone_mode=False, prog_name="paradise")
        sys.exit(rc if isinstance(rc, int) else 0)
    except ParadiseError as exc:
        print(f"paradise: error: {visible(str(exc))}", file=sys.stderr)
        sys.exit(2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        print("paradise: aborted", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        print("paradise: interrupted", file=sys.stderr)
        sys.exit(130)
    except Exception as exc:  # click usage errors arrive as ClickException
        import click

        try:  # typer >= 0.25 vendors click; its usage errors are not click.ClickException
            from typer._click.exceptions import ClickException as TyperClickException
        except ImportError:  # pragma: no cover - older typer
            TyperClickException = click.ClickException
        if isinstance(exc, (click.ClickException, TyperClickException)):
            print(f"paradise: error: {_usage_line(exc)}", file=sys.stderr)
            sys.exit(exc.exit_code)
        raise


def _usage_line(exc: Exception) -> str:
    """A usage error as one line: the problem, then the command whose --help explains it (the
    caller prefixes `paradise: error: ` once)."""
    ctx = getattr(exc, "ctx", None)
    text = " ".join(exc.format_message().split())  # type: ignore[attr-defined]
    hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
    return visible(f"{text}{hint}")


if __name__ == "__main__":
    main()
