"""What a commit's subject says it records: a fix, a change of course, a feature, the commit a
revert undoes, a documentation commit's scope. Pure."""

from __future__ import annotations

import re

# git's subject for a revert (`Revert "X"`), and for the revert of a revert (git 2.43 on:
# `Reapply "X"`, which undoes `Revert "X"`); a conventional `revert: X`.
_UNDOES = re.compile(
    r'^(?:(?P<verb>Revert|Reapply) "(?P<quoted>.+)"|revert(?:\([^)]*\))?!?:\s*(?P<rest>.+))$'
)
# A conventional commit subject (`fix(tui): ...`, `feat!: ...`): what kind of change it records.
_CONVENTIONAL = re.compile(r"^(?P<kind>[a-z]+)(?:\([^)]*\))?!?:\s*(?P<rest>.+)$", re.IGNORECASE)
_FIX_KINDS = frozenset({"fix", "hotfix", "bugfix"})
_CHANGE_KINDS = frozenset({"feat", "refactor", "perf", "build", "chore"})
_DOCS_KINDS = frozenset({"docs", "doc"})
_FEATURE_KINDS = frozenset({"feat", "feature"})
# A plain subject that adds to the code ("Add acquisitions UI", "Implement retry queue").
_ADDS = re.compile(r"^(?:add(?:s|ed)?|implement(?:s|ed)?|introduce[sd]?)\b", re.IGNORECASE)
# A subject that changes course: the decision a commit records.
_COURSE = re.compile(
    r"\b(?:switch(?:es|ed)?|migrat(?:e|es|ed)|replac(?:e|es|ed)|mov(?:e|es|ed) (?:from|to)|adopt(?:s|ed)?|"
    r"drop(?:s|ped)?|instead of|in favou?r of|go(?:es)? back to|revert(?:s|ed)? to)\b",
    re.IGNORECASE,
)


def commit_kind(subject: str) -> str:
    """What a commit subject records: `fix` (a problem and its fix), `decision` (a change of
    course: "feat: switch launcher from Hermes to jcode", a revert), `feature` (what the code
    now has: "feat: add thumbnail generation", "Add acquisitions UI") or `progress` (anything
    else)."""
    if undone_subject(subject) is not None:
        return "decision"
    m = _CONVENTIONAL.match(subject.strip())
    kind = m.group("kind").lower() if m else ""
    if kind in _FIX_KINDS:
        return "fix"
    rest = m.group("rest") if m else subject
    if (kind in _CHANGE_KINDS or not m) and _COURSE.search(rest):
        return "decision"
    if kind in _FEATURE_KINDS or (not m and _ADDS.match(subject.strip())):
        return "feature"
    return "progress"


def undone_subject(subject: str) -> str | None:
    """The subject of the commit a revert undoes (`Revert "Add retries"` -> `Add retries`;
    `Reapply "Add retries"` -> `Revert "Add retries"`), else None."""
    m = _UNDOES.match(subject.strip())
    if m is None:
        return None
    if m.group("verb") == "Reapply":
        return f'Revert "{m.group("quoted")}"'
    return m.group("quoted") or m.group("rest")


def docs_commit_scope(subject: str) -> str | None:
    """`docs(memory)` for a documentation commit's conventional subject (`docs(memory): ...`),
    else None: such a commit re-describes the documents it commits."""
    m = _CONVENTIONAL.match(subject.strip())
    if m is None or m.group("kind").lower() not in _DOCS_KINDS:
        return None
    return subject.strip()[: m.start("rest")].rstrip(": ").lower()
