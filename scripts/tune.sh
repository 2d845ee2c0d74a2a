#!/usr/bin/env bash
# Optional host tuning for llmload benchmark runs. Run as root; every change is
# printed with its previous value, and the commands that restore them are
# printed at the end. Nothing here survives a reboot.
#
#   scripts/tune.sh [--cpus LIST] [--dry-run]
#
#   --cpus LIST  cores to keep free for the benchmark (llmload's workers and
#                scheduler), e.g. 2-7 or 1,3,5-6. NIC interrupts and receive
#                packet steering move to the other online cores.
#                Default: every online core except CPU 0.
#   --dry-run    print what would change; change nothing (root not needed).
#
# What it does:
#   * CPU frequency governor -> performance (when cpufreq exists)
#   * stops irqbalance if it runs (it would undo the IRQ steering); does not
#     disable or uninstall it
#   * physical NICs' IRQ affinity and RPS -> the non-benchmark cores
#     (loopback and other virtual devices have neither and are left alone)
#   * sysctls: net.ipv4.ip_local_port_range=1024 65535, net.core.somaxconn,
#     net.ipv4.tcp_tw_reuse=1, kernel.perf_event_paranoid=1 (perf profiling of
#     your own processes, kernel stacks included, without root; a relaxation
#     of the default, undo it on shared machines)
#   * prints guidance for the open-files limit (a script cannot raise the
#     limit of the shell that will run llmload)
#
# Missing or read-only files (containers, VMs without cpufreq) are skipped with
# a note; they are not errors.
set -euo pipefail
shopt -s nullglob

SOMAXCONN=65535
PORT_RANGE="1024 65535"
PERF_PARANOID=1
NOFILE=1048576

dry_run=0
cpus_arg=""

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }
say() { printf '%s\n' "$*"; }
note() { printf '  note: %s\n' "$*"; }
die() { printf 'tune: error: %s\n' "$*" >&2; exit 1; }

while (($#)); do
    case "$1" in
        --dry-run) dry_run=1 ;;
        --cpus) (($# >= 2)) || die "--cpus needs a list, e.g. --cpus 2-7"; cpus_arg="$2"; shift ;;
        --cpus=*) cpus_arg="${1#--cpus=}" ;;
        -h | --help) usage; exit 0 ;;
        *) die "unknown argument '$1' (try --help)" ;;
    esac
    shift
done

if ((!dry_run)) && ((EUID != 0)); then
    die "must run as root (or use --dry-run to see what would change)"
fi

# Commands restoring what was changed, printed at the end.
undo=()
changed=0

# --- CPU lists ---------------------------------------------------------------

# Expands "0-2,5" into "0 1 2 5"; fails on anything else.
expand_cpu_list() {
    local list="$1" part lo hi out=()
    [[ -n "$list" ]] || return 1
    IFS=',' read -ra parts <<<"$list"
    for part in "${parts[@]}"; do
        if [[ "$part" =~ ^([0-9]+)-([0-9]+)$ ]]; then
            lo=$((10#${BASH_REMATCH[1]})) hi=$((10#${BASH_REMATCH[2]}))
            ((lo <= hi)) || return 1
            for ((c = lo; c <= hi; c++)); do out+=("$c"); done
        elif [[ "$part" =~ ^[0-9]+$ ]]; then
            out+=("$((10#$part))")
        else
            return 1
        fi
    done
    printf '%s\n' "${out[@]}" | sort -nu | tr '\n' ' '
}

# Joins CPU numbers with commas (the kernel accepts plain lists).
join_cpus() { local IFS=,; printf '%s' "$*"; }

# The hex mask /sys wants for rps_cpus: 32-bit words, most significant first,
# separated by commas.
cpu_mask() {
    local -a words=()
    local c w i top=0 out=""
    for c in "$@"; do
        w=$((c / 32))
        words[w]=$((${words[w]:-0} | (1 << (c % 32))))
    done
    for w in "${!words[@]}"; do ((w > top)) && top=$w; done
    for ((i = top; i >= 0; i--)); do
        if ((i == top)); then out+=$(printf '%x' "${words[i]:-0}")
        else out+=$(printf ',%08x' "${words[i]:-0}"); fi
    done
    printf '%s' "$out"
}

online_file=/sys/devices/system/cpu/online
if [[ -r "$online_file" ]]; then
    online="$(expand_cpu_list "$(<"$online_file")")" || die "cannot parse $online_file"
else
    online="$(seq 0 $(($(nproc --all) - 1)) | tr '\n' ' ')"
fi
if [[ -n "$cpus_arg" ]]; then
    bench="$(expand_cpu_list "$cpus_arg")" || die "bad --cpus list '$cpus_arg' (use e.g. 2-7 or 1,3,5-6)"
    for c in $bench; do
        [[ " $online " == *" $c "* ]] || die "--cpus: CPU $c is not online (online: $(join_cpus $online))"
    done
else
    bench="$(for c in $online; do ((c != 0)) && printf '%s ' "$c"; done; true)"
fi
housekeeping="$(for c in $online; do [[ " $bench " == *" $c "* ]] || printf '%s ' "$c"; done; true)"
# shellcheck disable=SC2086 # word splitting of CPU lists is intended
{ bench_list="$(join_cpus $bench)"; hk_list="$(join_cpus $housekeeping)"; }

if ((dry_run)); then
    say "tune: dry run: nothing will be changed"
fi
say "tune: online CPUs: $(join_cpus $online); benchmark CPUs: ${bench_list:-none}; housekeeping CPUs: ${hk_list:-none}"

# --- helpers -----------------------------------------------------------------

# Writes VALUE to FILE unless it already holds it, recording the old value.
# Missing or unwritable files are skipped with a note.
set_knob() {
    local path="$1" value="$2" label="$3" old norm_old norm_new
    if [[ ! -e "$path" ]]; then
        note "skipped $label: $path does not exist"
        return 0
    fi
    if ! old="$(cat -- "$path" 2>/dev/null)"; then
        note "skipped $label: cannot read $path"
        return 0
    fi
    norm_old="$(tr -s '[:space:]' ' ' <<<"$old" | sed 's/ $//')"
    norm_new="$(tr -s '[:space:]' ' ' <<<"$value" | sed 's/ $//')"
    if [[ "$norm_old" == "$norm_new" ]]; then
        say "  $label: already $norm_new"
        return 0
    fi
    if ((dry_run)); then
        say "  $label: would set $norm_old -> $norm_new"
        undo+=("printf '%s\\n' '$norm_old' > $path")
        return 0
    fi
    if printf '%s\n' "$value" 2>/dev/null >"$path"; then
        say "  $label: set $norm_old -> $norm_new"
        undo+=("printf '%s\\n' '$norm_old' > $path")
        changed=$((changed + 1))
    else
        note "skipped $label: cannot write $path (read-only, e.g. in a container, or rejected by the kernel)"
    fi
}

# --- CPU frequency governor ----------------------------------------------------

say "CPU frequency governor:"
governors=(/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor)
if ((${#governors[@]} == 0)); then
    note "skipped: no cpufreq here (VM or container, or the driver is absent)"
else
    for g in "${governors[@]}"; do
        cpu="${g#/sys/devices/system/cpu/}"
        cpu="${cpu%%/*}"
        avail="${g%/*}/scaling_available_governors"
        if [[ -r "$avail" ]] && ! grep -qw performance "$avail"; then
            note "skipped $cpu: no 'performance' governor (available: $(<"$avail"))"
            continue
        fi
        set_knob "$g" performance "$cpu governor"
    done
fi

# --- irqbalance ----------------------------------------------------------------

say "irqbalance:"
if command -v systemctl >/dev/null && systemctl is-active --quiet irqbalance 2>/dev/null; then
    if ((dry_run)); then
        say "  would stop the irqbalance service (systemctl stop irqbalance)"
        undo+=("systemctl start irqbalance")
    elif systemctl stop irqbalance; then
        say "  stopped the irqbalance service (still installed and enabled at boot)"
        undo+=("systemctl start irqbalance")
        changed=$((changed + 1))
    else
        note "could not stop irqbalance; it may move IRQs back onto the benchmark CPUs"
    fi
elif pgrep -x irqbalance >/dev/null 2>&1; then
    # Not under systemd: say so rather than killing a daemon this script did
    # not start.
    note "irqbalance runs outside systemd (pid $(pgrep -x irqbalance | tr '\n' ' ')); stop it with your init system, or it will undo the IRQ steering below"
else
    say "  not running"
fi

# --- NIC IRQs and RPS ------------------------------------------------------------

say "NIC interrupts and receive packet steering (to housekeeping CPUs ${hk_list:-none}):"
if [[ -z "$bench" ]]; then
    note "skipped: no benchmark CPUs to keep free"
elif [[ -z "$housekeeping" ]]; then
    note "skipped: every online CPU is a benchmark CPU; leave at least one for interrupts"
else
    hk_mask="$(cpu_mask $housekeeping)"
    nics=0
    for dev in /sys/class/net/*; do
        ifname="${dev##*/}"
        # Physical (or paravirtual) NICs have a device; lo, bridges, veths,
        # tunnels do not, and their packets are processed on the sending CPU.
        [[ -e "$dev/device" ]] || continue
        nics=$((nics + 1))
        devdir="$(readlink -f "$dev/device")"
        devname="${devdir##*/}"
        irqs=()
        # MSI(-X) vectors sit on the PCI function: the device itself, or for
        # virtio its parent (the net device hangs below a virtioN device).
        # Only for virtio: a PCI NIC's parent is a root port with IRQs of its own.
        msi="$devdir/msi_irqs"
        if [[ ! -d "$msi" && "$(readlink -f "$devdir/subsystem")" == */virtio ]]; then
            msi="$devdir/../msi_irqs"
        fi
        for f in "$msi"/*; do irqs+=("${f##*/}"); done
        [[ -r "$devdir/irq" ]] && irqs+=("$(<"$devdir/irq")")
        # Drivers name their vectors after the interface (eth0-TxRx-0) or the
        # device (virtio2-input.0).
        if [[ -r /proc/interrupts ]]; then
            while read -r irq; do irqs+=("$irq"); done < <(
                awk -v a="$ifname" -v b="$devname" '
                    $1 ~ /^[0-9]+:$/ {
                        name = $NF
                        if (name == a || index(name, a "-") == 1 || index(name, a ":") == 1 ||
                            name == b || index(name, b "-") == 1) { sub(":", "", $1); print $1 }
                    }' /proc/interrupts
            )
        fi
        mapfile -t irqs < <(printf '%s\n' "${irqs[@]}" | grep -E '^[1-9][0-9]*$' | sort -nu)
        if ((${#irqs[@]} == 0)); then
            note "$ifname: no IRQs found"
        fi
        for irq in "${irqs[@]}"; do
            set_knob "/proc/irq/$irq/smp_affinity_list" "$hk_list" "$ifname IRQ $irq affinity"
        done
        queues=("$dev"/queues/rx-*/rps_cpus)
        if ((${#queues[@]} == 0)); then
            note "$ifname: no RPS queues"
        fi
        for q in "${queues[@]}"; do
            qname="${q%/rps_cpus}"
            set_knob "$q" "$hk_mask" "$ifname ${qname##*/} RPS"
        done
    done
    ((nics > 0)) || note "no physical NICs found"
fi

# --- sysctls -------------------------------------------------------------------

say "sysctls:"
set_knob /proc/sys/net/ipv4/ip_local_port_range "$PORT_RANGE" "net.ipv4.ip_local_port_range"
set_knob /proc/sys/net/core/somaxconn "$SOMAXCONN" "net.core.somaxconn"
set_knob /proc/sys/net/ipv4/tcp_tw_reuse 1 "net.ipv4.tcp_tw_reuse"
set_knob /proc/sys/kernel/perf_event_paranoid "$PERF_PARANOID" "kernel.perf_event_paranoid"

# --- open files ------------------------------------------------------------------

say "open files (guidance only):"
soft="$(ulimit -Sn)"
hard="$(ulimit -Hn)"
nr_open="$(cat /proc/sys/fs/nr_open 2>/dev/null || echo unknown)"
say "  this shell: soft $soft, hard $hard; kernel maximum (fs.nr_open): $nr_open"
say "  llmload needs one descriptor per connection plus a few; before running it:"
say "    ulimit -n $NOFILE        # in the shell that runs llmload (up to the hard limit)"
say "  to raise the hard limit: 'LimitNOFILE=$NOFILE' in a systemd unit, or"
say "    '* hard nofile $NOFILE' in /etc/security/limits.conf (new login sessions)"

# --- summary -------------------------------------------------------------------

if ((${#undo[@]} == 0)); then
    say "nothing to undo"
elif ((dry_run)); then
    say "dry run: nothing changed. A real run would print these undo commands:"
    printf '  %s\n' "${undo[@]}"
else
    say "$changed change(s) made. To undo (or reboot):"
    printf '  %s\n' "${undo[@]}"
fi
