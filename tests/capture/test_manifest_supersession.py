"""Through the real capture path: a manifest edit retires the plan that still names a command
it took out, and a report on other files leaves an earlier report alone (real shapes, shortened:
a Next.js + Convex project that moved to Bun, then took Bun's runtime flag out again)."""

from __future__ import annotations

from pathlib import Path

from cortex.capture.supersession import reports_built_work
from cortex.core.extract.manifest_merge import MAX_MERGED_CHARS
from cortex.core.model import EdgeType, Memory, Scope, Status
from tests.capture.test_state_supersession import answer_turn, capture_turns, in_minute
from tests.support.transcript_builders import V2_1, envelope, prompt_record, tool_result_record

START_PLAN = (
    "# Create Start Services Script\n\n## Overview\nCreate `scripts/start.sh` to start the dev services "
    "with cleanup on exit.\n\n### Services to Start\n1. **Convex Backend** - `npx convex dev`\n"
    "2. **Next.js Frontend** - `bun --bun next dev` (port 3000)\n"
)
OTHER_PLAN = (
    "# Add Sign-in Page\n\n## Overview\nAdd a sign-in page with the Convex auth hooks and a "
    "redirect for signed-in users.\n- Keep `npx convex dev` running in its own terminal\n"
)
SCRIPTS_BUN = (
    '  "scripts": {\n    "dev:frontend": "bun --bun next dev",\n    "build": "bun --bun next build"\n  },'
)


def use_turn(
    n: int, prompt: str, name: str, tool_input: dict[str, object], result: str, top: object = None
) -> list[dict[str, object]]:
    block = {"type": "tool_use", "id": f"t{n}", "name": name, "input": tool_input}
    message = {"id": f"msg_{n}", "type": "message", "role": "assistant", "content": [block]}
    return in_minute(
        n,
        [
            prompt_record(prompt, uuid=f"p{n}"),
            {**envelope("assistant", f"a{n}", V2_1), "message": message},
            tool_result_record(f"t{n}", result, is_error=False, top=top or {"type": "text"}, uuid=f"r{n}"),
        ],
    )


def edited(project: Path, *edits: tuple[str, dict[str, object]]) -> list[Memory]:
    """The project's memories after one turn per (prompt, Edit input), each edit applied."""
    turns = [
        use_turn(n, prompt, "Edit", e, "The file has been updated.") for n, (prompt, e) in enumerate(edits, 1)
    ]
    cx = capture_turns(project, turns)
    try:
        return cx.write_store(Scope.PROJECT).all_memories()
    finally:
        cx.close()


def test_a_manifest_edit_retires_the_plan_naming_a_command_it_took_out(project: Path) -> None:
    approved = "User has approved your plan. You can now start coding."
    edit = {
        "file_path": str(project / "package.json"),
        "old_string": SCRIPTS_BUN,
        "new_string": SCRIPTS_BUN.replace("bun --bun next", "bun next"),
    }
    turns = [
        use_turn(1, "make a start script", "ExitPlanMode", {"plan": START_PLAN}, approved),
        use_turn(2, "now the sign-in page", "ExitPlanMode", {"plan": OTHER_PLAN}, approved),
        use_turn(
            3,
            "remove the --bun flag, it breaks the convex deploy",
            "Edit",
            edit,
            "The file has been updated.",
        ),
    ]
    cx = capture_turns(project, turns)
    try:
        store = cx.write_store(Scope.PROJECT)
        memories = store.all_memories()
        status = {m.content.split("\n", 1)[0]: m.status for m in memories}
        assert status["Approved plan: Create Start Services Script"] is Status.SUPERSEDED
        assert status["Approved plan: Add Sign-in Page"] is Status.ACTIVE  # names no dropped command
        note = next(m for m in memories if m.content.startswith("package.json:"))
        assert note.content == "package.json: scripts build, dev:frontend: removed `--bun`"
        assert note.status is Status.ACTIVE
        plan = next(m for m in memories if m.content.startswith("Approved plan: Create Start"))
        assert any(
            e.type is EdgeType.SUPERSEDES and e.source == note.id and e.target == plan.id
            for e in store.edges([plan.id])
        )
    finally:
        cx.close()


def test_a_later_manifest_edit_of_the_same_entries_retires_the_earlier_note(project: Path) -> None:
    cargo = str(project / "Cargo.toml")
    pin = {
        "file_path": cargo,
        "old_string": 'ort = "2.0"\nimageproc = "0.25"\n',
        "new_string": 'ort = "1.16"\nimageproc = "0.25"\n',
    }
    back = {"file_path": cargo, "old_string": 'ort = "1.16"\n', "new_string": 'ort = "2.0.0-rc.10"\n'}
    add = {
        "file_path": cargo,
        "old_string": 'imageproc = "0.25"\n',
        "new_string": 'imageproc = "0.25"\nbase64 = "0.22"\n',
    }
    memories = edited(
        project,
        ("add base64", add),
        ("it fails to build, pin ort", pin),
        ("no, upgrade rust and use the rc", back),
    )
    status = {m.content: m.status for m in memories if m.content.startswith("Cargo.toml")}
    assert status == {
        "Cargo.toml: added `base64` 0.22": Status.ACTIVE,  # base64 changed once only
        "Cargo.toml: ort: 2.0 -> 1.16": Status.SUPERSEDED,  # ort changed again later
        "Cargo.toml: ort: 1.16 -> 2.0.0-rc.10": Status.ACTIVE,
    }


def test_a_manifest_rewritten_whole_is_read_from_the_clients_patch_and_a_later_edit_takes_over(
    project: Path,
) -> None:
    # Claude Code 2.1's record of a Write over an existing file: the new content, the old one
    # and the patch between them (pocket-llm's package.json rewrite, here a pyproject.toml).
    path = str(project / "pyproject.toml")
    old = '[project]\nname = "api"\ndependencies = [\n    "fastapi>=0.110",\n    "httpx>=0.27",\n]\n'
    new = old.replace('"fastapi>=0.110"', '"fastapi>=0.115"').replace('    "httpx>=0.27",\n', "")
    hunk = {
        "oldStart": 1, "oldLines": 6, "newStart": 1, "newLines": 5,
        "lines": [" [project]", ' name = "api"', " dependencies = [", '-    "fastapi>=0.110",',
                  '-    "httpx>=0.27",', '+    "fastapi>=0.115",', " ]"],
    }  # fmt: skip
    top = {"type": "update", "filePath": path, "content": new, "structuredPatch": [hunk], "originalFile": old}
    write = use_turn(1, "bump fastapi, drop httpx", "Write", {"file_path": path, "content": new},
                     f"The file {path} has been updated.", top)  # fmt: skip
    edit = {"file_path": path, "old_string": '"fastapi>=0.115"', "new_string": '"fastapi>=0.116"'}
    cx = capture_turns(
        project, [write, use_turn(2, "and to 0.116", "Edit", edit, "The file has been updated.")]
    )
    try:
        memories = cx.write_store(Scope.PROJECT).all_memories()
    finally:
        cx.close()
    status = {m.content: m.status for m in memories if m.content.startswith("pyproject.toml")}
    # fastapi changed again later: the newer note takes over what the rewrite still says
    assert status == {
        "pyproject.toml: dependencies fastapi: >=0.110 -> >=0.115; dependencies: removed `httpx` >=0.27": (
            Status.SUPERSEDED
        ),
        "pyproject.toml: fastapi: >=0.115 -> >=0.116; dependencies: removed `httpx` >=0.27": Status.ACTIVE,
    }


def test_a_later_change_of_a_setting_takes_over_what_the_earlier_note_still_says(project: Path) -> None:
    scanners = str(project / "config" / "scanners.yml")
    both = {
        "file_path": scanners,
        "old_string": "  scan_prompt_timeout: 30\n  scan_output_timeout: 30\n",
        "new_string": "  scan_prompt_timeout: 60  # first load is slow\n  scan_output_timeout: 60\n",
    }
    one = {
        "file_path": scanners,
        "old_string": "  scan_prompt_timeout: 60  # first load is slow\n",
        "new_string": "  scan_prompt_timeout: 120  # 60 s was not enough for the 508 MB model\n",
    }
    memories = edited(project, ("raise the timeouts", both), ("still times out", one))
    notes = {m.status: m.content for m in memories if m.content.startswith("scanners.yml")}
    # Nothing the first note said is lost: the output timeout and its reason ride on.
    prompt, output = "`scan_prompt_timeout`", "`scan_output_timeout`"
    assert notes == {
        Status.ACTIVE: f"scanners.yml: {prompt}: 60 -> 120; {output}: 30 -> 60"
        ". Why: 60 s was not enough for the 508 MB model. Why: first load is slow",
        Status.SUPERSEDED: f"scanners.yml: {prompt}: 30 -> 60; {output}: 30 -> 60. Why: first load is slow",
    }


def test_a_report_on_other_files_leaves_an_earlier_report_alone(project: Path) -> None:
    # Real shape (shortened): the update script's report, then reports on the NixOS module.
    script = (
        "Successfully implemented working update script!\n- Latest version: v0.9.3\n"
        "- Update script: `./update.sh` updates version and hash\n"
        "- Updated dependencies: Added fastapi, uvicorn, setproctitle for v0.9.3"
    )
    module = (
        "## NixOS Module Implementation\nLocation: `nixos-modules/skypilot/default.nix`\n"
        "- Creates a dedicated skypilot system user and its state directories"
    )
    module_again = (
        "## Module status\n- `nixos-modules/skypilot/default.nix` now validates its directory options\n"
        "- The simple VM test passes"
    )
    question = (
        "Ready to Commit?\n`git add README.md docs/usage.md` and commit them as one change for the docs"
    )
    turns = [
        answer_turn(1, "write an update script", script),
        answer_turn(2, "document it", question),
        answer_turn(3, "now a NixOS module", module),
        answer_turn(4, "validate the paths", module_again),
    ]
    cx = capture_turns(project, turns)
    try:
        memories = cx.write_store(Scope.PROJECT).all_memories()
        status = {m.content.split("\n", 1)[0]: m.status for m in memories}
        assert status["Successfully implemented working update script!"] is Status.ACTIVE  # other files
        assert status["Ready to Commit?"] is Status.SUPERSEDED  # a question: any later report answers it
        assert status["NixOS Module Implementation"] is Status.SUPERSEDED  # the same file, later
        assert status["Module status"] is Status.ACTIVE
    finally:
        cx.close()


def test_only_a_report_of_built_work_keeps_its_files_as_its_topic() -> None:
    # Real first lines (shortened): what was built stays until a report on its files; a
    # diagnosis, open work, instructions or a question is where things stood at that moment.
    assert reports_built_work(
        "Done! Number inputs now auto-format with commas.\n1. Created `lib/utils/format.ts`"
    )
    assert reports_built_work(
        "Successfully implemented working update script!\n- `./update.sh` updates the hash"
    )
    assert not reports_built_work(
        "ISSUE RESOLVED!\n1. Primary Issue: `--bun` flag caused incompatible sourcemaps"
    )
    assert not reports_built_work("Files Created/Modified\nNext Steps\n- Fix the 4 failing timezone tests")
    assert not reports_built_work("Add these environment variables in your Render service:\n- `startup.sh`")
    assert not reports_built_work("Ready to Commit?\n`git add scripts/start.sh README.md`")
    assert not reports_built_work("Now the web UI should work properly: `index.html` is served at `/`")


def test_dependencies_tried_one_after_another_leave_one_current_note(project: Path) -> None:
    """A real chain (a Rust media server looking for a face detector): each edit swaps the last
    try for the next. One note remains: what is in the manifest now, what it lost, and what
    was tried and dropped on the way; the older notes are its history."""
    cargo = str(project / "Cargo.toml")
    edits = [
        ('ort = "2.0.0-rc.10"\n', 'rustface = "0.1"\n'),
        ('rustface = "0.1"\n', 'opencv = "0.92"\n'),
        ('opencv = "0.92"\n', 'candle = "0.6"\ntch = "0.16"\n'),
        ('candle = "0.6"\ntch = "0.16"\n', 'imageproc = "0.25"\n'),
    ]
    updated = "The file has been updated."
    base64 = _cargo(cargo, "", 'base64 = "0.22"\n')
    turns = [use_turn(1, "add base64 for the thumbnails", "Edit", base64, updated)]
    turns += [
        use_turn(n, f"try detector {n}", "Edit", _cargo(cargo, old, new), updated)
        for n, (old, new) in enumerate(edits, start=2)
    ]
    cx = capture_turns(project, turns)
    try:
        store = cx.write_store(Scope.PROJECT)
        notes = [m for m in store.all_memories() if m.content.startswith("Cargo.toml")]
        active = [m for m in notes if m.status is Status.ACTIVE]
        assert sorted(m.content for m in active) == [
            "Cargo.toml: added `base64` 0.22",  # never changed again: its own note
            "Cargo.toml: added `imageproc` 0.25; removed `ort` 2.0.0-rc.10; "
            "tried and dropped `rustface` 0.1, `opencv` 0.92, `candle` 0.6, `tch` 0.16",
        ]
        current = next(m for m in active if "imageproc" in m.content)
        history = [m for m in notes if m.status is Status.SUPERSEDED]
        assert len(history) == 3  # kept, each linked from the note that took it over
        taken = {
            e.target: e.source for e in store.edges([m.id for m in history]) if e.type is EdgeType.SUPERSEDES
        }
        assert set(taken) == {m.id for m in history}
        chain, at = [], current.id  # newest to oldest: each took over the one before it
        while at in taken.values():
            at = next(t for t, s in taken.items() if s == at)
            chain.append(at)
        assert len(chain) == 3
    finally:
        cx.close()


def test_a_dependency_added_back_after_it_was_dropped_is_current(project: Path) -> None:
    # Added, dropped, added back with the same text as the first note (which is history by
    # then): the manifest holds it, so the note saying so is current and nothing says dropped.
    cargo = str(project / "Cargo.toml")
    updated = "The file has been updated."
    turns = [
        use_turn(1, "add base64", "Edit", _cargo(cargo, "", 'base64 = "0.22"\n'), updated),
        use_turn(2, "drop base64", "Edit", _cargo(cargo, 'base64 = "0.22"\n', ""), updated),
        use_turn(3, "add base64 back", "Edit", _cargo(cargo, "", 'base64 = "0.22"\n'), updated),
    ]
    cx = capture_turns(project, turns)
    try:
        notes = [
            m for m in cx.write_store(Scope.PROJECT).all_memories() if m.content.startswith("Cargo.toml")
        ]
        assert [m.content for m in notes if m.status is Status.ACTIVE] == ["Cargo.toml: added `base64` 0.22"]
        assert any("tried and dropped `base64`" in m.content for m in notes if m.status is Status.SUPERSEDED)
    finally:
        cx.close()


def _cargo(path: str, old: str, new: str) -> dict[str, object]:
    return {"file_path": path, "old_string": 'serde = "1"\n' + old, "new_string": 'serde = "1"\n' + new}


def test_a_note_taking_over_a_long_history_stays_bounded(project: Path) -> None:
    """A long chain (each edit pins the crate added before and adds the next) would make one
    note hold the whole history: past the cap, a newer note keeps its own text and the older
    notes it does not say again in full stay current. Nothing is lost, nothing grows without end."""
    cargo = str(project / "Cargo.toml")
    updated = "The file has been updated."
    names = [f"crate-number-{n:02d}-with-a-long-name" for n in range(30)]
    turns = [use_turn(1, "add the first crate", "Edit", _cargo(cargo, "", f'{names[0]} = "1.0"\n'), updated)]
    for n in range(1, len(names)):
        old = f'{names[n - 1]} = "1.0"\n'
        new = f'{names[n - 1]} = "1.1"\n{names[n]} = "1.0"\n'
        turns.append(
            use_turn(n + 1, f"pin {names[n - 1]}, add {names[n]}", "Edit", _cargo(cargo, old, new), updated)
        )
    cx = capture_turns(project, turns)
    try:
        notes = [
            m for m in cx.write_store(Scope.PROJECT).all_memories() if m.content.startswith("Cargo.toml")
        ]
        assert all(len(m.content) <= MAX_MERGED_CHARS for m in notes)
        active = [m for m in notes if m.status is Status.ACTIVE]
        assert len(active) > 1  # the cap kept the history in more than one note
        said = " ".join(m.content for m in active)
        assert all(f"`{name}`" in said or f"{name}:" in said for name in names)  # every crate still current
    finally:
        cx.close()
