"""What a memory's text names (paths, `path:Symbol`, symbols a file holds) and how a change reads."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from cortex.core.code.anchors import (
    Anchor,
    AnchorCheck,
    AnchorState,
    blob_id,
    describe,
    named_paths,
    named_symbols,
    symbol_hash,
)
from cortex.core.code.parse import parse_symbols

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
SOURCE = """class Settings:
    url = "x"

    def reload(self):
        return 1


def load_settings():
    return Settings()


def id():
    return 0
"""


def test_paths_and_explicit_symbols_are_found_in_the_text_and_the_recorded_files() -> None:
    text = "See `app/config.py:Settings` and ./lib/db.go; not ../up.py nor config.pyc or a.py.bak"
    assert named_paths(text, ("docs/x.md", "web/app.ts")) == {
        "docs/x.md": set(),
        "web/app.ts": set(),
        "app/config.py": {"Settings"},
        "lib/db.go": set(),
    }


def test_symbols_are_those_the_text_names_methods_left_to_their_class() -> None:
    symbols = parse_symbols("app/config.py", SOURCE)
    names = [s.qualname for s in named_symbols("Settings.reload re-reads; load_settings calls it", symbols)]
    assert names == ["Settings.reload", "load_settings"]
    names = [s.qualname for s in named_symbols("Settings holds it; Settings.reload re-reads", symbols)]
    assert names == ["Settings"]
    assert [s.qualname for s in named_symbols("the id helper", symbols)] == []  # too short to tell
    assert [s.qualname for s in named_symbols("x", symbols, ["Settings.reload"])] == ["Settings.reload"]


def test_hashes_are_gits_and_ignore_trailing_whitespace() -> None:
    assert blob_id(b"hello\n") == "ce013625030ba8dba906f756967f9e9ca394464a"  # git hash-object
    assert symbol_hash("def f():\n    return 1  \r\n") == symbol_hash("def f():\n    return 1\n")
    assert symbol_hash("def f():\n    return 1\n") != symbol_hash("def f():\n    return 2\n")


def test_marks_name_the_worst_anchor_its_commit_and_how_long_after_the_note() -> None:
    a = Anchor("app/config.py", "Settings", "h", "c" * 40, T0)
    b = Anchor("app/old.py", "", "h", None, T0)
    changed = AnchorCheck(a, AnchorState.CHANGED, "4f2c1e0aa", T0 + timedelta(days=3, hours=2))
    gone = AnchorCheck(b, AnchorState.RENAMED, "99aa00bb", T0 + timedelta(minutes=5), "app/new.py")
    assert describe([AnchorCheck(a, AnchorState.FRESH)]) == ""
    assert (
        describe([changed])
        == "may be stale: `app/config.py:Settings` changed in 4f2c1e0 (3 days after this note)"
    )
    assert describe([changed, gone]) == (
        "stale: `app/old.py` renamed to `app/new.py` in 99aa00b (5 minutes after this note); "
        "`app/config.py:Settings` changed in 4f2c1e0 (3 days after this note)"
    )
    early = AnchorCheck(a, AnchorState.DELETED, "abc", T0 - timedelta(seconds=1))  # whole-second commit times
    assert describe([early]) == "stale: `app/config.py:Settings` deleted in abc (right after this note)"
