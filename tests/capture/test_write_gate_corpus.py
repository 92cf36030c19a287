"""The whole redaction corpus through each write path: transcript replay, `remember`, `import`.

For each path: >= 99.5% of the secret plantings are absent from every surface (the store files
with their WAL and keyword index, the queue, the logs, the rules file and briefing caches, the
SessionStart hook's output with and without a cached briefing, exports and recall output), and
of the look-alikes (public by design) <= 2% lose their must-survive substring in the store and
none is merged away: every distinct look-alike is stored as its own memory.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from cortex.app import Cortex
from cortex.briefing import session_start
from cortex.briefing.deliver import refresh_briefing
from cortex.capture.manual import remember
from cortex.cli.main import cli
from cortex.core.model import Candidate, Layer, Memory, MemoryType, Scope, Source, Status
from cortex.core.write.apply import new_memory
from cortex.paths import resolve_paths
from cortex.plugin import worker
from tests.support.redaction_corpus import Planting, SafeSample, safe_samples, secret_plantings
from tests.support.runtime import queue_files, queue_stop, run_hook
from tests.support.transcript_builders import jsonl, prompt_record

pytestmark = pytest.mark.slow

ACCEPTANCE = 0.995  # of secret plantings absent from every surface
MAX_ALTERED = 0.02  # of look-alikes whose must-survive substring changed in the store
SESSION_NOTES = 20  # explicit notes per captured session (a chunk keeps a bounded number)
NOTE = re.compile(r"note (\d+)")
TYPES = ("context", "decision", "gotcha", "pattern")  # moment and stable parts: rules file too


@pytest.fixture(autouse=True)
def quiet_env(monkeypatch: pytest.MonkeyPatch, project: Path) -> None:
    """No model (keyword-only writes); the hooks resolve the test project and install nothing."""
    monkeypatch.setenv("CORTEX_EMBEDDER", "none")
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
    monkeypatch.delenv("CLAUDE_PLUGIN_DATA", raising=False)
    monkeypatch.delenv("CORTEX_PYTHON", raising=False)


def run(project: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["-C", str(project), *args], catch_exceptions=False)


# -- the surfaces --------------------------------------------------------------------------------
@dataclass
class Surfaces:
    """Every place a stored secret could be read back from, by name."""

    files: dict[str, bytes] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)

    def add_files(self, *roots: Path) -> None:
        for root in roots:
            found = [root] if root.is_file() else sorted(root.rglob("*")) if root.is_dir() else []
            for p in found:
                if p.is_file():
                    self.files[str(p)] = p.read_bytes()

    def blobs(self) -> list[bytes]:
        return [*self.files.values(), *(o.encode("utf-8") for o in self.outputs.values())]

    def scanned(self, name: str) -> bool:
        return any(path.endswith(name) for path in self.files)


def _store_surfaces(project: Path, home: Path, into: Surfaces) -> None:
    store = project / ".memory"
    into.add_files(
        store / "cortex.db",
        store / "cortex.db-wal",
        store / "cortex.db-shm",
        store / "queue",
        store / "cortex.log",
        store,  # briefing caches, checkpoints, anything else
        project / ".claude" / "rules" / "cortex-memory.md",
        home,  # the global store, the home log
    )


def _session_start(project: Path, monkeypatch: pytest.MonkeyPatch, into: Surfaces) -> None:
    """The real SessionStart hook, in process: with no cached briefing (rendered inside the hook,
    the whole store allowed), then after the briefing was rendered (the moment part)."""
    shutil.rmtree(project / ".memory" / "briefing", ignore_errors=True)
    monkeypatch.setattr(session_start, "INLINE_MAX_MEMORIES", 1_000_000)
    payload = {
        "session_id": "next",
        "cwd": str(project),
        "hook_event_name": "SessionStart",
        "source": "startup",
    }
    first = run_hook("SessionStart", payload)
    assert json.loads(first)["hookSpecificOutput"]["additionalContext"]  # it did hand over a briefing
    into.outputs["session_start_uncached"] = first
    cx = Cortex(resolve_paths(project))
    try:
        assert refresh_briefing(cx).cache_file is not None
    finally:
        cx.close()
    again = run_hook("SessionStart", payload)
    assert json.loads(again)["hookSpecificOutput"]["additionalContext"]
    into.outputs["session_start_cached"] = again


def _outputs(project: Path, into: Surfaces, query: str) -> None:
    exported = run(project, "export")
    assert exported.exit_code == 0 and '"content"' in exported.output
    into.outputs["export"] = exported.output
    into.outputs["brief"] = run(project, "brief").output
    into.outputs["recall"] = run(project, "recall", query, "--limit", "100").output


def _everywhere(project: Path, home: Path, monkeypatch: pytest.MonkeyPatch, query: str) -> Surfaces:
    found = Surfaces()
    _session_start(project, monkeypatch, found)
    _outputs(project, found, query)
    _store_surfaces(project, home, found)
    assert found.scanned("cortex.db") and found.scanned("cortex.log") and found.scanned("cortex-memory.md")
    return found


def _absent_rate(plantings: Iterable[Planting], blobs: list[bytes]) -> float:
    chosen = list(plantings)
    leaked = {s for s in {p.secret for p in chosen} if any(s.encode() in b for b in blobs)}
    return sum(p.secret not in leaked for p in chosen) / len(chosen)


def _memories(project: Path) -> list[Memory]:
    cx = Cortex(resolve_paths(project))
    try:
        return [m for m in cx.write_store(Scope.PROJECT).all_memories() if m.status is Status.ACTIVE]
    finally:
        cx.close()


def _stored_notes(project: Path) -> set[int]:
    return {int(m.group(1)) for memory in _memories(project) if (m := NOTE.match(memory.content))}


# -- the look-alikes -----------------------------------------------------------------------------
def _distinct_samples() -> list[SafeSample]:
    return list({s.text: s for s in safe_samples()}.values())


def _check_look_alikes(project: Path, samples: list[SafeSample]) -> None:
    """None merged away (one memory per distinct look-alike), <= 2% with a must-survive part changed."""
    contents = [m.content for m in _memories(project)]
    kept = [s for s in samples if any(all(k in c for k in s.keep) for c in contents)]
    altered = [s.text[:60] for s in samples if s not in kept]
    assert len(altered) / len(samples) <= MAX_ALTERED, altered
    assert len(contents) == len(samples), f"{len(samples)} distinct look-alikes, {len(contents)} memories"
    assert len(set(contents)) == len(contents)


# -- write paths ---------------------------------------------------------------------------------
def _old_export(tmp_path: Path, texts: list[str]) -> Path:
    """An export written by an older version, before redaction caught these formats."""
    old = tmp_path / "old"
    (old / ".git").mkdir(parents=True)
    cx = Cortex(resolve_paths(old))
    try:
        store = cx.write_store(Scope.PROJECT)
        with store.transaction():
            for i, text in enumerate(texts):
                cand = Candidate(text, MemoryType(_type(i)), Layer.USER)
                store.insert_memory(
                    new_memory(f"{i:012x}", cand, Scope.PROJECT, Source(), cx.now()), cx.actor, cx.now()
                )
    finally:
        cx.close()
    dump = tmp_path / "old.jsonl"
    assert CliRunner().invoke(cli, ["-C", str(old), "export", "-o", str(dump)]).exit_code == 0
    return dump


def _remember_all(project: Path, texts: list[str], tags: Iterator[tuple[str, ...]] | None = None) -> None:
    """The `remember` use case (what the CLI and /remember call), one context for all notes."""
    cx = Cortex(resolve_paths(project))
    try:
        for i, text in enumerate(texts):
            remember(cx, text, mem_type=_type(i), tags=next(tags) if tags else ())
    finally:
        cx.close()


def _replay_transcripts(project: Path, tmp_path: Path, texts: list[str], last: list[str]) -> None:
    """Transcripts captured as Claude Code does it: the Stop hook queues each session (its last
    message is a planting), the worker drains the queue. The queue is scanned while it is full."""
    for n, start in enumerate(range(0, len(texts), SESSION_NOTES)):
        chunk = texts[start : start + SESSION_NOTES]
        records = [
            prompt_record(f"[MEMORY: {_type(start + i)}] {t}", f"p{start + i}") for i, t in enumerate(chunk)
        ]
        path = tmp_path / f"session-{start}.jsonl"
        path.write_bytes(jsonl(records))
        queue_stop(project, path, session=f"s-{start}", message=last[n % len(last)])
    queued = queue_files(project)
    assert queued and all(q.stat().st_mode & 0o077 == 0 for q in queued)
    blobs = b"".join(q.read_bytes() for q in queued)
    planted = [p for p in secret_plantings() if p.text in last]
    assert not planted or _absent_rate(planted, [blobs]) == 1.0
    report = worker.run(project, lag_wait_s=0.0)
    assert report.batches >= 1 and queue_files(project) == []


def _type(i: int) -> str:
    return TYPES[i % len(TYPES)]


def _planted_notes() -> tuple[list[Planting], list[str]]:
    plantings = list(secret_plantings())
    return plantings, [f"note {i} ({p.way}): {p.text}" for i, p in enumerate(plantings)]


def test_the_whole_corpus_through_import_is_absent_everywhere(
    project: Path, cortex_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plantings, texts = _planted_notes()
    dump = _old_export(tmp_path, texts)
    assert sum(p.secret in dump.read_text() for p in plantings) > len(plantings) / 2  # it does carry them
    assert run(project, "import", str(dump)).exit_code == 0
    assert len(_stored_notes(project)) == len(plantings)
    found = _everywhere(project, cortex_home, monkeypatch, "note")
    assert _absent_rate(plantings, found.blobs()) >= ACCEPTANCE


def test_the_whole_corpus_through_remember_is_absent_everywhere(
    project: Path, cortex_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plantings, texts = _planted_notes()
    tags = (("ops", p.secret) if i % 4 == 0 else ("ops",) for i, p in enumerate(plantings))
    _remember_all(project, texts, tags)
    stored = _stored_notes(project)
    assert len(stored) >= 0.99 * len(plantings)  # the notes were stored, so the check means something
    found = _everywhere(project, cortex_home, monkeypatch, "note")
    assert _absent_rate(plantings, found.blobs()) >= ACCEPTANCE


def test_the_whole_corpus_through_transcript_replay_is_absent_everywhere(
    project: Path, cortex_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plantings, texts = _planted_notes()
    _replay_transcripts(project, tmp_path, texts, [p.text for p in plantings[::8]])
    stored = _stored_notes(project)
    assert len(stored) >= 0.9 * len(plantings)  # the notes were captured, so the check means something
    found = _everywhere(project, cortex_home, monkeypatch, "note")
    assert _absent_rate([plantings[i] for i in sorted(stored)], found.blobs()) >= ACCEPTANCE


def test_look_alikes_through_import_are_kept_and_never_merged(project: Path, tmp_path: Path) -> None:
    samples = _distinct_samples()
    dump = _old_export(tmp_path, [s.text for s in samples])
    assert run(project, "import", str(dump)).exit_code == 0
    _check_look_alikes(project, samples)


def test_look_alikes_through_remember_are_kept_and_never_merged(project: Path) -> None:
    samples = _distinct_samples()
    _remember_all(project, [s.text for s in samples])
    _check_look_alikes(project, samples)


def test_look_alikes_through_transcript_replay_are_kept_and_never_merged(
    project: Path, tmp_path: Path
) -> None:
    samples = _distinct_samples()
    _replay_transcripts(project, tmp_path, [s.text for s in samples], ["done"])
    _check_look_alikes(project, samples)
