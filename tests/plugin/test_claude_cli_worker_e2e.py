"""The real Stop hook and detached worker with llm_extractor = claude-cli: the real Claude Code CLI
(npm, pinned) runs headless against a loopback fake Messages API that returns a canned extraction.

The session holds a (fake) GitHub token. Nothing the fake receives may contain it; the canned
memory must land in the real SQLite store beside the heuristic ones; no hook may run in the
child. When the CLI fails in any way, the heuristic memories are stored all the same.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cortex.backends import calls
from cortex.core.extract.llm_prompt import SYSTEM_PROMPT
from cortex.paths import STORE_DIR
from cortex.plugin import hooks
from tests.support.claude_cli import (
    CLAUDE_MD_MARKER,
    OutsideWorld,
    claude_binary,
    clean_env,
    hooks_that_ran,
    user_home,
)
from tests.support.fake_api import FakeApi, Reply, error_reply, message_reply
from tests.support.runtime import (
    SESSION,
    assistant_record,
    decision_session,
    open_store,
    run_hook,
    stop_payload,
    user_record,
    write_transcript,
)

pytestmark = pytest.mark.ecosystem

SECRET = "ghp_" + "Qw7" * 12  # a GitHub token the user pasted into the session
CANNED = "Background jobs take Postgres advisory locks so that one job never runs twice."
REPLY = json.dumps(
    {
        "memories": [
            {
                "type": "decision",
                "summary": "Jobs lock with Postgres advisory locks",
                "content": CANNED,
                "confidence": 0.8,
                "scope": "project",
                "tags": ["postgres"],
                "files": ["jobs/queue.py"],
            }
        ]
    }
)
REQUEST_BOUND = 12_000  # this transcript's request measured 5.5 KB; a plain `claude -p` is ~82 KB


@pytest.fixture(scope="module")
def claude() -> Path:
    return claude_binary()


def session_with_a_secret() -> list[dict[str, Any]]:
    return [
        *decision_session(),
        user_record(f"The CI token is {SECRET}, keep it handy.", uuid="u2", sessionId=SESSION),
        assistant_record(
            "msg_2",
            {"type": "text", "text": "Noted; I will not write it into any file."},
            uuid="a2",
            sessionId=SESSION,
        ),
    ]


def capture_with_claude_cli(
    project: Path, tmp_path: Path, cli: Path, api: FakeApi, outside: OutsideWorld, **settings: str
) -> tuple[Path, Path]:
    """One Stop hook with llm_extractor = claude-cli; waits for its detached worker. (HOME, hook marks)"""
    home, marks = user_home(tmp_path)
    transcript = write_transcript(project.parent / "t.jsonl", session_with_a_secret())
    env = {
        **clean_env(home, api.url, outside.url),
        "CORTEX_LLM_EXTRACTOR": "claude-cli",
        "CORTEX_CLAUDE_CLI_PATH": str(cli),
        "CORTEX_LLM_MODEL": "claude-haiku-4-5",
        "CORTEX_LLM_TIMEOUT_S": "10",
        "CORTEX_EMBEDDER": "none",
        **settings,
    }
    assert run_hook("Stop", stop_payload(project, transcript), env) == ""  # exit 0, silent
    assert len(hooks.SPAWNED) == 1  # a real detached worker process
    assert hooks.wait_for_workers(180)
    return home, marks


def stored(project: Path) -> list[str]:
    from cortex.core.model import Scope

    db = project / STORE_DIR / "cortex.db"
    if not db.exists():
        return []
    store = open_store(db, Scope.PROJECT)
    try:
        return [m.content for m in store.list_memories(statuses=None)]
    finally:
        store.close()


def worker_log(project: Path) -> str:
    return (project / STORE_DIR / "cortex.log").read_text(encoding="utf-8")


def test_the_worker_extracts_through_the_users_own_claude_code(
    project: Path, tmp_path: Path, cortex_home: Path, claude: Path
) -> None:
    with FakeApi() as api, OutsideWorld() as outside:
        api.messages_script.append(message_reply(REPLY, input_tokens=1400, output_tokens=90))
        home, marks = capture_with_claude_cli(project, tmp_path, claude, api, outside)
    # (a) the token never left the machine: in no request, on any endpoint, in any form
    assert api.received, "the worker never ran claude -p"
    for request in api.received:
        assert SECRET.encode() not in request.raw and SECRET[4:20].encode() not in request.raw
    assert outside.hosts <= {"api.anthropic.com:443"}  # the login's profile lookup, nothing more
    assert SECRET[4:20].encode() not in outside.raw
    # (b) one small request: cortex's prompt, no tools, nothing of Claude Code's own prompt
    [sent] = api.requests_to("/v1/messages")
    assert len(api.received) == 1
    body = sent.body
    print(f"\nworker's claude -p request: {len(sent.raw):,} bytes")
    assert len(sent.raw) < REQUEST_BOUND
    assert body["tools"] == [] and SYSTEM_PROMPT in [b["text"] for b in body["system"]]
    assert "Postgres advisory locks" in body["messages"][0]["content"][-1]["text"]
    assert "[REDACTED" in body["messages"][0]["content"][-1]["text"]
    assert CLAUDE_MD_MARKER not in sent.raw.decode("utf-8")
    assert sent.headers["authorization"].startswith("Bearer ")  # the subscription login, no key
    # (c) the canned memory is in the real store, beside the heuristic layers' ones
    contents = stored(project)
    assert CANNED in contents
    assert any("pgbouncer" in c for c in contents)  # the [MEMORY: gotcha] tag, layer 1
    assert all(SECRET not in c for c in contents)
    # (d) no hook ran in the child: no recursion, no capture of the extraction session
    assert hooks_that_ran(marks) == []
    assert not (home / ".claude" / "projects").exists()
    log = worker_log(project)
    assert "LLM extraction (claude-cli)" in log and "worker done" in log
    assert SECRET not in log
    day = calls.read_calls(cortex_home, _today())
    assert day.calls == 1 and day.failed == 0 and day.input_tokens == 1400


def _today() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).date().isoformat()


FAILURES: list[tuple[list[Reply], str]] = [
    ([error_reply(500, "api_error")] * 3, "failed (500)"),
    ([error_reply(401, "authentication_error")] * 3, "could not authenticate"),
    ([message_reply("Sure! I found nothing worth keeping.")], "no JSON object"),
    ([message_reply('{"memories": [{"type": "decision", "content": "cut sh')], "no JSON object"),
]
FAILURE_IDS = ["500", "401", "prose", "malformed-json"]


@pytest.mark.parametrize(("scripted", "expect_log"), FAILURES, ids=FAILURE_IDS)
def test_a_failing_claude_cli_leaves_the_heuristic_memories(
    project: Path, tmp_path: Path, claude: Path, scripted: list[Reply], expect_log: str
) -> None:
    with FakeApi() as api, OutsideWorld() as outside:
        api.messages_script.extend(scripted)
        capture_with_claude_cli(project, tmp_path, claude, api, outside)
        assert api.requests_to("/v1/messages"), "the worker never tried claude -p"
    contents = stored(project)
    assert len(contents) >= 2 and any("pgbouncer" in c for c in contents)
    assert CANNED not in contents
    log = worker_log(project)
    assert expect_log in log and "worker done" in log


STAND_INS = {
    "garbage-output": ("print('\\x00 this is not json')", "without a result"),
    "bad-exit": ("import sys; sys.stderr.write('claude: boom'); sys.exit(3)", "exited 3"),
}


@pytest.mark.parametrize("case", sorted(STAND_INS))
def test_a_broken_claude_executable_leaves_the_heuristic_memories(
    project: Path, tmp_path: Path, case: str
) -> None:
    body, expect_log = STAND_INS[case]
    exe = tmp_path / "bin" / "claude"
    exe.parent.mkdir()
    import sys

    exe.write_text(f"#!{sys.executable}\n{body}\n", encoding="utf-8")
    exe.chmod(0o755)
    with FakeApi() as api, OutsideWorld() as outside:
        capture_with_claude_cli(project, tmp_path, exe, api, outside)
        assert api.received == []
    contents = stored(project)
    assert len(contents) >= 2 and any("pgbouncer" in c for c in contents)
    log = worker_log(project)
    assert expect_log in log and "heuristic layers only" in log and "worker done" in log


def test_a_missing_claude_executable_leaves_the_heuristic_memories(project: Path, tmp_path: Path) -> None:
    with FakeApi() as api, OutsideWorld() as outside:
        capture_with_claude_cli(project, tmp_path, tmp_path / "no-such-claude", api, outside)
        assert api.received == []
    assert any("pgbouncer" in c for c in stored(project))
    assert "is not an executable file" in worker_log(project)


def test_the_call_cap_stops_claude_p_for_the_day(
    project: Path, tmp_path: Path, cortex_home: Path, claude: Path
) -> None:
    for _ in range(2):
        assert calls.take_call(cortex_home, _today(), cap=2)
    with FakeApi() as api, OutsideWorld() as outside:
        capture_with_claude_cli(project, tmp_path, claude, api, outside, CORTEX_LLM_DAILY_CALLS="2")
        assert api.received == []
    assert any("pgbouncer" in c for c in stored(project))
    assert "daily call cap reached (2 of 2" in worker_log(project)
