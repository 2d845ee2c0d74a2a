#!/usr/bin/env bash
# Side-by-side: llmload bench vs wrk against the same `llmload serve`.
#
# The server runs on CPU 0 with no TTFT/TPOT delay; each generator runs alone
# on CPU 1 with the same request body, connection count and duration. We
# report requests/s and the generator's CPU time per request (user + sys of
# its whole process tree, from GNU time), for a non-streamed response and for
# a 64-token streamed one. Speed is a ratio measured in one run on one
# machine, never an absolute number to assert.
#
# Usage: perf/compare.sh [DURATION_S] [CONNECTIONS]
set -euo pipefail
cd "$(dirname "$0")/.."

DUR=${1:-10}
CONNS=${2:-64}
PROMPT="Explain the difference between a process and a thread."

if ! command -v wrk >/dev/null; then
    echo "installing wrk from Debian packages..." >&2
    (apt-get update -qq && apt-get install -y -qq wrk) >&2
fi
if [ ! -x /usr/bin/time ]; then
    (apt-get update -qq && apt-get install -y -qq time) >&2
fi

cargo build --release --quiet
BIN=target/release/llmload
WORK=$(mktemp -d)
SERVER_PID=""
cleanup() {
    if [ -n "$SERVER_PID" ]; then kill -TERM "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT

start_server() { # $1: output tokens
    rm -f "$WORK/serve.out"
    taskset -c 0 "$BIN" serve --listen 127.0.0.1:0 --output-tokens "$1" >"$WORK/serve.out" &
    SERVER_PID=$!
    for _ in $(seq 100); do
        [ -s "$WORK/serve.out" ] && break
        sleep 0.05
    done
    ADDR=$(head -n1 "$WORK/serve.out")
}

stop_server() {
    kill -TERM "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=""
    tail -n1 "$WORK/serve.out" >"$WORK/serve.stats"
}

# CPU seconds (user+sys) of a command's process tree, via GNU time.
cpu_of() { # file written by time -f
    awk '{print $1 + $2}' "$1"
}

run_case() { # $1: label, $2: stream true|false, $3: output tokens
    local label=$1 stream=$2 tokens=$3
    start_server "$tokens"
    local body
    body=$(printf '{"max_completion_tokens":%d,"max_tokens":%d,"messages":[{"content":"%s","role":"user"}],"model":"m","stream":%s%s}' \
        "$tokens" "$tokens" "$PROMPT" "$stream" "$([ "$stream" = true ] && echo ',"stream_options":{"include_usage":true}')")
    cat >"$WORK/post.lua" <<LUA
wrk.method = "POST"
wrk.body = '$body'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["User-Agent"] = "llmload/0.1"
LUA
    printf '{"prompt": "%s"}\n' "$PROMPT" >"$WORK/prompt.jsonl"

    /usr/bin/time -f "%U %S" -o "$WORK/wrk.time" \
        taskset -c 1 wrk -t1 -c"$CONNS" -d"${DUR}s" -s "$WORK/post.lua" "http://$ADDR/v1/chat/completions" >"$WORK/wrk.out"
    local wrk_rps wrk_reqs wrk_cpu
    wrk_rps=$(awk '/Requests\/sec/ {print $2}' "$WORK/wrk.out")
    wrk_reqs=$(awk '/requests in/ {print $1}' "$WORK/wrk.out")
    wrk_cpu=$(cpu_of "$WORK/wrk.time")

    local flag=--no-stream
    [ "$stream" = true ] && flag=--stream
    /usr/bin/time -f "%U %S" -o "$WORK/ll.time" \
        taskset -c 1 "$BIN" bench --endpoint "http://$ADDR" --model m $flag --max-tokens "$tokens" \
        --dataset "$WORK/prompt.jsonl" --concurrency "$CONNS" --duration "${DUR}s" --workers 1 \
        --quiet --out "$WORK/ll" >/dev/null 2>"$WORK/ll.err"
    local ll_rps ll_reqs ll_cpu
    ll_rps=$(python3 -c "import json;print(round(json.load(open('$WORK/ll/summary.json'))['throughput']['requests_per_s']))")
    ll_reqs=$(python3 -c "import json;print(json.load(open('$WORK/ll/summary.json'))['requests']['completed'])")
    ll_cpu=$(cpu_of "$WORK/ll.time")
    stop_server

    python3 - "$label" "$wrk_rps" "$wrk_reqs" "$wrk_cpu" "$ll_rps" "$ll_reqs" "$ll_cpu" <<'PY'
import sys
label, wrps, wreqs, wcpu, lrps, lreqs, lcpu = sys.argv[1:]
w_us = float(wcpu) * 1e6 / max(int(wreqs), 1)
l_us = float(lcpu) * 1e6 / max(int(lreqs), 1)
print(f"{label:<22} wrk     {float(wrps):>10.0f} req/s  {w_us:6.2f} us CPU/req")
print(f"{'':<22} llmload {float(lrps):>10.0f} req/s  {l_us:6.2f} us CPU/req  (ratio llmload/wrk CPU/req {l_us / w_us:.2f})")
PY
}

echo "machine: $(nproc) CPUs, $(uname -r), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "server: llmload serve on CPU 0; generators on CPU 1; ${CONNS} connections, ${DUR}s each"
run_case "non-stream, 16 tok" false 16
run_case "stream, 64 tokens" true 64
