#!/usr/bin/env bash
# Runs every fuzz target in fuzz/fuzz_targets (or those named) for SECONDS
# each (default 20), or for N executions each with `--runs N`, and fails if
# any of them finds a crash or a slow input. Prints the executions and wall
# time of every target at the end.
#
#   scripts/fuzz-smoke.sh                 # 20 s per target
#   scripts/fuzz-smoke.sh 60 sse chunked  # 60 s, two targets
#   scripts/fuzz-smoke.sh --runs 10000000 # the campaign in docs/FUZZING.md
#
# Inputs go up to 1 MiB (the largest SSE event a worker accepts) and each
# one must finish within 2 s, so a parser that is quadratic in its input
# fails instead of merely running slowly; the protocol and scanner targets
# also run 1 MiB events of the shape that once made the JSON key scan
# quadratic. Uses the nightly toolchain with AddressSanitizer when one is
# installed, else stable without a sanitizer; FUZZ_SANITIZER=none forces the
# latter (about twice the executions per second). Installs cargo-fuzz when
# missing. Corpora grow in fuzz/corpus/TARGET, crashes land in
# fuzz/artifacts/TARGET.
set -euo pipefail

mode=(-max_total_time=20)
what="20s"
if [[ "${1:-}" == --runs ]]; then
    mode=(-runs="$2")
    what="$2 runs"
    shift 2
elif [[ "${1:-}" =~ ^[0-9]+$ ]]; then
    mode=(-max_total_time="$1")
    what="$1s"
    shift
fi
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz-smoke: installing cargo-fuzz (takes a few minutes)" >&2
    cargo install --locked cargo-fuzz
fi

if [[ "${FUZZ_SANITIZER:-}" != none ]] && rustup run nightly rustc --version >/dev/null 2>&1; then
    fuzz=(cargo +nightly fuzz run)
else
    fuzz=(cargo fuzz run -s none)
fi

targets=("$@")
if ((${#targets[@]} == 0)); then
    for path in fuzz/fuzz_targets/*.rs; do
        targets+=("$(basename "$path" .rs)")
    done
fi

# 1 MiB events of the worst shape for a key scan: a text, then a key nested
# in itself to the end. The first byte is the targets' selector (even: the
# scan oracle takes the bytes as they are). Each is run once, under the same
# time limit, before fuzzing; kept out of the corpus, where mutating 1 MiB
# inputs would slow every later execution.
hostile="$(mktemp -d)"
trap 'rm -rf "$hostile"' EXIT
for key in usage reasoning finish_reason meta_info delta error; do
    {
        printf '\002{"choices":[{"delta":{"content":"x"}}],"text":"x","%s":{' "$key"
        yes "\"$key\":{" | tr -d '\n' | head -c 1048000 || true
    } >"$hostile/$key"
done

# 1 MiB replies of the shapes that made the accuracy extractors quadratic
# (whitespace after "answer" with no letter to end it, unclosed calls and
# boxes), run once each through accuracy_extractors in the same way.
replies="$(mktemp -d)"
trap 'rm -rf "$hostile" "$replies"' EXIT
python3 - "$replies" <<'PY'
import os, sys
shapes = {"spaces": ("answer", " ", "x"), "newlines": ("Answer", " \n", "?"),
          "calls": ("", "f(", ""), "quoted": ("", "f('", ""), "boxes": ("", "\\boxed{", ""),
          "fences": ("", "```python\n", ""), "wraps": ("", "**A)", "")}
for name, (head, unit, tail) in shapes.items():
    n = (1048000 - len(head) - len(tail)) // len(unit)
    with open(os.path.join(sys.argv[1], name), "w") as f:
        f.write(head + unit * n + tail)
PY

logs="$(mktemp -d)"
trap 'rm -rf "$hostile" "$replies" "$logs"' EXIT
failed=()
summary=()
for target in "${targets[@]}"; do
    if [[ "$target" == protocol_events || "$target" == scan_oracle ]]; then
        echo "fuzz-smoke: ${target} on 1 MiB nested-key events" >&2
        if ! "${fuzz[@]}" "$target" "$hostile"/* -- -timeout=2 -runs=1; then
            failed+=("$target (nested-key events)")
            continue
        fi
    fi
    if [[ "$target" == accuracy_extractors ]]; then
        echo "fuzz-smoke: ${target} on 1 MiB degenerate replies" >&2
        if ! "${fuzz[@]}" "$target" "$replies"/* -- -timeout=2 -runs=1; then
            failed+=("$target (degenerate replies)")
            continue
        fi
    fi
    mkdir -p "fuzz/corpus/$target"
    # Committed seeds (real files of the format) start the corpus.
    if [[ -d "fuzz/seeds/$target" ]]; then
        cp -n "fuzz/seeds/$target"/* "fuzz/corpus/$target/"
    fi
    args=(-max_len=1048576 -timeout=2 -print_final_stats=1 "${mode[@]}")
    if [[ -f "fuzz/dict/${target}.dict" ]]; then
        args+=(-dict="$root/fuzz/dict/${target}.dict")
    fi
    echo "fuzz-smoke: ${target} for ${what} (${fuzz[*]} ${args[*]})" >&2
    start=$SECONDS
    status=ok
    if ! "${fuzz[@]}" "$target" -- "${args[@]}" 2>&1 | tee "$logs/$target" >&2; then
        status=FAILED
        failed+=("$target")
    fi
    # libFuzzer's final stats, or its "Done N runs" line.
    runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$logs/$target" | tail -1)"
    if [[ -z "$runs" ]]; then
        runs="$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$logs/$target" | tail -1)"
    fi
    summary+=("$(printf '%-20s %12s executions %7ss  %s' "$target" "${runs:-?}" $((SECONDS - start)) "$status")")
done

echo "fuzz-smoke: executions per target" >&2
printf '  %s\n' "${summary[@]}" >&2
if ((${#failed[@]})); then
    echo "fuzz-smoke: FAILED: ${failed[*]} (reproducers in fuzz/artifacts/)" >&2
    exit 1
fi
echo "fuzz-smoke: every target ran ${what} without a crash" >&2
