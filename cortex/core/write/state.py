"""Which notes of where things stand a newer note replaces: the latest per branch and key. Pure.

Some notes say where things stand, and what was true midway (the test that failed before the
fix, the version before the upgrade, the report of an earlier turn) is usually false by the
end. Each such note carries a state key: `turn-state` for a turn's reported state, and
`state:<key>` for one thing's state (a test command's verdict, a build command's result). A
newer note with the same key on the same branch supersedes the older ones; they are never
deleted: history keeps them and `cortex get` still shows them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from cortex.core.model import Memory, Status

STATE_TAG = "turn-state"
STATE_PREFIX = "state:"
REPORT_KEY = "report"  # the key STATE_TAG stands for
MAX_KEY_CHARS = 120
ENTRY_PREFIX = "entry:"  # a manifest or settings note's entry it says changed: `entry:<file>:<key>`
# Branch names that mean "the default branch"; a detached HEAD (or a repository created
# mid-session) reports `HEAD`, which is treated the same.
DEFAULT_BRANCH_NAMES = frozenset({"", "HEAD", "main", "master", "trunk", "develop", "development", "dev"})

Slot = tuple[str, str]  # (branch key, state key)


def branch_key(branch: str | None) -> str:
    """The branch a state belongs to; every default branch name (and none) is one key."""
    return "" if (branch or "") in DEFAULT_BRANCH_NAMES else str(branch)


def state_tag(key: str) -> str:
    """The tag that makes a note the current state of `key` (one line, bounded)."""
    return STATE_PREFIX + " ".join(key.split())[:MAX_KEY_CHARS]


def state_keys(tags: Iterable[str]) -> set[str]:
    """The state keys a note's tags give it (none for an ordinary note)."""
    keys = {t[len(STATE_PREFIX) :] for t in tags if t.startswith(STATE_PREFIX)}
    return keys | {REPORT_KEY} if STATE_TAG in tags else keys


def is_state(tags: Iterable[str]) -> bool:
    return bool(state_keys(tags))


def subjects(tags: Iterable[str]) -> set[str]:
    """What a note gives the current word on: its state keys and the manifest or settings
    entries it says changed (`entry:<file>:<key>`)."""
    tags = list(tags)
    return state_keys(tags) | {t for t in tags if t.startswith(ENTRY_PREFIX)}


def newest_states(latest: Iterable[Memory]) -> dict[Slot, set[str]]:
    """(branch key, state key) -> ids of the notes the latest turn stored or confirmed."""
    out: dict[Slot, set[str]] = {}
    for m in latest:
        for key in state_keys(m.tags):
            out.setdefault((branch_key(m.source.branch), key), set()).add(m.id)
    return out


def plan_state_supersession(newest: Mapping[Slot, set[str]], active: Sequence[Memory]) -> list[Memory]:
    """The active notes holding a state that a newer note of the same branch and key replaces."""
    out: dict[str, Memory] = {}
    for m in active:
        if m.status is not Status.ACTIVE:
            continue
        branch = branch_key(m.source.branch)
        for key in state_keys(m.tags):
            ids = newest.get((branch, key))
            if ids is not None and m.id not in ids:
                out[m.id] = m
    return list(out.values())


def superseded_by(newest: Mapping[Slot, set[str]], old: Memory) -> str | None:
    """The id of one newer note that replaces `old` (for the supersedes edge)."""
    branch = branch_key(old.source.branch)
    for key in sorted(state_keys(old.tags)):
        ids = newest.get((branch, key))
        if ids:
            return sorted(ids)[0]
    return None
