"""The daily LLM spend ledger: reservations hold the cap, settlements record real usage."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest

from cortex.backends.spend import (
    KEEP_DAYS,
    LedgerUnreadable,
    ledger_path,
    read_spend,
    reserve_spend,
    settle_spend,
)

DAY = "2026-03-01"


def test_an_empty_home_has_spent_nothing(tmp_path: Path) -> None:
    spent = read_spend(tmp_path / "home", DAY)
    assert spent.usd == 0.0 and spent.reserved_usd == 0.0 and spent.calls == 0


def test_reserve_then_settle_records_the_real_cost(tmp_path: Path) -> None:
    held = reserve_spend(tmp_path, DAY, 0.02, cap_usd=0.15)
    assert held is not None
    assert read_spend(tmp_path, DAY).committed_usd == pytest.approx(0.02)
    after = settle_spend(tmp_path, held, usd=0.004, input_tokens=3_000, output_tokens=200)
    assert after.usd == pytest.approx(0.004) and after.reserved_usd == 0.0
    assert (after.calls, after.input_tokens, after.output_tokens) == (1, 3_000, 200)
    assert read_spend(tmp_path, DAY) == after


def test_the_cap_refuses_a_call_that_would_pass_it(tmp_path: Path) -> None:
    first = reserve_spend(tmp_path, DAY, 0.10, cap_usd=0.15)
    assert first is not None
    assert reserve_spend(tmp_path, DAY, 0.06, cap_usd=0.15) is None  # 0.10 held + 0.06 > 0.15
    settle_spend(tmp_path, first, usd=0.01)
    assert reserve_spend(tmp_path, DAY, 0.06, cap_usd=0.15) is not None  # the estimate was freed


def test_days_are_separate_and_old_days_are_trimmed(tmp_path: Path) -> None:
    for n in range(KEEP_DAYS + 5):
        day = f"2026-01-{n + 1:02d}" if n < 31 else f"2026-02-{n - 30:02d}"
        held = reserve_spend(tmp_path, day, 0.01, cap_usd=0.15)
        assert held is not None
        settle_spend(tmp_path, held, usd=0.01)
    data = json.loads(ledger_path(tmp_path).read_text())
    assert len(data["days"]) == KEEP_DAYS
    assert "2026-01-01" not in data["days"]
    assert read_spend(tmp_path, "2026-02-14").usd == pytest.approx(0.01)


def test_a_killed_call_keeps_its_reservation_for_the_day(tmp_path: Path) -> None:
    assert reserve_spend(tmp_path, DAY, 0.14, cap_usd=0.15) is not None  # never settled
    assert reserve_spend(tmp_path, DAY, 0.02, cap_usd=0.15) is None
    assert reserve_spend(tmp_path, "2026-03-02", 0.02, cap_usd=0.15) is not None


@pytest.mark.parametrize("content", [b"not json", b"[1, 2]", b'{"days": 3}', b"\xff\xfe"])
def test_a_foreign_ledger_stops_spending(tmp_path: Path, content: bytes) -> None:
    ledger_path(tmp_path).write_bytes(content)
    with pytest.raises(LedgerUnreadable):
        read_spend(tmp_path, DAY)
    with pytest.raises(LedgerUnreadable):
        reserve_spend(tmp_path, DAY, 0.01, cap_usd=0.15)
    assert ledger_path(tmp_path).read_bytes() == content  # never overwritten


def test_a_nan_amount_blocks_spending(tmp_path: Path) -> None:
    ledger_path(tmp_path).write_text(json.dumps({"days": {DAY: {"usd": float("nan")}}}))
    assert reserve_spend(tmp_path, DAY, 0.001, cap_usd=0.15) is None


def _reserve_many(home: str, n: int) -> None:
    for _ in range(n):
        held = reserve_spend(Path(home), DAY, 0.001, cap_usd=1.0)
        assert held is not None
        settle_spend(Path(home), held, usd=0.001, input_tokens=1)


def test_concurrent_processes_lose_no_usage(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_reserve_many, args=(str(tmp_path), 20)) for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    spent = read_spend(tmp_path, DAY)
    assert spent.calls == 60 and spent.input_tokens == 60
    assert spent.usd == pytest.approx(0.06) and spent.reserved_usd == 0.0
