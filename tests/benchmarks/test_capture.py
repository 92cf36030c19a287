"""The capture benchmark: the dataset's matching rules, the replay plan, the verdict rule, and
one real session end to end (its report's numbers recomputed from the store file)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.capture import workspace
from benchmarks.capture.cli import main
from benchmarks.capture.dataset import SESSIONS_DIR, list_sessions, read_records
from benchmarks.capture.matching import (
    answers,
    asserts,
    briefing_answers,
    contains_term,
    is_file_list,
    normalize,
    path_like,
)
from benchmarks.capture.probe import read_memories
from benchmarks.capture.replay import follow_branch, keep_stores, restore_stores
from benchmarks.capture.report import fmt
from benchmarks.capture.score import briefing_entries, file_list_stats, score_facts
from benchmarks.capture.transcript import (
    is_user_prompt,
    last_branch,
    path_rewriter,
    plan_cuts,
    rewrite_strings,
)
from benchmarks.capture.verdicts import check_runs, final_states, verdict_of, wrong_verdicts

REPO = Path(__file__).resolve().parents[2]
needs_sessions = pytest.mark.skipif(
    not SESSIONS_DIR.is_dir(), reason=f"the real-session dataset is absent ({SESSIONS_DIR})"
)


# -- the README's matching rules ----------------------------------------------------------------
def test_normalize_lowers_drops_backticks_and_collapses_whitespace() -> None:
    assert normalize("  Use `GH_TOKEN`\n\tnot  the\u00a0DEFAULT ") == "use gh_token not the default"


@pytest.mark.parametrize(
    ("text", "term", "found"),
    [
        ("we prefer squash merges", "pr", False),  # README: `pr` does not match `prefer`
        ("open a PR instead", "pr", True),
        ("commit bun.lock too", "bun", True),  # README: `bun` matches `bun.lock`
        ("merged as PR #387, then", "#387", True),  # README: `#387` matches `PR #387,`
        ("issue #3870", "#387", False),  # a digit touches its alphanumeric end
        ("a#387", "#387", True),  # its start is `#`: a letter may touch it there
        ("ci.yml and sync.yml", "ci.yml", True),
        ("myci.yml", "ci.yml", False),
    ],
)
def test_alternatives_match_as_whole_words(text: str, term: str, found: bool) -> None:
    assert contains_term(normalize(text), normalize(term)) is found


def test_a_text_answers_when_every_group_has_an_alternative() -> None:
    groups = [["GH_TOKEN"], ["secret", "org"]]
    assert answers("Workflows use the org secret `GH_TOKEN`.", groups)
    assert not answers("Workflows use GH_TOKEN.", groups)  # the second group is missing
    assert not answers("an org secret", groups)
    assert not answers("anything", [])


def test_a_briefing_answers_only_within_one_line() -> None:
    groups = [["GH_TOKEN"], ["secret"]]
    assert briefing_answers("header\n- GH_TOKEN is an org secret\nfooter", groups)
    assert not briefing_answers("- uses GH_TOKEN\n- stored as a secret", groups)


def test_a_stale_claim_is_asserted_at_80_percent_of_its_content_tokens() -> None:
    claim = "the .skogai submodule repository doesn't exist"  # skogai submodule repository doesn't exist
    assert asserts("The .skogai submodule repository doesn't exist anymore", claim)
    assert asserts("skogai submodule repository: doesn't exist?", claim)
    # 4 of 5 content tokens (80%) is enough; 3 of 5 is not; stop words never count
    assert asserts("the skogai submodule repository does not exist", claim)
    assert not asserts("the skogai submodule is private", claim)
    assert not asserts("the of to is a", "the of to is a")  # a claim without content tokens


# -- file lists ---------------------------------------------------------------------------------
def test_path_like_words() -> None:
    assert all(path_like(w) for w in ("src/main.rs", "./scripts/", "Cargo.toml", "`main.rs`,", "bun.lock"))
    assert not any(path_like(w) for w in ("1.70", "v0.9.3", "e.g.", "https://x.io/a", "and", "/"))


def test_file_list_progress_entries_are_counted_by_characters() -> None:
    briefing = "\n".join(
        [
            "## cortex memory",
            "- m1 · progress · 2025-01-02 · session abcd",
            "  Edited src/a.rs, src/b.rs, Cargo.toml",
            "- m2 · progress · 2025-01-02",
            "  Switched sqlx to runtime queries because rustc 1.70 is too old",
            "- m3 · gotcha · 2025-01-02",
            "  src/a.rs src/b.rs",
        ]
    )
    entries = briefing_entries(briefing)
    assert [e.type for e in entries] == ["progress", "progress", "gotcha"]
    assert is_file_list(entries[0].text) and not is_file_list(entries[1].text)
    assert is_file_list('Wrote a/b.yml, a/c.yml (request: "check that the workflows all work well")')
    chars, progress, lists = file_list_stats(briefing)
    assert (progress, lists) == (2, 1)
    assert chars == len(briefing.splitlines()[1]) + 1 + len(briefing.splitlines()[2]) + 1


def test_entries_whose_preamble_gives_their_date_and_source_are_read_too() -> None:
    briefing = "\n".join(
        [
            "Notes naming no session: session abcd, 2025-01-02 unless dated.",
            "Pinned:",
            "- m0 · gotcha · pinned",
            "  The queue needs VACUUM",
            "Progress:",
            "- m1",
            "  Edited src/a.rs, src/b.rs, Cargo.toml",
            "- m2 (stale: file gone)",
            "  Switched sqlx to runtime queries",
            "- m3 · 2024-12-30 · session ef01",
            "  Wrote src/c.rs",
        ]
    )
    entries = briefing_entries(briefing)
    assert [e.type for e in entries] == ["gotcha", "progress", "progress", "progress"]
    assert entries[1].text == "Edited src/a.rs, src/b.rs, Cargo.toml"
    assert file_list_stats(briefing)[1:] == (3, 2)


def test_entries_that_leave_their_type_to_the_section_title_are_typed_by_it() -> None:
    briefing = "\n".join(
        [
            "````text",
            "Last session with notes: 2025-01-02, branch main, session abcd, 3 note(s).",
            "Pinned:",
            "- m0 · gotcha · 2025-01-02 · pinned",
            "  src/a.rs src/b.rs",
            "Progress:",
            "- m1 · 2025-01-02 · files src/c.rs",
            "  Edited src/a.rs, src/b.rs, Cargo.toml",
            "- m2 · 2025-01-02",
            "  Switched sqlx to runtime queries: rustc 1.70 is too old",
            "Context:",
            "- m3 · 2025-01-02",
            "  src/a.rs src/b.rs",
            "````",
        ]
    )
    assert [e.type for e in briefing_entries(briefing)] == ["gotcha", "progress", "progress", "context"]
    chars, progress, lists = file_list_stats(briefing)
    assert (progress, lists) == (2, 1)
    assert chars == len(briefing.splitlines()[6]) + 1 + len(briefing.splitlines()[7]) + 1


# -- replay plan --------------------------------------------------------------------------------
def _user(text: object, **extra: object) -> dict[str, object]:
    return {"type": "user", "message": {"role": "user", "content": text}, **extra}


def _assistant(text: str) -> dict[str, object]:
    return {"type": "assistant", "message": {"content": [{"type": "text", "text": text}]}}


def test_cuts_fire_stop_before_each_real_prompt_and_end_the_session() -> None:
    tool_result = [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]
    records = [
        _user("first prompt"),  # 0
        _assistant("one"),  # 1
        _user(tool_result),  # 2: a tool result is no prompt
        _assistant("two"),  # 3
        _user("[Request interrupted by user]"),  # 4
        _user([{"type": "text", "text": "second prompt"}]),  # 5
        _assistant("three"),  # 6
        {"type": "system", "subtype": "compact_boundary"},  # 7
        _user("summary", isCompactSummary=True),  # 8
        _user("<command-name>/model</command-name>"),  # 9
        _user("side", isSidechain=True),  # 10
        _assistant("four"),  # 11
    ]
    assert [is_user_prompt(r) for r in records].count(True) == 2
    cuts = [(c.end, c.event, dict(c.extra)) for c in plan_cuts(records)]
    assert cuts == [
        (5, "Stop", {"last_assistant_message": "two"}),
        (7, "PreCompact", {"trigger": "auto"}),
        (12, "Stop", {"last_assistant_message": "four"}),
        (12, "SessionEnd", {"reason": "other"}),
    ]


def test_the_next_session_starts_on_the_branch_the_session_ended_on(tmp_path: Path) -> None:
    records = [
        _user("first prompt", gitBranch="main"),
        {**_assistant("one"), "gitBranch": "feature/landing"},
        _user("side", isSidechain=True, gitBranch="other"),
        {"type": "summary", "summary": "no branch here"},
    ]
    assert last_branch(records) == "feature/landing"
    assert last_branch(records[:1]) == "main" and last_branch(records[3:]) == ""
    root = tmp_path / "proj"
    root.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-C", str(root)]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "init"], check=True)
    (root / "notes.md").write_text("kept\n", encoding="utf-8")  # the session's files stay

    def head() -> str:
        done = subprocess.run([*git, "rev-parse", "--abbrev-ref", "HEAD"], capture_output=True, text=True)
        return done.stdout.strip()

    for ignored in ("", "HEAD", "bad..name"):
        follow_branch(root, ignored)
        assert head() == "main"
    follow_branch(root, "feature/landing")
    assert head() == "feature/landing" and (root / "notes.md").read_text(encoding="utf-8") == "kept\n"
    follow_branch(root, "main")  # a branch that exists is checked out as well
    assert head() == "main"


def test_a_kept_replay_is_measured_again_from_its_stores_before_the_recalls(tmp_path: Path) -> None:
    db = tmp_path / "project" / "p" / ".memory" / "cortex.db"
    db.parent.mkdir(parents=True)
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE m (id TEXT, access_count INTEGER)")
    conn.execute("INSERT INTO m VALUES ('a', 0)")
    conn.commit()
    conn.close()
    model = tmp_path / "home" / "models" / "x.db"  # the shared model folder is not a store
    model.parent.mkdir(parents=True)
    model.write_bytes(b"model")
    keep_stores(tmp_path)
    conn = sqlite3.connect(db)
    conn.execute("UPDATE m SET access_count = 3")  # what a measurement's recalls do
    conn.execute("INSERT INTO m VALUES ('b', 1)")
    conn.commit()
    conn.close()

    restore_stores(tmp_path)

    conn = sqlite3.connect(db)
    assert conn.execute("SELECT id, access_count FROM m").fetchall() == [("a", 0)]
    conn.close()
    assert not (tmp_path / "pristine" / "home").exists()
    restore_stores(tmp_path)  # again: the same stores
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT count(*) FROM m").fetchone() == (1,)
    conn.close()


def test_reuse_needs_the_folder_of_an_earlier_run() -> None:
    with pytest.raises(SystemExit, match="--work"):
        main(["--reuse", "--out", "/nonexistent/capture.md"])


def test_the_original_directory_is_rewritten_in_every_string() -> None:
    posix = path_rewriter("/home/me/claude", "/tmp/p/claude")
    record = {"cwd": "/home/me/claude/sub", "x": ["cd /home/me/claude && ls", "/home/me/claude-backup"]}
    assert rewrite_strings(record, posix) == {
        "cwd": "/tmp/p/claude/sub",
        "x": ["cd /tmp/p/claude && ls", "/home/me/claude-backup"],
    }
    windows = path_rewriter("C:\\Users\\me\\proj", "/tmp/p/proj")
    assert windows("open C:\\Users\\me\\proj\\src\\main.rs now") == "open /tmp/p/proj/src/main.rs now"
    assert windows("c:/users/me/proj/a.txt") == "/tmp/p/proj/a.txt"


def test_the_project_files_follow_the_sessions_tool_calls(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / ".memory").mkdir(parents=True)

    def call(name: str, **given: object) -> dict[str, object]:
        return {
            "type": "assistant",
            "message": {"content": [{"type": "tool_use", "name": name, "input": given}]},
        }

    records = [
        call("Write", file_path=str(root / "src" / "a.py"), content="x = 1\ny = 2\n"),
        call("Edit", file_path=str(root / "src" / "a.py"), old_string="y = 2", new_string="y = 3"),
        call("Read", file_path=str(root / "docs" / "spec.md")),
        call("Edit", file_path=str(root / "gone.py"), old_string="a", new_string="b"),
        call("Write", file_path=str(root / ".memory" / "cortex.db"), content="no"),
        call("Write", file_path=str(tmp_path / "outside.txt"), content="no"),
    ]
    assert workspace.apply(root, records) == 4
    assert (root / "src" / "a.py").read_text() == "x = 1\ny = 3\n"
    assert (root / "docs" / "spec.md").read_text() == "" and (root / "gone.py").exists()
    assert not (root / ".memory" / "cortex.db").exists() and not (tmp_path / "outside.txt").exists()


@needs_sessions
def test_real_prompts_are_the_ones_meta_counts() -> None:
    for session in list_sessions(SESSIONS_DIR):
        records = read_records(session.transcript)
        assert sum(map(is_user_prompt, records)) == session.meta["user_prompts"], session.name


# -- verdicts -----------------------------------------------------------------------------------
def _bash(tool_id: str, command: str) -> dict[str, object]:
    block = {"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": command}}
    return {"type": "assistant", "message": {"content": [block]}}


def _result(tool_id: str, text: str, error: bool = False) -> dict[str, object]:
    return _user([{"type": "tool_result", "tool_use_id": tool_id, "content": text, "is_error": error}])


def test_a_memory_contradicting_the_last_run_is_a_wrong_verdict() -> None:
    records = [
        _bash("a", "cargo test 2>&1 | tail"),
        _result("a", "test result: FAILED. 3 passed; 2 failed"),
        _bash("b", "cargo test"),
        _result("b", "test result: ok. 5 passed; 0 failed"),
        _bash("c", "npm run build"),
        _result("c", "Command timed out after 2m"),  # no outcome
        _bash("d", "npm run build"),
        _result("d", "Error: exit code 1", error=True),
    ]
    finals = final_states(check_runs(records))
    assert finals == {"cargo test": "passed", "npm run build": "failed"}
    assert verdict_of("All tests pass with 0 failed") == "passed"
    assert verdict_of("`cargo test` failed (error: x); fix: derive Clone") is None  # a gotcha
    assert [(w.key, w.said) for w in wrong_verdicts("m1", "cargo test fails on CI", finals)] == [
        ("cargo test", "failed")
    ]
    assert [(w.key, w.said) for w in wrong_verdicts("m2", "The bun run build succeeds.", finals)] == [
        ("npm run build", "passed")
    ]
    assert wrong_verdicts("m3", "cargo test passes", finals) == []
    assert wrong_verdicts("m4", "npm run build is broken", finals) == []
    assert wrong_verdicts("m5", "the deploy failed", finals) == []  # names no check


# -- one real session end to end ----------------------------------------------------------------
def _active_contents(db: Path) -> list[str]:
    if not db.is_file():
        return []
    conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    try:
        return [row[0] for row in conn.execute("SELECT content FROM memories WHERE status = 'active'")]
    finally:
        conn.close()


@pytest.mark.slow
@needs_sessions
def test_the_report_is_recomputed_from_the_store(tmp_path: Path) -> None:
    session = min(list_sessions(SESSIONS_DIR), key=lambda s: s.transcript.stat().st_size)
    out, work = tmp_path / "capture.md", tmp_path / "work"
    args = ["--only", session.name, "--out", str(out), "--keep", "--work", str(work)]
    assert main(args) == 0
    document = json.loads(out.with_suffix(".summary.json").read_text(encoding="utf-8"))
    row = document["summary"]["per_session"][session.name]
    assert document["meta"]["code_path"] == "cortex/ of the checkout"  # imported from this repo
    assert any("worker" in name for name in document["meta"]["worker_loggers"])

    # Independently of the harness: the store files and facts.json, read here.
    [db] = (work / session.name / "project").glob("*/.memory/cortex.db")
    root, home = db.parents[1], work / session.name / "home"
    contents = _active_contents(db) + _active_contents(home / "cortex-global.db")
    facts = json.loads((session.folder / "facts.json").read_text(encoding="utf-8"))
    captured = [f["id"] for f in facts if any(answers(c, f["answer_terms"]) for c in contents)]
    assert row["memories"] == len(contents) > 0
    assert row["captured"] == pytest.approx(len(captured) / len(facts))
    assert row["facts"] == len(facts)
    lines = [json.loads(ln) for ln in out.with_suffix(".jsonl").read_text(encoding="utf-8").splitlines()]
    assert sorted(ln["fact_id"] for ln in lines if ln["record"] == "fact" and ln["captured"]) == sorted(
        captured
    )
    recalled = [ln for ln in lines if ln["record"] == "fact" and ln["recalled"]]
    assert row["recalled@3"] == pytest.approx(len(recalled) / len(facts))
    [md_row] = [
        ln for ln in out.read_text(encoding="utf-8").splitlines() if ln.startswith(f"| {session.name} (")
    ]
    assert f"| {fmt('captured', row['captured'])} |" in md_row

    # Measured again without replaying (--reuse): the same store, so the same capture; the
    # briefing is rendered anew by this checkout and the report says the replay was reused.
    again = tmp_path / "again.md"
    assert main(["--only", session.name, "--out", str(again), "--work", str(work), "--reuse"]) == 0
    reused = json.loads(again.with_suffix(".summary.json").read_text(encoding="utf-8"))
    assert reused["meta"]["reused"] and "`--reuse`" in again.read_text(encoding="utf-8")
    assert reused["summary"]["per_session"][session.name]["captured"] == row["captured"]
    assert reused["summary"]["per_session"][session.name]["memories"] == row["memories"]
    # From the stores as the replay left them (not as the first run's recalls left them): the
    # same briefing, so the same briefed share.
    assert reused["summary"]["per_session"][session.name]["briefed"] == row["briefed"]

    # Plant the statement of a fact nobody captured: the harness now counts it, and exactly the
    # facts that statement answers, as captured.
    missing = [f for f in session.facts if f.id not in captured and answers(f.fact, f.answer_terms)]
    assert missing, "every fact is captured: nothing left to plant"
    fact = missing[0]
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORTEX_")}
    env.update(CORTEX_HOME=str(home), PYTHONPATH=str(REPO))
    done = subprocess.run(
        [sys.executable, "-m", "cortex", "remember", "--json", "--", fact.fact],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    after = score_facts(session.name, session.facts, read_memories(root, home), {}, "")
    now = sorted(r.fact_id for r in after if r.captured)
    planted = {f.id for f in session.facts if answers(fact.fact, f.answer_terms)}
    assert fact.id in planted
    assert now == sorted(set(captured) | planted)
