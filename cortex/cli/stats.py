"""`cortex stats`: what the stores hold and, with --usage, what sessions used of it."""

from __future__ import annotations

import click

from cortex.cli._context import cortex_of, echo_json

TOP = 10  # memories listed per kind in the text report


@click.command("stats")
@click.option(
    "--usage", "usage", is_flag=True, help="What sessions used of what they were briefed and recalled."
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def stats(ctx: click.Context, usage: bool, as_json: bool) -> None:
    """Counts of memories by status and type; with --usage, use feedback.

    After each turn the worker judges which briefed or recalled memories the session used
    (the assistant quoted the id or said the note's rare terms), and which the user
    contradicted. Used memories gain salience; briefed ones a session ignored lose briefing
    priority one step per session after the first (at most 4, never archived), and get it
    back when used again; contradicted ones get a suggested `contradicts` edge.
    """
    cx = cortex_of(ctx)
    if not usage:
        counts = {s.scope.value: s.counts() for s in cx.read_stores()}
        if as_json:
            echo_json(counts)
            return
        for scope, c in counts.items():
            by_type = ", ".join(f"{n} {t}" for t, n in sorted(c["type"].items()))
            by_status = ", ".join(f"{n} {st}" for st, n in sorted(c["status"].items()))
            click.echo(f"{scope}: {by_status or 'empty'}" + (f" (active: {by_type})" if by_type else ""))
        return
    from cortex.core.output.documents import usage_to_dict
    from cortex.lifecycle.usage import usage_summary

    s, named, never, active = usage_summary(cx)
    if as_json:
        echo_json(usage_to_dict(s, never, active))
        return
    click.echo(
        f"{s.sessions} session(s) judged ({s.judged} long enough to count silence): "
        f"{s.briefed} briefed, {s.recalled} recalled; used {s.used}, ignored {s.unused}, "
        f"contradicted {s.contradicted}; {s.use_rate:.1%} of briefed memories used."
    )
    click.echo(f"never used: {never} of {active} active memories ({never / active if active else 0:.1%})")

    def label(mid: str) -> str:
        m = named.get(mid)
        return f"{mid} {(m.summary or m.content)[:70]!r}" if m else f"{mid} (gone)"

    ranked = sorted(s.by_memory.items(), key=lambda kv: (-kv[1][0], kv[0]))
    for mid, (used, unused, contra) in [r for r in ranked if r[1][0]][:TOP]:
        click.echo(
            f"  used {used}x, ignored {unused}x{f', contradicted {contra}x' if contra else ''}: {label(mid)}"
        )
    for mid, d in sorted(s.demoted.items(), key=lambda kv: (-kv[1].ignored, kv[0]))[:TOP]:
        click.echo(f"  demoted {d.base}->{d.current} after {d.ignored} ignored session(s): {label(mid)}")
