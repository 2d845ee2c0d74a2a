#!/usr/bin/env bash
# Instructions per request of the parent and of the worker: callgrind over a
# whole `bench` run at two request counts against `llmload serve --ttft 0
# --tpot 0`, and the slope between them (so start-up and the end's one-off
# work cancel out). The parent's file is the lowest pid's (its threads, the
# events sink among them, count with it); the worker's is the other one.
# Instruction counts do not depend on the machine's load, but per-second
# work does show up per request: under valgrind a run lasts ~50 times as
# long.
#
# Usage: perf/slope.sh [BENCH FLAGS...]   (e.g. --no-stream)
# Environment: BIN (default target/release/llmload), R1/R2 (2000/4000),
# KEEP=DIR keeps the callgrind files (DIR/R1, DIR/R2) for callgrind_annotate.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${BIN:-target/release/llmload}
R1=${R1:-2000}
R2=${R2:-4000}
WORK=${KEEP:-$(mktemp -d)}
mkdir -p "$WORK"
source perf/serve.sh
cleanup() {
    serve_stop
    if [ -z "${KEEP:-}" ]; then rm -rf "$WORK"; fi
}
trap cleanup EXIT

serve_start "$WORK/serve.out" "$BIN" serve --listen 127.0.0.1:0 --ttft 0 --tpot 0

total() { # the `summary:` (or `totals:`) line of a callgrind file
    awk '/^(summary|totals):/ { print $2; exit }' "$1"
}

declare -A PARENT WORKER
for R in "$R1" "$R2"; do
    rm -rf "$WORK/$R"
    mkdir -p "$WORK/$R"
    valgrind --tool=callgrind --trace-children=yes \
        --callgrind-out-file="$WORK/$R/callgrind.out.%p" \
        "$BIN" bench --endpoint "$URL" --requests "$R" --concurrency 8 --workers 1 \
        --quiet --out "$WORK/$R/out" "$@" >/dev/null 2>"$WORK/$R/valgrind.log"
    files=$(ls "$WORK/$R"/callgrind.out.* | sort -t. -k3 -n)
    parent=$(echo "$files" | head -n1)
    worker=$(echo "$files" | sed -n 2p)
    PARENT[$R]=$(total "$parent")
    WORKER[$R]=$(total "$worker")
    echo "R=$R parent ${PARENT[$R]} ($parent) worker ${WORKER[$R]} ($worker)"
done
echo "parent per request: $(( (PARENT[$R2] - PARENT[$R1]) / (R2 - R1) ))"
echo "worker per request: $(( (WORKER[$R2] - WORKER[$R1]) / (R2 - R1) ))"
