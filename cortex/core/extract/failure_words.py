"""What the assistant says of a failure between it and the fix: why it failed (the cause, or
what had to change) and what it set out to change. Pure.

"The issue is that the hash format needs to be SRI format" names the cause; "I need to fix the
test to not use impure paths" only what had to change; "Let's escape the URL properly:" what the
assistant changes ("escape the URL properly"). Looking ("Let me check the logs") changes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from cortex.core.extract.commands import clip
from cortex.core.extract.prose import parse_prose_blocks, parse_sentences
from cortex.core.extract.speech import is_guess, is_question, is_talk, without_acknowledgement
from cortex.core.extract.transcript import Message, Role

MIN_EXPLANATION_WORDS = 6
MIN_STATE_WORDS = 4  # "The database file doesn't exist." names what is wrong in five words
MIN_CHANGE_WORDS = 3
MIN_CAUSE_WORDS = 3  # "Port is still in use" before ", let's ..." is a cause on its own
FIX_SAID = "; fix: "

# A clause, then what follows from it: "X are computed in UTC, so near midnight they land on the
# previous day" (not "so I'll ...", "so far", "so that").
_CONSEQUENCE = (
    r",\s+so\s+(?!(?:i|we|let|let's|let me|now|far|that|then)\b)|\bwhich (?:means|is why)\b|"
    r"\bthat's why\b|\bhence\b"
)
_EXPLAINS = re.compile(
    r"\b(?:because|due to|caused by|the (?:issue|problem|bug|fix|cause)|root cause|turns out|"
    r"needs? to|must|requires?|missing|wrong|instead|doesn't exist|does not exist|expects?|"
    r"was using|(?:is|are) (?:already |still )?in use|"
    r"(?:is|are|was|were)(?:n't| not) (?:installed|supported))\b|" + _CONSEQUENCE,
    re.IGNORECASE,
)
# A short why names a state of the machine or the project ("Port 3000 is in use.", "jq is not
# installed."); "The issue is complex." and "This requires more investigation." name nothing.
_VAGUE_SUBJECT = re.compile(r"^(?:this|that|it|something|what|which)\b", re.IGNORECASE)
_STATE = re.compile(
    r"\b(?:doesn't exist|does not exist|(?:is|are) (?:already |still )?in use|(?:is|are)(?:n't| not) "
    r"(?:installed|supported|available|running|set)|not found|permission denied|missing|requires? \w+)\b",
    re.IGNORECASE,
)
# A why that names what went wrong is the cause; one that only says what had to change ("I need
# to fix the test to not use impure paths", "the config needs an empty list") is the fix.
_FIX = re.compile(r"\b(?:needs? to|must|requires?|the fix|should|ha(?:ve|s) to)\b", re.IGNORECASE)
_CAUSE = re.compile(
    r"\b(?:because|due to|caused by|the (?:issue|problem|bug|cause|error|failure)\b|root cause|"
    r"turns out|missing|wrong|doesn't exist|does not exist|expects?|was using|in use|"
    r"(?:is|are|was|were)(?:n't| not) (?:installed|supported|available))\b|" + _CONSEQUENCE,
    re.IGNORECASE,
)
# The narration around a why: "I need to fix the test ..." says "fix the test ...", and "The
# issue is that the hash needs SRI format" says "the hash needs SRI format".
_NEED_TO = re.compile(r"^(?:(?:now|so|first|then),?\s+)?(?:i|we)\s+(?:need|have)\s+to\s+", re.IGNORECASE)
_ISSUE_IS = re.compile(
    r"^the (?:issue|problem|error|failure|bug)(?: here)? (?:is|was) that\s+", re.IGNORECASE
)
# "Let's escape the URL properly:" -> what the assistant changes; looking is not changing.
_CHANGE = re.compile(
    r"^(?:(?:now|ok(?:ay)?|so|first),?\s+)?(?:let me|let's|i'll|i will|we need to|we should)\s+(?P<what>.+)$",
    re.IGNORECASE,
)
_LOOKING = re.compile(
    r"^(?:check|look|see|verify|investigate|examine|find out|try|test|run|wait|read|search|debug|"
    r"confirm|inspect|view|get|understand|analy[sz]e|start|restart|re-?run|explore|fix|update|"
    r"correct|resolve|address|handle|make|do|implement|clean|continue|proceed|finish|move on|go|"
    r"know|(?:create|write|add) a (?:\w+ )?test)\b",  # "Let me know ..." hands the turn to the user
    re.IGNORECASE,
)
# A why, then what the assistant does about it: "Port is still in use, let's find and kill it".
_THEN_ACTS = re.compile(
    r"^(?P<why>.+?)(?:[,;:]|\s+[-\u2014])\s+(?:so\s+|now\s+)?(?:let me|let's|i'll|i will|we'll|we need to)\s+"
    r"(?P<what>.+)$",
    re.IGNORECASE,
)
_THEN_CHANGE = re.compile(
    r"^(?:(?:check|look|see|find|investigate|identify|locate)\b[^,;]*?\s+and\s+(?:then\s+)?"
    r"|(?:fix|correct|resolve|address|update)\b[^,;]*?\s+by\s+)(?=\w)",
    re.IGNORECASE,
)


def _sentences(messages: Sequence[Message]) -> list[str]:
    """The assistant's sentences in `messages`, in order."""
    return [
        sentence
        for message in messages
        if message.role is Role.ASSISTANT
        for text in message.texts
        for block in parse_prose_blocks(text)
        for sentence in parse_sentences(block)
    ]


def explanation(messages: Sequence[Message]) -> tuple[str, Message | None]:
    """The first assistant sentence between failure and success that says why (not what the
    assistant is about to do, a guess, nor a question to the user), labelled `cause:` or `fix:`,
    and the message that says it."""
    asked = False
    for message in messages:
        for sentence in _sentences((message,)):
            # "Let me isolate the problem", "the issue is likely X" and "Which model is it? (Some
            # require SSH to be enabled first)" say no why: an aside goes with the question before it.
            aside = asked and sentence.startswith("(")
            asked = is_question(sentence) or aside
            if is_talk(sentence) or is_guess(sentence) or asked:
                continue
            said = without_acknowledgement(sentence).rstrip(":").strip()
            if len(sentence.split()) >= MIN_EXPLANATION_WORDS:
                if _EXPLAINS.search(sentence):
                    return _labelled(said), message
            elif _names_state(said):
                # A state named in a few words is the cause ("The mutation requires authentication.").
                return f"cause: {said.rstrip('.')}", message
    return "", None


def _names_state(said: str) -> bool:
    """A few words that name a state of something named ("Port 3000 is in use")."""
    enough = len(said.split()) >= MIN_STATE_WORDS
    return enough and _STATE.search(said) is not None and _VAGUE_SUBJECT.match(said) is None


def _labelled(sentence: str) -> str:
    """`cause:` or `fix:` and the why; a why that goes on to what the assistant does about it
    ("Port is still in use, let's find and kill the process") is the cause and that fix."""
    then = _THEN_ACTS.match(sentence)
    if then is None or not _EXPLAINS.search(then.group("why")):
        return _labelled_as_is(sentence)
    why, change = then.group("why").strip(), _change(then.group("what"))
    if len(why.split()) < MIN_CAUSE_WORDS:  # too short to stand as a cause
        return f"fix: {change}" if change else _labelled_as_is(sentence)
    return f"{_labelled(why)}{FIX_SAID}{change}" if change else _labelled(why)


def _labelled_as_is(sentence: str) -> str:
    cause = _CAUSE.search(sentence) is not None
    # "Let's use the offline mode instead by ..." says what the assistant changes, not why it failed.
    change = "" if cause else _said_change(sentence)
    if change:
        return f"fix: {change}"
    fix = _FIX.search(sentence) is not None and not cause
    said = (_NEED_TO if fix else _ISSUE_IS).sub("", sentence, count=1)
    said = said if len(said.split()) >= MIN_CHANGE_WORDS else sentence
    return f"{'fix' if fix else 'cause'}: {clip(said, 300)}"


def states_fix(why: str) -> bool:
    """Whether a labelled why already says the fix ("fix: ..." or "cause: ...; fix: ...")."""
    return why.startswith("fix:") or FIX_SAID in why


def only_cause(why: str) -> bool:
    """Whether a labelled why names only what went wrong ("cause: The issue is with SQLx
    compile-time checking"), saying nothing of what had to change ("cause: I need to add the
    flake.nix to git first, because ..." says both)."""
    return why.startswith("cause:") and not states_fix(why) and _FIX.search(why) is None


def change_said(messages: Sequence[Message]) -> str:
    """What the assistant set out to change after the failure ("Let's escape the URL
    properly:" -> "escape the URL properly"); "" when it only went looking."""
    for sentence in _sentences(messages):
        what = "" if is_question(sentence) else _said_change(sentence)
        if what:
            return what
    return ""


def _said_change(sentence: str) -> str:
    """What a sentence that opens as an action ("Let's escape the URL properly:") sets out to
    change, or ""."""
    m = _CHANGE.match(sentence.strip().rstrip(":.!").strip())
    return _change(m.group("what")) if m else ""


def _change(what: str) -> str:
    """What a "let's ..." sets out to change, or "" for looking or a guess."""
    what = re.sub(r"^(?:also|now|then|just)\s+", "", what.strip().rstrip(":.!").strip(), flags=re.IGNORECASE)
    # "find and kill the process", "fix the script by removing the unused imports": the
    # looking (or the bare "fix") is the way in; the change is what follows.
    what = _THEN_CHANGE.sub("", what)
    if len(what.split()) >= MIN_CHANGE_WORDS and not _LOOKING.match(what) and not is_guess(what):
        return clip(what, 200)
    return ""
