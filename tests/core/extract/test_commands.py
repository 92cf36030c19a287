"""Shell command classification and parsing for the structural layer."""

from __future__ import annotations

import pytest

from cortex.core.extract.commands import (
    inline_env,
    is_build_command,
    is_cortex_command,
    is_git_commit,
    is_git_revert,
    is_same_command,
    is_test_command,
    only_discards,
    parse_commit,
    parse_error_line,
    parse_git_add_paths,
    render_command,
    split_steps,
    without_inline_env,
)
from cortex.core.extract.commit_subjects import undone_subject


@pytest.mark.parametrize(
    "command",
    [
        "pytest -q tests/core",
        "python -m pytest -x",
        "uv run pytest",
        "npm test",
        "pnpm run test -- --watch=false",
        "cargo test --all",
        "go test ./...",
        "mix test --seed 0 2>&1 | tail -5",
        "make test",
        "cd web && npx vitest run",
    ],
)
def test_test_commands(command: str) -> None:
    assert is_test_command(command)


@pytest.mark.parametrize("command", ["ls -la", "cat pytest.ini", "git commit -m 'add tests'", "echo test"])
def test_not_test_commands(command: str) -> None:
    assert not is_test_command(command)


def test_build_commit_and_own_commands() -> None:
    assert is_build_command("npm run build") and is_build_command("mypy cortex")
    assert not is_build_command("npm test") and not is_build_command("cat x")
    assert is_git_commit("git -C repo commit -am x") and not is_git_commit("git log")
    assert is_cortex_command("cortex recall sqlite") and not is_cortex_command("echo cortex")


def test_render_command_drops_plumbing() -> None:
    assert render_command("cd /repo && mix test --seed 0 2>&1 | tail -30") == "mix test --seed 0"
    assert render_command("pytest -q\nsecond line") == "pytest -q"
    # A filter's quoted `|` is part of its pattern, not a pipe (a real Rust session's filters).
    assert render_command('cargo build --release 2>&1 | grep -E "error|Compiling|Finished" | head') == (
        "cargo build --release"
    )
    assert render_command("make 2>&1 | grep -E 'warning|error'") == "make"
    assert render_command("ps aux | grep medianator | grep -v grep") == "ps aux"
    assert render_command("x " * 200).endswith("…")
    # Setup statements go too; a command's own environment stays.
    trash = 'cd "/p/AI Projects/app" && TRASH=/tmp/scratch/trash && mkdir -p "$TRASH" && mv a "$TRASH/"'
    assert render_command(trash) == 'mkdir -p "$TRASH" && mv a "$TRASH/"'
    assert render_command("export_dir=out; make dist") == "make dist"
    own = 'DATABASE_URL="sqlite://app.db" cargo build'
    assert render_command(own) == own
    # A line continued with a backslash is one line.
    assert render_command('curl -X POST http://localhost:8000/scan \\\n  -d "{}"') == (
        'curl -X POST http://localhost:8000/scan -d "{}"'
    )


def test_same_command_tolerates_small_retries() -> None:
    assert is_same_command("python gen.py", "python3 gen.py")
    assert is_same_command("pytest tests/a.py", "pytest tests/a.py")
    assert not is_same_command("pytest tests/a.py", "ruff check tests/a.py")
    assert not is_same_command("npm run build", "npm install left-pad")
    # Real retries: the URL quoted for zsh, the server sent to the background.
    assert is_same_command(
        "curl -s http://localhost:3000/api/media?page=1&limit=5 | python3 -m json.tool | grep -E 'id'",
        'curl -s "http://localhost:3000/api/media?page=1&limit=5" | python3 -m json.tool',
    )
    assert is_same_command(
        'DATABASE_URL="sqlite://m.db" ./target/release/medianator',
        'DATABASE_URL="sqlite://m.db" ./target/release/medianator 2>&1 &',
    )


def test_parse_commit() -> None:
    assert parse_commit("git commit -m x", "[main (root-commit) 1a2b3c4] first\n") == (
        "1a2b3c4",
        "first",
    )
    assert parse_commit('git commit -m "fix: a\\n\\nbody"', "") == ("", "fix: a")
    assert parse_commit("git commit -m 'single'", "") == ("", "single")
    assert parse_commit("git commit", "") == ("", "")
    # Output that shows nothing was committed, behind a status that hid it (real wordings).
    for command, output in (
        ('git commit -m "feat: parser" || true', "On branch main\nnothing to commit, working tree clean"),
        ('git commit -m "feat: parser" 2>&1 | tail -2', "husky - pre-commit hook exited with code 1 (error)"),
        (
            'git commit --dry-run -m "feat: parser"',
            "On branch main\nChanges to be committed:\n\tmodified: a.py",
        ),
    ):
        assert parse_commit(command, output) == ("", ""), output
    # A quiet commit says nothing, and what follows it does not undo it.
    quiet = 'git commit -q -m "feat: parser" && echo committed && git push'
    assert parse_commit(quiet, "committed\nTo github.com:dev/app.git") == ("", "feat: parser")


def test_variables_set_for_one_command() -> None:
    command = "DATABASE_URL=postgres://localhost:5433/app LOG='a b' pnpm run migrate"
    assert inline_env(command) == "DATABASE_URL=postgres://localhost:5433/app LOG='a b'"
    assert without_inline_env(command) == "pnpm run migrate"
    assert inline_env("pnpm run migrate") == "" and inline_env("X=1") == ""  # an assignment alone
    assert is_same_command(command, "pnpm run migrate")  # a retry with a variable set
    assert is_same_command("make", "make 2>&1") and not is_same_command("make", "cmake")


def test_what_a_revert_undoes() -> None:
    assert is_git_revert("git revert --no-edit HEAD") and is_git_revert("git -C app revert abc1234")
    assert not is_git_revert("git commit -m 'revert the retries'") and not is_git_revert("gitrevert x")
    assert undone_subject('Revert "Add retries"') == "Add retries"
    assert undone_subject('Revert "Revert "Add retries""') == 'Revert "Add retries"'
    assert undone_subject('Reapply "Add retries"') == 'Revert "Add retries"'  # git 2.43 on
    assert undone_subject("revert: feat(api): add retries") == "feat(api): add retries"
    assert undone_subject("Reverted the flaky test to skip") is None
    assert undone_subject("fix: revert to the old parser") is None


def test_git_add_paths() -> None:
    command = "git add a.py 'dir/b c.py' -- && git add -A && git add . && git commit -m x"
    assert parse_git_add_paths(command) == ["a.py", "dir/b c.py"]
    assert parse_git_add_paths("git add 'unterminated") == []
    # A pipe ends the step: what reads git's output is no path of it.
    assert parse_git_add_paths("git add -v a.py | tail -1") == ["a.py"]
    # A separator inside quotes is the message's, not the shell's.
    quoted = "git add 'a;b.py' && git commit -m \"fix: a | b; c && d\" && git push"
    assert parse_git_add_paths(quoted) == ["a;b.py"]
    # git's own options before the subcommand, and the pathspec for the whole tree.
    assert parse_git_add_paths("git -C app add src/a.py && git -c core.quotepath=off add b.py") == [
        "src/a.py",
        "b.py",
    ]
    assert parse_git_add_paths("git add :/ && git add *") == []


def test_a_command_line_splits_into_steps_outside_quotes_only() -> None:
    command = "git commit -m \"wip; tidy && more\" && echo 'a|b' | tail -1; x \\; y || z"
    assert [s.strip() for s in split_steps(command)] == [
        'git commit -m "wip; tidy && more"',
        "echo 'a|b'",
        "tail -1",
        "x \\; y",
        "z",
    ]
    assert split_steps("make 2>&1") == ["make 2>&1"]


def test_error_line_skips_the_exit_code_preamble() -> None:
    assert (
        parse_error_line("Exit code 1\ncat: x: No such file or directory")
        == "cat: x: No such file or directory"
    )
    assert parse_error_line("Exit code 1\nsomething odd") == "something odd"
    assert parse_error_line("") == ""


@pytest.mark.parametrize(
    "command",
    [
        "git checkout flake.nix",  # real: after a script half-rewrote the file
        "git checkout -- .",
        "git checkout HEAD -- src/app.ts",
        "git -C api restore src/",
        "git reset --hard",
        "git stash",
        "git clean -fd",
        "git status && git checkout package-lock.json",  # the look changes nothing
    ],
)
def test_commands_that_only_throw_work_away(command: str) -> None:
    assert only_discards(command)


@pytest.mark.parametrize(
    "command",
    [
        "git checkout main",
        "git checkout feature/login",
        "git checkout release/1.2",
        "git checkout -b fix/flake.nix",
        "git reset HEAD~1",
        "git stash pop",
        "git checkout flake.nix && npm install",  # the install may be the fix
        "git status",  # changes nothing at all
        "rm -rf node_modules",
    ],
)
def test_commands_that_do_more_than_throw_work_away(command: str) -> None:
    assert not only_discards(command)
