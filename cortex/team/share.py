"""`cortex share` / `cortex unshare`: mark a project memory for the team store, or keep it off.

The mark is a journaled change of the project memory (its `team` or `private` tag), so it is
durable before anything leaves the machine; the push that follows (here when the team store
answers within its budget, else the worker's next run) carries it over.
"""

from __future__ import annotations

from dataclasses import dataclass

from cortex.app import Cortex
from cortex.core.model import Memory, Scope
from cortex.core.team.rules import PRIVATE_TAG, TEAM_TAG, marked_private, marked_shared, share_refusal
from cortex.errors import InputError
from cortex.team.push import PushReport, push


@dataclass(frozen=True, slots=True)
class ShareResult:
    """One share or unshare: the memory as it is now, and what the push right after did."""

    memory: Memory
    shared: bool  # what was asked: shared (True) or kept off the team store (False)
    changed: bool  # False when the memory was already marked so
    push: PushReport

    @property
    def delivered(self) -> bool:
        """The team store agrees now (False: pending, the worker pushes it later)."""
        return self.push.done and self.push.pending == 0


def _project_memory(cx: Cortex, ref: str) -> Memory:
    store, memory = cx.find(ref)
    if store.scope is not Scope.PROJECT:
        raise InputError(
            f"{memory.id} is in the {store.scope.value} store; only project memories are shared",
            "store it in the project with `cortex remember` (without --global), then share that",
        )
    return memory


def share(cx: Cortex, ref: str, *, push_now: bool = True) -> ShareResult:
    """Mark a project memory for the team store and push it when the store answers."""
    memory = _project_memory(cx, ref)
    why = share_refusal(memory)
    if why is not None:
        raise InputError(
            f"{memory.id} cannot be shared: {why}",
            "share a decision, convention, gotcha, architecture note or code description",
        )
    changed = TEAM_TAG not in memory.tags or PRIVATE_TAG in memory.tags
    if changed:
        memory = _mark(cx, memory, shared=True)
    return ShareResult(memory, True, changed, _push(cx, push_now))


def unshare(cx: Cortex, ref: str, *, push_now: bool = True) -> ShareResult:
    """Keep a project memory off the team store (also when its type is shared automatically);
    the team's copy is withdrawn on the next push."""
    memory = _project_memory(cx, ref)
    changed = PRIVATE_TAG not in memory.tags or TEAM_TAG in memory.tags
    if changed:
        memory = _mark(cx, memory, shared=False)
    return ShareResult(memory, False, changed, _push(cx, push_now))


def _mark(cx: Cortex, memory: Memory, *, shared: bool) -> Memory:
    store = cx.write_store(Scope.PROJECT)
    now = cx.now()
    with store.transaction():
        current = store.get(memory.id) or memory
        changed = marked_shared(current, now) if shared else marked_private(current, now)
        store.update_memory(current, changed, cx.actor, now, "share" if shared else "unshare")
    return changed


def _push(cx: Cortex, push_now: bool) -> PushReport:
    if not push_now:
        return PushReport(error="not pushed yet")
    return push(cx)


def describe(result: ShareResult) -> str:
    """One or two lines for the terminal."""
    m = result.memory
    what = "shared with the team" if result.shared else "kept off the team store"
    lines = [f"{m.id} [{m.type.value}] is {what}" + ("" if result.changed else " (already)") + "."]
    report = result.push
    if result.delivered:
        lines.append("  the team store is up to date.")
    elif report.error:
        lines.append(f"  pending: {report.error}; the worker pushes it when the team store answers.")
    elif report.pending:
        lines.append(f"  pending: {report.pending} change(s) not pushed yet.")
    return "\n".join(lines)
