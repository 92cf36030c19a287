"""Use case: render the briefing from both stores and deliver it (rules file, caches, git exclude).

Gather (memories, branch, HEAD, files gone at HEAD) -> render (pure core) -> write. The worker
calls `refresh_briefing` after each extraction batch; `cortex brief` reads the result. Writing
never raises: a read-only checkout or a full disk is logged and reported in the result.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cortex.app import Cortex
from cortex.briefing.anchors import anchor_checks, cache_path, marks
from cortex.briefing.gather import Pool, read_pool
from cortex.briefing.stale import read_stale_ids
from cortex.core.briefing.compose import Briefing, BriefingPart, render_briefings
from cortex.core.briefing.text import MAX_STALE_LISTED
from cortex.core.model import Memory, MemoryType, Scope, Status
from cortex.core.recall.ranking import BriefingWeights
from cortex.core.serial import format_time
from cortex.errors import CortexError
from cortex.paths import RULES_FILE, ensure_store_dir
from cortex.shell import git
from cortex.shell.briefing_files import (
    LOCK_FILE,
    CachedBriefing,
    digest_text,
    ensure_git_exclude,
    read_cache,
    write_cache,
    write_rules_block,
    write_stable_record,
)
from cortex.shell.files import LockBusy, file_lock

log = logging.getLogger("cortex.briefing.deliver")

LOCK_TIMEOUT_S = 10.0
MAX_META_IDS = 100  # ids listed per kind in the cache metadata; beyond this they are only counted
BRIEFED_TYPES = tuple(t.value for t in MemoryType if t is not MemoryType.CODE)


@dataclass(frozen=True, slots=True)
class Rendered:
    """Every part of the briefing for one (branch, cwd), and the facts it was rendered from."""

    branch: str | None  # branch name, or the sha when detached
    cwd: str  # relative to the project root
    head: str | None
    parts: dict[BriefingPart, Briefing]
    stale: frozenset[str]
    memories: int


_EMPTY = Rendered(None, "", None, {}, frozenset(), 0)


@dataclass(frozen=True, slots=True)
class RefreshResult:
    """What `refresh_briefing` rendered and wrote."""

    rendered: Rendered
    rules_file: Path | None  # the rules file when it now carries cortex's block
    cache_file: Path | None
    excluded: bool  # the rules file is listed in git's exclude file
    errors: tuple[str, ...] = ()  # what could not be written (also logged)


def read_active_memories(cx: Cortex) -> list[Memory]:
    """Active memories of both stores and the team store, raw code left out (recall pulls it)."""
    out: list[Memory] = []
    for store in cx.read_stores():
        out.extend(store.list_memories(statuses=(Status.ACTIVE.value,), types=BRIEFED_TYPES))
    team = cx.team_store()
    if team is not None:
        try:
            shared = team.list_memories(statuses=(Status.ACTIVE.value,), types=BRIEFED_TYPES)
        except CortexError as exc:  # gone mid-render: brief from this machine's stores
            log.warning("team store not briefed: %s", exc.message)
            cx.drop_team(exc.message)
            return out
        have = {m.id for m in out}  # this developer's own shares are briefed from the project store
        out.extend(m for m in shared if m.id not in have)
    return out


def _session_dir(cx: Cortex, cwd: Path | None) -> str:
    if cwd is None:
        return ""
    try:
        rel = cwd.resolve().relative_to(cx.paths.root.resolve())
    except (ValueError, OSError):
        return ""
    return "" if str(rel) == "." else rel.as_posix()


def _weights(cx: Cortex) -> BriefingWeights:
    c, p, cen, a = cx.settings.rank_weights()
    return BriefingWeights(confidence=c, priority=p, centrality=cen, access=a)


def render_current(cx: Cortex, *, cwd: Path | None = None, indexed: bool = True) -> Rendered:
    """Render every briefing part from the stores as they are now; writes nothing. Reads only
    what the briefing can show, by index, unless not `indexed` (or a store cannot)."""
    root = cx.paths.root
    head = git.read_head_ref(root)
    pool = _read_pool(cx, head.branch or None) if indexed else None
    if pool is None:
        memories = read_active_memories(cx)
        stale = read_stale_ids(root, memories)
        facts, total = None, len(memories)
    else:
        memories, stale, facts, total = pool.memories, pool.stale, pool.facts, pool.total
    notes, memories = _code_notes(cx, memories)
    parts = render_briefings(
        memories,
        now=cx.now(),
        branch=head.branch or None,
        budget_tokens=cx.settings.briefing_budget_tokens,
        max_chars=cx.settings.briefing_max_chars,
        weights=_weights(cx),
        stale=stale,
        facts=facts,
        notes=notes,
    )
    return Rendered(head.name, _session_dir(cx, cwd), head.sha, parts, stale, total)


def _code_notes(cx: Cortex, memories: list[Memory]) -> tuple[dict[str, str], list[Memory]]:
    """What the anchors of the project's briefed memories say at HEAD (id -> "may be stale: ..."),
    and `memories` with the first few marked ones it lacks (the briefing lists them)."""
    store = cx.store(Scope.PROJECT, create=False)
    if store is None:
        return {}, memories
    try:
        checks = anchor_checks(cx.paths.root, [store], None, cache_path(cx.paths.briefing_dir))
    except Exception as exc:  # a check, never a reason to lose the briefing
        log.warning("code anchors not checked: %s", exc)
        return {}, memories
    marked = store.get_many(sorted(checks)) if checks else {}
    briefed = {
        m.id: m for m in marked.values() if m.status is Status.ACTIVE and m.type.value in BRIEFED_TYPES
    }
    notes = {mid: text for mid, text in marks(checks).items() if mid in briefed}
    have = {m.id for m in memories}
    newest = sorted(
        (briefed[i] for i in notes if i not in have), key=lambda m: (m.created, m.id), reverse=True
    )
    return notes, [*memories, *newest[:MAX_STALE_LISTED]]


def _read_pool(cx: Cortex, branch: str | None) -> Pool | None:
    if cx.settings.team_dsn.strip():
        return None  # a team store is read whole (`read_active_memories`)
    return read_pool(
        cx.read_stores(),
        cx.paths.root,
        branch=branch,
        weights=_weights(cx),
        budget_tokens=cx.settings.briefing_budget_tokens,
        cache_file=cache_path(cx.paths.briefing_dir),
    )


def _meta(b: Briefing) -> dict[str, Any]:
    return {
        "shown": list(b.shown),
        "dropped": b.dropped,
        "withheld": list(b.withheld),
        # Every SessionStart reads this cache: a list as long as the store (every stale memory of
        # a 100,000-memory project) would push it past the reader's size limit.
        "stale": list(b.stale[:MAX_META_IDS]),
        "stale_count": b.stale_count,
        "tokens": b.tokens,
        "chars": b.chars,
        "budget_tokens": b.budget_tokens,
    }


def _write(cx: Cortex, rendered: Rendered, errors: list[str]) -> tuple[Path | None, Path | None, bool]:
    """Rules file, git exclude, caches, in that order, under the briefing lock."""
    paths = cx.paths
    stable = rendered.parts[BriefingPart.STABLE].text
    body = stable if cx.settings.briefing_file and stable else None
    rules_file: Path | None = None
    cache_file: Path | None = None
    excluded = False
    ensure_store_dir(paths)
    with file_lock(paths.briefing_dir / LOCK_FILE, timeout_s=LOCK_TIMEOUT_S):
        now = format_time(cx.now()) or ""
        digest = digest_text(body) if body else None
        # Recorded before the file changes: a session starting in between still knows the block.
        write_stable_record(paths.briefing_dir, digest, now)
        try:
            write_rules_block(paths.rules_file, body)
            rules_file = paths.rules_file if body else None
        except OSError as exc:
            digest = None  # SessionStart then hands over the full briefing
            errors.append(f"rules file {paths.rules_file}: {exc.strerror or exc}")
        if rules_file is not None:
            excluded = _exclude(paths.root, errors)
        cached = CachedBriefing(
            branch=rendered.branch,
            cwd=rendered.cwd,
            head=rendered.head,
            rendered_at=now,
            stable_digest=digest,
            stable=stable,
            moment=rendered.parts[BriefingPart.MOMENT].text,
            full=rendered.parts[BriefingPart.FULL].text,
            meta={part.value: _meta(b) for part, b in rendered.parts.items()},
        )
        cache_file = write_cache(paths.briefing_dir, cached)
    return rules_file, cache_file, excluded


def _exclude(root: Path, errors: list[str]) -> bool:
    common, top = git.read_repo_dirs(root)
    if common is None or top is None:
        return False  # not a git repository: nothing to keep the file out of
    try:
        entry = "/" + (root / RULES_FILE).resolve().relative_to(top.resolve()).as_posix()
        ensure_git_exclude(common, entry)
        return True
    except (OSError, ValueError) as exc:
        errors.append(f"git exclude in {common}: {exc}")
        return False


def refresh_briefing(cx: Cortex, *, cwd: Path | None = None) -> RefreshResult:
    """Re-render the briefing and rewrite the rules file and caches; never raises for I/O."""
    try:
        rendered = render_current(cx, cwd=cwd)
    except CortexError as exc:  # an unreadable store: keep the files as they are
        log.warning("briefing not refreshed: %s", exc)
        return RefreshResult(_EMPTY, None, None, False, (str(exc.message),))
    nothing_yet = not cx.paths.rules_file.exists() and not cx.paths.briefing_dir.exists()
    if rendered.memories == 0 and nothing_yet:
        return RefreshResult(rendered, None, None, False)  # nothing stored: leave the project alone
    errors: list[str] = []
    rules_file = cache_file = None
    excluded = False
    try:
        rules_file, cache_file, excluded = _write(cx, rendered, errors)
    except (OSError, LockBusy) as exc:
        errors.append(f"briefing files under {cx.paths.root}: {exc}")
    for error in errors:
        log.warning("briefing not fully written: %s", error)
    return RefreshResult(rendered, rules_file, cache_file, excluded, tuple(errors))


def read_briefing(
    cx: Cortex, *, cwd: Path | None = None, refresh: bool = False
) -> tuple[CachedBriefing, str]:
    """The cached briefing for the current (branch, cwd), rendered first when asked or missing.

    Returns it with where it came from: "cache", "refreshed" (rendered and written) or
    "rendered" (rendered, but nothing could be written or there is nothing to write).
    """
    head = git.read_head_ref(cx.paths.root)
    rel = _session_dir(cx, cwd)
    if not refresh:
        cached = read_cache(cx.paths.briefing_dir, head.name, rel)
        if cached is not None:
            return cached, "cache"
    result = refresh_briefing(cx, cwd=cwd)
    fresh = read_cache(cx.paths.briefing_dir, head.name, rel) if result.cache_file else None
    if fresh is not None:
        return fresh, "refreshed"
    # Not writable (or nothing stored): show it anyway; an unreadable store raises here.
    rendered = result.rendered if result.rendered.parts else render_current(cx, cwd=cwd)
    return _unsaved(cx, rendered), "rendered"


def _unsaved(cx: Cortex, rendered: Rendered) -> CachedBriefing:
    parts = rendered.parts
    return CachedBriefing(
        branch=rendered.branch,
        cwd=rendered.cwd,
        head=rendered.head,
        rendered_at=format_time(cx.now()) or "",
        stable_digest=None,
        stable=parts[BriefingPart.STABLE].text,
        moment=parts[BriefingPart.MOMENT].text,
        full=parts[BriefingPart.FULL].text,
        meta={part.value: _meta(b) for part, b in parts.items()},
    )
