"""The daily LLM spend ledger under CORTEX_HOME: reserve, settle, read. Locked JSON file I/O."""

from __future__ import annotations

import json
import math
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cortex.shell.files import atomic_write, file_lock

LEDGER_FILE = "llm-spend.json"
LOCK_FILE = "llm-spend.lock"
LOCK_TIMEOUT_S = 10.0
KEEP_DAYS = 40  # older days are dropped from the ledger when it is next written
MAX_LEDGER_BYTES = 1_000_000


@dataclass(frozen=True, slots=True)
class DaySpend:
    """One day's recorded LLM usage; `reserved_usd` is held by calls still in flight (or killed)."""

    day: str
    usd: float = 0.0
    reserved_usd: float = 0.0
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def committed_usd(self) -> float:
        """Spent plus held: what the cap is checked against."""
        return self.usd + self.reserved_usd


@dataclass(frozen=True, slots=True)
class Reservation:
    """A worst-case amount held against the cap while one call runs."""

    day: str
    token: str
    usd: float


class LedgerUnreadable(Exception):
    """The ledger exists but is not ours to parse; callers stop spending rather than guess."""


def ledger_path(home: Path) -> Path:
    """Where the ledger lives."""
    return home / LEDGER_FILE


def read_spend(home: Path, day: str) -> DaySpend:
    """The usage recorded for `day` (YYYY-MM-DD, UTC); raises LedgerUnreadable on a bad file."""
    return _day(_read(home), day)


def reserve_spend(home: Path, day: str, estimate_usd: float, cap_usd: float) -> Reservation | None:
    """Hold `estimate_usd` for a call, or None when it would take the day over `cap_usd`."""
    with file_lock(home / LOCK_FILE, timeout_s=LOCK_TIMEOUT_S):
        data = _read(home)
        spent = _day(data, day)
        if spent.committed_usd + estimate_usd > cap_usd:
            return None
        token = secrets.token_hex(6)
        entry = data.setdefault("days", {}).setdefault(day, {})
        entry.setdefault("reserved", {})[token] = round(estimate_usd, 8)
        _write(home, data)
    return Reservation(day, token, estimate_usd)


def settle_spend(
    home: Path,
    reservation: Reservation,
    *,
    usd: float,
    input_tokens: int = 0,
    output_tokens: int = 0,
) -> DaySpend:
    """Replace a reservation by what the call really cost (0 when it failed before billing)."""
    with file_lock(home / LOCK_FILE, timeout_s=LOCK_TIMEOUT_S):
        data = _read(home)
        entry = data.setdefault("days", {}).setdefault(reservation.day, {})
        entry.get("reserved", {}).pop(reservation.token, None)
        entry["usd"] = round(_float(entry.get("usd")) + max(usd, 0.0), 8)
        entry["calls"] = _int(entry.get("calls")) + (1 if usd > 0 or input_tokens else 0)
        entry["input_tokens"] = _int(entry.get("input_tokens")) + input_tokens
        entry["output_tokens"] = _int(entry.get("output_tokens")) + output_tokens
        _write(home, data)
        return _day(data, reservation.day)


def _read(home: Path) -> dict[str, Any]:
    return read_ledger(ledger_path(home), "spend")


def _write(home: Path, data: dict[str, Any]) -> None:
    note = "cortex LLM spend per UTC day, from the token usage the API reported"
    write_ledger(ledger_path(home), data, note)


def read_ledger(path: Path, kind: str) -> dict[str, Any]:
    """A per-day JSON ledger (`{"days": {...}}`); empty when absent, LedgerUnreadable when not ours."""
    try:
        raw = path.read_bytes()[: MAX_LEDGER_BYTES + 1]
    except FileNotFoundError:
        return {"days": {}}
    except OSError as exc:
        raise LedgerUnreadable(f"cannot read {path}: {exc.strerror}") from exc
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise LedgerUnreadable(f"{path} is not a cortex {kind} ledger ({exc})") from exc
    if not isinstance(data, dict) or not isinstance(data.get("days", {}), dict):
        raise LedgerUnreadable(f"{path} is not a cortex {kind} ledger")
    return data


def write_ledger(path: Path, data: dict[str, Any], note: str) -> None:
    """Write a per-day ledger atomically, keeping its last KEEP_DAYS days."""
    days = data.get("days", {})
    data["days"] = {d: days[d] for d in sorted(days)[-KEEP_DAYS:]}
    data["note"] = note
    atomic_write(path, json.dumps(data, indent=1, sort_keys=True) + "\n")


def _day(data: dict[str, Any], day: str) -> DaySpend:
    entry = data.get("days", {}).get(day)
    if not isinstance(entry, dict):
        return DaySpend(day)
    reserved = entry.get("reserved")
    held = sum(_float(v) for v in reserved.values()) if isinstance(reserved, dict) else 0.0
    return DaySpend(
        day,
        usd=_float(entry.get("usd")),
        reserved_usd=held,
        calls=_int(entry.get("calls")),
        input_tokens=_int(entry.get("input_tokens")),
        output_tokens=_int(entry.get("output_tokens")),
    )


def _float(value: object) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return 0.0
    # A NaN or infinite amount blocks spending: stop rather than guess.
    return max(float(value), 0.0) if math.isfinite(value) else math.inf


def _int(value: object) -> int:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else 0
