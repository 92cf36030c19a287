"""The real Stop hook and detached worker with the LLM layer on, against a failing fake API."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cortex.paths import STORE_DIR
from cortex.plugin import hooks
from tests.capture.test_llm_layer import FAILURE_IDS, FAILURES
from tests.support.fake_api import FakeApi, Reply
from tests.support.runtime import (
    decision_session,
    memory_count,
    run_hook,
    stop_payload,
    write_transcript,
)

pytest.importorskip("anthropic", reason="the hosted extra (anthropic) is not installed")


@pytest.mark.parametrize(("scripted", "expect_log"), FAILURES, ids=FAILURE_IDS)
def test_a_failing_llm_never_costs_the_turn_its_heuristic_memories(
    project: Path, cortex_home: Path, scripted: list[Reply], expect_log: str
) -> None:
    transcript = write_transcript(project.parent / "t.jsonl", decision_session())
    with FakeApi() as api:
        api.messages_script.extend(scripted)
        env = {
            **os.environ,
            "ANTHROPIC_API_KEY": "sk-ant-test-key",
            "ANTHROPIC_BASE_URL": api.url,
            "CORTEX_LLM_TIMEOUT_S": "0.5",
            "CORTEX_EMBEDDER": "none",
        }
        assert run_hook("Stop", stop_payload(project, transcript), env) == ""  # exit 0, silent
        assert len(hooks.SPAWNED) == 1  # a real detached worker process
        assert hooks.wait_for_workers(120)
        assert api.requests_to("/v1/messages"), "the worker never tried the LLM layer"
    db = project / STORE_DIR / "cortex.db"
    assert memory_count(db) >= 2  # the decision and the tagged gotcha, from the heuristic layers
    log = (project / STORE_DIR / "cortex.log").read_text(encoding="utf-8")
    assert expect_log in log and "worker done" in log
