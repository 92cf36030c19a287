"""`cortex history import`: capture this project's past Claude Code sessions."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from cortex.cli._context import cortex_of, echo_json

if TYPE_CHECKING:  # the use case is imported when the command runs
    from cortex.admin.history import HistoryPlan, Planned
    from cortex.capture.session import SessionReport

KB = 1024


@click.group()
def history() -> None:
    """Work with Claude Code's own session history."""


def _size(n: int) -> str:
    return f"{n / (KB * KB):.1f} MB" if n >= KB * KB else f"{(n + KB - 1) // KB} KB"


@history.command("import")
@click.option(
    "--since",
    type=click.DateTime(formats=["%Y-%m-%d", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S"]),
    default=None,
    help="Only sessions active on or after this date (local time), e.g. 2026-11-01.",
)
@click.option("--dry-run", is_flag=True, help="Only say which transcripts would be read; store nothing.")
@click.option(
    "--claude-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Claude Code's config folder (default: CLAUDE_CONFIG_DIR, else ~/.claude).",
)
@click.option("--json", "as_json", is_flag=True, help="Print what was read and stored as JSON.")
@click.pass_context
def import_history(
    ctx: click.Context, since: datetime | None, dry_run: bool, claude_dir: Path | None, as_json: bool
) -> None:
    """Capture this project's past sessions from Claude Code's transcripts.

    Reads ~/.claude/projects/<this project's folder>/*.jsonl (and the folders of sessions
    started in its subdirectories) through the same capture as the Stop hook, with the same
    per-session cursors: what was captured before is not read again, so a second run adds
    nothing. Claude Code deletes transcripts after 30 days by default. Progress goes to
    stderr; --dry-run lists what would be read.
    """
    from cortex.admin import history as hist

    cx = cortex_of(ctx)
    env = dict(os.environ)
    if claude_dir is not None:
        env["CLAUDE_CONFIG_DIR"] = str(claude_dir)
    plan = hist.plan_import(cx, env, since=since)
    if not plan.folders:
        click.echo(
            f"no Claude Code sessions of {cx.paths.root} under {plan.config_dir / 'projects'} "
            "(sessions are kept there for 30 days by default)",
            err=True,
        )
    if dry_run:
        report = hist.HistoryReport(plan, dry_run=True)
        if as_json:
            echo_json(report.to_dict())
            return
        _print_plan(plan)
        return
    report = hist.run_import(cx, plan, _progress)
    if as_json:
        echo_json(report.to_dict())
        return
    actions = report.actions()
    done = ", ".join(f"{n} {a}" for a, n in sorted(actions.items())) or "nothing new"
    click.echo(f"read {len(report.sessions)} of {len(plan.items)} transcripts: {done}")
    if report.embedded:
        click.echo(f"embedded {report.embedded} memories")


def _print_plan(plan: HistoryPlan) -> None:
    for folder in plan.folders:
        click.echo(f"folder: {folder}")
    for item in plan.items:
        t = item.transcript
        state = f"{_size(item.new_bytes)} new" if item.new_bytes else "already captured"
        click.echo(f"  {t.session_id}  {_size(t.size)}  {state}")
    todo = plan.todo
    total = sum(p.new_bytes for p in todo)
    skipped = f"; {plan.skipped_before} older than --since left out" if plan.skipped_before else ""
    click.echo(f"would read {len(todo)} of {len(plan.items)} transcripts ({_size(total)} new){skipped}")


def _progress(done: int, total: int, item: Planned, session: SessionReport | None) -> None:
    t = item.transcript
    if session is None:
        click.echo(f"[{done + 1}/{total}] {t.session_id} ({_size(item.new_bytes)} new) ...", err=True)
        return
    found = ", ".join(f"{n} {a}" for a, n in sorted(session.actions.items())) or "nothing new"
    note = f"; {session.error}" if session.error else ""
    click.echo(f"[{done}/{total}] {t.session_id}: {session.messages} messages, {found}{note}", err=True)
