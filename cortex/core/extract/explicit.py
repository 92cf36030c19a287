"""Layer 1, explicit: `[MEMORY: type] text` tags and `/remember text` commands. Pure."""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace

from cortex.core.extract.markers import GLOBAL_SCOPE_MIN_CONFIDENCE, score_global_confidence, score_sentence
from cortex.core.extract.prose import code_spans, parse_sentences, quoted_spans
from cortex.core.extract.transcript import Message, Role
from cortex.core.model import Candidate, Layer, MemoryType, Scope
from cortex.core.text import normalize_text

MAX_EXPLICIT_CHARS = 1500
MAX_EXPLICIT_PER_CHUNK = 30
EXPLICIT_CONFIDENCE = 0.9
EXPLICIT_PRIORITY = 7
REMEMBER_CONFIDENCE = 0.95
REMEMBER_PRIORITY = 8
MIN_ASKED_WORDS = 3  # "remember that too" names nothing to keep
EXPLICIT_LAYERS = frozenset({Layer.EXPLICIT, Layer.USER})

TYPE_ALIASES: dict[str, MemoryType] = {
    **{t.value: t for t in MemoryType},
    "decisions": MemoryType.DECISION,
    "arch": MemoryType.ARCHITECTURE,
    "convention": MemoryType.PATTERN,
    "conventions": MemoryType.PATTERN,
    "style": MemoryType.PATTERN,
    "rule": MemoryType.PATTERN,
    "bug": MemoryType.GOTCHA,
    "pitfall": MemoryType.GOTCHA,
    "caveat": MemoryType.GOTCHA,
    "warning": MemoryType.GOTCHA,
    "lesson": MemoryType.GOTCHA,
    "todo": MemoryType.PROGRESS,
    "status": MemoryType.PROGRESS,
    "done": MemoryType.PROGRESS,
    "wip": MemoryType.PROGRESS,
    "pref": MemoryType.PREFERENCE,
    "preferences": MemoryType.PREFERENCE,
    "note": MemoryType.CONTEXT,
    "info": MemoryType.CONTEXT,
    "fact": MemoryType.CONTEXT,
    "code-description": MemoryType.CODE_DESCRIPTION,
    "snippet": MemoryType.CODE,
}

_TAG = re.compile(r"\[\s*memory\s*(?::\s*([^\]\n]{0,40}?))?\s*\]", re.IGNORECASE)
_BLANK_LINE = re.compile(r"\n[ \t]*\n")
_REMEMBER_COMMAND = re.compile(r"^/(?:[\w-]+:)?remember$")
_REMEMBER_TEXT = re.compile(r"^/(?:[\w-]+:)?remember\s+(.+)$", re.DOTALL)
_OPTION = re.compile(r"^(--type|-t|--priority|-p|--tags)\s+(\S+)\s*|^(--global|--pin|-g)\b\s*")
# The user asking in words: "Remember that staging runs in eu-west-1", "please remember: ...",
# "keep in mind that ...", "don't forget that ...", "for future reference, ...".
_ASKED_TO_REMEMBER = re.compile(
    r"^\W*(?:(?:ok(?:ay)?|also|and|btw|please|pls)[,!]?\s+)*"
    r"(?:(?:remember|keep in mind|don'?t forget|do not forget)(?:\s+that\b|\s+this\s*:|\s*:)|"
    r"for (?:future )?reference[,:])"
    r"\s*(?P<what>\S.*)",
    re.IGNORECASE | re.DOTALL,
)
# ... or after it: "the staging deploy needs STRIPE_WEBHOOK_SECRET, remember that", or a
# sentence of its own after the one to keep ("Staging runs on port 5433. Remember that.").
_ASK_AFTER = (
    r"\(?(?:(?:and|so|please|pls)\s+)*(?:remember (?:that|this|it)|keep (?:that|this|it) in mind|"
    r"don'?t forget (?:that|this|it))\)?[\s.!)]*$"
)
_LEAD_WORDS = r"(?:\b(?:ok(?:ay)?|also|and|btw|great|thanks|please|pls)[,.!]?\s+)*"  # "also ", "ok, "
_ASKED_AFTER = re.compile(
    r"^\W*" + _LEAD_WORDS + r"(?P<what>\S.*?)(?:\s*[,;:\u2013\u2014]\s*|\s+-\s+)" + _ASK_AFTER,
    re.IGNORECASE | re.DOTALL,
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_OPENERS = re.compile(r"^\W*" + _LEAD_WORDS, re.IGNORECASE)
_LEAD_IN = re.compile(_LEAD_WORDS + r"$", re.IGNORECASE)
_ONLY_ASKS = re.compile(r"^\W*" + _ASK_AFTER, re.IGNORECASE)


def extract_explicit(
    messages: Sequence[Message],
    *,
    project_words: frozenset[str] = frozenset(),
    layers: Collection[Layer] = EXPLICIT_LAYERS,
) -> list[tuple[Candidate, Message]]:
    """`[MEMORY: type] text` tags in user and assistant prose, and `/remember text` commands."""
    found: list[tuple[Candidate, Message]] = []
    for message in messages:
        if Layer.USER in layers and message.role is Role.USER:
            remembered = _remembered(message, project_words)
            if remembered is not None:
                found.append((remembered, message))
        if Layer.EXPLICIT in layers:
            for text in message.texts:
                for kind, body in parse_memory_tags(text):
                    found.append((_explicit(body, kind, project_words), message))
    return found[:MAX_EXPLICIT_PER_CHUNK]


def parse_memory_tags(text: str) -> list[tuple[MemoryType, str]]:
    """(type, text) for each `[MEMORY: type]` tag outside code and quotes; text ends at a blank
    line or the next tag. Tags inside code fences or inline code are examples of the syntax."""
    out = []
    for kind, start, end in _tag_spans(text):
        body = normalize_text(_TAG.sub("", text[start:end], count=1))
        if body:
            out.append((kind, body[:MAX_EXPLICIT_CHARS]))
    return out


def _tag_spans(text: str) -> list[tuple[MemoryType, int, int]]:
    """(type, start of tag, end of its text) for each tag that is not an example."""
    skip = code_spans(text) + quoted_spans(text)
    tags = [m for m in _TAG.finditer(text) if not any(a <= m.start() < b for a, b in skip)]
    spans = []
    for i, tag in enumerate(tags):
        end = tags[i + 1].start() if i + 1 < len(tags) else len(text)
        blank = _BLANK_LINE.search(text, tag.end(), end)
        spans.append((parse_memory_type(tag.group(1)), tag.start(), blank.start() if blank else end))
    return spans


def parse_memory_type(name: str | None) -> MemoryType:
    """A tag's type word (aliases allowed); anything unknown is `context`."""
    word = (name or "").strip().casefold().replace(" ", "_")
    return TYPE_ALIASES.get(word) or TYPE_ALIASES.get(word.replace("_", "-"), MemoryType.CONTEXT)


def _explicit(body: str, kind: MemoryType, project_words: frozenset[str]) -> Candidate:
    global_confidence = 0.0
    scope = Scope.PROJECT
    if kind is MemoryType.PREFERENCE:
        global_confidence = score_global_confidence(body, project_words)
        scope = Scope.GLOBAL if global_confidence >= GLOBAL_SCOPE_MIN_CONFIDENCE else Scope.PROJECT
    return Candidate(
        content=body,
        type=kind,
        layer=Layer.EXPLICIT,
        confidence=EXPLICIT_CONFIDENCE,
        priority=EXPLICIT_PRIORITY,
        scope=scope,
        global_confidence=global_confidence,
    )


@dataclass(frozen=True, slots=True)
class _RememberArgs:
    text: str
    kind: MemoryType = MemoryType.CONTEXT
    priority: int = REMEMBER_PRIORITY
    tags: tuple[str, ...] = ()
    pinned: bool = False
    is_global: bool = False


def _parse_remember_args(text: str) -> _RememberArgs:
    """`[--type T] [--priority N] [--tags a,b] [--pin] [--global] text`, as the CLI takes it."""
    args = _RememberArgs(text)
    while True:
        option = _OPTION.match(args.text)
        if option is None:
            break
        flag, value = option.group(1) or option.group(3), option.group(2) or ""
        rest = args.text[option.end() :]
        if flag in ("--type", "-t"):
            args = replace(args, kind=parse_memory_type(value))
        elif flag in ("--priority", "-p") and value.isdigit():
            args = replace(args, priority=max(1, min(10, int(value))))
        elif flag == "--tags":
            args = replace(args, tags=tuple(t for t in value.split(",") if t))
        elif flag == "--pin":
            args = replace(args, pinned=True)
        elif flag in ("--global", "-g"):
            args = replace(args, is_global=True)
        args = replace(args, text=rest)
    tagged = parse_memory_tags(args.text)
    if tagged:
        args = replace(args, kind=tagged[0][0], text=tagged[0][1])
    return replace(args, text=normalize_text(args.text.strip().strip("\"'"))[:MAX_EXPLICIT_CHARS])


def _remembered(message: Message, project_words: frozenset[str]) -> Candidate | None:
    if message.command is not None and _REMEMBER_COMMAND.match(message.command.name):
        raw = message.command.args
    else:
        typed = _REMEMBER_TEXT.match(message.texts[0].strip()) if message.texts else None
        raw = typed.group(1) if typed else ""
    args = _parse_remember_args(raw) if raw else _asked_in_words(message)
    if not args.text:
        return None
    global_confidence = 0.0
    if args.is_global:
        global_confidence = 1.0
    elif args.kind is MemoryType.PREFERENCE:
        global_confidence = score_global_confidence(args.text, project_words)
    return Candidate(
        content=args.text,
        type=args.kind,
        layer=Layer.USER,
        confidence=REMEMBER_CONFIDENCE,
        priority=args.priority,
        scope=Scope.GLOBAL if args.is_global else Scope.PROJECT,
        global_confidence=global_confidence,
        tags=args.tags,
        pinned=args.pinned,
    )


def _asked_in_words(message: Message) -> _RememberArgs:
    """What the user's message (`_remembered` is given no other) opens by asking to keep
    ("Remember that staging runs in eu-west-1."): its first sentence, typed as `cortex remember`
    types text. A question ("don't forget that bug from yesterday?") asks nothing to be kept."""
    asked = _asked_span(message.texts[0]) if message.texts else None
    if asked is None:
        return _RememberArgs(text="")
    what = normalize_text(asked[0]).rstrip(" ,;")
    scored = score_sentence(what, Role.USER)
    return _RememberArgs(text=what[:MAX_EXPLICIT_CHARS], kind=scored.type if scored else MemoryType.CONTEXT)


def _asked_span(text: str) -> tuple[str, int, int] | None:
    """(the sentence asked to be kept, and where the ask starts and ends in `text`), or None:
    the ask opens the prompt, or follows the sentence it asks to keep."""
    asked = _ASKED_TO_REMEMBER.match(text)
    if asked is None:
        return _asked_after(text)
    start = asked.start("what")
    block = _BLANK_LINE.split(text[start:], maxsplit=1)[0]
    sentences = parse_sentences(block)
    first = sentences[0].strip() if sentences else ""
    if first.endswith("?") or len(first.split()) < MIN_ASKED_WORDS:
        return None
    at = block.replace("\n", " ").find(first)  # the same length: offsets hold in `block`
    return first, 0, start + (at + len(first) if at >= 0 else len(block))


def _asked_after(text: str) -> tuple[str, int, int] | None:
    """The sentence a later "remember that" asks to keep: the one it closes, or the one before
    it when it stands alone. The span runs from that sentence through the ask."""
    flat = text.replace("\n", " ")  # the same length: offsets hold in `text`
    sentences = [s.strip() for block in _BLANK_LINE.split(text) for s in parse_sentences(block)]
    for n, sentence in enumerate(sentences):
        closing = _ASKED_AFTER.match(sentence)
        alone = _ONLY_ASKS.match(sentence) if closing is None and n > 0 else None
        if closing is None and alone is None:
            continue
        what = closing.group("what") if closing else sentences[n - 1]
        # A sentence the splitter missed ("... from now on. also the bucket is X, remember
        # that"): the ask closes the last one only.
        what = _OPENERS.sub("", _SENTENCE_END.split(what)[-1])
        if what.rstrip().endswith("?") or len(what.split()) < MIN_ASKED_WORDS:
            return None
        start, end = flat.find(what), flat.find(sentence)
        if start < 0 or end < 0:
            return None
        lead = _LEAD_IN.search(flat[:start])  # "also " before it goes with it (it always matches)
        start = lead.start() if lead else start
        return what, start, end + len(sentence)
    return None


def strip_memory_tags(message: Message) -> Message:
    """Prose with explicit tag bodies (and the sentence a user asked in words to keep) removed,
    so the other layers do not find again what layer 1 took."""
    texts = []
    for n, text in enumerate(message.texts):
        asked = _asked_span(text) if n == 0 and message.role is Role.USER else None
        text = text[: asked[1]] + text[asked[2] :] if asked else text
        for _, start, end in reversed(_tag_spans(text)):
            text = text[:start] + "\n\n" + text[end:]
        texts.append(text)
    return replace(message, texts=tuple(texts))
