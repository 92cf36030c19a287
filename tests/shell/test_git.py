"""Tests for cortex.shell.git against real repositories in tmp_path."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from cortex.core.extract.pipeline import GitContext
from cortex.shell import git

GIT_IDENTITY = ["-c", "user.name=cortex test", "-c", "user.email=test@example.com"]


def run(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *GIT_IDENTITY, "-C", str(root), *args], check=True, capture_output=True, text=True
    )
    return done.stdout.strip()


def commit_all(root: Path, message: str) -> str:
    run(root, "add", "-A")
    run(root, "commit", "-q", "-m", message)
    return run(root, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    run(root, "init", "-q", "-b", "main")
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("print('app')\n", "utf-8")
    (root / "README.md").write_text("# proj\n", "utf-8")
    commit_all(root, "first commit")
    return root


def test_outside_a_repository_everything_is_unknown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))  # even if /tmp sits in a repo
    assert git.read_branch(tmp_path) is None
    assert git.read_head(tmp_path) is None
    assert git.read_toplevel(tmp_path) is None
    assert git.read_git_common_dir(tmp_path) is None
    assert git.read_changed_files(tmp_path) == ()
    assert git.read_recent_commits(tmp_path) == ()
    assert git.read_paths_at_head(tmp_path, ["a.py"]) is None
    assert git.file_exists_at_head(tmp_path, "a.py") is None
    assert git.read_head_ref(tmp_path) == git.HeadRef(None, None)
    assert git.read_git_context(tmp_path) == GitContext()


def test_branch_head_toplevel_and_common_dir(repo: Path) -> None:
    sha = run(repo, "rev-parse", "HEAD")
    assert git.read_branch(repo) == "main"
    assert git.read_head(repo) == sha
    assert git.read_toplevel(repo) == repo.resolve()
    assert git.read_toplevel(repo / "src") == repo.resolve()
    assert git.read_git_common_dir(repo) == (repo / ".git").resolve()
    assert git.read_git_common_dir(repo / "src") == (repo / ".git").resolve()
    assert git.read_head_ref(repo) == git.HeadRef("main", sha)
    assert git.read_head_ref(repo).name == "main"


def test_changed_files_cover_modified_staged_untracked_and_renamed(repo: Path) -> None:
    (repo / "src" / "app.py").write_text("print('changed')\n", "utf-8")
    (repo / "new file.txt").write_text("hi\n", "utf-8")
    (repo / "staged.py").write_text("x = 1\n", "utf-8")
    run(repo, "add", "staged.py")
    run(repo, "mv", "README.md", "DOCS.md")
    changed = set(git.read_changed_files(repo))
    assert changed == {"src/app.py", "new file.txt", "staged.py", "DOCS.md"}
    assert len(git.read_changed_files(repo, limit=2)) == 2


def test_recent_commits_newest_first_and_since_a_revision(repo: Path) -> None:
    first = run(repo, "rev-parse", "HEAD")
    for i in range(3):
        (repo / f"f{i}.txt").write_text(str(i), "utf-8")
        commit_all(repo, f"add f{i}")
    commits = git.read_recent_commits(repo, limit=10)
    assert [c.subject for c in commits] == ["add f2", "add f1", "add f0", "first commit"]
    assert commits[-1].sha == first and commits[0].date[:4].isdigit()
    assert [c.subject for c in git.read_recent_commits(repo, limit=2)] == ["add f2", "add f1"]
    assert [c.subject for c in git.read_recent_commits(repo, since_rev=first)] == [
        "add f2",
        "add f1",
        "add f0",
    ]


def test_files_at_head_follow_commits_not_the_work_tree(repo: Path) -> None:
    assert git.file_exists_at_head(repo, "src/app.py") is True
    assert git.file_exists_at_head(repo, "src/missing.py") is False
    (repo / "untracked.py").write_text("", "utf-8")
    assert git.file_exists_at_head(repo, "untracked.py") is False
    (repo / "src" / "app.py").unlink()
    assert git.file_exists_at_head(repo, "src/app.py") is True  # deleted, not committed yet
    commit_all(repo, "remove app")
    assert git.file_exists_at_head(repo, "src/app.py") is False
    found = git.read_paths_at_head(repo, ["README.md", "src/app.py", "nope", "README.md", "with space.md"])
    assert found == frozenset({"README.md"})
    assert git.read_paths_at_head(repo, []) == frozenset()


def test_unborn_repository_has_a_branch_but_no_head(tmp_path: Path) -> None:
    run(tmp_path, "init", "-q", "-b", "trunk")
    assert git.read_branch(tmp_path) == "trunk"
    assert git.read_head(tmp_path) is None
    assert git.read_paths_at_head(tmp_path, ["a.py"]) is None
    assert git.read_head_ref(tmp_path) == git.HeadRef("trunk", None)


def test_detached_head_has_no_branch_and_is_keyed_by_sha(repo: Path) -> None:
    sha = run(repo, "rev-parse", "HEAD")
    run(repo, "checkout", "-q", "--detach")
    assert git.read_branch(repo) is None
    assert git.read_head(repo) == sha
    ref = git.read_head_ref(repo)
    assert ref == git.HeadRef(None, sha) and ref.name == sha


def test_head_ref_reads_packed_refs_and_slashed_branches(repo: Path) -> None:
    run(repo, "checkout", "-q", "-b", "feat/deep/name")
    sha = commit_all_empty(repo)
    run(repo, "pack-refs", "--all", "--prune")
    assert not (repo / ".git" / "refs" / "heads" / "feat").exists()
    assert git.read_head_ref(repo) == git.HeadRef("feat/deep/name", sha)


def commit_all_empty(root: Path) -> str:
    run(root, "commit", "-q", "--allow-empty", "-m", "empty")
    return run(root, "rev-parse", "HEAD")


def test_worktree_reads_its_own_head_and_shares_the_common_dir(repo: Path, tmp_path: Path) -> None:
    wt = tmp_path / "wt"
    run(repo, "worktree", "add", "-q", "-b", "feat/wt", str(wt))
    sha = run(wt, "rev-parse", "HEAD")
    assert (wt / ".git").is_file()
    assert git.read_head_ref(wt) == git.HeadRef("feat/wt", sha)
    assert git.read_branch(wt) == "feat/wt"
    assert git.read_git_common_dir(wt) == (repo / ".git").resolve()
    assert git.read_git_dir(wt) == (repo / ".git" / "worktrees" / "wt").resolve()
    assert git.read_head_ref(repo).branch == "main"


def test_git_context_for_the_extractors(repo: Path) -> None:
    (repo / "src" / "app.py").write_text("changed\n", "utf-8")
    ctx = git.read_git_context(repo)
    assert ctx == GitContext(
        branch="main", head=run(repo, "rev-parse", "HEAD"), changed_files=("src/app.py",)
    )


def test_a_git_that_does_not_answer_in_time_gives_none(repo: Path) -> None:
    assert git.run_git(repo, "rev-parse", "HEAD") is not None
    assert git.run_git(repo, "rev-parse", "HEAD", timeout_s=0.0) is None


def test_no_git_on_path_gives_none(repo: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    assert git.read_head(repo) is None
    assert git.read_changed_files(repo) == ()
    assert git.read_head_ref(repo).branch == "main"  # the file read needs no git at all


def test_a_broken_dot_git_file_is_not_a_repository(tmp_path: Path) -> None:
    (tmp_path / ".git").write_text("not a pointer\n", "utf-8")
    assert git.read_git_dir(tmp_path) is None
    assert git.read_head_ref(tmp_path) == git.HeadRef(None, None)
