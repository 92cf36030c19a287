"""`python -m cortex.briefing.refresh --root DIR [--cwd DIR]`: render and cache the briefing once.

The SessionStart hook starts this, detached, when it found no cached briefing for the session
(it rendered one itself, or only the global part): the next session then reads the cache. The
render takes the briefing lock, so it never races the worker's own render.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from cortex.app import Cortex
from cortex.briefing.deliver import refresh_briefing
from cortex.paths import STORE_DIR, Paths, cortex_home, find_project_root

log = logging.getLogger("cortex.briefing.refresh")


def main(argv: list[str] | None = None) -> int:
    """Entry point; 0 when the briefing was rendered (written or not), 1 when it failed."""
    parser = argparse.ArgumentParser(prog="python -m cortex.briefing.refresh", description=__doc__)
    parser.add_argument("--root", required=True, type=Path, help="the project root")
    parser.add_argument("--cwd", type=Path, default=None, help="the session's directory")
    args = parser.parse_args(argv)
    root = find_project_root(args.root)
    from cortex.shell.logs import configure

    home = cortex_home()
    configure(root / STORE_DIR / "cortex.log", fallback=home / "cortex.log")
    try:
        with Cortex(Paths(root, home), actor="worker") as cx:
            result = refresh_briefing(cx, cwd=args.cwd)
    except Exception as exc:
        log.error("briefing render failed: %s: %s", type(exc).__name__, exc, exc_info=True)
        return 1
    for error in result.errors:
        log.warning("briefing: %s", error)
    log.info("briefing rendered for %s (%d memories)", root, result.rendered.memories)
    return 0


if __name__ == "__main__":
    sys.exit(main())
