#!/usr/bin/env bash
# Runs every fuzz target in fuzz/fuzz_targets for SECONDS each (default 20)
# and fails if any of them finds a crash. Installs cargo-fuzz when missing.
# Uses the nightly toolchain (with AddressSanitizer) when one is installed,
# else stable without a sanitizer.
set -euo pipefail

seconds="${1:-20}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz-smoke: installing cargo-fuzz (takes a few minutes)" >&2
    cargo install --locked cargo-fuzz
fi

if rustup run nightly rustc --version >/dev/null 2>&1; then
    fuzz=(cargo +nightly fuzz run)
else
    fuzz=(cargo fuzz run -s none)
fi

failed=()
for path in fuzz/fuzz_targets/*.rs; do
    target="$(basename "$path" .rs)"
    echo "fuzz-smoke: ${target} for ${seconds}s (${fuzz[*]})" >&2
    args=(-max_total_time="$seconds")
    if [[ -f "fuzz/dict/${target}.dict" ]]; then
        args+=(-dict="$root/fuzz/dict/${target}.dict")
    fi
    if ! "${fuzz[@]}" "$target" -- "${args[@]}"; then
        failed+=("$target")
    fi
done

if ((${#failed[@]})); then
    echo "fuzz-smoke: FAILED: ${failed[*]} (reproducers in fuzz/artifacts/)" >&2
    exit 1
fi
echo "fuzz-smoke: all targets ran ${seconds}s without a crash" >&2
