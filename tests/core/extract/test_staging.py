"""Generated or local files that `git add -A` staged or a commit took in: read from the
`git status` listings, commit outputs and unstage commands of a turn, in the shapes git prints."""

from __future__ import annotations

import pytest

from cortex.core.extract.staging import extract_staging, looks_local
from cortex.core.extract.structural import extract_structural
from cortex.core.extract.transcript import Message, ToolUse
from cortex.core.model import Candidate, Layer, MemoryType
from tests.support.transcript_builders import assistant, bash, tool, user

ROOT = "/home/dev/proj"

# `git add -A && git status` as git prints it: tab-indented entries under each heading.
STATUS = """On branch main
Your branch is ahead of 'origin/main' by 1 commit.

Changes to be committed:
  (use "git restore --staged <file>..." to unstage)
\tmodified:   flake.nix
\tnew file:   flake.nix.bak
\tnew file:   logs/chat.json
\tnew file:   logs/stop.json
\tnew file:   result
\tnew file:   tests/simple-test.nix

Changes not staged for commit:
  (use "git add <file>..." to update what will be committed)
\tmodified:   logs/notification.log

Untracked files:
  (use "git add <file>..." to include in what will be committed)
\ttmp/
"""
COMMIT = """[fix-token 3a0da47] fix: Update workflows to use GH_TOKEN
 21 files changed, 9939 insertions(+), 2 deletions(-)
 create mode 100644 .claude/data/sessions/0f9c.json
 create mode 100644 .claude/data/sessions/4ba3.json
 create mode 100644 .github/workflows/ci.yml
 create mode 100644 logs/chat.json
"""


def run(*uses: ToolUse) -> list[Candidate]:
    messages: list[Message] = [user("commit the work"), assistant(uses=uses)]
    return [c for c, _ in extract_staging(messages, ROOT)]


def write(path: str, tid: str) -> ToolUse:
    return tool("Write", {"file_path": f"{ROOT}/{path}", "content": "x"}, tid=tid)


@pytest.mark.parametrize(
    "path",
    [
        "logs/chat.json",
        "server/logs/app.json",
        "build.log",
        "flake.nix.bak",
        "src/app.py.orig",
        "notes.txt~",
        "result",
        "result-bin",
        "pkg/__pycache__/m.cpython-312.pyc",
        "web/node_modules/x/index.js",
        ".DS_Store",
        ".claude/data/sessions/0f9c.json",
        ".claude/settings.local.json",
        ".env",
        "web/.env.local",
        ".env.production",
    ],
)
def test_files_that_running_something_writes_look_local(path: str) -> None:
    assert looks_local(path)


@pytest.mark.parametrize(
    "path",
    [
        "src/result.ts",
        "lib/result",  # only `nix build`'s link at the root
        "docs/logs.md",
        "logs.md",
        ".claude/settings.json",
        ".claude/hooks/stop.py",
        ".claude/commands/review.md",
        "CLAUDE.md",
        "package-lock.json",
        "mix.lock",
        ".env.example",
        ".env.template",
        "config/.env.defaults",
        ".envrc",
        "data/sessions.json",  # a project's own data folder is the project's
    ],
)
def test_source_and_shared_configuration_do_not(path: str) -> None:
    assert not looks_local(path)


def test_local_files_left_staged_by_git_add_all_are_where_the_index_stands() -> None:
    (note,) = run(bash("git add -A && git status", STATUS, tid="1"))
    assert note.type is MemoryType.PROGRESS and note.layer is Layer.STRUCTURAL
    assert note.content == (
        "Staged and not committed: files this session did not write that look generated or local: "
        "flake.nix.bak, result, logs/ (2 files); staged by `git add -A`"
    )
    # Not staged, untracked, or meant (flake.nix, the test) is not named.
    assert "notification" not in note.content and "tmp" not in note.content
    assert note.tags == ("state:index:flake.nix.bak,logs/,result",)


def test_a_file_written_by_a_windows_path_was_meant_too() -> None:
    listing = "Changes to be committed:\n\tnew file:   logs/setup.log\n"
    messages: list[Message] = [
        user("write the setup log"),
        assistant(uses=(tool("Write", {"file_path": "C:\\Users\\dev\\proj\\logs\\setup.log"}, tid="1"),)),
        assistant(uses=(bash("git add -A && git status", listing, tid="2"),)),
    ]
    assert extract_staging(messages, "C:/Users/dev/proj") == []


def test_files_the_turn_wrote_or_added_by_name_were_meant() -> None:
    found = run(
        write("flake.nix.bak", "1"),
        bash("git add logs/ result && git status", STATUS, tid="2"),
    )
    assert found == []


def test_a_commit_that_took_local_files_in_is_a_gotcha_with_its_size() -> None:
    listing = (
        "On branch fix-token\nChanges to be committed:\n\tmodified:   logs/stop.json\n\tmodified:   ci.yml\n"
    )
    (note,) = run(
        bash("git add -A && git status", listing, tid="1"),
        bash('git commit -m "fix: Update workflows to use GH_TOKEN"', COMMIT, tid="2"),
    )
    assert note.type is MemoryType.GOTCHA and note.priority == 5
    assert note.content == (
        'Commit 3a0da47 "fix: Update workflows to use GH_TOKEN" (21 files changed) took in files '
        "this session did not write that look generated or local: logs/ (2 files), .claude/data/ (2 files); "
        "staged by `git add -A`"
    )


def test_a_commit_replaces_the_staged_state_of_the_same_files() -> None:
    listing = "Changes to be committed:\n\tnew file:   logs/chat.json\n\tnew file:   logs/stop.json\n"
    (staged,) = run(bash("git status", listing, tid="1"))
    commit = (
        "[main 1a2b3c4] chore: add logs\n 2 files changed\n"
        " create mode 100644 logs/chat.json\n create mode 100644 logs/stop.json\n"
    )
    (committed,) = run(bash('git commit -m "chore: add logs"', commit, tid="2"))
    assert staged.type is MemoryType.PROGRESS and committed.type is MemoryType.GOTCHA
    assert staged.tags == committed.tags == ("state:index:logs/",)
    assert "`git" not in staged.content  # the turn staged nothing: the index already held them


def test_local_files_unstaged_before_the_commit_are_a_convention() -> None:
    after = "Changes to be committed:\n\tmodified:   README.md\n\tnew file:   bun.lock\n"
    created = "[main 8e63592] feat: Migrate from npm to Bun\n 9 files changed\n create mode 100644 bun.lock\n"
    (note,) = run(
        bash("git add -A && git status", STATUS, tid="1"),
        bash("git restore --staged logs/*.json flake.nix.bak result", tid="2"),
        bash("git status", after, tid="3"),
        bash('git commit -m "feat: Migrate from npm to Bun"', created, tid="4"),
    )
    assert note.type is MemoryType.PATTERN
    assert note.content == (
        "Kept out of commits: files this session did not write that look generated or local: "
        "flake.nix.bak, result, logs/ (2 files); staged by `git add -A`; "
        "unstaged with `git restore --staged logs/*.json flake.nix.bak result`"
    )


@pytest.mark.parametrize(
    "command",
    [
        "git reset HEAD logs/",
        "git reset",
        "git rm -r --cached logs",
        "git restore -S logs/chat.json logs/stop.json",
    ],
)
def test_every_way_of_unstaging_takes_the_files_out(command: str) -> None:
    listing = "Changes to be committed:\n\tnew file:   logs/chat.json\n\tnew file:   logs/stop.json\n"
    (note,) = run(bash("git status", listing, tid="1"), bash(command, tid="2"))
    assert note.type is MemoryType.PATTERN and command in note.content


@pytest.mark.parametrize(
    "command", ["git stash", "git stash push -m wip", "git stash -u", "git reset --hard HEAD"]
)
def test_a_stash_or_a_hard_reset_leaves_nothing_staged_and_keeps_nothing_out(command: str) -> None:
    listing = "Changes to be committed:\n\tnew file:   logs/chat.json\n"
    assert run(bash("git add -A && git status", listing, tid="1"), bash(command, tid="2")) == []


@pytest.mark.parametrize("command", ["git stash --keep-index", "git stash push -k -m wip"])
def test_a_stash_that_keeps_the_index_leaves_the_files_staged(command: str) -> None:
    listing = "Changes to be committed:\n\tnew file:   logs/chat.json\n"
    (note,) = run(bash("git add -A && git status", listing, tid="1"), bash(command, tid="2"))
    assert note.type is MemoryType.PROGRESS and "logs/chat.json" in note.content


def test_a_refused_unstage_or_a_refused_commit_leaves_the_files_staged() -> None:
    listing = "Changes to be committed:\n\tnew file:   logs/chat.json\n"
    hook = "Pre-commit validation failed:\n[FORMAT] Code is not formatted."
    (note,) = run(
        bash("git status", listing, tid="1"),
        bash(
            "git reset HEAD .", "The user doesn't want to proceed with this tool use.", rejected=True, tid="2"
        ),
        bash('git add -A && git commit -m "wip"', hook, error=True, tid="3"),
    )
    assert note.type is MemoryType.PROGRESS and "logs/chat.json" in note.content


def test_short_status_reads_the_index_column_only() -> None:
    short = 'A  logs/app.log\n M logs/run.log\nM  flake.nix.bak\n?? tmp/\nR  old.bak -> "new file.bak"\n'
    (note,) = run(bash("git add -A && git status --short", short, tid="1"))
    assert note.content.endswith(": logs/app.log, flake.nix.bak, new file.bak; staged by `git add -A`")


def test_a_folder_of_files_is_counted_not_listed() -> None:
    names = [f"{i}f9c7906-02a9-4191-8e90-f605a59d0074.json" for i in range(3)]
    listing = "Changes to be committed:\n" + "".join(
        f"\tnew file:   .claude/data/sessions/{n}\n" for n in names
    )
    (note,) = run(bash("git status", listing, tid="1"))
    assert note.content.endswith("look generated or local: .claude/data/ (3 files)")


def test_a_tree_is_counted_at_the_folder_that_makes_it_local() -> None:
    listing = "Changes to be committed:\n" + "".join(
        f"\tnew file:   web/node_modules/pkg{i}/lib/index.js\n" for i in range(40)
    )
    listing += "\tnew file:   app/__pycache__/a.cpython-312.pyc\n\tnew file:   app/main.py.orig\n"
    (note,) = run(bash("git add -A && git status", listing, tid="1"))
    assert note.content.endswith(
        ": web/node_modules/ (40 files), app/__pycache__/a.cpython-312.pyc, app/main.py.orig; "
        "staged by `git add -A`"
    )
    assert note.tags == ("state:index:app/__pycache__/a.cpython-312.pyc,app/main.py.orig,web/node_modules/",)


def test_git_options_before_the_subcommand_are_skipped() -> None:
    listing = "Changes to be committed:\n\tnew file:   logs/chat.json\n"
    (note,) = run(bash("git -c core.quotepath=off -C . status", listing, tid="1"))
    assert note.content.endswith("look generated or local: logs/chat.json")
    assert run(bash("git -C . add -A && git -C . status", listing, tid="1"), bash("git -C . add :/", tid="2"))


@pytest.mark.parametrize("flags", ["-sb", "-s", "--porcelain", "--short --branch"])
def test_every_short_form_of_status_is_read(flags: str) -> None:
    short = "## main...origin/main\nA  logs/app.log\n M src/app.py\n"
    (note,) = run(bash(f"git status {flags}", short, tid="1"))
    assert note.content.endswith("look generated or local: logs/app.log")


def test_a_turn_that_commits_only_source_says_nothing() -> None:
    listing = "Changes to be committed:\n\tmodified:   lib/app.ex\n\tnew file:   lib/otel.ex\n"
    listing += "\tmodified:   mix.lock\n"
    commit = "[main 12e2d10] feat: add OTEL\n 3 files changed\n create mode 100644 lib/otel.ex\n"
    assert (
        run(
            bash("git add -A && git status", listing, tid="1"),
            bash('git commit -m "feat: add OTEL"', commit, tid="2"),
        )
        == []
    )
    assert run(bash("git status", "On branch main\nnothing to commit, working tree clean\n", tid="1")) == []


def test_the_structural_layer_reads_staging_per_turn() -> None:
    messages = [user("commit it"), assistant(uses=(bash("git add -A && git status", STATUS, tid="1"),))]
    found = [c for c, _ in extract_structural(messages, project_root=ROOT)]
    assert [c.tags for c in found if c.content.startswith("Staged and not committed")] == [
        ("state:index:flake.nix.bak,logs/,result",)
    ]
