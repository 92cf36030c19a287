"""A report's pass claims need the turn's own evidence; a yes/no answer is where things stand."""

from __future__ import annotations

from cortex.core.extract.claims import check_runs, claims_unbacked_pass
from cortex.core.extract.pipeline import extract_candidates
from cortex.core.extract.summary import REPORT_TAG, extract_reports
from cortex.core.model import MemoryType
from cortex.core.write.state import STATE_TAG
from tests.support.transcript_builders import assistant, bash, tool, user

TIMED_OUT = (
    "Command timed out after 2m 0.0s warning: Git tree '/p' has uncommitted changes\nevaluating flake..."
)
# The closing report of a real Nix session (shortened): the flake check it names had timed out.
REPORT = """## Polishing Complete

**Key Completions:**
- **Enhanced Module Validation**: Added comprehensive assertions to `nixos-modules/skypilot/default.nix`
- **Optimized Testing**: Reduced VM resource requirements in both simple and comprehensive tests

**Validation Results:**
- ✅ SkyPilot package builds and runs correctly (v0.9.3)
- ✅ Simple test passes with optimized resources (1024MB RAM, 2GB disk)
- ✅ Comprehensive flake check evaluates all outputs successfully
"""


def _turn(output: str, *, error: bool) -> list:
    return [
        user("polish"),
        assistant(
            "Let me validate.", uses=(bash("nix flake check --cores 4 --max-jobs 4", output, error=error),)
        ),
        assistant(REPORT),
    ]


def test_a_report_claiming_a_check_passed_that_timed_out_loses_that_section() -> None:
    found = extract_candidates(_turn(TIMED_OUT, error=True), project_root="/p", git=None)
    texts = [c.content for c in found]
    assert not any("flake check evaluates all outputs successfully" in t for t in texts)
    # The rest of the report stays.
    assert any("Reduced VM resource requirements" in t for t in texts)


def test_the_same_claim_stands_when_the_check_passed() -> None:
    found = extract_candidates(_turn("all checks passed!", error=False), project_root="/p", git=None)
    assert any("flake check evaluates all outputs successfully" in c.content for c in found)


def test_a_line_saying_the_check_did_not_finish_is_no_pass_claim() -> None:
    runs = check_runs(_turn(TIMED_OUT, error=True))
    assert runs == {"nix flake check": False}
    assert claims_unbacked_pass("- Flake Check: All outputs pass validation", runs)
    assert not claims_unbacked_pass("- nix flake check timed out after 2 minutes (VM tests)", runs)
    assert not claims_unbacked_pass("- Simple test passes with optimized resources", runs)


def test_tests_pass_is_unbacked_only_when_no_test_run_passed_last() -> None:
    failing = [
        user("run the tests"),
        assistant("", uses=(bash("cargo test", "test result: FAILED. 3 passed; 2 failed"),)),
    ]
    runs = check_runs(failing)
    assert claims_unbacked_pass("All tests pass now.", runs)
    passing = [
        *failing,
        assistant("", uses=(bash("cargo test", "test result: ok. 5 passed; 0 failed", tid="t2"),)),
    ]
    assert not claims_unbacked_pass("All tests pass now.", check_runs(passing))


def test_a_failure_said_midway_is_no_state_once_a_later_run_passed() -> None:
    # The turn ends on a short sign-off, so the report read is the note said midway; the run
    # after it passed, so "the refresh test fails" is over. Said after the last run, it stands.
    midway = (
        "Now the refresh test fails: the token payload has no `exp` claim because `make_token()` "
        "only sets it when `ttl` is passed. I'll default ttl to 15 minutes."
    )
    failing = bash(
        "pytest tests/test_auth.py -q", "FAILED test_refresh - KeyError: 'exp'\n1 failed", error=True
    )
    passing = bash("pytest tests/test_auth.py -q", "6 passed in 0.7s", tid="2")
    edit = tool("Edit", {"file_path": "/p/app/tokens.py", "old_string": "a", "new_string": "b"})
    turn = [
        user("fix the auth tests", offset=1),
        assistant(uses=(failing,), offset=2),
        assistant(midway, offset=3),
        assistant(uses=(edit,), offset=4),
    ]
    states = [
        c.content
        for c in extract_candidates(
            [*turn, assistant(uses=(passing,), offset=5), assistant("All 6 pass.", offset=6)],
            project_root="/p",
            git=None,
        )
        if STATE_TAG in c.tags
    ]
    assert not any("refresh test fails" in t for t in states)
    kept = extract_candidates([*turn, assistant("Done for now.", offset=5)], project_root="/p", git=None)
    assert any("refresh test fails" in c.content and STATE_TAG in c.tags for c in kept)
    # Said as plain context ("The test fails because ..."), it goes too; the failure's own
    # gotcha keeps the why.
    why = "The test fails because the settings loader reads AVATAR_BUCKET and the test env does not set it."
    turn[2] = assistant(why, offset=3)
    found = extract_candidates(
        [*turn, assistant(uses=(passing,), offset=5), assistant("All 6 pass.", offset=6)],
        project_root="/p",
        git=None,
    )
    assert [c.type for c in found if c.content.startswith("The test fails")] == []
    assert any(c.type is MemoryType.GOTCHA and "AVATAR_BUCKET" in c.content for c in found)


def test_a_report_answering_yes_or_no_is_state_all_through() -> None:
    # Real shape: "do we use bun?" answered before the user decided to migrate to Bun.
    answer = (
        "**No** - project uses **npm**, not Bun.\n\nEvidence:\n- `package-lock.json` present (npm lockfile)\n"
        "- No `bun.lockb` file\n- Scripts use `npm-run-all`\n\n**Correct commands**:\n```bash\n"
        "npm install              # Install dependencies\nnpm run dev              # Start dev\n```\n"
        "README.md incorrectly mentions Bun - should be corrected to npm everywhere in the docs."
    )
    found = [c for c, _ in extract_reports([user("do we use bun?"), assistant(answer)])]
    assert found
    assert all(c.type is MemoryType.PROGRESS and STATE_TAG in c.tags for c in found)
    assert not any(REPORT_TAG in c.tags for c in found)
    assert any("npm install" in c.content for c in found)


def test_a_report_that_does_not_open_with_an_answer_keeps_its_kinds() -> None:
    text = (
        "Nothing is wrong in the code itself; the toolchain is the culprit.\n\n## Root Cause\n"
        "The toolchain is Rust 1.70 and the ort crate needs "
        "a newer rustc, so the build fails at the dependency step every time."
    )
    found = [c for c, _ in extract_reports([user("why?"), assistant(text)])]
    assert any(c.type is MemoryType.GOTCHA and REPORT_TAG in c.tags for c in found)
