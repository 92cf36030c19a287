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

# The extras an extra stands for: a venv set up with more is reused when less is asked for.
expand_extras() {
    local e out=""
    for e in ${1//,/ }; do
        case "$e" in
            all) out="$out all local query sentence-transformers rerank hosted mcp team code dev" ;;
            dev) out="$out dev code" ;;
            sentence-transformers) out="$out sentence-transformers local query" ;;
            local) out="$out local query" ;;
            *) out="$out $e" ;;
        esac
    done
    echo "$out"
}

# covers HAVE WANT: every extra WANT stands for is among those HAVE stands for.
covers() {
    local e have
    have=" $(expand_extras "$1") "
    for e in $(expand_extras "$2"); do
        case "$have" in *" $e "*) ;; *) return 1 ;; esac
    done
}

setup() {
    local extras="$1" marker="$VENV/.cortex-setup" digest have="" recorded
    digest="$("$PYTHON" -c 'import hashlib,sys;print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest()[:16])' < pyproject.toml)"
    # The marker reads DIGEST-EXTRAS: what is installed, for this pyproject.toml.
    if [ -f "$marker" ] && [ -x "$VENV/bin/python" ]; then
        recorded="$(cat "$marker")"
        if [ "${recorded%%-*}" = "$digest" ]; then
            have="${recorded#*-}"
            if covers "$have" "$extras"; then
                return 0
            fi
        fi
    fi
    "$PYTHON" - <<'PY'
import sys
if sys.version_info < (3, 11):
    sys.exit(f"cortex needs Python >= 3.11; {sys.executable} is {sys.version.split()[0]} (set PYTHON=...)")
PY
    if [ -x "$VENV/bin/python" ]; then
        echo "adding cortex[$extras] to $VENV" >&2
    else
        echo "setting up $VENV with cortex[$extras] (one time; later runs reuse it)" >&2
        "$PYTHON" -m venv "$VENV"
    fi
    # torch (sentence-transformers' parity path only) first and pinned: a bare requirement would
    # pull a multi-GB CUDA build. The default local embedder needs no torch.
    if covers "$extras" sentence-transformers && ! covers "$have" sentence-transformers; then
        "$VENV/bin/pip" install --quiet --disable-pip-version-check "torch==2.13.0"
    fi
    # pip installs only what is missing; what is there already stays.
    "$VENV/bin/pip" install --quiet --disable-pip-version-check -e ".[$extras]"
    echo "$digest-${have:+$have,}$extras" > "$marker"
}

# The real Claude Code CLI the claude-cli tests drive, pinned in tests/support/claude_cli.py and
# installed into the git-ignored .cache/npm (never globally). No npm: stop and say so, never skip.
ensure_claude_cli() {
    local version bin=".cache/npm/node_modules/.bin/claude"
    version="$(sed -n 's/^CLAUDE_VERSION = "\([^"]*\)".*/\1/p' tests/support/claude_cli.py)"
    if [ -z "$version" ]; then
        echo "scripts/dev.sh: no CLAUDE_VERSION pin in tests/support/claude_cli.py" >&2
        exit 1
    fi
    if [ -x "$bin" ] && [ "$("$bin" --version 2>/dev/null | cut -d' ' -f1)" = "$version" ]; then
        return 0
    fi
    if ! command -v npm >/dev/null 2>&1; then
        echo "scripts/dev.sh test: npm is not installed, and the tests drive the real Claude Code CLI" >&2
        echo "  (@anthropic-ai/claude-code@$version in .cache/npm). Install Node.js and npm, then rerun." >&2
        exit 1
    fi
    echo "installing @anthropic-ai/claude-code@$version into .cache/npm (one time)" >&2
    mkdir -p .cache/npm
    npm install --prefix .cache/npm --no-audit --no-fund --loglevel=error \
        "@anthropic-ai/claude-code@$version" >&2 || {
        echo "scripts/dev.sh test: npm could not install @anthropic-ai/claude-code@$version (see above)" >&2
        exit 1
    }
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
        ensure_claude_cli
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
