"""Layer 2c, the task list of Claude Code's task tools (2.1.142 on): where the work stands. Pure.

From 2.1.142 a session keeps its task list with `TaskCreate`, `TaskUpdate` and `TaskList`
instead of rewriting it whole with `TodoWrite`. A call changes one task: `TaskCreate` adds one
(its result names the id the client gave it: "Task #3 created successfully: ..."), `TaskUpdate`
sets one's status (`deleted` removes it) or subject, and `TaskList` answers with the whole list,
a line per task (`#3 [in_progress] Run the e2e suite`). The list lives across turns: tasks made
in one turn are done in later ones. So the list is carried from turn to turn (`advance`), seeded
with what the transcript said before the messages at hand (`task_calls` picks those lines out),
and a turn that touched it leaves the list's state as of its end, as a TodoWrite turn does. A task's
subject is a title ("Build + install jcode stable"); its description says what the task is
("cargo build --release, scripts/install_release.sh to ~/.jcode/builds/current"), so the note
gives each task with the head of its description, as a TodoWrite item's text would.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from cortex.core.extract.commands import clip
from cortex.core.extract.signals import task_list_note
from cortex.core.extract.transcript import Message, ToolUse
from cortex.core.model import Candidate
from cortex.core.text import as_text

TASK_TOOLS = frozenset({"TaskCreate", "TaskUpdate", "TaskList"})
MAX_TODOS_KEPT = 50  # TodoWrite's list: its items' text and status only
MAX_SUBJECT_CHARS = 200
MAX_DESCRIPTION_CHARS = 160  # of each task's description, in the note
_STATUSES = frozenset({"pending", "in_progress", "completed"})
_CREATED = re.compile(r"^Task #(\S+) created successfully")
# TaskList's line per task: `#<id> [<status>] <subject>`, then ` (<owner>)` in a team and
# ` [blocked by #1, #2]` while a task it waits for is open.
_LISTED = re.compile(r"^#(\S+) \[(pending|in_progress|completed)\] (.+?)(?: \[blocked by [^\]]*\])?$")
_EMPTY_LIST = "No tasks found"
# What marks a transcript line that holds a task tool's call (its name, quoted), and a tool
# result's id: the lines `task_calls` keeps from the transcript before a chunk.
_CALL_MARKS = tuple(f'"{name}"'.encode() for name in sorted(TASK_TOOLS))
_RESULT_ID = re.compile(rb'"tool_use_id"\s*:\s*"([^"\\]+)"')
_USE_ID = re.compile(rb'"id"\s*:\s*"([^"\\]+)"')


@dataclass(frozen=True, slots=True)
class Task:
    """One task of the list: the client's id, its subject, its status and its description."""

    id: str
    subject: str
    status: str = "pending"
    description: str = ""

    @property
    def shown(self) -> str:
        """The subject, with the head of the description when it has one."""
        detail = clip(self.description, MAX_DESCRIPTION_CHARS)
        return f"{self.subject} ({detail})" if detail else self.subject


Ledger = tuple[Task, ...]


def touches_tasks(messages: Iterable[Message]) -> bool:
    """Whether any of these messages calls a task tool on the main thread."""
    return any(_task_uses(messages))


def advance(ledger: Ledger, messages: Iterable[Message]) -> Ledger:
    """The task list after these messages' task calls, in order. A call that failed or has no
    result changed nothing; an update of a task the list does not hold cannot be named and is
    left out."""
    tasks = list(ledger)
    for use in _task_uses(messages):
        result = use.result
        if result is None or result.is_error or result.rejected:
            continue
        if use.name == "TaskCreate":
            tasks = _created(tasks, use)
        elif use.name == "TaskUpdate":
            tasks = _updated(tasks, use)
        else:
            tasks = _listed(tasks, result.content)
    return tuple(tasks)


def task_state(ledger: Ledger) -> Candidate | None:
    """The list's state note: its open tasks (in progress first) and its done ones."""
    open_ = [t.shown for t in ledger if t.status == "in_progress"]
    open_ += [t.shown for t in ledger if t.status == "pending"]
    return task_list_note(open_, [t.shown for t in ledger if t.status == "completed"])


def task_calls(lines: Iterable[bytes]) -> list[bytes]:
    """Of a transcript's lines, those that hold a task tool's call or its result: all the list's
    history says, without parsing the rest of the transcript."""
    ids: set[bytes] = set()
    kept = []
    for line in lines:
        if any(mark in line for mark in _CALL_MARKS):
            kept.append(line)
            ids.update(_USE_ID.findall(line))
        elif ids and b'"tool_use_id"' in line and ids.intersection(_RESULT_ID.findall(line)):
            kept.append(line)
    return kept


def _task_uses(messages: Iterable[Message]) -> Iterable[ToolUse]:
    for message in messages:
        if not message.is_sidechain:  # a subagent's own list is not the session's
            yield from (u for u in message.tool_uses if u.name in TASK_TOOLS)


def _subject(value: object) -> str:
    return " ".join(as_text(value).split())[:MAX_SUBJECT_CHARS]


def _created(tasks: list[Task], use: ToolUse) -> list[Task]:
    assert use.result is not None
    made = _CREATED.match(use.result.content.strip())
    subject = _subject(use.input.get("subject"))
    if made is None or not subject:
        return tasks
    if tasks and all(t.status == "completed" for t in tasks):
        tasks = []  # the client clears a list whose every task is done: a new list begins
    description = as_text(use.input.get("description"))
    return [
        *(t for t in tasks if t.id != made.group(1)),
        Task(made.group(1), subject, description=description),
    ]


def _updated(tasks: list[Task], use: ToolUse) -> list[Task]:
    task_id = use.input.get("taskId")
    status = use.input.get("status")
    if status == "deleted":
        return [t for t in tasks if t.id != task_id]
    subject = _subject(use.input.get("subject"))
    description = as_text(use.input.get("description"))
    out = []
    for task in tasks:
        if task.id == task_id:
            task = replace(
                task,
                status=status if isinstance(status, str) and status in _STATUSES else task.status,
                subject=subject or task.subject,
                description=description or task.description,
            )
        out.append(task)
    return out


def _listed(tasks: Sequence[Task], content: str) -> list[Task]:
    """The list as TaskList reported it. A subject the list already holds is kept as created
    (the listed line may end with an owner in parentheses); an answer of another shape changes
    nothing."""
    text = content.strip()
    if text == _EMPTY_LIST:
        return []
    known = {t.id: t for t in tasks}
    listed = [_LISTED.match(line.strip()) for line in text.splitlines() if line.strip()]
    if not listed or any(m is None for m in listed):
        return list(tasks)
    out = []
    for m in listed:
        if m is not None:
            task = known.get(m.group(1)) or Task(m.group(1), _subject(m.group(3)))
            out.append(replace(task, status=m.group(2)))
    return out


def kept_todo_fields(tool_input: Mapping[str, object]) -> dict[str, object]:
    """What the layers read of a TodoWrite call: each item's text and status, nothing else."""
    todos = tool_input.get("todos")
    if not isinstance(todos, list):
        return {}
    items = [
        t for t in todos[:MAX_TODOS_KEPT] if isinstance(t, Mapping) and isinstance(t.get("content"), str)
    ]
    return {"todos": [{"content": t["content"], "status": str(t.get("status", ""))} for t in items]}
