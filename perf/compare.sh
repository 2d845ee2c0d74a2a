#!/usr/bin/env bash
# Side-by-side: llmload bench vs wrk against the same `llmload serve`.
#
# The server runs on CPU 0 with no TTFT/TPOT delay; each generator runs alone
# on CPU 1 with the same request body, connection count and duration. We
# report requests/s and the generator's CPU time per request (user + sys of
# its whole process tree, from GNU time), for a non-streamed response and for
# a 64-token streamed one, each over http and over https (wrk with OpenSSL,
# llmload with rustls, both keep-alive, the server `serve --tls-*`). Then the
# cost of a connection: both tools with a new connection per request over
# https, full handshakes (the server issues no tickets) and, for llmload,
# resumed ones. Speed is a ratio measured in one run on one machine, never
# an absolute number to assert. Each keep-alive case runs llmload once per
# I/O backend (`--io epoll`, `--io uring`; $BACKENDS to choose) after the
# same wrk run, and prints each one's ratio; CONNECTIONS may be a comma
# list (64,256), each count a pass of its own.
#
# Usage: perf/compare.sh [DURATION_S] [CONNECTIONS[,CONNECTIONS...]] [http|https|handshake|all]
# Environment: BIN (a built llmload to measure instead of building this tree), BACKENDS.
set -euo pipefail
cd "$(dirname "$0")/.."

DUR=${1:-10}
CONNS_LIST=${2:-64}
WHICH=${3:-all}
BACKENDS=${BACKENDS:-epoll uring}
PROMPT="Explain the difference between a process and a thread."

if ! command -v wrk >/dev/null; then
    echo "installing wrk from Debian packages..." >&2
    (apt-get update -qq && apt-get install -y -qq wrk) >&2
fi
if [ ! -x /usr/bin/time ]; then
    (apt-get update -qq && apt-get install -y -qq time) >&2
fi

# BIN=path compares another build (e.g. a base binary) without building.
if [ -z "${BIN:-}" ]; then
    cargo build --release --quiet
    BIN=target/release/llmload
fi
WORK=$(mktemp -d)
source perf/serve.sh
trap 'serve_stop; rm -rf "$WORK"' EXIT

# A CA and a leaf for 127.0.0.1, made fresh (P-256, as most servers use).
make_pki() {
    local d=$WORK/pki
    mkdir -p "$d"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
        -subj "/CN=compare CA" -keyout "$d/ca.key" -out "$d/ca.pem" 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
        -subj "/CN=127.0.0.1" -keyout "$d/server.key" -out "$d/server.csr" 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >"$d/ext"
    openssl x509 -req -in "$d/server.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial \
        -days 2 -extfile "$d/ext" -out "$d/server.pem" 2>/dev/null
    TLS_SERVE=(--tls-cert "$d/server.pem" --tls-key "$d/server.key")
    TLS_BENCH=(--ca-cert "$d/ca.pem")
}

start_server() { # $1: output tokens, then extra serve flags
    local tokens=$1
    shift
    serve_start "$WORK/serve.out" taskset -c 0 "$BIN" serve --listen 127.0.0.1:0 --output-tokens "$tokens" "$@"
}

stop_server() {
    serve_stop
    tail -n1 "$WORK/serve.out" >"$WORK/serve.stats"
}

# CPU seconds (user+sys) of a command's process tree, via GNU time.
cpu_of() { # file written by time -f
    awk '{print $1 + $2}' "$1"
}

run_case() { # $1: label, $2: stream true|false, $3: output tokens, $4: http|https
    local label=$1 stream=$2 tokens=$3 scheme=${4:-http}
    local serve_tls=() bench_tls=()
    if [ "$scheme" = https ]; then serve_tls=("${TLS_SERVE[@]}"); bench_tls=("${TLS_BENCH[@]}"); fi
    start_server "$tokens" "${serve_tls[@]}"
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
        taskset -c 1 wrk -t1 -c"$CONNS" -d"${DUR}s" -s "$WORK/post.lua" "$scheme://$ADDR/v1/chat/completions" >"$WORK/wrk.out"
    local wrk_rps wrk_reqs wrk_cpu
    wrk_rps=$(awk '/Requests\/sec/ {print $2}' "$WORK/wrk.out")
    wrk_reqs=$(awk '/requests in/ {print $1}' "$WORK/wrk.out")
    wrk_cpu=$(cpu_of "$WORK/wrk.time")

    local flag=--no-stream
    [ "$stream" = true ] && flag=--stream
    local results=()
    for io in $BACKENDS; do
        /usr/bin/time -f "%U %S" -o "$WORK/ll.time" \
            taskset -c 1 "$BIN" bench --endpoint "$scheme://$ADDR" "${bench_tls[@]}" --model m $flag --max-tokens "$tokens" \
            --dataset "$WORK/prompt.jsonl" --concurrency "$CONNS" --duration "${DUR}s" --workers 1 \
            --io "$io" --quiet --out "$WORK/ll-$io" >/dev/null 2>"$WORK/ll.err"
        results+=("$io" "$(python3 -c "import json;print(round(json.load(open('$WORK/ll-$io/summary.json'))['throughput']['requests_per_s']))")" \
            "$(python3 -c "import json;print(json.load(open('$WORK/ll-$io/summary.json'))['requests']['completed'])")" \
            "$(cpu_of "$WORK/ll.time")")
    done
    stop_server

    python3 - "$label" "$wrk_rps" "$wrk_reqs" "$wrk_cpu" "${results[@]}" <<'PY'
import sys
label, wrps, wreqs, wcpu = sys.argv[1:5]
rest = sys.argv[5:]
w_us = float(wcpu) * 1e6 / max(int(wreqs), 1)
print(f"{label:<22} wrk           {float(wrps):>10.0f} req/s  {w_us:6.2f} us CPU/req")
for k in range(0, len(rest), 4):
    io, lrps, lreqs, lcpu = rest[k:k + 4]
    l_us = float(lcpu) * 1e6 / max(int(lreqs), 1)
    print(f"{'':<22} llmload {io:<5} {float(lrps):>10.0f} req/s  {l_us:6.2f} us CPU/req  (ratio llmload/wrk CPU/req {l_us / w_us:.2f})")
PY
}

# A new connection per request over https: CPU per connection (a request
# rides on each) for both tools, full handshakes; then llmload resumed.
handshake_case() { # $1: label, $2: resumed|full
    local label=$1 kind=$2 extra=()
    [ "$kind" = full ] && extra=(--tls-no-resumption)
    start_server 16 "${TLS_SERVE[@]}" "${extra[@]}"
    printf '{"prompt": "%s"}\n' "$PROMPT" >"$WORK/prompt.jsonl"
    local wrk_rps=0 wrk_reqs=1 wrk_cpu=0
    if [ "$kind" = full ]; then
        cat >"$WORK/close.lua" <<LUA
wrk.method = "POST"
wrk.body = '{"max_tokens":16,"messages":[{"content":"$PROMPT","role":"user"}],"model":"m","stream":false}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Connection"] = "close"
LUA
        /usr/bin/time -f "%U %S" -o "$WORK/wrk.time" \
            taskset -c 1 wrk -t1 -c"$CONNS" -d"${DUR}s" -s "$WORK/close.lua" "https://$ADDR/v1/chat/completions" >"$WORK/wrk.out"
        wrk_rps=$(awk '/Requests\/sec/ {print $2}' "$WORK/wrk.out")
        wrk_reqs=$(awk '/requests in/ {print $1}' "$WORK/wrk.out")
        wrk_cpu=$(cpu_of "$WORK/wrk.time")
    fi
    /usr/bin/time -f "%U %S" -o "$WORK/ll.time" \
        taskset -c 1 "$BIN" bench --endpoint "https://$ADDR" "${TLS_BENCH[@]}" --keep-alive false \
        --model m --no-stream --max-tokens 16 --dataset "$WORK/prompt.jsonl" --concurrency "$CONNS" \
        --duration "${DUR}s" --workers 1 --quiet --out "$WORK/hs" >/dev/null 2>"$WORK/ll.err"
    local ll_cpu
    ll_cpu=$(cpu_of "$WORK/ll.time")
    stop_server
    python3 - "$label" "$kind" "$wrk_rps" "$wrk_reqs" "$wrk_cpu" "$ll_cpu" "$WORK/hs/summary.json" <<'PY'
import json, sys
label, kind, wrps, wreqs, wcpu, lcpu, path = sys.argv[1:]
s = json.load(open(path))
c = s["connections"]
n = max(int(s["requests"]["completed"]), 1)
l_us = float(lcpu) * 1e6 / n
hs = c.get("tls_handshake_ms", {})
print(f"{label:<22} llmload {c['connects_per_s']:>10.0f} conn/s {l_us:6.1f} us CPU/conn  "
      f"opened {c['opened']} resumed {c['resumed']} failed {c['failed']}  "
      f"handshake p50 {hs.get('p50', 0):.3f} ms p99 {hs.get('p99', 0):.3f} ms")
if kind == "full":
    w_us = float(wcpu) * 1e6 / max(int(wreqs), 1)
    print(f"{'':<22} wrk     {float(wrps):>10.0f} conn/s {w_us:6.1f} us CPU/conn  (ratio llmload/wrk {l_us / w_us:.2f})")
PY
}

echo "machine: $(nproc) CPUs, $(uname -r), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
case $WHICH in http|https|handshake|all) ;; *) echo "unknown case set '$WHICH'" >&2; exit 2 ;; esac
for CONNS in ${CONNS_LIST//,/ }; do
echo "server: llmload serve on CPU 0; generators on CPU 1; ${CONNS} connections, ${DUR}s each; backends: $BACKENDS"
if [ "$WHICH" = http ] || [ "$WHICH" = all ]; then
    run_case "non-stream, 16 tok" false 16
    run_case "stream, 64 tokens" true 64
fi
if [ "$WHICH" != http ]; then
    command -v openssl >/dev/null || (apt-get update -qq && apt-get install -y -qq openssl) >&2
    make_pki
fi
if [ "$WHICH" = https ] || [ "$WHICH" = all ]; then
    run_case "https non-stream 16" false 16 https
    run_case "https stream 64" true 64 https
fi
if [ "$WHICH" = handshake ] || [ "$WHICH" = all ]; then
    handshake_case "new conn, full hs" full
    handshake_case "new conn, resumed" resumed
fi
done
