"""A transcript read again under a new cursor changes nothing: Claude Code 1.0 copies a resumed
session's history into the new session's file (uuids kept), and `cortex history import` reads
sessions the Stop hook captured live. Run through the Stop hook and the worker on the real
sessions of the shared set: before the store kept which records it had read, a re-read added
notes (a1: five manifest notes), revived replaced states (a2), retired current notes (a4, b2,
b3) and re-confirmed links."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from cortex.plugin import worker
from tests.support.fake_api import FakeApi, message_reply
from tests.support.runtime import decision_session, queue_stop, snapshot, write_transcript
from tests.support.transcript_builders import FIXTURES, assistant_record, user_record

SESSIONS = FIXTURES.parent.parent / "benchmarks" / "sessions"
REAL = sorted(SESSIONS.glob("*/transcript.jsonl")) if SESSIONS.is_dir() else []


@pytest.fixture(autouse=True)
def no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CORTEX_EMBEDDER", "none")


def replay(project: Path, transcript: Path, session: str) -> worker.WorkerReport:
    queue_stop(project, transcript, session)
    report = worker.run(project, lag_wait_s=0.0)
    assert report.failed == 0
    return report


def without_cursors(state: dict[str, Any]) -> dict[str, Any]:
    return {
        scope: None if held is None else {k: v for k, v in held.items() if k != "cursors"}
        for scope, held in state.items()
    }


@pytest.mark.skipif(not REAL, reason=f"the shared real sessions are not at {SESSIONS}")
@pytest.mark.parametrize("source", REAL, ids=lambda p: p.parent.name)
def test_a_real_session_read_again_under_a_new_cursor_changes_nothing(
    source: Path, project: Path, cortex_home: Path, tmp_path: Path
) -> None:
    transcript = tmp_path / "transcript.jsonl"
    shutil.copy(source, transcript)
    first = replay(project, transcript, "live")
    assert first.actions().get("stored", 0) > 0
    before = snapshot(project, cortex_home)
    again = replay(project, transcript, "imported")  # another session id: a cursor of its own
    assert again.actions() == {}
    after = snapshot(project, cortex_home)
    assert after["project"]["cursors"] != before["project"]["cursors"]
    assert without_cursors(after) == without_cursors(before)


def test_the_llm_layer_is_not_given_records_an_earlier_read_gave_it(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The opt-in LLM layer costs the user per call: a re-read of what it was given (an import
    of a session captured live, a resumed session's copied history) must not pay again."""
    pytest.importorskip("anthropic", reason="the hosted extra (anthropic) is not installed")
    from cortex.capture.llm_layer import HOOK_GUARD_ENV
    from tests.capture.test_llm_layer import GOOD

    def read(session: str) -> worker.WorkerReport:
        # The layer turns the Stop hook off for the rest of the worker's process (no recursion
        # through a child Claude Code); this test is the hook's process too, so it turns it back.
        monkeypatch.setenv(HOOK_GUARD_ENV, "")
        return replay(project, transcript, session)

    transcript = write_transcript(tmp_path / "transcript.jsonl", decision_session())
    with FakeApi() as api:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        api.messages_script.append(message_reply(GOOD))
        first = read("live")
        asked = len(api.requests_to("/v1/messages"))
        assert asked == 1 and first.actions().get("stored", 0) >= 3  # the model's note among them
        again = read("imported")
        assert again.sessions and again.sessions[0].messages == 2  # read, not skipped
        assert len(api.requests_to("/v1/messages")) == asked  # nothing new to send, nothing sent
        assert again.actions() == {}
        # A resumed copy (a cursor of its own): the records no read saw go to the model, alone.
        more = [
            user_record("Which cache should the sessions use?", uuid="u2", sessionId="resumed"),
            assistant_record(
                "msg_2",
                {"type": "text", "text": "We decided to keep sessions in Postgres, not Memcached."},
                uuid="a2",
                sessionId="resumed",
            ),
        ]
        write_transcript(transcript, [*decision_session(), *more])
        resumed = read("resumed")
    assert resumed.sessions[0].messages == 4
    sent = api.requests_to("/v1/messages")
    assert len(sent) == asked + 1
    body = str(sent[-1].body)
    assert "Memcached" in body and "advisory locks" not in body


def test_records_a_failed_llm_call_did_not_get_are_sent_on_the_next_read(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only what a model answered on counts as given: a call the API refused leaves its records
    to a later read of the same transcript (an import), which sends them."""
    pytest.importorskip("anthropic", reason="the hosted extra (anthropic) is not installed")
    from cortex.capture.llm_layer import HOOK_GUARD_ENV
    from tests.capture.test_llm_layer import GOOD
    from tests.support.fake_api import error_reply

    def read(session: str) -> worker.WorkerReport:
        monkeypatch.setenv(HOOK_GUARD_ENV, "")  # as above: the layer turns the hook off in-process
        return replay(project, transcript, session)

    transcript = write_transcript(tmp_path / "transcript.jsonl", decision_session())
    with FakeApi() as api:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        api.messages_script.append(error_reply(401, "authentication_error"))
        first = read("live")
        assert len(api.requests_to("/v1/messages")) == 1
        assert first.actions().get("stored", 0) >= 1  # the heuristic layers still stored theirs
        api.messages_script.append(message_reply(GOOD))
        again = read("imported")
        sent = api.requests_to("/v1/messages")
    assert len(sent) == 2
    # The same records, this time answered: the assistant's too, though the heuristic layers
    # took (and marked) it on the first read.
    assert "advisory locks" in str(sent[-1].body) and "pgbouncer in transaction" in str(sent[-1].body)
    assert again.actions().get("stored", 0) >= 1  # the model's notes, which the first read lacked
