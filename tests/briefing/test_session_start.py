"""SessionStart: the moment part when the rules file carries the stable part, else the full briefing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cortex.app import Cortex
from cortex.briefing.deliver import refresh_briefing
from cortex.briefing.session_start import MAX_CONTEXT_CHARS, session_start_output
from cortex.config import Settings
from cortex.core.model import MemoryType
from cortex.paths import Paths
from cortex.shell.briefing_files import BEGIN_MARKER, read_cache
from tests.briefing.test_deliver import NOW, RULES, add, git, make_project

REPO = Path(__file__).resolve().parents[2]
HEAVY = (
    "numpy",
    "torch",
    "sentence_transformers",
    "transformers",
    "onnxruntime",
    "tokenizers",
    "anthropic",
    "voyageai",
    "click",
    "sqlite3",
    "_sqlite3",
    "sqlean",
    "sqlite_vec",
    "flashrank",
    "cortex.app",
    "cortex.store.sqlite.store",
    "cortex.core.briefing.compose",
)


def start(cx: Cortex, source: str = "startup", cwd: Path | None = None) -> str | None:
    payload = {"session_id": "s1", "source": source, "cwd": str(cwd or cx.paths.root)}
    out = session_start_output(payload, {})
    if out is None:
        return None
    assert set(out) == {"hookSpecificOutput"}
    assert out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    text = out["hookSpecificOutput"]["additionalContext"]
    assert isinstance(text, str) and 0 < len(text) <= MAX_CONTEXT_CHARS
    return text


@pytest.fixture
def project(tmp_path: Path) -> Cortex:
    cx = make_project(tmp_path)
    add(cx, "We chose SQLite WAL mode because several sessions write at once")
    add(cx, "Progress: SessionStart reads the cache", MemoryType.PROGRESS, branch="main")
    refresh_briefing(cx)
    return cx


def test_rules_file_with_the_same_digest_gets_the_moment_part_only(project: Cortex) -> None:
    text = start(project)
    assert text is not None
    assert "SessionStart reads the cache" in text
    assert "WAL mode" not in text  # the rules file already carries it
    assert text.startswith("<!-- cortex:briefing part=moment")


def test_first_run_without_rules_file_gets_the_full_briefing(project: Cortex) -> None:
    (project.paths.root / RULES).unlink()
    text = start(project)
    assert text is not None and "WAL mode" in text and "SessionStart reads the cache" in text
    assert text.startswith("<!-- cortex:briefing part=full")


def test_file_channel_off_gets_the_full_briefing(project: Cortex) -> None:
    off = Cortex(project.paths, Settings(briefing_file=False), clock=lambda: NOW)
    refresh_briefing(off)
    assert not (project.paths.root / RULES).exists()
    text = start(project)
    assert text is not None and "WAL mode" in text and "part=full" in text


def test_a_block_the_user_edited_gets_the_full_briefing(project: Cortex) -> None:
    rules = project.paths.root / RULES
    rules.write_text(rules.read_text("utf-8").replace("WAL mode", "WAL-ish mode"), "utf-8")
    text = start(project)
    assert text is not None and "part=full" in text and "We chose SQLite WAL mode" in text


def test_a_block_cortex_wrote_earlier_still_counts_as_carried(project: Cortex) -> None:
    rules = project.paths.root / RULES
    older = rules.read_text("utf-8")
    add(project, "We pin dependencies with hashes")
    refresh_briefing(project)
    rules.write_text(older, "utf-8")  # e.g. a session that started while the file was replaced
    text = start(project)
    assert text is not None and "part=moment" in text


def test_an_empty_moment_adds_nothing(tmp_path: Path) -> None:
    cx = make_project(tmp_path)
    add(cx, "We use WAL mode")
    refresh_briefing(cx)
    assert start(cx) is None
    (cx.paths.root / RULES).unlink()
    assert start(cx) is not None


@pytest.mark.parametrize("source", ["resume", "fork"])
def test_resume_and_fork_add_nothing(project: Cortex, source: str) -> None:
    assert start(project, source) is None
    (project.paths.root / RULES).unlink()
    assert start(project, source) is None


@pytest.mark.parametrize("source", ["startup", "clear", "compact", None])
def test_other_sources_get_the_briefing(project: Cortex, source: str | None) -> None:
    payload = {"cwd": str(project.paths.root)} | ({"source": source} if source else {})
    assert session_start_output(payload, {}) is not None


def test_no_cache_and_no_store_adds_nothing(tmp_path: Path) -> None:
    cx = make_project(tmp_path)
    assert start(cx) is None


def test_a_new_branch_without_cache_is_rendered_at_session_start(project: Cortex) -> None:
    root = project.paths.root
    git(root, "checkout", "-q", "-b", "feat/new")
    text = start(project)  # the rules file carries the stable part: this branch's moment part
    assert text is not None and "part=moment" in text and "on branch feat/new" in text
    assert "WAL mode" not in text
    (root / RULES).unlink()
    text = start(project)
    assert text is not None and "WAL mode" in text and "part=full" in text


def test_head_moved_since_the_render_is_noted(project: Cortex) -> None:
    root = project.paths.root
    old = git(root, "rev-parse", "HEAD")
    git(root, "commit", "-q", "--allow-empty", "-m", "outside claude")
    new = git(root, "rev-parse", "HEAD")
    text = start(project)
    assert text is not None
    assert f"HEAD moved since cortex rendered these notes ({old[:7]} -> {new[:7]})" in text


def test_a_subdirectory_session_uses_the_project_cache(project: Cortex) -> None:
    sub = project.paths.root / "pkg" / "api"
    sub.mkdir(parents=True)
    text = start(project, cwd=sub)
    assert text is not None and "part=moment" in text


def test_a_root_session_uses_a_cache_rendered_for_a_subdirectory(tmp_path: Path) -> None:
    cx = make_project(tmp_path)
    (cx.paths.root / "pkg").mkdir()
    add(cx, "We use WAL mode")
    add(cx, "Progress: pkg work", MemoryType.PROGRESS, branch="main")
    refresh_briefing(cx, cwd=cx.paths.root / "pkg")
    assert read_cache(cx.paths.briefing_dir, "main", "") is None
    text = start(cx)
    assert text is not None and "pkg work" in text and "part=moment" in text


def test_cwd_falls_back_to_the_project_dir_variable(project: Cortex) -> None:
    out = session_start_output({"source": "startup"}, {"CLAUDE_PROJECT_DIR": str(project.paths.root)})
    assert out is not None


def test_a_worktree_reads_its_own_branch(project: Cortex, tmp_path: Path) -> None:
    root = project.paths.root
    wt = tmp_path / "wt"
    git(root, "worktree", "add", "-q", "-b", "feat/wt", str(wt))
    wt_cx = Cortex(Paths(wt, project.paths.home), Settings(), clock=lambda: NOW)
    add(wt_cx, "We use WAL mode in the worktree too")
    add(wt_cx, "Progress: worktree work", MemoryType.PROGRESS, branch="feat/wt")
    refresh_briefing(wt_cx)
    text = start(wt_cx)
    assert text is not None and "worktree work" in text and "part=moment" in text


def test_detached_head_uses_the_cache_keyed_by_sha(project: Cortex) -> None:
    root = project.paths.root
    git(root, "checkout", "-q", "--detach")
    add(project, "Progress: bisecting", MemoryType.PROGRESS)
    refresh_briefing(project)
    sha = git(root, "rev-parse", "HEAD")
    assert read_cache(project.paths.briefing_dir, sha, "") is not None
    text = start(project)
    assert text is not None and "bisecting" in text


def test_total_context_stays_under_the_inline_limit(tmp_path: Path) -> None:
    cx = make_project(tmp_path, settings=Settings(briefing_budget_tokens=100_000, briefing_max_chars=50_000))
    for i in range(300):
        add(cx, f"Decision {i}: " + " ".join(f"word{i}x{j}" for j in range(40)))
        add(cx, f"Progress {i}: " + " ".join(f"step{i}x{j}" for j in range(40)), MemoryType.PROGRESS)
    refresh_briefing(cx)
    git(cx.paths.root, "commit", "-q", "--allow-empty", "-m", "move HEAD")
    moment = start(cx)
    (cx.paths.root / RULES).unlink()
    full = start(cx)
    assert moment is not None and full is not None  # start() checks <= 9,500 characters


def test_malformed_payloads_add_nothing_and_wrongly_typed_caches_read_as_absent(project: Cortex) -> None:
    assert session_start_output([], {}) is None  # type: ignore[arg-type]
    for path in project.paths.briefing_dir.glob("*.json"):
        data = json.loads(path.read_text("utf-8"))
        if "moment" in data:
            path.write_text(json.dumps({**data, "moment": 42, "rendered_at": None}), "utf-8")
    text = start(project)  # rendered from the store, as with no cache: the moment part
    assert text is not None and "part=moment" in text and "SessionStart reads the cache" in text


def test_broken_caches_fail_open_to_a_render_from_the_store(project: Cortex) -> None:
    for path in project.paths.briefing_dir.glob("*.json"):
        path.write_text("{ not json", "utf-8")
    text = start(project)  # no record of the block cortex wrote either: the full briefing
    assert text is not None and "part=full" in text and "WAL mode" in text
    (project.paths.root / RULES).write_text(f"{BEGIN_MARKER}\n\x00\xff binary-ish", "utf-8")
    text = start(project)
    assert text is not None and "part=full" in text


def test_an_unreadable_store_without_cache_adds_nothing(tmp_path: Path) -> None:
    cx = make_project(tmp_path)
    add(cx, "We use WAL mode")
    cx.close()
    cx.paths.project_db.write_bytes(b"not a database at all" * 100)
    assert start(cx) is None


def test_session_start_imports_nothing_heavy(project: Cortex) -> None:
    code = (
        "import json, sys\n"
        "from cortex.briefing.session_start import session_start_output\n"
        "out = session_start_output(json.loads(sys.argv[1]), {})\n"
        f"heavy = [m for m in {HEAVY!r} if m in sys.modules]\n"
        "print(json.dumps({'out': out, 'heavy': heavy}))\n"
    )
    payload = json.dumps({"source": "startup", "cwd": str(project.paths.root)})
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", code, payload], capture_output=True, text=True, check=True, env=env, cwd=REPO
    )
    result = json.loads(done.stdout)
    assert result["heavy"] == []
    assert "SessionStart reads the cache" in result["out"]["hookSpecificOutput"]["additionalContext"]
    assert done.stderr == ""
