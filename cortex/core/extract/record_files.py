"""Which files are decision records: an ADR (`docs/adr/0003-use-postgres.md`, `ADR-012-queue.md`)
or a decision log (`DECISIONS.md`). Pure; read by the transcript parser, which keeps an edited
record's whole text, and by the decision-record layer (records.py), which reads it."""

from __future__ import annotations

import re

MAX_RECORD_CHARS = 8_000  # of a record's text kept for the decision-record layer
_TEXT_FILE = re.compile(r"\.(?:md|markdown|rst|txt)$", re.IGNORECASE)
RECORD_DIR = re.compile(r"(?:^|/)(?:adrs?|decisions|decision[-_]records?|architecture[-_]decisions?)/", re.I)
_RECORD_NAME = re.compile(r"(?:^|/)adr[-_ ]?\d+[^/]*$", re.IGNORECASE)
_NOT_A_RECORD = re.compile(r"(?:^|/)(?:readme|index)[^/]*$|template[^/]*$", re.IGNORECASE)
_LOG_NAME = re.compile(r"(?:^|/)(?:decisions?|decision[-_]log|adr[-_]log)\.(?:md|markdown)$", re.IGNORECASE)


def record_kind(path: str) -> str | None:
    """ "record" for an ADR file, "log" for a decision log, None for anything else."""
    path = path.replace("\\", "/")
    if _LOG_NAME.search(path):
        return "log"
    if not _TEXT_FILE.search(path) or _NOT_A_RECORD.search(path):
        return None
    return "record" if RECORD_DIR.search(path) or _RECORD_NAME.search(path) else None
