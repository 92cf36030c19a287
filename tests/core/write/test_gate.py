"""The write gate: exact and near duplicates, the uncertain band, edges, and what it never does."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cortex.core.model import (
    Candidate,
    EdgeStatus,
    EdgeType,
    Layer,
    Memory,
    MemoryType,
    Scope,
    Source,
    Status,
)
from cortex.core.text import content_hash
from cortex.core.write.gate import (
    NEAR_DUPLICATE_COSINE,
    NEAR_DUPLICATE_JACCARD,
    RELATED_JACCARD,
    UNCERTAIN_JACCARD,
    Neighbour,
    WriteAction,
    WritePlan,
    plan_write,
)
from tests.support.strategies import memories

NOW = datetime(2026, 11, 21, tzinfo=UTC)


def memory(mid: str, content: str, status: Status = Status.ACTIVE, **kw: object) -> Memory:
    fields: dict[str, object] = {
        "id": mid,
        "content": content,
        "summary": content[:40],
        "type": MemoryType.DECISION,
        "scope": Scope.PROJECT,
        "confidence": 0.6,
        "priority": 5,
        "pinned": False,
        "source": Source(files=("a.py",)),
        "tags": ("db",),
        "access_count": 0,
        "last_accessed": None,
        "created": NOW,
        "updated": NOW,
        "status": status,
        "content_hash": content_hash(content),
    }
    fields.update(kw)
    return Memory(**fields)  # type: ignore[arg-type]


RESAID = "we use sqlite in WAL mode for our store"  # the candidate re-typed: nothing distinguishing differs


def candidate(content: str = "We use SQLite in WAL mode for the store", **kw: object) -> Candidate:
    fields: dict[str, object] = {
        "content": content,
        "type": MemoryType.DECISION,
        "layer": Layer.LEXICAL,
        "confidence": 0.7,
        "tags": ("branch:main",),
        "files": ("b.py",),
    }
    fields.update(kw)
    return Candidate(**fields)  # type: ignore[arg-type]


# --- exact duplicates ----------------------------------------------------------------------------


def test_exact_duplicate_is_skipped_without_touching_the_memory() -> None:
    plan = plan_write(
        candidate(), exact=memory("m1", "We use SQLite in WAL mode for the store"), neighbours=[]
    )
    assert plan.action is WriteAction.SKIP and plan.target_id == "m1"
    assert not plan.restore and plan.confidence is None and plan.edges == ()


@pytest.mark.parametrize("status", [Status.ARCHIVED, Status.PRUNED])
def test_exact_duplicate_of_an_archived_memory_plans_a_restore(status: Status) -> None:
    plan = plan_write(candidate(), exact=memory("m1", "x", status), neighbours=[])
    assert plan.action is WriteAction.SKIP and plan.restore and plan.target_id == "m1"


def test_exact_duplicate_of_a_superseded_memory_stays_superseded() -> None:
    plan = plan_write(candidate(), exact=memory("m1", "x", Status.SUPERSEDED), neighbours=[])
    assert plan.action is WriteAction.SKIP and not plan.restore


def test_a_superseded_statement_that_holds_again_is_stored_anew() -> None:
    # A test failed, then passed, then failed the same way: its failing state holds again. So
    # does a dependency added, dropped and added back. The old note stays history.
    text = "Tests failing: `pytest -q` (1 failed)"
    said = Source(session_id="s1", transcript_offset=100)
    later = Source(session_id="s1", transcript_offset=900)
    for tags in (("turn-state", "state:test pytest -q"), ("manifest", "entry:Cargo.toml:base64")):
        older = memory("m1", text, Status.SUPERSEDED, tags=tags, source=said)
        plan = plan_write(candidate(text, tags=tags), exact=older, neighbours=[], source=later)
        assert plan.action is WriteAction.INSERT
    # The same words from the same place (a re-read), from another session (a resumed
    # session's copied history), with another state key or with none: history, as before.
    older = memory("m1", text, Status.SUPERSEDED, tags=("state:test pytest -q",), source=said)
    for tags, where in (
        (("state:test pytest -q",), said),
        (("state:test pytest -q",), Source(session_id="s2", transcript_offset=900)),
        (("state:test pytest -q",), None),
        (("state:test tox",), later),
        (("branch:main",), later),
    ):
        plan = plan_write(candidate(text, tags=tags), exact=older, neighbours=[], source=where)
        assert plan.action is WriteAction.SKIP and not plan.restore


def test_what_holds_again_in_a_later_session_is_told_by_the_record_that_says_it() -> None:
    # Tests failed on Monday, passed in a later session, and fail the same way on Wednesday: a
    # new record says it, in any session. The same record read again is not news, wherever it
    # sits and whatever time it carries: Claude Code 1.0 copies a resumed session's history into
    # the new file with the new session's id and the time of the copy, and keeps the uuids.
    text = "Tests failing: `pytest -q` (1 failed)"
    tags = ("turn-state", "state:test pytest -q")
    monday = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)
    said = Source(session_id="s1", transcript_offset=100, said_at=monday, record="u-mon")
    older = memory("m1", text, Status.SUPERSEDED, tags=tags, source=said)
    wednesday = monday + timedelta(days=2)
    for where, action in (
        (
            Source(session_id="s3", transcript_offset=50, said_at=wednesday, record="u-wed"),
            WriteAction.INSERT,
        ),
        (Source(session_id="s1", transcript_offset=5000, said_at=monday, record="u-mon"), WriteAction.SKIP),
        (
            Source(session_id="s2", transcript_offset=9000, said_at=wednesday, record="u-mon"),
            WriteAction.SKIP,
        ),
        # Another session older than Monday's, read late: what it said is history.
        (
            Source(
                session_id="s0", transcript_offset=900, said_at=monday - timedelta(days=1), record="u-sun"
            ),
            WriteAction.SKIP,
        ),
    ):
        plan = plan_write(candidate(text, tags=tags), exact=older, neighbours=[], source=where)
        assert plan.action is action, where
    # Without record ids, the session and the offset decide, as before.
    later = Source(session_id="s1", transcript_offset=900)
    assert (
        plan_write(candidate(text, tags=tags), exact=older, neighbours=[], source=later).action
        is WriteAction.INSERT
    )
    elsewhere = Source(session_id="s2", transcript_offset=900, said_at=wednesday)
    assert (
        plan_write(candidate(text, tags=tags), exact=older, neighbours=[], source=elsewhere).action
        is WriteAction.SKIP
    )


# --- near duplicates and the uncertain band ----------------------------------------------------


@pytest.mark.parametrize(
    ("jaccard", "cosine", "action", "needs"),
    [
        (NEAR_DUPLICATE_JACCARD, None, WriteAction.REINFORCE, ()),
        (0.95, None, WriteAction.REINFORCE, ()),
        (NEAR_DUPLICATE_JACCARD - 0.01, None, WriteAction.INSERT, ("m1",)),
        (UNCERTAIN_JACCARD, None, WriteAction.INSERT, ("m1",)),
        (0.6, NEAR_DUPLICATE_COSINE, WriteAction.REINFORCE, ()),
        (0.6, NEAR_DUPLICATE_COSINE - 0.01, WriteAction.INSERT, ()),
        # Below the band an embedding may still find a paraphrase: it is asked for.
        (UNCERTAIN_JACCARD - 0.01, None, WriteAction.INSERT, ("m1",)),
        (UNCERTAIN_JACCARD - 0.01, 0.99, WriteAction.REINFORCE, ()),  # a paraphrase merges
        (0.1, NEAR_DUPLICATE_COSINE - 0.01, WriteAction.INSERT, ()),
    ],
)
def test_thresholds(
    jaccard: float, cosine: float | None, action: WriteAction, needs: tuple[str, ...]
) -> None:
    near = Neighbour(memory("m1", "We use SQLite in WAL mode"), jaccard, cosine)
    plan = plan_write(candidate(), exact=None, neighbours=[near])
    assert plan.action is action
    assert plan.needs_cosine == needs


def test_reinforce_bumps_confidence_and_access_and_merges_tags_and_files() -> None:
    near = Neighbour(memory("m1", "We use SQLite in WAL mode for the store, always"), 0.85)
    plan = plan_write(candidate(confidence=0.7), exact=None, neighbours=[near])
    assert plan.action is WriteAction.REINFORCE and plan.target_id == "m1"
    assert plan.confidence == pytest.approx(0.75)
    assert plan.access_delta == 1
    assert plan.tags == ("db", "branch:main") and plan.files == ("a.py", "b.py")
    assert plan.content is None  # the stored wording stays


def test_the_record_that_said_a_memory_read_again_confirms_nothing() -> None:
    # A resumed session's copy, or a transcript read again from the start, finds the memory its
    # own record made before this read: the wording and tags still merge (the same result twice),
    # but there is no second confirmation and no new link. Another record saying it, or another
    # layer taking it from the same message in the same read, is a confirmation.
    target = memory(
        "m1", "We use SQLite in WAL mode for the store, always", source=Source(files=("a.py",), record="u1")
    )
    other = Neighbour(memory("m2", "The store keeps its WAL file beside the database"), 0.3)
    near = Neighbour(target, 0.85)

    def plan(record: str, read_at: datetime | None) -> WritePlan:
        cand = candidate(confidence=0.7)
        return plan_write(
            cand, exact=None, neighbours=[near, other], source=Source(record=record), read_at=read_at
        )

    for read_at in (NOW + timedelta(minutes=5), None):
        again = plan("u1", read_at)
        assert again.action is WriteAction.REINFORCE and again.target_id == "m1"
        assert (again.confidence, again.access_delta, again.edges) == (0.6, 0, ())
        assert again.tags == ("db", "branch:main") and again.files == ("a.py", "b.py")
    for confirmed in (plan("u2", NOW + timedelta(minutes=5)), plan("u1", NOW)):
        assert confirmed.confidence == pytest.approx(0.75) and confirmed.access_delta == 1
        assert [e.target for e in confirmed.edges] == ["m2"]


def test_a_newer_state_of_the_same_thing_is_never_merged_into_the_older_one() -> None:
    # Real pair: a task list, then the same list with its items done; every other word (and an
    # "open" in a task's description) is shared, so neither rule sees the change.
    items = "Fork + clone jcode (gh repo fork, open a PR to self); Build + install jcode stable"
    older = memory("m1", f"Task list. Open: {items}", type=MemoryType.PROGRESS, tags=("todo", "turn-state"))
    newer = candidate(f"Task list. Done: {items}", type=MemoryType.PROGRESS, tags=("todo", "turn-state"))
    for near in (Neighbour(older, 0.95), Neighbour(older, 0.95, cosine=0.99)):
        plan = plan_write(newer, exact=None, neighbours=[near])
        assert plan.action is WriteAction.INSERT  # the state rule then supersedes the older one
    # The same words as an ordinary note, with no state key shared, merge as before.
    plain = memory("m2", f"Task list. Open: {items}", type=MemoryType.PROGRESS, tags=("todo",))
    assert plan_write(newer, exact=None, neighbours=[Neighbour(plain, 0.95)]).action is WriteAction.REINFORCE


def test_reinforce_adopts_the_candidate_text_only_when_it_says_strictly_more() -> None:
    short = memory("m1", "We use SQLite in WAL mode")
    longer = candidate("We use SQLite in WAL mode because several sessions write at once")
    plan = plan_write(longer, exact=None, neighbours=[Neighbour(short, 0.9)])
    assert plan.content == longer.content
    different = candidate("SQLite WAL mode is what we use")
    plan = plan_write(different, exact=None, neighbours=[Neighbour(short, 0.9)])
    assert plan.content is None


def test_reinforcing_an_archived_memory_restores_it() -> None:
    near = Neighbour(memory("m1", RESAID, Status.ARCHIVED), 0.9)
    plan = plan_write(candidate(), exact=None, neighbours=[near])
    assert plan.action is WriteAction.REINFORCE and plan.restore


def test_near_duplicate_of_a_superseded_memory_is_skipped() -> None:
    near = Neighbour(memory("m1", "We use SQLite in WAL mode for the store", Status.SUPERSEDED), 0.9)
    plan = plan_write(candidate(), exact=None, neighbours=[near])
    assert plan.action is WriteAction.SKIP and plan.target_id == "m1"


def test_confidence_never_exceeds_one() -> None:
    near = Neighbour(memory("m1", RESAID, confidence=0.99), 0.9)
    plan = plan_write(candidate(confidence=1.0), exact=None, neighbours=[near])
    assert plan.confidence == 1.0


def test_reversed_statement_is_not_merged_but_flagged_as_a_possible_contradiction() -> None:
    old = memory("m1", "We decided to use Redis for the job queue")
    new = candidate("We decided not to use Redis for the job queue")
    plan = plan_write(new, exact=None, neighbours=[Neighbour(old, 0.875)])
    assert plan.action is WriteAction.INSERT
    (edge,) = plan.edges
    assert (edge.target, edge.type, edge.status) == (
        "m1",
        EdgeType.CONTRADICTS,
        EdgeStatus.SUGGESTED,
    )


def test_passing_tests_do_not_reinforce_a_failing_tests_memory() -> None:
    old = memory("m1", "Tests failing: `pytest tests/test_x.py` (1 failed)", type=MemoryType.PROGRESS)
    new = candidate("Tests passed: `pytest tests/test_x.py` (1 passed)", type=MemoryType.PROGRESS)
    plan = plan_write(new, exact=None, neighbours=[Neighbour(old, 0.6, 0.95)])
    assert plan.action is WriteAction.INSERT


# --- edges ---------------------------------------------------------------------------------------


def test_insert_links_related_memories_and_suggests_uncertain_ones() -> None:
    neighbours = [
        Neighbour(memory("related", "a"), RELATED_JACCARD),
        Neighbour(memory("by-cosine", "b"), 0.1, 0.8),
        Neighbour(memory("uncertain", RESAID), 0.6),
        Neighbour(memory("paraphrase", "d"), 0.2, 0.95),
        Neighbour(memory("far", "e"), 0.1, 0.3),
        Neighbour(memory("gone", "f", Status.PRUNED), 0.4),
    ]
    plan = plan_write(candidate(), exact=None, neighbours=neighbours)
    assert plan.action is WriteAction.INSERT and plan.needs_cosine == ("uncertain",)
    edges = {e.target: (e.type, e.status) for e in plan.edges}
    assert edges == {
        "related": (EdgeType.RELATES_TO, EdgeStatus.ACTIVE),
        "by-cosine": (EdgeType.RELATES_TO, EdgeStatus.ACTIVE),
        "uncertain": (EdgeType.RELATES_TO, EdgeStatus.SUGGESTED),
        "paraphrase": (EdgeType.RELATES_TO, EdgeStatus.SUGGESTED),
    }
    assert all(e.source is None for e in plan.edges)


def test_reinforce_links_the_target_to_the_other_neighbours() -> None:
    neighbours = [Neighbour(memory("dup", RESAID), 0.9), Neighbour(memory("rel", "y"), 0.3)]
    plan = plan_write(candidate(), exact=None, neighbours=neighbours)
    assert plan.action is WriteAction.REINFORCE
    assert [(e.source, e.target) for e in plan.edges] == [("dup", "rel")]


def test_repeated_neighbours_count_once_at_their_best() -> None:
    m = memory("m1", RESAID)
    plan = plan_write(candidate(), exact=None, neighbours=[Neighbour(m, 0.3), Neighbour(m, 0.9)])
    assert plan.action is WriteAction.REINFORCE and plan.target_id == "m1" and plan.edges == ()


def test_edges_are_capped() -> None:
    neighbours = [Neighbour(memory(f"m{i}", "x"), 0.3 + i / 100) for i in range(10)]
    plan = plan_write(candidate(), exact=None, neighbours=neighbours)
    assert len(plan.edges) == 5
    assert [e.target for e in plan.edges] == ["m9", "m8", "m7", "m6", "m5"]


# --- invariants ----------------------------------------------------------------------------------

similarity = st.floats(0.0, 1.0)
neighbours = st.lists(st.builds(Neighbour, memories(), similarity, st.none() | similarity), max_size=8)
candidates = st.builds(
    candidate,
    content=st.text(max_size=60),
    confidence=st.floats(0.0, 1.0),
)


@given(candidates, st.none() | memories(), neighbours)
def test_never_plans_supersedes_and_never_a_self_edge(
    cand: Candidate, exact: Memory | None, near: list[Neighbour]
) -> None:
    plan = plan_write(cand, exact=exact, neighbours=near)
    for edge in plan.edges:
        assert edge.type is not EdgeType.SUPERSEDES
        assert edge.source != edge.target
        assert 0.0 <= edge.strength <= 1.0
    if plan.action is not WriteAction.INSERT:
        assert plan.target_id is not None
        assert all(e.source == plan.target_id for e in plan.edges)
    if plan.confidence is not None:
        assert 0.0 <= plan.confidence <= 1.0
    ids = {n.memory.id for n in near}
    assert set(plan.needs_cosine) <= ids
    assert len({e.target for e in plan.edges}) == len(plan.edges)


@given(candidates, neighbours)
def test_cosines_resolve_the_uncertain_band(cand: Candidate, near: list[Neighbour]) -> None:
    first = plan_write(cand, exact=None, neighbours=near)
    resolved = [replace(n, cosine=n.cosine if n.cosine is not None else 0.5) for n in near]
    assert plan_write(cand, exact=None, neighbours=resolved).needs_cosine == ()
    assert set(first.needs_cosine) <= {n.memory.id for n in near}
