#!/usr/bin/env bash
# Runs every fuzz target for a short while (default 20 s each): `fuzz/smoke.sh [SECONDS]`.
# Needs the nightly toolchain and cargo-fuzz (`rustup toolchain install nightly`,
# `cargo install cargo-fuzz`). Without them it says so and exits 0, unless
# FUZZ_REQUIRED=1 (CI sets it after installing both), where it fails. A crash makes it
# exit non-zero and leaves the input under fuzz/artifacts/<target>/.
set -euo pipefail
secs="${1:-20}"
here="$(cd "$(dirname "$0")" && pwd)"
missing() {
    if [ "${FUZZ_REQUIRED:-0}" = 1 ]; then
        echo "fuzz smoke: FAILED: $1" >&2
        exit 1
    fi
    echo "fuzz smoke: skipped ($1)"
    exit 0
}
if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    missing "no nightly toolchain; install with 'rustup toolchain install nightly'"
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    missing "cargo-fuzz not installed; 'cargo install cargo-fuzz'"
fi
# Keep fuzz builds apart from the stable build's artifacts.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$here/target}/fuzz"
cd "$here"
targets=(wal_record commit_payload segment manifest key_index text_sections text_analyzer vector_sections
    mcp_tool_call)
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t"
    # Inputs that once crashed or hung a target and hand-made starting points (both kept
    # in git) run first, every time.
    for kept in "regressions/$t" "seeds/$t"; do
        if [ -d "$kept" ]; then
            cp -n "$kept"/* "corpus/$t/"
        fi
    done
    echo "fuzz smoke: $t for ${secs}s"
    log="$CARGO_TARGET_DIR/smoke-$t.log"
    mkdir -p "$CARGO_TARGET_DIR"
    if ! cargo +nightly fuzz run "$t" "corpus/$t" -- -max_total_time="$secs" -max_len=65536 \
        -rss_limit_mb=2048 -timeout=10 >"$log" 2>&1; then
        tail -n 40 "$log"
        echo "fuzz smoke: $t FAILED (crash input in fuzz/artifacts/$t/, log $log)"
        exit 1
    fi
    grep -E "^#[0-9]+ +DONE" "$log" || tail -n 3 "$log"
done
echo "fuzz smoke: ${#targets[@]} targets ran ${secs}s each, no crash"
