"""Keeping the journal append-only across a restore: history comes back, undo records follow.

Restoring a checkpoint swaps the whole store file, journal included, for an older one. Before
the swap the live history and state are read; after it, the records the checkpoint lacks are
appended again (same time, actor, op and payload) and then compensating records that take the
replayed state from what it was to what the checkpoint holds (`core/replay.py`). Nothing in the
journal is ever deleted, and replaying it still gives the live state.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from cortex.core.replay import RESTORE_EDGE, RESTORE_EDGE_DELETE, RESTORE_FORGET, RESTORE_MEMORY
from cortex.core.serial import dumps, edge_to_dict, logical_dict, memory_to_dict, parse_time
from cortex.shell.files import atomic_write, read_text
from cortex.store.port import Checkpoint, StoreAdmin


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A store's memories (logical dicts) and edges (dicts by key) at one moment."""

    memories: dict[str, dict[str, Any]]
    edges: dict[tuple[str, str, str], dict[str, Any]]


def snapshot(store: StoreAdmin) -> Snapshot:
    """The logical state of `store` now."""
    return Snapshot(
        {m.id: logical_dict(m) for m in store.all_memories()},
        {(e.source, e.target, e.type.value): edge_to_dict(e) for e in store.edges()},
    )


def _pending(cp: Checkpoint) -> Path:
    return cp.path.with_name(cp.path.name + ".history")


def save_pending(cp: Checkpoint, history: list[dict[str, Any]], old: Snapshot) -> None:
    """Keep the live history and state beside the checkpoint before the swap drops them, so a
    restore killed after the swap still appends them when it is run again."""
    edges = [[list(k), e] for k, e in sorted(old.edges.items())]
    atomic_write(_pending(cp), dumps({"history": history, "memories": old.memories, "edges": edges}))


def load_pending(cp: Checkpoint) -> tuple[list[dict[str, Any]], Snapshot] | None:
    """What `save_pending` kept for this checkpoint, if a restore of it did not finish."""
    text = read_text(_pending(cp), max_bytes=1 << 31)
    if text is None:
        return None
    try:
        d = json.loads(text)
        edges = {(str(k[0]), str(k[1]), str(k[2])): e for k, e in d["edges"]}
        return list(d["history"]), Snapshot(dict(d["memories"]), edges)
    except (ValueError, KeyError, TypeError, IndexError):
        return None


def clear_pending(cp: Checkpoint) -> None:
    """The restore is journaled: its kept history is no longer needed."""
    with contextlib.suppress(OSError):
        _pending(cp).unlink()


def already_journaled(store: StoreAdmin, cp: Checkpoint) -> bool:
    """The store's newest record says this checkpoint was restored (a kill came after it)."""
    seq = store.journal_seq()
    last = store.journal_rows(after_seq=seq - 1) if seq else []
    if not last or last[-1]["op"] != "checkpoint-restore":
        return False
    return bool(last[-1]["payload"].get("checkpoint") == cp.name)


def append_history(
    store: StoreAdmin, history: list[dict[str, Any]], old: Snapshot, actor: str, at: datetime
) -> int:
    """Append what a restore dropped, then the records undoing it; call inside a transaction.

    Returns how many records were appended."""
    kept = store.journal_seq()
    n = 0
    for r in history:
        if r["seq"] > kept:
            when = parse_time(r["at"]) or at
            store.journal(r["actor"], r["op"], r["memory_id"], r["payload"], when)
            n += 1
    now_memories = {m.id: m for m in store.all_memories()}
    for mid, m in sorted(now_memories.items()):
        if old.memories.get(mid) != logical_dict(m):
            store.journal(actor, RESTORE_MEMORY, mid, memory_to_dict(m), at)
            n += 1
    for mid in sorted(old.memories.keys() - now_memories.keys()):
        store.journal(actor, RESTORE_FORGET, mid, {"id": mid}, at)
        n += 1
    new = snapshot(store).edges
    for key, e in sorted(new.items()):
        if old.edges.get(key) != e:
            store.journal(actor, RESTORE_EDGE, key[0], e, at)
            n += 1
    for key in sorted(old.edges.keys() - new.keys()):
        gone = {"source": key[0], "target": key[1], "type": key[2]}
        store.journal(actor, RESTORE_EDGE_DELETE, key[0], gone, at)
        n += 1
    return n
