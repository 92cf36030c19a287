"""CLI commands that read and write memories: remember, recall, get, forget, traverse, supersede."""

from __future__ import annotations

import dataclasses
import os
import sys

import click

from cortex.app import Cortex
from cortex.cli._context import cortex_of, echo_json
from cortex.core.model import MEMORY_TYPES, EdgeType, Scope
from cortex.errors import CortexError, InputError

TYPE_CHOICE = click.Choice(MEMORY_TYPES, case_sensitive=False)


def _read_text(words: tuple[str, ...]) -> str:
    """TEXT arguments joined, or stdin when the only argument is '-'."""
    if words == ("-",):
        data = sys.stdin.buffer.read()
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise InputError(
                "the text on stdin is not valid UTF-8 (binary data?); nothing was stored",
                "pass text, not binary files; for code use `cortex index-code PATH`",
            ) from None
    return " ".join(words)


@click.command()
@click.argument("text", nargs=-1, required=True)
@click.option(
    "-t",
    "--type",
    "mem_type",
    type=TYPE_CHOICE,
    default=None,
    help="Memory type (default: guessed from the text, else context).",
)
@click.option(
    "-p",
    "--priority",
    type=click.IntRange(1, 10),
    default=None,
    help="1-10; higher shows earlier in the briefing (default by type).",
)
@click.option(
    "-g",
    "--global",
    "is_global",
    is_flag=True,
    help="Store in the global store (holds across all projects).",
)
@click.option("--pin", is_flag=True, help="Pinned memories never decay and lead the briefing.")
@click.option(
    "--team", "to_team", is_flag=True, help="Also share it with the team (`cortex share`; needs team_dsn)."
)
@click.option("--tags", default="", help="Comma-separated tags, e.g. db,queue.")
@click.option(
    "--supersedes",
    "supersedes",
    default=None,
    metavar="ID",
    help="This memory replaces memory ID (which leaves the briefing and recall).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def remember(
    ctx: click.Context,
    text: tuple[str, ...],
    mem_type: str | None,
    priority: int | None,
    is_global: bool,
    pin: bool,
    to_team: bool,
    tags: str,
    supersedes: str | None,
    as_json: bool,
) -> None:
    """Store TEXT as a memory ('-' reads it from stdin).

    TEXT is one note (at most 20,000 characters): a decision and why, a convention, a gotcha.
    Secrets are redacted and <private>...</private> spans dropped before anything is stored.
    Re-storing the same text is a no-op; a near-duplicate reinforces the existing memory.
    The memory goes to the project store unless --global is given.
    """
    from cortex.capture import manual
    from cortex.core.output.documents import outcome_to_dict

    cx = cortex_of(ctx)
    if to_team and is_global:
        raise click.UsageError("--team shares a project memory; it cannot go with --global")
    outcome = manual.remember(
        cx,
        _read_text(text),
        mem_type=mem_type,
        priority=priority,
        scope=Scope.GLOBAL if is_global else Scope.PROJECT,
        pin=pin,
        tags=tuple(t.strip() for t in tags.split(",") if t.strip()),
        supersedes=supersedes,
    )
    shared = None
    if to_team:
        from cortex.team.share import share

        shared = share(cx, outcome.memory.id)
        outcome = dataclasses.replace(outcome, memory=shared.memory)  # now tagged for the team
    _refresh_delivered_briefing(cx)
    if as_json:
        doc = outcome_to_dict(outcome)
        if shared is not None:
            doc["team"] = {"delivered": shared.delivered, "pending": shared.push.pending}
        echo_json(doc)
        return
    click.echo(manual.describe_outcome(outcome))
    if shared is not None:
        from cortex.team.share import describe

        click.echo(describe(shared))


def _refresh_delivered_briefing(cx: Cortex) -> None:
    """Keep a briefing already delivered to this project current after a user's change.

    Only where the plugin has written one: a CLI-only user gets no new files in the project."""
    if cx.paths.rules_file.exists() or cx.paths.briefing_dir.exists():
        from cortex.briefing.deliver import refresh_briefing

        refresh_briefing(cx)


@click.command()
@click.argument("query", nargs=-1, required=True)
@click.option(
    "-t",
    "--type",
    "types",
    type=TYPE_CHOICE,
    multiple=True,
    help="Only memories of this type (repeatable).",
)
@click.option("-b", "--branch", default=None, help="Only memories from this git branch.")
@click.option(
    "--scope",
    type=click.Choice(["project", "global", "all"]),
    default="all",
    show_default=True,
    help="Which store(s) to search.",
)
@click.option(
    "-n",
    "--limit",
    type=click.IntRange(1, 100),
    default=None,
    help="At most N results (default 8, from config recall_limit).",
)
@click.option(
    "--budget-tokens",
    type=click.IntRange(50, 50_000),
    default=None,
    help="Stop adding results beyond this many tokens (default 2000).",
)
@click.option("--include-superseded", is_flag=True, help="Also show superseded memories.")
@click.option("--json", "as_json", is_flag=True, help="Print results as JSON.")
@click.pass_context
def recall(
    ctx: click.Context,
    query: tuple[str, ...],
    types: tuple[str, ...],
    branch: str | None,
    scope: str,
    limit: int | None,
    budget_tokens: int | None,
    include_superseded: bool,
    as_json: bool,
) -> None:
    """Search both stores for QUERY, by keywords and by meaning.

    Results are ranked by fused keyword and meaning similarity, the time the question names
    (or recency), priority and confidence, and memories from the same session; raw code
    linked to a hit is attached.
    Without an embedding model the search is keyword-only and the output says so. When
    nothing is relevant enough, it says "Nothing relevant in memory" rather than guess.
    Each result shows its id (for `cortex get`/`forget`), type, date, branch and source.
    """
    text = " ".join(query).strip()
    if not text:
        raise click.UsageError("QUERY is empty")
    # One query needs no BLAS thread pool: numpy, imported next, then starts none (~20 ms saved).
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    cx = cortex_of(ctx)
    cx.start_loading_query_embedder()  # the model loads while the stores open and keywords search
    from cortex.core.recall.decide import RecallRequest
    from cortex.recall.search import recall as run_recall
    from cortex.recall.search import render_result

    req = RecallRequest(
        text=text,
        limit=limit or cx.settings.recall_limit,
        budget_tokens=budget_tokens or cx.settings.recall_budget_tokens,
        types=tuple(t.lower() for t in types),
        branch=branch,
        include_superseded=include_superseded,
    )
    result = run_recall(cx, req, scope=scope)
    if as_json:
        from cortex.core.output.documents import recall_to_dict

        echo_json(recall_to_dict(result))
        return
    click.echo(render_result(result))


@click.command()
@click.argument("memory_id")
@click.option("--json", "as_json", is_flag=True, help="Print the memory as JSON.")
@click.pass_context
def get(ctx: click.Context, memory_id: str, as_json: bool) -> None:
    """Show one memory by MEMORY_ID, with its links.

    MEMORY_ID is the id printed by `cortex recall` or `cortex remember`, or any prefix of it
    that matches one memory; both stores are searched.
    """
    from cortex.core.output.documents import memory_view_to_dict
    from cortex.core.render import render_memory

    cx = cortex_of(ctx)
    store, memory = cx.find(memory_id)
    edges = store.edges([memory.id])
    if as_json:
        echo_json(memory_view_to_dict(memory, store.scope, edges))
        return
    code = [
        m
        for m in store.get_many(
            [e.target for e in edges if e.type == EdgeType.SOURCE_OF and e.source == memory.id]
        ).values()
    ]
    related = sorted(
        {e.target if e.source == memory.id else e.source for e in edges if e.type != EdgeType.SOURCE_OF}
    )
    click.echo(render_memory(memory, see_also=related, code=code))


@click.command()
@click.argument("target", nargs=-1, required=True)
@click.option("-y", "--yes", is_flag=True, help="Archive without asking.")
@click.option(
    "-n",
    "--limit",
    type=click.IntRange(1, 20),
    default=3,
    show_default=True,
    help="For a query: archive at most this many matches.",
)
@click.option("--json", "as_json", is_flag=True, help="Print what matched and what was archived as JSON.")
@click.pass_context
def forget(ctx: click.Context, target: tuple[str, ...], yes: bool, limit: int, as_json: bool) -> None:
    """Archive a memory by ID, or the best matches of a QUERY.

    TARGET is a memory id (or unique prefix) or a search query. The memories to archive are
    listed first and confirmed unless --yes is given. Archived memories leave the briefing
    and normal recall but are kept (and restored if a later recall brings them back); they
    are pruned after 30 days untouched. With --json, stdout holds only the result (the list
    and the question, when asked, go to stderr).
    """
    from cortex.capture import manual
    from cortex.core.output.documents import forget_to_dict

    cx = cortex_of(ctx)
    chosen = manual.select_for_forget(cx, " ".join(target), limit)
    if not chosen:
        if as_json:
            echo_json(forget_to_dict([], []))
            return
        click.echo("Nothing matched; nothing archived.")
        return
    if not (as_json and yes):
        click.echo("Will archive:", err=as_json)
        for _, m in chosen:
            click.echo(f"  {m.id}  [{m.type.value}] {m.summary or m.content[:80]}", err=as_json)
    if not yes:
        if not sys.stdin.isatty():
            raise CortexError(
                "confirmation needed but stdin is not a terminal; nothing archived",
                "rerun with --yes to archive without asking",
            )
        click.confirm("Archive these memories?", abort=True, err=as_json)
    done = manual.forget(cx, chosen)
    _refresh_delivered_briefing(cx)
    if as_json:
        echo_json(forget_to_dict([m for _, m in chosen], done))
        return
    click.echo(f"Archived {len(done)} memor{'y' if len(done) == 1 else 'ies'}.")


@click.command()
@click.argument("new_id")
@click.argument("old_id")
@click.option("--json", "as_json", is_flag=True, help="Print both memories, as they are now, as JSON.")
@click.pass_context
def supersede(ctx: click.Context, new_id: str, old_id: str, as_json: bool) -> None:
    """Mark memory OLD_ID as superseded by NEW_ID.

    The old memory leaves the briefing and recall (`recall --include-superseded` still shows
    it) and keeps its history; only people create supersedes links, never the extractor.
    """
    from cortex.capture import manual

    cx = cortex_of(ctx)
    new, old = manual.supersede(cx, new_id, old_id)
    _refresh_delivered_briefing(cx)
    if as_json:
        from cortex.core.output.documents import supersede_to_dict

        echo_json(supersede_to_dict(new, old))
        return
    click.echo(f"{old.id} is now superseded by {new.id}.")
