"""Team memory rules: the repository's identity, what is shared, the team's copy, conflicts."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

from cortex.core.model import EdgeStatus, EdgeType, Memory, MemoryType, Scope, Source, Status
from cortex.core.render import attribution
from cortex.core.team.rules import (
    PRIVATE_TAG,
    TEAM_TAG,
    contradiction_edges,
    marked_private,
    marked_shared,
    parse_share_types,
    repo_identity,
    same_copy,
    share_refusal,
    shared_by,
    team_copy,
    wants_shared,
    withdrawn,
)
from tests.conftest import T0

MakeMemory = Callable[..., Memory]
GITHUB_TOKEN = "ghp_" + "Zq8Lw3Rt6Yp1Xc5Vb9Nm2Ks4Dg7Hj0Fa3Qe"


@pytest.mark.parametrize(
    "url",
    [
        "git@github.com:Acme/Shop.git",
        "https://github.com/acme/shop",
        "https://ada:secret@GitHub.com/acme/shop.git/",
        "ssh://git@github.com:22/acme/shop.git",
        "git://github.com/acme/shop",
        "  https://github.com//acme/shop.GIT  ",
    ],
)
def test_clones_of_one_repository_meet_under_one_identity(url: str) -> None:
    assert repo_identity(url) == "github.com/acme/shop"


def test_local_remotes_are_identified_by_their_path() -> None:
    assert repo_identity("/srv/git/Shop.git") == repo_identity("file:///srv/git/shop.git/") == "/srv/git/shop"


def test_different_repositories_stay_apart() -> None:
    assert repo_identity("git@github.com:acme/shop.git") != repo_identity("git@github.com:acme/shop-api.git")
    assert repo_identity("git@github.com:acme/shop.git") != repo_identity("git@gitlab.com:acme/shop.git")
    assert repo_identity("") is None and repo_identity(None) is None


def test_only_lasting_project_knowledge_is_shared(make_memory: MakeMemory) -> None:
    assert share_refusal(make_memory(type=MemoryType.DECISION)) is None
    assert "never shared" in (share_refusal(make_memory(type=MemoryType.PROGRESS)) or "")
    assert share_refusal(make_memory(type=MemoryType.PREFERENCE)) is not None
    assert share_refusal(make_memory(scope=Scope.GLOBAL)) is not None
    assert share_refusal(make_memory(status=Status.ARCHIVED)) is not None


def test_auto_shared_types_unless_private(make_memory: MakeMemory) -> None:
    auto = parse_share_types("decision, Gotcha, progress, nonsense")
    assert auto == ("decision", "gotcha")  # progress is never shared, whatever the config says
    decision = make_memory(type=MemoryType.DECISION)
    assert wants_shared(decision, auto) and not wants_shared(decision, ())
    assert not wants_shared(make_memory(type=MemoryType.PROGRESS, tags=(TEAM_TAG,)), ("progress",))
    private = marked_private(decision, T0)
    assert PRIVATE_TAG in private.tags and not wants_shared(private, auto)
    again = marked_shared(private, T0)
    assert TEAM_TAG in again.tags and PRIVATE_TAG not in again.tags and wants_shared(again, ())


def test_the_team_copy_passes_the_redaction_gate_again_and_is_attributed(make_memory: MakeMemory) -> None:
    planted = make_memory(
        f"deploys read the token {GITHUB_TOKEN} from the vault",
        summary=f"token {GITHUB_TOKEN}",
        tags=(TEAM_TAG, f"key-{GITHUB_TOKEN}"),
        source=Source(session_id="s-123", branch="main", commit="abc1234", files=("deploy.sh",)),
        access_count=7,
        pinned=True,
    )
    copy = team_copy(planted, "Ada <ada@example.invalid>", T0 + timedelta(days=1))
    assert copy is not None
    text = repr(copy)
    assert GITHUB_TOKEN not in text
    assert copy.id == planted.id and copy.scope is Scope.TEAM
    assert copy.source == Source(branch="main", commit="abc1234", files=("deploy.sh",))  # no session
    assert copy.access_count == 0 and not copy.pinned and TEAM_TAG not in copy.tags
    assert shared_by(copy.tags) == "Ada <ada@example.invalid>"
    line = attribution(copy)
    assert "team" in line and "by Ada <ada@example.invalid>" in line and "branch main" in line


def test_nothing_left_after_redaction_is_not_shared(make_memory: MakeMemory) -> None:
    assert team_copy(make_memory("<private>all of it</private>"), "Ada", T0) is None


def test_a_copy_pushed_again_unchanged_is_the_same(make_memory: MakeMemory) -> None:
    m = make_memory(tags=(TEAM_TAG,))
    first = team_copy(m, "Ada", T0)
    later = team_copy(m, "Ada", T0 + timedelta(hours=1))
    assert first is not None and later is not None and same_copy(first, later)
    edited = team_copy(m.__class__(**{**_fields(m), "content": "we use WAL mode everywhere"}), "Ada", T0)
    assert edited is not None and not same_copy(first, edited)


def _fields(m: Memory) -> dict[str, object]:
    return {name: getattr(m, name) for name in m.__dataclass_fields__}


def test_a_withdrawn_copy_keeps_why(make_memory: MakeMemory) -> None:
    copy = make_memory(scope=Scope.TEAM)
    assert withdrawn(copy, make_memory(status=Status.SUPERSEDED), T0).status is Status.SUPERSEDED
    assert withdrawn(copy, make_memory(status=Status.ARCHIVED), T0).status is Status.ARCHIVED
    assert withdrawn(copy, make_memory(), T0).status is Status.ARCHIVED  # unshared


def test_opposite_team_decisions_are_suggested_as_contradictions(make_memory: MakeMemory) -> None:
    ours = make_memory("we use Redis for the job queue locks", scope=Scope.TEAM)
    theirs = make_memory("we do not use Redis for the job queue locks", scope=Scope.TEAM)
    unrelated = make_memory("we do not deploy on Fridays", scope=Scope.TEAM)
    gotcha = make_memory("we do not use Redis for the job queue locks", type=MemoryType.GOTCHA)
    edges = contradiction_edges(ours, [theirs, unrelated, gotcha, ours], T0)
    assert [(e.source, e.target, e.type, e.status) for e in edges] == [
        (ours.id, theirs.id, EdgeType.CONTRADICTS, EdgeStatus.SUGGESTED)
    ]
