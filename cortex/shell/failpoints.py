"""Deterministic crash points for the kill tests (a test facility, not a user setting).

`CORTEX_FAILPOINT` names points where the process kills itself with SIGKILL: a real crash,
with no cleanup, no `finally` and no rollback. `name` crashes at the first time the point is
reached, `name:N` at the N-th time (counted per process); several points are separated by
commas. The variable is read once, at import: unset, a point costs one truth test.

Points sit at each commit boundary and between the steps of multi-step operations (the worker's
capture, consolidation, checkpoints, restore, migrations). `POINTS` lists them all: a test
checks that every call site names a listed point and that a kill test reaches each one.
"""

from __future__ import annotations

import os

ENV = "CORTEX_FAILPOINT"

POINTS = frozenset(
    {
        # every write transaction of a store (store/sqlite/connection.py)
        "store.before_commit",
        "store.after_commit",
        # numbered migrations, each in its own transaction (store/sqlite/migrations.py)
        "migrate.before_commit",
        "migrate.after_commit",
        # a checkpoint: backup to a temp file, rename, then the sidecar (store/sqlite/checkpoint.py)
        "checkpoint.after_backup",
        "checkpoint.after_rename",
        # one chunk of a session's transcript (capture/session.py)
        "capture.after_extract",
        "capture.after_global_commit",
        "capture.after_chunk_commit",
        # the worker's batch (plugin/worker.py)
        "worker.before_queue_delete",
        "worker.after_queue_delete",
        "worker.before_lifecycle",
        "worker.before_briefing",
        "worker.after_briefing",
        # the lifecycle step after extraction (lifecycle/upkeep.py)
        "lifecycle.after_count",
        # a consolidation (lifecycle/upkeep.py)
        "consolidate.after_checkpoint",
        "consolidate.after_merge",
        "consolidate.before_commit",
        "consolidate.after_commit",
        # restoring a checkpoint, alone or in a rollback (lifecycle/recovery.py)
        "restore.after_safety_checkpoint",
        "restore.after_swap",
        "restore.after_journal",
        "restore.after_mark",
    }
)


def parse(spec: str) -> dict[str, int]:
    """`name[:N][,name[:N]...]` -> {name: N}; N defaults to 1, a bad N or a blank item is skipped."""
    armed: dict[str, int] = {}
    for item in spec.split(","):
        name, _, count = item.strip().partition(":")
        if not name:
            continue
        try:
            nth = int(count) if count.strip() else 1
        except ValueError:
            continue
        if nth >= 1:
            armed[name.strip()] = nth
    return armed


_ARMED = parse(os.environ.get(ENV, ""))
_HITS: dict[str, int] = {}


def failpoint(name: str) -> None:
    """Kill this process with SIGKILL here when `CORTEX_FAILPOINT` names this point (and hit)."""
    if not _ARMED:
        return
    nth = _ARMED.get(name)
    if nth is None:
        return
    hits = _HITS[name] = _HITS.get(name, 0) + 1
    if hits == nth:
        crash()


def crash() -> None:
    """Die at once, as a power cut or `kill -9` would: no handlers, no cleanup, no flush."""
    import signal

    kill = getattr(signal, "SIGKILL", None)
    if kill is not None:
        os.kill(os.getpid(), kill)
    os._exit(137)  # pragma: no cover - no SIGKILL on this platform, or it did not land yet
