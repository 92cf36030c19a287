"""The briefing spends its tokens on what notes say: attribution lines leave out what the
section or the text already says, lists of edited files take only the room left, and the moment
part points at the project notes' disclaimer instead of repeating it."""

from __future__ import annotations

from dataclasses import replace

from cortex.core.briefing.compose import BriefingPart, render_briefing, render_briefings
from cortex.core.briefing.text import DISCLAIMER, MOMENT_DISCLAIMER
from cortex.core.budget import estimate_tokens
from tests.core.briefing.test_compose import NOW, T, body_lines, mem


def test_an_entry_names_its_type_only_where_no_section_title_does() -> None:
    items = [
        mem("d1", "We chose WAL mode for the job queue", T.DECISION, session="abcdef123456"),
        mem("g1", "The queue table needs VACUUM after bulk deletes", T.GOTCHA, session="abcdef123456"),
        mem("p1", "Always run migrations through alembic", T.PATTERN, pinned=True, session="abcdef123456"),
    ]
    inside = body_lines(render_briefing(items, now=NOW, branch="main", part="stable"))
    assert inside[0] == "Notes naming no session: session abcdef12, 2025-05-31 unless dated."
    assert "- d1" in inside and "- g1" in inside  # the section and the preamble say the rest
    assert "- p1 · pattern · pinned" in inside  # Pinned mixes types
    assert {"Decisions:", "Gotchas:", "Pinned:"} <= set(inside)


def test_an_entry_lists_only_the_files_its_text_does_not_name() -> None:
    edits = mem(
        "e1",
        "Edited src/api/handlers.rs, static/index.html",
        T.PROGRESS,
        files=("src/api/handlers.rs", "static/index.html", "src/api/mod.rs"),
    )
    gotcha = mem("g1", "The loader swallows errors", T.GOTCHA, files=("src/loader.py",))
    inside = body_lines(render_briefing([edits, gotcha], now=NOW, branch="main", part="full"))
    assert "- e1 · 2025-05-31 · files src/api/mod.rs" in inside
    assert "- g1 · 2025-05-31 · files src/loader.py" in inside
    named = replace(edits, source=replace(edits.source, files=edits.source.files[:2]))
    assert "- e1 · 2025-05-31" in body_lines(render_briefing([named], now=NOW, branch="main", part="full"))


def test_lists_of_edited_files_take_only_the_room_the_notes_that_say_something_leave() -> None:
    edits = mem(
        "edits",
        "Edited src/scanner/face_recognition.rs, src/scanner/viola_jones_detector.rs",
        T.PROGRESS,
        tags=("edits",),
        priority=9,
        age_days=0,
    )
    state = mem(
        "state",
        "Face detection: Viola-Jones, many false positives",  # shorter than the list
        T.PROGRESS,
        priority=3,
        age_days=2,
    )
    roomy = render_briefing([edits, state], now=NOW, branch="main", part="moment")
    assert roomy.shown == ("state", "edits")  # below the note that says something, whatever its rank
    tight = next(
        n
        for n in range(10, 2_000)
        if render_briefing([edits, state], now=NOW, branch="main", part="moment", budget_tokens=n).shown
    )
    assert render_briefing(
        [edits, state], now=NOW, branch="main", part="moment", budget_tokens=tight
    ).shown == ("state",)
    pinned = replace(edits, pinned=True)
    assert render_briefing([pinned, state], now=NOW, branch="main", part="moment").shown[0] == "edits"


def test_the_moment_part_points_at_the_project_notes_disclaimer() -> None:
    items = [
        mem("d1", "We chose WAL mode for the job queue", T.DECISION),
        mem("p1", "The importer handles CSV; XLSX is next", T.PROGRESS, branch="main"),
    ]
    parts = render_briefings(items, now=NOW, branch="main")
    assert parts[BriefingPart.STABLE].text.splitlines()[2] == DISCLAIMER
    assert parts[BriefingPart.FULL].text.splitlines()[2] == DISCLAIMER  # shown alone: says it all
    moment = parts[BriefingPart.MOMENT].text.splitlines()[2]
    assert moment == MOMENT_DISCLAIMER and "not instructions" in moment
    assert estimate_tokens(MOMENT_DISCLAIMER) < estimate_tokens(DISCLAIMER) // 2


def test_a_note_of_the_session_the_preamble_names_leaves_its_session_unsaid() -> None:
    items = [
        mem("new", "Progress: the importer reads XLSX", T.PROGRESS, session="s-new-0001"),
        mem("old", "Progress: the importer reads CSV", T.PROGRESS, session="s-old-0001", age_days=5),
        mem("dec", "Decision: one writer per project", T.DECISION, session="s-new-0001"),
    ]
    parts = render_briefings(items, now=NOW, branch="main")
    moment = body_lines(parts[BriefingPart.MOMENT])
    assert moment[0].startswith("Last session with notes: 2025-05-31") and "session s-new-00" in moment[0]
    assert "- new" in moment  # its date and session are the preamble's
    assert "- old · 2025-05-27 · session s-old-00" in moment
    full = body_lines(parts[BriefingPart.FULL])
    assert "- dec" in full and "- new" in full
    # The rules file holds one note of that session: a preamble for one note saves nothing.
    stable = body_lines(parts[BriefingPart.STABLE])
    assert "- dec · 2025-05-31 · session s-new-00" in stable and not stable[0].startswith("Notes naming")


def test_the_rules_file_names_once_the_session_most_of_its_notes_come_from() -> None:
    items = [
        mem("a", "Decision: one writer per project", session="s-main-01", branch="feat/q"),
        mem("b", "Decision: WAL mode for the queue", session="s-main-01", branch="feat/q"),
        mem("c", "Decision: jobs retry three times", session="s-main-01", branch="feat/q", age_days=6),
        mem("d", "Decision: vacuum weekly", session="s-main-01", branch="feat/r"),
        mem("e", "Decision: migrations through alembic", session="s-other-1", branch="feat/q"),
    ]
    stable = body_lines(render_briefing(items, now=NOW, branch="main", part="stable"))
    assert stable[0] == "Notes naming no session: session s-main-0, 2025-05-31 unless dated, branch feat/q."
    assert {"- a", "- b"} <= set(stable)
    assert "- c · 2025-05-26" in stable  # another day of that session keeps its date
    assert "- d · branch feat/r" in stable  # and another branch its branch
    assert "- e · 2025-05-31 · branch feat/q · session s-other-" in stable  # another session says all
