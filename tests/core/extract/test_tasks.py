"""The task list of Claude Code's task tools (2.1.142 on: TaskCreate, TaskUpdate, TaskList),
built from the records 2.1.191 writes: carried across turns, and left as one state note by
each turn that touched it."""

from __future__ import annotations

from pathlib import Path

from cortex.core.extract.pipeline import extract_sourced, task_ledger
from cortex.core.extract.signals import TODO_TAG
from cortex.core.extract.tasks import Task, advance, task_calls
from cortex.core.extract.transcript import Message, parse_chunk
from cortex.core.model import MemoryType
from cortex.core.write.state import STATE_TAG
from cortex.shell.transcript_io import read_task_history
from tests.support.transcript_builders import (
    bash_result_record,
    bash_use_record,
    jsonl,
    prompt_record,
    text_record,
    tool_result_record,
    tool_use_record,
)


def task_use(
    tid: str, name: str, tool_input: dict[str, object], *, sidechain: bool = False
) -> dict[str, object]:
    return tool_use_record(tid, name, tool_input, isSidechain=sidechain)


def create(tid: str, task_id: str, subject: str, description: str = "") -> list[dict[str, object]]:
    """A TaskCreate call and its result, as 2.1.191 writes them."""
    use = task_use(tid, "TaskCreate", {"subject": subject, "description": description, "activeForm": subject})
    result = tool_result_record(
        tid,
        f"Task #{task_id} created successfully: {subject}",
        is_error=False,
        top={"task": {"id": task_id, "subject": subject}},
    )
    return [use, result]


def update(tid: str, task_id: str, status: str, before: str = "pending") -> list[dict[str, object]]:
    """A TaskUpdate of a task's status and its result."""
    use = task_use(tid, "TaskUpdate", {"taskId": task_id, "status": status})
    top = {
        "success": True,
        "taskId": task_id,
        "updatedFields": ["status"],
        "statusChange": {"from": before, "to": status},
    }
    return [use, tool_result_record(tid, f"Updated task #{task_id} status", is_error=False, top=top)]


def listing(tid: str, text: str) -> list[dict[str, object]]:
    return [task_use(tid, "TaskList", {}), tool_result_record(tid, text, is_error=False, top={"tasks": []})]


def messages(records: list[dict[str, object]]) -> list[Message]:
    return list(parse_chunk(jsonl(records), 0).messages)


def notes(records: list[dict[str, object]], seed: list[dict[str, object]] | None = None) -> list[str]:
    tasks = task_ledger(messages(seed)) if seed else ()
    found = extract_sourced(messages(records), project_root=None, git=None, tasks=tasks)
    return [s.candidate.content for s in found if TODO_TAG in s.candidate.tags]


FIRST_TURN = [
    prompt_record("Fork jcode and switch the launcher to it", "p1"),
    *create("c1", "1", "Fork + clone jcode"),
    *create("c2", "2", "Rewrite the launcher for jcode"),
    *update("u1", "1", "in_progress"),
    text_record("m1", "Started on the fork.", "t1"),
]
LATER_TURN = [
    prompt_record("go on", "p2"),
    *update("u2", "1", "completed", before="in_progress"),
    *update("u3", "2", "in_progress"),
    text_record("m2", "The fork is done.", "t2"),
]


def test_a_turn_that_touches_the_task_list_leaves_its_state() -> None:
    found = extract_sourced(messages(FIRST_TURN), project_root=None, git=None)
    (note,) = [s.candidate for s in found if TODO_TAG in s.candidate.tags]
    assert note.type is MemoryType.PROGRESS and STATE_TAG in note.tags
    assert note.content == "Task list. Open: Fork + clone jcode; Rewrite the launcher for jcode"


def test_tasks_made_in_one_turn_and_done_in_a_later_one_are_named() -> None:
    done_later = "Task list. Open: Rewrite the launcher for jcode. Done: Fork + clone jcode"
    # Read in one go, the list is carried from turn to turn.
    assert notes(FIRST_TURN + LATER_TURN)[-1] == done_later
    # Read turn by turn, the later turn starts from the list the transcript left before it.
    assert notes(LATER_TURN, seed=FIRST_TURN) == [done_later]
    # Without that list its updates name no task: no note rather than a wrong one.
    assert notes(LATER_TURN) == []


def test_the_list_as_tasklist_reports_it_replaces_the_carried_one() -> None:
    text = (
        "#1 [completed] Fork + clone jcode\n"
        "#3 [in_progress] Build jcode (agent-1) [blocked by #4]\n"
        "#4 [pending] Install rust"
    )
    turn = [prompt_record("where are we?", "p3"), *listing("l1", text), text_record("m3", "Here.", "t3")]
    assert notes(turn, seed=FIRST_TURN) == [
        "Task list. Open: Build jcode (agent-1); Install rust. Done: Fork + clone jcode"
    ]
    empty = [
        prompt_record("and now?", "p4"),
        *listing("l2", "No tasks found"),
        text_record("m4", "None.", "t4"),
    ]
    assert advance((Task("1", "Fork"),), messages(empty)) == ()
    # An answer of another shape says nothing of the list.
    odd = [prompt_record("list", "p5"), *listing("l3", "something else"), text_record("m5", "ok", "t5")]
    assert advance((Task("1", "Fork"),), messages(odd)) == (Task("1", "Fork"),)


def test_deleted_failed_and_unknown_updates() -> None:
    failed = task_use("u9", "TaskUpdate", {"taskId": "2", "status": "completed"})
    turn = [
        prompt_record("tidy the list", "p6"),
        *update("u4", "1", "deleted"),
        failed,
        tool_result_record(
            "u9", "<tool_use_error>Task not found</tool_use_error>", is_error=True, top="Error"
        ),
        *update("u5", "7", "completed"),  # a task the list never held
        text_record("m6", "Tidied.", "t6"),
    ]
    assert notes(turn, seed=FIRST_TURN) == ["Task list. Open: Rewrite the launcher for jcode"]


def test_a_new_list_after_every_task_was_done_starts_afresh() -> None:
    finished = [
        prompt_record("finish", "p7"),
        *update("u6", "1", "completed"),
        *update("u7", "2", "completed"),
        text_record("m7", "All done.", "t7"),
    ]
    new = [
        prompt_record("next feature", "p8"),
        *create("c3", "3", "Add the settings page"),
        text_record("m8", "ok", "t8"),
    ]
    assert notes(new, seed=FIRST_TURN + finished) == ["Task list. Open: Add the settings page"]


def test_a_subagents_task_calls_are_not_the_sessions_list() -> None:
    turn = [
        prompt_record("research it", "p9"),
        task_use("s1", "TaskCreate", {"subject": "Subagent step"}, sidechain=True),
        text_record("m9", "Researched.", "t9"),
    ]
    assert notes(turn, seed=FIRST_TURN) == []


def test_a_secret_in_a_task_subject_never_reaches_the_note() -> None:
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    turn = [
        prompt_record("rotate", "p10"),
        *create("c4", "1", f"Rotate {secret} in CI"),
        text_record("m10", "ok", "t10"),
    ]
    (note,) = notes(turn)
    assert secret not in note and note.startswith("Task list. Open: Rotate ")
    later = [prompt_record("done?", "p11"), *update("u8", "1", "completed"), text_record("m11", "yes", "t11")]
    (seeded,) = notes(later, seed=turn)
    assert secret not in seeded and seeded.startswith("Task list. Done: Rotate ")


def test_the_history_before_a_chunk_keeps_only_the_task_calls(tmp_path: Path) -> None:
    other = [bash_use_record("b1", "pytest -q"), bash_result_record("b1", "3 passed in 0.1s")]
    records = FIRST_TURN + other + LATER_TURN
    data = jsonl(records)
    kept = task_calls(data.splitlines(keepends=True))
    assert b'"b1"' not in b"".join(kept)  # the Bash call and its result are not read
    assert len(kept) == 2 * 5  # the five task calls and their five results
    path = tmp_path / "t.jsonl"
    path.write_bytes(data)
    before_later = len(jsonl(FIRST_TURN + other))
    assert task_ledger(list(read_task_history(path, before_later))) == task_ledger(messages(FIRST_TURN))
    assert read_task_history(path, 0) == () and read_task_history(tmp_path / "gone.jsonl", 100) == ()


def test_each_task_shows_the_head_of_its_description() -> None:
    long = (
        "cargo build --release in $WS/jcode, then scripts/install_release.sh to ~/.jcode/builds/current " * 3
    )
    turn = [
        prompt_record("build it", "p12"),
        *create("c5", "1", "Build + install jcode", long),
        *create("c6", "2", "Push the branch", "git push -u origin feat/local-gemma4-macos"),
        text_record("m12", "ok", "t12"),
    ]
    (note,) = notes(turn)
    head = note.split("; Push the branch")[0]
    assert head.startswith(
        "Task list. Open: Build + install jcode (cargo build --release in $WS/jcode, then "
    )
    assert head.endswith("…)") and len(head) < len("Task list. Open: Build + install jcode ()") + 161
    assert note.endswith("; Push the branch (git push -u origin feat/local-gemma4-macos)")
    # An update may restate what a task is; TaskList's lines keep the description held.
    later = [
        prompt_record("rename", "p13"),
        task_use("u10", "TaskUpdate", {"taskId": "2", "description": "git push origin main"}),
        tool_result_record("u10", "Updated task #2 description", is_error=False, top={"success": True}),
        *listing("l4", "#1 [completed] Build + install jcode\n#2 [pending] Push the branch"),
        text_record("m13", "ok", "t13"),
    ]
    (seeded,) = notes(later, seed=turn)
    assert seeded.startswith(
        "Task list. Open: Push the branch (git push origin main). Done: Build + install jcode ("
    )
