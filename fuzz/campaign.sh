#!/usr/bin/env bash
# A long fuzz campaign: `fuzz/campaign.sh [CPU_SECONDS_PER_TARGET] [ROUND_SECONDS]`
# (defaults 3600 and 600). Runs one target at a time at low priority (nice 19), always the
# one with the least CPU time so far, in rounds of ROUND_SECONDS of wall time (shorter
# when the target needs less to reach its goal), until every target has
# CPU_SECONDS_PER_TARGET of CPU time (user + system, measured by /usr/bin/time,
# so time the machine spent on other work does not count). Safe to stop and start again:
# the totals are kept in a ledger (fuzz/target/campaign-ledger.tsv: target, CPU seconds,
# executions, rounds, crashes) and the corpora in fuzz/corpus/<target>/.
#
# A crash does not stop the campaign: the input goes to fuzz/artifacts/<target>/, the
# ledger counts it, and the target is left out of later rounds until the input is looked
# at (fix the bug, move the input to fuzz/regressions/<target>/, delete the artifact).
# FUZZ_TARGETS="a b" restricts a campaign to those targets, so two campaigns on disjoint
# subsets can share one ledger (its updates take a lock). FUZZ_BUILD=0 skips the build
# and fuzzes the binaries of the last one (to resume a campaign without rebuilding after
# a change elsewhere). Needs what smoke.sh needs (nightly + cargo-fuzz).
set -euo pipefail
goal="${1:-3600}"
round="${2:-600}"
here="$(cd "$(dirname "$0")" && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$here/target}/fuzz"
cd "$here"
targets=(wal_record commit_payload segment manifest key_index text_sections text_analyzer vector_sections
    mcp_tool_call)
if [ -n "${FUZZ_TARGETS:-}" ]; then
    # A subset, e.g. to run two campaigns side by side on disjoint targets:
    # FUZZ_TARGETS="wal_record segment" bash fuzz/campaign.sh
    read -r -a targets <<<"$FUZZ_TARGETS"
fi
# nice 19 only orders processes within one scheduler autogroup (one per session, with
# Linux's autogroup scheduling); a campaign started in its own session (`setsid`) also
# lowers its autogroup, or it takes an equal share of the CPU against the rest of the
# machine. Not when it shares the caller's session: that would lower the caller too.
if [ "$(ps -o sid= -p $$ | tr -d ' ')" = "$$" ] && [ -w /proc/self/autogroup ]; then
    echo 19 >/proc/self/autogroup 2>/dev/null || true
fi
ledger="$here/target/campaign-ledger.tsv"
mkdir -p "$here/target"
touch "$ledger"
if [ "${FUZZ_BUILD:-1}" != 0 ]; then
    nice -n 19 cargo +nightly fuzz build >"$here/target/campaign-build.log" 2>&1 || {
        tail -n 30 "$here/target/campaign-build.log"
        exit 1
    }
fi
bin_dir="$CARGO_TARGET_DIR/x86_64-unknown-linux-gnu/release"
field() { # field TARGET COLUMN: the ledger's value (0 when absent)
    awk -F'\t' -v t="$1" -v c="$2" '$1 == t { v = $c } END { print v + 0 }' "$ledger"
}
while true; do
    pick=""
    least=""
    for t in "${targets[@]}"; do
        # A crash, leak, timeout or out-of-memory input waits to be looked at. libFuzzer's
        # slow-unit-* reports are not failures (a unit's wall time also counts time the
        # process spent stopped or starved) and do not hold a target back.
        if [ -n "$(ls -A "artifacts/$t" 2>/dev/null | grep -v '^slow-unit-')" ]; then
            continue
        fi
        cpu=$(field "$t" 2)
        if awk -v c="$cpu" -v g="$goal" 'BEGIN { exit !(c < g) }' &&
            { [ -z "$least" ] || awk -v c="$cpu" -v l="$least" 'BEGIN { exit !(c < l) }'; }; then
            pick=$t
            least=$cpu
        fi
    done
    if [ -z "$pick" ]; then
        break
    fi
    mkdir -p "corpus/$pick" "artifacts/$pick"
    for kept in "regressions/$pick" "seeds/$pick"; do
        if [ -d "$kept" ]; then
            cp -n "$kept"/* "corpus/$pick/"
        fi
    done
    log="$here/target/campaign-$pick.log"
    # A round need not outlast the target's goal: its remaining CPU time, plus a margin
    # (a fuzzer gets a little less CPU than wall time), and at least a minute.
    wall=$(awk -v g="$goal" -v c="$least" -v r="$round" \
        'BEGIN { w = int((g - c) * 1.1) + 10; if (w < 60) w = 60; if (w > r) w = r; print w }')
    status=0
    timing="$here/target/campaign-$pick.time"
    /usr/bin/time -f '%U %S' -o "$timing" \
        nice -n 19 "$bin_dir/$pick" "corpus/$pick" -max_total_time="$wall" -max_len=65536 \
        -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
        -artifact_prefix="artifacts/$pick/" >"$log" 2>&1 || status=$?
    used=$(awk '{ print $1 + $2 }' "$timing" | tail -n 1)
    runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo 0)
    # A timeout is measured in wall time, so a round that was stopped (SIGSTOP, to
    # measure something else) or starved reports units that are not slow. Such an input
    # is run again on its own: when it finishes well within the timeout, it is set aside
    # (target/campaign-spurious/) and the round does not count as a failure.
    if [ "$status" != 0 ]; then
        spurious=1
        for input in "artifacts/$pick"/*; do
            case "$(basename "$input")" in
            slow-unit-*) ;;
            timeout-*)
                if timeout 60 "$bin_dir/$pick" -timeout=10 "$input" >/dev/null 2>&1; then
                    mkdir -p "$here/target/campaign-spurious"
                    mv "$input" "$here/target/campaign-spurious/$pick-$(basename "$input")"
                    echo "campaign: $pick: $(basename "$input") runs in time alone; set aside"
                else
                    spurious=0
                fi
                ;;
            *) spurious=0 ;;
            esac
        done
        if [ "$spurious" = 1 ]; then
            status=0
        fi
    fi
    crash=0
    if [ "$status" != 0 ]; then
        crash=1
        echo "campaign: $pick FAILED (exit $status; input in fuzz/artifacts/$pick/, log $log)"
        tail -n 20 "$log"
    fi
    (
        flock 9
        awk -F'\t' -v OFS='\t' -v t="$pick" -v u="$used" -v r="${runs:-0}" -v k="$crash" '
            $1 == t { $2 += u; $3 += r; $4 += 1; $5 += k; found = 1 } { print }
            END { if (!found) print t, u, r, 1, k }' "$ledger" >"$ledger.new.$$"
        mv "$ledger.new.$$" "$ledger"
    ) 9>"$ledger.lock"
    echo "campaign: $pick +${used}s CPU, $(field "$pick" 2)s total, $(field "$pick" 3) executions"
done
echo "campaign: done (goal ${goal}s CPU per target)"
column -t -s $'\t' "$ledger"
