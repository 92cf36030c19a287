"""CLI commands that keep memory healthy: the lifecycle tick, consolidation, rollback and restore."""

from __future__ import annotations

import sys
from typing import Any

import click

from cortex.cli._context import cortex_of, echo_json
from cortex.core.graph import edge_ref
from cortex.core.model import Edge, Memory
from cortex.errors import CortexError


def _label(m: Memory) -> str:
    text = m.summary or (m.content.splitlines() or [""])[0]
    return f"{m.id} [{m.type.value}] {text[:80]}"


def _confirm(question: str, yes: bool, what: str) -> None:
    """Ask on a terminal; without one, insist on --yes."""
    if yes:
        return
    if not sys.stdin.isatty():
        raise CortexError(
            f"confirmation needed but stdin is not a terminal; {what}",
            "rerun with --yes to go ahead without asking",
        )
    click.confirm(question, abort=True)


# -- lifecycle ----------------------------------------------------------------------------------
@click.command("lifecycle")
@click.option("--dry-run", is_flag=True, help="Only print what the tick would change.")
@click.option("--json", "as_json", is_flag=True, help="Print the changes as JSON.")
@click.pass_context
def lifecycle_cmd(ctx: click.Context, dry_run: bool, as_json: bool) -> None:
    """Fade confidence, archive idle memories, prune old ones.

    The decay tick. Half-lives per type: progress 7 days, context 30, gotcha 45, pattern 60;
    decisions, architecture, code and pinned memories never fade. Active memories below 0.3
    confidence for 14 days are archived (hubs exempt); archived ones untouched for 30 days
    are pruned. The worker runs this after its extractions.
    """
    from cortex.core.output import documents
    from cortex.lifecycle import upkeep as lifecycle

    report = lifecycle.tick(cortex_of(ctx), dry_run=dry_run)
    changes = [(s.scope, c) for s in report.stores for c in s.changes]
    if as_json:
        echo_json(documents.tick_to_dict(dry_run, report.counts(), changes))
        return
    verb = "Would change" if dry_run else "Changed"
    if not changes:
        click.echo("Nothing to change: every memory is where the rules want it.")
        return
    for scope, c in changes:
        click.echo(f"  {c.transition.value:<7} {_label(c.before)}  ({c.reason}; {scope.value})")
    counts = ", ".join(f"{n} {kind}" for kind, n in sorted(report.counts().items()))
    click.echo(f"{verb}: {counts}.")


# -- consolidate --------------------------------------------------------------------------------
def _show_plan(report: Any) -> int:
    shown = 0
    for store in report.stores:
        p = store.plan
        for merge in p.merges:
            shown += 1
            click.echo(f"merge into {_label(merge.keeper)}  (similarity {merge.similarity:.2f})")
            for m in merge.absorbed:
                click.echo(f"    absorbs {_label(m)}")
        for c in p.contradictions:
            shown += 1
            click.echo(f"contradiction? {_label(c.newer)}")
            click.echo(f"           vs. {_label(c.older)}")
    return shown


def _review_interactively(cx: Any, edges: list[Edge]) -> tuple[list[str], list[str]]:
    promote: list[str] = []
    drop: list[str] = []
    for e in edges:
        click.echo(f"suggested {e.type.value} ({e.strength:.2f}): {e.source} -> {e.target}")
        for mid in (e.source, e.target):
            try:
                _, m = cx.find(mid)
                click.echo(f"    {_label(m)}")
            except CortexError:
                click.echo(f"    {mid} (not found)")
        answer = (
            click.prompt("  [p]romote, [d]rop, [s]kip, [q]uit", default="s", show_default=False)
            .strip()
            .lower()[:1]
        )
        if answer == "q":
            break
        if answer == "p":
            promote.append(edge_ref(e))
        elif answer == "d":
            drop.append(edge_ref(e))
    return promote, drop


def _rollback(ctx: click.Context, yes: bool, as_json: bool) -> None:
    from cortex.core.output import documents
    from cortex.lifecycle import recovery

    cx = cortex_of(ctx)
    chosen = recovery.last_consolidation(cx)
    if chosen and not as_json:
        click.echo(f"Will restore the state from before the consolidation of {chosen[0].created}:")
        for cp in chosen:
            click.echo(f"  {cp.name}")
        click.echo("Changes made since then are set aside in a safety checkpoint (`cortex restore --list`).")
    if chosen and not any(c.restored_at for c in chosen):
        _confirm("Roll back?", yes, "nothing rolled back")
    report = recovery.rollback(cx)
    if as_json:
        restored, safety = [c.to_dict() for c in report.restored], [c.to_dict() for c in report.safety]
        echo_json(documents.recovery_to_dict(restored, report.exact, safety, report.digests))
    else:
        for cp in report.restored:
            state = "exact" if report.digests.get(cp.name) == cp.digest else "DIFFERENT"
            click.echo(f"Restored {cp.name}: state digest {report.digests[cp.name][:16]} ({state}).")
    if not report.exact:
        ctx.exit(1)


@click.command()
@click.option("--dry-run", is_flag=True, help="Only show what would be merged and flagged.")
@click.option("-y", "--yes", is_flag=True, help="Do not ask before merging (or rolling back).")
@click.option("--rollback", is_flag=True, help="Undo the last consolidation from its checkpoint.")
@click.option(
    "--promote", multiple=True, metavar="SRC:TGT[:TYPE]", help="Make a suggested edge active ('all')."
)
@click.option("--drop", multiple=True, metavar="SRC:TGT[:TYPE]", help="Delete a suggested edge ('all').")
@click.option(
    "--full",
    is_flag=True,
    help="Compare every memory with every other, not only what changed since the last run.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def consolidate(
    ctx: click.Context,
    dry_run: bool,
    yes: bool,
    rollback: bool,
    promote: tuple[str, ...],
    drop: tuple[str, ...],
    full: bool,
    as_json: bool,
) -> None:
    """Merge near-duplicates, flag contradictions, review links.

    Merged memories keep the provenance and access history of every member; the absorbed
    ones leave recall and the briefing but stay in the journal and exports. A checkpoint is
    taken first, and `cortex consolidate --rollback` restores it exactly. Runs on its own
    every 10 extractions or when more than 80 memories are active. Compares the memories
    written or changed since the last run with every memory; `--full` compares them all.
    """
    from cortex.core.output import documents
    from cortex.lifecycle import upkeep as lifecycle

    if rollback:
        _rollback(ctx, yes, as_json)
        return
    cx = cortex_of(ctx)
    preview = lifecycle.consolidate(cx, dry_run=True, full=full)
    pending = [e for s in preview.stores for e in s.plan.suggested]
    if as_json and dry_run:
        echo_json(_plan_json(preview))
        return
    if not as_json and not _show_plan(preview):
        click.echo("No near-duplicates or contradictions found.")
    changes = any(not s.plan.empty for s in preview.stores)
    result = None
    if changes and not dry_run:
        _confirm("Apply these merges and flags?", yes, "nothing merged")
        result = lifecycle.consolidate(cx, full=full)
        if not as_json:
            for s in result.stores:
                if s.checkpoint is not None:
                    click.echo(f"Checkpoint {s.checkpoint.name} (undo with `cortex consolidate --rollback`).")
                merged = sum(len(m.absorbed) for m in s.applied)
                click.echo(f"{s.scope.value} store: merged {merged} memories into {len(s.applied)}"
                           + (f"; {len(s.skipped)} skipped (changed meanwhile)" if s.skipped else "")
                           + f"; flagged {len(s.plan.new_edges)} contradictions.")  # fmt: skip
    if dry_run:
        if not as_json:
            for e in pending:
                click.echo(f"suggested {e.type.value}: {edge_ref(e)}")
        return
    if not promote and not drop and pending and not yes and sys.stdin.isatty() and not as_json:
        promote, drop = (tuple(x) for x in _review_interactively(cx, pending))
    reviewed = lifecycle.review_edges(cx, promote=promote, drop=drop) if promote or drop else None
    if as_json:
        out = _plan_json(result or preview)
        if reviewed:
            out["review"] = documents.review_to_dict(
                reviewed["promoted"], reviewed["dropped"], reviewed["unknown"]
            )
        echo_json(out)
        return
    if reviewed:
        click.echo(
            f"Promoted {len(reviewed['promoted'])}, dropped {len(reviewed['dropped'])} suggested edges."
        )
        for ref in reviewed["unknown"]:
            click.echo(f"  no suggested edge matches {ref}")
    elif pending:
        click.echo(f"{len(pending)} suggested edges await review (--promote/--drop SRC:TGT[:TYPE]):")
        for e in pending[:20]:
            click.echo(f"  {edge_ref(e)}  ({e.strength:.2f})")


def _plan_json(report: Any) -> dict[str, Any]:
    from cortex.core.output import documents

    stores = [
        (s.scope, s.checkpoint.to_dict() if s.checkpoint else None, s.plan, s.applied) for s in report.stores
    ]
    return documents.consolidation_to_dict(report.dry_run, stores)


# -- restore ------------------------------------------------------------------------------------
@click.command()
@click.argument("checkpoint", required=False)
@click.option("--list", "list_only", is_flag=True, help="List the checkpoints.")
@click.option("-y", "--yes", is_flag=True, help="Restore without asking.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def restore(ctx: click.Context, checkpoint: str | None, list_only: bool, yes: bool, as_json: bool) -> None:
    """Restore a store from a checkpoint, or list them.

    CHECKPOINT is a checkpoint name (or a unique start of one) from `cortex restore --list`;
    without it the checkpoints are listed. Checkpoints are taken before every consolidation
    that merges and before every restore, so a restore can itself be undone.
    """
    from cortex.core.output import documents
    from cortex.lifecycle import recovery

    cx = cortex_of(ctx)
    if list_only or checkpoint is None:
        found = recovery.list_all_checkpoints(cx)
        if as_json:
            echo_json([c.to_dict() for c in found])
            return
        if not found:
            click.echo("No checkpoints yet (one is taken before every consolidation that merges).")
        for c in found:
            used = f", restored {c.restored_at}" if c.restored_at else ""
            click.echo(f"  {c.name}  ({c.reason}, {c.created}{used})")
        return
    _confirm(f"Replace the store with checkpoint {checkpoint}?", yes, "nothing restored")
    report = recovery.restore(cx, checkpoint)
    if as_json:
        restored, safety = [c.to_dict() for c in report.restored], [c.to_dict() for c in report.safety]
        echo_json(documents.recovery_to_dict(restored, report.exact, safety))
    else:
        for cp in report.restored:
            click.echo(f"Restored {cp.name} ({'exact' if report.exact else 'digest DIFFERS'}).")
        for cp in report.safety:
            click.echo(f"The state before it is kept as {cp.name}.")
        for moved in report.set_aside[:1]:
            click.echo(f"The damaged store could not be opened; it was moved aside to {moved}.")
    if not report.exact:
        ctx.exit(1)
