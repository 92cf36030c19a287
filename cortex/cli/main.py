"""The `cortex` command: the root group with every command added from one explicit list."""

from __future__ import annotations

import contextlib
import sys

import click

from cortex.cli import (
    admin,
    audit,
    briefing,
    history,
    lifecycle,
    memory,
    plugin,
    portability,
    projection,
    scrub,
    serve,
    setup,
    stats,
    team,
)
from cortex.cli.group import CortexGroup, cli, exit_quietly
from cortex.shell.process import end_now

# Every command of `cortex`, in help order. A new command is added here and nowhere else.
COMMANDS: tuple[click.Command, ...] = (
    memory.remember,
    memory.recall,
    memory.get,
    memory.forget,
    memory.supersede,
    team.share,
    team.unshare,
    admin.traverse,
    admin.status,
    admin.doctor,
    audit.audit,
    stats.stats,
    admin.backfill,
    setup.init,
    setup.upgrade,
    setup.reset,
    briefing.brief,
    lifecycle.lifecycle_cmd,
    lifecycle.consolidate,
    lifecycle.restore,
    portability.index_code,
    portability.export,
    portability.import_cmd,
    projection.project_file,
    projection.import_projection,
    history.history,
    portability.rebuild,
    scrub.scrub,
    plugin.hook,
    serve.mcp_cmd,
    plugin.demo,
)
for _command in COMMANDS:
    cli.add_command(_command)


# Read-only commands that skills run as a new process per call. Once one has printed its output
# and closed its stores, the process ends without the interpreter's teardown: freeing the
# embedding model and every module costs tens of milliseconds that nobody waits for usefully.
QUICK_EXIT = frozenset({"recall", "get", "traverse"})


def main() -> None:
    """Console-script entry point."""
    try:
        cli(prog_name="cortex")
    except SystemExit as done:
        if isinstance(cli, CortexGroup) and cli.finished in QUICK_EXIT:
            end_now(done.code)
        raise
    except BrokenPipeError:  # `cortex recall x | head`: the group ends commands quietly; a last resort
        with contextlib.suppress(click.exceptions.Exit):
            exit_quietly()
        sys.exit(0)
