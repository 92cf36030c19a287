"""Session signals: approved plans, the todo list's last state, the user's rules, commit bodies."""

from __future__ import annotations

from cortex.core.extract.markers import GLOBAL_SCOPE_MIN_CONFIDENCE
from cortex.core.extract.pipeline import extract_candidates
from cortex.core.extract.signals import (
    CORRECTION_TAG,
    NOTE_TAG,
    PLAN_TAG,
    RULE_TAG,
    TODO_TAG,
    commit_body,
    extract_signals,
)
from cortex.core.extract.transcript import ToolResult, ToolUse
from cortex.core.model import MemoryType, Scope
from cortex.core.write.state import STATE_TAG
from tests.support.transcript_builders import assistant, user

PLAN = (
    "## Bun migration\n\n1. Delete package-lock.json and add bun.lock\n"
    "2. Replace npm-run-all with bun run --parallel"
)


def use(name: str, tool_input: dict[str, object], *, rejected: bool = False, tid: str = "t") -> ToolUse:
    return ToolUse(tid, name, tool_input, ToolResult(tid, "ok", rejected=rejected))


def todos(*items: tuple[str, str]) -> dict[str, object]:
    return {"todos": [{"content": c, "status": s, "activeForm": c} for c, s in items]}


def test_an_approved_plan_is_a_decision_and_a_refused_one_is_not() -> None:
    approved = extract_signals([user("plan it"), assistant(uses=(use("ExitPlanMode", {"plan": PLAN}),))])
    assert [(c.type, c.tags) for c, _ in approved] == [(MemoryType.DECISION, (PLAN_TAG,))]
    assert approved[0][0].content.startswith("Approved plan: Bun migration\n1. Delete package-lock.json")
    refused = extract_signals(
        [user("plan it"), assistant(uses=(use("ExitPlanMode", {"plan": PLAN}, rejected=True),))]
    )
    assert refused == []


def test_a_long_plan_is_cut_at_a_line_end_only_where_that_keeps_most_of_it() -> None:
    steps = "\n".join(f"{i}. Move the {i}th handler of the billing worker to the queue" for i in range(1, 40))
    [(cut, _)] = extract_signals([user("plan it"), assistant(uses=(use("ExitPlanMode", {"plan": steps}),))])
    body = cut.content.removeprefix("Approved plan: ")
    assert 450 < len(body) <= 900 and body.endswith("to the queue")  # whole lines
    # One long line after a short heading: the plan is not cut back to its heading.
    one_line = "## Billing\n" + "Move every handler of the billing worker to the queue, one by one; " * 20
    [(kept, _)] = extract_signals(
        [user("plan it"), assistant(uses=(use("ExitPlanMode", {"plan": one_line}),))]
    )
    assert len(kept.content.removeprefix("Approved plan: ")) == 900


def test_a_plan_to_investigate_is_where_the_work_stands_not_a_decision() -> None:
    plan = (
        "# Investigate Convex Push Error - Potential Bun/Sourcemap Issue\n\n## Root Cause Analysis\n"
        "Based on GitHub issue #227 the 500 error could be caused by sourcemap issues or module size."
    )
    found = extract_signals(
        [user("is it our fault?"), assistant(uses=(use("ExitPlanMode", {"plan": plan}),))]
    )
    assert [(c.type, c.tags) for c, _ in found] == [(MemoryType.PROGRESS, (PLAN_TAG, STATE_TAG))]
    assert found[0][0].content.startswith("Investigation plan: Investigate Convex Push Error")


def test_the_user_changing_course_is_a_decision() -> None:
    for prompt in (
        "Switch to runtime query checking in sqlx",
        "I want to migrate to using bun. read the spec",
    ):
        found = extract_signals([user(prompt), assistant("On it.")])
        assert [(c.type, c.tags) for c, _ in found] == [(MemoryType.DECISION, (RULE_TAG,))], prompt
        assert found[0][0].content.startswith("The user decided: ")
    assert (
        extract_signals([user("Move the upload button to the left of the search box"), assistant("ok")]) == []
    )


def test_a_lowercase_question_does_not_hide_the_rule_after_it() -> None:
    found = extract_signals([user("what do you mean? use pnpm instead of npm in this repo"), assistant("ok")])
    assert [c.content for c, _ in found] == ["The user's rule: use pnpm instead of npm in this repo"]


def test_the_last_todo_list_of_a_turn_is_a_state_note() -> None:
    first = use(
        "TodoWrite", todos(("Add bun.lock", "in_progress"), ("Update vercel.json", "pending")), tid="1"
    )
    last = use(
        "TodoWrite", todos(("Add bun.lock", "completed"), ("Update vercel.json", "in_progress")), tid="2"
    )
    found = extract_signals([user("migrate"), assistant(uses=(first,)), assistant(uses=(last,))])
    assert [(c.type, c.tags) for c, _ in found] == [(MemoryType.PROGRESS, (TODO_TAG, STATE_TAG))]
    assert found[0][0].content == "Task list. Open: Update vercel.json. Done: Add bun.lock"


def test_standing_rules_in_the_users_words_are_conventions() -> None:
    prompt = "Fix the footer. Never push straight to develop, open a pull request instead. Why is CI red?"
    found = extract_signals([user(prompt), assistant("ok")])
    assert [(c.type, c.content) for c, _ in found] == [
        (MemoryType.PATTERN, "The user's rule: Never push straight to develop, open a pull request instead.")
    ]
    assert found[0][0].tags == (RULE_TAG,)
    # "Stop <doing> ..." corrects a habit, whatever the verb.
    found = extract_signals(
        [user("looks fine. stop adding a comment to every line you write"), assistant("ok")]
    )
    assert [c.content for c, _ in found] == ["The user's rule: stop adding a comment to every line you write"]
    assert extract_signals([user("stop the dev server and rebuild it please"), assistant("ok")]) == []


def test_a_short_imperative_that_only_holds_as_a_standing_rule_is_one() -> None:
    # Fewer words than a rule needs, no "always" or "never": the imperative says it holds from
    # now on. Where the code is concerned, "everywhere" is not "in all my projects".
    for prompt in (
        "stop adding comments everywhere",
        "use tabs not spaces in this repo",
        "don't use any in TypeScript here, use unknown and narrow it",
        "we're on node 20, so don't suggest node 22 features",
        "Please don't mock the database",
    ):
        [(rule, _)] = extract_signals([user(prompt), assistant("ok")])
        assert rule.content == f"The user's rule: {prompt}" and rule.scope is Scope.PROJECT, prompt
    # Bound to now, or no habit at all.
    vague = ("stop doing that", "don't add anything else", "use it over there")
    for prompt in ("don't push yet", "use the old config for now", "don't worry about it", "stop it", *vague):
        assert extract_signals([user(prompt), assistant("ok")]) == [], prompt


def test_a_rule_about_the_user_across_projects_is_global() -> None:
    for prompt in (
        "In all my projects I use pnpm, never npm.",
        "I never want you to push to main without asking me first.",
    ):
        [(rule, _)] = extract_signals([user(prompt), assistant("ok")])
        assert rule.scope is Scope.GLOBAL and rule.global_confidence >= GLOBAL_SCOPE_MIN_CONFIDENCE, prompt
    # A local cue, code, or the project's own name keeps the rule here.
    for prompt, words in (
        ("In this repo, always use pnpm instead of npm.", ()),
        ("I always run `make lint` before pushing anything.", ()),
        ("I always deploy golfgod from the release branch.", ("golfgod",)),
    ):
        [(rule, _)] = extract_signals([user(prompt), assistant("ok")], project_words=words)
        assert rule.scope is Scope.PROJECT, prompt


def test_questions_assistant_text_and_pasted_material_are_not_rules() -> None:
    assert (
        extract_signals([user("Should we always run the e2e check before merging?"), assistant("yes")]) == []
    )
    assert extract_signals([user("go"), assistant("I will always run the tests first from now on.")]) == []
    pasted = "Here is the log:\n" + "12:00:01 make sure to run `convex dev` before deploying\n" * 40
    assert extract_signals([user(pasted), assistant("ok")]) == []


def test_commit_bodies_from_heredocs_and_repeated_messages() -> None:
    heredoc = (
        "git commit -m \"$(cat <<'EOF'\nfeat: migrate to Bun\n\n"
        "- Remove package-lock.json\n- Add bun.lock\n\n"
        "\U0001f916 Generated with [Claude Code](https://claude.com/claude-code)\n\n"
        'Co-Authored-By: Claude <noreply@anthropic.com>\nSigned-off-by: Dev <dev@example.com>\nEOF\n)"'
    )
    assert commit_body(heredoc) == "- Remove package-lock.json - Add bun.lock"
    # Claude Code's attribution as Happy's wrapper writes it (on two lines), and a line that
    # only names a tool.
    happy = (
        "git commit -m \"$(cat <<'EOF'\nfix: use GH_TOKEN\n\n- Use the org token\n\n"
        "Generated with [Claude Code](https://claude.ai/code)\nvia [Happy](https://happy.engineering)\n\n"
        'Co-Authored-By: Claude <noreply@anthropic.com>\nEOF\n)"'
    )
    assert commit_body(happy) == "- Use the org token"
    one_line = "git commit -m 'fix: port' -m 'kill it first' -m 'Generated with [Claude Code](https://claude.ai/code)'"
    assert commit_body(one_line) == "kill it first"
    kept = "git commit -m 'docs: tooling' -m 'Generated with mkdocs, served by nginx'"
    assert commit_body(kept) == "Generated with mkdocs, served by nginx"
    assert (
        commit_body("git commit -m 'fix: port' -m 'kill the old server first'") == "kill the old server first"
    )
    assert commit_body("git commit -m 'subject only'") == ""


def test_todo_and_plan_inputs_reach_the_layer_redacted() -> None:
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    item = use(
        "TodoWrite", todos((f"Rotate the token {secret} in CI", "pending"), ("Merge the PR", "completed"))
    )
    found = extract_candidates([user("do it"), assistant(uses=(item,))], project_root=None, git=None)
    (note,) = [c for c in found if TODO_TAG in c.tags]
    assert secret not in note.content and "Rotate the token" in note.content


def _only_rule(prompt: str) -> str:
    """The one note a prompt gives, which must be a rule (a convention)."""
    ((candidate, _),) = extract_signals([user(prompt), assistant("ok")])
    assert candidate.type is MemoryType.PATTERN
    return candidate.content


def test_a_correction_with_instead_is_a_rule_and_keeps_its_parenthesised_reason() -> None:
    # Real shape: the user stops a `git reset HEAD .` meant to tidy a commit.
    prompt = (
        "think about what you should do instead..... "
        "(hint: destroying traceability and just fucking up is not it)"
    )
    assert _only_rule(prompt) == f"The user's rule: {prompt}"
    # A sentence without the rule word is no rule.
    assert extract_signals([user("please look over all the workflows we have today"), assistant("ok")]) == []


def test_a_correction_keeps_what_the_agreeing_reply_says_it_means() -> None:
    # Real shape: the rule alone names no subject; the reply that agrees restates it.
    prompt = (
        "think about what you should do instead..... "
        "(hint: destroying traceability and just fucking up is not it)"
    )
    reading = (
        "I should only add and commit the specific workflow files I fixed, "
        "not mess with the git staging area that has other files."
    )
    reply = f"You're absolutely right! {reading} Let me properly add just the workflow changes."
    ((candidate, _),) = extract_signals([user(prompt), assistant(reply)])
    assert candidate.content == f"The user's rule: {prompt} (Taken as: {reading})"
    # A reply that only sets out to act, or does not agree, restates nothing.
    for other in (
        "You're absolutely right. Let me do proper E2E testing.",
        "You're right, let me explain the issue clearly: the token has limited scope.",
        "I should only add and commit the specific workflow files I fixed.",
    ):
        ((candidate, _),) = extract_signals([user(prompt), assistant(other)])
        assert candidate.content == f"The user's rule: {prompt}", other
    # A reply to a later prompt is not the reading of this one.
    found = extract_signals([user(prompt), user("also, hurry up please"), assistant(reply)])
    assert [c.content for c, _ in found] == [f"The user's rule: {prompt}"]


def test_a_correction_of_what_the_assistant_keeps_doing_is_a_rule_with_what_to_do() -> None:
    # Real shape (Claude Code 2.0): the user's instruction, then the repeated mistake it corrects.
    prompt = (
        "you must kill all services, run ./scripts/start.sh and open the frontend local host to see "
        "if its working. you keep saying it is working but are not e2e testing"
    )
    assert _only_rule(prompt) == f"The user's rule: {prompt}"
    # Keeping on with the work is no correction.
    assert extract_signals([user("ok, keep going with the migration please"), assistant("ok")]) == []


def test_a_fact_the_user_corrects_is_a_gotcha_in_their_words() -> None:
    answer = assistant("The test database runs on port 5432, as docker-compose.yml sets by default.")
    for prompt, fact in (
        (
            "no, that's wrong - the test database runs on port 5433, not 5432",
            "the test database runs on port 5433, not 5432",
        ),
        (
            "No, the deploy script lives in ops/deploy.sh. Fix it there.",
            "the deploy script lives in ops/deploy.sh.",
        ),
        ("actually the API base url is /api/v2, not /api/v1", "the API base url is /api/v2, not /api/v1"),
    ):
        found = extract_signals([user("which port?"), answer, user(prompt), assistant("Updated.")])
        assert [(c.type, c.tags, c.content) for c, _ in found] == [
            (MemoryType.GOTCHA, (CORRECTION_TAG,), f"The user corrected: {fact}")
        ], prompt
    # A request, a feeling, a question, where things stand now, or news after "actually".
    for prompt in (
        "wrong, you must open the link to see the errors",
        "No, I don't really like that. Let's revert it.",
        "nope, that's not it. why is the build red?",
        "no, the build is still failing on CI",
        "actually the tests pass now",
        "Nobody uses the old endpoint, it is dead code",
    ):
        found = extract_signals([user("which port?"), answer, user(prompt), assistant("Updated.")])
        assert [c for c, _ in found if CORRECTION_TAG in c.tags] == [], prompt


def test_a_fact_the_user_lets_the_assistant_know_is_a_gotcha_in_their_words() -> None:
    for prompt, fact in (
        (
            "FYI the staging database runs on port 5433, not the default. Now add a health check.",
            "the staging database runs on port 5433, not the default.",
        ),
        (
            "Heads up: our CI runners have no network access, so tests must not download anything.",
            "our CI runners have no network access, so tests must not download anything.",
        ),
        ("just so you know, the billing service is owned by the payments team", None),
    ):
        found = extract_signals([user(prompt), assistant("Noted.")])
        expected = fact or prompt.split(", ", 1)[1]
        assert [(c.type, c.tags, c.content) for c, _ in found] == [
            (MemoryType.GOTCHA, (NOTE_TAG,), f"The user noted: {expected}")
        ], prompt
    # A request, a question, a feeling, or where things stand right now.
    for prompt in (
        "FYI can you look at the flaky test?",
        "heads up, the build is failing on main now",
        "btw what does this script do?",
        "fyi I love how this turned out",
        "FYI the deploy is currently down",
    ):
        found = extract_signals([user(prompt), assistant("Noted.")])
        assert [c for c, _ in found if NOTE_TAG in c.tags] == [], prompt


def test_a_short_prompt_that_states_a_fact_about_something_it_names_is_a_user_note() -> None:
    # Real shape (a CI fix): the user only says what a named thing is, with no "FYI" before it.
    for prompt in (
        ".skogai is private but we send a token for the accent to use",
        "the staging db runs on port 5433",
        "my build command is `make install` and my start command is `make run`",
        "`api/` listens on port 8080 behind nginx",
        "the app uses Postgres 15",
    ):
        found = extract_signals([user(prompt), assistant("Noted.")])
        assert [(c.type, c.tags, c.content) for c, _ in found] == [
            (MemoryType.GOTCHA, (NOTE_TAG,), f"The user noted: {prompt}")
        ], prompt
    # A request, a feeling, where things stand now, a paste, or a thing it does not name.
    for prompt in (
        "The `Sidebar` component needs a logout button",
        "The target acquisitions need spacing between them",
        "the `parse_date` helper is wrong",
        "The progress bar is too thin",
        "the `/users` endpoint returns 500 for admins",
        "the `checkout` test is flaky on CI",
        "the upload page is crashing on Safari 15",
        "the build on main is failing since 0.9.3",
        "the tests in tests/api pass now",
        "our CI runners have no network access",
        "This looks really crappy.",
        "~/Projects/medianator ❯ cargo run --release  main [~7 ?3] is 📦 v0.1.0 via 🦀 v1.70.0",
        "config.yml is where the ports live\n\nand also please fix the health check in api/health.py",
    ):
        found = extract_signals([user(prompt), assistant("Noted.")])
        assert [c for c, _ in found if NOTE_TAG in c.tags] == [], prompt
