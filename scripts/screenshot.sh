#!/usr/bin/env bash
# Screenshots the report.html of a sample run for the README: a three-stage
# rate ramp over two scenarios against the built-in endpoint, with --slo,
# fifteen seconds long, run with the release binary into a temporary directory;
# headless Chromium draws the top 2,400 px of the page at 1280 px wide into
# docs/img/report.png (or the path given).
#
#   scripts/screenshot.sh                  # docs/img/report.png
#   scripts/screenshot.sh /tmp/report.png
#
# Needs a headless Chromium (Debian: chromium-headless-shell) and a font
# (Debian: fonts-dejavu-core); builds the release binary when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
png="$(realpath -m "${1:-docs/img/report.png}")"

browser=""
for b in chromium-headless-shell chromium chromium-browser google-chrome google-chrome-stable; do
    if command -v "$b" >/dev/null; then browser="$(command -v "$b")"; break; fi
done
if [ -z "$browser" ]; then
    echo "screenshot.sh: no headless Chromium; install chromium-headless-shell" >&2
    exit 1
fi
if ! fc-list 2>/dev/null | grep -q .; then
    echo "screenshot.sh: warning: no fonts found (fonts-dejavu-core); text may not show" >&2
fi
[ -x target/release/llmload ] || cargo build --release

dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
cat > "$dir/sample.json" <<'JSON'
{
  "max_tokens": 64,
  "warmup": "0s",
  "seed": 1,
  "stages": [
    {"name": "r10", "rate": 10, "duration": "5s"},
    {"name": "r20", "rate": 20, "duration": "5s"},
    {"name": "r40", "rate": 40, "duration": "5s"}
  ],
  "scenarios": [
    {"name": "chat", "weight": 3},
    {"name": "summarize", "weight": 1, "content": {"mode": "sized", "approx_input_tokens": 400}}
  ]
}
JSON
target/release/llmload bench --profile "$dir/sample.json" --slo 'ttft=50ms,e2e=2s' \
    --out "$dir/run" --quiet --live-interval 0 >/dev/null
mkdir -p "$(dirname "$png")"
"$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$dir/profile" --window-size=1280,2400 --virtual-time-budget=3000 \
    --screenshot="$png" "file://$dir/run/report.html" 2>/dev/null
echo "$png"
