"""After each turn: anchor what the turn wrote, and demote memories whose code a commit changed.

The worker calls `after_turn` once per batch. New and reinforced memories get their anchors
(`cortex.capture.anchors`). When HEAD moved since the last check (the project store's meta
remembers it), every anchor is checked against HEAD (`cortex.briefing.anchors`, cached by
HEAD); a memory with an anchor found changed for the first time loses some confidence, once
per change (the anchor is flagged with the HEAD that found it), so it ranks lower in the
briefing. Pinned memories keep their confidence; nothing is archived or deleted for it.
`index-code` and a restated memory re-anchor it, which clears the flag.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace

from cortex.app import Cortex
from cortex.briefing.anchors import anchor_checks, cache_path
from cortex.capture.anchors import record_anchors
from cortex.core.model import Memory, Scope, Status
from cortex.shell import git

log = logging.getLogger("cortex.lifecycle.staleness")

CHECKED_HEAD = "anchors_checked_head"  # meta: the HEAD anchors were last checked at
STALE_CONFIDENCE_FACTOR = 0.8  # a memory whose code changed keeps this share of its confidence


def demoted(memory: Memory) -> Memory:
    """The memory with the confidence a stale one keeps (pinned ones keep theirs)."""
    if memory.pinned:
        return memory
    return replace(memory, confidence=round(memory.confidence * STALE_CONFIDENCE_FACTOR, 4))


def recheck(cx: Cortex) -> list[str]:
    """When HEAD moved since the last check, demote the memories whose anchors a commit changed
    for the first time; returns their ids."""
    store = cx.store(Scope.PROJECT, create=False)
    head = git.read_head_ref(cx.paths.root).sha
    if store is None or store.readonly or not head or store.get_meta(CHECKED_HEAD) == head:
        return []
    checks = anchor_checks(cx.paths.root, [store], None, cache_path(cx.paths.briefing_dir))
    unflagged = {mid: [c.anchor for c in found if c.anchor.flagged is None] for mid, found in checks.items()}
    fresh_finds = {mid: found for mid, found in unflagged.items() if found}
    out: list[str] = []
    now = cx.now()
    with store.transaction():
        for mid, anchors in sorted(fresh_finds.items()):
            current = store.get(mid)
            if current is not None and current.status is Status.ACTIVE:
                lowered = demoted(current)
                if lowered is not current:
                    store.update_memory(current, lowered, cx.actor, now, "stale")
                    out.append(mid)
            store.flag_anchors(mid, anchors, head)
        store.set_meta(CHECKED_HEAD, head)
    if out:
        log.info("%d memories demoted: code they name changed by HEAD %s", len(out), head[:7])
    return out


def after_turn(cx: Cortex, touched: Mapping[Scope, Mapping[str, Memory]]) -> list[str]:
    """Anchor the memories a turn stored or changed, then `recheck`."""
    for scope, memories in touched.items():
        store = cx.store(scope, create=False)
        if store is not None and memories:
            record_anchors(cx, store, memories.values())
    return recheck(cx)
