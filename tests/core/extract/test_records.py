"""The decision-record layer: an ADR or a decision log the session wrote."""

from __future__ import annotations

import pytest

from cortex.core.extract.pipeline import extract_sourced
from cortex.core.extract.records import RECORD_TAG, extract_decision_records, kept_record_fields, record_kind
from cortex.core.extract.transcript import parse_chunk
from cortex.core.extract.transcript_blocks import parse_record_edit
from cortex.core.model import MemoryType
from cortex.core.write.state import state_keys
from tests.support.secrets_corpus import ANTHROPIC_KEY
from tests.support.transcript_builders import (
    V1_0,
    V2_1,
    edit_records,
    jsonl,
    prompt_record,
    tool_result_record,
    tool_use_record,
)

ROOT = "/home/dev/proj"

NYGARD = """# 3. Use PostgreSQL for persistence

Date: 2026-11-20

## Status

{status}

## Context

The prototype kept everything in SQLite files, one per worker, and two workers now write at once.

## Decision

We will use PostgreSQL 16 for all persistent data, because it handles concurrent writers and the
team already runs it for billing.

## Consequences

Local development needs a database container.
"""

MADR = """---
status: accepted
date: 2026-11-21
---
# Use uv to manage Python dependencies

## Context and Problem Statement

pip-tools resolves slowly and the lock files drift between machines.

## Decision Outcome

Chosen option: "uv", because it resolves in seconds and writes one lock file for every platform.
"""


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("/home/dev/proj/docs/adr/0003-use-postgres.md", "record"),
        ("doc/decisions/0007-queue.md", "record"),
        ("docs/architecture/decisions/0001-record-architecture-decisions.md", "record"),
        ("/home/dev/proj/ADR-012-message-queue.md", "record"),
        ("C:\\work\\proj\\docs\\adr\\0002-auth.md", "record"),
        ("DECISIONS.md", "log"),
        ("docs/decision-log.md", "log"),
        ("docs/adr/README.md", None),
        ("docs/adr/template.md", None),
        ("docs/adr/0000-adr-template.md", None),
        ("src/decisions.py", None),
        ("docs/adr/0003-use-postgres.png", None),
        ("docs/architecture.md", None),
    ],
)
def test_which_files_are_decision_records(path: str, kind: str | None) -> None:
    assert record_kind(path) == kind


def _write(path: str, content: str, tid: str = "w1", version: str = V2_1) -> list[dict[str, object]]:
    done = {"type": "create", "filePath": path, "content": content}
    return [
        tool_use_record(tid, "Write", {"file_path": path, "content": content}, version=version),
        tool_result_record(
            tid, f"File created successfully at: {path}", is_error=False, top=done, version=version
        ),
    ]


def _notes(records: list[dict[str, object]]) -> list[tuple[MemoryType, str, tuple[str, ...]]]:
    messages = parse_chunk(jsonl([prompt_record("write the ADR", "p1"), *records]), 0).messages
    found = extract_sourced(messages, project_root=ROOT, git=None)
    return [
        (s.candidate.type, s.candidate.content, s.candidate.tags)
        for s in found
        if RECORD_TAG in s.candidate.tags
    ]


@pytest.mark.parametrize("version", [V1_0, V2_1])
def test_an_accepted_record_is_a_decision_keyed_by_its_file(version: str) -> None:
    path = f"{ROOT}/docs/adr/0003-use-postgres.md"
    [(kind, text, tags)] = _notes(_write(path, NYGARD.format(status="Accepted"), version=version))
    assert kind is MemoryType.DECISION
    assert text.startswith(
        "Decision record adr/0003-use-postgres.md: 3. Use PostgreSQL for persistence (Accepted)."
    )
    assert "We will use PostgreSQL 16 for all persistent data, because it handles concurrent writers" in text
    assert "Local development needs" not in text  # the consequences are not the decision
    assert state_keys(tags) == {"record:adr/0003-use-postgres.md"}


def test_a_madr_record_gives_its_front_matter_status_and_its_outcome() -> None:
    [(kind, text, _)] = _notes(_write(f"{ROOT}/docs/decisions/0004-use-uv.md", MADR))
    assert kind is MemoryType.DECISION
    assert "Use uv to manage Python dependencies (accepted)" in text
    assert 'Chosen option: "uv", because it resolves in seconds' in text


@pytest.mark.parametrize(
    ("status", "kind", "rejected"),
    [
        ("Proposed", MemoryType.CONTEXT, False),
        ("Superseded by [ADR-0005](0005-use-cockroach.md)", MemoryType.CONTEXT, False),
        ("Deprecated", MemoryType.CONTEXT, False),
        ("Rejected", MemoryType.DECISION, True),
    ],
)
def test_a_record_not_in_force_says_so(status: str, kind: MemoryType, rejected: bool) -> None:
    [(found, text, tags)] = _notes(
        _write(f"{ROOT}/docs/adr/0003-use-postgres.md", NYGARD.format(status=status))
    )
    assert found is kind and f"({status})" in text
    assert ("rejected" in tags) is rejected


def test_an_entry_added_to_a_decision_log_is_a_decision() -> None:
    old = "## 2026-11-02\n- Use uv for Python dependencies.\n"
    added = "- Run CI on GitHub Actions instead of Jenkins, because the runners are free for us.\n"
    new = f"{old}\n## 2026-11-20\n{added}"

    edit = {"file_path": f"{ROOT}/DECISIONS.md", "old_string": old, "new_string": new}
    records = [
        tool_use_record("e1", "Edit", edit),
        tool_result_record(
            "e1", "The file has been updated.", is_error=False, top={"filePath": edit["file_path"]}
        ),
    ]
    [(kind, text, _)] = _notes(records)
    assert kind is MemoryType.DECISION
    assert text == (
        "Decision log DECISIONS.md: 2026-11-20 Run CI on GitHub Actions instead of Jenkins, because the "
        "runners are free for us."
    )


def _edit(
    path: str, before: str, old: str, new: str, tid: str = "e1", version: str = V2_1
) -> list[dict[str, object]]:
    return edit_records(tid, path, before, old, new, version=version)


@pytest.mark.parametrize("version", [V1_0, V2_1])
def test_an_edit_that_accepts_a_proposed_record_reads_the_record_it_leaves(version: str) -> None:
    path = f"{ROOT}/docs/adr/0003-use-postgres.md"
    proposed = NYGARD.format(status="Proposed")
    [(kind, text, tags)] = _notes(_edit(path, proposed, "Proposed", "Accepted", version=version))
    assert kind is MemoryType.DECISION
    assert text.startswith(
        "Decision record adr/0003-use-postgres.md: 3. Use PostgreSQL for persistence (Accepted)."
    )
    assert "We will use PostgreSQL 16 for all persistent data" in text
    assert state_keys(tags) == {"record:adr/0003-use-postgres.md"}  # it replaces the proposed note


def test_a_multiedit_that_supersedes_a_record_says_it_is_no_longer_in_force() -> None:
    path = f"{ROOT}/docs/adr/0003-use-postgres.md"
    accepted = NYGARD.format(status="Accepted")
    edits = [
        {"old_string": "Accepted", "new_string": "Superseded by ADR-0005", "replace_all": False},
        {"old_string": "PostgreSQL 16", "new_string": "PostgreSQL 17", "replace_all": True},
    ]
    done = {"filePath": path, "edits": edits, "originalFileContents": accepted, "structuredPatch": []}
    records = [
        tool_use_record("m1", "MultiEdit", {"file_path": path, "edits": edits}, version=V1_0),
        tool_result_record("m1", "Applied 2 edits", is_error=False, top=done, version=V1_0),
    ]
    [(kind, text, _)] = _notes(records)
    assert kind is MemoryType.CONTEXT
    assert "(Superseded by ADR-0005)" in text and "PostgreSQL 17 for all persistent data" in text


def test_an_edit_whose_text_is_not_in_the_clients_copy_a_failed_write_and_other_files_give_nothing() -> None:
    path = f"{ROOT}/docs/adr/0003-use-postgres.md"
    proposed = NYGARD.format(status="Proposed")
    records = [
        *_edit(path, proposed, "Status: Draft", "Status: Accepted"),  # the file changed since
        tool_use_record(
            "e2", "Edit", {"file_path": path, "old_string": "Proposed", "new_string": "Accepted"}
        ),
        tool_result_record("e2", "The file has been updated.", is_error=False, top={"filePath": path}),
        tool_use_record("w2", "Write", {"file_path": path, "content": NYGARD.format(status="Accepted")}),
        tool_result_record("w2", "Error: permission denied", is_error=True, top="Error: permission denied"),
        *_write(f"{ROOT}/docs/architecture.md", NYGARD.format(status="Accepted"), tid="w3"),
        *_edit(f"{ROOT}/docs/guide.md", proposed, "Proposed", "Accepted", tid="e4"),
    ]
    assert _notes(records) == []


def test_only_a_records_text_is_kept_and_it_is_redacted() -> None:
    adr = NYGARD.format(status="Accepted").replace("PostgreSQL 16", f"PostgreSQL 16 (key {ANTHROPIC_KEY})")
    assert kept_record_fields({"file_path": "src/app.py", "content": "x = 1"}) == {}
    # An edited record is read from the parser's rebuilt text, a decision log from its edit's sides.
    sides = {"old_string": "Proposed", "new_string": "Accepted"}
    assert kept_record_fields({"file_path": f"{ROOT}/docs/adr/0003-x.md", **sides}) == {}
    assert kept_record_fields({"file_path": f"{ROOT}/DECISIONS.md", **sides}) == sides
    messages = parse_chunk(
        jsonl([prompt_record("write it", "p1"), *_write(f"{ROOT}/docs/adr/0003-x.md", adr)]), 0
    )
    found = extract_sourced(messages.messages, project_root=ROOT, git=None)
    assert found and all(ANTHROPIC_KEY not in s.candidate.content for s in found)
    assert extract_decision_records(messages.messages)  # the raw messages, as parsed, name it too


def test_an_edited_records_text_is_redacted_before_any_layer_reads_it() -> None:
    path = f"{ROOT}/docs/adr/0003-x.md"
    before = NYGARD.format(status="Proposed").replace("PostgreSQL 16", f"PostgreSQL 16 (key {ANTHROPIC_KEY})")
    found = _notes(_edit(path, before, "Proposed", "Accepted"))
    assert len(found) == 1 and "(Accepted)" in found[0][1]
    assert ANTHROPIC_KEY not in found[0][1] and "PostgreSQL 16 (key [REDACTED" in found[0][1]


ADR = "/home/dev/proj/docs/adr/0003-use-postgres.md"


@pytest.mark.parametrize(
    "top",
    [
        "Error: String to replace not found in file.",
        {"filePath": ADR, "oldString": "Proposed", "newString": "Accepted", "originalFile": None},
        {"filePath": ADR, "oldString": "Proposed", "newString": 7, "originalFile": "Status: Proposed"},
        {"filePath": ADR, "edits": "not a list", "originalFileContents": "Status: Proposed"},
        {"filePath": ADR, "edits": [], "originalFileContents": "Status: Proposed"},
        {
            "filePath": ADR,
            "edits": [{"old_string": "Draft", "new_string": "x"}],
            "originalFileContents": "Proposed",
        },
        {"filePath": "/home/dev/proj/src/app.py", "oldString": "a", "newString": "b", "originalFile": "a"},
        {"filePath": ["not", "a", "path"], "oldString": "a", "newString": "b", "originalFile": "a"},
    ],
)
def test_a_result_that_does_not_give_an_edited_records_text_gives_none(top: object) -> None:
    assert parse_record_edit(top) == ""


def test_replace_all_and_the_edits_order_are_the_clients() -> None:
    top = {
        "filePath": ADR,
        "edits": [
            {"old_string": "v1", "new_string": "v2", "replace_all": True},
            {"old_string": "v2", "new_string": "v3"},
        ],
        "originalFileContents": "v1 then v1",
    }
    assert parse_record_edit(top) == "v3 then v2"
