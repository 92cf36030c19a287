"""CLI commands that move memory in and out: index-code, export, import, rebuild."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from cortex.cli._context import cortex_of, echo_json, progress_bar


# -- index-code ---------------------------------------------------------------------------------
@click.command("index-code")
@click.argument("target")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def index_code(ctx: click.Context, target: str, as_json: bool) -> None:
    """Store code for recall: a file, a directory or FILE:SYMBOL.

    TARGET is a source file, a directory (every source file under it, skipping VCS folders,
    virtual environments and node_modules) or FILE:SYMBOL (`app.py:main`, `app.py:Store.open`).
    Each function or class is stored raw (never embedded) with a prose description that is
    embedded and linked to it, so recalling the description brings the code. Re-indexing an
    unchanged file changes nothing; a changed symbol is updated in place; symbols deleted
    from a file are archived.
    """
    from cortex.capture import codeindex
    from cortex.core.output.documents import index_report_to_dict

    with progress_bar("indexing") as update:
        report = codeindex.index_code(cortex_of(ctx), target, progress=update)
    if as_json:
        echo_json(index_report_to_dict(report))
        return
    click.echo(
        f"Indexed {report.files} file(s): {len(report.stored)} new, {len(report.updated)} updated, "
        f"{len(report.unchanged)} unchanged, {len(report.removed)} removed symbols."
    )
    for path, why in report.skipped[:20]:
        click.echo(f"  skipped {path}: {why}")
    if report.note:
        click.echo(f"  note: {report.note}")


# -- export / import ----------------------------------------------------------------------------
@click.command()
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write to FILE (default: stdout).")  # fmt: skip
@click.option(
    "--scope",
    type=click.Choice(["project", "global", "all"]),
    default="all",
    show_default=True,
    help="Which store(s) to export.",
)
@click.option("--json", "as_json", is_flag=True,
              help="With -o: print what was written (file, counts, digests) as JSON.")  # fmt: skip
@click.pass_context
def export(ctx: click.Context, output: Path | None, scope: str, as_json: bool) -> None:
    """Export memories, links and the journal as JSON lines.

    A lossless copy: `cortex import` of it into an empty store gives the same state digest.
    Without -o the export itself goes to stdout (it is JSON already); with -o FILE a summary
    is printed, as JSON with --json.
    """
    from cortex.admin import portability

    if as_json and output is None:
        raise click.UsageError("--json needs -o FILE: without it stdout carries the export itself")
    cx = cortex_of(ctx)
    if output is None:
        portability.export(cx, sys.stdout, scope=scope)
        return
    tmp = output.with_name(output.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        summary = portability.export(cx, fh, scope=scope)
    tmp.replace(output)
    if as_json:
        from cortex.core.output.documents import export_to_dict

        echo_json(export_to_dict(str(output), scope, summary))
        return
    for name, info in summary.items():
        click.echo(
            f"{name}: {info['memories']} memories, {info['edges']} edges, {info['journal']} journal records"
        )
    click.echo(f"Wrote {output}.")


@click.command("import")
@click.argument("source", type=click.File("r", encoding="utf-8"))
@click.option("--into", type=click.Choice(["project", "global"]), default=None,
              help="Put everything in this store (default: the store each part came from).")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def import_cmd(ctx: click.Context, source: Any, into: str | None, as_json: bool) -> None:
    """Import SOURCE, a `cortex export` file ('-' for stdin).

    Memories already present (same id, or the same text under another id) are never
    overwritten by older data; a newer version from the file replaces an older one.
    """
    from cortex.admin import portability
    from cortex.core.output.documents import fields_to_dict

    with progress_bar("importing") as update:
        reports = portability.import_file(cortex_of(ctx), source, into=into, progress=update)
    if as_json:
        echo_json([fields_to_dict(r) for r in reports])
        return
    for r in reports:
        click.echo(
            f"{r.scope.value} store: {r.inserted} new, {r.updated} updated, {r.kept} kept (newer here), "
            f"{r.duplicates} duplicates, {r.conflicts} conflicts; {r.edges} edges, "
            f"{r.journal} journal records."
        )
        for note in r.notes:
            click.echo(f"  note: {note}")


# -- rebuild --------------------------------------------------------------------------------
@click.command()
@click.option(
    "--verify",
    is_flag=True,
    help="Print the state digest before and after and the journal's replay; exit 1 if any differ.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def rebuild(ctx: click.Context, verify: bool, as_json: bool) -> None:
    """Rebuild the full-text, vector and centrality indexes.

    They are dropped and rebuilt from the memories and links; `--verify` proves that the
    logical state is the same before and after.
    """
    from cortex.admin import rebuild as rebuilding
    from cortex.core.output.documents import fields_to_dict

    with progress_bar("rebuilding") as update:
        reports = rebuilding.rebuild(cortex_of(ctx), progress=update)
    if as_json:
        echo_json([fields_to_dict(r, same=r.same, history_ok=r.history_ok) for r in reports])
    else:
        if not reports:
            click.echo("No store to rebuild yet.")
        for r in reports:
            click.echo(
                f"{r.scope.value} store: {r.memories} memories, {r.edges} edges; full-text index "
                f"{'ok' if r.fts_ok else 'FAILED its check'}; {r.vectors_kept} vectors kept"
            )
            if verify:
                click.echo(f"  digest before {r.before[:16]}")
                click.echo(f"  digest after  {r.after[:16]}  ({'same' if r.same else 'DIFFERENT'})")
                click.echo(
                    f"  journal replay {r.replayed[:16]} "
                    f"({'same' if r.history_ok else 'DIFFERENT: the journal does not describe this state'})"
                )
            for note in r.notes:
                click.echo(f"  note: {note}")
    if verify and not all(r.same and r.fts_ok and r.history_ok for r in reports):
        ctx.exit(1)
