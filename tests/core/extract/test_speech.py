"""What an assistant says that is not a finding: intent, acknowledgements, guesses, options
left to the user, and the user's prompt rejecting the previous answer. Shapes from real
Claude Code sessions, shortened."""

from __future__ import annotations

from cortex.core.extract.speech import (
    ends_asking,
    is_guess,
    is_question,
    is_talk,
    leaves_it_open,
    only_asks,
    option_lines,
    options_in,
    picked_option,
    rejects_answer,
    reported_merge,
    without_acknowledgement,
    without_offers,
)


def test_intent_and_bare_acknowledgements_are_talk() -> None:
    for talk in (
        "Let me create a simplified test first to isolate the problem:",
        "I'll update the CI workflow to skip submodule checkout or handle this gracefully.",
        "Now let me commit the changes and create a PR with the workflow fixes.",
        "You're absolutely right!",
        "You're right, let me explain the issue clearly:",
        "Perfect!",
    ):
        assert is_talk(talk), talk
    for finding in (
        "The `.skogai` submodule repository is private, which is why the GitHub Actions can't access it.",
        "Let's go with runtime-checked queries because the build must not need a database.",
        "Letting the cache expire fixed it.",
        "I need to add the flake.nix to git first:",
    ):
        assert not is_talk(finding), finding


def test_an_acknowledgement_is_cut_from_the_sentence_it_opens() -> None:
    said = "You're right - I keep using `gh` commands which just make API calls to GitHub."
    assert without_acknowledgement(said) == "I keep using `gh` commands which just make API calls to GitHub."
    assert without_acknowledgement("Perfect! The simple test passed.") == "The simple test passed."
    assert without_acknowledgement("Great question about caching") == "Great question about caching"
    hmm = "Hmm, interesting - the table is missing because the fixture never runs migrations."
    assert without_acknowledgement(hmm) == "the table is missing because the fixture never runs migrations."
    assert (
        without_acknowledgement("Oh! my API calls don't tell me more.") == "my API calls don't tell me more."
    )
    assert (
        without_acknowledgement("Right now the server runs on 3001.") == "Right now the server runs on 3001."
    )


def test_guesses_are_not_findings() -> None:
    assert is_guess("The issue is likely in the auto-stop timer configuration.")
    assert is_guess("Based on issue #227, the 500 error could be caused by sourcemaps.")
    assert not is_guess("The 500 came from the AWS us-east-1 outage, not from the migration.")


def test_options_questions_and_hand_offs_leave_it_open() -> None:
    options = [
        "The solution is to:",
        "1. Either create a Personal Access Token (PAT) and store it as a secret",
        "2. Or make the `.skogai` repository public",
        "3. Or remove the submodule checkout from the CI workflow",
    ]
    assert leaves_it_open(options)
    assert leaves_it_open(["3. Update Build & Start Commands in Render:", "4. Tell me when you're done"])
    settled = [
        "Root cause: the default GITHUB_TOKEN cannot read other private repositories",
        "Or so it seems",
    ]
    assert not leaves_it_open(settled)


def test_lettered_choices_are_options_in_any_language() -> None:
    # Real shape (2.1.x, an Italian session): a menu of lettered choices after the findings.
    menu = [
        "Hermes intatto, primario. Nessuno switch fatto.",
        "Decisione finale, scegli:",
        "- (A) Coexistence: tengo jcode buildato in scratchpad come alternativa, Hermes primario.",
        "- (B) Scarta: cleanup `brew uninstall rust pkgconf` + rimuovo clone scratchpad.",
    ]
    assert option_lines(menu) == 2 and leaves_it_open(menu)
    assert leaves_it_open(["Pick one:", "A) Keep the cache", "B) Drop it and rebuild"])
    # Enumerations are not choices: numbered steps, a lower-case "a)" and a bare "(A)word".
    steps = ["(1) Build the fork", "(2) Install it", "a) the token", "b) the secret"]
    steps += ["(A)dd the key", "(B)uild"]
    assert option_lines(steps) == 0 and not leaves_it_open(steps)


def test_an_offer_to_do_more_is_not_a_finding() -> None:
    lines = ["Monitor for:", "- Success message -> proceed normally", "Need me to check Convex status?"]
    assert without_offers(lines) == lines[:2]


def test_a_prompt_that_opens_by_rejecting_the_answer() -> None:
    for prompt in (
        "wrong, you must open the link to see the errors",
        "read what I said. also we are literally downloading this from the same user and org",
        "No, that's not the cause: the outage was on AWS",
        "that's not what I asked",
        # Taking back the direction the answer set: what it decided no longer holds.
        "Actually no, let's not add Redis to this service. Use Postgres instead.",
        "wait, no - keep the old endpoint",
        "No wait, the queue should stay in memory",
        "scratch that, we will ship the CLI first",
    ):
        assert rejects_answer(prompt), prompt
    for prompt in (
        "now add the tests",
        "Nothing changed after the restart, can you look again?",
        "no worries, continue",
        "I think I saw it merge just now",
        "Actually, nothing is wrong with the tests",
        "wait for the build to finish, then deploy",
        "no worries, wait for CI",
    ):
        assert not rejects_answer(prompt), prompt


def test_a_next_step_handed_to_the_user_leaves_it_open() -> None:
    for line in ("The Vercel build should pass once you push.", "Let me know once the page loads"):
        assert leaves_it_open([line]), line
    # A later "when you ...", a quoted error, or a closing offer leaves the state as it is.
    for line in (
        "When you add purchase records later, they get a divider",
        "Error: Try again later",
        "Let me know if you need anything else!",
    ):
        assert not leaves_it_open([line]), line


def test_a_prompt_that_reports_a_merge() -> None:
    said = {
        "i merged it just now - literally three lines of code": "",
        "Merged! thanks": "",
        "ok, PR #12 is merged": "12",
        "It's merged": "",
    }
    for prompt, number in said.items():
        assert reported_merge(prompt) == number, prompt
    for prompt in ("merged it?", "merge it please", "I merged main into my branch", "can you merge PR #3"):
        assert reported_merge(prompt) is None, prompt


def test_an_offer_and_the_choices_under_it_are_left_out() -> None:
    lines = [
        "The Consolidated Format:",
        "Would you like to:",
        "1. Push and create PR for the consolidation changes?",
        "2. Review the changes first?",
        "The branch `fix/consolidate-github-action-messages` holds the change.",
    ]
    assert without_offers(lines) == [
        "The Consolidated Format:",
        "The branch `fix/consolidate-github-action-messages` holds the change.",
    ]


def test_questions_are_told_from_statements_that_hold_a_question_mark() -> None:
    assert is_question("What router model do you have? (Some require SSH to be enabled first)")
    assert is_question("Is it still the submodule thing, or **something else?**")
    assert not is_question("The endpoint is `/api/media?page=1&limit=5` and it returns JSON.")
    assert not is_question("The default `GITHUB_TOKEN` cannot read other private repositories.")


def test_lines_that_only_ask_and_lines_that_end_asking() -> None:
    asking = ["A few questions:", "- Do you know the IP? (Often `192.168.1.1`)", "- Which model is it?"]
    assert only_asks(asking) and ends_asking(asking)
    assert only_asks([*asking, '[@certainty:"90":"ask first"]'])  # an annotation asks nothing
    mixed = ["Status:", "- The router runs OpenWrt 23.05.", "- Which containers should run?"]
    assert not only_asks(mixed) and ends_asking(mixed)
    assert not only_asks(["A heading alone?"]) and not ends_asking(["Done.", "[Image #1]"])
    # Real shape (b3, 2.0.x): a statement, then questions, then the user's annotation. The
    # statement and the annotation are more than a question.
    stated = [
        "I'm overcomplicating things.",
        "The workflows are still failing after the merge. What's happening with them now?",
        "Since you just merged the PR, did the workflows run successfully or are they still broken?",
        '[@certainty:"100":"I should just ask you directly instead of digging through API calls"]',
    ]
    assert not only_asks(stated) and not only_asks(["Questions:", stated[1]])
    assert only_asks(["Before I start:", "1. Which branch? (`main` or `develop`)", "2. May I push?"])


def test_a_prompt_that_only_picks_an_option() -> None:
    picks = {
        "A": 1,
        "b.": 2,
        "Option 2 please": 2,
        "go with B": 2,
        "let's go with the second one": 2,
        "ok, option A": 1,
        "**C**": 3,
        "B sounds good": 2,
    }
    for prompt, place in picks.items():
        assert picked_option(prompt) == place, prompt
    # Saying more than a pick (or asking) is not one: what else it says is read as any prompt.
    for prompt in ("A but use R2 instead of S3", "I think B is better?", "do it", "yes", "I", "Which one?"):
        assert picked_option(prompt) is None, prompt


def test_the_options_a_section_lays_out_by_place() -> None:
    section = "Option 1: Fly.io\nOne `fly deploy`, Postgres included.\nOption 2: Render\nFree tier sleeps."
    assert options_in(section) == {
        1: "Fly.io\nOne `fly deploy`, Postgres included.",
        2: "Render\nFree tier sleeps.",
    }
    listed = (
        "I see two ways:\n1. Client-side - flashes the page.\n2. Pin auth 0.0.81 - blocks upgrades.\nWhich?"
    )
    assert options_in(listed) == {
        1: "Client-side - flashes the page.",
        2: "Pin auth 0.0.81 - blocks upgrades.",
    }
    assert options_in("A) Keep it\nB) Drop it") == {1: "Keep it", 2: "Drop it"}
    # Two lists (a place twice) are not one set of options; prose opens with no label.
    assert options_in("1. Build\n2. Test\n\n1. Deploy") == {}
    assert options_in("A quick note on the cache.\nPlan: ship it.") == {}
