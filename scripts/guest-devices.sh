#!/usr/bin/env bash
# swaplab's emulated swap devices (--swap delay:…, --swap nbd:…) inside a
# guest kernel that can build them: boots Debian's 6.12 kernel (or 6.1)
# under qemu the way scripts/kernels.sh does (virtme-ng, TCG, the host's
# root read-only over 9p, a 1 GiB ext4 disk image on virtio) and runs there
#   * crates/host/tests/it/swap_devices.rs with SWAPLAB_GUEST_DEVICES=1 (a
#     missing facility fails): a two-tier run (a 16 MiB swap file at
#     priority 10 over a 64 MiB dm-delay device at 5) showing which area
#     receives the writes and when the lower tier starts filling; remote
#     swap over nbd at rtt=0 and rtt=2ms; every device's journal undone,
#     also after a simulated crash; the refusals and recovery tests;
#   * three `swaplab run` smoke runs through the CLI (two tiers; nbd; nbd
#     with bw=), each checked to leave /proc/swaps as it was and its
#     record's per-area traffic (swap_areas) against the kernel's counters.
# Prints the per-area traffic lines (TRAFFIC, REMOTE, AREA, BW), then
#   kernel 6.12 devices: N passed, N failed
# and exits non-zero on a failure, a missing report or a hung guest (killed
# after SWAPLAB_GUEST_TIMEOUT seconds, default 600).
#
#   scripts/guest-devices.sh          6.12
#   scripts/guest-devices.sh 6.1      6.1
#   scripts/guest-devices.sh --guest …  (inside the guest; used by itself)
#
# Needs what scripts/kernels.sh --prepare sets up (it runs it when the
# kernels are missing) and nbd-server, nbd-client, dmsetup and tc on the
# host (the guest runs the host's programs), installed with apt-get here
# when missing. Times inside the guest are emulated (5–9× slower): the
# tests check which device gets the traffic, and that an RTT of 2 ms is
# a floor of the remote device's mean read, never wall times.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
KDIR=$ROOT/target/kernels
GUEST_TIMEOUT=${SWAPLAB_GUEST_TIMEOUT:-600}
K61_REL=6.1.0-56-amd64
K612_REL=6.12.95+deb12-amd64

# ---------------------------------------------------------------- in the guest
guest() {
  local label=$1 test=$2 swaplab=$3
  local disk=/tmp/swaplab-disk log passed=0 failed=0
  mkdir -p "$disk" && mount -t ext4 /dev/vda "$disk" || { echo "RESULT kernel $label devices: no ext4 disk at /dev/vda"; return 1; }
  export SWAPLAB_GUEST=1 SWAPLAB_GUEST_DEVICES=1 SWAPLAB_GUEST_DIR=$disk TMPDIR=$disk/tmp
  mkdir -p "$TMPDIR"
  echo "GUEST-INFO kernel=$(uname -r) booted_in=$(cut -d' ' -f1 /proc/uptime)s"
  log=$disk/devices.log
  local t0; t0=$(date +%s)
  "$test" swap_devices:: --test-threads=1 --nocapture > "$log" 2>&1
  grep -E '^(TRAFFIC|REMOTE|built:|two-tier|SKIP)' "$log" | sed 's/^/  /'
  passed=$(grep -E '^test result:' "$log" | grep -Eo '[0-9]+ passed' | awk '{s+=$1} END {print s+0}')
  failed=$(grep -E '^test result:' "$log" | grep -Eo '[0-9]+ failed' | awk '{s+=$1} END {print s+0}')
  grep -q '^test result:' "$log" || failed=$((failed + 1))
  echo "  TIME tests: $(( $(date +%s) - t0 )) s"
  # The CLI path: two tiers, remote swap, remote swap with a bandwidth
  # cap; each journaled and restored, each run's record checked against
  # the kernel's counters (areas.py below).
  local before run spec size t1
  before=$(awk 'NR > 1 {print $1}' /proc/swaps)
  for run in "--swap file:16M,path=$disk,prio=10 --swap delay:48M,write=1ms,prio=5|32M" \
             "--swap nbd:48M,rtt=1ms|32M" "--swap nbd:48M,bw=1M|24M"; do
    spec=${run%|*} size=${run#*|}
    t1=$(date +%s)
    # shellcheck disable=SC2086
    if SWAPLAB_HOME=$disk/home SWAPLAB_STATE_DIR=$disk/state "$swaplab" run --mem-limit 16M $spec --json \
         -- swaplab-workload traverse --size "$size" --passes 1 > "$disk/run.json" 2>> "$log" \
       && [ "$(awk 'NR > 1 {print $1}' /proc/swaps)" = "$before" ] \
       && python3 - "$disk/run.json" "$spec" <<'PY'
# The run's per-area record against the kernel: every area is listed;
# the areas' devices (each counted once) wrote at least the pages the
# group swapped out; a lower tier started filling no earlier than the
# tier above it; an nbd area with bw= moved no more than bw per second.
import json, re, sys
r = json.load(open(sys.argv[1]))["runs"][0]
m = {k: v["value"] for k, v in r["metrics"].items()}
wall = m["wall_ns"] / 1e9
out = m.get("swapout_pages", 0)
print("  run %s: wall %.1f s, majflt %s, swapout %s" % (sys.argv[2], wall, m.get("majflt"), out))
areas = r.get("swap_areas", [])
ok = bool(areas)
written, fills = {}, []
for a in areas:
    t, mv = a["traffic"], a["traffic"]["moved"]
    fill = t.get("first_fill_ns")
    print("  AREA %s prio %d on %s%s: %d reads, %d writes, %.1f MiB read, %.1f MiB written, %d/%d ms, peak %.1f MiB, filling from %s"
          % (t["area"], t["priority"], t.get("device"), " (shared)" if t["shared_device"] else "",
             mv["reads"], mv["writes"], mv["sectors_read"] / 2048, mv["sectors_written"] / 2048,
             mv["read_ms"], mv["write_ms"], t["peak_used_bytes"] / 2**20,
             "%.2f s" % (fill / 1e9) if fill is not None else "-"))
    if t.get("device"):
        written[t["device"]] = mv["sectors_written"]
    if fill is not None:
        fills.append((t["priority"], fill))
pages = sum(written.values()) / 8
if pages < 0.98 * out:
    print("  AREAS-FAIL the areas' devices wrote %d pages, the group swapped out %d" % (pages, out)); ok = False
fills.sort(reverse=True)
if any(lo[1] < hi[1] for hi, lo in zip(fills, fills[1:]) if lo[0] < hi[0]):
    print("  AREAS-FAIL a lower tier filled before the one above it: %s" % fills); ok = False
bw = re.search(r"nbd:[^ ]*,bw=(\d+)M", sys.argv[2])
if bw:
    cap = int(bw.group(1)) * 2**20
    for a in areas:
        if (a["traffic"].get("device") or "").startswith("nbd"):
            mv = a["traffic"]["moved"]
            rate = (mv["sectors_read"] + mv["sectors_written"]) * 512 / wall
            print("  BW %s: %.0f KiB/s moved, cap %.0f KiB/s" % (a["traffic"]["area"], rate / 1024, cap / 1024))
            if rate > cap * 1.05:
                print("  AREAS-FAIL above the cap"); ok = False
sys.exit(0 if ok else 1)
PY
    then
      passed=$((passed + 1))
    else
      failed=$((failed + 1))
      echo "---- swaplab run $spec failed or left swap behind"; tail -20 "$log"; cat /proc/swaps
    fi
    echo "  TIME run $spec: $(( $(date +%s) - t1 )) s"
  done
  if [ "$failed" -gt 0 ]; then
    echo "---- log of kernel $label devices"
    grep -vE '^test .* ok$' "$log" | tail -80
  fi
  echo "RESULT kernel $label devices: $passed passed, $failed failed"
  sync
  umount "$disk" || true
}

if [ "${1:-}" = --guest ]; then
  shift
  guest "$@"
  exit 0
fi

# ---------------------------------------------------------------- on the host
. scripts/setup.sh

label=${1:-6.12}
case $label in
  6.1) rel=$K61_REL ;;
  6.12) rel=$K612_REL ;;
  *) echo "usage: scripts/guest-devices.sh [6.1|6.12]"; exit 2 ;;
esac
start=$(date +%s)
vmlinux=$KDIR/root-$rel/boot/vmlinux-$rel
if [ ! -s "$vmlinux" ] || [ ! -x "$KDIR/venv/bin/vng" ]; then
  scripts/kernels.sh --prepare || exit 1
fi
pkgs=()
command -v nbd-server > /dev/null || pkgs+=(nbd-server)
command -v nbd-client > /dev/null || [ -x /usr/sbin/nbd-client ] || pkgs+=(nbd-client)
command -v dmsetup > /dev/null || [ -x /usr/sbin/dmsetup ] || pkgs+=(dmsetup)
command -v tc > /dev/null || [ -x /usr/sbin/tc ] || pkgs+=(iproute2)
if [ ${#pkgs[@]} -gt 0 ]; then
  echo "installing ${pkgs[*]} with apt-get (the guest runs the host's programs)"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}"; } > /dev/null 2>&1 \
    || { echo "could not install ${pkgs[*]} (apt-get install ${pkgs[*]})"; exit 1; }
fi

echo "== building swaplab and the device tests"
# swaplab-host's integration tests (one binary, `it`); the guest runs its
# swap_devices module.
test=$(cargo test -q -p swaplab-host --test it --no-run --message-format=json 2>/dev/null | python3 -c 'import sys, json
for l in sys.stdin:
    try: m = json.loads(l)
    except ValueError: continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "it":
        print(m["executable"])')
[ -x "$test" ] || { echo "could not build the device tests (cargo test -p swaplab-host --test it --no-run)"; exit 1; }
# The swaplab binary of the same build (workspace-wide features, as the tests).
cargo build -q --workspace --bin swaplab 2>/dev/null || { echo "could not build swaplab (cargo build --workspace --bin swaplab)"; exit 1; }
swaplab=$ROOT/target/debug/swaplab
[ -x "$swaplab" ] || { echo "no $swaplab after the build"; exit 1; }

mkdir -p "$KDIR/run"
out=$KDIR/run/guest-devices-$label.log
DISK=$KDIR/run/disk-devices-$label-$$.img
PGID=
cleanup() {
  if [ -n "$PGID" ] && kill -0 -- "-$PGID" 2>/dev/null; then
    kill -TERM -- "-$PGID" 2>/dev/null; sleep 2; kill -KILL -- "-$PGID" 2>/dev/null
  fi
  PGID=
  rm -f "$DISK"
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT TERM
rm -f "$DISK"; truncate -s 1G "$DISK" && mkfs.ext4 -q -F "$DISK" || exit 1
echo "== kernel $label: emulated swap devices (set-up and build: $(( $(date +%s) - start )) s)"
t0=$(date +%s)
PATH="$KDIR/venv/bin:$KDIR/bin:$PATH" setsid "$KDIR/venv/bin/vng" --force-9p --disable-kvm \
  --cpus 1 --memory 2G --run "$vmlinux" \
  --qemu-opts="-drive file=$DISK,if=virtio,format=raw" \
  --exec "$ROOT/scripts/guest-devices.sh --guest '$label' '$test' '$swaplab'" \
  > "$out" 2>&1 < /dev/null &
PGID=$!
waited=0
while kill -0 "$PGID" 2>/dev/null; do
  if [ "$waited" -ge "$GUEST_TIMEOUT" ]; then
    echo "kernel $label: the guest did not finish in ${GUEST_TIMEOUT}s: killed (log: ${out#"$ROOT"/})"
    cleanup; tail -20 "$out"; exit 1
  fi
  sleep 1; waited=$((waited + 1))
done
wait "$PGID" 2>/dev/null
PGID=
# The guest's summary lines, then (on a failure) its log excerpt.
sed -n '/^GUEST-INFO/,/^RESULT/p' "$out" | grep -E '^(GUEST-INFO|  [A-Zr(])' | grep -vE '^  (test |running)'
sed -n '/^---- /,/^RESULT/p' "$out" | grep -v '^RESULT'
echo "  (kernel $label: $(( $(date +%s) - t0 )) s from boot to power-off; log: ${out#"$ROOT"/})"
r=$(grep -h '^RESULT kernel ' "$out" | sed 's/^RESULT //')
[ -n "$r" ] || { echo "kernel $label devices: the guest did not report (log: ${out#"$ROOT"/})"; exit 1; }
echo "$r"
echo "$r" | grep -Eq ': [0-9]+ passed, 0 failed$'
