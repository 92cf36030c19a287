"""Every secret of the corpus, planted in a session that runs with BOTH hosted backends on
(layer-4 extraction via the real Anthropic SDK, embeddings via the real Voyage SDK, each pointed
at a local fake server): no secret reaches a request, the store, the log, the briefing or the
session; and ordinary code and prose come through untouched.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cortex.admin import checks as admin
from cortex.app import Cortex
from cortex.capture import manual
from cortex.capture.llm_layer import HOOK_GUARD_ENV
from cortex.core.text import normalize_text
from cortex.paths import STORE_DIR, resolve_paths
from tests.plugin.test_fixtures_replay import planted_text
from tests.support.fake_api import FakeApi, message_reply
from tests.support.runtime import (
    assistant_record,
    capture,
    files_under,
    memory_count,
    occurrences,
    run_hook,
    user_record,
    write_transcript,
)
from tests.support.secrets_corpus import SAFE_TEXTS, SECRETS

pytest.importorskip("anthropic", reason="the hosted extra (anthropic) is not installed")
pytest.importorskip("voyageai", reason="the hosted extra (voyageai) is not installed")

SESSION = "5ec2e75-0000-4000-8000-00000000c0de"


@pytest.fixture
def hosted(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeApi]:
    """Both hosted backends on, talking to a fake API on 127.0.0.1."""
    with FakeApi() as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("VOYAGE_API_KEY", "pa-test-key")
        monkeypatch.setenv("VOYAGE_BASE_URL", server.voyage_url)
        monkeypatch.setenv("CORTEX_EMBEDDER", "voyage")
        monkeypatch.setenv(HOOK_GUARD_ENV, "")  # the LLM layer sets it; monkeypatch undoes that
        yield server


def secret_session() -> list[dict[str, Any]]:
    """Each secret in a user prompt, an assistant decision, a command and its failing output."""
    records: list[dict[str, Any]] = []
    for i, sample in enumerate(SECRETS):
        records.append(
            user_record(f"Step {i}: the config has {sample.text}", uuid=f"u{i}", sessionId=SESSION)
        )
        blocks: list[dict[str, Any]] = [
            {"type": "text", "text": planted_text(sample, i)},
            {"type": "tool_use", "id": f"t{i}", "name": "Bash",
             "input": {"command": f"run --env '{sample.text}'"}},
        ]  # fmt: skip
        for j, block in enumerate(blocks):
            records.append(assistant_record(f"msg_{i}", block, uuid=f"a{i}-{j}", sessionId=SESSION))
        result = {"type": "tool_result", "tool_use_id": f"t{i}", "is_error": True,
                  "content": f"Error: {sample.text} rejected"}  # fmt: skip
        records.append(user_record([result], uuid=f"r{i}", sessionId=SESSION))
    return records


def test_no_planted_secret_reaches_a_request_the_store_the_log_or_the_session(
    project: Path, cortex_home: Path, tmp_path: Path, hosted: FakeApi
) -> None:
    # The model "repeats" a secret it saw: the reply path must redact it too.
    echoed = SECRETS[0]
    reply = {"memories": [{"type": "gotcha", "content": f"Deploys need {echoed.text} exported first."}]}
    hosted.messages_script.append(message_reply(json.dumps(reply)))
    transcript = write_transcript(tmp_path / "t" / "secrets.jsonl", secret_session())
    report = capture(project, transcript, SESSION)
    assert report.failed == 0 and report.embedded > 0
    assert memory_count(project / STORE_DIR / "cortex.db") >= 10  # the planted sentences were kept
    sent_llm = hosted.requests_to("/v1/messages")
    assert sent_llm and "[REDACTED" in json.dumps(sent_llm[0].body)
    assert hosted.voyage_inputs()
    env = {k: v for k, v in os.environ.items() if k != HOOK_GUARD_ENV}
    session_out = run_hook(
        "SessionStart", {"session_id": "next", "cwd": str(project), "source": "startup"}, env
    )

    bodies = [json.dumps(r.body, ensure_ascii=False) for r in hosted.received]
    places = files_under(
        *project.joinpath(STORE_DIR).glob("cortex.db*"),
        *cortex_home.glob("cortex-global.db*"),
        *project.joinpath(STORE_DIR).glob("cortex.log*"),
        *cortex_home.glob("cortex.log*"),
        project / STORE_DIR / "briefing",
        project / ".claude",
    )
    for sample in SECRETS:
        assert not [b for b in bodies if sample.secret in b], f"{sample.kind} sent to a hosted API"
        assert not occurrences(sample.secret, places), f"{sample.kind} written to disk"
        assert sample.secret not in session_out, f"{sample.kind} handed to the session"


def test_ordinary_code_and_prose_are_stored_and_embedded_unchanged(project: Path, hosted: FakeApi) -> None:
    cx = Cortex(resolve_paths(project), actor="test")
    try:
        for text in SAFE_TEXTS:
            outcome = manual.remember(cx, text)
            assert outcome.memory.content == normalize_text(text), "redaction mangled ordinary text"
        assert admin.backfill(cx, lambda done, total: None, export=False)["embedded"] >= len(SAFE_TEXTS) - 2
    finally:
        cx.close()
    sent = "\n".join(hosted.voyage_inputs())
    assert "[REDACTED" not in sent
    first_lines = [normalize_text(t).splitlines()[0] for t in SAFE_TEXTS if "```" not in t]
    assert sum(line in sent for line in first_lines) >= len(first_lines) * 0.9
