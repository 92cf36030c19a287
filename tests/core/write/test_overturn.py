"""A change of course and the earlier decisions it overturns."""

from __future__ import annotations

import pytest

from cortex.core.write.overturn import (
    MIN_SHARED_RULE_WORDS,
    Change,
    changes_of_course,
    overturns,
    redirection,
    returns_to,
    reverses,
)


@pytest.mark.parametrize(
    ("text", "old", "new"),
    [
        ("Switched the pricing cache from SQLite to Redis for concurrent writers.", "sqlite", "redis"),
        ("feat: migrate the frontend from npm to Bun", "npm", "bun"),
        ("Moved CI from `travis` to `github-actions` for the release builds", "travis", "github-actions"),
        ("Replace moment with dayjs in the date helpers", "moment", "dayjs"),
        ("We dropped Jest in favour of Vitest for the unit tests", "jest", "vitest"),
        ("Sessions live in Postgres instead of Redis now", "redis", "postgres"),
        ("use tabs, not spaces, for indentation", "spaces", "tabs"),
    ],
)  # fmt: skip
def test_a_change_of_course_names_what_it_left_and_what_replaced_it(text: str, old: str, new: str) -> None:
    (change,) = changes_of_course(text)
    assert (change.old, change.new) == (old, new)


def test_no_change_of_course_without_a_phrasing_that_states_one() -> None:
    for text in (
        "We chose SQLite for the cache because it needs no service.",
        "Copied the rows from staging to production",  # no verb of change before "from"
        "Switched from using the old flow to the new one",  # common words, not names
    ):
        assert changes_of_course(text) == [], text


def test_an_earlier_decision_is_overturned_only_when_it_is_about_the_same_thing() -> None:
    (change,) = changes_of_course("Switched the pricing cache from SQLite to Redis for concurrent writers.")
    assert overturns(change, "We'll cache pricing responses in SQLite (`cache.db`): no extra service.")
    # Another subject that also uses SQLite, one that already names Redis, one without SQLite.
    assert not overturns(change, "Use SQLite for the job queue.")
    assert not overturns(change, "The pricing cache may move to Redis later; SQLite for now.")
    assert not overturns(change, "We'll cache pricing responses in memory.")
    # The name as a whole word: `sqlite3` and `pysqlite` are other names.
    assert not overturns(
        Change("sqlite", "redis", frozenset({"pricing", "cache"})), "pricing cache in sqlite3"
    )


def test_words_are_shared_by_stem_and_a_rule_of_the_user_needs_one() -> None:
    (change,) = changes_of_course("From now on use pnpm instead of npm for installs in this repo.")
    earlier = "The user's rule: Always use npm for installing packages in this repo, never yarn."
    # `installs` and `installing` are one word; "repo", "always" and "never" say nothing.
    assert change.about == frozenset({"installs"})
    assert overturns(change, earlier, MIN_SHARED_RULE_WORDS)
    assert not overturns(change, earlier)  # a report's decision needs two
    (tabs,) = changes_of_course("use tabs not spaces for indentation from now on")
    assert overturns(tabs, "The user's rule: Always indent with spaces in this repo.", MIN_SHARED_RULE_WORDS)
    publish = "The user's rule: Never run npm publish from a laptop."
    assert not overturns(change, publish, MIN_SHARED_RULE_WORDS)


def test_a_redirect_names_only_the_new_choice() -> None:
    change = redirection("actually, let's use Postgres for sessions instead, we already run it")
    assert change == Change("", "postgres", frozenset({"sessions"}))
    assert overturns(change, "We'll keep user sessions in Redis with a 24h TTL.", 1)
    assert not overturns(change, "Sessions live in Postgres already.", 1)  # names the new choice
    assert not overturns(change, "Requests are logged as JSON lines.", 1)  # about something else
    for text in ("keep it instead", "let's go with vitest instead of jest", "use the old one"):
        assert redirection(text) is None, text


def test_a_note_of_several_items_is_overturned_only_when_each_is() -> None:
    (change,) = changes_of_course("Switched the pricing cache from SQLite to Redis.")
    both = "Decisions\n- The pricing cache lives in SQLite.\n- Pricing responses are logged as JSON."
    assert not overturns(change, both, 1)
    each = "Decisions\n- The pricing cache lives in SQLite.\n- Cache pricing for 5 minutes in SQLite."
    assert overturns(change, each, 1)


def test_going_back_names_what_it_returns_to_and_undoes_the_change_that_left_it() -> None:
    assert returns_to("bun breaks the convex deploy, let's go back to npm") == ["npm"]
    assert returns_to("Reverted to npm: Bun's runtime broke the Convex deploy.") == ["npm"]
    assert returns_to("Switched back to Next.js 15.2.3 and React 19") == ["next.js"]
    assert returns_to("revert the last commit") == []
    assert reverses("npm", "Migrated the package manager from npm to Bun for faster installs")
    assert reverses("npm", "Use Bun instead of npm for installs")
    # Naming it is not leaving it: a note that moved to it, or only mentions it, stays.
    assert not reverses("npm", "Switched the installs from yarn to npm")
    assert not reverses("npm", "Run npm ci in CI to install exactly the lockfile")
