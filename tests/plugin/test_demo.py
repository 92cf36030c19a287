"""`cortex demo`: the shipped sample session through the real hooks, with and without the model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cortex.plugin import demo
from tests.support.runtime import DEMO_TRANSCRIPT, REPO


def run_demo(*args: str, home: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CORTEX_HOME": str(home), "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "cortex", "demo", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_the_sample_is_a_claude_code_transcript_with_what_the_demo_promises() -> None:
    records = [json.loads(line) for line in DEMO_TRANSCRIPT.read_text(encoding="utf-8").splitlines()]
    kinds = {r["type"] for r in records}
    assert {"user", "assistant", "system", "progress", "file-history-snapshot"} <= kinds
    messages = [r for r in records if r["type"] in ("user", "assistant")]
    assert all(r["uuid"] and r["sessionId"] and r["timestamp"] for r in messages)
    blocks = [
        b for r in messages if isinstance(r["message"]["content"], list) for b in r["message"]["content"]
    ]
    uses = {b["id"] for b in blocks if b.get("type") == "tool_use"}
    results = {b["tool_use_id"] for b in blocks if b.get("type") == "tool_result"}
    assert uses and uses == results  # every call has its result
    text = DEMO_TRANSCRIPT.read_text(encoding="utf-8")
    assert "[MEMORY: decision]" in text and "git commit" in text and "Exit code 1" in text
    assert demo.KEY_PLACEHOLDER in text and "sk-ant-" not in text  # the fake key is filled in at run time
    assert demo.fake_key().startswith("sk-ant-api03-") and len(demo.fake_key()) == 108


def test_demo_keyword_only(tmp_path: Path, cortex_home: Path) -> None:
    done = run_demo("--keyword-only", "--dir", str(tmp_path / "demo"), home=cortex_home, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    assert "secret redacted: yes (0 occurrences in store, briefing, log)" in out
    assert "search:     keyword-only" in out and "_search: keyword-only" in out
    assert "3 Stop hooks + SessionEnd" in out
    assert "in-process token bucket instead of Redis" in out  # a decision, in the rules file
    assert "time.monotonic()" in out  # the gotcha from the failing-then-passing test run
    assert "Committed 3f2a9c1" in out  # the feature commit, an architecture note
    assert "[REDACTED:anthropic]" in out  # what is left of the pasted key
    assert "cortex:briefing part=moment" in out and "<!-- cortex:begin -->" in out
    assert "## cortex recall:" in out
    assert done.stderr == ""
    # It wrote only below its own directory: no store, model or memory in the user's CORTEX_HOME.
    assert {p.name for p in cortex_home.iterdir()} <= {"cortex.log"}
    project = tmp_path / "demo" / "acme-api"
    assert (project / ".memory" / "cortex.db").exists()
    assert "/.claude/rules/cortex-memory.md" in (project / ".git" / "info" / "exclude").read_text()


def test_demo_cleans_up_its_temporary_directory(tmp_path: Path, cortex_home: Path) -> None:
    env_tmp = tmp_path / "tmp"
    env_tmp.mkdir()
    env = {**os.environ, "CORTEX_HOME": str(cortex_home), "PYTHONPATH": str(REPO), "TMPDIR": str(env_tmp)}
    done = subprocess.run(
        [sys.executable, "-m", "cortex", "demo", "--keyword-only"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "secret redacted: yes" in done.stdout
    assert list(env_tmp.iterdir()) == []


@pytest.mark.slow
@pytest.mark.usefixtures("real_model")
def test_demo_with_the_local_model_searches_by_meaning(tmp_path: Path, cortex_home: Path) -> None:
    done = run_demo("--dir", str(tmp_path / "demo"), home=cortex_home, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "search:     hybrid" in done.stdout and "_search: hybrid (keyword + vector)_" in done.stdout
    assert "secret redacted: yes (0 occurrences in store, briefing, log)" in done.stdout
