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
    team,
)
from cortex.cli.group import cli, exit_quietly

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


def main() -> None:
    """Console-script entry point."""
    try:
        cli(prog_name="cortex")
    except BrokenPipeError:  # `cortex recall x | head`: the group ends commands quietly; a last resort
        with contextlib.suppress(click.exceptions.Exit):
            exit_quietly()
        sys.exit(0)
