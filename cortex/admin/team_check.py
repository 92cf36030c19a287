"""`cortex doctor`'s team store line: configured? reachable? under which namespace? pending?"""

from __future__ import annotations

from cortex.admin.checks import Check
from cortex.app import Cortex
from cortex.core.model import Scope
from cortex.errors import CortexError
from cortex.store.remote import describe


def team_check(cx: Cortex) -> Check:
    """The team store as recall and the worker would find it now."""
    dsn = cx.settings.team_dsn.strip()
    if not dsn:
        return Check("team store", "ok", "not configured: memories stay on this machine (team_dsn)")
    link = cx.team()
    where = describe(dsn)
    if link.key is None:
        return Check(
            "team store", "warn", f"{where}: {link.note}", "add a git remote (`git remote add origin URL`)"
        )
    pending = _pending(cx, link.key)
    waiting = f"; {pending} change(s) waiting to be pushed" if pending else ""
    if link.store is None:
        return Check(
            "team store",
            "warn",
            f"namespace {link.key}: {link.note}{waiting}",
            "recall and the briefing use the local stores meanwhile; shares wait in the project store",
        )
    try:
        shared = link.store.counts().get("status", {}).get("active", 0)
    except CortexError as exc:
        return Check("team store", "warn", f"namespace {link.key}: {exc.message}{waiting}", exc.fix)
    return Check(
        "team store", "ok", f"{where}, namespace {link.key}: {shared} active shared memories{waiting}"
    )


def _pending(cx: Cortex, key: str) -> int:
    from cortex.team.push import pending_count

    try:
        project = cx.store(Scope.PROJECT, create=False)
        return pending_count(project, key) if project is not None else 0
    except CortexError:
        return 0
