"""One developer's process in the concurrent sharing test: `python -m tests.support.team_actor`.

For SECONDS (and at least MIN_OPS operations) it stores a decision of its own and shares it,
and every fifth time unshares the one before; each acknowledged step goes to a JSON-lines file
(`{"op": "shared"|"unshared", "id": ..., "text": ...}`), failures as `{"op": "error", ...}`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

from cortex.app import Cortex
from cortex.capture.manual import remember
from cortex.config import load_settings
from cortex.paths import Paths
from cortex.team.share import share, unshare

MIN_OPS = 5


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--seconds", type=float, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    paths = Paths(args.root, args.home)
    settings = dataclasses.replace(load_settings(paths), team_dsn=args.dsn)
    deadline = time.monotonic() + args.seconds
    n = 0
    previous: str | None = None
    with args.out.open("a", encoding="utf-8") as out:

        def record(**row: object) -> None:
            out.write(json.dumps(row) + "\n")
            out.flush()

        while n < MIN_OPS or time.monotonic() < deadline:
            n += 1
            text = f"Decision {args.name} number {n}: module {args.name}{n} keeps its own connection pool"
            try:
                with Cortex(paths, settings) as cx:
                    memory = remember(cx, text, mem_type="decision").memory
                    share(cx, memory.id)
                    record(op="shared", id=memory.id, text=text)
                    if n % 5 == 0 and previous is not None:
                        unshare(cx, previous)
                        record(op="unshared", id=previous)
                    previous = memory.id
            except Exception as exc:  # recorded for the test, which fails on any
                record(op="error", error=f"{type(exc).__name__}: {exc}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
