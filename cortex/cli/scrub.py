"""`cortex scrub`: re-run redaction over what the stores already hold."""

from __future__ import annotations

import click

from cortex.cli._context import cortex_of, echo_json


@click.command("scrub")
@click.option("--dry-run", is_flag=True, help="Report what would change; write nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def scrub(ctx: click.Context, dry_run: bool, as_json: bool) -> None:
    """Redact secrets that an older version stored, in both stores.

    Every memory's text, summary, tags and source go through the current redaction and
    metadata rules again; a changed memory is rewritten (journaled as `scrub`) and the keyword
    index is rebuilt. Notes that would become identical are kept apart by id, never merged.
    Earlier journal records holding a secret are redacted in place (a `scrub` record says how
    many; history still replays to the live state), then the database file is compacted so
    the old text is gone from disk too. Checkpoints taken before the scrub are left as they are.
    """
    from cortex.admin.scrub import scrub as run_scrub
    from cortex.core.output.documents import scrub_to_dict

    reports = run_scrub(cortex_of(ctx), dry_run=dry_run)
    if as_json:
        echo_json(scrub_to_dict(reports))
        return
    if not reports:
        click.echo("No store yet: nothing to scrub.")
    verb = "would change" if dry_run else "changed"
    for r in reports:
        click.echo(f"{r.scope} store: {len(r.changed)} of {r.memories} memories {verb}")
        for c in r.changed[:20]:
            click.echo(f"  {c.id}: {', '.join(c.fields)}")
        if len(r.changed) > 20:
            click.echo(f"  and {len(r.changed) - 20} more")
        if r.journal_records_scrubbed:
            click.echo(f"  {r.journal_records_scrubbed} journal record(s) {verb} (payload redacted in place)")
        if r.journal_records_with_secrets and not dry_run:
            click.echo(
                f"  {r.journal_records_with_secrets} older journal record(s) still hold redactable text"
            )
