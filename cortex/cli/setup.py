"""CLI commands that set a project up and look after its stores: init, reset, upgrade."""

from __future__ import annotations

import os
import sys

import click

from cortex.cli._context import cortex_of, echo_json
from cortex.errors import CortexError

MARKS = {"created": "+", "present": "=", "skipped": "-", "missing": "!", "failed": "x"}


@click.command()
@click.option(
    "--model-only",
    is_flag=True,
    help="Only prepare the local embedding model (what the plugin's install runs); touches no project.",
)
@click.option("--json", "as_json", is_flag=True, help="Print what each step did as JSON.")
@click.pass_context
def init(ctx: click.Context, model_only: bool, as_json: bool) -> None:
    """Set this project up for cortex (safe to repeat).

    Creates the project store, builds the local embedding model's ONNX file when the local
    embedder is installed (so the first /recall is fast), keeps the rules file
    .claude/rules/cortex-memory.md out of git through the clone's exclude file, and looks for
    the Claude Code plugin. Each step says whether it did something now (+), found it done
    (=), was skipped (-) or needs you (!, with the fix). Exits 1 only when a step failed.
    """
    from cortex.admin.setup import init as run_init

    report = run_init(cortex_of(ctx), os.environ, model_only=model_only)
    if as_json:
        echo_json(report.to_dict())
    else:
        click.echo(f"project: {report.project}")
        for step in report.steps:
            click.echo(f"{MARKS.get(step.state, '?')} {step.name}: {step.state}: {step.detail}")
            if step.fix:
                click.echo(f"  fix: {step.fix}")
    if not report.ok:
        ctx.exit(1)


def stdin_is_a_terminal() -> bool:
    """Whether a person can answer the confirmation question."""
    return sys.stdin.isatty()


@click.command()
@click.option("--global", "include_global", is_flag=True, help="Also empty the global store.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@click.option("--json", "as_json", is_flag=True, help="Print what was removed and the checkpoints as JSON.")
@click.pass_context
def reset(ctx: click.Context, include_global: bool, yes: bool, as_json: bool) -> None:
    """Empty this project's memory (checkpoint first).

    Every memory of the project store (with --global, of the global store too) goes, with the
    cached briefings, cortex's block in the rules file and the capture queue. Each store is
    checkpointed first: the command prints where, and `cortex restore NAME` brings it back.
    Asks before doing anything unless --yes is given.
    """
    from cortex.admin import reset as resetting

    cx = cortex_of(ctx)
    if not yes:
        if not stdin_is_a_terminal():
            raise CortexError(
                "confirmation needed but stdin is not a terminal; nothing reset",
                "rerun with --yes to go ahead without asking",
            )
        found = resetting.preview(cx, include_global)
        what = "; ".join(f"{s.memories} active memories in the {s.scope} store ({s.path})" for s in found)
        click.echo(f"This removes {what}.", err=True)
        click.confirm("A checkpoint is kept first. Reset?", abort=True, err=True)
    report = resetting.reset(cx, include_global=include_global)
    if as_json:
        echo_json(report.to_dict())
        return
    for s in report.stores:
        if s.checkpoint is None:
            click.echo(f"{s.scope} store: nothing to reset ({s.path} does not exist)")
        else:
            click.echo(
                f"{s.scope} store: {s.memories} active memories removed; checkpoint kept at {s.checkpoint}"
            )
    for item in report.removed:
        if not item.startswith(tuple(s.path for s in report.stores)):
            click.echo(f"removed {item}")
    if any(s.checkpoint for s in report.stores):
        click.echo("Undo with `cortex restore NAME` (`cortex restore --list` lists the checkpoints).")


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print each store's schema before and after as JSON.")
@click.pass_context
def upgrade(ctx: click.Context, as_json: bool) -> None:
    """Migrate the stores to this cortex's schema, checkpoint first.

    For each store older than this cortex, a checkpoint is taken, then the numbered migrations
    run, one transaction each. Prints each store's schema before and after and where its
    checkpoint is; a store already current is left alone. A store written by a newer cortex
    is refused without being touched.
    """
    from cortex.admin.setup import upgrade as run_upgrade

    report = run_upgrade(cortex_of(ctx))
    if as_json:
        echo_json(report.to_dict())
        return
    for s in report.stores:
        if s.before is None:
            click.echo(f"{s.scope} store: none yet ({s.path})")
        elif not s.changed:
            click.echo(f"{s.scope} store: up to date (schema {s.after}) at {s.path}")
        else:
            kept = (
                f"; checkpoint kept at {s.checkpoint}" if s.checkpoint else " (it was empty: no checkpoint)"
            )
            click.echo(f"{s.scope} store: schema {s.before} -> {s.after} at {s.path}{kept}")
