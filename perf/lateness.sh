#!/usr/bin/env bash
# Send lateness around the parent's once-a-second timeline tick, against the
# rest of each second: an open loop of many scenarios against `llmload serve
# --ttft 0 --tpot 0`, every request's `scheduled_ms` and `sent_ms` read back
# from events.jsonl, each send placed by how far its schedule falls after a
# whole second of the run (the tick closes the second that ended 2 s
# before). Per-second work in the parent's loop shows as late sends in the
# first milliseconds of each second. Runs once per binary in BINS
# (alternating, ROUNDS times), so two builds are compared on the same load.
#
# Usage: perf/lateness.sh [RATE] [DURATION_S] [SCENARIOS]
# Environment: BINS (default target/release/llmload), ROUNDS (1),
# WINDOW_MS (2: "near the tick" is the first WINDOW_MS of a second).
set -euo pipefail
cd "$(dirname "$0")/.."

RATE=${1:-3000}
DUR=${2:-20}
SCEN=${3:-16}
BINS=${BINS:-target/release/llmload}
ROUNDS=${ROUNDS:-1}
WINDOW_MS=${WINDOW_MS:-2}
WORK=$(mktemp -d)
source perf/serve.sh
trap 'serve_stop; rm -rf "$WORK"' EXIT

first=$(echo "$BINS" | awk '{print $1}')
serve_start "$WORK/serve.out" taskset -c 0 "$first" serve --listen 127.0.0.1:0 --ttft 0 --tpot 0 --output-tokens 16

python3 - "$WORK/run.json" "$RATE" "$DUR" "$SCEN" <<'EOF'
import json, sys
path, rate, dur, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
json.dump({
    "model": "m", "max_tokens": 16, "warmup": "0s", "live_interval": "0",
    "arrival": "poisson",
    "stages": [{"name": "open", "rate": rate, "duration": f"{dur}s"}],
    "scenarios": [{"name": f"s{i}", "weight": 1} for i in range(n)],
}, open(path, "w"))
EOF

echo "open loop ${RATE}/s for ${DUR}s, ${SCEN} scenarios, 1 worker on CPU 1, serve on CPU 0; near = first ${WINDOW_MS} ms of each second"
for round in $(seq "$ROUNDS"); do
    for bin in $BINS; do
        out="$WORK/out"
        rm -rf "$out"
        taskset -c 1 "$bin" bench --profile "$WORK/run.json" --endpoint "$URL" --workers 1 \
            --quiet --out "$out" >/dev/null
        python3 - "$out" "$WINDOW_MS" "$bin" "$round" <<'EOF'
import json, sys
out, window_ms, name, rnd = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
summary = json.load(open(f"{out}/summary.json"))
start_ms = summary["state"]["started_wall_ns"] / 1e6
near, rest = [], []
for line in open(f"{out}/events.jsonl"):
    e = json.loads(line)
    if e["sent_ms"] is None:
        continue
    late = e["sent_ms"] - e["scheduled_ms"]
    phase = (e["scheduled_ms"] - start_ms) % 1000.0
    (near if phase < window_ms else rest).append(late)
def row(v):
    if not v:
        return "n=      0  (no sends; run longer)"
    v = sorted(v)
    q = lambda p: v[min(len(v) - 1, int(p * len(v)))]
    return f"n={len(v):7d}  mean {sum(v) / len(v) * 1000:7.1f} us  p50 {q(0.5) * 1000:7.0f} us  p99 {q(0.99) * 1000:7.0f} us  max {v[-1] * 1000:7.0f} us"
print(f"round {rnd} {name}")
print(f"  near the tick: {row(near)}")
print(f"  elsewhere:     {row(rest)}")
EOF
    done
done
