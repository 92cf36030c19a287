"""The detached capture worker: `python -m cortex.plugin.worker --root DIR [--once]`.

One per project (a non-blocking file lock; a second one exits at once). It drains the queue
the hooks fill: for each session, the last entry wins and `cortex.capture.session` extracts what is
new; queue files are deleted only after their work committed. After each batch it embeds
what changed (when an embedder is available), runs the lifecycle tick and re-renders the
briefing. Before giving up the lock it looks at the queue again, and after, too: a hook that
saw the lock held counted on this worker to take its entry.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cortex.app import Cortex
from cortex.backends.choose import embeddings_wanted
from cortex.backends.port import Choice, Embedder
from cortex.capture.queue import SessionWork, delete_files, list_files, read_work
from cortex.capture.session import SessionReport, capture_session, read_git_facts, total_actions
from cortex.core.model import Memory, Scope
from cortex.paths import STORE_DIR, WORKER_LOCK, Paths, cortex_home, ensure_store_dir, find_project_root
from cortex.shell.failpoints import failpoint
from cortex.shell.files import LockBusy, file_lock

log = logging.getLogger("cortex.plugin.worker")

LOCK_FILE = WORKER_LOCK
PENDING_PER_RUN = 32  # older memories without vectors, embedded per run (bounded: a turn stays cheap)


@dataclass
class WorkerReport:
    """What one worker run did (for tests, the demo and the log)."""

    sessions: list[SessionReport] = field(default_factory=list)
    batches: int = 0
    embedded: int = 0
    embedder: str = "none"
    failed: int = 0  # queue files kept for a later run (their store could not be written)
    busy: bool = False  # another worker held the lock

    def actions(self) -> dict[str, int]:
        """Write outcomes over all sessions (stored, reinforced, duplicate, restored)."""
        return total_actions(self.sessions)


def run(
    root: Path, *, once: bool = False, cx: Cortex | None = None, lag_wait_s: float | None = None
) -> WorkerReport:
    """Drain the project's queue under the worker lock; returns at once if another worker runs."""
    report = WorkerReport()
    paths = cx.paths if cx is not None else Paths(root, cortex_home())
    try:
        store_dir = ensure_store_dir(paths)
    except OSError as exc:
        log.warning("cannot use %s (%s); nothing captured", paths.store_dir, exc)
        return report
    kept: set[Path] = set()
    while True:
        with contextlib.ExitStack() as held:
            try:
                held.enter_context(file_lock(store_dir / LOCK_FILE, blocking=False))
            except LockBusy:
                report.busy = report.batches == 0
                return report
            except OSError as exc:  # e.g. a read-only .memory/: the queue stays for a later run
                log.warning("cannot take the worker lock in %s (%s); nothing captured", store_dir, exc)
                return report
            context = cx or Cortex(paths, actor="worker")
            try:
                _drain(context, report, kept, lag_wait_s)
            finally:
                if cx is None:
                    context.close()
        if once or not set(list_files(store_dir)) - kept:
            return report


def _drain(cx: Cortex, report: WorkerReport, kept: set[Path], lag_wait_s: float | None) -> None:
    store_dir = cx.paths.store_dir
    while True:
        work = read_work(store_dir, skip=frozenset(kept))
        if not work:
            return
        report.batches += 1
        _batch(cx, work, report, kept, lag_wait_s)


def _batch(
    cx: Cortex, work: list[SessionWork], report: WorkerReport, kept: set[Path], lag_wait_s: float | None
) -> None:
    git = read_git_facts(cx.paths.root)
    touched: dict[Scope, dict[str, Memory]] = {}
    read_any = False
    cwds: dict[str, None] = {}
    for item in work:
        try:
            kwargs: dict[str, Any] = {} if lag_wait_s is None else {"lag_wait_s": lag_wait_s}
            session = capture_session(cx, item.entry, git, closed=item.closed, **kwargs)
        except Exception as exc:  # the store could not be written: keep the entry for later
            log.error(
                "session %s not captured (%s: %s); its queue entries are kept",
                item.entry.session_id,
                type(exc).__name__,
                exc,
                exc_info=not _is_cortex_error(exc),
            )
            kept.update(item.files)
            report.failed += len(item.files)
            continue
        failpoint("worker.before_queue_delete")  # committed, still queued: the rerun finds nothing new
        delete_files(item.files)
        failpoint("worker.after_queue_delete")
        _use_feedback(cx, item, session)
        report.sessions.append(session)
        read_any = read_any or session.messages > 0
        for scope, memories in session.touched.items():
            touched.setdefault(scope, {}).update(memories)
        cwds[item.entry.cwd] = None
        log.info(
            "session %s: %d messages, %d candidates, %s%s",
            session.session_id,
            session.messages,
            session.candidates,
            session.actions or "nothing new",
            f", {session.malformed} malformed lines" if session.malformed else "",
        )
    if read_any:
        _embed(cx, touched, report)
    _push_team(cx)  # also when nothing new was read: shares left pending by an unreachable server
    if not read_any:
        return
    failpoint("worker.before_lifecycle")
    _after_extraction(cx)
    _code_anchors(cx, touched)
    failpoint("worker.before_briefing")
    for cwd in _briefing_dirs(cx, cwds):
        _refresh_briefing(cx, cwd)
    failpoint("worker.after_briefing")


def _use_feedback(cx: Cortex, item: SessionWork, session: SessionReport) -> None:
    """Which briefed or recalled memories the turn used (best effort: capture is done)."""
    try:
        from cortex.lifecycle.usage import finish_idle, observe

        captured = [m for memories in session.touched.values() for m in memories.values()]
        observe(cx, item.entry.session_id, session.read, closed=item.closed, captured=captured)
        finish_idle(cx)
    except Exception as exc:
        log.warning("use feedback skipped (%s: %s)", type(exc).__name__, exc, exc_info=True)
    finally:
        session.read.clear()  # judged: the run's report need not hold every message


def _is_cortex_error(exc: BaseException) -> bool:
    from cortex.errors import CortexError

    return isinstance(exc, CortexError)


def _load_embedder(cx: Cortex) -> Choice[Embedder]:
    """The query embedder when it is cheap to load here (no torch), else the bulk embedder."""
    if cx.query_embedder_ready():
        fast = cx.query_embedder()
        if fast.backend is not None:
            return fast
    return cx.bulk_embedder()


def _embed(cx: Cortex, touched: dict[Scope, dict[str, Memory]], report: WorkerReport) -> None:
    if not any(touched.values()) and not _has_pending(cx):
        return
    try:
        choice = _load_embedder(cx)
        report.embedder, embedder = choice.note, choice.backend
        if embedder is None:
            log.info("memories left for `cortex backfill`: %s", choice.note)
            return
        report.embedded += embed_touched(cx, touched, embedder)
        report.embedded += _embed_pending(cx, embedder)
    except Exception as exc:  # the memories are stored; backfill embeds them later
        log.warning("embedding failed (%s: %s); left for `cortex backfill`", type(exc).__name__, exc)


def embed_touched(cx: Cortex, touched: dict[Scope, dict[str, Memory]], embedder: Embedder) -> int:
    """Embed the memories a run stored or changed; returns how many got vectors."""
    from cortex.capture.embed import embed_memories, remembered

    embedder = remembered(embedder)  # the texts the write gate embedded are not embedded again
    done = 0
    for scope, memories in touched.items():
        store = cx.store(scope, create=False)
        if store is None or not memories:
            continue
        if embed_memories(cx, store, list(memories.values()), embedder):
            done += len(memories)
    return done


def _has_pending(cx: Cortex) -> bool:
    return embeddings_wanted(cx.settings) and _pending_count(cx) > 0


def _pending_count(cx: Cortex) -> int:
    key = cx.embedder_key()
    total = 0
    for store in cx.read_stores():
        found = store.vector_index(key) if key else None
        total += store.count_unembedded(found.name if found else None)
    return total


def _embed_pending(cx: Cortex, embedder: Embedder) -> int:
    """Vectors for memories stored while no embedder was available (a bounded slice per run)."""
    from cortex.capture.embed import embed_memories

    done = 0
    for store in cx.read_stores():
        if store.readonly or not store.vectors:
            continue
        found = store.vector_index(embedder.key)
        index = found.name if found else None
        # Counted first (a held count, or a count by index ranges): finding none by walking the
        # memories for one without a vector took seconds at 1,000,000 memories, after every turn.
        if not store.count_unembedded(index):
            continue
        ids = store.unembedded(index, PENDING_PER_RUN)
        mems = list(store.get_many(ids).values())
        if mems and embed_memories(cx, store, mems, embedder):
            done += len(mems)
    return done


def _push_team(cx: Cortex) -> None:
    """Carry shares, unshares, forgets and supersedes to the team store; kept pending when it
    does not answer within its budget (the next run tries again)."""
    if not cx.settings.team_dsn:
        return
    from cortex.team.push import push

    try:
        done = push(cx)
    except Exception as exc:  # the shares stay in the project store's journal for the next run
        log.warning("team push failed (%s: %s); kept pending", type(exc).__name__, exc, exc_info=True)
        return
    if done.error:
        log.info("team push: %s (%d changes pending)", done.error, done.pending)
    elif done.shared or done.withdrawn:
        log.info("team push: %d shared, %d withdrawn", len(done.shared), len(done.withdrawn))


def _after_extraction(cx: Cortex) -> None:
    try:
        from cortex.lifecycle.upkeep import after_extraction
    except ImportError:
        return
    try:
        after_extraction(cx)
    except Exception as exc:
        log.warning("lifecycle tick failed (%s: %s)", type(exc).__name__, exc, exc_info=True)


def _code_anchors(cx: Cortex, touched: dict[Scope, dict[str, Memory]]) -> None:
    """Anchor what the turn wrote; demote memories whose code a commit changed (best effort)."""
    try:
        from cortex.lifecycle.staleness import after_turn

        after_turn(cx, touched)
    except Exception as exc:
        log.warning("code anchors not checked (%s: %s)", type(exc).__name__, exc, exc_info=True)


def _briefing_dirs(cx: Cortex, cwds: dict[str, None]) -> list[str]:
    """Where to render the briefing: each directory the sessions ran in, and the project root
    ("") when none of them is it. A new session that starts at the root reads the root's cache
    first: after turns run in a subfolder (`cd pocket-llm`), it would still hold the notes of
    before those turns."""
    root = cx.paths.root.resolve()
    dirs = list(cwds)
    try:
        at_root = any(not cwd or Path(cwd).resolve() == root for cwd in dirs)
    except OSError:
        at_root = False
    return dirs if at_root else [*dirs, ""]


def _refresh_briefing(cx: Cortex, cwd: str) -> None:
    try:
        from cortex.briefing.deliver import refresh_briefing
    except ImportError:
        return
    try:
        result = refresh_briefing(cx, cwd=Path(cwd) if cwd else None)
        for error in result.errors:
            log.warning("briefing: %s", error)
    except Exception as exc:
        log.warning("briefing not refreshed (%s: %s)", type(exc).__name__, exc, exc_info=True)


def main(argv: list[str] | None = None) -> int:
    """Entry point of `python -m cortex.plugin.worker`."""
    parser = argparse.ArgumentParser(prog="python -m cortex.plugin.worker", description=__doc__)
    parser.add_argument(
        "--root", required=True, type=Path, help="the project root (its .memory/ holds the queue)"
    )
    parser.add_argument("--once", action="store_true", help="drain the queue once and exit")
    args = parser.parse_args(argv)
    root = find_project_root(args.root)
    from cortex.shell.logs import configure

    home = cortex_home()
    configure(root / STORE_DIR / "cortex.log", fallback=home / "cortex.log")
    try:
        report = run(root, once=args.once)
    except Exception as exc:
        log.error("worker failed: %s: %s", type(exc).__name__, exc, exc_info=True)
        return 1
    if not report.busy:
        log.info(
            "worker done: %d sessions in %d batches, %s, %d embedded (%s)",
            len(report.sessions),
            report.batches,
            report.actions() or "nothing new",
            report.embedded,
            report.embedder,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
