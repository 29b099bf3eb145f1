#!/usr/bin/env bash
# Runs every fuzz target for a short while (default 20 s each): `fuzz/smoke.sh [SECONDS]`.
# Exits 0 with a message when the nightly toolchain or cargo-fuzz is missing, so CI on a
# machine without them still passes; a crash makes it exit non-zero and leaves the input
# under fuzz/artifacts/<target>/.
set -euo pipefail
secs="${1:-20}"
here="$(cd "$(dirname "$0")" && pwd)"
if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    echo "fuzz smoke: skipped (no nightly toolchain; install with 'rustup toolchain install nightly')"
    exit 0
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "fuzz smoke: skipped (cargo-fuzz not installed; 'cargo install cargo-fuzz')"
    exit 0
fi
# Keep fuzz builds apart from the stable build's artifacts.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$here/target}/fuzz"
cd "$here"
targets=(wal_record commit_payload segment manifest text_sections text_analyzer vector_sections)
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t"
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
