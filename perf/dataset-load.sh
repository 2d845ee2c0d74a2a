#!/usr/bin/env bash
# Measures loading a large JSONL dataset: wall time and peak RSS of
#   llmload bench --dataset FILE --requests 1 --concurrency 1 --out TMP --quiet
# which starts the built-in endpoint, loads and serializes every line into
# the request arena, and sends one request. Peak RSS is reported against the
# file size (the arena holds every request, so ~1x is the floor).
#
# Usage: perf/dataset-load.sh [SIZE_MB] [--clean]
#   SIZE_MB  size of the generated file (default 1024)
#   --clean  delete the generated file afterwards (it is kept for reruns
#            otherwise)
# The file lives in $DATASET_DIR (default $TMPDIR or /tmp,
# llmload-dataset-perf/) and is generated only when missing: lines of
# 1-4 KB of varied text with JSON escapes (quotes, backslashes, newlines,
# tabs, \u escapes and raw UTF-8), about a third with a system prompt and
# half with max_tokens.
set -euo pipefail

size_mb=1024
clean=0
for arg in "$@"; do
    case "$arg" in
        --clean) clean=1 ;;
        *[!0-9]* | "") echo "usage: $0 [SIZE_MB] [--clean]" >&2; exit 2 ;;
        *) size_mb="$arg" ;;
    esac
done

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${DATASET_DIR:-${TMPDIR:-/tmp}/llmload-dataset-perf}"
file="$dir/prompts-${size_mb}m.jsonl"
mkdir -p "$dir"

if [[ ! -x /usr/bin/time ]]; then
    echo "dataset-load: installing GNU time" >&2
    if [[ $(id -u) -eq 0 ]]; then apt-get install -y time >/dev/null; else sudo apt-get install -y time >/dev/null; fi
fi

if [[ ! -s "$file" ]]; then
    echo "dataset-load: generating $file (${size_mb} MB)" >&2
    python3 - "$file" "$size_mb" <<'PY'
import json, random, sys

path, size_mb = sys.argv[1], int(sys.argv[2])
target = size_mb * 1024 * 1024
rng = random.Random(20261129)
words = ("the of and to in is that for it as was with be by on not this are or from at which but "
         "have an they you were her she there one all we their has been if more when will would who "
         "latency throughput token stream server request response cache model prompt answer "
         "garden river mountain window kitchen winter summer bridge station harbor engine").split()
odd = ['"quoted"', 'back\\slash', 'tab\there', 'new\nline', 'caf\u00e9', '\u4e2d\u6587', '\U0001F680',
       'x < y && z > 0', '{"json": [1, 2]}', 'C:\\path\\to', '\u00fcber', 'na\u00efve']
systems = ["You are a helpful assistant.", "Answer in one \"short\" paragraph.\nBe precise.",
           "R\u00e9ponds en fran\u00e7ais.", "You are a terse\tassistant."]
written = 0
n = 0
with open(path, "w", encoding="utf-8") as f:
    buf = []
    while written < target:
        want = rng.randint(1000, 4000)
        parts = [f"Request {n}:"]
        length = len(parts[0])
        while length < want:
            w = rng.choice(odd) if rng.random() < 0.08 else rng.choice(words)
            parts.append(w)
            length += len(w) + 1
        row = {"id": n, "prompt": " ".join(parts)}
        if rng.random() < 0.33:
            row["system"] = rng.choice(systems)
        if rng.random() < 0.5:
            row["max_tokens"] = rng.randint(16, 1024)
        line = json.dumps(row, ensure_ascii=(n % 2 == 0)) + "\n"
        buf.append(line)
        written += len(line.encode("utf-8"))
        n += 1
        if len(buf) >= 4096:
            f.write("".join(buf))
            buf.clear()
    f.write("".join(buf))
print(f"dataset-load: {n} lines, {written / 1e6:.0f} MB", file=sys.stderr)
PY
fi

(cd "$root" && cargo build --release --quiet)
bin="$root/target/release/llmload"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

bytes=$(stat -c %s "$file")
lines=$(wc -l <"$file")
echo "dataset-load: $file: $((bytes / 1024 / 1024)) MiB, $lines lines" >&2
# Drop nothing from the page cache: a warm read is what a rerun sees, and
# the point is the parser and the arena, not the disk.
cat "$file" >/dev/null

/usr/bin/time -v -o "$out/time.txt" \
    "$bin" bench --dataset "$file,system=system,max_tokens=max_tokens" \
    --requests 1 --concurrency 1 --out "$out/run" --quiet

wall=$(sed -n 's/^\tElapsed (wall clock) time (h:mm:ss or m:ss): //p' "$out/time.txt")
rss_kb=$(sed -n 's/^\tMaximum resident set size (kbytes): //p' "$out/time.txt")
user=$(sed -n 's/^\tUser time (seconds): //p' "$out/time.txt")
sys=$(sed -n 's/^\tSystem time (seconds): //p' "$out/time.txt")
read -r samples startup_ms < <(python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
print(s["dataset"]["samples"], round(s["generator"]["startup_ms"]))' "$out/run/summary.json")
echo
echo "file:        $bytes bytes ($lines lines), samples loaded: $samples"
echo "wall:        $wall  (user ${user}s, sys ${sys}s); start to first request ${startup_ms} ms"
awk -v rss="$rss_kb" -v b="$bytes" 'BEGIN {
    printf "peak RSS:    %.0f MiB = %.2fx the file size\n", rss / 1024, rss * 1024 / b
}'

if ((clean)); then
    rm -f "$file"
    rmdir "$dir" 2>/dev/null || true
fi
