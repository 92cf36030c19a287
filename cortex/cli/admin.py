"""CLI commands that look after cortex itself: status, doctor, backfill, traverse."""

from __future__ import annotations

from typing import Any

import click

from cortex.cli._context import cortex_of, echo_json, progress_bar
from cortex.core.model import EDGE_TYPES


class EdgeTypeParam(click.ParamType):
    """An edge type by name or common alias (`related` -> `relates_to`)."""

    name = "edge type"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        """The canonical edge type name, or a usage error listing the valid ones."""
        from cortex.core.graph import normalize_edge_type

        found = normalize_edge_type(str(value))
        if found is None:
            self.fail(f"{value!r} is not a link type; use one of: {', '.join(EDGE_TYPES)}", param, ctx)
        return found.value


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Show what is stored and what still needs embedding.

    Counts memories by status and type in the project and global stores, with edges, journal
    records, the vector index and how many memories wait for `cortex backfill`.
    """

    from cortex.admin import checks as admin

    report = admin.status(cortex_of(ctx))
    if as_json:
        echo_json(report.to_dict())
        return
    click.echo(f"project: {report.project}")
    for scope, info in report.stores.items():
        if info.missing:
            click.echo(f"{scope} store: {info.path} (empty: nothing stored yet)")
            continue
        by_status = ", ".join(f"{v} {k}" for k, v in sorted(info.by_status.items())) or "empty"
        by_type = ", ".join(f"{v} {k}" for k, v in sorted(info.active_by_type.items()))
        click.echo(f"{scope} store: {info.path} ({info.bytes / 1e6:.1f} MB)")
        click.echo(f"  memories: {by_status}")
        if by_type:
            click.echo(f"  active by type: {by_type}")
        click.echo(f"  edges: {info.edges}, journal records: {info.journal}")
        pending = info.pending_embeddings
        click.echo(
            f"  vectors: {info.vector_index or 'none yet'}"
            + (f"; {pending} waiting for embedding (run `cortex backfill`)" if pending else "")
        )


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the checks as JSON.")
@click.option(
    "--fetch-reranker",
    is_flag=True,
    help="First download the FlashRank reranker model (with a timeout); nothing else downloads it.",
)
@click.pass_context
def doctor(ctx: click.Context, as_json: bool, fetch_reranker: bool) -> None:
    """Check the installation and the stores; name each fix.

    Reports the Python and SQLite driver, vector search, the embedding models, the health
    of both stores and the optional backends, then every setting with its value and where
    that value comes from (default, FILE:LINE of a config file, or a CORTEX_* variable).
    Exits 1 when a check fails (a corrupt or foreign store, a missing configured model);
    warnings (e.g. no ONNX export yet) exit 0. With --json: a list of checks, the one named
    `settings` also holding every setting as {name, value, source}.
    """
    from cortex.admin.doctor import doctor as run_checks
    from cortex.admin.settings_check import setting_rows
    from cortex.core.output.documents import doctor_to_list

    _prepare_doctor(ctx, fetch_reranker)
    cx = cortex_of(ctx)
    checks = run_checks(cx)
    rows = setting_rows(cx)
    if as_json:
        echo_json(doctor_to_list(checks, rows))
    else:
        marks = {"ok": "ok  ", "warn": "warn", "fail": "FAIL"}
        for c in checks:
            click.echo(f"[{marks[c.state]}] {c.name}: {c.detail}")
            if c.fix and c.state != "ok":
                click.echo(f"       fix: {c.fix}")
        _echo_settings(rows)
    if any(c.state == "fail" for c in checks):
        ctx.exit(1)


def _echo_settings(rows: list[tuple[str, Any, str]]) -> None:
    """Every setting as a config.toml line, with where its value comes from."""
    lines = [(f"{name} = {_toml_value(value)}", source) for name, value, source in rows]
    width = max(len(text) for text, _ in lines)
    click.echo("\nsettings (as config.toml lines; where each value comes from):")
    for text, source in lines:
        click.echo(f"  {text:<{width}}  {source}")


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


@click.command()
@click.option(
    "--no-export", is_flag=True, help="With sentence-transformers embedding: do not prepare the ONNX model."
)
@click.option("--limit", type=click.IntRange(1), default=None, help="Embed at most N per store.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def backfill(ctx: click.Context, no_export: bool, limit: int | None, as_json: bool) -> None:
    """Embed memories that have no vector yet; export the ONNX model.

    Memories stored while no embedder was available are embedded in batches (a progress bar
    shows on a terminal). The local model's ONNX file (in CORTEX_HOME/models) is built from its
    weights first if it is missing; documents and queries share it.
    """

    from cortex.admin import checks as admin

    with progress_bar("embedding") as update:
        result = admin.backfill(cortex_of(ctx), update, export=not no_export, limit=limit)
    if as_json:
        from cortex.core.output.documents import backfill_to_dict

        echo_json(backfill_to_dict(result["embedded"], result["embedder"], result.get("onnx_export")))
        return
    click.echo(f"Embedded {result['embedded']} memories with {result['embedder']}.")
    if result.get("onnx_export"):
        click.echo(f"ONNX query model: {result['onnx_export']}")


@click.command()
@click.argument("memory_id")
@click.option(
    "-d",
    "--depth",
    type=click.IntRange(1, 6),
    default=2,
    show_default=True,
    help="How many links away to go.",
)
@click.option(
    "-t",
    "--type",
    "types",
    type=EdgeTypeParam(),
    multiple=True,
    help="Only follow edges of this type (repeatable; aliases such as `related` work).",
)
@click.option(
    "--direction",
    type=click.Choice(["out", "in", "both"]),
    default="both",
    show_default=True,
    help="Follow links from the memory (out), to it (in), or both.",
)
@click.option(
    "--min-strength",
    type=click.FloatRange(0, 1),
    default=0.0,
    show_default=True,
    help="Ignore links weaker than this (0-1).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the traversal as JSON.")
@click.pass_context
def traverse(
    ctx: click.Context,
    memory_id: str,
    depth: int,
    types: tuple[str, ...],
    direction: str,
    min_strength: float,
    as_json: bool,
) -> None:
    """Walk the links from memory MEMORY_ID, grouped by depth.

    MEMORY_ID is an id or unique id prefix. Each line shows the link type, its strength and
    the linked memory; suggested links (awaiting review) are not followed.
    """
    from cortex.recall import traverse as graphs

    cx = cortex_of(ctx)
    result = graphs.traverse(
        cx, memory_id, depth=depth, types=types, direction=direction, min_strength=min_strength
    )
    if as_json:
        echo_json(result)
        return
    start = result["start"]
    click.echo(f"{start['id']} [{start['type']}] {start['summary']}")
    if not result["levels"]:
        click.echo("  (no links)")
    for level in result["levels"]:
        click.echo(f"depth {level['depth']}:")
        for node in level["nodes"]:
            arrow = "->" if node["direction"] == "out" else "<-"
            click.echo(
                f"  {arrow} {node['edge']} ({node['strength']:.2f}) {node['id']} "
                f"[{node['type']}] {node['summary']}"
            )


def _prepare_doctor(ctx: click.Context, fetch_reranker: bool) -> None:
    """With --fetch-reranker, download the reranker model before the checks run."""
    if not fetch_reranker:
        return
    from cortex.backends.rerank import reranker_dir
    from cortex.backends.rerank_fetch import fetch_reranker as fetch

    cx = cortex_of(ctx)
    model = cx.settings.reranker_model
    with progress_bar(f"downloading {model}") as update:
        folder = fetch(reranker_dir(cx.settings, cx.paths.models_dir), model, progress=update)
    # stderr: `doctor --json` keeps stdout for the JSON document.
    click.echo(f"Reranker model ready at {folder}", err=True)
