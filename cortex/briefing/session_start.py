"""SessionStart: hand the new session the part of the briefing the rules file does not carry.

Stdlib only at import (no database, no model): the worker renders the briefing after every
extraction; this reads what it left. Claude Code loads `.claude/rules/*.md` before SessionStart
hooks run, so when the rules file already holds the stable part cortex wrote, only the moment
part goes into `additionalContext`; when it does not (first session, file channel off, block
edited or missing), the full briefing does. Never both.

With no cache for the session (a new project, right after `cortex import`, a new branch, the
file channel just switched off), `cortex.briefing.first_render` renders one here from the
stores (the worker caches it after the first turn), or, for a store too big for the hook's
budget, hands over the global part and the stable part cached on another branch and has the
hook queue a render for the next session.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from cortex.paths import GLOBAL_DB, PROJECT_DB, RULES_FILE, STORE_DIR, cortex_home, find_project_root
from cortex.shell.briefing_files import (
    CachedBriefing,
    digest_text,
    read_cache,
    read_latest_cache,
    read_rules_block,
    read_stable_record,
)
from cortex.shell.git import HeadRef, read_head_ref
from cortex.shell.usage_log import append_note

log = logging.getLogger("cortex.briefing.session_start")

TEAM_STALE_S = 600.0  # a team store's notes may be this old in a cached briefing before SessionStart renders
CONFIG_FILE = "config.toml"  # cortex.config.CONFIG_FILE (not imported: it loads dataclasses)

MAX_CONTEXT_CHARS = 9_500  # Claude Code inlines hook output only below 10,000 characters
QUIET_SOURCES = frozenset({"resume", "fork"})  # the earlier context is still in the history
SHORT_SHA = 7
# Memories rendered inside the hook when nothing is cached (both stores). The render costs
# ~35-100 ms of imports plus ~0.3-1 ms per memory (ranking, quarantine checks) on a 2-core
# machine; above this, the hook hands over what is cached (and the global part) and queues the
# render. Measured in benchmarks/, not asserted by tests.
INLINE_MAX_MEMORIES = 200


def project_dir(payload: Mapping[str, Any], env: Mapping[str, str]) -> Path:
    """The session's directory: the payload's cwd, else CLAUDE_PROJECT_DIR, else the process cwd."""
    cwd = payload.get("cwd")
    if isinstance(cwd, str) and cwd:
        return Path(cwd)
    return Path(env.get("CLAUDE_PROJECT_DIR") or os.getcwd())


def _relative(cwd: Path, root: Path) -> str:
    try:
        rel = cwd.resolve().relative_to(root)
    except (ValueError, OSError):
        return ""
    return "" if str(rel) == "." else rel.as_posix()


def _head_note(cached: CachedBriefing, head: HeadRef) -> str:
    if not cached.head or not head.sha or cached.head == head.sha:
        return ""
    old, new = cached.head[:SHORT_SHA], head.sha[:SHORT_SHA]
    return (
        f"HEAD moved since cortex rendered these notes ({old} -> {new}); "
        f"`git log --oneline {old}..{new}` lists what changed."
    )


def plan_context(
    block: str | None,
    cached: CachedBriefing | None,
    written_digests: Collection[str],
    fallback_stable: str,
    head: HeadRef,
) -> str:
    """What SessionStart should add, given what the rules file holds and what is cached.

    The rules file carries the stable part when its block is one cortex wrote (its digest is
    this cache's or one cortex recorded lately): then the moment part only. Otherwise the full
    briefing, or with no cache for this branch, any branch's stable part.
    """
    digest = digest_text(block) if block else None
    known = {*written_digests, *([cached.stable_digest] if cached and cached.stable_digest else [])}
    carried = digest is not None and digest in known
    if cached is None:
        return "" if carried else fallback_stable
    text = cached.moment if carried else cached.full
    note = _head_note(cached, head)
    if text and note and len(text) + 1 + len(note) <= MAX_CONTEXT_CHARS:
        text = f"{text}\n{note}"
    return text


class StartPlan(NamedTuple):
    """What SessionStart adds, and whether the hook should queue a render of the briefing."""

    output: dict[str, Any] | None
    refresh: bool  # the hook could not render it all: render and cache it now, for the next session
    root: Path
    cwd: Path


def session_start_output(payload: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, Any] | None:
    """The SessionStart hook's JSON (as a dict), or None when there is nothing to add."""
    plan = plan_session_start(payload, env)
    return plan.output if plan is not None else None


def plan_session_start(payload: Mapping[str, Any], env: Mapping[str, str]) -> StartPlan | None:
    """The hook's JSON and whether a render should be queued; None on resume/fork or bad input."""
    if not isinstance(payload, Mapping) or payload.get("source") in QUIET_SOURCES:
        return None
    refresh = False
    try:
        cwd = project_dir(payload, env)
        root = find_project_root(cwd)
        briefing_dir = root / STORE_DIR / "briefing"
        head = read_head_ref(root)
        rel = _relative(cwd, root)
        # This directory's cache, else the project root's, else this branch's newest.
        cached = read_cache(briefing_dir, head.name, rel)
        if cached is None and rel:
            cached = read_cache(briefing_dir, head.name, "")
        if cached is None and head.name is not None:
            cached = read_latest_cache(briefing_dir, head.name)
        block = read_rules_block(root / RULES_FILE)
        record = read_stable_record(briefing_dir)
        digests = record.digests if record else ()
        if cached is not None:
            text = plan_context(block, cached, digests, "", head)
            _record_briefed(root, payload, cached, block, digests)
            # Teammates' shares reach the cache only through a render: queue one for next time.
            refresh = _team_render_due(cached, root, env)
        else:
            text, refresh = _without_cache(root, head, block, digests, briefing_dir, env)
    except Exception as exc:  # fail open: no briefing is better than a broken session
        log.warning("SessionStart briefing skipped: %s: %s", type(exc).__name__, exc, exc_info=True)
        return None
    return StartPlan(_output(text), refresh, root, cwd)


def briefed_ids(cached: CachedBriefing, block: str | None, written_digests: Collection[str]) -> list[str]:
    """The ids of the notes a session starting now is shown: the stable and moment parts when
    the rules file carries the stable part, else the full part."""
    digest = digest_text(block) if block else None
    carried = digest is not None and digest in {*written_digests, cached.stable_digest}
    out: list[str] = []
    for part in ("stable", "moment") if carried else ("full",):
        meta = cached.meta.get(part)
        shown = meta.get("shown") if isinstance(meta, dict) else None
        out += [i for i in shown or () if isinstance(i, str)]
    return out


def _record_briefed(
    root: Path,
    payload: Mapping[str, Any],
    cached: CachedBriefing,
    block: str | None,
    digests: Collection[str],
) -> None:
    """One appended line: what this session was briefed (the worker later judges its use)."""
    session = payload.get("session_id")
    ids = briefed_ids(cached, block, digests) if isinstance(session, str) and session else []
    if ids:
        try:
            append_note(root / STORE_DIR, str(session), "briefed", ids)
        except OSError as exc:
            log.info("briefed ids not recorded: %s", exc)


_TEAM_DSN = re.compile(r"""^\s*team_dsn\s*=\s*(["'])\s*[^"'\s]""", re.MULTILINE)


def team_configured(root: Path, env: Mapping[str, str]) -> bool:
    """Whether a team store is configured ($CORTEX_TEAM_DSN, else `team_dsn` in either config
    file), read without loading the settings (the hook has no time for them)."""
    if "CORTEX_TEAM_DSN" in env:
        return bool(env["CORTEX_TEAM_DSN"].strip())
    for path in (cortex_home(env) / CONFIG_FILE, root / STORE_DIR / CONFIG_FILE):
        try:
            if _TEAM_DSN.search(path.read_text(encoding="utf-8-sig")):
                return True
        except (OSError, UnicodeDecodeError):
            continue
    return False


def _team_render_due(cached: CachedBriefing, root: Path, env: Mapping[str, str]) -> bool:
    """With a team store, a cache older than TEAM_STALE_S is rendered again after this session
    starts (a fresher one costs the hook nothing: starting a render is most of its budget)."""
    if not team_configured(root, env):
        return False
    from datetime import UTC, datetime

    try:
        rendered = datetime.fromisoformat(cached.rendered_at.replace("Z", "+00:00"))
    except ValueError:
        return True
    return (datetime.now(UTC) - rendered).total_seconds() > TEAM_STALE_S


def _output(text: str) -> dict[str, Any] | None:
    if not text.strip():
        return None
    return {
        "hookSpecificOutput": {
            "hookEventName": "SessionStart",
            "additionalContext": text[:MAX_CONTEXT_CHARS],
        }
    }


def _count(db: Path) -> int:
    """Briefed memories in a store, counted up to one over what the hook renders inline (all
    the decision needs, in the same time at 1,000 or 1,000,000 memories); 0 when the store is
    absent or unreadable (a lock, a migration)."""
    if not db.is_file():
        return 0
    from cortex.store.sqlite import hook_read  # sqlite3: only when nothing is cached

    try:
        return hook_read.count_briefed(db, cap=INLINE_MAX_MEMORIES + 1)
    except hook_read.Unreadable as exc:
        log.info("briefing render skipped %s: %s", db, exc)
        return 0


def _without_cache(
    root: Path,
    head: HeadRef,
    block: str | None,
    digests: Collection[str],
    briefing_dir: Path,
    env: Mapping[str, str],
) -> tuple[str, bool]:
    """No cache fits this session: render one here (or its global part), and ask for a render.

    Returns the text and whether a render should be queued: when the hook could not render
    the whole briefing (a store too big for its budget, an unreadable config); a briefing it
    rendered whole is cached by the worker after the session's first turn, as always.
    """
    latest = read_latest_cache(briefing_dir)  # another branch's: its stable part is the same
    fallback = latest.stable if latest else ""
    shown = latest.meta.get("stable", {}).get("shown", []) if latest else []
    home = cortex_home(env)
    counts = _count(root / STORE_DIR / PROJECT_DB), _count(home / GLOBAL_DB)
    if sum(counts) == 0:  # nothing stored anywhere (or nothing readable)
        return plan_context(block, None, digests, fallback, head), False
    if sum(counts) > INLINE_MAX_MEMORIES and counts[1] == 0:  # nothing small enough to render here
        return plan_context(block, None, digests, fallback, head), True
    try:
        from cortex.briefing.first_render import render_first

        first = render_first(
            root,
            home,
            head.branch or None,
            env,
            counts=counts,
            limit=INLINE_MAX_MEMORIES,
            exclude=frozenset(x for x in shown if isinstance(x, str)),
        )
    except Exception as exc:  # an unreadable config or store: hand over what is cached
        log.warning("no briefing rendered at SessionStart: %s: %s", type(exc).__name__, exc)
        return plan_context(block, None, digests, fallback, head), True
    if not first.file_channel:
        digests = ()  # the file channel is off: a block left in the rules file is not cortex's now
    if not first.partial:
        rendered = CachedBriefing(
            branch=head.name,
            cwd="",
            head=head.sha,
            rendered_at="",
            stable_digest=None,
            stable=first.stable,
            moment=first.moment,
            full=first.full,
            meta={},
        )
        # No render queued: the worker renders and caches this after the session's first turn.
        return plan_context(block, rendered, digests, "", head), False
    # Too many memories to render here: the cached stable part (unless the rules file carries
    # it) and the global part, which the stable part does not already show.
    stable = plan_context(block, None, digests, fallback, head)
    if not first.full or len(stable) + 2 + len(first.full) > MAX_CONTEXT_CHARS:
        return stable, True
    return "\n\n".join(t for t in (stable, first.full) if t), True
