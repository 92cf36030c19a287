"""Helpers every CLI command module shares: the cortex context, JSON output, progress bars."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import click

from cortex.app import Cortex


def cortex_of(ctx: click.Context) -> Cortex:
    """The cortex context the root group set up for this invocation."""
    cx = ctx.find_root().obj
    assert isinstance(cx, Cortex), "the cortex group callback sets the context object"
    return cx


def echo_json(obj: Any) -> None:
    """Print data as JSON on stdout (one document)."""
    click.echo(json.dumps(obj, indent=2, ensure_ascii=False, default=str))


@contextmanager
def progress_bar(label: str) -> Iterator[Callable[[int, int], None]]:
    """A progress callback: a bar on a terminal, silent otherwise."""
    if not sys.stderr.isatty():
        yield lambda done, total: None
        return
    # The total is known only at the first callback, so the bar is opened there.
    bars: list[Any] = []
    shown = [0]

    def update(done: int, total: int) -> None:
        if not bars:
            bar = click.progressbar(length=max(total, 1), label=label, file=sys.stderr)
            bar.__enter__()
            bars.append(bar)
        bars[0].update(done - shown[0])
        shown[0] = done

    try:
        yield update
    finally:
        for bar in bars:
            bar.__exit__(None, None, None)
