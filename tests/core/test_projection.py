"""The projection file's markdown and the import plan, without a store."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

from cortex.core.model import Edge, EdgeType, Memory, MemoryType, Status
from cortex.core.projection.markdown import Entry, ProjectionSyntaxError, is_projected, parse, render
from cortex.core.projection.plan import file_entries, plan_import
from tests.conftest import T0

Make = Callable[..., Memory]


def test_render_then_parse_gives_the_memories_back(make_memory: Make) -> None:
    wal = make_memory("We use WAL mode\n\n# not a heading\n\\# a backslash then a hash\n### nor an entry")
    gotcha = make_memory("The CI cache must be cleared after a lockfile bump", type=MemoryType.GOTCHA)
    text = render([(wal.id, wal), (gotcha.id, gotcha)])
    assert "\n## Decisions\n\n### " + wal.id + "\n\nWe use WAL mode\n" in text
    assert "\n\\# not a heading\n\\\\# a backslash then a hash\n\\### nor an entry\n" in text
    entries = parse(text)
    assert [(e.id, e.type, e.text) for e in entries] == [
        (wal.id, MemoryType.DECISION, wal.content),
        (gotcha.id, MemoryType.GOTCHA, gotcha.content),
    ]
    assert render([]) == render([]) and "## Conventions" in render([])  # every section, always


def test_a_new_entry_has_no_id() -> None:
    text = render([]).replace("## Gotchas\n", "## Gotchas\n\n### new\n\nMind the cache\n")
    assert parse(text) == [
        Entry(None, MemoryType.GOTCHA, "Mind the cache", text.splitlines().index("### new") + 1)
    ]


@pytest.mark.parametrize(
    ("body", "line", "words"),
    [
        ("## Decisions\n\n### 0a1b2c3d4e\n\ntext\n\n## Ideas\n", 7, "unknown section 'Ideas'"),
        ("## Decisions\n\n### We use WAL\n\ntext\n", 3, "`### <memory id>` or `### new`"),
        (
            "## Decisions\n\n### 0a1b2c3d4e\n\na\n\n### 0a1b2c3d4e\n\nb\n",
            7,
            "appears twice (first on line 3)",
        ),
        ("## Decisions\n\n### 0a1b2c3d4e\n\n## Gotchas\n", 3, "no text"),
        ("## Decisions\n\nstray words\n", 3, "text outside an entry"),
        ("### new\n\ntext\n", 1, "before the first `## ` section"),
    ],
)
def test_malformed_files_name_the_line(body: str, line: int, words: str) -> None:
    with pytest.raises(ProjectionSyntaxError) as caught:
        parse(body)
    assert caught.value.line == line and words in caught.value.message


def test_only_active_shared_project_memories_are_projected(make_memory: Make) -> None:
    assert is_projected(make_memory())
    assert not is_projected(make_memory(type=MemoryType.PROGRESS))
    assert not is_projected(make_memory(type=MemoryType.CONTEXT))
    assert not is_projected(make_memory(tags=("db", "Private")))
    assert not is_projected(make_memory(status=Status.SUPERSEDED))


def test_an_edited_entry_keeps_its_first_id_and_place(make_memory: Make) -> None:
    first = make_memory("Deploys run with Fabric", created=T0, status=Status.SUPERSEDED)
    second = make_memory("Queue uses advisory locks", created=T0 + timedelta(hours=1))
    edited = make_memory("Deploys run in CI", created=T0 + timedelta(hours=2))
    edges = [Edge(edited.id, first.id, EdgeType.SUPERSEDES)]
    got = file_entries([second, edited], edges, {first.id: first, second.id: second, edited.id: edited})
    assert got == [(first.id, edited), (second.id, second)]


def _entry(
    text: str, memory_id: str | None = None, line: int = 1, kind: MemoryType = MemoryType.DECISION
) -> Entry:
    return Entry(memory_id, kind, text, line)


def test_plan_matches_by_id_then_by_text(make_memory: Make) -> None:
    wal, queue, gone = (
        make_memory("We use WAL mode"),
        make_memory("Queue uses locks"),
        make_memory("Old fact"),
    )
    projected = [(m.id, m) for m in (wal, queue, gone)]
    shown = {wal.id, queue.id, gone.id}
    entries = [
        _entry("we use  WAL mode", wal.id, 1),  # case and spacing alone: no change
        _entry("Queue uses advisory locks", queue.id, 2),
        _entry("A brand new decision", None, 3),
    ]
    plan = plan_import(entries, projected, shown)
    assert plan.unchanged == 1 and [m.id for m, _ in plan.edit] == [queue.id]
    assert [e.line for e in plan.add] == [3] and plan.forget == (gone,)
    again = plan_import([_entry("Old fact", "ffffffffff", 1)], [(gone.id, gone)], {gone.id})
    assert again.empty and again.matched == {1: gone.id}  # unknown id, same text: that memory


def test_plan_forgets_only_what_the_file_showed(make_memory: Make) -> None:
    shown, unseen = make_memory("Shown fact"), make_memory("Remembered since")
    plan = plan_import([], [(shown.id, shown), (unseen.id, unseen)], {shown.id})
    assert plan.forget == (shown,)


def test_moving_an_entry_to_another_section_retypes_it(make_memory: Make) -> None:
    m = make_memory("Never call the API without a timeout")
    plan = plan_import([_entry(m.content, m.id, 4, MemoryType.GOTCHA)], [(m.id, m)], {m.id})
    assert [(x.id, e.type) for x, e in plan.retype] == [(m.id, MemoryType.GOTCHA)] and not plan.edit
