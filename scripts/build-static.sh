#!/usr/bin/env bash
# Builds the shipped llmload binary: statically linked against glibc, with the
# `dist` profile (fat LTO, one codegen unit, stripped). Progress goes to
# stderr; the last line on stdout is the binary's path, so callers can do
#   bin=$(scripts/build-static.sh | tail -n1)
#
# The explicit --target matters: with it, RUSTFLAGS reach only the target
# crates, so +crt-static stays away from proc-macro crates and build scripts,
# which must be dynamic libraries/executables for the host and fail to build
# otherwise.
#
# Environment: LLMLOAD_TARGET overrides the target triple (default
# x86_64-unknown-linux-gnu); RUSTFLAGS already set are kept and extended.
set -euo pipefail

target="${LLMLOAD_TARGET:-x86_64-unknown-linux-gnu}"
profile=dist

say() { printf 'build-static: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

repo="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)"
cd -- "$repo"
[[ -f Cargo.toml ]] || die "no Cargo.toml in $repo"
command -v cargo >/dev/null || die "cargo not found in PATH"
command -v ldd >/dev/null || die "ldd not found in PATH (needed to verify static linking)"

# The target's std must be installed for an explicit --target build.
if command -v rustup >/dev/null; then
    if ! rustup target list --installed | grep -qxF "$target"; then
        say "installing the Rust standard library for $target (rustup target add)"
        rustup target add "$target" >&2
    fi
else
    sysroot="$(rustc --print sysroot)"
    [[ -d "$sysroot/lib/rustlib/$target/lib" ]] \
        || die "std for $target is not installed in $sysroot and rustup is not available"
fi

# Honour CARGO_TARGET_DIR / build.target-dir: ask cargo where artifacts go.
target_dir="$(cargo metadata --format-version 1 --no-deps \
    | grep -o '"target_directory":"[^"]*"' | head -n1 | cut -d'"' -f4)"
[[ -n "$target_dir" ]] || die "could not read the target directory from cargo metadata"
bin="$target_dir/$target/$profile/llmload"

say "building $bin (profile $profile, target $target, +crt-static)"
start=$SECONDS
RUSTFLAGS="${RUSTFLAGS:+$RUSTFLAGS }-C target-feature=+crt-static" \
    cargo build --locked --profile "$profile" --target "$target" --bin llmload >&2 \
    || die "cargo build failed"
elapsed=$((SECONDS - start))
[[ -x "$bin" ]] || die "build succeeded but $bin is missing"

# ldd exits non-zero for a static (non-PIE) binary; its words are the test.
ldd_out="$(ldd "$bin" 2>&1 || true)"
if ! grep -qE 'statically linked|not a dynamic executable' <<<"$ldd_out"; then
    say "ldd output:"
    printf '%s\n' "$ldd_out" >&2
    die "$bin is dynamically linked"
fi

"$bin" --help >/dev/null || die "$bin --help failed"

size="$(stat -c %s "$bin")"
say "ok: static ($(sed 's/^[[:space:]]*//' <<<"$ldd_out" | head -n1)), $((size / 1024)) KiB, built in ${elapsed}s"
printf '%s\n' "$bin"
