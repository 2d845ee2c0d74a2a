#!/usr/bin/env bash
# Checks the deployment examples in deploy/ with no cluster and no scheduler:
#  - every Kubernetes manifest against the API schema, strictly (unknown
#    fields are errors), with kubernetes-validate from PyPI, which ships the
#    schemas of each Kubernetes version (no network after the install);
#  - what the schema cannot see (scripts/validate-deploy.py): the shard count
#    written alike in its three places, one results claim, CPUs per shard;
#  - the sbatch script's syntax (bash -n);
#  - every llmload command line in the examples against the built binary:
#    `bench` runs through its whole configuration (flags, profile, datasets,
#    the host's limits) and stops where it creates its --out directory, made
#    impossible here, so nothing is ever sent; `merge` has its flags parsed.
#    The sbatch script runs for real, with a stand-in srun that starts its
#    tasks on this machine, so its quoting (each task's own $SLURM_PROCID)
#    is what is checked.
#
# Environment: LLMLOAD_BIN (default target/release/llmload, built when
# missing), LLMLOAD_DEPLOY_VENV (default target/deploy-venv).
set -euo pipefail
cd "$(dirname "$0")/.."

# Pinned: the validator and the API versions checked, the oldest with every
# field the manifests use (backoffLimitPerIndex) and the newest it ships.
validator=kubernetes-validate==1.37.0
kube_versions=(1.31.0 1.37.0)
venv=${LLMLOAD_DEPLOY_VENV:-target/deploy-venv}

say() { printf 'validate-deploy: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

apt_install() {
    local sudo=""
    if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null; then sudo="sudo -n"; fi
    $sudo apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# Debian's python3 makes no venv without python3-venv (ensurepip).
ensure_validator() {
    local kv="$venv/bin/kubernetes-validate"
    if [ -x "$kv" ] && [ "$("$kv" --version 2>/dev/null)" = "${validator#*==}" ]; then
        return
    fi
    say "installing $validator into $venv"
    rm -rf "$venv"
    if ! command -v python3 >/dev/null || ! python3 -m venv "$venv" >/dev/null 2>&1; then
        rm -rf "$venv"
        apt_install python3 python3-venv
        python3 -m venv "$venv"
    fi
    "$venv/bin/pip" install --quiet --disable-pip-version-check "$validator"
}

ensure_validator
start=$SECONDS

for v in "${kube_versions[@]}"; do
    "$venv/bin/kubernetes-validate" --strict --quiet --kubernetes-version "$v" deploy/kubernetes/*.yaml \
        || die "deploy/kubernetes: not valid against Kubernetes $v"
done

bash -n deploy/slurm/llmload.sbatch || die "deploy/slurm/llmload.sbatch: syntax"

bin=${LLMLOAD_BIN:-}
if [ -z "$bin" ]; then
    cargo build --release --quiet --bin llmload
    bin=target/release/llmload
fi
bin=$(realpath "$bin")

check=$(mktemp -d)
trap 'rm -rf "$check"' EXIT
# A file where --out wants a directory: bench stops right there.
touch "$check/blocker"

# The other branch's flags may not be in this binary yet: say so and check
# the rest.
skip_bench=0 skip_merge=0
"$bin" bench --help | grep -q -- '--shard ' || skip_bench=1
"$bin" merge --help >/dev/null 2>&1 || skip_merge=1
[ "$skip_bench" = 0 ] || say "skipped: the examples' bench command lines (this llmload has no --shard yet)"
[ "$skip_merge" = 0 ] || say "skipped: the examples' merge command lines (this llmload has no merge yet)"

# The stand-in for llmload the examples run. It logs each --out to $check/outs.
cat >"$check/llmload" <<'EOF'
#!/usr/bin/env bash
set -u
sub=$1
shift
case $sub in
merge)
    [ "$SKIP_MERGE" = 1 ] && exit 0
    err=$("$REAL_BIN" merge "$@" --help 2>&1 >/dev/null) || { printf 'llmload merge %s: %s\n' "$*" "$err"; exit 1; }
    ;;
bench)
    [ "$SKIP_BENCH" = 1 ] && exit 0
    args=() out=""
    while [ $# -gt 0 ]; do
        case $1 in
        --out) out=$2; args+=(--out "$CHECK/blocker/out"); shift 2 ;;
        # Nothing listens on port 1 of this host: a model lookup, were one
        # made, is refused at once.
        --endpoint) args+=(--endpoint "$(sed -E 's#(https?://)[^/,]*#\1127.0.0.1:1#g' <<<"$2")"); shift 2 ;;
        *) args+=("$1"); shift ;;
        esac
    done
    [ -n "$out" ] || { echo "llmload bench without --out"; exit 1; }
    printf '%s\n' "$out" >>"$CHECK/outs"
    err=$(timeout 60 "$REAL_BIN" bench "${args[@]}" 2>&1 >/dev/null)
    rc=$?
    if [ "$rc" = 1 ] && grep -q -- "^llmload bench: --out $CHECK/blocker/out: Not a directory" <<<"$err"; then
        exit 0
    fi
    printf 'llmload bench %s (exit %s):\n%s\n' "${args[*]}" "$rc" "$err"
    exit 1
    ;;
*) echo "llmload $sub: not expected in an example"; exit 1 ;;
esac
EOF
# The stand-in for srun: each of SLURM_NTASKS tasks at once on this machine.
cat >"$check/srun" <<'EOF'
#!/usr/bin/env bash
while [[ $1 == -* ]]; do shift; done
pids=()
for ((i = 0; i < SLURM_NTASKS; i++)); do
    SLURM_PROCID=$i "$@" &
    pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
exit $rc
EOF
chmod +x "$check/llmload" "$check/srun"
export REAL_BIN=$bin CHECK=$check SKIP_BENCH=$skip_bench SKIP_MERGE=$skip_merge

# Kubernetes: the manifests' own commands, as their pods would run them.
start_at=$(date -u -d '+2 seconds' +%Y-%m-%dT%H:%M:%SZ)
"$venv/bin/python" scripts/validate-deploy.py deploy "$check/llmload" "$start_at" \
    || die "deploy/kubernetes: see above"

# Slurm: the script itself, with its shard count.
tasks=$(sed -n 's/^#SBATCH --ntasks=\([0-9]*\)$/\1/p' deploy/slurm/llmload.sbatch)
[ -n "$tasks" ] || die "deploy/slurm/llmload.sbatch: no #SBATCH --ntasks=N line"
: >"$check/outs"
if ! log=$(PATH="$check:$PATH" SLURM_JOB_ID=check SLURM_NTASKS=$tasks LLMLOAD="$check/llmload" \
    RESULTS="$check/slurm" START_LEAD=2 bash deploy/slurm/llmload.sbatch 2>&1); then
    printf '%s\n' "$log" >&2
    die "deploy/slurm/llmload.sbatch failed"
fi
if [ "$skip_bench" = 0 ]; then
    expected=$(for ((i = 0; i < tasks; i++)); do echo "$check/slurm/shard-$i"; done)
    [ "$(sort "$check/outs")" = "$(sort <<<"$expected")" ] \
        || die "deploy/slurm/llmload.sbatch: the shards' --out are $(sort "$check/outs" | tr '\n' ' '), expected one per task"
fi

say "ok: deploy/kubernetes (Kubernetes ${kube_versions[*]}) and deploy/slurm in $((SECONDS - start))s"
