"""The root `cortex` click group: one error boundary, and the context object every command reads."""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from cortex.errors import CortexError
from cortex.paths import Paths
from cortex.version import __version__

log = logging.getLogger("cortex.cli.main")

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
DRIVER_MODULES = ("sqlite3", "sqlean")  # DB-API error classes of the SQLite drivers cortex uses
# Commands that never read the project's context: a hook must run (and exit 0) whatever the config.
WITHOUT_CONTEXT = ("hook",)
SUMMARY_CHARS = 100  # a command's one-line summary in `cortex --help`, wrapped to the terminal


def stdout_is_a_pipe() -> bool:
    """Whether stdout is a pipe or socket: the only place a broken pipe there can come from."""
    try:
        mode = os.fstat(sys.stdout.fileno()).st_mode
    except (AttributeError, OSError, ValueError):  # replaced by a stream without a file
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def exit_quietly() -> NoReturn:
    """The reader of stdout went away (`cortex status | head -2`): stop at once, exit 0.

    stdout is pointed at the null device so the interpreter's last flush of what is still
    buffered cannot fail again (it would print a traceback and exit 120)."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    raise click.exceptions.Exit(0)


class CortexGroup(click.Group):
    """One error boundary: CortexError -> message + fix, exit 1; usage errors stay exit 2; a
    closed stdout ends any command quietly with exit 0."""

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Every command with its whole summary: one that does not fit beside the longest command
        name (`import-projection`) wraps onto a second line instead of being cut off."""
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit=SUMMARY_CHARS)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def make_context(
        self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any
    ) -> click.Context:
        """Parse the root options (`--help` and `--version` print from here)."""
        try:
            return super().make_context(info_name, args, parent, **extra)
        except BrokenPipeError:
            if not stdout_is_a_pipe():
                raise
            exit_quietly()

    finished: str | None = None  # the command that ran to its end in this process, if any

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; turn errors into a message and an exit code."""
        self.finished = None
        try:
            value = super().invoke(ctx)
            self.finished = ctx.invoked_subcommand
            return value
        except BrokenPipeError as exc:
            if stdout_is_a_pipe():
                exit_quietly()
            internal_error(ctx, exc)  # a broken connection elsewhere: an ordinary failure
        except CortexError as exc:
            click.echo(f"cortex: error: {exc.message}", err=True)
            if exc.fix:
                click.echo(f"  fix: {exc.fix}", err=True)
            ctx.exit(1)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except KeyboardInterrupt:
            click.echo("cortex: interrupted", err=True)
            ctx.exit(130)
        except Exception as exc:
            internal_error(ctx, exc)


def internal_error(ctx: click.Context, exc: Exception) -> NoReturn:
    """An unexpected exception as one line and a fix, exit 1 (the traceback with CORTEX_DEBUG)."""
    if os.environ.get("CORTEX_DEBUG"):
        raise exc
    if type(exc).__module__.startswith(DRIVER_MODULES):
        # A fault the store reveals only mid-query (a damaged index page, a full disk).
        log.error("store error: %s", exc)
        click.echo(f"cortex: error: the store failed: {exc}", err=True)
        click.echo(
            "  fix: run `cortex doctor` to check the stores; restore a checkpoint with "
            "`cortex restore`, or move a damaged store aside",
            err=True,
        )
        ctx.exit(1)
    log.exception("unexpected error")
    click.echo(f"cortex: internal error: {type(exc).__name__}: {exc}", err=True)
    click.echo(
        "  fix: rerun with CORTEX_DEBUG=1 for the traceback and report it; "
        "`cortex doctor` checks the installation",
        err=True,
    )
    ctx.exit(1)


@click.group(name="cortex", cls=CortexGroup, context_settings=CONTEXT_SETTINGS)
@click.version_option(__version__, "-V", "--version", prog_name="cortex")
@click.option(
    "-C",
    "--project",
    "project",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="Work on the project containing this directory (default: the current directory).",
)
@click.pass_context
def cli(ctx: click.Context, project: Path | None) -> None:
    """cortex: persistent, offline memory for Claude Code.

    Memories live in SQLite: per project in <git root>/.memory/cortex.db and across projects in
    ~/.claude/memory/cortex-global.db (CORTEX_HOME overrides). Recall is hybrid (keyword BM25 +
    local vectors); without an embedding model it falls back to keyword search and says so.

    \b
    Everyday commands:
      cortex remember "We chose Postgres advisory locks for the job queue" --type decision
      cortex recall "how do workers avoid running a job twice"
      cortex status        what is stored, what is pending
      cortex doctor        what is installed and working, and how to fix what is not
    """
    if ctx.invoked_subcommand in WITHOUT_CONTEXT:
        return
    from cortex.app import Cortex
    from cortex.shell.logs import configure

    cx = Cortex.for_cwd(project)
    had_store = cx.paths.store_dir.is_dir()
    # A read must not leave a bare `.memory/` (no .gitignore) in a project that has no store yet.
    log_file = cx.paths.log_file if had_store else cx.paths.home / "cortex.log"
    configure(log_file, fallback=cx.paths.home / "cortex.log", level=cx.settings.log_level)
    ctx.obj = cx
    ctx.call_on_close(cx.close)
    if not had_store and project is None and not cx.paths.in_git_repo:  # -C DIR is a choice made
        ctx.call_on_close(lambda: _note_new_project(cx.paths))


def _note_new_project(paths: Paths) -> None:
    """Say once, when a command made the first store of a folder outside git, which folder it is."""
    if paths.store_dir.is_dir():
        click.echo(
            f"cortex: note: {paths.root} is not in a git repository, so it is the project: its memory "
            f"is in {paths.store_dir} (to choose another folder, pass `-C DIR` or run cortex inside "
            "a git repository)",
            err=True,
        )
