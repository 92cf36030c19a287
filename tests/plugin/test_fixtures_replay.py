"""Real Claude Code transcripts, with secrets planted in copies, replayed through Stop + worker."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cortex.core.budget import estimate_tokens
from cortex.paths import STORE_DIR
from cortex.plugin import worker
from cortex.shell.briefing_files import read_latest_cache
from tests.support.runtime import (
    files_under,
    inserts_by_hash,
    memory_count,
    needs_fixtures,
    occurrences,
    queue_stop,
    snapshot,
)
from tests.support.secrets_corpus import SECRETS, SecretSample
from tests.support.transcript_builders import FIXTURES, fixture_files

MAX_BRIEFING_CHARS = 9_500
BUDGET_TOKENS = 1_500
PLANT_EVERY = 3  # after every secret is planted once: records between plantings
FILES = fixture_files()


def _fid(path: Path) -> str:
    return str(path.relative_to(FIXTURES)) if FIXTURES.is_dir() else path.name


def planted_text(sample: SecretSample, form: int) -> str:
    """The secret in a sentence each extraction layer would keep, if redaction let it through."""
    return (
        f"[MEMORY: gotcha] The deploy only worked after we set {sample.text}",
        f"We decided to use {sample.text} for the staging environment.",
        f"Turns out the root cause was {sample.text} leaking into the logs.",
    )[form % 3]


def plant(src: Path, dst: Path) -> list[SecretSample]:
    """Copy a transcript, planting corpus secrets into prompts, replies, commands and tool output."""
    planted: list[SecretSample] = []
    out: list[bytes] = []
    seen = 0
    for raw in src.read_bytes().splitlines(keepends=True):
        try:
            record = json.loads(raw)
        except ValueError:
            out.append(raw)
            continue
        message = record.get("message") if isinstance(record, dict) else None
        if not isinstance(message, dict) or record.get("type") not in ("user", "assistant"):
            out.append(raw)
            continue
        seen += 1
        if len(planted) < len(SECRETS) or seen % PLANT_EVERY == 0:
            sample = SECRETS[len(planted) % len(SECRETS)]
            if _plant_into(message, planted_text(sample, len(planted)), sample.text):
                planted.append(sample)
        out.append(json.dumps(record, ensure_ascii=False).encode("utf-8") + b"\n")
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(b"".join(out))
    return planted


def _plant_into(message: dict[str, Any], sentence: str, raw: str) -> bool:
    content = message.get("content")
    if isinstance(content, str):
        message["content"] = f"{content}\n\n{sentence}"
        return True
    if not isinstance(content, list):
        return False
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            block["text"] = f"{block['text']}\n\n{sentence}"
            return True
        if kind == "tool_use" and isinstance(block.get("input"), dict):
            block["input"]["command"] = f"pytest -q --env '{raw}'"
            block["input"]["description"] = sentence
            return True
        if kind == "tool_result":
            block["content"] = f"Exit code 1\nError: {raw} rejected\n{sentence}"
            block["is_error"] = True
            return True
    return False


def session_of(path: Path) -> str:
    for raw in path.read_bytes().splitlines():
        try:
            record = json.loads(raw)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("sessionId"), str):
            return str(record["sessionId"])
    return path.stem


def _without_cursors(store: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if store is None else {k: v for k, v in store.items() if k != "cursors"}


def replay(project: Path, transcript: Path, session: str) -> worker.WorkerReport:
    queue_stop(project, transcript, session)
    report = worker.run(project, lag_wait_s=0.0)
    assert report.failed == 0
    return report


@pytest.fixture(autouse=True)
def no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CORTEX_EMBEDDER", "none")


@needs_fixtures
def test_there_are_fixtures_to_replay() -> None:
    names = {_fid(p) for p in FILES}
    assert any("subagents" in n for n in names) and len(FILES) >= 8


@needs_fixtures
@pytest.mark.parametrize("source", FILES, ids=_fid)
def test_replaying_a_real_transcript_twice_stores_everything_once_and_no_secret(
    source: Path, project: Path, cortex_home: Path, tmp_path: Path
) -> None:
    transcript = tmp_path / "transcripts" / source.name
    planted = plant(source, transcript)
    session = session_of(transcript)
    first = replay(project, transcript, session)
    db = project / STORE_DIR / "cortex.db"
    stored = snapshot(project, cortex_home)
    count = memory_count(db)
    journal = inserts_by_hash(db) if db.exists() else {}

    again = replay(project, transcript, session)  # the same session: its cursor is at the end
    assert again.actions() == {} and snapshot(project, cortex_home) == stored
    fresh = replay(project, transcript, session + "-replayed")  # a new cursor: everything re-read
    assert "stored" not in fresh.actions()
    assert memory_count(db) == count
    # Nor does it change what is current, nor confirm a note a second time: the same records
    # read again are no news. Only the new cursor is new.
    after = snapshot(project, cortex_home)
    for scope in ("project", "global"):
        assert _without_cursors(after[scope]) == _without_cursors(stored[scope])
    if db.exists():
        assert inserts_by_hash(db) == journal and set(journal.values()) <= {1}

    sidechain = "subagents" in source.parts or source.name.startswith("agent-")
    if sidechain:
        assert count == 0 and first.sessions[0].messages == 0
    elif first.sessions[0].messages:
        assert planted, "nothing planted: the test would prove nothing"

    places = files_under(
        *project.joinpath(STORE_DIR).glob("cortex.db*"),
        *cortex_home.glob("cortex-global.db*"),
        project / ".claude",
        project / STORE_DIR / "briefing",
        *project.joinpath(STORE_DIR).glob("cortex.log*"),
        *cortex_home.glob("cortex.log*"),
    )
    leaked = {s.secret: occurrences(s.secret, places) for s in SECRETS}
    assert not {k: v for k, v in leaked.items() if v}

    cached = read_latest_cache(project / STORE_DIR / "briefing")
    if count:
        assert cached is not None
    if cached is not None:
        for text in (cached.full, cached.stable, cached.moment):
            assert len(text) <= MAX_BRIEFING_CHARS
            assert estimate_tokens(text) <= BUDGET_TOKENS
        rules = project / ".claude" / "rules" / "cortex-memory.md"
        if rules.exists():
            assert len(rules.read_text(encoding="utf-8")) <= MAX_BRIEFING_CHARS + 200


@needs_fixtures
def test_all_transcripts_into_one_project_stay_within_the_briefing_budget(
    project: Path, cortex_home: Path, tmp_path: Path
) -> None:
    for source in FILES:
        transcript = tmp_path / "all" / _fid(source).replace("/", "_")
        plant(source, transcript)
        replay(project, transcript, session_of(transcript) + transcript.name)
    cached = read_latest_cache(project / STORE_DIR / "briefing")
    assert cached is not None and memory_count(project / STORE_DIR / "cortex.db") > 10
    assert len(cached.full) <= MAX_BRIEFING_CHARS and estimate_tokens(cached.full) <= BUDGET_TOKENS
    assert cached.meta["full"]["tokens"] <= BUDGET_TOKENS
