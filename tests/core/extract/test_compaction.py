"""The compaction layer: the "Errors and fixes" of Claude Code's summary of a compacted conversation."""

from __future__ import annotations

import pytest

from cortex.core.extract.compaction import COMPACTION_TAG, extract_compacted_fixes, fix_items
from cortex.core.extract.pipeline import extract_sourced
from cortex.core.extract.transcript import parse_chunk
from cortex.core.model import MemoryType
from tests.support.secrets_corpus import ANTHROPIC_KEY
from tests.support.transcript_builders import V1_0, V2_1, envelope, jsonl, prompt_record, text_record

OPENING = "This session is being continued from a previous conversation that ran out of context."

# 1.0.x: numbered headings in bold, items as bullets with their details as sub-bullets.
NESTED = f"""{OPENING}
Summary:
3. Files and Code Sections:
   - **src/db.rs**
      - Fixed the pool setup
4. **Errors and Fixes:**
   - **SciPy import error**:
      - Error: "A NumPy version >=1.21.6 and <1.28.0 is required"
      - Fix: Pinned `numpy<2` in requirements.txt
      - User feedback: None, proceeded with fix

   - **Docs return 404**:
      - Root cause: the OpenAPI route is only mounted in debug mode
      - Fix: run with LOG_LEVEL=DEBUG
5. Problem Solving:
   - Fixed the timeout by raising it to 120 s
"""

# Items on one line each, the fix in the same sentence.
INLINE = f"""{OPENING}
4. Errors and fixes:
   - **Module evaluation errors**: Fixed by guarding every use of cfg.cluster with cfg.enableCluster
   - **Firewall type errors**: Replaced mkIf list concatenation with lib.optionals
   - **Branch cleanup**: Successfully deleted fix/issue-365-notes branch locally and remotely
   - **VM sizing**: Reduced memory to 1024 MB for faster runs
5. Pending Tasks:
   - None
"""

# 2.x: a Markdown heading per error, with labelled fields and a code block.
SUBHEADINGS = f"""{OPENING}
## 4. Errors and Fixes:

### Error 1: Deploy push returned 500
**Description**:
```
Error: Unable to finish push to https://example.convex.cloud
```
**Root Cause**: The runtime flag produced sourcemaps the backend rejects
**How Fixed**: Removed the flag from every script in package.json

### Error 2: `headers` was called outside a request scope (CURRENT ISSUE)
**Root Cause**: the auth middleware reads cookies synchronously
**Current Status**: UNFIXED - need to upgrade the auth package

## 5. Problem Solving:
Solved the deploy error.
"""


def test_nested_items_become_one_gotcha_each_with_their_details() -> None:
    assert fix_items(NESTED) == [
        'SciPy import error: Error: "A NumPy version >=1.21.6 and <1.28.0 is required"; '
        "Fix: Pinned `numpy<2` in requirements.txt",
        "Docs return 404: Root cause: the OpenAPI route is only mounted in debug mode; "
        "Fix: run with LOG_LEVEL=DEBUG",
    ]


def test_an_item_that_names_no_trouble_is_not_a_gotcha() -> None:
    # A branch named fix/issue-... is no word of trouble; nor is a resize done for speed.
    assert fix_items(INLINE) == [
        "Module evaluation errors: Fixed by guarding every use of cfg.cluster with cfg.enableCluster",
        "Firewall type errors: Replaced mkIf list concatenation with lib.optionals",
    ]


def test_subheaded_items_keep_their_fields_and_an_unfixed_one_is_left_out() -> None:
    assert fix_items(SUBHEADINGS) == [
        "Error 1: Deploy push returned 500: Description: "
        "`Error: Unable to finish push to https://example.convex.cloud`; "
        "Root Cause: The runtime flag produced sourcemaps the backend rejects; "
        "How Fixed: Removed the flag from every script in package.json"
    ]


@pytest.mark.parametrize(
    "item",
    [
        "   - **Compilation error with old import**:\n      - Currently fixing by removing the references",
        "   - **Query macros fail**:\n      - Database created\n      - Still failing with query macros",
        "   - **Dialyzer warning (UNRESOLVED)**: Attempted fixes that all failed",
        "   - **Flaky login test**: not yet fixed, retried twice",
    ],
)
def test_an_item_still_open_when_the_summary_was_written_is_left_out(item: str) -> None:
    fixed = "   - **Port in use**: Fixed by killing the old server"
    summary = f"{OPENING}\n4. Errors and fixes:\n{item}\n{fixed}\n"
    assert fix_items(summary) == ["Port in use: Fixed by killing the old server"]


def test_an_item_reads_as_one_line_and_a_long_one_is_cut() -> None:
    summary = (
        f"{OPENING}\n4. Errors and fixes:\n"
        "   - **Missing lazy_static**\n      - Fixed by adding lazy_static\n"
        "   - **Slow build**: The cache was cold. Fixed by warming it.\n"
        f"   - **Huge error**: {'word ' * 300}fixed\n"
    )
    short, sentence, long = fix_items(summary)
    assert short == "Missing lazy_static: Fixed by adding lazy_static"
    assert sentence == "Slow build: The cache was cold. Fixed by warming it."
    assert len(long) == 700 and long.endswith("…") and "\n" not in long


def test_a_summary_without_the_section_gives_nothing() -> None:
    assert fix_items(f"{OPENING}\n1. Primary Request and Intent:\n   - Fix the login error\n") == []
    assert fix_items("") == []


@pytest.mark.parametrize("version", [V1_0, V2_1])
def test_the_pipeline_stores_each_fix_as_a_gotcha_of_the_summarys_branch(version: str) -> None:
    summary = {**prompt_record(NESTED.replace("numpy<2", f"numpy<2 {ANTHROPIC_KEY}"), "cs", version=version)}
    summary["isCompactSummary"] = True
    summary["gitBranch"] = "feature/api"
    records = [
        prompt_record("set up the API", "p1", version=version),
        text_record("m1", "Done: the API is set up.", "a1", version=version),
        {**envelope("system", "b", version), "subtype": "compact_boundary"},
        summary,
        prompt_record("continue", "p2", version=version),
        text_record("m2", "Continuing with the docs.", "a2", version=version),
    ]
    messages = parse_chunk(jsonl(records), 0).messages
    found = [s for s in extract_sourced(messages, project_root="/home/dev/proj", git=None)]
    fixes = [s for s in found if COMPACTION_TAG in s.candidate.tags]
    assert [s.candidate.type for s in fixes] == [MemoryType.GOTCHA, MemoryType.GOTCHA]
    assert {s.branch for s in fixes} == {"feature/api"} and {s.record for s in fixes} == {"cs"}
    assert "Pinned `numpy<2" in fixes[0].candidate.content
    # The summary goes through the same redaction as every other text.
    assert all(ANTHROPIC_KEY not in s.candidate.content for s in found)
    # It is no prompt: nothing of it is read as a request or a rule of the user's.
    assert not any("continued from a previous conversation" in s.candidate.content for s in found)


def test_the_layer_reads_only_summaries() -> None:
    messages = parse_chunk(jsonl([prompt_record(NESTED, "p1")]), 0).messages
    assert messages[0].texts and extract_compacted_fixes(messages) == []
