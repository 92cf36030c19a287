"""Only the latest reported state per branch stays active."""

from __future__ import annotations

from dataclasses import replace

from cortex.core.model import Memory, MemoryType, Scope, Source, Status
from cortex.core.write.state import (
    STATE_TAG,
    branch_key,
    is_state,
    newest_states,
    plan_state_supersession,
    state_keys,
    state_tag,
    superseded_by,
)
from tests.conftest import T0


def memory(
    mid: str, branch: str | None, *, tags: tuple[str, ...] = (STATE_TAG,), status: Status = Status.ACTIVE
) -> Memory:
    return Memory(
        id=mid, content=mid, summary=mid, type=MemoryType.PROGRESS, scope=Scope.PROJECT, confidence=0.6,
        priority=4, pinned=False, source=Source(branch=branch), tags=tags, access_count=0,
        last_accessed=None, created=T0, updated=T0, status=status, content_hash=mid,
    )  # fmt: skip


def test_head_and_default_names_are_one_branch() -> None:
    assert branch_key("HEAD") == branch_key("main") == branch_key(None) == branch_key("master") == ""
    assert branch_key("feat/x") == "feat/x"


def test_older_states_on_the_same_branch_are_superseded() -> None:
    old_main, old_head, other, newest = (
        memory("a", "main"),
        memory("b", "HEAD"),
        memory("c", "feat/x"),
        memory("d", "main"),
    )
    plan = plan_state_supersession(newest_states([newest]), [old_main, old_head, other, newest])
    assert [m.id for m in plan] == ["a", "b"]


def test_untagged_and_inactive_memories_are_left_alone() -> None:
    plain = memory("a", "main", tags=())
    gone = memory("b", "main", status=Status.SUPERSEDED)
    newest = memory("c", "main")
    assert plan_state_supersession(newest_states([newest]), [plain, gone, newest]) == []
    assert newest_states([replace(newest, tags=())]) == {}


def test_keyed_states_replace_only_the_same_key() -> None:
    failing = memory("a", "main", tags=(state_tag("test:pytest -q"),))
    other = memory("b", "main", tags=(state_tag("test:npm test"),))
    report = memory("c", "main")
    passing = memory("d", "main", tags=(state_tag("test:pytest -q"),))
    newest = newest_states([passing])
    assert [m.id for m in plan_state_supersession(newest, [failing, other, report, passing])] == ["a"]
    assert superseded_by(newest, failing) == "d"


def test_state_keys_are_one_bounded_line() -> None:
    tag = state_tag("command:make\n   all " + "x" * 500)
    assert "\n" not in tag and len(tag) <= len("state:") + 120
    assert state_keys((tag, STATE_TAG, "plain")) == {tag[len("state:") :], "report"}
    assert is_state((STATE_TAG,)) and not is_state(("plain", "edits"))
