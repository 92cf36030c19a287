"""Layer 2: what tool calls say about progress, tests, commits and fixed failures."""

from __future__ import annotations

from cortex.core.extract.structural import PASSED_TAG, extract_structural, relative_path
from cortex.core.extract.transcript import Message, ToolResult, ToolUse
from cortex.core.model import Candidate, Layer, MemoryType
from tests.support.transcript_builders import assistant, bash, bash_output, tool, user

ROOT = "/home/dev/proj"


def run(*messages: Message) -> list[Candidate]:
    return [c for c, _ in extract_structural(list(messages), project_root=ROOT)]


def turn(prompt: str, *uses: ToolUse, text: str = "") -> tuple[Message, Message]:
    return user(prompt), assistant(*([text] if text else []), uses=uses)


def test_edits_in_a_turn_become_one_progress_memory_with_relative_files() -> None:
    found = run(
        *turn(
            "please refactor the database layer",
            tool("Edit", {"file_path": f"{ROOT}/cortex/shell/db.py"}, tid="1"),
            tool("MultiEdit", {"file_path": f"{ROOT}/cortex/cli.py"}, tid="2"),
            tool("Write", {"file_path": f"{ROOT}/tests/test_db.py"}, tid="3"),
            tool("Edit", {"file_path": f"{ROOT}/cortex/shell/db.py"}, tid="4"),
            tool("Edit", {"file_path": "/etc/hosts"}, tid="5"),  # outside the project
            tool("Edit", {"file_path": f"{ROOT}/broken.py"}, error=True, tid="6"),
            tool("Read", {"file_path": f"{ROOT}/README.md"}, tid="7"),
        )
    )
    (edit,) = found
    assert edit.type is MemoryType.PROGRESS and edit.layer is Layer.STRUCTURAL
    assert edit.content == (
        'Edited cortex/shell/db.py, cortex/cli.py; wrote tests/test_db.py (request: "please '
        'refactor the database layer")'
    )
    assert edit.files == ("cortex/shell/db.py", "cortex/cli.py", "tests/test_db.py")
    assert 0.5 <= edit.confidence <= 0.6 and edit.priority in (3, 4)
    assert edit.tags == ("edits",)  # the briefing shows only the latest few of these


def test_an_edit_note_quotes_what_a_request_asks_past_its_opening_line() -> None:
    # Real shape: the prompt's first line only opens it ("Couple of things here:").
    prompt = "Couple of things here:\n\n1. I only need prompt injection\n2. Keep the timeouts"
    (edit,) = run(*turn(prompt, tool("Edit", {"file_path": f"{ROOT}/config/scanners.yml"}, tid="1")))
    assert edit.content == (
        'Edited config/scanners.yml (request: "Couple of things here: 1. I only need prompt injection")'
    )


def test_many_files_are_summarised() -> None:
    uses = [tool("Edit", {"file_path": f"{ROOT}/f{i}.py"}, tid=str(i)) for i in range(12)]
    (edit,) = run(*turn("go", *uses))
    assert edit.content.endswith("and 7 more")
    assert len(edit.files) == 12


def test_a_note_names_a_few_files_once_and_keeps_them_all() -> None:
    # Real shape (a web UI added in one turn): four files edited, three written, one of them
    # edited again after it was written.
    edited = ["src/api/handlers.rs", "src/api/mod.rs", ".gitignore", "README.md", "static/index.html"]
    written = ["static/index.html", "static/styles.css", "static/app.js"]
    uses = [tool("Edit", {"file_path": f"{ROOT}/{p}"}, tid=f"e{i}") for i, p in enumerate(edited)]
    uses += [tool("Write", {"file_path": f"{ROOT}/{p}"}, tid=f"w{i}") for i, p in enumerate(written)]
    (edit,) = run(*turn("Add a simple web UI that shows stats about the repository", *uses))
    assert edit.content.startswith(
        "Edited src/api/handlers.rs, src/api/mod.rs, .gitignore, README.md; wrote static/index.html "
        "and 2 more"
    )
    assert set(edit.files) == {*edited, *written}


def test_test_runs_report_the_last_outcome_with_the_summary_line() -> None:
    failing = bash("pytest tests/test_x.py", "E   AssertionError\n1 failed, 3 passed", error=True, tid="1")
    passing = bash("pytest tests/test_x.py", "4 passed in 0.2s", tid="2")
    (only_last,) = run(*turn("fix it", failing, passing))
    assert only_last.content == "Tests passed: `pytest tests/test_x.py` (4 passed in 0.2s)"
    (failed,) = run(*turn("fix it", passing, failing))
    assert failed.content == "Tests failing: `pytest tests/test_x.py` (1 failed, 3 passed)"
    assert failed.priority > only_last.priority


# Real shape (vitest under 1.0.x): the suite run for its summary, then again for the names of
# the failing tests, nothing changed in between.
VITEST_TAIL = (
    " Test Files  4 failed | 49 passed | 9 skipped (62)\n"
    "      Tests  16 failed | 690 passed | 28 skipped (734)\n"
    "   Duration  4.59s (transform 2.38s, setup 957ms)"
)
VITEST_FAILS = (
    " FAIL  test/config/deal-defaults.test.ts > Deal Defaults > applies the stage\n"
    " FAIL  test/utils/error-sanitizer.test.ts > Error Sanitizer > should remove IP addresses"
)


def test_a_second_look_at_the_same_run_keeps_the_counts_of_the_first() -> None:
    summary = bash("npm run test:offline 2>&1 | tail -20", VITEST_TAIL, tid="1")
    names = bash('npm run test:offline 2>&1 | grep "FAIL" | head -10', VITEST_FAILS, tid="2")
    (verdict,) = run(*turn("is this tested?", summary, names))
    assert verdict.content == (
        "Tests failing: `npm run test:offline` (Tests 16 failed | 690 passed | 28 skipped (734); "
        "FAIL test/utils/error-sanitizer.test.ts > Error Sanitizer > should remove IP addresses)"
    )
    # A look that reads something in between changes nothing.
    peek = bash("cat test/utils/error-sanitizer.test.ts", "describe('Error Sanitizer', () => {", tid="p")
    (same,) = run(*turn("is this tested?", summary, peek, names))
    assert same.content == verdict.content


def test_counts_from_before_a_change_are_not_carried_over() -> None:
    summary = bash("npm run test:offline 2>&1 | tail -20", VITEST_TAIL, tid="1")
    names = bash('npm run test:offline 2>&1 | grep "FAIL" | head -10', VITEST_FAILS, tid="2")
    fails = "Tests failing: `npm run test:offline` (FAIL test/utils/error-sanitizer.test.ts > "
    for change in (
        tool("Edit", {"file_path": f"{ROOT}/src/utils/error-sanitizer.ts"}, tid="e"),
        bash("sed -i 's/ip/IP/' src/utils/error-sanitizer.ts", tid="s"),
    ):
        (verdict,) = [c for c in run(*turn("fix them", summary, change, names)) if "Tests" in c.content]
        assert verdict.content.startswith(fails), change.name
    # Nor across verdicts: a passing look after a failing one is the state, with its own line.
    passed = bash("npm run test:offline 2>&1 | tail -3", "      Tests  734 passed (734)", tid="3")
    (verdict,) = run(*turn("again", summary, passed))
    assert verdict.content == "Tests passed: `npm run test:offline` (Tests 734 passed (734))"


def test_piped_test_output_is_judged_by_its_summary_not_the_exit_code() -> None:
    # `| tail` exits 0 whatever the tests did.
    run_ = bash(
        "mix test --seed 0 2>&1 | tail -5",
        "Finished in 2.0s\n14 doctests, 297 tests, 11 failures",
        tid="1",
    )
    (found,) = run(*turn("run the tests", run_))
    assert found.content == "Tests failing: `mix test --seed 0` (14 doctests, 297 tests, 11 failures)"
    ok = bash("npm test", "Tests: 12 passed, 12 total", tid="2")
    (passed,) = run(*turn("run the tests", ok))
    assert passed.content.startswith("Tests passed: `npm test`")


def test_commits_use_git_output_then_the_message() -> None:
    from_output = bash(
        "git add -A && git commit -m 'feat: x'",
        "[main 12e2d10] feat: add OTEL dependencies\n 8 files changed",
        tid="1",
    )
    heredoc = bash(
        "git add cortex/a.py cortex/b.py && "
        "git commit -m \"$(cat <<'EOF'\nfix: retry on busy\n\nBody\nEOF\n)\"",
        "",
        tid="2",
    )
    rejected = bash("git commit -m 'nope'", "pre-commit failed", error=True, tid="3")
    found = run(*turn("commit", from_output, heredoc, rejected))
    assert [c.content for c in found] == [
        "Committed 12e2d10: feat: add OTEL dependencies",
        "Committed: fix: retry on busy (Body)",  # the message body says why
    ]
    assert found[1].files == ("cortex/a.py", "cortex/b.py")


def test_a_revert_is_a_commit_only_as_its_output_shows_it() -> None:
    subject = "Retry upstream calls with exponential backoff"
    reverted = bash(
        "git revert --no-edit HEAD", f'[main 5c4b3a2] Revert "{subject}"\n 1 file changed', tid="1"
    )
    staged = bash("git revert --no-commit HEAD~2", "", tid="2")  # nothing committed yet
    # A merge's revert names its parent with `-m 1`: no message, and here a conflict.
    clash = bash("git revert -m 1 abc1234", "error: could not revert abc1234... Merge x", error=True, tid="3")
    (found,) = run(*turn("that charges twice, revert it", reverted, staged, clash))
    assert found.content == f'Committed 5c4b3a2: Revert "{subject}"'
    assert found.type is MemoryType.DECISION  # a change of course, as "switch from X to Y" is


def test_a_commit_is_typed_by_what_it_records() -> None:
    # Real subjects (shortened): a fix records a problem and its cure, "switch from X to Y" a
    # decision, a feature what the code now has; documentation and the rest are progress.
    subjects = {
        "fix(tui): macOS image paste on non-English locales": MemoryType.GOTCHA,
        "feat: switch launcher from Hermes to jcode": MemoryType.DECISION,
        "feat: Migrate from npm to Bun": MemoryType.DECISION,
        "feat: Add GitHub Actions workflows for CI, sync, and backup": MemoryType.ARCHITECTURE,
        "Feature: Developer workflow documentation and automation #271": MemoryType.ARCHITECTURE,
        "Add acquisitions UI, POLOE app switcher, and bug fixes": MemoryType.ARCHITECTURE,
        "docs(memory): adopt jcode for local gemma4 lane": MemoryType.PROGRESS,
        "i18n: translate user-facing strings to English": MemoryType.PROGRESS,
        "Address review comments": MemoryType.PROGRESS,
    }
    for i, (subject, kind) in enumerate(subjects.items()):
        commit = bash(
            f"git commit -m '{subject}'", f"[main abc12{i}d] {subject}\n 1 file changed", tid=str(i)
        )
        (found,) = run(*turn("commit it", commit))
        assert (found.type, found.content) == (kind, f"Committed abc12{i}d: {subject}"), subject


def test_explained_fix_of_a_failing_command_is_a_gotcha() -> None:
    messages = [
        user("run the script"),
        assistant(
            uses=(
                bash(
                    "python gen.py",
                    "Exit code 127\n/bin/bash: python: command not found",
                    error=True,
                    tid="1",
                ),
            )
        ),
        assistant("The failure is because this image only ships `python3`, not `python`."),
        assistant(uses=(bash("python3 gen.py", "Sum: 307", tid="2"),)),
    ]
    (gotcha,) = [c for c in run(*messages) if c.type is MemoryType.GOTCHA]
    assert gotcha.content == (
        "`python gen.py` failed (/bin/bash: python: command not found); cause: The failure is "
        "because this image only ships `python3`, not `python`; fixed"
    )


def test_a_retried_fix_without_an_explanation_is_what_was_changed_and_run() -> None:
    messages = [
        user("commit"),
        assistant(uses=(bash("git commit -m 'x'", "[FORMAT] Code is not formatted.", error=True, tid="1"),)),
        assistant("Let me format the code:", uses=(bash("mix format", "", tid="2"),)),
        assistant(uses=(bash("git commit -m 'x'", "[main abc1234] x", tid="3"),)),
    ]
    (gotcha,) = [c for c in run(*messages) if c.type is MemoryType.GOTCHA]
    assert gotcha.content == (
        "`git commit -m 'x'` failed ([FORMAT] Code is not formatted.); "
        "fix: format the code (ran `mix format`)"
    )


def test_a_request_to_the_user_is_not_what_was_changed() -> None:
    # "Let me know ..." and a question hand the turn to the user: the fix is what was run.
    failing = bash("npm run build", "Error: Cannot find module 'left-pad'", error=True, tid="1")
    for words in ("Let me know if you want me to pin the version?", "Let me know which registry you use."):
        messages = [
            user("build it"),
            assistant(uses=(failing,)),
            assistant(words, uses=(bash("npm install left-pad", "added 1 package", tid="2"),)),
            assistant(uses=(bash("npm run build", "Build complete", tid="3"),)),
        ]
        (gotcha,) = [c for c in run(*messages) if c.type is MemoryType.GOTCHA]
        assert gotcha.content.endswith("fix: ran `npm install left-pad`"), words


def test_a_retry_after_only_looking_is_no_gotcha() -> None:
    messages = [
        user("commit"),
        assistant(uses=(bash("git commit -m 'x'", "[FORMAT] Code is not formatted.", error=True, tid="1"),)),
        assistant("Let me check the logs:", uses=(bash("cat build.log", "ok", tid="2"),)),
        assistant(uses=(bash("git commit -m 'x'", "[main abc1234] x", tid="3"),)),
    ]
    assert not [c for c in run(*messages) if c.type is MemoryType.GOTCHA]


def test_a_url_the_shell_refused_then_quoted_is_a_gotcha() -> None:
    # Real shape (zsh, Claude Code 1.0.77): the pipe's exit status hid the shell's refusal.
    refused = bash(
        "curl -s http://localhost:3000/api/media?page=1&limit=5 | python3 -m json.tool | head -20",
        "(eval):1: no matches found: http://localhost:3000/api/media?page=1\nExpecting value: line 1",
        tid="1",
    )
    quoted = bash(
        'curl -s "http://localhost:3000/api/media?page=1&limit=5" | python3 -m json.tool', "{}", tid="2"
    )
    messages = [
        user("list the media"),
        assistant(uses=(refused,)),
        assistant("Let's escape the URL properly:", uses=(quoted,)),
    ]
    (gotcha,) = [c for c in run(*messages) if c.type is MemoryType.GOTCHA]
    assert "no matches found" in gotcha.content and gotcha.content.endswith("fix: escape the URL properly")


def test_a_background_command_fails_where_bash_output_reports_it() -> None:
    # Real shape (Claude Code 1.0.72): the launch has no outcome; BashOutput reports the failure.
    launch = bash("make run-uvicorn", "Command running in background with ID: bash_2", tid="1")
    stderr = (
        "A module that was compiled using NumPy 1.x cannot be run in NumPy 2.0.2\n"
        "ImportError: numpy.core.multiarray failed to import"
    )
    report = bash_output("2", "bash_2", "failed", 2, stderr)
    messages = [
        user("run the server"),
        assistant(uses=(launch,)),
        assistant(uses=(report,)),
        assistant(
            "There's a NumPy version incompatibility issue. "
            "We need to downgrade NumPy to version 1.x to fix this:",
            uses=(bash('pip install "numpy<2" --upgrade', "Successfully installed numpy-1.26.4", tid="3"),),
        ),
    ]
    (gotcha,) = [c for c in run(*messages) if c.type is MemoryType.GOTCHA]
    assert gotcha.content.startswith("`make run-uvicorn` failed (A module that was compiled using NumPy 1.x")
    assert gotcha.content.endswith(
        'fix: downgrade NumPy to version 1.x to fix this (ran `pip install "numpy<2" --upgrade`)'
    )
    # A launch alone is no success: the same failure is not taken as fixed by it.
    assert not any("Command failing" in c.content for c in run(*messages))


def test_a_failure_fixed_by_setting_a_variable_for_the_command_is_a_gotcha_with_that_fix() -> None:
    # The retry differs only in a variable set for it: that is the fix, and the failure is over.
    failed = bash(
        "pnpm run migrate", "Error: DATABASE_URL is not set\n    at loadConfig", error=True, tid="1"
    )
    retried = bash(
        "DATABASE_URL=postgres://localhost:5433/app pnpm run migrate", "Applied 3 migrations", tid="2"
    )
    messages = [
        user("run the migrations"),
        assistant(uses=(failed,)),
        assistant("Local dev uses the compose database.", uses=(retried,)),
    ]
    found = run(*messages)
    assert not any("Command failing" in c.content for c in found)
    (gotcha,) = [c for c in found if c.type is MemoryType.GOTCHA]
    assert gotcha.content == (
        "`pnpm run migrate` failed (Error: DATABASE_URL is not set); "
        "fix: ran `DATABASE_URL=postgres://localhost:5433/app pnpm run migrate`"
    )
    # The same variables both times: the retry is not what fixed it.
    again = bash("CI=1 pnpm build", "Compiled successfully", tid="4")
    flaky = bash("CI=1 pnpm build", "Error: ENOSPC: no space left on device", error=True, tid="3")
    found = run(user("build it"), assistant(uses=(flaky,)), assistant(uses=(again,)))
    assert not [c for c in found if c.type is MemoryType.GOTCHA]
    assert any(
        c.content == "`CI=1 pnpm build` succeeds" and "state:command:pnpm build" in c.tags for c in found
    )


def test_failure_fixed_by_another_command_is_a_gotcha_when_explained() -> None:
    messages = [
        user("restart the server"),
        assistant(
            uses=(
                bash(
                    "uvicorn app:app --port 3000",
                    "Error: Address already in use (os error 48)",
                    error=True,
                    tid="1",
                ),
            )
        ),
        assistant("Port 3000 is taken because an earlier server process is still running."),
        assistant(uses=(bash("pkill medianator", "", tid="2"),)),
    ]
    (gotcha,) = [c for c in run(*messages) if c.type is MemoryType.GOTCHA]
    assert gotcha.content == (
        "`uvicorn app:app --port 3000` failed (Error: Address already in use (os error 48)); "
        "cause: Port 3000 is taken because an earlier server process is still running. "
        "(ran `pkill medianator`)"
    )


def test_a_state_named_in_a_few_words_is_the_cause_and_the_next_sentence_its_fix() -> None:
    # Real shapes (a Rust build, a Convex seed): five words name what is wrong, and the next
    # sentence says what the assistant changes. "The issue is complex." names nothing.
    fails = "error: error returned from database: (code: 14) unable to open database file"
    build = 'DATABASE_URL="sqlite://app.db" cargo build --release'
    failing = bash(build, fails, error=True, tid="1")
    said = {
        # What the next sentence sets out to change is the fix, for a command then made it.
        "The database file doesn't exist. Let me create it with sqlx-cli and run the migrations:": (
            "cause: The database file doesn't exist; fix: create it with sqlx-cli and run the migrations"
        ),
        "The mutation requires authentication.": "cause: The mutation requires authentication",
        "Port 3000 is in use.": "cause: Port 3000 is in use",
    }
    for words, why in said.items():
        (gotcha,) = _gotchas_after(failing, words, "sqlx database create")
        assert gotcha.endswith(f"{why} (ran `sqlx database create`)"), words
    for vague in ("The issue is complex.", "Hmm, nothing found.", "This requires more investigation."):
        assert _gotchas_after(failing, vague, "sqlx database create") == [], vague
    assert _gotchas_after(failing, "Something is missing here.", "sqlx database create") == []


def test_beside_a_cause_the_fix_is_looked_for_in_the_words_that_gave_it() -> None:
    # Real shape (a Rust session): "Let's create it:" says too little to be a fix, and the next
    # message's "use the offline mode instead" was tried on another failure, not this one.
    failing = bash(
        'DATABASE_URL="sqlite://app.db" cargo build --release 2>&1 | grep "^error"',
        "error: error returned from database: (code: 14) unable to open database file",
        tid="1",
    )
    messages = [
        user("build it"),
        assistant(uses=(failing,)),
        assistant("The database file doesn't exist. Let's create it:"),
        assistant(
            uses=(
                bash(
                    "touch app.db && cargo build --release 2>&1 | tail -1",
                    "error: could not compile",
                    tid="2",
                ),
            )
        ),
        assistant(
            "The SQLx check still fails. Let's use the offline mode instead by disabling compile-time "
            "checking:"
        ),
        assistant(uses=(bash("sqlx database create", "", tid="3"),)),
    ]
    gotchas = [c.content for c in run(*messages) if c.type is MemoryType.GOTCHA and "code: 14" in c.content]
    assert len(gotchas) == 1 and "cause: The database file doesn't exist (ran `touch app.db" in gotchas[0]
    assert "offline mode" not in gotchas[0]


def _gotchas_after(failing: ToolUse, words: str, fix: str, fix_output: str = "") -> list[str]:
    """The gotchas of a turn: a failing call, the assistant's words, then a command that ran."""
    messages = [
        user("go on"),
        assistant(uses=(failing,)),
        assistant(words),
        assistant(uses=(bash(fix, fix_output, tid="2"),)),
    ]
    return [c.content for c in run(*messages) if c.type is MemoryType.GOTCHA]


def test_a_why_is_labelled_as_the_cause_or_the_fix_it_states() -> None:
    # Real shapes (a nix flake, a Next.js build): "The issue is ..." names what went wrong, "I
    # need to ..." what had to change. Both used to read "fix: ...", so a cause passed for a fix.
    check = "nix flake check --cores 4"
    failing = bash(check, "error: invalid SRI hash 'abc'", error=True, tid="1")
    said = {
        # The narration around the why goes: "The issue is that", "I need to".
        "The issue is that the hash format needs to be SRI format.": "cause: the hash format needs "
        "to be SRI format; fixed",
        "I see the problem - the build reads a base32 hash.": "cause: the build reads a base32 hash; fixed",
        "The workflow names are showing as file paths instead of the proper names.": "cause: The "
        "workflow names are showing as file paths instead of the proper names; fixed",
        "I need to fix the test to not use impure paths.": "fix: fix the test to not use impure paths.",
        "First we need to pin numpy below 2 for the scanner.": "fix: pin numpy below 2 for the scanner",
        # What the assistant sets out to do instead is the fix, not the cause (a real Rust session).
        "Let's use the offline mode instead by disabling compile-time checking:": "fix: use the offline "
        "mode instead by disabling compile-time checking",
        # Too little left without it: the sentence stays whole.
        "The problem here was that it broke.": "cause: The problem here was that it broke; fixed",
        "The config needs to have at least an empty list for output_scanners.": "fix: The config "
        "needs to have at least an empty list for output_scanners.",
    }
    for words, tail in said.items():
        (gotcha,) = _gotchas_after(failing, words, check, "all checks passed!")
        assert gotcha == f"`{check}` failed (error: invalid SRI hash 'abc'); {tail}", gotcha
    # A failure not seen fixed names its cause and what ran after it, and claims no fix.
    port = bash("./target/release/app", "Error: Address already in use (os error 48)", error=True, tid="1")
    (gotcha,) = _gotchas_after(port, "Port 3000 is still in use by the old server.", "kill -9 4242")
    assert gotcha.endswith("; cause: Port 3000 is still in use by the old server. (ran `kill -9 4242`)")
    assert "fixed" not in gotcha


def test_a_cause_keeps_the_fix_said_with_it_and_no_later_intention() -> None:
    # "X, so Y" says why; "I'll ..." in the same words says what changed. A later "Let me ..."
    # may be about anything (real shape: restoring another file before the rerun).
    test = "npx vitest run src/date.test.ts"
    failing = bash(test, "AssertionError: expected '2024-03-09' to be '2024-03-10'", error=True, tid="1")
    words = (
        "The relative dates are computed in UTC, so near midnight they land on the previous day. "
        "I'll parse them in local time instead."
    )
    (gotcha,) = _gotchas_after(failing, words, test, "Tests  12 passed (12)")
    assert gotcha.endswith(
        "; cause: The relative dates are computed in UTC, so near midnight they land on the previous "
        "day; fix: parse them in local time instead"
    ), gotcha
    messages = [
        user("go on"),
        assistant(uses=(failing,)),
        assistant("The relative dates are computed in UTC, so near midnight they land on the previous day."),
        assistant("Let me restore the full version of the flake first:"),
        assistant(uses=(bash(test, "Tests  12 passed (12)", tid="2"),)),
    ]
    (gotcha,) = [c.content for c in run(*messages) if c.type is MemoryType.GOTCHA]
    assert gotcha.endswith("on the previous day; fixed"), gotcha


def test_a_why_that_goes_on_to_what_the_assistant_does_is_the_cause_and_the_fix() -> None:
    # Real shape (a Rust server's port): "Port is still in use, let's find and kill the
    # process:" was stored whole as the cause, the assistant's next step with it.
    port = bash("./target/release/app", "Error: Address already in use (os error 48)", error=True, tid="1")
    words = "Port is still in use, let's find and kill the process:"
    (gotcha,) = _gotchas_after(port, words, "kill -9 78778")
    assert gotcha.endswith("; cause: Port is still in use; fix: kill the process (ran `kill -9 78778`)"), (
        gotcha
    )
    # Seen fixed: the fix said is the fix, not "fixed" after it nor a later intention.
    check = "nix flake check --cores 4"
    failing = bash(check, "error: Path 'flake.nix' is not tracked by Git.", error=True, tid="1")
    words = "The flake.nix file is missing from the Git index - I'll add it before checking again."
    (gotcha,) = _gotchas_after(failing, words, check, "all checks passed!")
    assert gotcha.endswith(
        "; cause: The flake.nix file is missing from the Git index; fix: add it before checking again"
    ), gotcha
    # Going on to look changes nothing: the cause alone stays.
    words = "The issue is with the shell directory change, let me check the logs."
    (gotcha,) = _gotchas_after(port, words, "kill -9 78778")
    assert "cause: The issue is with the shell directory change (ran" in gotcha, gotcha


def test_a_diagnosis_after_a_failure_explains_it() -> None:
    # Real shapes: "failing due to" (a nix VM test's lint) and "still in use" (a server's port).
    lint = bash(
        "nix flake check --cores 4",
        "error: Cannot build 'test-driver.drv'.\n> test-script:1:1: 'json' imported but unused",
        error=True,
        tid="1",
    )
    words = "The build is failing due to unused imports in the test script. Let me fix it:"
    (gotcha,) = _gotchas_after(lint, words, "nix flake check --cores 4", "all checks passed")
    assert "'json' imported but unused" in gotcha
    assert gotcha.endswith("cause: The build is failing due to unused imports in the test script; fixed")
    port = bash("./target/release/app", "Error: Address already in use (os error 48)", error=True, tid="1")
    words = "Port is still in use, let's find and kill the process:"
    (gotcha,) = _gotchas_after(port, words, "kill -9 78778")
    assert "Address already in use" in gotcha and "(ran `kill -9 78778`)" in gotcha
    check = bash("actionlint", "zsh: command not found: actionlint", error=True, tid="1")
    words = "actionlint isn't installed on this machine, so the workflows were never linted."
    (gotcha,) = _gotchas_after(check, words, "brew install actionlint")
    assert "actionlint isn't installed on this machine" in gotcha


def test_a_fix_command_is_one_that_changes_something_in_any_step_or_by_writing_a_file() -> None:
    port = bash("./target/release/app", "Error: Address already in use (os error 48)", error=True, tid="1")
    words = "Port 3000 is still in use by the old server."
    for fix in ("lsof -ti :3000 | xargs kill -9", "echo 'PORT=3001' >> .env", "git stash && docker stop api"):
        (gotcha,) = _gotchas_after(port, words, fix)
        assert gotcha.endswith(f"(ran `{fix}`)"), gotcha
    # Looking, whatever it pipes through or quotes, changes nothing; nor does a tool's reading
    # subcommand (a real gotcha listed `git status` and `gh workflow list` as its fix).
    looks = (
        "git status",
        "git -C api log --oneline | head",
        "gh workflow list",
        "docker ps -a",
        "npm ls zod",
    )
    for look in ("lsof -i :3000 | grep LISTEN", 'echo "a > b" 2>/dev/null', "ps aux > /dev/null", *looks):
        (gotcha,) = _gotchas_after(port, words, look)
        assert "(ran" not in gotcha, gotcha
    # Recording the work is no fix; a command of several lines is shown cut, not as a whole.
    (gotcha,) = _gotchas_after(port, words, 'git add -A && git commit -m "wip: server"')
    assert "(ran" not in gotcha, gotcha
    (gotcha,) = _gotchas_after(port, words, "bash -c '\nfuser -k 3000/tcp\n'")
    assert gotcha.endswith("(ran `bash -c ' …`)"), gotcha


def test_a_command_that_only_put_files_back_is_no_fix_when_the_why_is_known() -> None:
    # Real shape (Claude Code 1.0.x): a script failed, the assistant said why and edited the
    # script, then restored the file the failed run had half-rewritten. A next session that took
    # `git checkout flake.nix` for the fix would lose its own uncommitted work.
    failing = bash(
        "./update.sh", "sed: -e expression #1, char 84: unterminated `s' command", error=True, tid="1"
    )
    words = "I see the issue - the print_status function is being called inside command substitution."
    (gotcha,) = _gotchas_after(failing, words, "git checkout flake.nix", "Updated 1 path from the index")
    assert gotcha == (
        "`./update.sh` failed (sed: -e expression #1, char 84: unterminated `s' command); "
        "cause: the print_status function is being called inside command substitution."
    )
    # With other commands, those are listed and the restore is not.
    messages = [
        user("go on"),
        assistant(uses=(failing,)),
        assistant(words, uses=(bash("git checkout flake.nix", "", tid="2"),)),
        assistant(uses=(bash("chmod +x update.sh", "", tid="3"),)),
    ]
    (gotcha,) = [c.content for c in run(*messages) if c.type is MemoryType.GOTCHA]
    assert gotcha.endswith("(ran `chmod +x update.sh`)"), gotcha
    # Without a why, putting a file back may be all the fix there was: it is kept.
    lock = bash(
        "npm ci", "npm ERR! Invalid: lock file's zod@3.22.0 does not satisfy zod@3.23.8", error=True, tid="1"
    )
    messages = [
        user("install"),
        assistant(uses=(lock,)),
        assistant(
            "Let me restore the committed lock file:",
            uses=(bash("git checkout package-lock.json", "", tid="2"),),
        ),
        assistant(uses=(bash("npm ci", "added 312 packages", tid="3"),)),
    ]
    (gotcha,) = [c.content for c in run(*messages) if c.type is MemoryType.GOTCHA]
    assert gotcha.endswith("fix: restore the committed lock file (ran `git checkout package-lock.json`)"), (
        gotcha
    )


def test_a_rerun_whose_output_still_fails_is_no_fix() -> None:
    failed = "FAILED tests/test_a.py::test_x - KeyError: 'name'\n1 failed, 2 passed"
    failing = bash("pytest -q", failed, error=True, tid="1")
    words = "The test fails because the fixture no longer sets the name key; adding it back."
    rerun = "pytest -q 2>&1 | tail -2"
    # `| tail` hid the exit status, the output did not hide the failure: nothing was fixed yet.
    assert _gotchas_after(failing, words, rerun, failed) == []
    assert _gotchas_after(failing, words, rerun, "") == []  # no evidence either way is no fix
    [fixed] = _gotchas_after(failing, words, rerun, "3 passed in 0.1s")
    assert fixed.startswith("`pytest -q` failed (") and "; cause: The test fails because" in fixed


def test_what_the_assistant_changes_is_read_past_the_looking_or_fixing_that_leads_in() -> None:
    failing = bash("make serve", "Error: Address already in use", error=True, tid="1")
    for words, change in (
        ("Let me find and kill the stale server process:", "kill the stale server process"),
        ("Let me fix the launcher by freeing port 3000 first:", "freeing port 3000 first"),
    ):
        (gotcha,) = _gotchas_after(failing, words, "kill -9 4242")
        assert f"; fix: {change} (ran `kill -9 4242`)" in gotcha, gotcha
    # Looking alone is still no change.
    assert _gotchas_after(failing, "Let me check what is running on the port:", "kill -9 4242") == []


def test_unexplained_failure_fixed_by_another_command_is_not_stored() -> None:
    messages = [
        user("restart the server"),
        assistant(
            uses=(
                bash("uvicorn app:app", "Error: Address already in use (os error 48)", error=True, tid="1"),
            )
        ),
        assistant("Let me try again.", uses=(bash("pkill medianator", "", tid="2"),)),
    ]
    assert [c for c in run(*messages) if c.type is MemoryType.GOTCHA] == []


def test_narration_and_guesses_after_a_failure_are_no_explanation() -> None:
    # Real shape: a module build fails, and the assistant's next words are a plan and a guess.
    failing = bash(
        "nix build --cores 4 --max-jobs 4 .#nixosModules.default",
        "error: expected flake output attribute 'nixosModules.default' to be a derivation or path",
        error=True,
        tid="1",
    )
    for words in (
        "That's expected - modules are functions. Let me create a simplified test first to isolate "
        "the problem:",
        "The issue is likely in the auto-stop timer configuration, which must not reference the cluster.",
    ):
        messages = [user("verify the module"), assistant(uses=(failing,)), assistant(words)]
        assert [c for c in run(*messages) if c.type is MemoryType.GOTCHA] == [], words
    # Real shape (2.0.x, Windows): ssh to a router fails and the assistant asks the user; the
    # question's words ("require") explain nothing.
    refused = bash(
        "ssh root@192.168.1.1", "ssh: connect to host 192.168.1.1 port 22: Connection refused", error=True
    )
    asked = "What router model do you have? (Some require SSH to be enabled in the web interface first)"
    messages = [user("ssh into my router"), assistant(uses=(refused,)), assistant(asked)]
    assert [c for c in run(*messages) if c.type is MemoryType.GOTCHA] == []


def test_build_command_still_failing_is_context() -> None:
    messages = turn(
        "build it",
        bash(
            "npm run build",
            "Exit code 2\nsrc/a.ts(3,1): error TS2304: Cannot find name 'x'.",
            error=True,
        ),
    )
    (failing,) = run(*messages)
    assert failing.type is MemoryType.CONTEXT
    assert (
        failing.content
        == "Command failing: `npm run build` (src/a.ts(3,1): error TS2304: Cannot find name 'x'.)"
    )


def test_trivial_rejected_and_cortex_commands_say_nothing() -> None:
    messages = turn(
        "look around",
        bash("cat missing.txt", "cat: missing.txt: No such file or directory", error=True, tid="1"),
        bash("pytest", "", error=True, rejected=True, tid="2"),
        bash('cortex recall "sqlite"', "", tid="3"),
        bash("ls -la", "total 0", tid="4"),
    )
    assert run(*messages) == []


def test_relative_path() -> None:
    assert relative_path(f"{ROOT}/a/b.py", ROOT) == "a/b.py"
    assert relative_path(f"{ROOT}/a/b.py", ROOT + "/") == "a/b.py"
    assert relative_path("/elsewhere/b.py", ROOT) is None
    assert relative_path(ROOT, ROOT) is None
    assert relative_path("a/b.py", ROOT) == "a/b.py"
    assert relative_path("/x/b.py", None) == "/x/b.py"


def test_the_digest_names_each_error_once_and_not_the_quoted_code() -> None:
    from cortex.core.extract.structural import error_digest

    output = (
        "error[E0605]: non-primitive cast: `[u8; 1]` as `f32`\n"
        "212 |     error_count += 1\n"
        "error[E0605]: non-primitive cast: `[u8; 1]` as `f32`\n"
        "error: could not compile `app` (lib) due to 2 previous errors"
    )
    assert error_digest(output) == (
        "error[E0605]: non-primitive cast: `[u8; 1]` as `f32` / "
        "error: could not compile `app` (lib) due to 2 "
        "previous errors"
    )


def test_a_failures_error_digest_keeps_the_lines_that_name_the_error() -> None:
    from cortex.core.extract.structural import error_digest

    output = (
        "Exit code 1\nerror:\n  building derivation\n"
        "error: Cannot build '/nix/store/x-driver.drv'.\n"
        "testScript:3: 'json' imported but unused\n"
        "error: 1 dependencies failed\nerror: 2 more"
    )
    # A linter's finding names the error too (the nixos test driver lints its testScript).
    assert error_digest(output) == (
        "error: Cannot build '/nix/store/x-driver.drv'. / testScript:3: 'json' imported but unused / "
        "error: 1 dependencies failed"
    )
    assert error_digest("\x1b[0;31m[ERROR]\x1b[0m Build failed!") == "[ERROR] Build failed!"
    # Real cargo shape: unused-import warnings before the error that failed the build.
    cargo = "warning: unused imports: `Body`\nerror: expected `;`, found `Ok`\nwarning: unused import: `Path`"
    assert error_digest(cargo) == "error: expected `;`, found `Ok`"
    # rustc's notes on a warning name no error: the lines after them do.
    noted = (
        "error: expected `;`, found `Ok`\nwarning: unused import: `Path`\n"
        "  = note: `#[warn(unused_imports)]` on by default\nhelp: remove the unused import\n"
        "error: could not compile `medianator` (lib) due to 1 previous error"
    )
    assert error_digest(noted) == (
        "error: expected `;`, found `Ok` / "
        "error: could not compile `medianator` (lib) due to 1 previous error"
    )
    # A logger's lines: the error-level one names the failure, not the warnings before it.
    logged = (
        "5:38PM WRN Invalid .gitleaksignore entry fingerprint=README.md\n"
        "2025-01-02T10:00:01Z [warn] deprecated option --fast is invalid\n"
        "time=10:00:02 level=info msg=unable to reach cache, building\n"
        "5:38PM ERR failed to open config: no such file .gitleaks.toml"
    )
    assert error_digest(logged) == "5:38PM ERR failed to open config: no such file .gitleaks.toml"
    # Only warnings: they are what there is.
    assert error_digest("5:38PM WRN Invalid entry a\n5:38PM WRN Invalid entry b") == (
        "5:38PM WRN Invalid entry a / 5:38PM WRN Invalid entry b"
    )
    assert error_digest("Info: cannot find module 'x'") == "Info: cannot find module 'x'"
    assert error_digest("Exit code 2\nsomething odd happened") == "something odd happened"
    assert len(error_digest("error: " + "x" * 1000)) <= 300


def test_a_passing_check_is_the_current_state_of_that_command() -> None:
    from cortex.core.write.state import state_tag

    ok = bash("pnpm build", "Compiled successfully", tid="1")
    (note,) = [c for c in run(*turn("build it", ok)) if c.content.startswith("`")]
    assert note.content == "`pnpm build` succeeds"
    assert note.tags == (state_tag("command:pnpm build"), PASSED_TAG)
    # A pipe through tail hides the exit status: no evidence, no success note.
    hidden = bash("pnpm build 2>&1 | tail -5", "done", tid="2")
    assert not [c for c in run(*turn("build it", hidden)) if "succeeds" in c.content]
    # Not a check: running a server or installing says nothing about the code's state.
    assert not [c for c in run(*turn("go", bash("npm install", "added 3 packages", tid="3")))]
    # A checker run through the project's runner is one; asked its version or help, it checked nothing.
    npx = bash("npx tsc --noEmit", "", tid="4")
    assert [c.content for c in run(*turn("types?", npx))] == ["`npx tsc --noEmit` succeeds"]
    for info, said in (("tsc --version", "Version 5.4.5"), ("cargo build --help", "Compile a local package")):
        assert not [c for c in run(*turn("which tsc?", bash(info, said, tid="5")))], info


def test_a_failing_build_and_a_test_verdict_are_keyed_states() -> None:
    from cortex.core.write.state import state_tag

    failing = bash(
        "tsc --noEmit", "Exit code 2\nsrc/a.ts(1,1): error TS2304: Cannot find name 'x'.", error=True
    )
    (note,) = run(*turn("check types", failing))
    assert note.content.startswith("Command failing: `tsc --noEmit`")
    assert note.tags == (state_tag("command:tsc"),)  # runs of one command family share a state
    verdict = bash("pytest -q", "3 passed in 0.1s", tid="2")
    (passed,) = run(*turn("run tests", verdict))
    # The family's state, and the command line's: a later run of the line that did not finish replaces it.
    assert passed.tags == (state_tag("test:pytest"), state_tag("test:pytest -q"), PASSED_TAG)


def test_command_families_drop_options_and_targets() -> None:
    from cortex.core.extract.failures import command_family

    assert command_family("nix flake check --all-systems --cores 4") == "nix flake check"
    assert command_family("pytest tests/test_a.py -q") == "pytest"
    assert command_family("npm run build") == "npm run build"
    assert command_family("cargo build --release") == "cargo build"
    assert command_family("./update.sh") == "./update.sh"
    # A package script is its own family whatever its name: `npm run lint` passing says
    # nothing of `npm run test:offline` (a real suite with 16 failures) or `yarn build:prod`.
    assert command_family("npm run test:offline -- --reporter dot") == "npm run test:offline"
    assert command_family("npm run lint") != command_family("npm run test:offline")
    assert command_family("yarn build:prod") == "yarn build:prod"
    assert command_family("pnpm test:unit") != command_family("pnpm test:e2e")
    assert command_family("npm test") == "npm test"


def test_each_distinct_error_of_one_command_is_its_own_gotcha() -> None:
    # Real shape (Nix session): one turn, `nix flake check` failing three ways before it passes.
    check = "nix flake check --cores 4 --max-jobs 4"
    errors = (
        (
            "error: syntax error, unexpected end of file, expecting ';'",
            "I need to fix the syntax error in the flake:",
        ),
        (
            "error: cannot look up '<nixpkgs/nixos/tests/make-test-python.nix>' in pure evaluation mode",
            "I need to fix the test to not use impure paths.",
        ),
        (
            "error: syntax error, unexpected end of file, expecting ';'",
            "I need to fix the syntax error again:",
        ),
    )
    messages: list[Message] = [user("verify the module")]
    for i, (error, why) in enumerate(errors):
        messages += [assistant(uses=(bash(check, error, error=True, tid=f"f{i}"),)), assistant(why)]
    messages.append(assistant(uses=(bash(check, "all checks passed!", tid="ok"),)))
    gotchas = [c.content for c in run(*messages) if c.type is MemoryType.GOTCHA]
    assert len(gotchas) == 2  # the repeated error once
    assert "expecting ';'" in gotchas[0] and "pure evaluation mode" in gotchas[1]
    assert gotchas[1].endswith("fix: fix the test to not use impure paths.")  # "I need to" is narration


def test_errors_of_one_command_that_one_fix_explains_are_one_gotcha() -> None:
    # Real shape (a Rust server): `cargo build` fails twice in a row, with another error each
    # time, and the same explanation follows both; then the build passes.
    build = 'DATABASE_URL="sqlite://medianator.db" cargo build --release'
    errors = (
        "error: expected `;`, found `Ok`",
        "error[E0599]: no method named `clone` found for struct `Database`",
    )
    why = "The Database struct needs to implement Clone."
    messages: list[Message] = [user("build it")]
    for i, error in enumerate(errors):
        messages += [assistant(uses=(bash(build, error, error=True, tid=f"f{i}"),)), assistant(why)]
    messages.append(assistant(uses=(bash(build, "Finished `release` profile", tid="ok"),)))
    gotchas = [c.content for c in run(*messages) if c.type is MemoryType.GOTCHA]
    assert gotchas == [f"`{build}` failed ({errors[0]} | {errors[1]}); fix: {why}"]


def _blocked(tid: str, command: str, output: str) -> ToolUse:
    return ToolUse(tid, "Bash", {"command": command}, ToolResult(tid, output, is_error=True, rejected=True))


def test_a_hook_that_blocks_a_command_is_a_gotcha_with_what_was_done_instead() -> None:
    # Real shapes: Claude Code 1.0.70 and 2.1 word a PreToolUse hook's refusal differently.
    v1 = (
        "Bash operation blocked by hook:\n- [uv run ~/.claude/hooks/pre_tool_use.py]: BLOCKED: "
        "Dangerous rm command detected and prevented\n"
    )
    v2 = (
        'PreToolUse:Bash hook error: [uv run "$CLAUDE_PROJECT_DIR/.claude/hooks/pre_tool_use.py"]: warning: '
        "The `tool.uv.dev-dependencies` field is deprecated\n"
        "BLOCKED: Dangerous rm command detected and prevented\n"
    )
    for output, command, blocked in (
        (v1, "rm -rf logs/*.json && git pull origin main", "rm -rf logs/*.json"),
        (v2, 'cd "/p/AI Projects/x" && git rm -r hermes 2>&1 | tail -3; git status', "git rm -r hermes"),
        (v1, 'rm -rf "old; logs" 2>/dev/null && ls', 'rm -rf "old; logs"'),
    ):
        messages = [
            user("clean up and pull"),
            assistant(uses=(_blocked("1", command, output),)),
            assistant(
                "The hook blocks rm; moving the files instead.",
                uses=(bash("mv logs logs.backup", "", tid="2"),),
            ),
        ]
        (gotcha,) = [c for c in run(*messages) if c.type is MemoryType.GOTCHA]
        # The note names the hook's script and the step it refused, not their whole lines.
        script = ("~/" if output is v1 else "") + ".claude/hooks/pre_tool_use.py"
        assert gotcha.content.startswith(f"A project hook (`{script}`) blocks `{blocked}`: "), gotcha.content
        assert "BLOCKED: Dangerous rm command detected and prevented" in gotcha.content
        assert gotcha.content.endswith("; done instead with `mv logs logs.backup`")
    # A refusal by the user (no hook) is nothing learned.
    refused = ToolUse(
        "1",
        "Bash",
        {"command": "rm -rf x"},
        ToolResult("1", "The user doesn't want to proceed", rejected=True),
    )
    assert not [c for c in run(user("go"), assistant(uses=(refused,))) if c.type is MemoryType.GOTCHA]


def test_a_failure_fixed_another_way_names_the_change_when_a_command_made_it() -> None:
    # Real shape (Convex, Claude Code 2.0): the public mutation needs a signed-in user from the CLI.
    failing = bash(
        'npx convex run acquisitions:propose \'{"title": "Horses"}\'',
        "Exit code 1\nUncaught Error: Unauthorized: Please sign in",
        error=True,
        tid="1",
    )
    seed = bash("npx convex run --no-push acquisitions:seed '{\"items\": []}'", '["j57"]', tid="3")
    edit = tool("Edit", {"file_path": "/p/convex/acquisitions.ts"}, tid="2")
    messages = [
        user("bulk add these"),
        assistant(uses=(failing,)),
        assistant("The mutation requires authentication. Let me create a quick seed function to add these:"),
        assistant(uses=(edit,)),
        assistant("Now let me run the seed:", uses=(seed,)),
    ]
    (gotcha,) = [c for c in run(*messages) if c.type is MemoryType.GOTCHA]
    assert "Unauthorized: Please sign in" in gotcha.content
    assert (
        "create a quick seed function to add these (ran `npx convex run --no-push acquisitions:seed"
        in gotcha.content
    )
    assert "cause: The mutation requires authentication; fix: create a quick seed" in gotcha.content
    # Without a command that changed something, what it set out to do is no fix: the cause stays.
    (alone,) = [c for c in run(*messages[:4]) if c.type is MemoryType.GOTCHA]
    assert alone.content.endswith("); cause: The mutation requires authentication")
    # Tool results between the assistant's messages do not use up the window (the real record
    # shape: each call's result is a user message of its own).
    results = [user(), user(), user()]
    spaced = [
        messages[0],
        messages[1],
        results[0],
        messages[2],
        results[1],
        messages[3],
        results[2],
        messages[4],
    ]
    assert [c for c in run(*spaced) if c.type is MemoryType.GOTCHA]


def test_a_timed_out_run_gets_no_fix_from_what_the_assistant_does_next() -> None:
    timed_out = bash("nix flake check --cores 4", "Command timed out after 2m 0.0s", error=True, tid="1")
    messages = [
        user("verify"),
        assistant(uses=(timed_out,)),
        assistant("Let me also verify the module evaluation works correctly:"),
        assistant("Let me regenerate the lock file:", uses=(bash("nix flake update", "", tid="2"),)),
    ]
    assert not [c for c in run(*messages) if c.type is MemoryType.GOTCHA]


def test_a_background_run_has_its_verdict_where_task_output_reports_it() -> None:
    # Real shapes (Claude Code 2.1): the launch names its id with a full stop after it, and
    # TaskOutput (not BashOutput) reports the run by `task_id`, its streams as one <output>.
    launch = bash(
        "python -m pytest tests/test_notes.py -q",
        "Command running in background with ID: b03a6e3. Output is being written to: "
        "/tmp/claude/tasks/b03a6e3.output",
        tid="1",
    )

    def poll(tid: str, status: str, retrieval: str, tail: str) -> ToolUse:
        content = (
            f"<retrieval_status>{retrieval}</retrieval_status>\n\n<task_id>b03a6e3</task_id>\n\n"
            f"<task_type>local_bash</task_type>\n\n<status>{status}</status>\n\n{tail}"
        )
        return ToolUse(tid, "TaskOutput", {"task_id": "b03a6e3", "block": True}, ToolResult(tid, content))

    running = poll(
        "2", "running", "timeout", "<output>\n============ test session starts ============\n</output>"
    )
    failed = poll(
        "3",
        "failed",
        "success",
        "<exit_code>1</exit_code>\n\n<output>\nFAILED tests/test_notes.py::test_title - AssertionError\n"
        "1 failed, 4 passed in 0.31s\n</output>",
    )
    still_running = run(user("run the notes tests"), assistant(uses=(launch,)), assistant(uses=(running,)))
    assert not any(c.content.startswith("Tests ") for c in still_running)  # no verdict while it runs
    ended = run(
        user("run the notes tests"),
        assistant(uses=(launch,)),
        assistant(uses=(running,)),
        assistant(uses=(failed,)),
    )
    (verdict,) = [c for c in ended if c.content.startswith("Tests ")]
    assert verdict.content.startswith("Tests failing: `python -m pytest tests/test_notes.py -q`")
    assert "1 failed, 4 passed" in verdict.content


def test_a_failing_test_run_is_not_outranked_by_the_reports_prose_in_the_briefing() -> None:
    # Real shape (a pull request's session): the turn's "Remaining Tasks" section and its
    # "Tests failing" verdict compete for the branch's few progress places; the verdict rests on
    # the runner's count, as a failure's gotcha does, and the prose on the assistant's word.
    from cortex.core.extract.summary import extract_reports
    from cortex.core.model import Scope, Source
    from cortex.core.recall.ranking import BriefingWeights, score_briefing
    from cortex.core.write.apply import new_memory
    from tests.conftest import T0

    output = "FAIL test/utils/error-sanitizer.test.ts\nTests  16 failed | 690 passed (734)"
    failing = bash("npm run test:offline", output, error=True, tid="1")
    report = (
        "## Remaining Tasks\n- Merge the fixes into PR #389\n- Create 3 follow-up issues for technical debt"
    )
    messages = [user("run the tests"), assistant(uses=(failing,)), assistant(report)]
    (verdict,) = [c for c in run(*messages) if c.content.startswith("Tests failing")]
    (section,) = [c for c, _ in extract_reports(messages) if c.content.startswith("Remaining Tasks")]
    assert section.type is verdict.type is MemoryType.PROGRESS
    verdict_m, section_m = (
        new_memory(f"{i:010x}", c, Scope.PROJECT, Source(), T0) for i, c in enumerate((verdict, section))
    )
    weights = BriefingWeights()
    assert score_briefing(verdict_m, weights, 0.0) >= score_briefing(section_m, weights, 0.0)
