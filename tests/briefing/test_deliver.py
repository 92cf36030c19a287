"""The briefing use case on real stores and real git repositories: render, rules file, caches, CLI."""

from __future__ import annotations

import json
import logging
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from cortex.app import Cortex, new_id
from cortex.briefing.deliver import read_briefing, read_stale_ids, refresh_briefing
from cortex.cli.main import cli
from cortex.config import Settings
from cortex.core.briefing.compose import BriefingPart
from cortex.core.model import Memory, MemoryType, Scope, Source, Status
from cortex.core.text import content_hash
from cortex.paths import Paths
from cortex.shell.briefing_files import BEGIN_MARKER, END_MARKER, digest_text, read_cache, read_rules_block

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
GIT_IDENTITY = ["-c", "user.name=cortex test", "-c", "user.email=test@example.com"]
RULES = Path(".claude") / "rules" / "cortex-memory.md"


def git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *GIT_IDENTITY, "-C", str(root), *args], check=True, capture_output=True, text=True
    )
    return done.stdout.strip()


def make_project(tmp_path: Path, *, with_git: bool = True, settings: Settings | None = None) -> Cortex:
    """A project directory (a git repo with one commit unless told otherwise) and its context."""
    root = tmp_path / "proj"
    root.mkdir()
    (root / "README.md").write_text("# proj\n", "utf-8")
    if with_git:
        git(root, "init", "-q", "-b", "main")
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "init")
    return Cortex(Paths(root, tmp_path / "home"), settings or Settings(), clock=lambda: NOW)


def add(
    cx: Cortex,
    content: str,
    mtype: MemoryType = MemoryType.DECISION,
    *,
    branch: str | None = None,
    files: tuple[str, ...] = (),
    session: str | None = None,
    pinned: bool = False,
    scope: Scope = Scope.PROJECT,
) -> Memory:
    """Store one memory directly (the write gate is not under test here)."""
    memory = Memory(
        id=new_id(),
        content=content,
        summary=content[:60],
        type=mtype,
        scope=scope,
        confidence=0.8,
        priority=5,
        pinned=pinned,
        source=Source(session_id=session, branch=branch, files=files),
        tags=(),
        access_count=0,
        last_accessed=None,
        created=NOW,
        updated=NOW,
        status=Status.ACTIVE,
        content_hash=content_hash(content),
    )
    store = cx.write_store(scope)
    with store.transaction():
        store.insert_memory(memory, "test", NOW)
    return memory


@pytest.fixture
def no_outer_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make git stop at tmp_path, so a non-git project is one even if /tmp sits in a repo."""
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))


@pytest.fixture
def captured() -> Iterator[list[logging.LogRecord]]:
    """Warnings from cortex.briefing.deliver, whatever handlers other tests left on the `cortex` logger."""
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    logger = logging.getLogger("cortex.briefing.deliver")
    handler = Keep(level=logging.WARNING)
    logger.addHandler(handler)
    try:
        yield records
    finally:
        logger.removeHandler(handler)


# --- rendering and delivery ---------------------------------------------------------------------


def test_refresh_writes_the_stable_part_to_the_rules_file_and_caches_the_rest(tmp_path: Path) -> None:
    cx = make_project(tmp_path)
    dec = add(cx, "We chose SQLite WAL mode because several sessions write at once")
    prog = add(cx, "Progress: the briefing renderer is done", MemoryType.PROGRESS, branch="main")
    glob = add(cx, "The user prefers small commits", MemoryType.PREFERENCE, scope=Scope.GLOBAL)
    result = refresh_briefing(cx)
    assert result.errors == ()
    parts = result.rendered.parts
    assert set(parts[BriefingPart.STABLE].shown) == {dec.id, glob.id}
    assert parts[BriefingPart.MOMENT].shown == (prog.id,)
    rules = cx.paths.root / RULES
    assert result.rules_file == rules
    body = read_rules_block(rules)
    assert body == parts[BriefingPart.STABLE].text and prog.id not in body
    cached = read_cache(cx.paths.briefing_dir, "main", "")
    assert cached is not None and result.cache_file is not None
    assert cached.stable_digest == digest_text(body)
    assert cached.moment == parts[BriefingPart.MOMENT].text and prog.id in cached.moment
    assert cached.full == parts[BriefingPart.FULL].text
    assert cached.head == git(cx.paths.root, "rev-parse", "HEAD")
    assert cached.meta["stable"]["shown"] == list(parts[BriefingPart.STABLE].shown)
    assert (cx.paths.store_dir / ".gitignore").read_text("utf-8").strip().endswith("*")


def test_user_text_outside_the_markers_survives_every_refresh(tmp_path: Path) -> None:
    cx = make_project(tmp_path)
    rules = cx.paths.root / RULES
    rules.parent.mkdir(parents=True)
    rules.write_text("# My own rules\nAlways run the linter.\n", "utf-8")
    add(cx, "We use WAL mode")
    refresh_briefing(cx)
    text = rules.read_text("utf-8")
    text = text.replace(END_MARKER + "\n", END_MARKER + "\n\nMore of my text.\n")
    rules.write_text(text, "utf-8")
    add(cx, "We pin dependencies with hashes")
    refresh_briefing(cx)
    final = rules.read_text("utf-8")
    assert final.startswith("# My own rules\nAlways run the linter.\n")
    assert final.endswith("\nMore of my text.\n")
    assert final.count(BEGIN_MARKER) == 1 and "pin dependencies" in final


def test_an_unchanged_briefing_does_not_rewrite_the_rules_file(tmp_path: Path) -> None:
    cx = make_project(tmp_path)
    add(cx, "We use WAL mode")
    refresh_briefing(cx)
    rules = cx.paths.root / RULES
    inode = rules.stat().st_ino
    refresh_briefing(cx)
    assert rules.stat().st_ino == inode


def test_git_exclude_gets_exactly_one_entry_and_gitignore_is_never_touched(tmp_path: Path) -> None:
    cx = make_project(tmp_path)
    root = cx.paths.root
    (root / ".gitignore").write_text("__pycache__/\n", "utf-8")
    git(root, "add", ".gitignore")
    git(root, "commit", "-q", "-m", "ignore")
    add(cx, "We use WAL mode")
    for i in range(3):
        add(cx, f"Decision number {i}: keep the hook path stdlib-only")
        result = refresh_briefing(cx)
        assert result.excluded
    exclude = (root / ".git" / "info" / "exclude").read_text("utf-8")
    assert exclude.splitlines().count("/.claude/rules/cortex-memory.md") == 1
    assert (root / ".gitignore").read_text("utf-8") == "__pycache__/\n"
    assert git(root, "status", "--porcelain") == ""  # neither .claude/ nor .memory/ shows up


def test_file_channel_off_removes_the_block_and_keeps_user_text(tmp_path: Path) -> None:
    cx = make_project(tmp_path)
    add(cx, "We use WAL mode")
    refresh_briefing(cx)
    rules = cx.paths.root / RULES
    rules.write_text("Mine.\n" + rules.read_text("utf-8"), "utf-8")
    off = Cortex(cx.paths, Settings(briefing_file=False), clock=lambda: NOW)
    result = refresh_briefing(off)
    assert result.rules_file is None and result.errors == ()
    assert rules.read_text("utf-8") == "Mine.\n"
    cached = read_cache(cx.paths.briefing_dir, "main", "")
    assert cached is not None and cached.stable_digest is None and "WAL" in cached.full
    rules.unlink()
    refresh_briefing(off)
    assert not rules.exists()  # off means off: not even an empty file


def test_stale_memories_come_from_files_gone_at_head_and_in_the_work_tree(tmp_path: Path) -> None:
    cx = make_project(tmp_path)
    root = cx.paths.root
    for name in ("gone.py", "kept.py", "deleted_uncommitted.py"):
        (root / name).write_text("x = 1\n", "utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "files")
    gone = add(cx, "Gotcha: gone.py caches forever", MemoryType.GOTCHA, files=("gone.py",))
    kept = add(cx, "Gotcha: kept.py retries twice", MemoryType.GOTCHA, files=("kept.py",))
    half = add(cx, "Progress: touched gone.py and kept.py", MemoryType.PROGRESS, files=("gone.py", "kept.py"))
    wip = add(cx, "Gotcha: deleted_uncommitted.py", MemoryType.GOTCHA, files=("deleted_uncommitted.py",))
    new = add(cx, "Context: new.py is not committed yet", MemoryType.CONTEXT, files=("./new.py",))
    outside = add(cx, "Context: /etc/hosts maps the test host", MemoryType.CONTEXT, files=("/etc/hosts",))
    elsewhere = add(
        cx, "Global: gone.py in another project", MemoryType.GOTCHA, files=("gone.py",), scope=Scope.GLOBAL
    )
    (root / "new.py").write_text("", "utf-8")
    git(root, "rm", "-q", "gone.py")
    git(root, "commit", "-q", "-m", "remove gone.py")
    (root / "deleted_uncommitted.py").unlink()
    result = refresh_briefing(cx)
    assert result.rendered.stale == {gone.id}
    assert read_stale_ids(root, [gone, kept, half, wip, new, outside, elsewhere]) == {gone.id}
    moment = result.rendered.parts[BriefingPart.MOMENT].text
    assert f"Stale: 1 note(s) refer to files gone at HEAD: {gone.id} (gone.py)." in moment
    assert "(stale: file gone)" in result.rendered.parts[BriefingPart.FULL].text
    assert "(stale: file gone)" not in result.rendered.parts[BriefingPart.STABLE].text


def test_a_path_written_from_a_parent_folder_is_the_project_file_and_an_unplaceable_one_is_not_stale(
    tmp_path: Path,
) -> None:
    # A session started in the parent folder writes `proj/AGENTS.md` for the project `proj`
    # and names files of a sibling project (`other/README.md`): neither is gone from `proj`.
    cx = make_project(tmp_path)
    root = cx.paths.root
    (root / "AGENTS.md").write_text("# rules\n", "utf-8")
    (root / "src").mkdir()
    (root / "src" / "gone.py").write_text("x = 1\n", "utf-8")
    (root / "src" / "kept.py").write_text("x = 1\n", "utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "files")
    parent = add(cx, "Pattern: proj/AGENTS.md lists the rules", MemoryType.PATTERN, files=("proj/AGENTS.md",))
    sibling = add(
        cx, "Context: other/README.md explains setup", MemoryType.CONTEXT, files=("other/README.md",)
    )
    parent_gone = add(cx, "Gotcha: proj/old.md", MemoryType.GOTCHA, files=("proj/old.md",))
    gone = add(cx, "Gotcha: src/gone.py caches forever", MemoryType.GOTCHA, files=("src/gone.py",))
    git(root, "rm", "-q", "src/gone.py")
    git(root, "commit", "-q", "-m", "remove src/gone.py")
    assert read_stale_ids(root, [parent, sibling, parent_gone, gone]) == {gone.id}
    assert refresh_briefing(cx).rendered.stale == {gone.id}


def test_a_refresh_at_an_unchanged_head_starts_no_git_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cortex.shell import git as shell_git

    cx = make_project(tmp_path)
    root = cx.paths.root
    (root / "gone.py").write_text("x = 1\n", "utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "gone.py")
    gone = add(cx, "Gotcha: gone.py caches forever", MemoryType.GOTCHA, files=("gone.py",))
    git(root, "rm", "-q", "gone.py")
    git(root, "commit", "-q", "-m", "remove gone.py")
    assert refresh_briefing(cx).rendered.stale == {gone.id}
    calls: list[tuple[object, ...]] = []
    real = shell_git.run_git
    monkeypatch.setattr(shell_git, "run_git", lambda *a, **k: calls.append(a) or real(*a, **k))
    again = refresh_briefing(cx)
    assert again.rendered.stale == {gone.id} and again.excluded and calls == []
    (root / "gone.py").write_text("x = 2\n", "utf-8")  # back at a new HEAD: asked again
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "gone.py is back")
    assert refresh_briefing(cx).rendered.stale == frozenset() and calls


def test_the_git_dirs_read_without_git_are_what_git_says(tmp_path: Path) -> None:
    from cortex.shell import git as shell_git

    root = make_project(tmp_path).paths.root
    linked = tmp_path / "linked"
    git(root, "worktree", "add", "-q", str(linked))  # `.git` is a file there: git answers
    for where in (root, linked):
        common, top = shell_git.read_repo_dirs(where)
        assert common is not None and top is not None
        assert (common.resolve(), top.resolve()) == (
            shell_git.read_git_common_dir(where).resolve(),  # type: ignore[union-attr]
            shell_git.read_toplevel(where).resolve(),  # type: ignore[union-attr]
        )


def test_a_project_without_git_gets_a_briefing_without_exclude(tmp_path: Path, no_outer_repo: None) -> None:
    cx = make_project(tmp_path, with_git=False)
    add(cx, "We use WAL mode")
    add(cx, "Progress: outside git", MemoryType.PROGRESS)
    result = refresh_briefing(cx)
    assert result.errors == () and not result.excluded
    assert result.rendered.branch is None and result.rendered.head is None
    assert read_rules_block(cx.paths.root / RULES) is not None
    assert not (cx.paths.root / ".git").exists()
    cached = read_cache(cx.paths.briefing_dir, None, "")
    assert cached is not None and "outside git" in cached.moment


def test_nothing_stored_leaves_the_project_untouched(tmp_path: Path) -> None:
    cx = make_project(tmp_path)
    result = refresh_briefing(cx)
    assert result.rendered.memories == 0 and result.cache_file is None
    assert not (cx.paths.root / ".claude").exists() and not cx.paths.store_dir.exists()


def test_unwritable_briefing_dir_is_logged_not_raised(
    tmp_path: Path, captured: list[logging.LogRecord]
) -> None:
    cx = make_project(tmp_path)
    add(cx, "We use WAL mode")
    cx.paths.briefing_dir.write_text("a file where the briefing directory should be", "utf-8")
    result = refresh_briefing(cx)
    assert result.errors and result.cache_file is None and result.rules_file is None
    assert any("briefing" in r.getMessage() for r in captured)


def test_unwritable_rules_dir_still_caches_the_full_briefing(
    tmp_path: Path, captured: list[logging.LogRecord]
) -> None:
    cx = make_project(tmp_path)
    add(cx, "We use WAL mode")
    (cx.paths.root / ".claude").write_text("a file where a directory should be", "utf-8")
    result = refresh_briefing(cx)
    assert result.rules_file is None and any("rules file" in e for e in result.errors)
    cached = read_cache(cx.paths.briefing_dir, "main", "")
    assert cached is not None and cached.stable_digest is None and "WAL" in cached.full
    assert any("rules file" in r.getMessage() for r in captured)


def test_read_only_project_directory_does_not_raise(tmp_path: Path) -> None:
    cx = make_project(tmp_path)
    add(cx, "We use WAL mode")
    cx.close()
    root = cx.paths.root
    modes = {p: p.stat().st_mode for p in (root, cx.paths.store_dir)}
    for p in modes:
        p.chmod(0o555)
    try:
        ro = Cortex(cx.paths, Settings(), clock=lambda: NOW)
        result = refresh_briefing(ro)  # as root the chmod does not bind; either way: no exception
        assert "WAL" in result.rendered.parts[BriefingPart.FULL].text
        ro.close()
    finally:
        for p, mode in modes.items():
            p.chmod(mode)


def test_switching_branches_keeps_the_rules_file_and_adds_a_cache(tmp_path: Path) -> None:
    cx = make_project(tmp_path)
    root = cx.paths.root
    add(cx, "We use WAL mode")
    add(cx, "Progress: main work", MemoryType.PROGRESS, branch="main")
    refresh_briefing(cx)
    body = read_rules_block(root / RULES)
    git(root, "checkout", "-q", "-b", "feat/x")
    add(cx, "Progress: feature work", MemoryType.PROGRESS, branch="feat/x")
    add(cx, "Progress: other feature", MemoryType.PROGRESS, branch="feat/y")
    refresh_briefing(cx)
    assert read_rules_block(root / RULES) == body
    on_x = read_cache(cx.paths.briefing_dir, "feat/x", "")
    on_main = read_cache(cx.paths.briefing_dir, "main", "")
    assert on_x is not None and on_main is not None
    assert "feature work" in on_x.moment and "other feature" not in on_x.moment
    assert "main work" in on_x.moment  # the default branch's progress still counts
    assert "feature work" not in on_main.moment


def test_the_session_directory_keys_its_own_cache(tmp_path: Path) -> None:
    cx = make_project(tmp_path)
    (cx.paths.root / "pkg").mkdir()
    add(cx, "We use WAL mode")
    result = refresh_briefing(cx, cwd=cx.paths.root / "pkg")
    assert result.rendered.cwd == "pkg"
    assert read_cache(cx.paths.briefing_dir, "main", "pkg") is not None


def test_read_briefing_prefers_the_cache_and_renders_when_missing(tmp_path: Path) -> None:
    cx = make_project(tmp_path)
    add(cx, "We use WAL mode")
    first, origin = read_briefing(cx)
    assert origin == "refreshed" and "WAL" in first.full
    add(cx, "We pin dependencies")
    cached, origin = read_briefing(cx)
    assert origin == "cache" and "pin dependencies" not in cached.full
    fresh, origin = read_briefing(cx, refresh=True)
    assert origin == "refreshed" and "pin dependencies" in fresh.full


# --- the CLI ----------------------------------------------------------------------------------------


def test_cortex_brief_prints_each_part(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cx = make_project(tmp_path)
    monkeypatch.setenv("CORTEX_HOME", str(cx.paths.home))
    monkeypatch.chdir(cx.paths.root)
    add(cx, "We use WAL mode")
    add(cx, "Progress: wiring the CLI", MemoryType.PROGRESS, branch="main")
    cx.close()
    runner = CliRunner()
    full = runner.invoke(cli, ["brief", "--refresh"])
    assert full.exit_code == 0, full.output
    assert "WAL" in full.output and "wiring the CLI" in full.output
    moment = runner.invoke(cli, ["brief", "--part", "moment"])
    assert "wiring the CLI" in moment.output and "WAL" not in moment.output
    stable = runner.invoke(cli, ["brief", "--part", "stable", "--json"])
    data = json.loads(stable.output)
    assert data["part"] == "stable" and data["origin"] == "cache" and data["branch"] == "main"
    assert "WAL" in data["text"] and data["rules_file_digest"] == digest_text(data["text"])
    assert data["tokens"] <= data["budget_tokens"] and data["dropped"] == 0
    bad = runner.invoke(cli, ["brief", "--part", "everything"])
    assert bad.exit_code == 2


def test_cortex_brief_on_an_empty_project_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cx = make_project(tmp_path)
    monkeypatch.setenv("CORTEX_HOME", str(cx.paths.home))
    monkeypatch.chdir(cx.paths.root)
    result = CliRunner().invoke(cli, ["brief"])
    assert result.exit_code == 0
    assert result.stdout == "" and "empty" in result.stderr
