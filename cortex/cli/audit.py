"""`cortex audit`: integrity and content health of the stores; `--fix` repairs what is derived."""

from __future__ import annotations

import click

from cortex.cli._context import cortex_of, echo_json


@click.command("audit")
@click.option("--fix", is_flag=True, help="Repair what can be derived again (checkpoint first).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def audit(ctx: click.Context, fix: bool, as_json: bool) -> None:
    """Check each store's integrity and the health of what it holds.

    Integrity: the keyword index against the memories, the vectors of each index, edges that
    point at missing memories, and the journal replayed against the live state. Health: the
    duplicate, junk (empty, fragmentary, boilerplate, tool noise), secret, never-used and
    stale (code a memory names changed or gone at HEAD) rates. With --fix a checkpoint is
    taken, then the keyword index is rebuilt, missing vectors embedded (when the index's
    model is available) and dangling edges deleted. Exits 1 while an integrity problem
    remains.
    """
    from cortex.admin.audit import audit as run_audit
    from cortex.core.output.documents import audit_to_dict

    reports = run_audit(cortex_of(ctx), fix=fix)
    if as_json:
        echo_json(audit_to_dict(reports))
    else:
        if not reports:
            click.echo("No store yet: nothing to audit.")
        for r in reports:
            h = r.health
            click.echo(f"{r.scope.value} store ({r.path}): {h.memories} active memories")
            for line in r.problems or ["integrity ok"]:
                click.echo(f"  {'[ok]' if not r.problems else '[FAIL]'} {line}")
            for e in r.dangling_edges[:10]:
                click.echo(f"    dangling edge {e[0]} -{e[2]}-> {e[1]}")
            click.echo(
                f"  duplicates {len(h.duplicates)} pair(s) ({h.rate(len(h.duplicate_ids)):.1%}), "
                f"junk {len(h.junk)} ({h.rate(len(h.junk)):.1%}), secrets {len(h.secrets)}, "
                f"never used {len(h.never_used)} ({h.rate(len(h.never_used)):.1%}), "
                f"stale {len(h.stale)} ({h.rate(len(h.stale)):.1%})"
            )
            for a, b in h.duplicates[:10]:
                click.echo(f"    duplicate {a} ~ {b}")
            for mid, kind in list(h.junk.items())[:10]:
                click.echo(f"    junk ({kind}) {mid}")
            for mid in h.secrets[:10]:
                click.echo(f"    secret in {mid}: `cortex scrub` redacts it")
            for mid, mark in list(h.stale.items())[:10]:
                click.echo(f"    {mid} {mark}")
            if r.checkpoint:
                click.echo(f"  checkpoint {r.checkpoint} taken before fixing")
            for line in r.fixed:
                click.echo(f"  fixed: {line}")
            for line in r.notes:
                click.echo(f"  note: {line}")
    if any(r.problems for r in reports):
        ctx.exit(1)
