"""SessionStart: hand the new session the part of the briefing the rules file does not carry.

Stdlib only and files only (no database, no model): the worker renders the briefing after
every extraction; this reads what it left. Claude Code loads `.claude/rules/*.md` before
SessionStart hooks run, so when the rules file already holds the stable part cortex wrote,
only the moment part goes into `additionalContext`; when it does not (first session, file
channel off, block edited or missing), the full briefing does. Never both.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from cortex.paths import RULES_FILE, STORE_DIR, find_project_root
from cortex.shell.briefing_files import (
    CachedBriefing,
    digest_text,
    read_cache,
    read_latest_cache,
    read_rules_block,
    read_stable_record,
)
from cortex.shell.git import HeadRef, read_head_ref

log = logging.getLogger("cortex.briefing.session_start")

MAX_CONTEXT_CHARS = 9_500  # Claude Code inlines hook output only below 10,000 characters
QUIET_SOURCES = frozenset({"resume", "fork"})  # the earlier context is still in the history
SHORT_SHA = 7


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


def session_start_output(payload: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, Any] | None:
    """The SessionStart hook's JSON (as a dict), or None when there is nothing to add."""
    if not isinstance(payload, Mapping) or payload.get("source") in QUIET_SOURCES:
        return None
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
        record = read_stable_record(briefing_dir)
        fallback = ""
        if cached is None:
            latest = read_latest_cache(briefing_dir)
            fallback = latest.stable if latest else ""
        text = plan_context(
            read_rules_block(root / RULES_FILE),
            cached,
            record.digests if record else (),
            fallback,
            head,
        )
    except Exception as exc:  # fail open: no briefing is better than a broken session
        log.warning("SessionStart briefing skipped: %s: %s", type(exc).__name__, exc, exc_info=True)
        return None
    if not text.strip():
        return None
    return {
        "hookSpecificOutput": {
            "hookEventName": "SessionStart",
            "additionalContext": text[:MAX_CONTEXT_CHARS],
        }
    }
