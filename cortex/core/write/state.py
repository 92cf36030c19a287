"""Which reported states a newer report replaces: only the latest state per branch stays. Pure.

A turn's closing report says where things stand ("Done", "Current status", "Verification
results"). The next report on the same branch says it again, and what was true midway (the
test that passed before a later change, the version before the upgrade) is usually false by
the end, so older state notes are superseded, never deleted: history keeps them and `cortex
get` still shows them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from cortex.core.model import Memory, Status

STATE_TAG = "turn-state"
# Branch names that mean "the default branch"; a detached HEAD (or a repository created
# mid-session) reports `HEAD`, which is treated the same.
DEFAULT_BRANCH_NAMES = frozenset({"", "HEAD", "main", "master", "trunk", "develop", "development", "dev"})


def branch_key(branch: str | None) -> str:
    """The branch a state belongs to; every default branch name (and none) is one key."""
    return "" if (branch or "") in DEFAULT_BRANCH_NAMES else str(branch)


def newest_states(latest: Iterable[Memory]) -> dict[str, set[str]]:
    """Branch key -> ids of the state notes the latest report stored or confirmed."""
    out: dict[str, set[str]] = {}
    for m in latest:
        if STATE_TAG in m.tags:
            out.setdefault(branch_key(m.source.branch), set()).add(m.id)
    return out


def plan_state_supersession(newest: Mapping[str, set[str]], active: Sequence[Memory]) -> list[Memory]:
    """The active state notes on a branch with a newer report that are not part of it."""
    return [
        m
        for m in active
        if m.status is Status.ACTIVE
        and STATE_TAG in m.tags
        and branch_key(m.source.branch) in newest
        and m.id not in newest[branch_key(m.source.branch)]
    ]
