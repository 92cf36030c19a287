"""CLI glue for the optional backends: `cortex doctor --fetch-reranker` and their doctor checks."""

from __future__ import annotations

import click

from cortex.cli.admin import progress_bar
from cortex.cli.memory import _cx


def prepare_doctor(ctx: click.Context, fetch_reranker: bool) -> None:
    """Register the backend checks; with --fetch-reranker, download the reranker model first."""
    import cortex.backends_doctor  # noqa: F401  (registers its checks in admin.DOCTOR_EXTRAS)

    if not fetch_reranker:
        return
    from cortex.shell.rerank import reranker_dir
    from cortex.shell.rerank_fetch import fetch_reranker as fetch

    cx = _cx(ctx)
    model = cx.settings.reranker_model
    with progress_bar(f"downloading {model}") as update:
        folder = fetch(reranker_dir(cx), model, progress=update)
    # stderr: `doctor --json` keeps stdout for the JSON document.
    click.echo(f"Reranker model ready at {folder}", err=True)
