"""The claude-cli call ledger: one place per call, counted before the call, capped per UTC day."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from cortex.backends import calls

DAY = "2026-03-01"


def test_calls_are_counted_up_to_the_cap_and_the_next_day_starts_afresh(tmp_path: Path) -> None:
    assert [calls.take_call(tmp_path, DAY, cap=3) for _ in range(5)] == [True, True, True, False, False]
    assert calls.read_calls(tmp_path, DAY).calls == 3
    assert calls.take_call(tmp_path, "2026-03-02", cap=3)
    assert calls.read_calls(tmp_path, "2026-03-02").calls == 1


def test_a_cap_of_zero_allows_no_call(tmp_path: Path) -> None:
    assert not calls.take_call(tmp_path, DAY, cap=0)
    assert calls.read_calls(tmp_path, DAY).calls == 0


def test_finished_calls_add_their_usage(tmp_path: Path) -> None:
    calls.take_call(tmp_path, DAY, cap=5)
    calls.record_call(tmp_path, DAY, failed=False, input_tokens=1200, output_tokens=80, estimated_usd=0.0016)
    calls.take_call(tmp_path, DAY, cap=5)
    day = calls.record_call(tmp_path, DAY, failed=True)
    assert (day.calls, day.failed, day.input_tokens, day.output_tokens) == (2, 1, 1200, 80)
    assert day.estimated_usd == pytest.approx(0.0016)


def test_concurrent_workers_never_pass_the_cap(tmp_path: Path) -> None:
    got: list[bool] = []
    lock = threading.Lock()

    def take() -> None:
        ok = calls.take_call(tmp_path, DAY, cap=7)
        with lock:
            got.append(ok)

    threads = [threading.Thread(target=take) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got.count(True) == 7 and calls.read_calls(tmp_path, DAY).calls == 7


def test_a_foreign_ledger_stops_the_calls_instead_of_being_overwritten(tmp_path: Path) -> None:
    calls.ledger_path(tmp_path).write_text("not json", encoding="utf-8")
    with pytest.raises(calls.LedgerUnreadable):
        calls.read_calls(tmp_path, DAY)
    with pytest.raises(calls.LedgerUnreadable):
        calls.take_call(tmp_path, DAY, cap=5)
    assert calls.ledger_path(tmp_path).read_text(encoding="utf-8") == "not json"


def test_old_days_are_dropped(tmp_path: Path) -> None:
    for n in range(calls.KEEP_DAYS + 5):
        calls.take_call(tmp_path, f"2025-{1 + n // 28:02d}-{1 + n % 28:02d}", cap=1)
    assert calls.read_calls(tmp_path, "2025-01-01").calls == 0  # the oldest are gone
    assert calls.read_calls(tmp_path, "2025-02-17").calls == 1
