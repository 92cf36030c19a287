"""CLI commands of the git-tracked projection: project-file and import-projection."""

from __future__ import annotations

from pathlib import Path

import click

from cortex.cli._context import cortex_of, echo_json

PATH_OPTION = click.option(
    "--path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The projection file (default: docs/memory.md in the project root).",
)


@click.command("project-file")
@PATH_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print what was written as JSON.")
@click.pass_context
def project_file(ctx: click.Context, path: Path | None, as_json: bool) -> None:
    """Write the project's shared memories to a markdown file for git.

    Active decisions, architecture notes, conventions and gotchas of the project store, one
    entry per memory headed by its id, in a stable order, so a pull request can review memory
    like code. Never progress notes, never global memories, never memories tagged `private`.
    Teammates' edits come back with `cortex import-projection`.
    """
    from cortex.capture import projection
    from cortex.core.output.documents import projection_file_to_dict

    report = projection.project_file(cortex_of(ctx), path)
    if as_json:
        echo_json(projection_file_to_dict(str(report.path), report.changed, report.entries))
        return
    state = "Wrote" if report.changed else "Unchanged:"
    click.echo(f"{state} {report.path} ({len(report.entries)} memories).")


@click.command("import-projection")
@PATH_OPTION
@click.option("--dry-run", is_flag=True, help="Show what would change; change nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print what changed as JSON.")
@click.pass_context
def import_projection(ctx: click.Context, path: Path | None, dry_run: bool, as_json: bool) -> None:
    """Apply edits of the projection file to the project store.

    An entry headed `### new` (or by an id this store does not show) is remembered, through
    the same redaction and write gates as `cortex remember`; an entry whose text was edited
    becomes a new memory that supersedes the old one (kept, superseded); an entry deleted from
    the file is forgotten (archived, restorable). A malformed file changes nothing: the error
    names the file and line. Run `cortex project-file` afterwards to give new entries their ids.
    """
    from cortex.capture import projection
    from cortex.core.output.documents import projection_import_to_dict

    cx = cortex_of(ctx)
    r = projection.import_projection(cx, path, dry_run=dry_run)
    if not dry_run and not r.plan.empty and (cx.paths.rules_file.exists() or cx.paths.briefing_dir.exists()):
        from cortex.briefing.deliver import refresh_briefing  # keep a delivered briefing current

        refresh_briefing(cx)
    if as_json:
        echo_json(projection_import_to_dict(str(r.path), r.plan, dry_run, r.added, r.superseded, r.notes))
        return
    p = r.plan
    verb = "Would change" if dry_run else "Imported"
    click.echo(
        f"{verb} {r.path}: {len(p.add)} new, {len(p.edit)} superseded, {len(p.forget)} forgotten, "
        f"{len(p.retype)} moved to another section, {p.unchanged} unchanged."
    )
    for e, o in r.added:
        click.echo(f"  line {e.line}: {o.action.value} {o.memory.id}")
    for old, e, new in r.superseded:
        click.echo(f"  line {e.line}: {new.id} supersedes {old.id}")
    for m in p.forget:
        click.echo(f"  forgot {m.id}")
    for note in r.notes:
        click.echo(f"  note: {note}")
