#!/usr/bin/env bash
# One entry point for developers and CI: set up .venv, then run the demo, the tests or the linters.
#   scripts/dev.sh demo      set up (cortex + local embedder) and replay the sample session
#   scripts/dev.sh test      set up (everything) and run the whole test suite
#   scripts/dev.sh lint      ruff + mypy
#   scripts/dev.sh bench     latency, hook and retrieval benchmarks (slow)
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
VENV="${CORTEX_VENV:-.venv}"

setup() {
    local extras="$1"
    local want
    want="$(cat pyproject.toml | "$PYTHON" -c 'import hashlib,sys;print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest()[:16])')-$extras"
    if [ -f "$VENV/.cortex-setup" ] && [ "$(cat "$VENV/.cortex-setup")" = "$want" ]; then
        return 0
    fi
    "$PYTHON" - <<'PY'
import sys
if sys.version_info < (3, 11):
    sys.exit(f"cortex needs Python >= 3.11; {sys.executable} is {sys.version.split()[0]} (set PYTHON=...)")
PY
    echo "setting up $VENV with cortex[$extras] (one time; later runs reuse it)" >&2
    "$PYTHON" -m venv "$VENV"
    # torch first and pinned: a bare requirement would pull a multi-GB CUDA build.
    case ",$extras," in
        *,local,*|*,all,*) "$VENV/bin/pip" install --quiet --disable-pip-version-check "torch==2.13.0" ;;
    esac
    "$VENV/bin/pip" install --quiet --disable-pip-version-check -e ".[$extras]"
    echo "$want" > "$VENV/.cortex-setup"
}

cmd="${1:-help}"
shift || true
case "$cmd" in
    demo)
        setup "local"
        exec "$VENV/bin/cortex" demo "$@"
        ;;
    test)
        setup "all"
        exec "$VENV/bin/python" -m pytest "$@"
        ;;
    lint)
        setup "all"
        "$VENV/bin/ruff" check cortex tests benchmarks
        "$VENV/bin/ruff" format --check cortex tests benchmarks
        "$VENV/bin/mypy"
        ;;
    bench)
        setup "all"
        "$VENV/bin/python" -m benchmarks.latency "$@"
        "$VENV/bin/python" -m benchmarks.hooks "$@"
        "$VENV/bin/python" -m benchmarks.retrieval --all --system both
        ;;
    *)
        sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'
        exit 2
        ;;
esac
