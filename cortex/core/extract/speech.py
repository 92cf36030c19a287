"""What an assistant says that is not a finding yet. Pure.

A closing report or an explanation mixes what was found with talk around it: what the
assistant is about to do ("Let me fix the script", "I'll update the CI workflow to skip the
submodule"), acknowledgements ("You're absolutely right!"), guesses ("the issue is likely in
the timer"), alternatives left to the user ("Either create a token ... Or make the repository
public ... Which approach would you prefer?") and hand-offs ("Tell me when you're done").
None of it is true of the project yet: an intention may be dropped, a guess refuted, an option
not taken. The extraction layers keep such talk out of findings, or store it as a state that
the next report replaces.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# What the assistant is about to do (the start of a sentence).
_INTENT = re.compile(
    r"^(?:(?:now|next|first|then|so|ok(?:ay)?|alright|great|perfect),?\s+)?"
    r"(?:let me|let'?s (?!go with|use|adopt|stick|keep|not)|i'll|i will|i'm going to|i am going to|"
    r"i'm now going to|time to)\b",
    re.IGNORECASE,
)
# An acknowledgement or cheer at the start of a sentence ("You're right - ", "Perfect! ").
_ACK = re.compile(
    r"^(?:you(?:'re| are) (?:absolutely |totally |completely |quite )?(?:right|correct)|"
    r"perfect|great|excellent|good|awesome|nice|got it|understood|ok(?:ay)?|exactly(?: right)?|"
    r"hmm+|ah+|aha|oh|interesting|alright|right|makes sense|"
    r"good (?:catch|point|question)|i see(?: the (?:issue|problem))?|found (?:it|the (?:issue|problem)))"
    r"(?:[!.,:;]+|\s+[-\u2013\u2014]|$)\s*(?:[-\u2013\u2014]\s*)?",
    re.IGNORECASE,
)
# A guess about a cause, not a finding.
_GUESS = re.compile(
    r"\b(?:is|are|was|were) (?:most )?(?:likely|probably|possibly|perhaps)\b|\bcould be\b|"
    r"\bmight be\b|\bmay be (?:caused|due|because|related)\b|\bi (?:think|suspect|guess)\b|"
    r"\bpotential(?:ly)?\b|\bhypothes[ie]s\b",
    re.IGNORECASE,
)
# The user is handed the next step: nothing is settled until they report back.
_HAND_OFF = re.compile(
    r"\b(?:let me know (?:when|once)|tell me (?:when|once)|(?:once|after) you(?:'ve| have)? "
    r"(?:confirm|done|finish|set|add|create|run|push|deploy|merge|restart|reload|redeploy|install|try|test)|"
    r"when you(?:'re| are) done)",
    re.IGNORECASE,
)
# An offer or a question closing a report ("Would you like me to ...", "Which approach would
# you prefer?"): it and the options listed under it are not findings.
_OFFER = re.compile(
    r"\b(?:which (?:\w+ )?(?:would|do|should) you|would you (?:like|prefer)|do you want|should i\b|"
    r"shall i\b|(?:want|need) me to)",
    re.IGNORECASE,
)
# A line that offers one of several alternatives: "Either ...", "Or ...", "Option 2: ...", or a
# choice lettered the way menus are in any language ("(A) Coexistence: ...", "B) Drop it").
_OPTION = re.compile(
    r"^\s*(?:[-*+•]\s+|\d{1,2}[.)]\s+)?(?:(?i:either\b|or\b|option [a-z0-9]\b|alternatively\b)|"
    r"\((?i:[a-h])\)\s|[A-H]\)\s)",
)
MIN_OPTIONS = 2
LIST_ITEM = re.compile(r"^\s*(?:[-*+•]|\d{1,2}[.)])\s+")  # a bullet or a numbered item's mark
# A question mark that ends a sentence (not a URL's query: `/api?page=1`), and what may follow
# it on the line: an aside in brackets ("Do you have the password? (Often `root`)").
_ASKS = re.compile(r"\?[*_\"')]*(?:\s+\([^()]*\))?[*_ ]*$")
_ASKED = re.compile(r"\?[*_\"')]*(?=\s|$)")
_STATED = re.compile(r"[.!](?=\s)")  # a sentence that ends before the question does
_TAG_LINE = re.compile(r"^\[[^\]]*\]$")  # "[Image #1]", "[@certainty:...]": no words of its own


def is_intent(sentence: str) -> bool:
    """The assistant saying what it is about to do ("Let me ...", "I'll ...")."""
    return _INTENT.match(sentence.strip().lstrip("-*•> ").strip()) is not None


def without_acknowledgement(sentence: str) -> str:
    """The sentence without a leading "You're right - ", "Perfect! " or "Hmm, interesting - "."""
    return _ACK.sub("", _ACK.sub("", sentence.strip(), count=1), count=1)


def is_guess(sentence: str) -> bool:
    """A cause put as a possibility ("could be caused by", "is likely in")."""
    return _GUESS.search(sentence) is not None


def is_talk(sentence: str) -> bool:
    """Only an acknowledgement, or what the assistant is about to do: nothing to keep."""
    rest = without_acknowledgement(sentence)
    return not rest or is_intent(rest)


def is_question(sentence: str) -> bool:
    """The sentence asks something ("What router model do you have? (Some require SSH to be
    enabled first)"): it explains nothing, whatever words it uses."""
    return _ASKED.search(sentence) is not None


def ends_asking(lines: Sequence[str]) -> bool:
    """The lines end by asking ("What's actually broken in the workflows?"): a decision or a
    gotcha in them waits for the user's answer."""
    said = [line for line in lines if not _TAG_LINE.match(line.strip())]
    return bool(said) and said[-1].rstrip("*_ ").endswith("?")


def only_asks(lines: Sequence[str]) -> bool:
    """Under a heading or a lead-in, every line only asks the user something ("A few questions:
    - Do you know your router's IP address? - What router model do you have?"). A line that
    states something first ("The workflows still fail. What changed?") says more than a question."""
    said = [line.strip() for line in lines if line.strip() and not _TAG_LINE.match(line.strip())]
    if len(said) < 2 or said[0].rstrip("*_ ").endswith((".", "!")):
        return False
    for line in said[1:]:
        ask = _ASKS.search(line)
        if ask is None or _STATED.search(LIST_ITEM.sub("", line[: ask.start()], count=1)):
            return False
    return True


def option_lines(lines: Sequence[str]) -> int:
    """How many lines offer an alternative ("Option 2: ...", "Or make the repository public")."""
    return sum(1 for line in lines if _OPTION.match(line))


def leaves_it_open(lines: Sequence[str]) -> bool:
    """The text leaves the outcome to the user: it offers alternatives (two or more "Either /
    Or / Option" lines) or hands the next step to them ("Tell me when you're done")."""
    return option_lines(lines) >= MIN_OPTIONS or any(_HAND_OFF.search(line) for line in lines)


def promised_lines(lines: Sequence[str]) -> set[int]:
    """The lines after one that hands the next step to the user ("Tell me when you've added the
    disk"): what the assistant says it will do then ("Then I'll commit and push the changes") is
    the step after theirs, not narration. The section waits for the reply, which retires it."""
    start = next((i for i, line in enumerate(lines) if _HAND_OFF.search(line)), len(lines))
    return set(range(start + 1, len(lines)))


def without_offers(lines: Sequence[str]) -> list[str]:
    """The lines without an offer or question to the user and the list items right under it."""
    out: list[str] = []
    skipping = False
    for line in lines:
        if _OFFER.search(line):
            skipping = True
            continue
        if skipping and LIST_ITEM.match(line):
            continue
        skipping = False
        out.append(line)
    return out


# The user's prompt opening with a verdict on the previous answer: "wrong, ...", "no, ...",
# "read what I said", "that's not what I asked".
_REJECTS = re.compile(
    r"^(?:(?:actually|wait|hmm+|hold on),?\s+no\b|no,? wait\b|scratch that\b|"
    r"no\b[,.!:;-]|nope\b|wrong\b|(?:that's|that is|this is|it's|it is) (?:wrong|not (?:it|right|true|"
    r"correct|what i))|incorrect\b|not what i (?:said|asked|meant|want)|read what i (?:said|wrote)|"
    r"you(?:'re| are) wrong|that'?s not (?:it|the (?:issue|problem|cause))|i (?:said|told you)\b)",
    re.IGNORECASE,
)


# The user's prompt opening with news that they merged the pull request ("i merged it just
# now", "Merged!", "PR #12 is merged"); a question ("merged it?") is no news.
_MERGED = re.compile(
    r"^(?:(?:ok(?:ay)?|yes|yep|done|great|cool|thanks)\W+)*"
    r"(?:(?:i(?:'ve| have)?\s+)?(?:just\s+|now\s+)?merged\b(?!\s+[\w./-]+\s+into\b)|"  # not "main into"
    r"(?:the\s+)?(?:pr|pull request)\s*#?\d*\s+(?:is|was|has been|got)\s+merged\b|"
    r"it(?:'s|\s+is|\s+was|\s+has been|\s+got)\s+merged\b)",
    re.IGNORECASE,
)
_PR_NUMBER = re.compile(r"(?:\bpr\s*|\bpull request\s*|#)#?(\d+)\b", re.IGNORECASE)


def reported_merge(prompt: str) -> str | None:
    """When the prompt opens with news that the user merged the pull request: the number it
    names ("12"), or "" when it names none ("i merged it just now"); else None."""
    text = _opening(prompt)
    first = text.split("\n", 1)[0]
    if _MERGED.match(text) is None or is_question(first):
        return None
    named = _PR_NUMBER.search(first)
    return named.group(1) if named else ""


def rejects_answer(prompt: str) -> bool:
    """The user opens by saying the previous answer was wrong ("wrong, you must open the
    link", "read what I said", "no, that's not the cause")."""
    return _REJECTS.match(_opening(prompt)) is not None


def _opening(prompt: str) -> str:
    """The prompt from its first word: no quote marks, emphasis or code ticks before it."""
    return prompt.strip().lstrip("*_>` ").strip()


# A prompt that only picks one of the options the previous answer laid out ("B", "option 2
# please", "go with the second one"): what it chose is in that answer.
_ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5}
_LABEL = r"(?:[a-e]|[1-9]|first|second|third|fourth|fifth)"
_KIND = r"(?:option|approach|plan|choice|alternative|variant|solution|number)"
_PICKS = re.compile(
    r"^(?:(?:ok(?:ay)?|yes|yeah|yep|sure|great|alright|fine)\W+)*"
    r"(?:(?:let'?s|we'?ll|i'?ll|please)\s+)?(?:(?:go|going)\s+with|do|use|take|pick|choose|i choose|"
    r"i pick|i'?d (?:go with|pick|take))?\s*(?:the\s+)?(?:" + _KIND + r"\s*#?\s*)?"
    r"(?P<label>" + _LABEL + r")(?:\s+(?:one|" + _KIND + r"))?"
    r"(?:\W+(?:please|then|for now|sounds good|looks good|is (?:fine|good|better)|it is))*\W*$",
    re.IGNORECASE,
)
# The label an option's section opens with: "Option A: ...", "Approach 2 - ...", "B) ...", "1. ...".
_OPTION_HEAD = re.compile(
    r"^\W*(?:" + _KIND + r"\s*#?\s*(?P<named>[a-e]|[1-9])\b|(?P<bare>[a-e]|[1-9])[).:](?:\s|$))",
    re.IGNORECASE,
)


def picked_option(prompt: str) -> int | None:
    """The option the prompt picks and nothing else, as its place (1 for "A", "1", "the first
    one"); None for a prompt that says more than a pick."""
    text = _opening(prompt)
    m = _PICKS.match(text) if len(text) <= 60 and "\n" not in text else None
    return _place(m.group("label")) if m else None


def options_in(section: str) -> dict[int, str]:
    """The options a section lays out, by place: each line that opens with a label ("Option A:
    S3 with presigned URLs", "2. **Pin auth to 0.0.81** - ...") and the lines under it up to
    the next, without the label and without questions. Empty when one place comes twice (two
    lists, not one set of options)."""
    found: dict[int, list[str]] = {}
    place = None
    for line in section.splitlines():
        m = _OPTION_HEAD.match(line)
        if m is not None:
            place = _place(m.group("named") or m.group("bare"))
            if place in found:
                return {}
            found[place] = [line[m.end() :].lstrip(" *_:.)-\u2013\u2014").rstrip()]
        elif place is not None and line.strip() and not is_question(line):
            found[place].append(line.strip())
    return {p: "\n".join(lines).strip() for p, lines in found.items() if lines[0]}


def _place(label: str) -> int:
    label = label.lower()
    if label.isdigit():
        return int(label)
    return _ORDINALS.get(label) or ord(label) - ord("a") + 1
