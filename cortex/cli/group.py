"""The root `cortex` click group: one error boundary, and the context object every command reads."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import click

from cortex.errors import CortexError
from cortex.version import __version__

log = logging.getLogger("cortex.cli.main")

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
DRIVER_MODULES = ("sqlite3", "sqlean")  # DB-API error classes of the SQLite drivers cortex uses


class CortexGroup(click.Group):
    """One error boundary: CortexError -> message + fix, exit 1; usage errors stay exit 2."""

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; turn errors into a message and an exit code."""
        try:
            return super().invoke(ctx)
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
            if os.environ.get("CORTEX_DEBUG"):
                raise
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
    from cortex.app import Cortex
    from cortex.shell.logs import configure

    cx = Cortex.for_cwd(project)
    # A read must not leave a bare `.memory/` (no .gitignore) in a project that has no store yet.
    log_file = cx.paths.log_file if cx.paths.store_dir.is_dir() else cx.paths.home / "cortex.log"
    configure(log_file, fallback=cx.paths.home / "cortex.log", level=cx.settings.log_level)
    ctx.obj = cx
    ctx.call_on_close(cx.close)
