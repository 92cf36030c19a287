"""SessionStart with no cached briefing: render one in the hook, within its budget.

Imported lazily by `cortex.briefing.session_start`, only when no cache fits the session (a new
project, right after `cortex import`, a new branch, the file channel just switched). It reads
the stores through the adapter's stdlib-only hook read (no numpy, no vector extension) and
renders with the pure core, so the text is what the worker would render (files gone at HEAD
are not looked up here: that needs git, and the worker's render marks them a moment later).

A store too big to render inside the hook's budget is not rendered: the session then gets the
global part (the global store is small) and the stable part cached on another branch, and the
hook queues a full render for the next session.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from cortex.config import Settings, load_settings
from cortex.core.briefing.compose import BriefingPart, render_briefings
from cortex.core.model import Memory, MemoryType, Scope, Source, Status
from cortex.core.recall.ranking import BriefingWeights
from cortex.core.serial import parse_time
from cortex.paths import Paths
from cortex.store.sqlite import hook_read

log = logging.getLogger("cortex.briefing.first_render")


class FirstRender(NamedTuple):
    """What the hook rendered: the parts, and whether the project part had to be left out."""

    stable: str
    moment: str
    full: str
    shown_stable: frozenset[str]  # ids the stable part shows
    partial: bool  # the project store was too big: only the global part was rendered
    memories: int  # active, briefed memories in both stores (as counted: the hook stops at its cap)
    file_channel: bool  # the `briefing_file` setting: may the rules file carry the stable part


def _time(text: object) -> datetime | None:
    return parse_time(str(text)) if text else None


def _strings(text: object) -> tuple[str, ...]:
    return () if not text or text == "[]" else tuple(json.loads(str(text)))


def row_to_memory(row: Sequence[Any]) -> Memory:
    """A `hook_read.BRIEFING_COLUMNS` row as a Memory (the store's codec, minus its imports)."""
    created, updated = _time(row[16]), _time(row[17])
    assert created is not None and updated is not None
    return Memory(
        id=row[0],
        content=row[1],
        summary=row[2],
        type=MemoryType(row[3]),
        scope=Scope(row[4]),
        confidence=float(row[5]),
        priority=int(row[6]),
        pinned=bool(row[7]),
        source=Source(row[8], row[9], row[10], row[11], _strings(row[12])),
        tags=_strings(row[13]),
        access_count=int(row[14]),
        last_accessed=_time(row[15]),
        created=created,
        updated=updated,
        status=Status(row[18]),
        content_hash=row[19],
        low_since=_time(row[20]),
        status_changed=_time(row[21]),
        centrality=float(row[22]),
    )


def _read(db: Path) -> list[Memory]:
    try:
        return [row_to_memory(r) for r in hook_read.read_briefed_rows(db)]
    except hook_read.Unreadable as exc:
        log.info("briefing render skipped %s: %s", db, exc)
        return []


def _weights(settings: Settings) -> BriefingWeights:
    c, p, cen, a = settings.rank_weights()
    return BriefingWeights(confidence=c, priority=p, centrality=cen, access=a)


def render_first(
    root: Path,
    home: Path,
    branch: str | None,
    env: Mapping[str, str],
    *,
    counts: tuple[int, int],
    limit: int,
    exclude: frozenset[str] = frozenset(),
    now: datetime | None = None,
) -> FirstRender:
    """Render the briefing from the stores as they are (`counts`: their briefed memories).

    Over `limit` memories in both stores, only the global store is rendered (`partial`), less
    the memories in `exclude` (those the cached stable part already shows).
    """
    paths = Paths(root, home)
    settings = load_settings(paths, dict(env))
    project_n, global_n = counts
    partial = project_n + global_n > limit
    if partial and global_n > limit:
        return FirstRender("", "", "", frozenset(), True, project_n + global_n, settings.briefing_file)
    memories = _read(paths.global_db) if global_n else []
    if partial:
        memories = [m for m in memories if m.id not in exclude]
    elif project_n:
        memories = _read(paths.project_db) + memories
    parts = render_briefings(
        memories,
        now=now or datetime.now(UTC),
        branch=branch,
        budget_tokens=settings.briefing_budget_tokens,
        max_chars=settings.briefing_max_chars,
        weights=_weights(settings),
    )
    stable = parts[BriefingPart.STABLE]
    return FirstRender(
        stable.text,
        parts[BriefingPart.MOMENT].text,
        parts[BriefingPart.FULL].text,
        frozenset(stable.shown),
        partial,
        project_n + global_n,
        settings.briefing_file,
    )
