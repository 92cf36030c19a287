"""Messages -> memory candidates: redact, then the explicit, structural, lexical layers. Pure."""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from cortex.core.extract.claims import without_unbacked_claims
from cortex.core.extract.compaction import extract_compacted_fixes
from cortex.core.extract.copies import without_quoted_copies
from cortex.core.extract.environment import missing_tools, tools_settled
from cortex.core.extract.explicit import extract_explicit, strip_memory_tags
from cortex.core.extract.manifests import extract_manifest_changes, kept_edit_fields, kept_patch
from cortex.core.extract.markers import extract_lexical, project_words
from cortex.core.extract.merges import kept_merge_fields
from cortex.core.extract.prose import parse_mentioned_paths
from cortex.core.extract.records import extract_decision_records, kept_record_fields
from cortex.core.extract.signals import extract_signals
from cortex.core.extract.speech import picked_option, rejects_answer, reported_merge
from cortex.core.extract.structural import extract_structural, relative_path
from cortex.core.extract.summary import extract_reports
from cortex.core.extract.symptoms import with_symptom
from cortex.core.extract.tasks import Ledger, advance, kept_todo_fields, task_state, touches_tasks
from cortex.core.extract.transcript import Message, ToolResult, ToolUse
from cortex.core.extract.turns import split_turns, starts_turn
from cortex.core.model import Candidate, Layer, MemoryType
from cortex.core.redact.secrets import redact, redact_value
from cortex.core.text import content_hash, first_line_summary, normalize_text
from cortex.core.write.overturn import Change, redirection
from cortex.core.write.state import is_state

MAX_CANDIDATES_PER_TURN = 60
# What a note says once settled, so an untyped report section of the same words takes it.
_SETTLED = frozenset({MemoryType.DECISION, MemoryType.GOTCHA, MemoryType.PATTERN, MemoryType.ARCHITECTURE})
MAX_FILES_PER_CANDIDATE = 10
DEFAULT_LAYERS = frozenset({Layer.EXPLICIT, Layer.USER, Layer.STRUCTURAL, Layer.LEXICAL})
_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:/")  # a Windows root, its separators made `/`
# Where a path naming the project root itself ends (a separator may close it): at a space, a quote,
# a bracket or a comma; not in `app-old` or `app.bak`, nor before a full stop (`cd .` + `.` reads `..`).
_BARE_ROOT_END = r"[\\/]?(?=$|[\s\"'`),;:\]}>])"
# Tool input fields the layers read; the rest (file contents, diffs but a manifest's) is never kept.
KEPT_INPUT_FIELDS = (
    "file_path",
    "notebook_path",
    "command",
    "description",
    "plan",
    "bash_id",
    "shell_id",
    "task_id",  # TaskOutput's: the background command it reports on
    "subject",  # the task tools': a task's subject, its id and its new status
    "taskId",
    "status",
)
# `Next.js`, `Node.js`, `Three.js`: a capitalised name with `.js` and no folder is a product
# more often than a file; it is a file only when a tool call of its turn names it.
_PRODUCT_NAME = re.compile(r"[A-Z][A-Za-z0-9]*\.js")
_WORD = re.compile(r"[^\s\"'`=:;|&<>()]+")
# What a command writes rather than runs: here-documents and quoted text (commit messages).
_WRITTEN = re.compile(
    r"<<-?\s*['\"]?(\w+)['\"]?[^\n]*\n.*?(?:\n\s*\1\b|\Z)|'[^']*'|\"(?:[^\"\\]|\\.)*\"", re.DOTALL
)


@dataclass(frozen=True, slots=True)
class GitContext:
    """What git says about the project at extraction time (the shell fills it)."""

    branch: str | None = None
    head: str | None = None
    changed_files: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SourcedCandidate:
    """A candidate with where it came from in the transcript."""

    candidate: Candidate
    end_offset: int
    session_id: str | None
    branch: str | None
    turn_end: int = 0  # where the candidate's turn ends: candidates of one turn are written together
    said_at: datetime | None = None  # the timestamp of the record it was read from
    record: str | None = None  # that record's uuid


@dataclass(frozen=True, slots=True)
class Reply:
    """A user's prompt as a reply to the session's previous turn: it closes what that turn left
    to the user. With `rejects`, it says that answer was wrong: what the answer reported
    (before `offset`, in this session) is no longer taken as found. With `merged`, it says the
    user merged the pull request the session left open. With `picked`, it only picks one of
    the options that turn laid out (its place: 1 for "A"). With `redirect`, it replaces what that
    turn decided ("actually, let's use Postgres for sessions instead"). `settled`: the programs
    and modules the prompt's turn ran or installed (an earlier note that they are missing ends)."""

    offset: int
    session_id: str | None
    record: str | None = None  # the prompt's transcript record (uuid)
    rejects: bool = False
    merged: str | None = None  # the pull request merged: its number, "" for "it"
    picked: int | None = None
    said_at: datetime | None = None  # the prompt's timestamp
    redirect: Change | None = None
    settled: frozenset[str] = frozenset()

    @property
    def judges(self) -> bool:
        """It says more than a reply: the answer was wrong, the pull request is merged, an option
        is chosen, what the answer decided is replaced. Such a prompt's record is kept as read; a
        plain reply changes nothing on a second read."""
        return self.rejects or self.merged is not None or self.picked is not None or self.redirect is not None


def replies(messages: Sequence[Message]) -> list[Reply]:
    """The prompts of these messages, in order, as replies to the turn before each."""
    out = []
    for turn in split_turns(messages):
        prompt = next((m for m in turn if starts_turn(m) and m.texts), None)
        if prompt is not None:
            said, at, record = prompt.texts[0], prompt.timestamp, prompt.record
            rejects, merged, picked = rejects_answer(said), reported_merge(said), picked_option(said)
            reply = Reply(prompt.end_offset, prompt.session_id, record, rejects, merged, picked, at)
            redirect, settled = redirection(said.split("\n\n", 1)[0]), tools_settled(turn)
            out.append(replace(reply, redirect=redirect, settled=settled))
    return out


def extract_candidates(
    messages: Sequence[Message],
    *,
    project_root: str | None,
    git: GitContext | None,
    include_layers: Collection[Layer] = DEFAULT_LAYERS,
) -> list[Candidate]:
    """Candidates from layers 1-3 over redacted messages, deduplicated and capped."""
    found = extract_sourced(messages, project_root=project_root, git=git, include_layers=include_layers)
    return [s.candidate for s in found]


def extract_sourced(
    messages: Sequence[Message],
    *,
    project_root: str | None,
    git: GitContext | None,
    include_layers: Collection[Layer] = DEFAULT_LAYERS,
    tasks: Ledger = (),
) -> list[SourcedCandidate]:
    """Like `extract_candidates`, keeping each candidate's transcript offset, session, branch.
    `tasks` is the task list as the transcript left it before these messages (`task_ledger`)."""
    clean = redact_messages(messages)
    git = git or GitContext()
    words = project_words(project_root, git.branch)
    out: list[SourcedCandidate] = []
    # One turn at a time, so a session read turn by turn and in one go yield the same candidates;
    # the task list is carried from turn to turn for the same reason.
    for turn in split_turns(clean):
        tasks = advance(tasks, turn)
        out.extend(_turn_candidates(turn, project_root, git, words, include_layers, tasks))
    return out


def task_ledger(messages: Sequence[Message]) -> Ledger:
    """The task list as these messages (the transcript before a chunk) leave it, read from the
    same redacted text the turns are."""
    return advance((), redact_messages(messages))


def _turn_candidates(
    turn: Sequence[Message],
    project_root: str | None,
    git: GitContext,
    words: frozenset[str],
    include_layers: Collection[Layer],
    tasks: Ledger = (),
) -> list[SourcedCandidate]:
    raw: list[tuple[Candidate, Message]] = []
    untagged = [strip_memory_tags(m) for m in turn]  # what layer 1 took is not found again
    if Layer.EXPLICIT in include_layers or Layer.USER in include_layers:
        raw.extend(extract_explicit(turn, project_words=words, layers=include_layers))
    if Layer.STRUCTURAL in include_layers:
        raw.extend(extract_structural(turn, project_root=project_root))
        raw.extend(without_unbacked_claims(extract_reports(untagged), turn))
        raw.extend(extract_signals(untagged, project_words=words))
        raw.extend(extract_manifest_changes(turn))
        raw.extend(extract_compacted_fixes(turn))
        raw.extend(extract_decision_records(turn))
        raw.extend(missing_tools(turn))
        raw.extend(_task_list(turn, tasks))
    if Layer.LEXICAL in include_layers:
        raw.extend(extract_lexical(untagged, project_words=words))
    raw = with_symptom(without_quoted_copies(raw), turn)
    out: list[SourcedCandidate] = []
    seen: dict[str, int] = {}
    turn_end = max((m.end_offset for m in turn), default=0)
    named, touched = _tool_files(turn, project_root)
    git = replace(git, changed_files=tuple(dict.fromkeys((*git.changed_files, *touched))))
    for candidate, message in raw:
        finished = _finish(candidate, message, project_root, git, named)
        key = content_hash(finished.content)
        if key in seen:  # the same words twice: an untyped report section takes a layer's type
            first = out[seen[key]]
            if first.candidate.type is MemoryType.CONTEXT and finished.type in _SETTLED:
                out[seen[key]] = replace(first, candidate=replace(first.candidate, type=finished.type))
            continue
        if not finished.content:
            continue
        seen[key] = len(out)
        branch = message.git_branch or git.branch
        said, record = message.timestamp, message.record
        out.append(
            SourcedCandidate(finished, message.end_offset, message.session_id, branch, turn_end, said, record)
        )
        if len(out) >= MAX_CANDIDATES_PER_TURN:
            break
    # Reported state goes last: the use case supersedes older states once the turn is written.
    return [s for s in out if not is_state(s.candidate.tags)] + [s for s in out if is_state(s.candidate.tags)]


def _task_list(turn: Sequence[Message], tasks: Ledger) -> list[tuple[Candidate, Message]]:
    """The task list's state at the end of a turn that called a task tool."""
    last = next((m for m in reversed(turn) if touches_tasks((m,))), None)
    if last is None:
        return []
    note = task_state(tasks)
    return [] if note is None else [(note, last)]


def redact_messages(messages: Sequence[Message]) -> list[Message]:
    """The messages with every kept string redacted and tool inputs cut to the fields we read."""
    cache: dict[tuple[str, str], ToolResult] = {}

    def clean_result(result: ToolResult) -> ToolResult:
        # A result appears twice (in its user message and linked to its call): redact it once.
        key = (result.tool_use_id, result.content)
        done = cache.get(key)
        if done is None:
            answers = tuple((redact(q).text, redact(a).text, redact(d).text) for q, a, d in result.answers)
            content, edited = redact(result.content).text, redact(result.edited).text
            done = cache[key] = replace(result, content=content, patch=(), answers=answers, edited=edited)
        return done

    def linked_result(use: ToolUse) -> ToolResult | None:
        if use.result is None:
            return None
        sides = kept_patch(use.input, use.result.patch)  # a rewritten manifest's hunks only
        patch = tuple((redact(old).text, redact(new).text) for old, new in sides)
        return replace(clean_result(use.result), patch=patch) if patch else clean_result(use.result)

    out = []
    for message in messages:
        uses = tuple(ToolUse(u.id, u.name, _kept_input(u.input), linked_result(u)) for u in message.tool_uses)
        command = message.command and replace(message.command, args=redact(message.command.args).text)
        texts = tuple(t for t in (redact(t).text.strip() for t in message.texts) if t)
        out.append(
            replace(
                message,
                texts=texts,
                tool_uses=uses,
                tool_results=tuple(clean_result(r) for r in message.tool_results),
                command=command,
                compacted=redact(message.compacted).text,
            )
        )
    return out


def _tool_files(turn: Sequence[Message], project_root: str | None) -> tuple[frozenset[str], tuple[str, ...]]:
    """(the file names, last path parts, that the turn's tool calls name: paths read or
    written and the words of commands run, outside quotes and here-documents; the project
    files read or written)."""
    names: set[str] = set()
    paths: dict[str, None] = {}
    for message in turn:
        for use in message.tool_uses:
            for key in ("file_path", "notebook_path", "command"):
                value = use.input.get(key)
                if not isinstance(value, str):
                    continue
                if key != "command" and (rel := relative_path(value.replace("\\", "/"), project_root)):
                    paths.setdefault(rel, None)
                words = _WORD.findall(_WRITTEN.sub(" ", value)) if key == "command" else [value]
                names.update(w.replace("\\", "/").rsplit("/", 1)[-1] for w in words)
    return frozenset(names), tuple(paths)


def _finish(
    candidate: Candidate,
    message: Message,
    project_root: str | None,
    git: GitContext,
    tool_names: frozenset[str] = frozenset(),
) -> Candidate:
    content = normalize_text(candidate.content)
    if candidate.layer in (Layer.STRUCTURAL, Layer.LEXICAL):
        content = project_relative(content, project_root)
    branch = message.git_branch or git.branch
    tags = list(candidate.tags)
    if branch and branch != "HEAD":
        tags.append(f"branch:{branch}")
    files = list(candidate.files) or _resolve_files(content, project_root, git.changed_files, tool_names)
    return replace(
        candidate,
        content=content,
        summary=candidate.summary or first_line_summary(content),
        tags=tuple(dict.fromkeys(tags)),
        files=tuple(dict.fromkeys(files))[:MAX_FILES_PER_CANDIDATE],
    )


def project_relative(text: str, project_root: str | None) -> str:
    """Paths inside the project written relative to its root (`/home/ana/app/docs/plan.md` ->
    `docs/plan.md`): a note stays true when the checkout moves or a teammate reads it, and does
    not carry the machine's folders; the root itself is `.`. A Windows root matches with either
    separator, in any case."""
    patterns = _root_patterns((project_root or "").replace("\\", "/").rstrip("/"))
    if patterns is None:
        return text
    inside, bare = patterns
    return bare.sub(".", inside.sub("", text))


@functools.lru_cache(maxsize=16)
def _root_patterns(root: str) -> tuple[re.Pattern[str], re.Pattern[str]] | None:
    """(a path inside `root`, `root` itself) as patterns, built once per root rather than for each
    note; None for no root, or one as wide as `/home` (its paths are not the project's)."""
    windows = _WINDOWS_DRIVE.match(root) is not None
    if root.count("/") < 2 and not windows:
        return None
    parts = [re.escape(p) for p in root.split("/")]
    flags = re.IGNORECASE if windows else 0
    inside = re.compile(r"[\\/]".join(parts) + r"[\\/](?=[^\s\\/])", flags)
    # The root itself ("repository \"/home/ana/app\" is not tracked"): `.`, as a relative path says.
    bare = re.compile(r"[\\/]".join(parts) + _BARE_ROOT_END, flags)
    return inside, bare


def _resolve_files(
    content: str, project_root: str | None, changed: Sequence[str], tool_names: Collection[str] = ()
) -> list[str]:
    """Paths the text mentions, made project-relative; a bare name resolves through the
    changed files (and those the turn's tools read or wrote) when exactly one of them has
    that name. A product name (`Next.js`) that
    neither a tool call of the turn nor a changed file names is no file."""
    resolved = []
    for path in parse_mentioned_paths(content):
        if "/" not in path:
            matches = [f for f in changed if f.rsplit("/", 1)[-1] == path]
            if not matches and _PRODUCT_NAME.fullmatch(path) and path not in tool_names:
                continue
            path = matches[0] if len(matches) == 1 else path
        rel = relative_path(path, project_root)
        if rel:
            resolved.append(rel)
    return resolved


def _kept_input(tool_input: Mapping[str, object]) -> dict[str, object]:
    kept: dict[str, object] = {
        k: tool_input[k] for k in KEPT_INPUT_FIELDS if isinstance(tool_input.get(k), str)
    }
    kept.update(kept_edit_fields(tool_input))  # a manifest edit's sides: the manifest layer reads them
    kept.update(kept_merge_fields(tool_input))  # a merge tool's method, number and title
    kept.update(kept_record_fields(tool_input))  # a decision record's text, a decision log's sides
    kept.update(kept_todo_fields(tool_input))  # TodoWrite's list: its items' text and status
    redacted = redact_value(kept)
    return redacted if isinstance(redacted, dict) else {}
