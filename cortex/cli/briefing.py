"""CLI command `cortex brief`: print the briefing a new session gets (cached, or re-rendered)."""

from __future__ import annotations

from pathlib import Path

import click

from cortex.cli._context import cortex_of, echo_json

PARTS = ("stable", "moment", "full")


@click.command("brief")
@click.option(
    "--refresh",
    is_flag=True,
    help="Re-render from the stores first (rewrites .claude/rules/cortex-memory.md and the cache).",
)
@click.option(
    "--part",
    type=click.Choice(PARTS),
    default="full",
    show_default=True,
    help="stable: what the rules file carries; moment: this branch's progress, context and "
    "stale notes (what SessionStart adds); full: both.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the briefing and what went into it as JSON.")
@click.pass_context
def brief(ctx: click.Context, refresh: bool, part: str, as_json: bool) -> None:
    """Print the briefing cortex hands a new Claude Code session.

    It comes from the cache the worker writes after each extraction for this branch and
    directory; without a cache (or with --refresh) it is rendered from the stores first.
    """
    from cortex.briefing.deliver import read_briefing
    from cortex.core.output.documents import briefing_to_dict

    cached, origin = read_briefing(cortex_of(ctx), cwd=Path.cwd(), refresh=refresh)
    text = {"stable": cached.stable, "moment": cached.moment, "full": cached.full}[part]
    if as_json:
        meta = cached.meta.get(part, {})
        echo_json(
            briefing_to_dict(
                part,
                text,
                origin,
                branch=cached.branch,
                head=cached.head,
                rendered_at=cached.rendered_at,
                rules_file_digest=cached.stable_digest,
                meta=meta,
            )
        )
        return
    if not text:
        click.echo(
            f"cortex: the {part} briefing is empty (nothing stored for it yet; "
            "`cortex remember` or a Claude Code session adds notes)",
            err=True,
        )
        return
    click.echo(text)
