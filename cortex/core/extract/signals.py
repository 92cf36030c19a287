"""Layer 2c, session signals: approved plans, the todo list's last state, the user's standing
rules, and commit message bodies. Pure.

Claude Code sessions carry these in every language: `ExitPlanMode` holds a plan the user
approved (a refused plan is not a decision, and a plan to investigate a failure is where the
work stands, not a decision), `TodoWrite` the task list (its last state in a
turn is where the work stands), the user's own words set rules ("always run the e2e check",
"never push to develop", "use X instead"), and their answers to `AskUserQuestion` settle what
the assistant asked.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace

from cortex.core.extract.markers import GLOBAL_SCOPE_MIN_CONFIDENCE, score_global_confidence
from cortex.core.extract.prose import parse_sentences
from cortex.core.extract.speech import is_intent, without_acknowledgement
from cortex.core.extract.summary import clean_report, clip_at_line, turn_candidate, word_count
from cortex.core.extract.transcript import Message, Role, ToolUse
from cortex.core.extract.turns import starts_turn
from cortex.core.model import Candidate, MemoryType, Scope
from cortex.core.write.overturn import redirection
from cortex.core.write.state import STATE_TAG

MAX_PLAN_CHARS = 900
MAX_TODOS_LISTED = 12
MAX_RULE_CHARS = 400
MIN_RULE_WORDS = 5
MAX_RULE_WORDS = 80
MAX_BODY_CHARS = 600
MAX_RULE_PROMPT_CHARS = 1200  # a longer prompt is mostly pasted material, not the user's rules
MAX_READING_CHARS = 300
PLAN_TAG = "plan"
TODO_TAG = "todo"
RULE_TAG = "user-rule"
ANSWER_TAG = "user-answer"
MAX_DETAIL_CHARS = 200

# A sentence of the user's that sets a standing rule for the project.
_RULE = re.compile(
    r"\b(?:always|never|don'?t ever|do not ever|from now on|every time|make sure (?:to|you)|"
    r"must(?:n'?t)? (?:always|never|be|use|run)|instead|rather than|not (?:\w+ )?directly|"
    r"no,? (?:use|do|we)|stop \w+ing)\b",
    re.IGNORECASE,
)
# An object that names nothing: "stop doing that", "don't add anything else" say nothing lasting.
_VAGUE = r"(?!\s*(?:it|this|that|them|these|those|one|anything|something|more|there|here)\b)"
# A short imperative that only makes sense as a standing rule, at the start of a clause: "stop
# adding comments everywhere", "don't use any, use unknown", "use tabs not spaces", about a thing
# it names. Not one bound to now ("don't push yet", "use the old config for now").
_IMPERATIVE = re.compile(
    r"(?:^|[,;:]\s*(?:so\s+|and\s+|but\s+)?)(?:(?:please|pls|also|and)\s+)?"
    r"(?:stop \w+ing|(?:don'?t|do not) (?:use|suggest|add|write|import|touch|modify|edit|rely on|mock|"
    r"hard-?code|disable|skip)|use " + _VAGUE + r"\S+(?: \S+)? (?:not|over|instead of) \S+)\b" + _VAGUE,
    re.IGNORECASE,
)
MIN_IMPERATIVE_WORDS = 3
# A correction of something the assistant does again and again ("you keep saying it is working
# but are not e2e testing"): a standing rule, and the user's sentence before it says what to do.
_REPEATED = re.compile(
    r"^(?:but |and |again,? )?you keep\b|\byou keep (?:saying|claiming|forgetting)\b", re.IGNORECASE
)
# A sentence of the user's that changes course for the project: "Switch to runtime query
# checking in sqlx", "I want to migrate to using bun", "go back to npm".
_PROPOSES = r"(?:let'?s |we should |we need to |i (?:want|need) to |i'd like to |i would like to )"
_SWITCHES = r"(?:switch|migrate|convert|port|go back|revert|roll ?back|downgrade|upgrade)\b.{0,80}?\bto\b"
_SWITCH = re.compile(
    rf"^(?:(?:please|ok(?:ay)?|so|now|then),? )?{_PROPOSES}?{_SWITCHES}"
    # or a later clause proposes it: "bun breaks the deploy, let's go back to npm"
    rf"|[,;:]\s+(?:(?:so|and|but|please|ok(?:ay)?|now|then),? )?{_PROPOSES}{_SWITCHES}",
    re.IGNORECASE,
)
_QUESTION = re.compile(r"\?\s*$")
# A prompt that opens by saying the last answer got a fact wrong, then states the fact: "no, the
# test database runs on port 5433", "actually the API is at /v2, not /v1".
_CORRECTS = re.compile(
    r"^\W*(?:(?:no|nope|wrong|incorrect|(?:that's|that is|it's|it is) (?:wrong|not (?:right|true|correct))"
    r"|(?P<actually>actually))\b[\s,.!:;\u2013\u2014-]*)+",
    re.IGNORECASE,
)
# ... or by letting the assistant know: "FYI the staging database runs on port 5433", "heads up:
# our CI runners have no network access". ("Note that ..." is the lexical layer's.)
_NOTES = re.compile(
    r"^\W*(?:fyi|heads[- ]up|just so you know|for (?:your )?(?:context|info(?:rmation)?)|btw|by the way)"
    r"\b[\s,.!:;\u2013\u2014-]*",
    re.IGNORECASE,
)
_STATES = re.compile(
    r"\b(?:is|are|was|were|isn't|aren't|wasn't|runs?|uses?|has|lives?|needs?|takes?|returns?|"
    r"listens?|points?|belongs?|means?|expects?|requires?)\b",
    re.IGNORECASE,
)
# What opens a request, a feeling or a question rather than a fact about the project.
_ASKS_OR_FEELS = re.compile(
    r"^(?:you|i|i'm|i've|i'd|we should|we need|let'?s|please|can|could|would|will|just|use|do|don't|"
    r"open|run|try|make|check|go|read|look|stop|revert|remove|add|fix|put|keep|change|set|delete|"
    r"move|rename|write|show|tell|explain|think|why|what|how|where|when|which|who)\b",
    re.IGNORECASE,
)
_CONTRAST = re.compile(r"\bnot\b|n't\b|\binstead\b", re.IGNORECASE)
# Where things stand right now ("no, the build is still failing"): the next turn changes it. An
# imperative that says it is bound to now ("don't push yet") is no standing rule either.
_FOR_NOW = re.compile(
    r"\b(?:still|now|currently|anymore|yet|today|fail(?:s|ing|ed)?|broken|pass(?:es|ing|ed)?|works?|down)\b",
    re.IGNORECASE,
)
_HAVE = re.compile(r"\bhave\b", re.IGNORECASE)  # "our CI runners have no network access"
# A prompt that opens by saying what a named thing is: "`api/` runs on port 8080", "the
# staging db lives on db2.internal", "my start command is `make run`" (not "needs", "should").
MAX_PLAIN_FACT_CHARS = 300
_PLAIN_SUBJECT = re.compile(
    r"^\W{0,2}(?:(?:the|our|my)\s+(?:[\w.`/-]+\s+){0,3}?[\w.`/-]+|`[^`]+`|[\w-]*[./][\w./-]*)\s+"
    r"(?:is|are|runs?|uses?|lives?|listens?|points?|belongs?|expects?)\b",
    re.IGNORECASE,
)
_NAMED = re.compile(r"`[^`]+`|(?<![\w])[\w-]*[./][\w./-]*\w|\b\w*\d\w*\b")
# A feeling or a bug report, which goes stale: "is too thin", "is flaky on CI", "throws a 500".
_FEELS = re.compile(
    r"\b(?:wrong|bad|ugly|crappy|weird|confusing|annoying|slow|too \w+|not (?:good|great|right)|"
    r"flaky|crash\w*|errors?|exceptions?|bug\w*|hangs?|hanging|times? out|[45]\d\d)\b",
    re.IGNORECASE,
)
CORRECTION_TAG = "user-correction"
NOTE_TAG = "user-note"
MIN_CORRECTION_WORDS = 4
# A plan's title that says it sets out to find a cause, not to build something.
_INVESTIGATION = re.compile(
    r"\b(?:investigat\w*|debug\w*|diagnos\w*|troubleshoot\w*|root[- ]cause analysis|hypothes[ie]s)\b",
    re.IGNORECASE,
)
# Users often type without capitals: "what do you mean? explain ..." is two sentences.
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[\w`\"'(])|\n+")
_HEREDOC = re.compile(r"<<-?\s*['\"]?(\w+)['\"]?\n(.*?)\n\s*\1\b", re.DOTALL)
_MESSAGE = re.compile(r"(?:-m|--message)(?:=|\s+)(?:\"((?:[^\"\\]|\\.)*)\"|'([^']*)')")
# Who made or signed the commit, not what it changed: git trailers ("Co-Authored-By: ...",
# "Signed-off-by: ...") and Claude Code's attribution ("🤖 Generated with [Claude Code](...)",
# which a wrapper may continue on the next line: "via [Happy](...)"). They close a message.
_ATTRIBUTION = re.compile(r"^\W*(?:[\w-]+-by:|generated with \[?claude code\b)", re.IGNORECASE)

Found = list[tuple[Candidate, Message]]


def extract_signals(turn: Sequence[Message], *, project_words: Collection[str] = ()) -> Found:
    """Plans, the turn's last todo list and the user's rules, for one turn. A rule about the
    user across projects ("in all my projects ...", "I always ...") is global, as a preference
    is; `project_words` (the project's name, its branch) keep one that names them here."""
    found: Found = []
    found.extend(_plans(turn))
    found.extend(_todos(turn))
    found.extend(_rules(turn, project_words))
    found.extend(_corrections(turn))
    found.extend(_answers(turn))
    return found


def _uses(turn: Sequence[Message], name: str) -> list[tuple[ToolUse, Message]]:
    return [(u, m) for m in turn if not m.is_sidechain for u in m.tool_uses if u.name == name]


def _plans(turn: Sequence[Message]) -> Found:
    found: Found = []
    for use, message in _uses(turn, "ExitPlanMode"):
        plan = use.input.get("plan")
        if not isinstance(plan, str) or use.result is None or use.result.rejected or use.result.is_error:
            continue  # a refused or unanswered plan was never agreed
        text = "\n".join(clean_report(plan))
        if word_count(text) < MIN_RULE_WORDS:
            continue
        text = clip_at_line(text, MAX_PLAN_CHARS)
        if _INVESTIGATION.search(text.split("\n", 1)[0]):
            # A plan to find out is not a decision: its guesses wait for what the next turns find.
            candidate = _candidate(
                f"Investigation plan: {text}", MemoryType.PROGRESS, PLAN_TAG, 0.5, 3, state=True
            )
        else:
            candidate = _candidate(f"Approved plan: {text}", MemoryType.DECISION, PLAN_TAG, 0.7, 6)
        found.append((candidate, message))
    return found


def _todos(turn: Sequence[Message]) -> Found:
    last: tuple[ToolUse, Message] | None = None
    for use, message in _uses(turn, "TodoWrite"):
        if use.result is None or not use.failed:
            last = (use, message)
    if last is None:
        return []
    use, message = last
    todos = use.input.get("todos")
    if not isinstance(todos, list):
        return []
    by_status: dict[str, list[str]] = {}
    for item in todos:
        if isinstance(item, Mapping) and isinstance(item.get("content"), str):
            by_status.setdefault(str(item.get("status", "pending")), []).append(str(item["content"]).strip())
    note = task_list_note(
        by_status.get("in_progress", []) + by_status.get("pending", []), by_status.get("completed", [])
    )
    return [] if note is None else [(note, message)]


def task_list_note(open_: Sequence[str], done: Sequence[str]) -> Candidate | None:
    """Where the work stands by the task list (TodoWrite's, or the 2.1 task tools'): one state
    note of its open and done items, or None for an empty list."""
    if not done and not open_:
        return None
    parts = []
    if open_:
        parts.append("Open: " + "; ".join(open_[:MAX_TODOS_LISTED]))
    if done:
        parts.append("Done: " + "; ".join(done[:MAX_TODOS_LISTED]))
    content = "Task list. " + ". ".join(parts)
    return _candidate(content, MemoryType.PROGRESS, TODO_TAG, 0.6, 4, state=True)


def _rules(turn: Sequence[Message], project_words: Collection[str]) -> Found:
    found: Found = []
    for position, message in enumerate(turn):
        if message.role is not Role.USER or not starts_turn(message):
            continue
        reading = _reading(turn[position + 1 :])
        for text in message.texts:
            if len(text) > MAX_RULE_PROMPT_CHARS:
                continue
            sentences = [" ".join(s.split()) for s in _SENTENCE.split(text)]
            for index, sentence in enumerate(sentences):
                words = word_count(sentence)
                imperative = _IMPERATIVE.search(sentence) is not None and not _FOR_NOW.search(sentence)
                least = MIN_IMPERATIVE_WORDS if imperative else MIN_RULE_WORDS
                if not (least <= words <= MAX_RULE_WORDS) or _QUESTION.search(sentence):
                    continue
                repeated = _REPEATED.search(sentence) is not None
                if _SWITCH.search(sentence) or redirection(sentence):
                    decided = sentence[:MAX_RULE_CHARS]
                    found.append(
                        (
                            _candidate(f"The user decided: {decided}", MemoryType.DECISION, RULE_TAG, 0.6, 6),
                            message,
                        )
                    )
                elif _RULE.search(sentence) or repeated or imperative:
                    # A parenthesis right after the rule is its reason: "(hint: destroying
                    # traceability is not it)".
                    after = sentences[index + 1] if index + 1 < len(sentences) else ""
                    rule = f"{sentence} {after}" if after.startswith("(") else sentence
                    before = sentences[index - 1] if index > 0 else ""
                    if repeated and before and not _QUESTION.search(before):
                        rule = f"{before} {rule}"
                    rule = rule[:MAX_RULE_CHARS]
                    said = rule + (f" (Taken as: {reading})" if reading else "")
                    candidate = _candidate(f"The user's rule: {said}", MemoryType.PATTERN, RULE_TAG, 0.6, 6)
                    reach = score_global_confidence(rule, project_words)  # about the user, across projects?
                    if reach >= GLOBAL_SCOPE_MIN_CONFIDENCE:
                        candidate = replace(candidate, scope=Scope.GLOBAL, global_confidence=reach)
                    found.append((candidate, message))
    return found


def _corrections(turn: Sequence[Message]) -> Found:
    """The fact a user's prompt states after saying the last answer got it wrong ("no, the test
    database runs on port 5433, not 5432"): the assistant believed otherwise once, and the next
    session may too. Whatever the prompt goes on to ask is read as any prompt is."""
    found: Found = []
    for message in turn:
        if message.role is Role.USER and starts_turn(message) and message.texts:
            if said := _corrected_fact(message.texts[0]):
                note = f"The user corrected: {said}"
                found.append((_candidate(note, MemoryType.GOTCHA, CORRECTION_TAG, 0.7, 6), message))
            elif said := _noted_fact(message.texts[0]):
                note = f"The user noted: {said}"
                found.append((_candidate(note, MemoryType.GOTCHA, NOTE_TAG, 0.7, 6), message))
    return found


def _noted_fact(prompt: str) -> str:
    """A fact the user lets the assistant know ("FYI ...", "heads up: ...") or states plainly."""
    return _stated_fact(_after(_NOTES, prompt), _HAVE) or _plain_fact(prompt)


def _plain_fact(prompt: str) -> str:
    """A short prompt that only states a fact about something it names (".skogai is private
    but we send a token for the actions to use", "my build command is `make install`"). Only
    a subject that names a thing in the code or setup (a path, a dotted or numbered name, code
    in backticks; or "the/our/my ..." with such a name later) and says what it is, runs on or
    uses: "The sidebar needs a logout button" asks, "this looks off" feels."""
    text = prompt.strip()
    if len(text) > MAX_PLAIN_FACT_CHARS or "\n" in text or not _PLAIN_SUBJECT.match(text):
        return ""
    said = _stated_fact(text)
    return said if said and _NAMED.search(said) and not _FEELS.search(said) else ""


def _corrected_fact(prompt: str) -> str:
    """The first sentence after a correcting opener when it states a lasting fact: not a
    question, a request or a feeling, not where things stand right now ("no, the build is still
    failing"); after "actually", only with a contrast ("actually the tests pass now" is news)."""
    opener = _CORRECTS.match(prompt)
    said = _stated_fact(prompt[opener.end() :] if opener else None)
    if said and opener is not None and opener["actually"] and not _CONTRAST.search(said):
        return ""
    return said


def _after(opener: re.Pattern[str], prompt: str) -> str | None:
    """The prompt past the opener at its start, or None when it does not open so."""
    m = opener.match(prompt)
    return None if m is None else prompt[m.end() :]


def _stated_fact(text: str | None, states: re.Pattern[str] | None = None) -> str:
    """The first sentence of `text` (what follows an opener; None: there was none) when it
    states a lasting fact: not a question, a request or a feeling, nor where things stand now."""
    if text is None:
        return ""
    said = " ".join(next((s for s in _SENTENCE.split(text) if s.strip()), "").split())
    if word_count(said) < MIN_CORRECTION_WORDS or _QUESTION.search(said) or _ASKS_OR_FEELS.match(said):
        return ""
    if not (_STATES.search(said) or (states and states.search(said))) or _FOR_NOW.search(said):
        return ""
    return said[:MAX_RULE_CHARS]


def _answers(turn: Sequence[Message]) -> Found:
    """The user's answers to the assistant's questions (AskUserQuestion): an option chosen, or
    an answer in their own words, with the question it settles. Context for recall rather than
    a decision to brief: the approved plan or the commit that follows carries the choice that
    lasts. Questions the user asks back in an answer settle nothing and are left out."""
    found: Found = []
    for use, message in _uses(turn, "AskUserQuestion"):
        if use.result is None or use.failed:
            continue
        for question, answer, detail in use.result.answers:
            said = [" ".join(s.split()) for s in _SENTENCE.split(answer)]
            said = [s for s in said if s and not _QUESTION.search(s)]
            if not said:
                continue
            asked, answered = " ".join(question.split()), " ".join(said)[:MAX_RULE_CHARS]
            content = f'Asked "{asked}", the user answered: {answered}'
            if detail:
                content += f" ({' '.join(detail.split())[:MAX_DETAIL_CHARS]})"
            found.append(
                (_candidate(content, MemoryType.CONTEXT, ANSWER_TAG, 0.6 if detail else 0.5, 3), message)
            )
    return found


def _reading(answer: Sequence[Message]) -> str:
    """What the assistant's reply says a correction means, when the reply opens by agreeing
    ("You're absolutely right! I should only add the files I fixed, not reset the staging
    area."): the sentence after the agreement. A reply that only sets out to act ("You're
    right, let me test it end to end") restates nothing."""
    for reply in answer:
        if reply.role is Role.USER and starts_turn(reply):
            return ""  # the user spoke again first: the reply answers that
        if reply.role is Role.ASSISTANT and reply.texts:
            break
    else:
        return ""
    sentences = parse_sentences(reply.texts[0].strip().split("\n\n", 1)[0])
    if not sentences:
        return ""
    rest = without_acknowledgement(sentences[0])
    if rest == sentences[0].strip():
        return ""  # not an agreement
    said = rest or (sentences[1] if len(sentences) > 1 else "")
    if word_count(said) < MIN_RULE_WORDS or is_intent(said) or _QUESTION.search(said):
        return ""
    return said[:MAX_READING_CHARS]


def commit_body(command: str) -> str:
    """The commit message's lines after the subject (heredoc or several -m), or ""."""
    heredoc = _HEREDOC.search(command)
    if heredoc:
        lines = heredoc.group(2).strip().splitlines()
    else:
        parts = [a or b for a, b in _MESSAGE.findall(command)]
        lines = "\n".join(p.replace("\\n", "\n") for p in parts).strip().splitlines()
    ends = next((i for i, line in enumerate(lines) if i and _ATTRIBUTION.match(line)), len(lines))
    body = " ".join(line.strip() for line in lines[1:ends] if line.strip())  # the trailers end it
    return body[:MAX_BODY_CHARS]


def _candidate(
    content: str, kind: MemoryType, tag: str, confidence: float, priority: int, *, state: bool = False
) -> Candidate:
    return turn_candidate(content, kind, confidence, priority, (tag, STATE_TAG) if state else (tag,))
