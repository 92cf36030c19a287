"""The daily call ledger of the claude-cli extractor under CORTEX_HOME: take a call, record it. Locked JSON.

The sibling of spend.py (which caps dollars for the API extractor): `claude -p` runs on the
user's own Claude Code login, so what is capped is the number of calls per UTC day. A call is
counted when it starts, so a killed worker or a hung CLI still uses up its place.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cortex.backends.spend import KEEP_DAYS, LedgerUnreadable, read_ledger, write_ledger
from cortex.shell.files import file_lock

LEDGER_FILE = "llm-calls.json"
LOCK_FILE = "llm-calls.lock"
LOCK_TIMEOUT_S = 10.0
COUNTERS = ("calls", "failed", "input_tokens", "output_tokens")

__all__ = ["KEEP_DAYS", "DayCalls", "LedgerUnreadable", "read_calls", "record_call", "take_call"]


@dataclass(frozen=True, slots=True)
class DayCalls:
    """One day's claude-cli calls: started, failed, the tokens they reported and their estimated cost."""

    day: str
    calls: int = 0
    failed: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    estimated_usd: float = 0.0


def ledger_path(home: Path) -> Path:
    """Where the ledger lives (beside llm-spend.json)."""
    return home / LEDGER_FILE


def read_calls(home: Path, day: str) -> DayCalls:
    """The calls recorded for `day` (YYYY-MM-DD, UTC); raises LedgerUnreadable on a bad file."""
    return _day(_read(home), day)


def take_call(home: Path, day: str, cap: int) -> bool:
    """Count one call for `day`, or False (nothing counted) when `cap` calls were made already."""
    with file_lock(home / LOCK_FILE, timeout_s=LOCK_TIMEOUT_S):
        data = _read(home)
        if _day(data, day).calls >= cap:
            return False
        entry = data.setdefault("days", {}).setdefault(day, {})
        entry["calls"] = _int(entry.get("calls")) + 1
        _write(home, data)
    return True


def record_call(
    home: Path,
    day: str,
    *,
    failed: bool,
    input_tokens: int = 0,
    output_tokens: int = 0,
    estimated_usd: float = 0.0,
) -> DayCalls:
    """Add what a finished call reported (its place was taken by `take_call`)."""
    with file_lock(home / LOCK_FILE, timeout_s=LOCK_TIMEOUT_S):
        data = _read(home)
        entry = data.setdefault("days", {}).setdefault(day, {})
        entry["failed"] = _int(entry.get("failed")) + (1 if failed else 0)
        entry["input_tokens"] = _int(entry.get("input_tokens")) + max(input_tokens, 0)
        entry["output_tokens"] = _int(entry.get("output_tokens")) + max(output_tokens, 0)
        entry["estimated_usd"] = round(_float(entry.get("estimated_usd")) + max(estimated_usd, 0.0), 8)
        _write(home, data)
        return _day(data, day)


def _read(home: Path) -> dict[str, Any]:
    return read_ledger(ledger_path(home), "call")


def _write(home: Path, data: dict[str, Any]) -> None:
    note = "cortex claude-cli extraction calls per UTC day; cost is an estimate at API list prices"
    write_ledger(ledger_path(home), data, note)


def _day(data: dict[str, Any], day: str) -> DayCalls:
    entry = data.get("days", {}).get(day)
    if not isinstance(entry, dict):
        return DayCalls(day)
    counts = {name: _int(entry.get(name)) for name in COUNTERS}
    return DayCalls(day, **counts, estimated_usd=_float(entry.get("estimated_usd")))


def _int(value: object) -> int:
    return max(int(value), 0) if isinstance(value, int) and not isinstance(value, bool) else 0


def _float(value: object) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return 0.0
    return max(float(value), 0.0) if math.isfinite(value) else 0.0
