"""CLI commands of team memory: share and unshare a project memory."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from cortex.cli._context import cortex_of, echo_json

if TYPE_CHECKING:
    from cortex.team.share import ShareResult


def _document(result: ShareResult) -> dict[str, Any]:
    from cortex.core.output.documents import share_to_dict

    p = result.push
    return share_to_dict(
        result.memory,
        result.shared,
        result.changed,
        error=p.error,
        pending=p.pending,
        pushed=p.shared,
        withdrawn=p.withdrawn,
        skipped=p.skipped,
        contradictions=p.contradictions,
    )


@click.command()
@click.argument("memory_id")
@click.option("--json", "as_json", is_flag=True, help="Print the memory and the push as JSON.")
@click.pass_context
def share(ctx: click.Context, memory_id: str, as_json: bool) -> None:
    """Share project memory MEMORY_ID with the team (the team store, `team_dsn`).

    Decisions, conventions (patterns), architecture notes, gotchas and code descriptions can be
    shared; progress notes never are. The text passes the redaction gate again before it
    leaves this machine. When the team store does not answer, the share stays pending in the
    project store and the worker pushes it later.
    """
    from cortex.team.share import describe
    from cortex.team.share import share as run_share

    result = run_share(cortex_of(ctx), memory_id)
    if as_json:
        echo_json(_document(result))
        return
    click.echo(describe(result))


@click.command()
@click.argument("memory_id")
@click.option("--json", "as_json", is_flag=True, help="Print the memory and the push as JSON.")
@click.pass_context
def unshare(ctx: click.Context, memory_id: str, as_json: bool) -> None:
    """Keep project memory MEMORY_ID off the team store, and withdraw the team's copy.

    Also for types the team config shares automatically (`team_share_types`). Teammates no
    longer see it in recall or their next briefing; it stays in your project store.
    """
    from cortex.team.share import describe
    from cortex.team.share import unshare as run_unshare

    result = run_unshare(cortex_of(ctx), memory_id)
    if as_json:
        echo_json(_document(result))
        return
    click.echo(describe(result))
