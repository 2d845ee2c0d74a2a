#!/usr/bin/env bash
# Scale and send-lateness cases of issue 13, each bounded in time; kills only
# the processes it started.
#
#   perf/scale.sh [--io epoll|uring] [--only c19|c60|late] [--bin PATH]
#
#   c19   one worker, 19,000 streams (ttft 2 s, tpot 1 s, 8 tokens) against
#         `serve --workers 2`: connections reached, startup, peak RSS / conn
#   c60   60,000 streams: 4 workers, --source-addrs 127.0.0.1-127.0.0.4,
#         `serve --workers 4 --max-connections 19000`
#   late  open loop, Poisson 20,000 req/s, non-streamed 8-token replies,
#         `--pin` (parent on cpu 0, the worker and the server on cpu 1):
#         send lateness p50/p99/max
#
# Results go to a temporary directory (printed); nothing else is written.
set -u

io=epoll
only=""
bin="$(dirname "$0")/../target/release/llmload"
while (($#)); do
    case "$1" in
        --io) io="$2"; shift ;;
        --only) only="$2"; shift ;;
        --bin) bin="$2"; shift ;;
        *) echo "usage: $0 [--io epoll|uring] [--only c19|c60|late] [--bin PATH]" >&2; exit 2 ;;
    esac
    shift
done
[[ -x "$bin" ]] || { echo "no binary at $bin (cargo build --release)" >&2; exit 2; }

out=$(mktemp -d /tmp/llmload-scale.XXXXXX)
started=()
stop_all() {
    for p in "${started[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${started[@]}"; do wait "$p" 2>/dev/null; done
    started=()
}
trap stop_all EXIT

# serve NAME PREFIX... -- ARGS: starts a server, sets $url.
serve() {
    local name=$1; shift
    local prefix=()
    while [[ $1 != -- ]]; do prefix+=("$1"); shift; done
    shift
    "${prefix[@]}" "$bin" serve --listen 127.0.0.1:0 "$@" >"$out/$name.serve" 2>&1 &
    started+=($!)
    for _ in $(seq 100); do
        [[ -s "$out/$name.serve" ]] && break
        sleep 0.1
    done
    url="http://$(head -1 "$out/$name.serve" | sed 's#^http://##')"
}

# bench NAME LIMIT_S ARGS: one bounded bench run into $out/NAME.
bench() {
    local name=$1 limit=$2; shift 2
    local t0=$(date +%s.%N)
    timeout --kill-after=5 "$limit" "$bin" bench --endpoint "$url" --model m --server-metrics off \
        --io "$io" --quiet --out "$out/$name" "$@" >"$out/$name.stdout" 2>"$out/$name.stderr"
    local rc=$?
    echo "[$name] exit $rc after $(echo "$(date +%s.%N) - $t0" | bc) s ($*)"
    [[ -s "$out/$name.stderr" ]] && sed 's/^/  stderr: /' "$out/$name.stderr" | head -5
}

# numbers NAME: what the summary says about scale and lateness.
numbers() {
    python3 - "$out/$1/summary.json" <<'EOF'
import json, sys
try:
    s = json.load(open(sys.argv[1]))
except OSError as e:
    print(f"  no summary: {e}"); sys.exit()
g, c, r = s["generator"], s["connections"], s["requests"]
rss = g.get("worker_max_rss_kib") or [0]
opened = c["opened"]
per_worker = max(1, opened // max(1, len(rss)))
lat = g["send_lateness_us"]
print(f"  io {g['io']['backend']}  connections opened {opened}  most in flight {g['max_inflight']}"
      f"  startup {g.get('startup_ms', 0):.0f} ms")
print(f"  requests issued {r['issued']} completed {r['completed']} failed {r['failed']} errors {r['errors']}")
print(f"  worker peak RSS {max(rss)/1024:.1f} MiB (largest of {len(rss)})"
      f"  = {max(rss)/per_worker:.1f} KiB per connection ({per_worker} per worker)")
print(f"  send lateness us: p50 {lat.get('p50')}  p99 {lat.get('p99')}  max {lat.get('max')}"
      f"  (count {lat.get('count')})")
print(f"  generator limits: {g['limits'] or 'none'}")
EOF
}

if [[ -z $only || $only == c19 ]]; then
    serve c19 -- --workers 2 --ttft 2s --tpot 1s
    bench c19 90 --concurrency 19000 --workers 1 --duration 12s --max-tokens 8
    numbers c19
    stop_all
fi

if [[ -z $only || $only == c60 ]]; then
    serve c60 -- --workers 4 --max-connections 19000 --ttft 2s --tpot 1s
    bench c60 150 --concurrency 60000 --workers 4 --source-addrs 127.0.0.1-127.0.0.4 \
        --duration 12s --max-tokens 8
    numbers c60
    stop_all
fi

if [[ -z $only || $only == late ]]; then
    # The server shares cpu 1 with the worker (--pin puts worker 0 there).
    serve late taskset -c 1 -- --workers 1 --ttft 0 --tpot 0 --output-tokens 8
    bench late 60 --rate 20000 --no-stream --max-tokens 8 --workers 1 --connections 512 \
        --duration 10s --pin
    numbers late
    stop_all
fi
echo "results in $out"
