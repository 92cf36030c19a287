"""Layer 3, lexical: decision, gotcha, convention, architecture and preference sentences. Pure."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from cortex.core.extract.prose import parse_prose_blocks, parse_sentences
from cortex.core.extract.transcript import Message, Role
from cortex.core.model import Candidate, Layer, MemoryType, Scope

LEXICAL_MIN_SCORE = 0.55
MAX_LEXICAL_PER_CHUNK = 12
MAX_LEXICAL_CHARS = 500
GLOBAL_SCOPE_MIN_CONFIDENCE = 0.8
UNSURE_GLOBAL_CONFIDENCE = 0.4  # a preference with no sign of reaching beyond this project
MIN_WORDS = 5
MAX_WORDS = 60

_USER = frozenset({Role.USER})
_ANY = frozenset({Role.USER, Role.ASSISTANT})


@dataclass(frozen=True, slots=True)
class Marker:
    """A phrase that signals a memory of some type, with its weight and who may say it."""

    pattern: re.Pattern[str]
    type: MemoryType
    weight: float
    label: str
    roles: frozenset[Role] = _ANY


def _m(pattern: str, kind: MemoryType, weight: float, label: str, roles: frozenset[Role] = _ANY) -> Marker:
    return Marker(re.compile(pattern, re.IGNORECASE), kind, weight, label, roles)


_D, _G, _P = MemoryType.DECISION, MemoryType.GOTCHA, MemoryType.PATTERN
_A, _PREF = MemoryType.ARCHITECTURE, MemoryType.PREFERENCE
MARKERS: tuple[Marker, ...] = (
    _m(r"\b(?:we|i)(?:'ve| have)? decided\b|\bdecided to\b|\bthe decision (?:is|was)\b",
       _D, 0.7, "decision"),
    _m(r"\blet'?s go with\b|\b(?:we're|we are|i'm|i am) going with\b|\bwent with\b|^going with\b",
       _D, 0.65, "decision"),
    _m(r"\b(?:we'll|we will|we're going to|let's) (?:use|adopt|switch to|stick with)\b",
       _D, 0.6, "decision"),
    _m(r"\b(?:we|i)(?:'ve| have)? (?:chose|chosen|picked|selected)\b", _D, 0.6, "decision"),
    _m(r"\bsettled on\b|\bopted (?:for|to)\b|\bchose\b.{1,60}\b(?:over|rather than)\b|\bin favou?r of\b",
       _D, 0.65, "decision"),
    _m(r"\binstead of\b.{1,80}\bbecause\b|\bprefer(?:red)?\b.{1,60}\bover\b",
       _D, 0.55, "decision"),
    _m(r"\bruled out\b|\bdecided against\b|\bwe (?:won't|will not|shouldn't|should not) use\b",
       _D, 0.65, "rejected"),
    _m(r"\b(?:rejected|abandoned)\b.{1,80}\b(?:because|since|due to)\b",
       _D, 0.6, "rejected"),
    _m(r"\b(?:don't|do not|never) use\b.{1,80}\b(?:because|since|as it|it)\b",
       _D, 0.55, "rejected"),
    _m(r"\bgotcha\b|\bfootgun\b|\bpitfall\b|\bwatch out\b|\bbeware\b",
       _G, 0.65, "gotcha"),
    _m(r"\bturn(?:s|ed) out\b|\bthe root cause\b|\broot cause (?:is|was)\b",
       _G, 0.65, "gotcha"),
    _m(r"\b(?:that's|that is|this is) the (?:bug|problem|issue)\b",
       _G, 0.6, "gotcha"),
    _m(r"\bthe (?:bug|issue|problem) (?:is|was) (?:that|caused)\b",
       _G, 0.5, "gotcha"),
    _m(r"\b(?:fails|breaks|crashes|hangs) (?:when|if|unless|on)\b|\bsilently\b"
       r"|\botherwise\b.{1,80}\b(?:fails?|failed|breaks?|crash(?:es)?|errors? out)\b",
       _G, 0.55, "gotcha"),
    _m(r"\bcaveat\b|\b(?:does|do|will)(?: not|n't) work (?:with|when|if|on|under)\b",
       _G, 0.55, "gotcha"),
    _m(r"\brace condition\b|\bsurprising(?:ly)?\b|\bunexpectedly\b|\bcounter-?intuitive",
       _G, 0.45, "gotcha"),
    _m(r"\bnote that\b|\bbe careful\b|\bkeep in mind\b|\bmake sure to\b",
       _G, 0.35, "gotcha"),
    _m(r"\bby convention\b|\bthe convention\b|\bconventions?\b|\bhouse style\b",
       _P, 0.6, "convention"),
    _m(r"\b(?:always|never) (?:use|run|call|put|commit|import|write|add|edit|prefix)\b",
       _P, 0.55, "convention"),
    _m(r"\b(?:must|should) (?:always|never)\b|\bthe (?:rule|pattern) is\b",
       _P, 0.55, "convention"),
    _m(r"\bwe use\b.{1,60}\b(?:for|to|as|instead)\b",
       _P, 0.5, "convention"),
    # Not the bare word: praise ("clean architecture!") and checklists ("- [ ] architecture
    # review") use it too. A statement says what the architecture is or does.
    _m(r"\b(?:the|our|its|this|whose) architecture (?:is|was|uses|has|consists|relies|follows|"
       r"separates|keeps|splits)\b|\barchitected (?:as|around)\b|\bdata flows?\b"
       r"|\bflows? (?:from|through|into)\b",
       _A, 0.55, "architecture"),
    _m(r"\bis responsible for\b|\bare responsible for\b|\bsits between\b|\bdelegates to\b",
       _A, 0.6, "architecture"),
    _m(r"\btalks to\b|\bcommunicates with\b|\bentry ?point\b|\bis built on\b",
       _A, 0.5, "architecture"),
    _m(r"\blayer\b|\bthe pipeline\b|\bdepends on\b",
       _A, 0.3, "architecture"),
    # A taste, not a request about one thing: "I want the X like the Y one" asks for a feature,
    # "I like it" is chit-chat; "I like terse commit messages" is a preference.
    _m(r"\bi (?:really |always |usually |generally |strongly )?(?:prefer|hate|dislike)\b"
       r"(?!\s+(?:the|this|these|those|it|them)\b)"
       r"|\bi (?:really |always |usually |generally )?(?:like|want)\b(?!\s+(?:the|a|an|this|that|"
       r"these|those|it|its|you|to|my|our|your|some|them|one|more)\b)|\bi'd (?:rather|prefer)\b",
       _PREF, 0.65, "preference", _USER),
    _m(r"\bplease (?:always|never|don't|do not|stop|avoid)\b|\bdon't ever\b|\bnever ever\b",
       _PREF, 0.7, "preference", _USER),
    _m(r"\bfrom now on\b|\bin (?:the )?future\b|\bgoing forward\b|\bstop doing\b",
       _PREF, 0.6, "preference", _USER),
    _m(r"^(?:always|never|don't|do not)\b",
       _PREF, 0.5, "preference", _USER),
)  # fmt: skip

_HEDGE = re.compile(
    r"\b(?:maybe|might|perhaps|probably|possibly|i think|i guess|not sure|could be|seems?|"
    r"may be|unclear|i wonder|presumably)\b",
    re.IGNORECASE,
)
_NARRATION = re.compile(
    r"^(?:now,? )?(?:let me|let's (?!go with|use|adopt|stick)|i'll|i will|i'm going to|"
    r"i need to|first,|next,|then,|now |ok(?:ay)?,? |great|perfect|excellent|good|done|"
    r"all (?:done|green|clean)|(?:i've |i have )?(?:added|updated|created|wrote|moved|renamed)\b)",
    re.IGNORECASE,
)
# An option weighed, not a fact of the project: "Cons: breaks when we run more than one server"
# is said of a choice the user may not make.
_WEIGHING = re.compile(r"^\W*(?:pros?|cons?|pros and cons|pros/cons)\W*:", re.IGNORECASE)
# A pick that names only an option's label ("Let's go with option B.", "going with the second
# one"): what it chose was said in an earlier message, and the sentence alone says nothing.
_PICK_ONLY = re.compile(
    r"^\W*(?:(?:ok(?:ay)?|yes|yeah|great|sure|alright)\W+)*(?:(?:let'?s|we'?ll|i'?ll|we|i)\s+)?"
    r"(?:go|going|went)\s+with\s+(?:(?:option|approach|plan|choice|alternative|number|variant)\s+)?"
    r"(?:#?\d{1,2}|[a-e]|one|two|three|the (?:first|second|third|last|former|latter)(?: one| option)?)"
    r"(?:\s+(?:then|please|for now))?\W*$",
    re.IGNORECASE,
)
_CAUSAL = re.compile(r"\b(?:because|since|so that|due to|which means|otherwise|as a result)\b", re.I)
_IDENTIFIER = re.compile(r"`[^`]+`|\b[a-z]+_[a-z0-9_]+\b|\b[a-z]+[A-Z]\w*\b|\b\w+\(\)|\b\w+\.\w+\(")
_PATHISH = re.compile(r"\b[\w-]+/[\w./-]+|\b[\w-]+\.(?:py|ts|js|ex|exs|go|rs|rb|md|toml|json|ya?ml)\b")
_NUMBER = re.compile(r"\b\d+(?:\.\d+)?\s*(?:ms|s|kb|mb|gb|%|x)?\b", re.IGNORECASE)
# The user speaking about themselves beyond this project.
_ACROSS_PROJECTS = re.compile(
    r"\b(?:in|across|for) (?:all|every|each|any) (?:of )?(?:my |our )?(?:projects?|repos?|repositories|"
    r"codebases?)\b|\b(?:in|for) (?:every|any|each) (?:project|repo|codebase)\b|\bwhatever the project\b"
    r"|\bglobally\b|\bi (?:always|never|usually|generally|normally|tend to)\b"
    r"|\bas a (?:general )?rule\b|\bin general\b|\bmy (?:default|usual|general) (?:style|preference|rule)",
    re.IGNORECASE,
)
_LOCAL = re.compile(
    r"\b(?:in|for|of|on) (?:this|our) (?:repo|repository|project|codebase|app|code|file|branch|page|"
    r"screen|component|module|service)\b|\bhere\b",
    re.IGNORECASE,
)
# A request about something in the work at hand, not a taste: "I want the Matin icon like the
# Journee one", "can you make the header blue".
_REQUEST = re.compile(
    r"\bi (?:want|need|would like|'d like) (?:the|a|an|this|that|these|those|it|you|to)\b"
    r"|\b(?:can|could|would|will) you\b|\blike the \w+ one\b|^(?:please )?(?:make|add|change|fix|"
    r"move|rename|remove|put|use) (?:the|a|an|this|that|it)\b|\?\s*$",
    re.IGNORECASE,
)
_FOLLOW_UP = re.compile(r"^(?:this is because|that's because|because|otherwise|so |which means)", re.I)
# "That's the bug - ..." means little without the sentence before it.
_ANAPHOR = re.compile(r"^(?:that|this|it)(?:'s| is| was)\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Scored:
    """A sentence's best memory type, its score and the marker labels that fired."""

    type: MemoryType
    score: float
    labels: tuple[str, ...]


def score_sentence(sentence: str, role: Role) -> Scored | None:
    """Marker weight + specificity - hedges - narration - length penalties, or None if unmarked."""
    hits = [m for m in MARKERS if role in m.roles and m.pattern.search(sentence)]
    if not hits or _PICK_ONLY.match(sentence) or _WEIGHING.match(sentence):
        return None
    best = max(hits, key=lambda m: m.weight)
    labels = tuple(dict.fromkeys(m.label for m in hits))
    score = best.weight + (0.1 if len(labels) > 1 else 0.0)
    score += 0.1 if _IDENTIFIER.search(sentence) else 0.0
    score += 0.1 if _PATHISH.search(sentence) else 0.0
    score += 0.05 if _NUMBER.search(sentence) else 0.0
    score += 0.15 if _CAUSAL.search(sentence) else 0.0
    score -= 0.25 * min(2, len(_HEDGE.findall(sentence)))
    if sentence.rstrip().endswith("?"):
        score -= 0.5
    if sentence.rstrip().endswith(":"):
        score -= 0.3
    if _NARRATION.match(sentence) and best.type is not MemoryType.DECISION:
        score -= 0.3
    n_words = len(sentence.split())
    if n_words < MIN_WORDS:
        score -= 0.4
    elif n_words > MAX_WORDS:
        score -= 0.2
    return Scored(best.type, round(score, 3), labels)


def extract_lexical(
    messages: Sequence[Message], *, project_words: frozenset[str] = frozenset()
) -> list[tuple[Candidate, Message]]:
    """Scored marker sentences from user and assistant prose, best first, capped per chunk."""
    found: list[tuple[float, int, Candidate, Message]] = []
    for message in messages:
        for text in message.texts:
            for before, sentence, after in _sentences(text):
                scored = score_sentence(sentence, message.role)
                if scored is None or scored.score < LEXICAL_MIN_SCORE:
                    continue
                content = " ".join(p for p in (before, sentence, after) if p)
                candidate = _candidate(content[:MAX_LEXICAL_CHARS], scored, project_words)
                found.append((scored.score, len(found), candidate, message))
    found.sort(key=lambda item: (-item[0], item[1]))
    return [(c, m) for _, _, c, m in found[:MAX_LEXICAL_PER_CHUNK]]


def score_global_confidence(text: str, project_words: Iterable[str]) -> float:
    """How sure we are that a statement holds outside this project. Conservative: only a
    statement about the user across projects ("in all my projects", "I always ...") is global;
    a request about this project's things, a local cue ("in this repo") or a name, path or
    code in it keeps it here."""
    lowered = text.casefold()
    if _IDENTIFIER.search(text) or _PATHISH.search(text) or _LOCAL.search(text) or _REQUEST.search(text):
        return 0.1
    # The project's name as a word: a project in `proj/` says nothing of "in all my projects".
    if any(w and _names(lowered, w.casefold()) for w in project_words):
        return 0.1
    return 0.85 if _ACROSS_PROJECTS.search(text) else UNSURE_GLOBAL_CONFIDENCE


def project_words(project_root: str | None, branch: str | None) -> frozenset[str]:
    """The words that name this project (its folder, a feature branch): a note that names them
    holds here, not in every project."""
    words = set()
    if project_root:
        name = project_root.rstrip("/").rsplit("/", 1)[-1]
        if len(name) >= 3:
            words.add(name)
    if branch and branch not in ("main", "master", "HEAD", "develop", "trunk"):
        words.add(branch)
    return frozenset(words)


def _names(text: str, word: str) -> bool:
    """Whether `text` holds `word` whole: no letter or digit touching it on either side."""
    return re.search(rf"(?<![^\W_]){re.escape(word)}(?![^\W_])", text) is not None


def _sentences(text: str) -> list[tuple[str, str, str]]:
    """(context before, sentence, context after): the neighbour is kept only when the
    sentence leans on it ("That's the bug ...", "... . Because ...")."""
    out = []
    for block in parse_prose_blocks(text):
        sentences = parse_sentences(block)
        for i, sentence in enumerate(sentences):
            prev = sentences[i - 1] if i > 0 and _ANAPHOR.match(sentence) else ""
            nxt = sentences[i + 1] if i + 1 < len(sentences) else ""
            out.append((prev, sentence, nxt if _FOLLOW_UP.match(nxt) else ""))
    return out


def _candidate(content: str, scored: Scored, project_words: frozenset[str]) -> Candidate:
    confidence = round(min(0.8, 0.3 + 0.45 * scored.score), 2)
    priority = {_D: 6, _G: 6, _A: 6, _PREF: 6, _P: 5}.get(scored.type, 4)
    global_confidence = 0.0
    scope = Scope.PROJECT
    if scored.type is MemoryType.PREFERENCE:
        global_confidence = score_global_confidence(content, project_words)
        if global_confidence >= GLOBAL_SCOPE_MIN_CONFIDENCE:
            scope = Scope.GLOBAL
    tags = ("rejected",) if "rejected" in scored.labels else ()
    return Candidate(
        content=content,
        type=scored.type,
        layer=Layer.LEXICAL,
        confidence=confidence,
        priority=priority,
        scope=scope,
        global_confidence=global_confidence,
        tags=tags,
    )
