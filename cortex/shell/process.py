"""Ending a process whose work is done, without the interpreter's teardown: freeing every module
(and a loaded embedding model) costs tens of milliseconds that nobody waits for usefully. Used by
the hooks' launcher and by the CLI's quick read-only commands."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from typing import NoReturn


def end_now(code: object) -> NoReturn:
    """Flush the logs and both streams, then end the process with `code` (SystemExit's rules)."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a reader gone away is not an error
            stream.flush()
    os._exit(code if isinstance(code, int) else (0 if code is None else 1))
