"""Tests for cortex.shell.briefing_files: the rules-file block, caches, stable record, git exclude."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cortex.shell.briefing_files import (
    BEGIN_MARKER,
    END_MARKER,
    MAX_RECORDED_DIGESTS,
    CachedBriefing,
    cache_slug,
    digest_text,
    ensure_git_exclude,
    merge_rules_block,
    read_cache,
    read_latest_cache,
    read_rules_block,
    read_stable_record,
    split_rules_block,
    write_cache,
    write_rules_block,
    write_stable_record,
)

BODY = "<!-- cortex:briefing part=stable v1 -->\n## notes\n````text\n- a · decision\n  WAL\n````"
USER_TOP = "---\ndescription: team rules\n---\n# Our rules\nUse tabs.\n"
USER_BOTTOM = "\n## More rules by hand\nNo force pushes.\n"


# --- block text -----------------------------------------------------------------------------


def test_block_is_appended_after_user_text_and_read_back() -> None:
    merged = merge_rules_block(USER_TOP, BODY)
    assert merged.startswith(USER_TOP)
    assert merged.endswith(f"{BEGIN_MARKER}\n{BODY}\n{END_MARKER}\n")
    assert split_rules_block(merged)[1] == BODY


def test_block_is_replaced_in_place_keeping_text_on_both_sides() -> None:
    existing = f"{USER_TOP}{BEGIN_MARKER}\nold notes\n{END_MARKER}\n{USER_BOTTOM}"
    merged = merge_rules_block(existing, BODY)
    assert merged == f"{USER_TOP}{BEGIN_MARKER}\n{BODY}\n{END_MARKER}\n{USER_BOTTOM}"


def test_removing_the_block_keeps_user_text_and_empties_an_only_cortex_file() -> None:
    existing = f"{USER_TOP}{BEGIN_MARKER}\nold\n{END_MARKER}\n{USER_BOTTOM}"
    assert merge_rules_block(existing, None) == USER_TOP + USER_BOTTOM
    assert merge_rules_block(f"{BEGIN_MARKER}\nold\n{END_MARKER}\n", None) == ""
    assert merge_rules_block(USER_TOP, None) == USER_TOP


def test_begin_without_end_owns_the_rest_and_extra_blocks_collapse() -> None:
    assert split_rules_block(f"{USER_TOP}{BEGIN_MARKER}\nhalf\nblock") == (USER_TOP, "half\nblock", "")
    twice = f"{BEGIN_MARKER}\na\n{END_MARKER}\nmid\n{BEGIN_MARKER}\nb\n{END_MARKER}\nend\n"
    merged = merge_rules_block(twice, "new")
    assert merged == f"{BEGIN_MARKER}\nnew\n{END_MARKER}\nmid\nend\n"
    assert merged.count(BEGIN_MARKER) == 1


user_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=200).filter(
    lambda t: "cortex:begin" not in t and "cortex:end" not in t
)


@given(before=user_text, after=user_text, body=st.text(min_size=1, max_size=200))
def test_user_text_survives_any_write_and_removal(before: str, after: str, body: str) -> None:
    body = body.replace("cortex:begin", "").replace("cortex:end", "").strip("\n")
    existing = f"{before}\n{BEGIN_MARKER}\nold\n{END_MARKER}\n{after}"
    written = merge_rules_block(existing, body)
    if body.strip():
        assert split_rules_block(written)[1] == body.strip()
    assert (written.startswith(before) and written.endswith(after)) or not written.strip()
    removed = merge_rules_block(written, None)
    assert BEGIN_MARKER not in removed
    assert removed == ((before + "\n" + after) if (before + "\n" + after).strip() else "")


def test_digest_ignores_surrounding_whitespace_only() -> None:
    assert digest_text(BODY) == digest_text(f"\n{BODY}\n\n")
    assert digest_text(BODY) != digest_text(BODY.replace("WAL", "WAL!"))


# --- the rules file ---------------------------------------------------------------------------


def test_write_rules_block_creates_then_replaces_atomically(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "rules" / "cortex-memory.md"
    assert write_rules_block(path, BODY) is True
    assert read_rules_block(path) == BODY
    first_inode = path.stat().st_ino
    assert write_rules_block(path, BODY) is False  # unchanged: not rewritten
    assert path.stat().st_ino == first_inode
    assert write_rules_block(path, BODY + "\nmore") is True
    assert path.stat().st_ino != first_inode  # a new file renamed over the old one
    assert oct(path.stat().st_mode & 0o777) == oct(0o644)
    assert sorted(p.name for p in path.parent.iterdir()) == ["cortex-memory.md"]  # no temp left


def test_readers_never_see_a_half_written_rules_file(tmp_path: Path) -> None:
    path = tmp_path / "rules.md"
    path.write_text(USER_TOP, encoding="utf-8")
    bodies = [f"version {i}\n" + "x" * 50_000 for i in range(30)]
    seen: list[str | None] = []
    done = threading.Event()

    def reader() -> None:
        while not done.is_set():
            seen.append(read_rules_block(path))

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for body in bodies:
            write_rules_block(path, body)
    finally:
        done.set()
        thread.join()
    assert seen and all(b is None or b in bodies for b in seen)
    assert path.read_text(encoding="utf-8").startswith(USER_TOP)


def test_removing_the_only_block_deletes_the_file(tmp_path: Path) -> None:
    path = tmp_path / "rules.md"
    write_rules_block(path, BODY)
    assert write_rules_block(path, None) is True
    assert not path.exists()
    assert write_rules_block(path, None) is False


def test_unwritable_rules_location_raises_oserror(tmp_path: Path) -> None:
    (tmp_path / ".claude").write_text("a file where a directory should be", encoding="utf-8")
    with pytest.raises(OSError):
        write_rules_block(tmp_path / ".claude" / "rules" / "cortex-memory.md", BODY)


# --- git exclude --------------------------------------------------------------------------------


def test_git_exclude_gets_exactly_one_entry(tmp_path: Path) -> None:
    info = tmp_path / "info"
    info.mkdir()
    (info / "exclude").write_text("# git ls-files --others --exclude-from=.git/info/exclude\n*.log", "utf-8")
    entry = "/.claude/rules/cortex-memory.md"
    assert ensure_git_exclude(tmp_path, entry) is True
    assert ensure_git_exclude(tmp_path, entry) is False
    text = (info / "exclude").read_text("utf-8")
    assert text == f"# git ls-files --others --exclude-from=.git/info/exclude\n*.log\n{entry}\n"
    # An unanchored entry the user wrote counts as present.
    (info / "exclude").write_text(".claude/rules/cortex-memory.md\n", "utf-8")
    assert ensure_git_exclude(tmp_path, entry) is False


def test_git_exclude_creates_the_info_directory(tmp_path: Path) -> None:
    assert ensure_git_exclude(tmp_path, "/x.md") is True
    assert (tmp_path / "info" / "exclude").read_text("utf-8") == "/x.md\n"


# --- caches ---------------------------------------------------------------------------------------


def cached(
    branch: str | None = "main", cwd: str = "", at: str = "2025-01-01T00:00:00.000000Z"
) -> CachedBriefing:
    return CachedBriefing(
        branch=branch,
        cwd=cwd,
        head="a" * 40,
        rendered_at=at,
        stable_digest=digest_text(BODY),
        stable=BODY,
        moment="moment text",
        full="full text",
        meta={"full": {"shown": ["a"], "dropped": 0}},
    )


def test_cache_round_trips_per_branch_and_cwd(tmp_path: Path) -> None:
    main, sub, feature = cached(), cached(cwd="pkg/api"), cached(branch="feat/a b")
    for c in (main, sub, feature._replace(moment="feature moment")):
        write_cache(tmp_path, c)
    assert read_cache(tmp_path, "main", "") == main
    assert read_cache(tmp_path, "main", "pkg/api") == sub
    assert read_cache(tmp_path, "feat/a b", "") == feature._replace(moment="feature moment")
    assert read_cache(tmp_path, "other", "") is None
    assert len({cache_slug("main", ""), cache_slug("main", "pkg/api"), cache_slug("main/", "")}) == 3
    assert all("/" not in cache_slug(b, "") for b in ("feat/x", "../../etc", None))


def test_broken_or_foreign_caches_are_ignored(tmp_path: Path) -> None:
    path = write_cache(tmp_path, cached())
    path.write_text("{not json", "utf-8")
    assert read_cache(tmp_path, "main", "") is None
    path.write_text(json.dumps({"version": 99, "stable": "x"}), "utf-8")
    assert read_cache(tmp_path, "main", "") is None
    path.write_text(json.dumps({"version": 1, "stable": 3}), "utf-8")
    assert read_cache(tmp_path, "main", "") is None
    assert read_latest_cache(tmp_path / "missing") is None


def test_latest_cache_is_the_newest_render(tmp_path: Path) -> None:
    write_cache(tmp_path, cached("main", at="2025-01-01T00:00:00.000000Z"))
    write_cache(tmp_path, cached("feat/x", at="2025-03-01T00:00:00.000000Z"))
    write_cache(tmp_path, cached("feat/y", at="2025-02-01T00:00:00.000000Z"))
    write_stable_record(tmp_path, "d" * 20, "2025-04-01T00:00:00.000000Z")
    latest = read_latest_cache(tmp_path)
    assert latest is not None and latest.branch == "feat/x"


def test_stable_record_keeps_the_last_few_digests_newest_first(tmp_path: Path) -> None:
    assert read_stable_record(tmp_path) is None
    for d in ("d1", "d2", "d2", "d3", "d4"):
        write_stable_record(tmp_path, d, "t")
    record = read_stable_record(tmp_path)
    assert record is not None and record.digests == ("d4", "d3", "d2")
    assert len(record.digests) == MAX_RECORDED_DIGESTS
    write_stable_record(tmp_path, None, "t")  # block removed: the history stays, nothing new
    again = read_stable_record(tmp_path)
    assert again is not None and again.digests == ("d4", "d3", "d2")


def test_the_cache_is_not_forced_to_disk_and_the_rules_file_and_record_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    synced: list[int] = []
    monkeypatch.setattr(os, "fsync", synced.append)
    write_cache(tmp_path, cached("main"))
    assert synced == [] and read_cache(tmp_path, "main", "") is not None
    write_stable_record(tmp_path, "d1", "t1")
    write_rules_block(tmp_path / "rules.md", BODY)
    assert len(synced) == 2


def test_an_unchanged_stable_record_is_not_rewritten(tmp_path: Path) -> None:
    first = write_stable_record(tmp_path, "d1", "t1")
    path = next(tmp_path.glob("*.json"))
    before = path.stat()
    assert write_stable_record(tmp_path, "d1", "t2") == first  # the same blocks: kept as it was
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert write_stable_record(tmp_path, "d2", "t3").digests == ("d2", "d1")  # a new block is written


def test_user_bytes_survive_even_when_not_utf8_or_large(tmp_path: Path) -> None:
    path = tmp_path / "rules.md"
    mine = "Caf\xe9 rules in Latin-1\n".encode("latin-1") + b"y" * 2_000_000 + b"\n"
    path.write_bytes(mine)
    write_rules_block(path, BODY)
    assert path.read_bytes().startswith(mine)
    write_rules_block(path, None)
    assert path.read_bytes() == mine
