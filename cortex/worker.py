"""Deprecated alias: `python -m cortex.worker` runs `cortex.plugin.worker` (kept for one release).

Installed plugin copies of the previous release start the worker by this name.
"""

from __future__ import annotations

import sys

from cortex.plugin.worker import main

if __name__ == "__main__":
    sys.exit(main())
