"""The turn-report layer: each turn's closing report becomes typed sections and labelled lines."""

from __future__ import annotations

from cortex.core.extract.summary import (
    FINDING_TAG,
    OPEN_TAG,
    REPORT_CONFIDENCE,
    REPORT_PRIORITY,
    REPORT_TAG,
    SUBAGENT_TAG,
    clean_report,
    extract_reports,
    labelled_items,
    report_sections,
    section_kind,
)
from cortex.core.extract.transcript import Message, parse_chunk
from cortex.core.extract.turns import split_turns
from cortex.core.model import MemoryType
from cortex.core.write.state import STATE_TAG
from tests.support.transcript_builders import (
    V1_0,
    V2_1,
    assistant,
    bash,
    envelope,
    jsonl,
    prompt_record,
    text_record,
    user,
)

REPORT = """## ✅ Issues found & solutions

### Issue 1: OpenAPI docs missing
**Root Cause**: OpenAPI is disabled unless the app runs in debug mode (openapi_url is None otherwise).

**Solution**: Set `LOG_LEVEL=DEBUG` to expose `/docs` and `/openapi.json` on the server.

```python
openapi_url="/openapi.json" if is_debug else None
```

## Current Status
- The API is running on port 8000 with the single PromptInjection scanner enabled
- Health checks answer at /healthz and /readyz for the load balancer
"""


def test_a_report_becomes_typed_sections_without_decoration() -> None:
    found = extract_reports([user("fix the docs please"), assistant(REPORT)])
    by_tag = {tag: [c for c, _ in found if tag in c.tags] for tag in (REPORT_TAG, STATE_TAG, FINDING_TAG)}
    state = by_tag[STATE_TAG]
    # The section, and the first line under its label: both say where things stand.
    assert [c.type for c in state] == [MemoryType.PROGRESS, MemoryType.PROGRESS]
    assert state[0].content.startswith("Current Status\n- The API is running on port 8000")
    assert state[1].content.startswith("The API is running on port 8000") and FINDING_TAG in state[1].tags
    issue = [c for c in by_tag[REPORT_TAG] if c.type is MemoryType.GOTCHA]
    assert issue and "LOG_LEVEL=DEBUG" in issue[0].content
    assert all("✅" not in c.content and "**" not in c.content and "##" not in c.content for c, _ in found)
    # A short code block is kept as inline code; the labels are also findings of their own.
    assert any('`openapi_url="/openapi.json" if is_debug else None`' in c.content for c, _ in found)
    findings = [(c.type, c.content) for c in by_tag[FINDING_TAG]]
    cause = "OpenAPI is disabled unless the app runs in debug mode (openapi_url is None otherwise)."
    assert (MemoryType.GOTCHA, f"Issue 1: OpenAPI docs missing: {cause}") in findings


def test_only_the_closing_report_of_a_turn_is_read() -> None:
    turn = [
        user("why does the build fail?"),
        assistant("Let me check the build output first.", uses=(bash("cargo build", "error", error=True),)),
        assistant(
            "The build fails because the toolchain is Rust 1.70 and the ort crate needs a newer rustc; "
            "upgrade with rustup update."
        ),
    ]
    found = extract_reports(turn)
    assert len([c for c, _ in found if REPORT_TAG in c.tags]) == 1
    assert "Rust 1.70" in found[0][0].content
    assert all("Let me check" not in c.content for c, _ in found)


def test_a_short_sign_off_after_the_report_does_not_hide_it() -> None:
    long = (
        "The deployment needs three environment variables on Render: AUTH_TOKEN, LOG_LEVEL and "
        "the model path, set before the first start."
    )
    found = extract_reports([user("what do I set?"), assistant(long), assistant("Ready when you are!")])
    assert [c.content for c, _ in found if REPORT_TAG in c.tags] == [long]


def test_api_error_banners_and_narration_are_not_reports() -> None:
    banner = "API Error: Claude Code is unable to respond to this request (Usage Policy)."
    assert extract_reports([user("go"), assistant(banner)]) == []
    assert extract_reports([user("go"), assistant("Let me look at the files.")]) == []


def test_non_english_reports_are_kept_as_context() -> None:
    text = (
        "数据库迁移已经完成，所有的查询现在都使用运行时检查的 sqlx 函数，而不是编译时宏。"
        "这样构建时不再需要 DATABASE_URL 环境变量，也不需要离线缓存文件。"
    )
    found = extract_reports([user("继续"), assistant(text)])
    assert [(c.type, c.content) for c, _ in found] == [(MemoryType.CONTEXT, text)]


def test_section_kinds_follow_the_heading() -> None:
    assert section_kind("Root Cause\nthe port was taken") is MemoryType.GOTCHA
    assert section_kind("Recommendation\nkeep the pinned version") is MemoryType.DECISION
    assert section_kind("Architecture overview\nthree services") is MemoryType.ARCHITECTURE
    assert section_kind("Conventions\nPRs are squash-merged") is MemoryType.PATTERN
    assert section_kind("Verification Results\nall green") is MemoryType.PROGRESS
    assert section_kind("The scanner loads one DeBERTa model lazily") is MemoryType.CONTEXT
    # An issue tracker's number names work, not a problem: a review report's title is no gotcha.
    review = "Code Review Report for Issue #271 - Developer Workflow Documentation and Automation"
    assert (
        section_kind(review + "\nThe setup script and the docs cover the onboarding.")
        is not MemoryType.GOTCHA
    )
    assert section_kind("Issues found\nthe port was taken") is MemoryType.GOTCHA
    # A topic word in a sentence is no heading: the section is not a structure or a rule for it
    # (real shapes: an Italian hand-off naming its "schema", an observation about workflow names).
    assert section_kind(review) is MemoryType.CONTEXT
    assert section_kind("The workflow names are showing as file paths instead of the proper names.") is (
        MemoryType.CONTEXT
    )
    handoff = "Lancio 2 agenti Haiku in parallelo, uno per lato, stesso schema così sono confrontabili."
    assert section_kind(handoff + "\n- Agent 1: deep-dive jcode") is MemoryType.CONTEXT
    # A problem named in a sentence still is one.
    assert section_kind("The problem is that the default token has limited scope.") is MemoryType.GOTCHA
    # A report's own numbering of the problems it found is still a problem.
    assert section_kind("Issue 2: 502 Gateway Timeout\nthe models download first") is MemoryType.GOTCHA
    # Answers about the current state, options, hypotheses and instructions are not settled:
    # they are state notes that a later report supersedes.
    for unsettled in (
        "No - project uses npm, not Bun.",
        "Option A (Recommended): wait and retry",
        "Possible causes of the 500",
        "What To Do",
        "I've committed and pushed the dependency fixes.",
    ):
        assert section_kind(unsettled + "\nbody") is MemoryType.PROGRESS, unsettled


def test_a_state_that_waits_on_the_user_is_marked_open() -> None:
    # Options and a question wait on the user's reply; an answer about how things stand does not.
    options = (
        "Two options:\n\n**Option A: Local disk** - simple, but breaks with more than one web server.\n\n"
        "**Option B: S3 with presigned URLs** - clients upload directly.\n\nWhich do you prefer?"
    )
    answer = "No - the project uses npm, not Bun.\n\nEvidence:\n- `package-lock.json` is the lockfile"
    for text, tags in ((options, {STATE_TAG, OPEN_TAG}), (answer, {STATE_TAG})):
        found = [c for c, _ in extract_reports([user("what now?"), assistant(text)]) if STATE_TAG in c.tags]
        assert found and all(set(c.tags) == tags for c in found), text


def test_the_step_promised_after_a_hand_off_stays_with_the_open_state() -> None:
    # Real shape (1.0.x): the session ends waiting on the user, and says what it does next.
    text = (
        "That's it! Tell me when you've:\n1. Added the disk at `/models`\n2. Added the environment "
        "variables\n\nThen I'll commit and push the changes, and your deployment will update on Render."
    )
    [waiting] = [c for c, _ in extract_reports([user("what now?"), assistant(text)])]
    assert set(waiting.tags) == {STATE_TAG, OPEN_TAG}
    assert waiting.content.endswith(
        "Then I'll commit and push the changes, and your deployment will update on Render."
    )
    # Without a hand-off before it, the same sentence is narration.
    plain = (
        "Added the disk at `/models` and the environment variables to the service.\n\n"
        + text.split("\n\n")[1]
    )
    [done] = [c for c, _ in extract_reports([user("what now?"), assistant(plain)])]
    assert "commit and push" not in done.content


def test_sections_are_cut_at_headings_and_bounded() -> None:
    lines = clean_report("Intro words\n- " + "word " * 400 + "\n## Next heading\n- " + "more text here " * 5)
    sections = report_sections(lines)
    assert len(sections) == 2
    assert all(len(s) <= 700 for s in sections)


def test_a_label_alone_on_its_line_takes_the_next_line() -> None:
    items = labelled_items(["Decision:", "Use treefmt through nix fmt for all formatting"])
    assert items == [(MemoryType.DECISION, "Use treefmt through nix fmt for all formatting")]
    assert labelled_items(["Note: too short"]) == []


def test_a_labelled_line_that_introduces_a_list_is_left_to_its_section() -> None:
    # Real shape: "**Important**: Each scanner uses ONE model:" over its bullets. Alone, the
    # line says nothing; the section keeps it with the list.
    report = clean_report(
        "### **One Model = One Scanner**\n\n**Important**: Each scanner uses ONE model:\n"
        "- PromptInjection -> DeBERTa model (508MB)\n- If you had Toxicity scanner -> Different model\n"
        "- If you had BanTopics scanner -> Another model\n"
    )
    assert labelled_items(report) == []
    assert any("DeBERTa model (508MB)" in s for s in report_sections(report))


def test_a_list_lead_in_is_no_subject_of_the_note_after_its_list() -> None:
    # Real shape: the lead-in introduces its bullets; the note after them is about something else.
    report = clean_report(
        "The improved face detection algorithm now:\n- Uses multiple color space rules\n"
        "- Filters by aspect ratio\n\nNote: The simple skin-tone based detection is a basic approach."
    )
    assert labelled_items(report) == [
        (MemoryType.GOTCHA, "The simple skin-tone based detection is a basic approach.")
    ]
    # A heading over the note itself stays its subject, with or without a colon.
    for heading in ("Convex push errors", "Convex push errors:"):
        items = labelled_items([heading, "Root cause: the AWS us-east-1 outage took the backend down"])
        assert items == [
            (MemoryType.GOTCHA, "Convex push errors: the AWS us-east-1 outage took the backend down")
        ], heading


def test_a_sentence_is_no_heading_and_next_steps_open_a_section_of_their_own() -> None:
    # A summary's one-line sentence is not the subject of the next steps under it, nor is the
    # heading over that sentence; a finding's label stays under its heading.
    report = clean_report(
        "## Summary\nAdded `GET /users` returning all users.\n\n"
        "## Next steps\n- Add pagination to `GET /users` (it returns every row today)\n\n"
        "## Slow dashboard\nProblem:\nThe endpoint runs one query per project inside the loop"
    )
    assert labelled_items(report) == [
        (MemoryType.PROGRESS, "Add pagination to `GET /users` (it returns every row today)"),
        (MemoryType.GOTCHA, "Slow dashboard: The endpoint runs one query per project inside the loop"),
    ]


def test_a_fix_under_a_heading_of_work_still_to_do_is_that_work() -> None:
    # Real shape (a review subagent's plan for a pull request): the "Fix:" lines under "MUST-FIX
    # Before Merge" were done two turns later, yet stayed active as gotchas.
    report = clean_report(
        "### MUST-FIX Before Merge (Critical - 3 hours total)\n\n"
        "1. **Performance: API Call in Error Path** [HIGH RISK]\n"
        "   - Fix: Move API call outside error handling path\n\n"
        "### Action items\n- Fix: Sanitize error messages before they reach the client\n\n"
        "### Root cause of the outage\n- Fix: Pin the auth library to 0.0.81 until upstream ships a patch"
    )
    assert labelled_items(report) == [
        (
            MemoryType.PROGRESS,
            "MUST-FIX Before Merge (Critical - 3 hours total): Move API call outside error handling path",
        ),
        (MemoryType.PROGRESS, "Action items: Sanitize error messages before they reach the client"),
        (
            MemoryType.GOTCHA,
            "Root cause of the outage: Pin the auth library to 0.0.81 until upstream ships a patch",
        ),
    ]


def test_a_section_of_work_still_to_do_is_a_state_and_a_how_to_fix_is_not() -> None:
    for section, kind in (
        (
            "MUST-FIX Before Merge\n1. Move the API call out of the error path in field-mapper.ts",
            MemoryType.PROGRESS,
        ),
        ("Action items\n- Sanitize error messages before they reach the client", MemoryType.PROGRESS),
        # Real shapes (a pull request's closing report, a subagent's): what is left is where the
        # work stands, replaced by a later report; "Remaining Issues" was a lasting gotcha.
        ("Remaining Tasks:\n- Merge fixes into PR #389\n- Merge PR #389 to main", MemoryType.PROGRESS),
        ("Remaining Issues\n- The date parser fails on leap years in UTC", MemoryType.PROGRESS),
        ("What's left\n- Update the docs for the sync workflow", MemoryType.PROGRESS),
        (
            "How to fix the port error\nKill the old server process before starting a new one.",
            MemoryType.GOTCHA,
        ),
    ):
        assert section_kind(section) is kind, section


def test_a_numbered_title_is_the_subject_of_the_notes_under_it() -> None:
    # Real shape (a subagent's report, 2.1.x): numbered `###` titles, each over its own notes.
    report = clean_report(
        "## OpenTelemetry Package Versions for mix.exs\n\n"
        "### 1. **opentelemetry_api**\n- **Latest Version:** 1.5.0\n"
        "- **Rationale:** Patch updates will be included automatically\n\n"
        "### 5. **opentelemetry_phoenix**\n- **Latest Version:** 2.0.1\n"
        "- **Note:** Recently hit 2.0, indicating API stability"
    )
    # The item's first field that types nothing says which version it is about.
    assert [text for _, text in labelled_items(report)] == [
        "opentelemetry_api (Latest Version: 1.5.0): Patch updates will be included automatically",
        "opentelemetry_phoenix (Latest Version: 2.0.1): Recently hit 2.0, indicating API stability",
    ]
    # A numbered step or a labelled numbered line is no title: the heading stays the subject.
    for line in ("3. Press Enter to skip the key prompt.", "4. Documentation: validate with developers"):
        items = labelled_items(["Setup on macOS", line, "Note: the first answer takes about 55 seconds cold"])
        assert [text for _, text in items] == ["Setup on macOS: the first answer takes about 55 seconds cold"]


def test_a_review_items_fields_are_not_its_title() -> None:
    # Real shape (a code-review subagent, 1.0.70): each numbered title over "Location:",
    # "Issue:", "Impact:" and "Fix:" lines. "Location:" took the title's place as the subject,
    # and a "Fix:" whose code block was cut took the next item's title, then a shell comment.
    report = clean_report(
        "## Major Issues (3)\n\n"
        "### 1. **Log Files Should Not Be Committed**\n"
        "**Location**: `logs/` directory modifications\n"
        "**Issue**: Log files (`post_tool_use.json`, `stop.json`) contain runtime data, not for the PR\n"
        "**Impact**: Repository bloat, potential sensitive data exposure\n"
        "**Fix**:\n```bash\n# Remove log files from staging\ngit reset HEAD logs/\n```\n\n"
        "### 2. **Missing Executable Permissions on Scripts**\n"
        "**Location**: All new scripts in `/scripts/`\n"
        "**Issue**: Scripts are created without executable permissions, requiring manual chmod\n"
        "**Fix**:\n```bash\nchmod +x scripts/a.sh\nchmod +x scripts/b.sh\nchmod +x scripts/c.sh\n"
        "chmod +x scripts/d.sh\nchmod +x scripts/e.sh\ngit add scripts/*.sh\n```\n\n"
        "### 3. **Hardcoded Repository References**\n"
        "**Location**: `docs/developer-onboarding.md` lines 34, 164\n"
        "**Issue**: References to `kesslerio/attio-mcp-server` should use a variable\n"
    )
    assert [text for _, text in labelled_items(report)] == [
        "Log Files Should Not Be Committed (Location: `logs/` directory modifications): Log files "
        "(`post_tool_use.json`, `stop.json`) contain runtime data, not for the PR",
        "Missing Executable Permissions on Scripts (Location: All new scripts in `/scripts/`): Scripts "
        "are created without executable permissions, requiring manual chmod",
        "Hardcoded Repository References (Location: `docs/developer-onboarding.md` lines 34, 164): "
        "References to `kesslerio/attio-mcp-server` should use a variable",
    ]


def test_labelled_lines_after_a_list_of_bare_titles_stand_on_their_own() -> None:
    # Real shape (a progress update, 1.0.70): "3. Enhanced error messages" ends a list of bare
    # items; the "Branch:" and "Status:" lines after it are not that item's fields.
    report = clean_report(
        "Key Achievement\n1. Relative date support\n2. API limitation workarounds\n"
        "3. Enhanced error messages\n"
        "**Branch**: `feature/phase2-universal-tools`\n"
        "**Status**: Ready to complete the final 40% for the v0.2.1 release"
    )
    assert [text for _, text in labelled_items(report)] == [
        "Branch: `feature/phase2-universal-tools`: Ready to complete the final 40% for the v0.2.1 release"
    ]
    # A label alone still takes the numbered line after it as its text.
    items = labelled_items(clean_report("Next steps:\n1. Monitor the auth library for a Next.js 15 fix\n"))
    assert items == [(MemoryType.PROGRESS, "Monitor the auth library for a Next.js 15 fix")]


def test_a_table_stays_with_the_text_that_introduces_it() -> None:
    # Real shape (b2, 2.0.x): a table's header row read as a heading cut the table away from
    # what it answers, and became the subject of the note after it ("Name Value: ...").
    report = (
        "The Vercel build is failing because the Convex environment variables aren't set up.\n\n"
        "You'll also need your Clerk keys:\n\n| Name | Value |\n|------|-------|\n"
        "| `CLERK_SECRET_KEY` | (from your .env.local) |\n\n"
        "**Note:** For production, you should set up a separate Convex production deployment."
    )
    lines = clean_report(report)
    assert "- Name Value" in lines and "- `CLERK_SECRET_KEY` (from your .env.local)" in lines
    assert [text for _, text in labelled_items(lines)] == [
        "For production, you should set up a separate Convex production deployment."
    ]
    sections = report_sections(lines)
    assert any(s.startswith("You'll also need your Clerk keys:\n- Name Value") for s in sections)


def test_turns_split_at_answered_prompts_only() -> None:
    messages = [
        user("a", offset=1),
        user("a again", offset=2),
        assistant("x", offset=3),
        user("b", offset=4),
        assistant("y", offset=5),
    ]
    turns = split_turns(messages)
    assert [[m.end_offset for m in t] for t in turns] == [[1, 2, 3], [4, 5]]


def test_intent_and_acknowledgements_are_cut_from_a_finding() -> None:
    # A real report: a sound finding followed by what the assistant meant to do next (the user
    # then chose another fix), and a reply opening with "You're right".
    found = extract_reports(
        [
            user("check the CI"),
            assistant(
                "The `.skogai` submodule repository is private, which is why the GitHub Actions can't "
                "access it. I'll update the CI workflow to skip submodule checkout or handle this gracefully."
            ),
        ]
    )
    assert [c.content for c, _ in found] == [
        "The `.skogai` submodule repository is private, which is why the GitHub Actions can't access it."
    ]
    found = extract_reports(
        [
            user("what did you get wrong?"),
            assistant(
                "What I've been doing wrong:\nYou're right - I keep using `gh` commands which only call "
                "the GitHub API, and I cannot see the Actions tab."
            ),
        ]
    )
    assert [c.content for c, _ in found] == [
        "What I've been doing wrong:\nI keep using `gh` commands which only call the GitHub API, and I "
        "cannot see the Actions tab."
    ]


def assert_sections_are_state(prompt: str, report: str) -> None:
    """Every section of the report (its labelled findings aside) is the turn's state."""
    found = extract_reports([user(prompt), assistant(report)])
    sections = [c for c, _ in found if FINDING_TAG not in c.tags]
    assert sections and all(c.type is MemoryType.PROGRESS and STATE_TAG in c.tags for c in sections)


def test_options_questions_and_hand_offs_are_state_not_findings() -> None:
    options = (
        "The solution is to:\n"
        "1. Either create a Personal Access Token (PAT) with access to both repositories\n"
        "2. Or make the `.skogai` repository public\n"
        "3. Or remove the submodule checkout from the CI workflow if it's not needed for testing\n\n"
        "## Which approach would you prefer?"
    )
    hand_off = (
        "Add these environment variables in your Render service:\n"
        "3. Update Build & Start Commands in Render:\n"
        "- Build Command: `cd llm_guard_api && pip install -r requirements.txt huggingface_hub`\n"
        "4. Tell me when you're done with the above steps and I will push the changes."
    )
    for report in (options, hand_off):
        assert_sections_are_state("how do we fix it?", report)


def test_a_lettered_menu_of_choices_is_state_not_a_finding() -> None:
    # Real shape (b4, 2.1.x): the state so far, then a menu the user has yet to choose from.
    # What it says ("Hermes stays primary") held only until the user chose.
    report = (
        "**Hermes intatto, primario.** Nessuno switch fatto.\n\n"
        "**Decisione finale, scegli:**\n"
        "- **(A) Coexistence**: tengo jcode buildato in scratchpad come alternativa, Hermes primario.\n"
        "- **(B) Scarta**: cleanup `brew uninstall rust pkgconf` + rimuovo clone scratchpad e launcher."
    )
    assert_sections_are_state("quindi?", report)


def test_a_section_that_ends_by_asking_waits_for_the_answer() -> None:
    # Real shape (b3, 2.0.x): an approach, then a question to the user, then the annotation the
    # user's setup asks for. Until the user answers, the approach is not a decision.
    report = (
        "If they're failing, the simplest approach is:\n"
        "1. **Read the YAML files** to see what they're trying to do\n"
        "2. **Look at the actual error output** (probably visible on the GitHub website)\n"
        "3. **Fix the YAML files** if there's a problem\n\n"
        "What's actually broken in the workflows? Is it still the submodule thing, or is there "
        "something wrong with how the YAML files are written?\n\n"
        '[@certainty:"95":"workflows are just YAML configuration files"]'
    )
    assert_sections_are_state("what do you think a workflow is?", report)
    # What was said before the question is kept as said: only a decision or gotcha waits.
    said = "The distinction appears to be:\n- `unitsNeeded` is how many to acquire\nWhat is quantity for?"
    (context,) = [c for c, _ in extract_reports([user("what's the difference?"), assistant(said)])]
    assert context.type is MemoryType.CONTEXT and STATE_TAG not in context.tags
    # A question the section answers itself is no question to the user (real shape, a3).
    explained = (
        "## How It Works\nOur config uses `truncate_head_tail`:\n"
        "- Takes first 128 characters and last 128 characters if prompt > 256 chars\n"
        '- Why? Injection attempts often appear at the beginning ("Ignore previous...") or end\n'
        "- Efficient: does not process entire long prompts"
    )
    (section,) = [c for c, _ in extract_reports([user("how?"), assistant(explained)])]
    assert section.type is not MemoryType.PROGRESS and STATE_TAG not in section.tags


def test_a_section_of_questions_to_the_user_is_state() -> None:
    # Real shape (2.0.x): the turn's answer is what the assistant needs to know. It states no
    # fact; until the user answers, it is where things stand.
    report = (
        "A few questions:\n"
        "- Do you know your router's IP address? (Common ones: `192.168.1.1`, `10.0.0.1`)\n"
        "- What router model do you have? (Some require SSH to be enabled in the web interface first)\n"
        "- Do you have the username/password? (Often `root` or `admin`)"
    )
    assert_sections_are_state("ssh into my router", report)
    # A statement among the questions keeps the section what it says.
    said = report + "\n- The router answers on port 22 with OpenSSH 9.6."
    found = extract_reports([user("ssh into my router"), assistant(said)])
    assert found and all(STATE_TAG not in c.tags for c, _ in found)


def test_a_guessed_cause_is_not_a_gotcha() -> None:
    report = (
        "## Root cause\nThe 500 error could be caused by sourcemap differences between Bun and Node, "
        "or by the module size of the bundle."
    )
    found = extract_reports([user("why does the push fail?"), assistant(report)])
    assert found and all(c.type is MemoryType.PROGRESS and STATE_TAG in c.tags for c, _ in found)


def test_headings_whose_bodies_were_code_do_not_type_the_section() -> None:
    report = (
        "## Usage Examples\n### Basic Usage:\n```nix\n"
        + "services.skypilot.enable = true;\n" * 6
        + "```\n### Advanced Usage:\n```nix\n"
        + "services.skypilot.port = 8080;\n" * 6
        + "```\n## Verification Results\n- Flake Check: all outputs pass validation\n"
        "- Comprehensive Test: built successfully (taking expected time for VM tests)"
    )
    found = extract_reports([user("verify it"), assistant(report)])
    (section,) = [c for c, _ in found]
    assert section.type is MemoryType.PROGRESS and STATE_TAG in section.tags
    assert section.content.startswith("Usage Examples\nVerification Results\n- Flake Check")


def test_a_block_of_settings_is_kept_whatever_its_length() -> None:
    # Real shape (a Render deployment): the variables to set were a six-line block under their
    # heading, and the section kept the heading alone.
    env = "AUTH_TOKEN=<keep your token>\nPROMPT_INJECTION_MODEL_PATH=/models/prompt-injection-v2\n"
    env += "LOG_LEVEL=INFO\nSCAN_PROMPT_TIMEOUT=120\nexport SCAN_OUTPUT_TIMEOUT=120\nLAZY_LOAD=true\n"
    lines = clean_report(f"### 2. Update Environment Variables in Render:\n```\n{env}```\n### 3. Done")
    assert "`PROMPT_INJECTION_MODEL_PATH=/models/prompt-injection-v2`" in lines
    assert "`export SCAN_OUTPUT_TIMEOUT=120`" in lines and lines[-1] == "3. Done"
    flat = clean_report("```yaml\n" + "".join(f"key{i}: value {i}\n" for i in range(6)) + "```")
    assert flat == [f"`key{i}: value {i}`" for i in range(6)]
    # Code, a nested document and a long listing stay out.
    code = clean_report("```nix\n" + "services.skypilot.enable = true;\n" * 6 + "```")
    nested = clean_report(
        "```yaml\non:\n  push:\n    branches: [main]\njobs:\n  build:\n    runs-on: ubuntu\n```"
    )
    listing = clean_report("```\n" + "".join(f"VAR{i}=x\n" for i in range(13)) + "```")
    assert code == nested == listing == []


def test_arrows_say_what_became_what() -> None:
    lines = clean_report("What We Changed\n- Lockfile (package-lock.json → bun.lock)\n- Scripts: npm ➜ bun")
    assert lines == ["What We Changed", "- Lockfile (package-lock.json -> bun.lock)", "- Scripts: npm -> bun"]


def test_options_past_the_cut_still_leave_a_section_open() -> None:
    # Real shape: "Recommended Actions" with "Option 1" and "Option 2" far apart.
    steps = "\n".join(
        f"- Step {i}: retry `npx convex dev` and watch the status page for updates" for i in range(12)
    )
    report = f"## Recommended Actions\nOption 1: Wait for Resolution (Best)\n{steps}\nOption 2: Switch region"
    found = extract_reports([user("what now?"), assistant(report)])
    (section,) = [c for c, _ in found if FINDING_TAG not in c.tags]
    assert "Option 2" not in section.content  # cut at the section bound
    assert section.type is MemoryType.PROGRESS and STATE_TAG in section.tags


# A 1.0.70 Task call and its result (shortened from a real session): the subagent's report is
# the result's text blocks.
SUBAGENT_REPORT = (
    "## Summary\n\n"
    "I've successfully completed 100% of the remaining Phase 2 implementation tasks for v0.2.1.\n\n"
    "### ✅ Completed Tasks\n\n"
    "1. **Fixed timezone issues** - Resolved 4 failing tests in `date-parser.test.ts` by ensuring "
    "dates are parsed in local time rather than UTC\n\n"
    "2. **Integrated date parsing** - Successfully integrated natural language date parsing through "
    "the `resolveDateRange` function\n\n"
    "### Helper Scripts\n"
    "- Color-coded output with green for success and red for errors in every helper script\n"
    "- Progress spinners for long-running tasks and a detailed summary report at the end\n\n"
    "### Root Cause\n"
    'The date parser computed relative ranges in UTC, so "yesterday" shifted by a day west of Greenwich.\n'
)


def _delegation(result_content: object, *, top: object) -> list[Message]:
    use = {
        "type": "tool_use",
        "id": "toolu_1",
        "name": "Task",
        "input": {"description": "Complete Phase 2", "subagent_type": "project-delegator-orchestrator"},
    }
    call = {
        **envelope("assistant", "a1", V1_0),
        "message": {"id": "m1", "role": "assistant", "content": [use]},
    }
    block = {"tool_use_id": "toolu_1", "type": "tool_result", "content": result_content}
    answer = {
        **envelope("user", "r1", V1_0),
        "message": {"role": "user", "content": [block]},
        "toolUseResult": top,
    }
    records = [prompt_record("ok continue with the orchestrator", version=V1_0), call, answer]
    return list(parse_chunk(jsonl(records), 0).messages)


def test_a_subagents_report_is_read_like_the_turns_own_report() -> None:
    messages = _delegation([{"type": "text", "text": SUBAGENT_REPORT}], top={"content": []})
    found = [c for c, _ in extract_reports(messages)]
    gotchas = [c.content for c in found if c.type is MemoryType.GOTCHA]
    assert any(c.startswith("Root Cause\nThe date parser computed relative ranges in UTC") for c in gotchas)
    assert any(STATE_TAG in c.tags and "resolveDateRange" in c.content for c in found)
    # Its untyped sections (how the work looks) are not kept: the turn's own report has them.
    assert not [c for c in found if c.type is MemoryType.CONTEXT]
    # Second-hand: its notes rank below the turn's own report and labelled lines, and say so
    # (the briefing leaves them to recall).
    assert all((c.confidence, c.priority) < (REPORT_CONFIDENCE, REPORT_PRIORITY) for c in found)
    assert all(SUBAGENT_TAG in c.tags for c in found)


def test_a_background_launch_or_a_usage_limit_is_no_report() -> None:
    launched = (
        "Async agent launched successfully.\nagentId: a1fac88621f20fc5f (internal ID - do not mention "
        "to user.)\nThe agent is working in the background. You will be notified automatically when "
        "it completes. Do not duplicate this agent's work."
    )
    for content in (launched, "Claude AI usage limit reached|1754528400"):
        assert extract_reports(_delegation([{"type": "text", "text": content}], top={})) == []


def _notice(status: str, summary: str, result: str | None) -> dict[str, object]:
    """A 2.1.x `<task-notification>` user record (real shape, shortened)."""
    body = (
        "<task-notification>\n<task-id>a1fac88621f20fc5f</task-id>\n"
        "<tool-use-id>toolu_01HyPYctgjGJgfwX1joScR1b</tool-use-id>\n"
        "<output-file>/private/tmp/claude-501/proj/tasks/a1fac88621f20fc5f.output</output-file>\n"
        f"<status>{status}</status>\n<summary>{summary}</summary>\n"
        "<note>A task-notification fires each time this agent stops with no live background children "
        "of its own.</note>\n"
        + (f"<result>{result}</result>\n" if result is not None else "")
        + "</task-notification>"
    )
    return {
        **envelope("user", f"n-{status}", V2_1),
        "message": {"role": "user", "content": body},
        "origin": {"kind": "task-notification"},
        "promptSource": "system",
    }


def test_a_background_subagents_notice_is_no_prompt_and_its_raw_report_is_not_read() -> None:
    launched = "Async agent launched successfully.\nagentId: a1fac88621f20fc5f"
    use = {
        "type": "tool_use",
        "id": "toolu_01HyPYctgjGJgfwX1joScR1b",
        "name": "Agent",
        "input": {"prompt": "dig"},
    }
    call = {
        **envelope("assistant", "a1", V2_1),
        "message": {"id": "m1", "role": "assistant", "content": [use]},
    }
    block = {"tool_use_id": "toolu_01HyPYctgjGJgfwX1joScR1b", "type": "tool_result", "content": launched}
    answer = {
        **envelope("user", "r1", V2_1),
        "message": {"role": "user", "content": [block]},
        "toolUseResult": {},
    }
    report = SUBAGENT_REPORT.replace("UTC, so", "UTC &amp; so")
    records = [
        prompt_record("evaluate the date parser in the background"),
        call,
        answer,
        text_record("m2", "The agent is running; I will report when it finishes.", "x1"),
        _notice("completed", 'Agent "Date parser review" finished', report),
        text_record("m3", "The review finished: the parser's UTC bug is the cause.", "x2"),
        _notice("completed", 'Background command "cargo build" completed (exit code 0)', None),
        _notice("killed", 'Agent "Other review" was stopped', "Partial notes: nothing settled yet here."),
    ]
    messages = list(parse_chunk(jsonl(records), 0).messages)
    # The client's notice is not the user's words, and the launch keeps its own result.
    assert not [m for m in messages if any("task-notification" in t for t in m.texts)]
    launch = next(m for m in messages if m.tool_uses).tool_uses[0].result
    assert launch is not None and launch.content.startswith("Async agent launched")
    # A notice starts a turn (the answer to it is not the prompt's turn's report); two notices
    # with no answer between them are one turn, as two prompts would be.
    assert [len(t) for t in split_turns(messages)] == [4, 2, 2]
    notices = [r for m in messages for r in m.tool_results if r.notice]
    assert [(r.is_error, r.content[:10]) for r in notices] == [
        (False, "## Summary"),
        (False, ""),  # a background command's notice carries no report
        (True, "Partial no"),  # a killed task's is an error
    ]
    assert "UTC & so" in notices[0].content  # unescaped
    # The raw report is not read: the main thread's answer to the notice is that turn's report.
    found = [c.content for c, _ in extract_reports(messages)]
    assert not [c for c in found if "date parser computed" in c or "Partial notes" in c]


def test_a_closing_lead_in_whose_list_or_code_was_cut_is_not_kept() -> None:
    """Real shapes: a report section whose steps were a code block, and a labelled line whose
    command followed on the next lines."""
    report = (
        "## Render setup\n"
        "The disk keeps the model between deploys, so the first request no longer downloads it. "
        "Now your setup will work with your existing commands. Here's what you need to do:\n"
        "```bash\nmkdir -p /models\nexport PROMPT_INJECTION_MODEL_PATH=/models\n"
        "python download_models.py\nchmod +x startup.sh\n./startup.sh\n```\n"
        "**Note**: For production, you should set up a separate Convex production deployment. Run:\n"
        "```bash\nnpx convex deploy\nnpx convex env set\nnpx convex dashboard\nnpx convex logs\n"
        "npx convex import\n```\n"
    )
    found = extract_reports([user("how do I deploy this?"), assistant(report)])
    texts = [c.content for c, _ in found]
    assert any(
        "Now your setup will work with your existing commands.\nNote: For production" in t for t in texts
    )
    assert not any("what you need to do" in t for t in texts)
    assert "Render setup: For production, you should set up a separate Convex production deployment." in texts
    assert not any(t.rstrip().endswith(":") for t in texts)


def test_a_clipped_reports_head_and_tail_are_never_one_note() -> None:
    # A long subagent review (real shape, shortened): its output is kept as head and tail only.
    # The head ends in a section of short lines, the tail opens with a list whose heading the
    # clip took away; read as one section they made a gotcha of praise ("Location: ... line
    # 121 / Issue: ... / … / - Bash Best Practices: ...").
    filler = "".join(f"- Checked `scripts/test-{i}.sh`: exit codes and quoting are fine\n" for i in range(28))
    head = (
        "## Code Review\n" + filler + "### Major Issues (3)\n"
        "Location: `scripts/setup-dev-env.sh` line 121\n"
        "Issue: Creates `.env.example`, docs say `.env.template`\n"
    )
    tail = "".join(
        f"- Bash Best Practices {i}: scripts use proper error handling and quoting\n" for i in range(27)
    )
    report = head + "x" * 600 + "\n" + tail
    assert len(head) < 2000 < len(head) + 600 and len(tail) < 2000 < len(report) - 2000
    messages = _delegation([{"type": "text", "text": report}], top={"content": []})
    [clipped] = [r.content for m in messages for r in m.tool_results]
    assert "`.env.template`\n…\n- Bash Best Practices" in clipped  # the clip fell between the two
    found = [c for c, _ in extract_reports(messages)]
    assert not [c for c in found if "line 121" in c.content and "Bash Best" in c.content]
    # Nothing says what the tail's list is any more: it is no finding.
    assert not [c for c in found if "Bash Best" in c.content and c.type is not MemoryType.CONTEXT]
    # A tail that opens with a heading of its own is read under it.
    titled = report.replace("x" * 600 + "\n", "x" * 600 + "\n### Root Cause\n", 1)
    titled = titled.replace(
        "- Bash Best Practices 0: scripts use proper error handling and quoting",
        ("The setup script writes `.env.example` while the guide tells readers to copy `.env.template`"),
        1,
    )
    messages = _delegation([{"type": "text", "text": titled}], top={"content": []})
    assert any(
        c.type is MemoryType.GOTCHA and c.content.startswith("Root Cause\nThe setup script writes")
        for c, _ in extract_reports(messages)
    )
