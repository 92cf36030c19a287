"""`cortex doctor`'s count of notes withheld from the briefing as instruction-like."""

from __future__ import annotations

from cortex.admin.checks import Check
from cortex.app import Cortex
from cortex.core.briefing.quarantine import withheld_reasons
from cortex.core.model import Scope, Status
from cortex.errors import CortexError

MAX_LISTED = 3


def quarantine_check(cx: Cortex) -> Check:
    """How many active notes read as instructions to the model (kept out of the briefing,
    still recallable as fenced data), with a few ids to look at."""
    found: list[tuple[str, str]] = []
    for scope in (Scope.PROJECT, Scope.GLOBAL):
        if not cx.store_path(scope).exists():
            continue
        try:
            store = cx.store(scope, create=False)
            memories = store.all_memories() if store is not None else []
        except CortexError:
            continue  # the store check above reports an unreadable store
        for m in memories:
            if m.status is Status.ACTIVE and (reasons := withheld_reasons(m)):
                found.append((m.id, reasons[0]))
    if not found:
        return Check("quarantine", "ok", "no note reads as instructions to the model")
    listed = ", ".join(f"{mid} ({why})" for mid, why in found[:MAX_LISTED])
    more = f" and {len(found) - MAX_LISTED} more" if len(found) > MAX_LISTED else ""
    return Check(
        "quarantine",
        "warn",
        f"{len(found)} note(s) withheld from the briefing as instruction-like: {listed}{more}",
        "they stay recallable; read them with `cortex get ID`, then `cortex forget ID` if unwanted",
    )
