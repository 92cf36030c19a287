"""Redaction on the dev corpus: recall per planting and kind family, false positives, throughput.

    python -m benchmarks.redaction [--json OUT] [--detect-secrets]

Recall: share of secret plantings whose secret cannot be read back from `redact(text)` by the
usual decodings. False positives: share of look-alike samples whose must-survive substring is
changed; merges: distinct samples that redaction made identical. Throughput: MB/s of `redact`
over a mix of corpus text and ordinary prose, and the cost for one worker turn of 20 kB.
`--detect-secrets` also measures the detect-secrets library's own plugins on the same plantings
(did it flag the planted line?), to decide where it adds to cortex's rules.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import defaultdict
from collections.abc import Callable

from cortex.core.redact.secrets import redact
from tests.support.redaction_corpus import PLANTINGS, leaks, safe_samples, secret_plantings

TURN_BYTES = 20_000


def _rate(hits: int, total: int) -> float:
    return round(100.0 * hits / total, 2) if total else 0.0


def measure_recall(scrub: Callable[[str], str]) -> dict[str, object]:
    by_way: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    by_family: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    missed: list[dict[str, str]] = []
    for p in secret_plantings():
        caught = not leaks(p.secret, scrub(p.text))
        for table, key in ((by_way, p.way), (by_family, p.family)):
            table[key][0] += caught
            table[key][1] += 1
        if not caught:
            missed.append({"kind": p.kind, "way": p.way, "text": p.text[:140]})
    caught_all = sum(v[0] for v in by_way.values())
    total = sum(v[1] for v in by_way.values())
    return {
        "recall": _rate(caught_all, total),
        "plantings": total,
        "per_planting": {w: _rate(*by_way[w]) for w in PLANTINGS},
        "per_family": {f: _rate(*v) for f, v in sorted(by_family.items())},
        "missed": missed,
    }


def measure_false_positives(scrub: Callable[[str], str]) -> dict[str, object]:
    by_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    altered: list[dict[str, str]] = []
    outputs: dict[str, str] = {}
    for s in safe_samples():
        out = scrub(s.text)
        changed = any(k not in out for k in s.keep)
        by_kind[s.kind][0] += changed
        by_kind[s.kind][1] += 1
        if changed:
            altered.append({"kind": s.kind, "text": s.text[:140], "out": out[:140]})
        outputs.setdefault(s.text, out)
    distinct_out = len(set(outputs.values()))
    total = sum(v[1] for v in by_kind.values())
    return {
        "false_positive_rate": _rate(len(altered), total),
        "samples": total,
        "kinds": len(by_kind),
        "merged": len(outputs) - distinct_out,
        "per_kind": {k: _rate(*v) for k, v in sorted(by_kind.items()) if v[0]},
        "altered": altered,
    }


def _mixed_text(target_bytes: int) -> str:
    prose = (
        "We decided to keep SQLite with WAL mode because several sessions write at once. "
        "The worker reads the queue, extracts candidates and writes them through the gate.\n"
        "def test_extract_candidates(tmp_path):\n    assert run(tmp_path) == 0\n"
    )
    parts: list[str] = []
    samples = [p.text for p in secret_plantings()[::8]] + [s.text for s in safe_samples()]
    i = 0
    while sum(map(len, parts)) < target_bytes:
        parts.append(prose * 3)
        parts.append(samples[i % len(samples)])
        i += 1
    return "\n".join(parts)


def _plain_turn(target_bytes: int) -> str:
    """A turn without secrets: prose, a code listing, a test run's output."""
    block = (
        "I looked at the worker and the queue. The extraction runs after each turn and writes\n"
        "candidates through the write gate; duplicates are merged by content hash.\n"
        "```python\ndef read_work(store_dir: Path) -> list[SessionWork]:\n"
        "    for path in list_files(store_dir):\n        entry = parse_entry(path.read_bytes())\n```\n"
        "tests/capture/test_queue.py::test_entries_sort_by_time PASSED [ 12%]\n"
        "commit 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39 (HEAD -> main, origin/main)\n"
    )
    return (block * (target_bytes // len(block) + 1))[:target_bytes]


def measure_throughput(scrub: Callable[[str], str]) -> dict[str, float]:
    text = _mixed_text(1_000_000)
    size_mb = len(text.encode()) / 1e6
    runs = []
    for _ in range(3):
        t0 = time.perf_counter()
        scrub(text)
        runs.append(time.perf_counter() - t0)
    turn = _mixed_text(TURN_BYTES)
    turn_runs = []
    for _ in range(20):
        t0 = time.perf_counter()
        scrub(turn)
        turn_runs.append(time.perf_counter() - t0)
    plain = _plain_turn(TURN_BYTES)
    plain_runs = []
    for _ in range(20):
        t0 = time.perf_counter()
        scrub(plain)
        plain_runs.append(time.perf_counter() - t0)
    return {
        "plain_turn_ms_median": round(1000 * statistics.median(plain_runs), 2),
        "mb_per_s": round(size_mb / statistics.median(runs), 3),
        "turn_bytes": float(len(turn.encode())),
        "turn_ms_median": round(1000 * statistics.median(turn_runs), 2),
        "turn_ms_max": round(1000 * max(turn_runs), 2),
    }


def _detect_secrets_scrub() -> Callable[[str], str]:
    """A scrubber that drops every line detect-secrets flags (its default plugins)."""
    from detect_secrets.core.scan import _process_line_based_plugins
    from detect_secrets.settings import default_settings

    def scrub(text: str) -> str:
        with default_settings():
            lines = text.split("\n")
            found = _process_line_based_plugins(list(enumerate(lines, 1)), "memory.txt")
            flagged = {s.line_number for s in found}
        return "\n".join("" if i in flagged else line for i, line in enumerate(lines, 1))

    return scrub


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", help="write the full result here")
    parser.add_argument("--detect-secrets", action="store_true", help="also measure detect-secrets")
    args = parser.parse_args()
    cortex_scrub = lambda text: redact(text).text  # noqa: E731
    result: dict[str, object] = {
        "cortex": {
            **measure_recall(cortex_scrub),
            **measure_false_positives(cortex_scrub),
            "throughput": measure_throughput(cortex_scrub),
        }
    }
    if args.detect_secrets:
        ds = _detect_secrets_scrub()
        result["detect_secrets"] = {**measure_recall(ds), **measure_false_positives(ds)}
    for name, r in result.items():
        assert isinstance(r, dict)
        print(
            f"== {name}: recall {r['recall']}% of {r['plantings']} plantings; "
            f"false positives {r['false_positive_rate']}% of {r['samples']}; merged {r['merged']}"
        )
        print("   per planting:", r["per_planting"])
        print("   per family:", r["per_family"])
        print("   altered kinds:", r["per_kind"])
        if "throughput" in r:
            print("   throughput:", r["throughput"])
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(result, fh, indent=1)


if __name__ == "__main__":
    main()
