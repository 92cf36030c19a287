"""Through the real capture path: a state a later turn reports again replaces the older one.

A test that failed and later passed, a build that failed and later succeeded, a turn report of
where things stood: only the latest stays active, the older ones are superseded (kept in
history with a `supersedes` edge), and a state on another branch is left alone.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from cortex.app import Cortex
from cortex.capture.queue import QueueEntry
from cortex.capture.session import GitFacts, capture_session
from cortex.capture.supersession import work_items
from cortex.core.extract.pipeline import GitContext
from cortex.core.extract.summary import OPEN_TAG
from cortex.core.model import EdgeType, Memory, MemoryType, Scope, Status
from cortex.paths import resolve_paths
from tests.conftest import T0
from tests.support.transcript_builders import (
    bash_result_record,
    bash_use_record,
    edit_records,
    jsonl,
    prompt_record,
    text_record,
    tool_result_record,
    tool_use_record,
)


def turn(
    n: int, command: str, output: str, exit_code: int, report: str, session: str = "s1"
) -> list[dict[str, object]]:
    """Turn `n` of a session: each record says when it was written, one minute a turn."""
    records = [
        prompt_record(f"step {n}: run `{command}` and tell me where we are", uuid=f"{session}p{n}"),
        bash_use_record(f"t{n}", command, uuid=f"{session}a{n}"),
        bash_result_record(f"t{n}", output, exit_code=exit_code, uuid=f"{session}r{n}"),
        text_record(f"m{n}", report, uuid=f"{session}x{n}"),
    ]
    return in_minute(n, records, session)


def in_minute(n: int, records: list[dict[str, object]], session: str = "s1") -> list[dict[str, object]]:
    """`records` of session `session` as written in minute `n` after T0 (real turns differ in time)."""
    said = (T0 + timedelta(minutes=n)).isoformat().replace("+00:00", "Z")
    return [{**r, "sessionId": session, "timestamp": said} for r in records]


def capture_turns(
    project: Path, turns: list[list[dict[str, object]]], session: str = "s1", cx: Cortex | None = None
) -> Cortex:
    if cx is None:
        ticks = iter(T0 + timedelta(seconds=i) for i in range(1_000_000))
        cx = Cortex(resolve_paths(project), clock=lambda: next(ticks))
    transcript = project / f"{session}.jsonl"
    entry = QueueEntry("Stop", session, str(transcript), str(project))
    records: list[dict[str, object]] = []
    for i, records_of_turn in enumerate(turns):
        records += records_of_turn
        transcript.write_bytes(jsonl(records))
        capture_session(
            cx, entry, GitFacts(GitContext(branch="main")), closed=i == len(turns) - 1, lag_wait_s=0
        )
    return cx


def test_the_latest_verdict_report_and_build_state_win(project: Path) -> None:
    cx = capture_turns(
        project,
        [
            turn(1, "pytest -q", "FAILED tests/test_a.py::test_x\n1 failed, 2 passed in 0.2s", 1,
                 "## Current status\n- The parser test fails on empty input and needs a guard in parse()"),
            turn(2, "tsc --noEmit", "src/a.ts(1,1): error TS2304: Cannot find name 'x'.", 2,
                 "Root cause\nThe generated types were stale because the schema changed; regenerate them."),
            turn(3, "pytest -q", "3 passed in 0.2s", 0,
                 "## Current status\n- All three parser tests pass after adding the guard to parse()"),
            turn(4, "tsc --noEmit", "", 0, "Types regenerated; the type check is clean again now."),
        ],
    )  # fmt: skip
    try:
        store = cx.write_store(Scope.PROJECT)
        memories = store.all_memories()
        active = {m.content for m in memories if m.status is Status.ACTIVE}
        superseded = {m.content for m in memories if m.status is Status.SUPERSEDED}
        assert "Tests passed: `pytest -q` (3 passed in 0.2s)" in active
        assert any(c.startswith("Tests failing: `pytest -q`") for c in superseded)
        assert "`tsc --noEmit` succeeds" in active
        # The failure the assistant explained was a gotcha (symptom and cause), not a failing
        # state; giving only its cause, it is history once the check passes in a later turn.
        assert any(c.startswith("`tsc --noEmit` failed") and "schema changed" in c for c in superseded)
        assert not any(c.startswith("`tsc --noEmit` failed") for c in active)
        assert not any(c.startswith("Command failing: `tsc --noEmit`") for c in active)
        assert any("All three parser tests pass" in c for c in active)
        assert any("fails on empty input" in c for c in superseded)
        # Knowledge is not state: the explained cause stays active.
        assert any(c.startswith("Root cause\nThe generated types were stale") for c in active)
        ids = {m.id for m in memories if m.status is Status.SUPERSEDED}
        edges = [e for e in store.edges() if e.type is EdgeType.SUPERSEDES]
        assert ids == {e.target for e in edges}
    finally:
        cx.close()


FAILING = "FAILED tests/test_a.py::test_x\n1 failed, 2 passed in 0.2s"


@pytest.mark.parametrize(
    ("outcomes", "current"),
    [
        (
            ((FAILING, 1), ("3 passed in 0.2s", 0), (FAILING, 1)),
            "Tests failing: `pytest -q` (1 failed, 2 passed",
        ),
        (
            (("3 passed in 0.2s", 0), (FAILING, 1), ("3 passed in 0.2s", 0)),
            "Tests passed: `pytest -q` (3 passed",
        ),
    ],
)
def test_a_state_that_holds_again_is_current_again(
    project: Path, outcomes: tuple[tuple[str, int], ...], current: str
) -> None:
    # A suite fails, passes, then fails exactly as before: the failing note is the same text as
    # the superseded one, and the latest turn says it holds. The same for pass, fail, pass.
    turns = [turn(i, "pytest -q", out, code, f"Step {i} done.") for i, (out, code) in enumerate(outcomes, 1)]
    cx = capture_turns(project, turns)
    try:
        states = [m for m in cx.write_store(Scope.PROJECT).all_memories() if m.content.startswith("Tests ")]
        active = [m for m in states if m.status is Status.ACTIVE]
        assert len(states) == 3 and len(active) == 1 and active[0].content.startswith(current), states
        # Stated anew: the newest note, after the one it gives way to; the first is history.
        assert active[0].created == max(m.created for m in states)
    finally:
        cx.close()


def test_a_state_that_holds_again_in_a_later_session_is_current_again(project: Path) -> None:
    # Monday's session: the suite fails, then passes. A session resumed from it copies that
    # history into its own file, as Claude Code 1.0 does (uuids kept, the new session's id, the
    # time of the copy): nothing is news. Wednesday's session: the suite fails exactly as on
    # Monday, and that is current.
    monday = [
        turn(1, "pytest -q", FAILING, 1, "Done.", "s-mon"),
        turn(2, "pytest -q", "3 passed in 0.2s", 0, "Done.", "s-mon"),
    ]
    cx = capture_turns(project, monday, "s-mon")
    try:
        store = cx.write_store(Scope.PROJECT)

        def states() -> tuple[list[Memory], list[Memory]]:
            notes = [m for m in store.all_memories() if m.content.startswith("Tests ")]
            return notes, [m for m in notes if m.status is Status.ACTIVE]

        notes, (passing,) = states()
        assert len(notes) == 2 and passing.content.startswith("Tests passed")
        copy_time = (T0 + timedelta(minutes=5)).isoformat().replace("+00:00", "Z")
        copied = [{**r, "sessionId": "s-res", "timestamp": copy_time} for r in monday[0] + monday[1]]
        capture_turns(project, [copied], "s-res", cx)
        notes, active = states()
        assert len(notes) == 2 and [m.id for m in active] == [passing.id]
        capture_turns(project, [turn(9, "pytest -q", FAILING, 1, "Done.", "s-wed")], "s-wed", cx)
        notes, (failing,) = states()
        assert len(notes) == 3 and failing.content.startswith("Tests failing: `pytest -q`")
        assert failing.source.session_id == "s-wed" and failing.source.said_at == T0 + timedelta(minutes=9)
    finally:
        cx.close()


def test_an_explained_failure_stays_when_its_command_later_succeeds(project: Path) -> None:
    # Real shape: `nix flake check` fails because flake.nix is not tracked, the assistant says
    # why; a later turn's check passes. The explained failure is the gotcha (symptom and fix),
    # the success is the command's state: both stay.
    cx = capture_turns(
        project,
        [
            turn(1, "nix flake check --cores 4",
                 "error: Path 'flake.nix' in the repository is not tracked by Git.", 1,
                 "I need to add the flake.nix to git first, because flakes only see tracked files."),
            turn(2, "nix flake check --cores 4", "all checks passed", 0, "The flake check passes now."),
        ],
    )  # fmt: skip
    try:
        memories = cx.write_store(Scope.PROJECT).all_memories()
        active = [m.content for m in memories if m.status is Status.ACTIVE]
        assert any(
            c.startswith("`nix flake check --cores 4` failed (error: Path 'flake.nix'") for c in active
        )
        assert "`nix flake check --cores 4` succeeds" in active
    finally:
        cx.close()


def answer_turn(n: int, prompt: str, answer: str) -> list[dict[str, object]]:
    return in_minute(n, [prompt_record(prompt, uuid=f"p{n}"), text_record(f"m{n}", answer, uuid=f"x{n}")])


WRONG_ANSWER = (
    "## Root cause\nThe workflows use the default `GITHUB_TOKEN`, which has no access to the private "
    "submodule, so the checkout step fails for every run."
)
RIGHT_ANSWER = (
    "## Root cause\nThe organisation secret `GH_TOKEN` is visible to all repositories; the checkout "
    "step must pass it as its token to clone the private submodule."
)


def test_next_steps_of_an_earlier_turn_give_way_to_the_latest_report(project: Path) -> None:
    # "Next steps:" items say where the work stood then: once a later report says where it
    # stands, the step it did is no longer open; the step still listed stays.
    first = (
        "## Summary\nAdded `GET /users` returning all users.\n\n## Next steps\n"
        "- Add pagination to `GET /users` (it returns every row today)\n"
        "- Add an index on `users.created_at` for the sort"
    )
    last = (
        "## Summary\n`GET /users` is now paginated with `?page=` and `?limit=` (max 100 per page).\n\n"
        "## Remaining\n- Add an index on `users.created_at` for the sort"
    )
    cx = capture_turns(
        project, [answer_turn(1, "add the users endpoint", first), answer_turn(2, "paginate it", last)]
    )
    try:
        memories = cx.write_store(Scope.PROJECT).all_memories()
        paging = [m for m in memories if m.content.startswith("Add pagination")]
        assert paging and all(m.status is Status.SUPERSEDED for m in paging)
        index = [m for m in memories if m.content.startswith("Add an index") and m.status is Status.ACTIVE]
        assert len(index) == 1
    finally:
        cx.close()


def test_options_left_to_the_user_are_closed_by_the_next_turn(project: Path) -> None:
    # The choice the user was asked for is made in the next turn: the options no longer say
    # where things stand. The last turn's open question, and another session's, stay.
    options = (
        "Two options:\n\n**Option A: Local disk** - simple, but breaks with more than one web server.\n\n"
        "**Option B: S3 with presigned URLs** - clients upload directly.\n\nWhich do you prefer?"
    )
    asked = (
        "Upload limits, two options:\n\n**Option A: a 5 MB cap** - simple.\n\n"
        "**Option B: caps per plan** - needs the billing API.\n\nWhich do you prefer?"
    )
    thumbs = options.replace("Two options:", "Two options for thumbnails:")
    elsewhere = [{**r, "sessionId": "other"} for r in answer_turn(9, "and the thumbnails?", thumbs)]
    cx = capture_turns(project, [elsewhere], session="other")
    turns = [
        answer_turn(1, "how should we store avatars?", options),
        answer_turn(2, "B", "Going with S3 presigned uploads: the `/avatars/presign` endpoint is in place."),
        answer_turn(3, "ok", asked),
    ]
    capture_turns(project, turns, cx=cx)
    try:
        memories = cx.write_store(Scope.PROJECT).all_memories()
        opened = {
            (m.source.session_id, m.content.split("\n")[0]): m.status for m in memories if OPEN_TAG in m.tags
        }
        assert opened == {
            ("other", "Two options for thumbnails:"): Status.ACTIVE,
            ("s1", "Two options:"): Status.SUPERSEDED,
            ("s1", "Option A: a 5 MB cap - simple."): Status.ACTIVE,
        }
    finally:
        cx.close()


def test_a_state_handed_to_the_user_is_closed_by_their_reply_even_when_it_leaves_no_note(
    project: Path,
) -> None:
    # "should pass once you push" waits on the user; "pushed, it works now" answers it, though
    # the reply's turn ("Great!") stores nothing of its own.
    fixed = (
        "## Root cause\nThe `Session` type is never augmented, so `session.userId` fails the type check.\n\n"
        "## Status\nThe Vercel build should pass once you push."
    )
    turns = [
        answer_turn(1, "the vercel build fails", fixed),
        answer_turn(2, "pushed, it works now", "Great!"),
    ]
    cx = capture_turns(project, turns)
    try:
        memories = cx.write_store(Scope.PROJECT).all_memories()
        waiting = [m for m in memories if "once you push" in m.content]
        assert waiting and all(m.status is Status.SUPERSEDED and OPEN_TAG in m.tags for m in waiting)
        assert any("never augmented" in m.content and m.status is Status.ACTIVE for m in memories)
    finally:
        cx.close()


def test_a_change_of_course_withdraws_the_decision_it_overturns(project: Path) -> None:
    # The cache was decided in SQLite, then moved to Redis under load: the first decision no
    # longer holds. A decision on another subject that also names SQLite, and the user's own
    # rule, stay.
    queue = "## Decision\nThe job queue stays in SQLite with one writer process."
    cache = "## Decision\nWe'll cache pricing responses in SQLite (`cache.db`): it needs no extra service."
    moved = (
        "## Root cause\nSQLite allows one writer at a time: 50 workers hit `database is locked`.\n\n"
        "## Decision\nSwitched the pricing cache from SQLite to Redis (`REDIS_URL`) for concurrent writers."
    )
    turns = [
        answer_turn(1, "Always keep SQLite files out of git, in all my projects", queue),
        answer_turn(2, "add a cache for the pricing API", cache),
        answer_turn(3, "run the load test", moved),
    ]
    cx = capture_turns(project, turns)
    try:
        memories = cx.write_store(Scope.PROJECT).all_memories()
        status = {m.content.split("\n")[-1][:30]: m.status for m in memories if m.type is MemoryType.DECISION}
        assert status == {
            "The job queue stays in SQLite ": Status.ACTIVE,
            "We'll cache pricing responses ": Status.SUPERSEDED,
            "Switched the pricing cache fro": Status.ACTIVE,
        }
        rules = cx.write_store(Scope.GLOBAL).all_memories()
        assert [m.status for m in rules if "SQLite files" in m.content] == [Status.ACTIVE]
        by = {m.id: m for m in memories}
        (edge,) = [e for e in cx.write_store(Scope.PROJECT).edges() if e.type is EdgeType.SUPERSEDES]
        assert by[edge.source].content.endswith("for concurrent writers.")
        assert by[edge.target].content.startswith("Decision\nWe'll cache pricing responses in SQLite")
    finally:
        cx.close()


def test_a_rule_of_the_user_that_changes_course_withdraws_their_earlier_rule(project: Path) -> None:
    # The user set a rule, then changed it: both rules active would tell the next session to
    # use npm and pnpm at once. Their rule on another subject that also names npm stays, and a
    # report's change of course does not touch what the user said.
    turns = [
        answer_turn(1, "Always use npm for installing packages in this repo, never yarn.", "Got it."),
        answer_turn(2, "Never run npm publish from a laptop, only from CI.", "Understood."),
        answer_turn(3, "Add lodash.", "## Decision\nSwitched the package installs from npm to bun."),
        answer_turn(4, "From now on use pnpm instead of npm for installs in this repo.", "Sure."),
    ]
    cx = capture_turns(project, turns)
    try:
        rules = [m for m in cx.write_store(Scope.PROJECT).all_memories() if "user-rule" in m.tags]
        status = {m.content.removeprefix("The user's rule: ")[:24]: m.status for m in rules}
        assert status == {
            "Always use npm for insta": Status.SUPERSEDED,  # by turn 4, not by turn 3's report
            "Never run npm publish fr": Status.ACTIVE,
            "From now on use pnpm ins": Status.ACTIVE,
        }
        (edge,) = [e for e in cx.write_store(Scope.PROJECT).edges() if e.type is EdgeType.SUPERSEDES]
        by = {m.id: m for m in rules}
        assert by[edge.source].content.endswith("instead of npm for installs in this repo.")
    finally:
        cx.close()


def test_a_redirect_overturns_what_the_previous_answer_decided_about_it(project: Path) -> None:
    # "use X instead" names only the new choice: the previous answer's decision about sessions
    # is what it replaces; its decision about logs, and an older turn's about sessions, stay.
    old = "## Decision\nWe'll keep user sessions in Memcached for the admin tool, as the API does."
    answer = (
        "## Decision\nWe'll keep user sessions in Redis with a 24h TTL: expiry is built in.\n\n"
        "## Decisions\n- Requests are logged as JSON lines to stdout.\n"
        "- Sessions expire after 24h of inactivity, as the security review asked."
    )
    turns = [
        answer_turn(1, "how does the admin tool keep sessions?", old),
        answer_turn(2, "where should the API keep user sessions?", answer),
        answer_turn(3, "actually, let's use Postgres for sessions instead, we already run it", "Sure."),
    ]
    cx = capture_turns(project, turns)
    try:
        memories = cx.write_store(Scope.PROJECT).all_memories()
        # A note of several decisions goes only when all of them do: one is about logging.
        by_words = {w: [m.status for m in memories if w in m.content] for w in ("Memcached", "Redis", "JSON")}
        assert by_words == {
            "Memcached": [Status.ACTIVE],
            "Redis": [Status.SUPERSEDED],
            "JSON": [Status.ACTIVE],
        }
        (decided,) = [m for m in memories if "user-rule" in m.tags]
        assert decided.type is MemoryType.DECISION
        assert (
            decided.content
            == "The user decided: actually, let's use Postgres for sessions instead, we already run it"
        )
    finally:
        cx.close()


def test_a_reply_that_picks_an_option_stores_it_as_the_users_decision(project: Path) -> None:
    # The answer lays out two options and asks; the user answers "B" and nothing else, and the
    # next turn stores nothing that names the choice: it lived only in the option.
    options = (
        "**Option A: S3 with presigned URLs**\n- Pros: scales, no server bandwidth\n"
        "- Cons: needs AWS credentials in CI\n\n"
        "**Option B: local disk under /var/uploads**\n- Pros: simple\n"
        "- Cons: breaks when we run more than one server\n\nWhich do you prefer?"
    )
    turns = [
        answer_turn(1, "How should we store uploaded files?", options),
        answer_turn(2, "B", "Done."),
        answer_turn(3, "2", "Which two?"),  # no options laid out before it: no choice
    ]
    cx = capture_turns(project, turns)
    try:
        store = cx.write_store(Scope.PROJECT)
        memories = store.all_memories()
        (chosen,) = [m for m in memories if m.type is MemoryType.DECISION]
        assert chosen.content == (
            "The user chose: local disk under /var/uploads\n- Pros: simple\n"
            "- Cons: breaks when we run more than one server"
        )
        assert chosen.status is Status.ACTIVE and "user-rule" in chosen.tags
        opened = [m for m in memories if OPEN_TAG in m.tags]
        assert len(opened) == 2 and {m.status for m in opened} == {Status.SUPERSEDED}
        by = {m.id: m for m in memories}
        (edge,) = [e for e in store.edges() if e.type is EdgeType.SUPERSEDES]
        assert edge.source == chosen.id and by[edge.target].content.startswith("Option B: local disk")
    finally:
        cx.close()


_WAYS = (
    "The middleware fails because the auth library calls headers() outside a request.\n\n"
    "I see two ways forward:\n\n1. Client-side protection - redirect in a useEffect; the page "
    "flashes first.\n2. Pin the auth library to 0.0.81 - the last version that worked; blocks "
    "upgrades.\n\nWhich would you prefer?"
)


@pytest.mark.parametrize("between", [False, True], ids=["right-after", "after-another-answer"])
def test_a_pick_reads_the_options_of_the_latest_answer_only(project: Path, between: bool) -> None:
    # A numbered list of two ways in a report (real shape: "I see two ways forward: 1. ... 2.
    # ... Which would you prefer?"): "2" right after it picks the second; "2" after a later
    # answer that laid out nothing picks nothing.
    turns = [answer_turn(1, "the middleware fails, what now?", _WAYS)]
    if between:
        turns.append(answer_turn(2, "first run the tests", "## Status\nAll 42 tests pass on main."))
    turns.append(answer_turn(3, "2 please", "Ok."))
    cx = capture_turns(project, turns)
    try:
        memories = cx.write_store(Scope.PROJECT).all_memories()
        decided = [m.content for m in memories if m.content.startswith("The user chose: ")]
        pin = (
            "The user chose: Pin the auth library to 0.0.81 - the last version that worked; blocks upgrades."
        )
        assert decided == ([] if between else [pin])
    finally:
        cx.close()


def test_a_merge_the_user_reports_closes_the_open_pull_request_it_names(project: Path) -> None:
    # Real shape (b3, shortened): the report lists PR #2 as open, the user merges it on their
    # phone and says so ("it": the one the latest report names). PR #5, open since an earlier
    # turn, stays until the user names it.
    docs = "## Docs\n- PR #5 is still open and waits for the design review"
    status = (
        "## Current status\n- PR #2 is open: https://github.com/acme/app/pull/2\n"
        "- It switches the checkout step to the org secret `GH_TOKEN`"
    )
    turns = [
        answer_turn(1, "open a PR for the docs", docs),
        answer_turn(2, "open a PR with the workflow fix", status),
        answer_turn(3, "i merged it just now - literally three lines of code", "Great, thanks!"),
    ]
    cx = capture_turns(project, turns)

    def open_prs() -> dict[str, Status]:
        memories = cx.write_store(Scope.PROJECT).all_memories()
        return {n: m.status for m in memories for n in ("#2", "#5") if f"PR {n} is" in m.content}

    try:
        assert open_prs() == {"#2": Status.SUPERSEDED, "#5": Status.ACTIVE}
        turns.append(answer_turn(4, "ok, PR #5 is merged too", "Both are in."))
        capture_turns(project, turns, cx=cx)
        assert open_prs() == {"#2": Status.SUPERSEDED, "#5": Status.SUPERSEDED}
    finally:
        cx.close()


# Real shape (2.0.x): an answer in prose, no heading. Its report section and the lexical layer's
# reading of its "The issue is that ..." sentence held the same claim, and the copy stayed active
# after the user rejected the answer.
WRONG_PROSE = (
    "The workflows should use the same GitHub token that's already provided. The issue is that "
    "we're using the default `GITHUB_TOKEN` which doesn't have access to other repositories. We "
    "need to use the token parameter properly in the checkout step."
)


@pytest.mark.parametrize("wrong_answer", [WRONG_ANSWER, WRONG_PROSE], ids=["report", "prose"])
def test_an_answer_the_user_rejects_is_withdrawn(project: Path, wrong_answer: str) -> None:
    # Real shape: the user's next prompt opens with "read what I said" / "wrong, ...".
    turns = [
        answer_turn(1, "why does CI fail on checkout?", wrong_answer),
        answer_turn(2, "read what I said. we send a token from the org, use that one", RIGHT_ANSWER),
    ]
    cx = capture_turns(project, turns)
    try:
        memories = cx.write_store(Scope.PROJECT).all_memories()
        wrong = [m for m in memories if "default `GITHUB_TOKEN`" in m.content]
        right = [m for m in memories if "`GH_TOKEN` is visible" in m.content]
        assert wrong and all(m.status is Status.SUPERSEDED for m in wrong)
        assert right and all(m.status is Status.ACTIVE for m in right)
    finally:
        cx.close()


def test_a_corrected_answer_leaves_the_users_fact_in_its_place(project: Path) -> None:
    # The user states the fact the answer got wrong: it is kept, the answer is withdrawn.
    said = "no, that's wrong - the checkout step runs with the org secret GH_TOKEN, not GITHUB_TOKEN"
    turns = [
        answer_turn(1, "why does CI fail on checkout?", WRONG_ANSWER),
        answer_turn(2, said, RIGHT_ANSWER),
    ]
    cx = capture_turns(project, turns)
    try:
        memories = cx.write_store(Scope.PROJECT).all_memories()
        wrong = [m for m in memories if "default `GITHUB_TOKEN`" in m.content]
        assert wrong and all(m.status is Status.SUPERSEDED for m in wrong)
        (fact,) = [m for m in memories if m.content.startswith("The user corrected: ")]
        assert fact.status is Status.ACTIVE and fact.type.value == "gotcha"
        assert "GH_TOKEN, not GITHUB_TOKEN" in fact.content
    finally:
        cx.close()


def test_a_decision_the_user_takes_back_at_once_is_withdrawn(project: Path) -> None:
    # "Actually no, ..." takes back the direction the answer set: its decision was dropped.
    decided = "Decision: we'll use Redis for the session cache, since it supports TTLs natively."
    turns = [
        answer_turn(1, "what should the session cache use?", decided),
        answer_turn(2, "Actually no, let's not add Redis here. Use Postgres.", "Sessions go in Postgres."),
    ]
    cx = capture_turns(project, turns)
    try:
        memories = cx.write_store(Scope.PROJECT).all_memories()
        dropped = [m for m in memories if "use Redis for the session cache" in m.content]
        assert dropped and all(m.status is Status.SUPERSEDED for m in dropped)
    finally:
        cx.close()


def test_an_answer_followed_by_another_request_stays(project: Path) -> None:
    turns = [
        answer_turn(1, "why does CI fail on checkout?", WRONG_ANSWER),
        answer_turn(2, "ok, and how do I rotate the token?", RIGHT_ANSWER),
    ]
    cx = capture_turns(project, turns)
    try:
        memories = cx.write_store(Scope.PROJECT).all_memories()
        assert all(m.status is Status.ACTIVE for m in memories if "default `GITHUB_TOKEN`" in m.content)
    finally:
        cx.close()


def test_a_rejection_withdraws_only_the_answer_right_before_it(project: Path) -> None:
    # Real shape: a sound finding, then a turn that only reports where things stand, then
    # "wrong, you must open the link": the older finding is not the answer rejected.
    status = "## Current status\n- The dev servers on ports 3000 to 3004 are stopped and the ports are free"
    turns = [
        answer_turn(1, "why does CI fail on checkout?", RIGHT_ANSWER),
        answer_turn(2, "kill all running ports", status),
        answer_turn(3, "wrong, you must open the link to see the errors", "Opened it; the page shows a 500."),
    ]
    cx = capture_turns(project, turns)
    try:
        memories = cx.write_store(Scope.PROJECT).all_memories()
        assert all(m.status is Status.ACTIVE for m in memories if "`GH_TOKEN` is visible" in m.content)
    finally:
        cx.close()


def commit_turn(n: int, files: str, subject: str) -> list[dict[str, object]]:
    command = f'cd "/Users/me/AI Projects" && git add -A {files} && git commit -q -m "{subject}"'
    records = [
        prompt_record(f"step {n}: record where the image paste work stands", uuid=f"p{n}"),
        bash_use_record(f"t{n}", command, uuid=f"a{n}"),
        bash_result_record(f"t{n}", "", uuid=f"r{n}"),
    ]
    return in_minute(n, records)


def test_a_later_docs_commit_on_the_same_files_replaces_the_earlier_one(project: Path) -> None:
    # Real shape (shortened): a notes file committed after each step of an evaluation; the
    # second commit says the first one's "Ctrl+V not Cmd+V" no longer holds. A docs commit on
    # other files, and a code fix commit, stay.
    notes = ".claude/project_jcode_eval.md"
    cx = capture_turns(
        project,
        [
            commit_turn(1, notes, "docs(memory): fixed jcode macOS image paste; trigger Ctrl+V not Cmd+V"),
            commit_turn(2, f"{notes} .claude/MEMORY.md", "docs(memory): index the jcode eval notes"),
            commit_turn(3, "src/input.rs", "fix(tui): read the clipboard image on an empty bracketed paste"),
            commit_turn(4, notes, "docs(memory): real Cmd+V fix is jcode-side, not a terminal remap"),
        ],
    )  # fmt: skip
    try:
        memories = cx.write_store(Scope.PROJECT).all_memories()
        status = {
            m.content.split(": ", 1)[1]: m.status for m in memories if m.content.startswith("Committed")
        }
        assert status == {
            "docs(memory): fixed jcode macOS image paste; trigger Ctrl+V not Cmd+V": Status.SUPERSEDED,
            "docs(memory): index the jcode eval notes": Status.ACTIVE,
            "fix(tui): read the clipboard image on an empty bracketed paste": Status.ACTIVE,
            "docs(memory): real Cmd+V fix is jcode-side, not a terminal remap": Status.ACTIVE,
        }
    finally:
        cx.close()


def git_turn(n: int, command: str, output: str, report: str = "") -> list[dict[str, object]]:
    records = [
        prompt_record(f"step {n}: do the git step", uuid=f"p{n}"),
        bash_use_record(f"t{n}", command, uuid=f"a{n}"),
        bash_result_record(f"t{n}", output, uuid=f"r{n}"),
    ]
    records += [text_record(f"m{n}", report, uuid=f"x{n}")] if report else []
    return in_minute(n, records)


def test_a_revert_withdraws_the_note_of_the_commit_it_undoes(project: Path) -> None:
    retry = "Retry upstream calls with exponential backoff"
    retried = (
        "## Done\nAdded exponential backoff retries (3 attempts) to `upstream.py` for all upstream calls."
    )
    exported = "## Done\nThe report command writes PDF exports with reportlab when given `--pdf`."
    turns = [
        git_turn(1, f"git commit -am '{retry}'", f"[main 9f8e7d6] {retry}\n 1 file changed", retried),
        git_turn(2, "git commit -am 'Add PDF export'", "[main 1a2b3c4] Add PDF export\n 2 files", exported),
        git_turn(3, "git revert --no-edit 9f8e7d6", f'[main 5c4b3a2] Revert "{retry}"\n 1 file changed'),
    ]  # fmt: skip
    cx = capture_turns(project, turns)
    try:
        memories = cx.write_store(Scope.PROJECT).all_memories()
        by_sha = {
            m.content.split(":")[0].split()[-1]: m for m in memories if m.content.startswith("Committed")
        }
        assert by_sha["9f8e7d6"].status is Status.SUPERSEDED  # what it added is gone
        assert by_sha["1a2b3c4"].status is Status.ACTIVE
        assert by_sha["5c4b3a2"].status is Status.ACTIVE
        # The report of the reverted work goes with it; the other report stays.
        done = {m.content.split("\n")[1][:12]: m.status for m in memories if m.content.startswith("Done\n")}
        assert done == {"Added expone": Status.SUPERSEDED, "The report c": Status.ACTIVE}
        edges = cx.write_store(Scope.PROJECT).edges()
        assert any(
            (e.source, e.target, e.type) == (by_sha["5c4b3a2"].id, by_sha["9f8e7d6"].id, EdgeType.SUPERSEDES)
            for e in edges
        )
        # Reapplied (git 2.43's subject for a revert's revert): the revert is what is undone now.
        turns.append(
            git_turn(4, "git revert --no-edit HEAD", f'[main 7d7d7d7] Reapply "{retry}"\n 1 file changed')
        )
        capture_turns(project, turns, cx=cx)  # the same transcript, one turn longer
        memories = cx.write_store(Scope.PROJECT).all_memories()
        status = {
            m.content.split(":")[0].split()[-1]: m.status for m in memories if m.content.startswith("Commit")
        }
        assert status == {
            "9f8e7d6": Status.SUPERSEDED,
            "1a2b3c4": Status.ACTIVE,
            "5c4b3a2": Status.SUPERSEDED,
            "7d7d7d7": Status.ACTIVE,
        }
    finally:
        cx.close()


def test_a_later_report_replaces_only_the_earlier_reports_of_its_topic(project: Path) -> None:
    # Real shape (shortened): one turn reports a PR merged, a later one a PR created for other
    # work, the last one where that PR stands. The merge is still true at the end; the created
    # PR's earlier state is replaced, and a report that names nothing is replaced as before.
    merged = (
        "## PR #387 Successfully Merged!\n- PR merged with squash commit: `b77f523`\n"
        "- Issue #271 automatically closed and the feature branch deleted"
    )
    created = (
        "## Phase 2 Complete\n- PR #389 created with natural language dates through `resolveDateRange`\n"
        "- All offline tests are passing on the feature branch now"
    )
    vague = "## Current status\n- Everything from this step is finished and the work is ready for review"
    fixed = (
        "## Critical Fixes Complete for PR #389\n- The API call moved out of the error path\n"
        "- 690 tests passing out of 734, 16 failing in the new test files"
    )
    turns = [
        answer_turn(1, "merge PR", merged),
        answer_turn(2, "proceed with phase 2", created),
        answer_turn(3, "and the docs?", vague),
        answer_turn(4, "apply the critical fixes", fixed),
    ]
    cx = capture_turns(project, turns)
    try:
        memories = cx.write_store(Scope.PROJECT).all_memories()
        status = {m.content.split("\n", 1)[0]: m.status for m in memories}
        assert status["PR #387 Successfully Merged!"] is Status.ACTIVE
        assert status["Phase 2 Complete"] is Status.SUPERSEDED  # PR #389 again, later
        assert status["Current status"] is Status.SUPERSEDED  # names nothing: any later report
        assert status["Critical Fixes Complete for PR #389"] is Status.ACTIVE
    finally:
        cx.close()


def test_the_work_a_report_names_is_its_issues_pull_requests_and_commits() -> None:
    assert work_items("PR #387 merged with squash commit `b77f523`; Issue #271 closed") == {
        "#387",
        "#271",
        "b77f523",
    }
    assert work_items("Created: https://github.com/org/repo/pull/390 and PR 12") == {"#390", "#12"}
    # Counts, colours, files and versions name no work item.
    assert work_items("684/711 tests pass; colour #fff; update.sh v0.9.3; sha256-abcdef1234") == frozenset()


@pytest.mark.parametrize(
    "back",
    [
        ("bun breaks the convex deploy, let's go back to npm", "Okay, back on npm."),
        (
            "why is the deploy failing?",
            "## Decision\nReverted to npm: Bun's runtime broke the Convex deploy.",
        ),
    ],
    ids=["the-user-goes-back", "a-report-reverts"],
)
def test_going_back_undoes_the_change_of_course_that_left_it(project: Path, back: tuple[str, str]) -> None:
    # Real shape (a Next.js app): migrated from npm to Bun, then back. The migration note no
    # longer says how the project installs; a change that left something else stays.
    migrated = (
        "## Decision\nMigrated the package manager from npm to Bun for faster installs (`bun.lock`).\n\n"
        "## Decision\nSwitched the pricing cache from SQLite to Redis for concurrent writers."
    )
    turns = [answer_turn(1, "migrate to bun and fix the cache", migrated), answer_turn(2, *back)]
    cx = capture_turns(project, turns)
    try:
        memories = cx.write_store(Scope.PROJECT).all_memories()
        status = {
            m.content.split("\n")[-1][:24]: m.status
            for m in memories
            if "Migrated" in m.content or "Switched" in m.content
        }
        assert status == {
            "Migrated the package man": Status.SUPERSEDED,
            "Switched the pricing cac": Status.ACTIVE,
        }
    finally:
        cx.close()


def _adr_turn(n: int, status: str) -> list[dict[str, object]]:
    """Turn `n` writes ADR 0003 with `status` (a Write of the whole record, as Claude Code makes it)."""
    path = "/home/dev/proj/docs/adr/0003-use-postgres.md"
    adr = (
        f"# 3. Use PostgreSQL for persistence\n\n## Status\n\n{status}\n\n## Decision\n\n"
        "We will use PostgreSQL 16 for all persistent data, because two workers now write at once.\n"
    )
    done = {"type": "update", "filePath": path, "content": adr}
    records = [
        prompt_record(f"step {n}: mark the database ADR {status.lower()}", uuid=f"s1p{n}"),
        tool_use_record(f"w{n}", "Write", {"file_path": path, "content": adr}, uuid=f"s1a{n}"),
        tool_result_record(
            f"w{n}", f"The file {path} has been updated.", is_error=False, top=done, uuid=f"s1r{n}"
        ),
        text_record(f"m{n}", f"The ADR is {status.lower()} now.", uuid=f"s1x{n}"),
    ]
    return in_minute(n, records)


def test_a_decision_records_latest_write_is_the_one_in_force(project: Path) -> None:
    cx = capture_turns(
        project, [_adr_turn(1, "Proposed"), _adr_turn(2, "Accepted"), _adr_turn(3, "Superseded")]
    )
    try:
        notes = [m for m in cx.write_store(Scope.PROJECT).all_memories() if "Decision record" in m.content]
        by_status = {m.content.split("(")[1].split(")")[0]: m for m in notes}
        assert set(by_status) == {"Proposed", "Accepted", "Superseded"}
        assert by_status["Accepted"].type is MemoryType.DECISION
        # Each later write replaces the one before it; only the latest is in force.
        assert [by_status[s].status for s in ("Proposed", "Accepted", "Superseded")] == [
            Status.SUPERSEDED,
            Status.SUPERSEDED,
            Status.ACTIVE,
        ]
    finally:
        cx.close()


def _adr_edit_turn(n: int, before: str, after: str) -> list[dict[str, object]]:
    """Turn `n` flips ADR 0003's status with an Edit: the result carries the file as it was."""
    path = "/home/dev/proj/docs/adr/0003-use-postgres.md"
    adr = (
        f"# 3. Use PostgreSQL for persistence\n\n## Status\n\n{before}\n\n## Decision\n\n"
        "We will use PostgreSQL 16 for all persistent data, because two workers now write at once.\n"
    )
    records = [
        prompt_record(f"step {n}: the team agreed, mark the database ADR {after.lower()}", uuid=f"s1p{n}"),
        *edit_records(f"e{n}", path, adr, before, after, uuid=f"s1e{n}"),
        text_record(f"m{n}", f"The ADR is {after.lower()} now.", uuid=f"s1x{n}"),
    ]
    return in_minute(n, records)


def test_an_edit_that_accepts_a_decision_record_puts_it_in_force(project: Path) -> None:
    cx = capture_turns(project, [_adr_turn(1, "Proposed"), _adr_edit_turn(2, "Proposed", "Accepted")])
    try:
        notes = [m for m in cx.write_store(Scope.PROJECT).all_memories() if "Decision record" in m.content]
        by_status = {m.content.split("(")[1].split(")")[0]: m for m in notes}
        assert set(by_status) == {"Proposed", "Accepted"}
        assert by_status["Proposed"].status is Status.SUPERSEDED
        assert by_status["Accepted"].status is Status.ACTIVE
        assert by_status["Accepted"].type is MemoryType.DECISION
    finally:
        cx.close()


def test_a_commit_of_the_staged_logs_replaces_the_staged_state(project: Path) -> None:
    # Turn 1 leaves hook logs staged by `git add -A`; turn 2 commits them: the commit's gotcha is
    # the current word on those files, and "staged and not committed" is history.
    listing = "Changes to be committed:\n\tnew file:   logs/chat.json\n\tnew file:   logs/stop.json\n"
    commit = (
        "[main 1a2b3c4] feat: add the parser\n 3 files changed, 40 insertions(+)\n"
        " create mode 100644 logs/chat.json\n create mode 100644 logs/stop.json\n"
    )
    cx = capture_turns(
        project,
        [
            turn(1, "git add -A && git status", listing, 0, "Staged everything."),
            turn(2, 'git commit -m "feat: add the parser"', commit, 0, "Committed."),
        ],
    )
    try:
        memories = cx.write_store(Scope.PROJECT).all_memories()
        staged = [m for m in memories if m.content.startswith("Staged and not committed")]
        taken = [
            m
            for m in memories
            if m.content.startswith('Commit 1a2b3c4 "feat: add the parser" (3 files changed) took in')
        ]
        assert [m.status for m in staged] == [Status.SUPERSEDED]
        assert [(m.status, m.type) for m in taken] == [(Status.ACTIVE, MemoryType.GOTCHA)]
        assert "logs/ (2 files)" in taken[0].content
    finally:
        cx.close()
