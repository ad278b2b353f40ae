#!/usr/bin/env bash
# swaplab inside other kernels: boots Debian's 6.1 and 6.12 kernels under
# qemu (software emulation, TCG: this machine's KVM cannot run an ordinary
# guest), with the host's root filesystem shared read-only over 9p
# (virtme-ng), and runs inside each the guest test subset
# (crates/cli/tests/it/guest.rs and the host crate's doctor tests, built
# here, run from the shared filesystem) and one smoke experiment, once per
# configuration:
#   6.1  MGLRU off × {swapfile on a virtio ext4 disk, zram}   (one boot each;
#   6.1  MGLRU on  × {swapfile, zram}                          swap set up in
#   6.12 MGLRU on  × {swapfile, zram}                          turn)
# Three boots in all, run at the same time (one vCPU each, on the two cores
# of the CI machine: three balanced guests end sooner than two unequal
# ones). Prints one line per configuration:
#   kernel 6.1 mglru=off swap=file: N passed, N failed, N skipped
# after the time each configuration took (and each boot).
# and exits non-zero when a test failed, a configuration did not report,
# or a guest hung (killed after SWAPLAB_GUEST_TIMEOUT seconds, default 600).
# SWAPLAB_GUEST_NICE (default 0) is the guests' nice value, for running
# them beside other work (19: the lowest weight).
#
# Everything it downloads (the pinned kernel packages, virtme-ng in a venv)
# is kept under target/kernels/, so a second run starts in seconds. The
# host's apt configuration is not changed: bookworm-backports (for 6.12) is
# read through a private sources list under target/kernels/apt/.
#
#   scripts/kernels.sh            the whole matrix
#   scripts/kernels.sh 6.1        one kernel (6.1 or 6.12)
#   scripts/kernels.sh --prepare  only install and download what it needs
#                                 (scripts/test.sh runs this in the background
#                                 while it builds)
#   scripts/kernels.sh --validate [6.1|6.12]
#                                 the fidelity benchmark instead of the tests:
#                                 `swaplab validate --policy P` (P: validate's
#                                 default, linux:reclaim=batch:writeback=async:
#                                 complete=device, the same completing each
#                                 pass, and mglru;
#                                 SWAPLAB_VALIDATE_POLICIES to change) on
#                                 traverse, qsort, kv and chase at 90/75/50/25 %
#                                 in each boot (sizes for emulation: VALIDATE_CELLS;
#                                 SWAPLAB_VALIDATE_CELLS, _LIMITS and _ARGS to change),
#                                 the saved results brought back through a
#                                 writable 9p folder (target/kernels/validate/BOOT/),
#                                 one table per kernel and MGLRU state, and
#                                 target/kernels/validate/fidelity.json and .html
#                                 (the report's fidelity section)
#   scripts/kernels.sh --remote [6.1|6.12]
#                                 remote swap against the round-trip time
#                                 (default 6.12 only): `swaplab validate` of one
#                                 cell (SWAPLAB_REMOTE_CELL, default traverse
#                                 16M --passes=2 at SWAPLAB_REMOTE_LIMITS, 50%)
#                                 on an NBD swap area at each RTT of
#                                 SWAPLAB_REMOTE_RTTS (default "0 5ms 10ms";
#                                 none: no NBD area),
#                                 --fault-path kernel,pfa, each device
#                                 calibrated at its RTT, then the same cell
#                                 on dm-delay and on two dm-delay tiers
#                                 (SWAPLAB_REMOTE_DEVICES); the saved results in
#                                 target/kernels/remote/BOOT/, a table, and
#                                 target/kernels/remote/remote-BOOT.html (the
#                                 report's section against the RTT)
#   scripts/kernels.sh --guest …  (inside a guest; used by the harness)
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

# Pinned kernels (Debian packages; `apt-cache policy` to see newer ones).
K61_PKG=linux-image-6.1.0-56-amd64-unsigned
K61_VER=6.1.192-2
K61_REL=6.1.0-56-amd64
K612_PKG=linux-image-6.12.95+deb12-amd64-unsigned
K612_VER=6.12.95-1~bpo12+1
K612_REL=6.12.95+deb12-amd64
VIRTME_NG=virtme-ng==1.42
GUEST_TIMEOUT=${SWAPLAB_GUEST_TIMEOUT:-600}
KDIR=$ROOT/target/kernels
# The guest tests' results, one folder per boot (scripts/test-summary.py
# reads them; scripts/test.sh's summary counts them with the host's).
GUEST_RESULTS=${SWAPLAB_GUEST_RESULTS:-$ROOT/target/test-results/guest}

# ---------------------------------------------------------------- in the guest
guest() {
  # $1 = kernel label, $2 = MGLRU settings to run ("off", "on" or
  # "off on"), $3 = tests run in every configuration, $4 = tests run in
  # one only, the first zram one ('|'-separated, may be empty; each NAME=BINARY@ARGS,
  # a name for its results, a crate's test binary, and libtest's filter of
  # its modules' tests and options, split on spaces), $5 = the swaplab binary, $6 = the folder (shared
  # with the host, writable) for the results: one folder per configuration
  # (MGLRU-KIND) with each binary's libtest JSON events, skips and exit
  # status, as scripts/test-runner writes them on the host, read by
  # scripts/test-summary.py.
  local label=$1 mglrus=$2 tests=$3 once=$4 swaplab=$5 results=$6
  local summary=$ROOT/scripts/test-summary.py
  local disk=/tmp/swaplab-disk
  mkdir -p "$disk" && mount -t ext4 /dev/vda "$disk" || { echo "RESULT kernel $label: no ext4 disk at /dev/vda"; return 1; }
  modprobe zram num_devices=1 2>/dev/null || true
  # SWAPLAB_GUEST_DEVICES: the emulated devices' tests (host.it.devices and cli.it.devices,
  # in 6.12's boot only) fail where a device cannot be built.
  export SWAPLAB_GUEST=1 SWAPLAB_GUEST_DEVICES=1 SWAPLAB_GUEST_DIR=$disk SWAPLAB_CACHE_DIR=$disk/cache TMPDIR=$disk/tmp
  mkdir -p "$TMPDIR"
  echo "GUEST-INFO kernel=$(uname -r) booted_in=$(cut -d' ' -f1 /proc/uptime)s controllers=$(cat /sys/fs/cgroup/cgroup.controllers)" \
       "subtree_control=[$(cat /sys/fs/cgroup/cgroup.subtree_control)] lru_gen=$(cat /sys/kernel/mm/lru_gen/enabled 2>/dev/null || echo absent)" \
       "min_ttl_ms=$(cat /sys/kernel/mm/lru_gen/min_ttl_ms 2>/dev/null || echo absent)"
  local m kind spec log passed failed skipped lib t t0
  for m in $mglrus; do
    # The configuration's MGLRU state (this throwaway guest's, not swaplab's).
    if [ "$m" = on ]; then echo y > /sys/kernel/mm/lru_gen/enabled; else echo n > /sys/kernel/mm/lru_gen/enabled; fi
    for kind in file zram; do
      t0=$(date +%s)
      spec="$kind:256M"
      [ "$kind" = file ] && spec="file:256M,path=$disk/swapfile"
      export SWAPLAB_GUEST_SWAP=$spec
      # One small `swaplab validate` cell (linux and mglru against the
      # kernel) runs in one configuration only: 6.1's swap file with MGLRU
      # on (6.12's boot runs the emulated devices' tests, the longest).
      if [ "$label" = 6.1 ] && [ "$m" = on ] && [ "$kind" = file ]; then export SWAPLAB_GUEST_VALIDATE=1; else unset SWAPLAB_GUEST_VALIDATE; fi
      local res=$results/$m-$kind
      mkdir -p "$res"
      log=$disk/test-$m-$kind.log
      : > "$log"
      # The tests of $4 run in the zram configuration: they do not depend
      # on the swap kind, and the emulated disk's I/O is what makes a swap
      # file configuration slow (perf stat's traverse: 90-107 s with the
      # file, 38-41 s with zram).
      local run=$tests
      if [ -n "$once" ] && [ "$kind" = zram ]; then run="$tests|$once"; once=; fi
      # Not ':': the filters end in '::' (libtest's module paths).
      local IFS='|'
      for t in $run; do
        local name=${t%%=*} bin=${t#*=}
        echo "== $name: $bin" >> "$log"
        # libtest's JSON events, as scripts/test-runner runs a test binary
        # on the host (RUSTC_BOOTSTRAP lets a stable toolchain's binary
        # take -Z unstable-options).
        : > "$res/$name.skips"
        local args
        IFS=' ' read -ra args <<< "${bin##*@}"
        RUSTC_BOOTSTRAP=1 SWAPLAB_SKIP_LOG=$res/$name.skips "${bin%@*}" "${args[@]}" --test-threads=1 \
          -Z unstable-options --format json --report-time > "$res/$name.json" 2>> "$log"
        echo $? > "$res/$name.status"
      done
      unset IFS
      # The smoke experiment: half the workload's peak, swap of this kind.
      echo "== smoke" >> "$log"
      if SWAPLAB_HOME=$disk/home SWAPLAB_STATE_DIR=$disk/state "$swaplab" run --mem-limit 50% \
           --swap "$spec" --json -- swaplab-workload traverse --size 48M --passes 2 > "$disk/smoke.json" 2>> "$log"; then
        python3 "$summary" --event "$res/smoke.json" "smoke: swaplab run, traverse 48M x2 at 50 %" ok
        python3 - "$disk/smoke.json" <<'PY' || true
import json, sys
r = json.load(open(sys.argv[1]))["runs"][0]
m = {k: v["value"] for k, v in r["metrics"].items()}
g = lambda k: "%d" % m[k] if k in m else "-"
print("  smoke (traverse 48M x2 at 50%%, emulated: times not comparable): wall %.1f s, majflt %s, swapout %s, swapin %s (%s), refault_anon %s, peak %s B, swap_peak %s B"
      % (m["wall_ns"] / 1e9, g("majflt"), g("swapout_pages"), g("swapin_pages"),
         r["metrics"].get("swapin_pages", {}).get("scope", "-"), g("refault_anon_pages"), g("peak_bytes"), g("swap_peak_bytes")))
PY
      else
        python3 "$summary" --event "$res/smoke.json" "smoke: swaplab run, traverse 48M x2 at 50 %" failed \
          "swaplab run failed: $(tail -5 "$log")"
      fi
      # The configuration's counts, and its failures with their output.
      local counts; counts=$(python3 "$summary" --counts "$res")
      if [ "$(echo "$counts" | wc -l)" -gt 1 ]; then
        echo "---- log of kernel $label mglru=$m swap=$kind"
        echo "$counts" | head -n -1
        tail -40 "$log"
      fi
      [ -f "$disk/guest-files.txt" ] && sed 's/^/  /' "$disk/guest-files.txt" && rm -f "$disk/guest-files.txt"
      cat "$res"/*.skips | grep '^SKIP ' | sed 's/^/  /'
      echo "  TIME kernel $label mglru=$m swap=$kind: $(( $(date +%s) - t0 )) s"
      echo "RESULT kernel $label mglru=$m swap=$kind: $(echo "$counts" | tail -1)"
    done
  done
  sync
  umount "$disk" || true
}

# The fidelity benchmark's cells: workload, size, more arguments. Sized
# for emulation (guest code runs 5–9× slower, three guests share two
# cores): each validation's five runs and its simulations take a few
# minutes at most.
# SWAPLAB_VALIDATE_CELLS replaces them ("traverse 16M --passes=4;qsort 4M"),
# SWAPLAB_VALIDATE_LIMITS the limits, SWAPLAB_VALIDATE_ARGS adds
# arguments to every `swaplab validate` (e.g. "--repeat 3"); the host
# hands all four to the guests (boot()).
VALIDATE_CELLS=(
  "traverse 16M --passes=4"
  "qsort 4M"
  "kv 8M --ops=100000"
  "chase 4M --ops=60000"
)
if [ -n "${SWAPLAB_VALIDATE_CELLS:-}" ]; then
  IFS=';' read -r -a VALIDATE_CELLS <<< "$SWAPLAB_VALIDATE_CELLS"
fi
VALIDATE_LIMITS=${SWAPLAB_VALIDATE_LIMITS:-90%,75%,50%,25%}
read -r -a VALIDATE_ARGS <<< "${SWAPLAB_VALIDATE_ARGS:-}"
# The classic lists as the host's validate predicts them by default
# (reclaim in batches, asynchronous writeback: docs/fidelity.md) and as
# one page a miss, and MGLRU.
VALIDATE_POLICIES=${SWAPLAB_VALIDATE_POLICIES:-linux:reclaim=batch:writeback=async:complete=device,linux:reclaim=batch:writeback=async,mglru}

# The remote-swap benchmark (--remote): one cell, at each RTT.
REMOTE_CELL=${SWAPLAB_REMOTE_CELL:-traverse 16M --passes=2}
REMOTE_LIMITS=${SWAPLAB_REMOTE_LIMITS:-50%}
read -r -a REMOTE_RTTS <<< "${SWAPLAB_REMOTE_RTTS:-0 5ms 10ms}"
[ "${REMOTE_RTTS[*]}" = none ] && REMOTE_RTTS=()
# And the same cell on dm-delay alone and on two tiers of dm-delay (each
# area its own device, so each area's writes are measured), unless
# SWAPLAB_REMOTE_DEVICES=0: NAME=--swap arguments, ';'-separated.
REMOTE_DEVICES=${SWAPLAB_REMOTE_DEVICES:-delay=delay:64M,read=2ms,write=2ms;tiers=delay:8M,read=1ms,write=1ms,prio=10 delay:64M,read=4ms,write=4ms,on=loop,prio=5}
REMOTE_POLICIES=${SWAPLAB_VALIDATE_POLICIES:-linux:reclaim=batch:writeback=async:complete=device,mglru}

# In the guest, before a benchmark: swaplab's state on the ext4 disk, the
# MGLRU state $2, the kernel and MGLRU state written to $3 (shared
# writable over 9p). Sets GUEST_DISK, the disk's mount point.
guest_disk() {
  local label=$1 m=$2 out=$3
  GUEST_DISK=/tmp/swaplab-disk
  mkdir -p "$GUEST_DISK" && mount -t ext4 /dev/vda "$GUEST_DISK" || { echo "RESULT kernel $label mglru=$m: no ext4 disk at /dev/vda"; return 1; }
  export SWAPLAB_HOME=$GUEST_DISK/home SWAPLAB_STATE_DIR=$GUEST_DISK/state SWAPLAB_CACHE_DIR=$GUEST_DISK/cache TMPDIR=$GUEST_DISK/tmp
  mkdir -p "$TMPDIR" "$out"
  if [ "$m" = on ]; then echo y > /sys/kernel/mm/lru_gen/enabled; else echo n > /sys/kernel/mm/lru_gen/enabled; fi
  echo "GUEST-INFO kernel=$(uname -r) booted_in=$(cut -d' ' -f1 /proc/uptime)s lru_gen=$(cat /sys/kernel/mm/lru_gen/enabled 2>/dev/null || echo absent)" \
       "page-cluster=$(cat /proc/sys/vm/page-cluster) vma_ra_enabled=$(cat /sys/kernel/mm/swap/vma_ra_enabled 2>/dev/null || echo absent)"
  uname -r > "$out/kernel"
  echo "$m" > "$out/mglru"
}

# In the guest, after a benchmark: any swap area left, the disk unmounted,
# the result line ($1: the configuration, $2 passed, $3 failed).
guest_done() {
  grep -h '^swaplab-\|^/' /proc/swaps | sed 's/^/  LEFT swap area: /'
  sync
  umount "$GUEST_DISK" || true
  echo "RESULT $1: $2 passed, $3 failed, 0 skipped"
}

# In the guest: `swaplab validate` of REMOTE_CELL on an NBD area at each
# RTT, each saved as $4/remote-RTT.json, then on each of REMOTE_DEVICES,
# saved as $4/device-NAME.json.
guest_remote() {
  local label=$1 m=$2 swaplab=$3 out=$4
  guest_disk "$label" "$m" "$out" || return 1
  local rtt t0 t w size args dev name spec passed=0 failed=0
  read -r w size args <<< "$REMOTE_CELL"
  local a=() devs=() swaps
  [ -n "$args" ] && a=(--args "${args//=/ }")
  # One validation: $1 names its files, the rest are its --swap arguments.
  one() {
    local name=$1; shift
    t0=$(date +%s)
    if "$swaplab" validate "$w" --size "$size" "${a[@]}" --limits "$REMOTE_LIMITS" "$@" \
         --policy "$REMOTE_POLICIES" --fault-path kernel,pfa --timeout 1800 --retries 2 "${VALIDATE_ARGS[@]}" \
         --save "$out/$name.json" > "$out/$name.txt" 2>&1; then
      passed=$((passed + 1)); t=ok
    else
      failed=$((failed + 1)); t="FAILED: $(tail -2 "$out/$name.txt" | tr '\n' ' ')"
    fi
    echo "  VALIDATE kernel $label mglru=$m $w $size ${args} $*: $t ($(( $(date +%s) - t0 )) s)"
  }
  for rtt in "${REMOTE_RTTS[@]}"; do
    one "remote-$rtt" --swap "nbd:64M,rtt=$rtt"
  done
  [ "${SWAPLAB_REMOTE_DEVICES:-}" = 0 ] || IFS=';' read -r -a devs <<< "$REMOTE_DEVICES"
  for dev in "${devs[@]}"; do
    name=${dev%%=*} swaps=()
    for spec in ${dev#*=}; do swaps+=(--swap "$spec"); done
    one "device-$name" "${swaps[@]}"
  done
  guest_done "kernel $label mglru=$m remote" "$passed" "$failed"
}

# In the guest: `swaplab validate` on each cell, with the swap file on the
# ext4 disk; the saved results (and each run's output) go to $4, a
# directory the host shares writable over 9p.
guest_validate() {
  local label=$1 m=$2 swaplab=$3 out=$4
  guest_disk "$label" "$m" "$out" || return 1
  local disk=$GUEST_DISK
  local spec="file:256M,path=$disk/swapfile" t0 t cell w size args passed=0 failed=0
  # The device profile validate costs faults with: the emulated disk's,
  # measured once (small: only the fault counts are compared).
  t0=$(date +%s)
  "$swaplab" calibrate --kinds file --size 16M --rounds 1 --swap-dir "$disk" > "$out/calibrate.txt" 2>&1 \
    || echo "  calibrate failed (validate calibrates itself): $(tail -3 "$out/calibrate.txt")"
  echo "  TIME kernel $label mglru=$m calibrate: $(( $(date +%s) - t0 )) s"
  for cell in "${VALIDATE_CELLS[@]}"; do
    read -r w size args <<< "$cell"
    t0=$(date +%s)
    local a=()
    [ -n "$args" ] && a=(--args "${args//=/ }")
    # --retries: 6.12's MGLRU OOM-kills groups this small now and then
    # (docs/kernels.md); a limit with no run that ended ok gets two more.
    if "$swaplab" validate "$w" --size "$size" "${a[@]}" --limits "$VALIDATE_LIMITS" --swap "$spec" \
         --policy "$VALIDATE_POLICIES" --timeout 900 --retries 2 "${VALIDATE_ARGS[@]}" --save "$out/$w.json" > "$out/$w.txt" 2>&1; then
      passed=$((passed + 1)); t=ok
    else
      failed=$((failed + 1)); t="FAILED: $(tail -2 "$out/$w.txt" | tr '\n' ' ')"
    fi
    echo "  VALIDATE kernel $label mglru=$m $w $size ${args}: $t ($(( $(date +%s) - t0 )) s)"
  done
  guest_done "kernel $label mglru=$m validate" "$passed" "$failed"
}

if [ "${1:-}" = --guest ]; then
  shift
  guest "$@"
  exit 0
fi
if [ "${1:-}" = --guest-validate ]; then
  shift
  guest_validate "$@"
  exit 0
fi
if [ "${1:-}" = --guest-remote ]; then
  shift
  guest_remote "$@"
  exit 0
fi

# ---------------------------------------------------------------- on the host
. scripts/setup.sh

need() { command -v "$1" >/dev/null 2>&1; }
setup_host() {
  local pkgs=()
  need qemu-system-x86_64 || pkgs+=(qemu-system-x86)
  need qemu-img || pkgs+=(qemu-utils)
  need depmod || pkgs+=(kmod)
  need busybox || pkgs+=(busybox-static)
  need mkfs.ext4 || pkgs+=(e2fsprogs)
  need zstd || pkgs+=(zstd)
  python3 -c 'import ensurepip' >/dev/null 2>&1 || pkgs+=(python3-venv)
  # The emulated swap devices' tests (the guest runs the host's programs).
  need nbd-server || pkgs+=(nbd-server)
  need nbd-client || [ -x /usr/sbin/nbd-client ] || pkgs+=(nbd-client)
  need dmsetup || [ -x /usr/sbin/dmsetup ] || pkgs+=(dmsetup)
  need tc || [ -x /usr/sbin/tc ] || pkgs+=(iproute2)
  if [ ${#pkgs[@]} -gt 0 ]; then
    echo "installing ${pkgs[*]} with apt-get (for the guest kernels)"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}"; } >/dev/null 2>&1 \
      || { echo "could not install ${pkgs[*]} (apt-get install ${pkgs[*]})"; return 1; }
  fi
  if [ ! -x "$KDIR/venv/bin/vng" ]; then
    echo "installing $VIRTME_NG in $KDIR/venv"
    python3 -m venv "$KDIR/venv" && "$KDIR/venv/bin/pip" install -q "$VIRTME_NG" >/dev/null \
      || { echo "could not install $VIRTME_NG with pip"; return 1; }
  fi
  # This host has no udev: virtme-ng's guest init wants these on PATH.
  mkdir -p "$KDIR/bin"
  local b
  for b in udevd udevadm systemd-tmpfiles; do
    [ -x "$KDIR/bin/$b" ] || { printf '#!/bin/sh\nexit 0\n' > "$KDIR/bin/$b"; chmod +x "$KDIR/bin/$b"; }
  done
}

# vmlinuz -> vmlinux (the payload after the xz or zstd magic; saves ~3.5 s a boot).
extract_vmlinux() {
  local img=$1 out=$2 pair magic tool off
  for pair in "fd377a585a00:xz -dc" "28b52ffd:zstd -dcq"; do
    magic=${pair%%:*}; tool=${pair#*:}
    for off in $(LC_ALL=C grep -aobUP "$(echo "$magic" | sed 's/../\\x&/g')" "$img" | cut -d: -f1 | head -3); do
      tail -c +$((off + 1)) "$img" | $tool > "$out.tmp" 2>/dev/null
      if [ "$(head -c4 "$out.tmp" | tail -c3)" = ELF ]; then mv "$out.tmp" "$out"; return 0; fi
    done
  done
  rm -f "$out.tmp"
  return 1
}

# Fetches and unpacks one kernel package; prints the vmlinux path.
fetch_kernel() {
  local pkg=$1 ver=$2 rel=$3 backports=$4
  local root=$KDIR/root-$rel vmlinux=$KDIR/root-$rel/boot/vmlinux-$rel
  if [ -s "$vmlinux" ]; then echo "$vmlinux"; return 0; fi
  mkdir -p "$KDIR/debs" "$KDIR/apt/lists/partial" "$KDIR/apt/cache/archives/partial"
  local opts=()
  if [ "$backports" = yes ]; then
    echo 'deb http://deb.debian.org/debian bookworm-backports main' > "$KDIR/apt/backports.list"
    opts=(-o "Dir::Etc::sourcelist=$KDIR/apt/backports.list" -o Dir::Etc::sourceparts=-
          -o "Dir::State::Lists=$KDIR/apt/lists" -o "Dir::Cache=$KDIR/apt/cache")
    apt-get "${opts[@]}" update -qq >&2 || return 1
  fi
  local deb
  deb=$(ls "$KDIR"/debs/"${pkg}"_*.deb 2>/dev/null | head -1)
  if [ -z "$deb" ]; then
    (cd "$KDIR/debs" && apt-get "${opts[@]}" download -q "$pkg=$ver" >&2 2>/dev/null) || {
      echo "could not download $pkg=$ver (apt-cache policy $pkg)" >&2; return 1; }
    deb=$(ls "$KDIR"/debs/"${pkg}"_*.deb | head -1)
  fi
  rm -rf "$root" && mkdir -p "$root"
  dpkg-deb -x "$deb" "$root" && depmod -b "$root" "$rel" || return 1
  extract_vmlinux "$root/boot/vmlinuz-$rel" "$vmlinux" || { echo "could not decompress $root/boot/vmlinuz-$rel" >&2; return 1; }
  echo "$vmlinux"
}

PGID=
DISK=
# --validate: where the guests' saved validations come back (one folder a boot).
VALIDATE_OUT=
# --remote: the benchmark in the guests is the remote-swap one.
REMOTE=
cleanup() {
  if [ -n "$PGID" ] && kill -0 -- "-$PGID" 2>/dev/null; then
    kill -TERM -- "-$PGID" 2>/dev/null; sleep 2; kill -KILL -- "-$PGID" 2>/dev/null
  fi
  PGID=
  [ -n "$DISK" ] && rm -f "$DISK"
  DISK=
}

# One vCPU: with two, Debian's 6.12 guest panicked under qemu's
# multi-threaded TCG ("Oops: int3" in __schedule while perf_event_open
# patched a static key: the int3-based text patching races with the other
# vCPU's emulated execution; twice in a row on 2026-11-25, log kept in
# target/kernels/run/guest-6.12.first.log). The guest tests need no second
# CPU, and three one-vCPU guests run side by side on the two cores.
# SWAPLAB_GUEST_CPUS overrides.
GUEST_CPUS=${SWAPLAB_GUEST_CPUS:-1}

# Boots one kernel and runs the guest part; prints its result lines.
# $1 names the boot (its log: target/kernels/run/guest-$1.log), $2 is the
# kernel's label (6.1 or 6.12), the rest as for guest().
boot() {
  local id=$1 label=$2 vmlinux=$3 mglrus=$4 tests=$5 once=$6 swaplab=$7
  local out=$KDIR/run/guest-$id.log
  mkdir -p "$KDIR/run"
  DISK=$KDIR/run/disk-$id-$$.img
  rm -f "$DISK"; truncate -s 1G "$DISK" && mkfs.ext4 -q -F "$DISK" || return 1
  local t0; t0=$(date +%s)
  # SWAPLAB_GUEST_VERBOSE=1: the guest kernel's console goes into the log too.
  local verbose=()
  [ "${SWAPLAB_GUEST_VERBOSE:-}" = 1 ] && verbose=(--verbose)
  # The tests, or (--validate) the fidelity benchmark, whose results come
  # back through a folder the guest may write (9p, like the root).
  # The tests' results (libtest's JSON events) come back the same way.
  rm -rf "${GUEST_RESULTS:?}/$id"
  mkdir -p "$GUEST_RESULTS/$id"
  local exec="$ROOT/scripts/kernels.sh --guest '$label' '$mglrus' '$tests' '$once' '$swaplab' '$GUEST_RESULTS/$id'"
  local rw=(--rwdir "$GUEST_RESULTS/$id")
  if [ -n "$VALIDATE_OUT" ]; then
    mkdir -p "$VALIDATE_OUT/$id"
    rw=(--rwdir "$VALIDATE_OUT/$id")
    # The guest starts with a clean environment: the benchmark's settings
    # go on the command line.
    local v settings=()
    for v in SWAPLAB_VALIDATE_POLICIES SWAPLAB_VALIDATE_CELLS SWAPLAB_VALIDATE_LIMITS SWAPLAB_VALIDATE_ARGS \
             SWAPLAB_REMOTE_CELL SWAPLAB_REMOTE_LIMITS SWAPLAB_REMOTE_RTTS SWAPLAB_REMOTE_DEVICES; do
      [ -n "${!v:-}" ] && settings+=("$v=$(printf %q "${!v}")")
    done
    local mode=--guest-validate
    [ -n "$REMOTE" ] && mode=--guest-remote
    exec="env ${settings[*]} $ROOT/scripts/kernels.sh $mode '$label' '$mglrus' '$swaplab' '$VALIDATE_OUT/$id'"
  fi
  # SWAPLAB_GUEST_NICE: the guest's weight against the host's other work
  # (docs/decisions.md: not beside the host's tests). setsid gives vng a
  # session, and so an autogroup, of its own; the scheduler shares the CPUs
  # between autogroups, so the nice value that counts is the autogroup's,
  # which the new session's first process sets (/proc/self/autogroup,
  # sched(7)), and the processes' own where autogroups are off.
  local nice=${SWAPLAB_GUEST_NICE:-0}
  PATH="$KDIR/venv/bin:$KDIR/bin:$PATH" setsid bash -c \
    'echo "$1" > /proc/self/autogroup 2>/dev/null; n=$1; shift; exec nice -n "$n" "$@"' nice "$nice" \
    "$KDIR/venv/bin/vng" "${verbose[@]}" --force-9p --disable-kvm \
    --cpus "$GUEST_CPUS" --memory 2G --run "$vmlinux" "${rw[@]}" \
    --qemu-opts="-drive file=$DISK,if=virtio,format=raw" \
    --exec "$exec" \
    > "$out" 2>&1 < /dev/null &
  PGID=$!
  local waited=0
  while kill -0 "$PGID" 2>/dev/null; do
    if [ "$waited" -ge "$GUEST_TIMEOUT" ]; then
      echo "kernel $label ($id): the guest did not finish in ${GUEST_TIMEOUT}s: killed (log: $out)"
      cleanup
      tail -20 "$out"
      return 1
    fi
    sleep 1; waited=$((waited + 1))
  done
  wait "$PGID" 2>/dev/null
  PGID=
  cleanup
  sed -n '/^---- log of/,/^RESULT/p' "$out" | grep -v '^RESULT'
  grep -E '^(GUEST-INFO|  GUEST-FILES|  SKIP|  smoke|  TIME|  VALIDATE|  LEFT|  calibrate|RESULT )' "$out" | sed 's/^RESULT //; s/^ */  /; s/^  kernel /kernel /'
  echo "  (kernel $label, MGLRU $mglrus: $(( $(date +%s) - t0 )) s from start to power-off; log: ${out#"$ROOT"/})"
}

# A guest that exits before reporting anything (seen once in about ten
# boots under emulation, cause unknown) is booted once more, with its
# kernel console in the log; both are reported. Test failures are never
# retried.
boot_twice() {
  boot "$@" || return 1
  if ! grep -q '^RESULT kernel ' "$KDIR/run/guest-$1.log"; then
    echo "kernel $1: the guest exited before reporting (log: target/kernels/run/guest-$1.log): booting it once more"
    cp "$KDIR/run/guest-$1.log" "$KDIR/run/guest-$1.first.log"
    SWAPLAB_GUEST_VERBOSE=1 boot "$@"
  fi
}

# The guest tests, built with the same workspace-wide features and profile
# as `cargo test --workspace` (so after scripts/test.sh's build nothing is
# rebuilt; `-p swaplab` alone would resolve features differently and
# rebuild half the workspace): the integration-test binaries (`it`, one a
# crate) of the cli and host crates. Prints one NAME=BINARY@ARGS a line
# (ARGS: libtest's filter and options, split on spaces): the cli's guest
# tests that depend on the swap kind, run in every configuration; the
# host's doctor tests, once a kernel; the rest once a boot (the MGLRU
# switch, perf stat's count, the v2 files with memory.reclaim, kill -9's
# recovery: they depend on the boot's kernel and MGLRU state, not on the
# swap kind, whose set-up and undo the host's tests check).
test_binaries() {
  cargo test -q --workspace --test it --no-run --message-format=json 2>/dev/null | python3 -c 'import sys, json, os
found = {}
for l in sys.stdin:
    try: m = json.loads(l)
    except ValueError: continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m.get("profile", {}).get("test") \
       and m["target"]["name"] == "it":
        found[os.path.basename(os.path.dirname(m["manifest_path"]))] = m["executable"]
if not {"cli", "host"} <= set(found): sys.exit("built the tests of %s, not of cli and host" % sorted(found))
boot = "guest::mglru_switch_is_recorded_and_restored guest::v2_faults_agree_with_perf_stat guest::kill_9_in_a_guest_leaves_nothing_after_the_next_start guest::v2_files_and_proactive_reclaim"
print("cli.it=" + found["cli"] + "@guest:: " + " ".join("--skip " + t for t in boot.split()))
print("host.it=" + found["host"] + "@doctor::")
print("cli.it.boot=" + found["cli"] + "@" + boot + " --exact")
print("host.it.devices=" + found["host"] + "@swap_devices::")
print("cli.it.devices=" + found["cli"] + "@devices::")'
}

# What the matrix needs on the host, installed and downloaded once.
# Prints the vmlinux paths of the kernels asked for ("6.1 6.12", one path
# a line, in that order).
prepare() {
  local k
  setup_host >&2 || return 1
  for k in "$@"; do
    case $k in
      6.1) fetch_kernel "$K61_PKG" "$K61_VER" "$K61_REL" no || { echo "kernel 6.1: could not fetch" >&2; return 1; } ;;
      6.12) fetch_kernel "$K612_PKG" "$K612_VER" "$K612_REL" yes || { echo "kernel 6.12: could not fetch" >&2; return 1; } ;;
    esac
  done
}

main() {
  local only=${1:-all}
  local start; start=$(date +%s)
  local kernels=()
  if [ "$only" = --validate ]; then
    VALIDATE_OUT=$KDIR/validate
    GUEST_TIMEOUT=${SWAPLAB_GUEST_TIMEOUT:-2700}
    only=${2:-all}
  elif [ "$only" = --remote ]; then
    VALIDATE_OUT=$KDIR/remote REMOTE=1
    GUEST_TIMEOUT=${SWAPLAB_GUEST_TIMEOUT:-3600}
    only=${2:-6.12}
  fi
  case $only in
    all) kernels=(6.1 6.12) ;;
    6.1|6.12) kernels=("$only") ;;
    --prepare) prepare 6.1 6.12 > /dev/null || exit 1; echo "guest kernels prepared ($(( $(date +%s) - start )) s)"; exit 0 ;;
    *) echo "usage: scripts/kernels.sh [--validate|--remote] [6.1|6.12] | --prepare"; exit 2 ;;
  esac
  local vmlinux
  mapfile -t vmlinux < <(prepare "${kernels[@]}")
  if [ "${#vmlinux[@]}" != "${#kernels[@]}" ]; then
    echo "could not set up the guest kernels (see above)"; exit 1
  fi
  local bins tests once perboot devices swaplab
  if [ -n "$VALIDATE_OUT" ]; then
    # The benchmark simulates in the guest: the release build.
    echo "== building swaplab (release)"
    cargo build --release -q -p swaplab || { echo "could not build swaplab (cargo build --release -p swaplab)"; exit 1; }
    swaplab=$ROOT/target/release/swaplab tests=- once= perboot= devices=
    rm -rf "$VALIDATE_OUT"
  else
    echo "== building swaplab and the guest tests"
    # Every configuration: crates/cli/tests/it/guest.rs. Once a boot, with
    # zram: the MGLRU switch, perf stat's count, the v2 files with
    # memory.reclaim and kill -9's recovery (they do not depend on the swap
    # kind; cli.it.boot). Once a
    # kernel: the doctor's tests (they do not depend on MGLRU or the swap
    # kind).
    mapfile -t bins < <(test_binaries)
    [ "${#bins[@]}" = 5 ] || { echo "could not build the guest tests (cargo test --workspace --test it --no-run)"; exit 1; }
    tests=${bins[0]}; once=${bins[1]}; perboot=${bins[2]}; devices="${bins[3]}|${bins[4]}"
    # The swaplab binary those tests run (CARGO_BIN_EXE_swaplab).
    swaplab=$ROOT/target/debug/swaplab
  fi
  [ -x "$swaplab" ] || { echo "no $swaplab after the build"; exit 1; }
  # The boots: 6.1 once per MGLRU state (its four configurations in one
  # boot were the matrix's long pole: about 180 s against 6.12's 110 s,
  # one core idle for the difference), 6.12 once. Each: id, kernel index,
  # MGLRU states, whether it runs the once-a-kernel tests (yes, or devices:
  # those and the emulated swap devices' tests).
  local boots=() i k
  for i in "${!kernels[@]}"; do
    case ${kernels[$i]} in
      6.1) boots+=("6.1-off $i off yes")
           [ -n "$REMOTE" ] || boots+=("6.1-on $i on no") ;;
      6.12) boots+=("6.12 $i on devices") ;;
    esac
  done
  local ids=()
  for b in "${boots[@]}"; do ids+=("${b%% *}"); done
  echo "== booting ${ids[*]} side by side (set-up and build: $(( $(date +%s) - start )) s)"
  # Each boot in its own background shell, its output to a file (printed
  # in order afterwards). Each shell kills its own guest on exit, Ctrl-C or
  # TERM; this one sends TERM to them on its own way out.
  local pids=() status=0 expect=0 id m first b
  for b in "${boots[@]}"; do
    read -r id i m first <<< "$b"
    k=${kernels[$i]}
    expect=$((expect + 2))
    [ -n "$VALIDATE_OUT" ] && expect=$((expect - 1))
    rm -f "$KDIR/run/out-$id.txt" "$KDIR/run/guest-$id.log"
    mkdir -p "$KDIR/run"
    local o=$perboot
    [ "$first" = yes ] && o="$perboot|$once"
    # 6.12's boot: the doctor's tests and the emulated swap devices'
    # (crates/host/tests/it/swap_devices.rs: two tiers over dm-delay,
    # remote swap over nbd; 6.1's nbd with netem took 407 s, 6.12's 142 s).
    [ "$first" = devices ] && o="$perboot|$once|$devices"
    (
      trap cleanup EXIT
      trap 'cleanup; exit 130' INT TERM
      case $k in
        6.1) echo "== kernel 6.1 ($K61_PKG $K61_VER): MGLRU $m; swapfile and zram" ;;
        6.12) echo "== kernel 6.12 ($K612_PKG $K612_VER): MGLRU $m; swapfile and zram" ;;
      esac
      boot_twice "$id" "$k" "${vmlinux[$i]}" "$m" "$tests" "$o" "$swaplab"
    ) > "$KDIR/run/out-$id.txt" 2>&1 &
    pids+=($!)
  done
  trap 'kill -TERM "${pids[@]}" 2>/dev/null; wait; exit 130' INT TERM
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || status=1
  done
  trap - INT TERM
  for id in "${ids[@]}"; do cat "$KDIR/run/out-$id.txt"; done
  echo "== guest kernels ($(( $(date +%s) - start )) s)"
  local r n=0
  while read -r r; do
    n=$((n + 1))
    echo "$r"
    echo "$r" | grep -Eq ': [0-9]+ passed, 0 failed, 0 skipped$' || status=1
  done < <(for id in "${ids[@]}"; do grep -h '^RESULT kernel ' "$KDIR/run/guest-$id.log" 2>/dev/null | sed 's/^RESULT //'; done)
  if [ "$n" -lt "$expect" ]; then
    echo "$(( expect - n )) configuration(s) did not report (see target/kernels/run/guest-*.log)"
    status=1
  fi
  if [ -n "$REMOTE" ]; then
    remote_report "$swaplab" "${ids[@]}" || status=1
  elif [ -n "$VALIDATE_OUT" ]; then
    fidelity "$swaplab" "${ids[@]}" || status=1
  fi
  exit $status
}

# --validate, on the host: the guests' saved validations gathered into
# one fidelity table ($VALIDATE_OUT/fidelity.json, the report's fidelity
# section: $VALIDATE_OUT/fidelity.html), and one markdown table per
# kernel and MGLRU state printed (linux and mglru side by side).
fidelity() {
  local swaplab=$1; shift
  echo "== fidelity tables (saved results: ${VALIDATE_OUT#"$ROOT"/}/BOOT/WORKLOAD.json)"
  python3 - "$VALIDATE_OUT" "$*" "${VALIDATE_CELLS[@]}" <<'PY' || return 1
import json, os, sys
out, ids, cells = sys.argv[1], sys.argv[2].split(), sys.argv[3:]
names = {"6.1-off": "6.1 MGLRU off", "6.1-on": "6.1 MGLRU on", "6.12": "6.12 MGLRU on"}
kernels = []
for i in ids:
    d = os.path.join(out, i)
    read = lambda f, dflt="?": open(os.path.join(d, f)).read().strip() if os.path.exists(os.path.join(d, f)) else dflt
    k = {"label": names.get(i, i), "kernel": read("kernel"), "mglru": read("mglru"), "results": [], "failed": []}
    for c in cells:
        w = c.split()[0]
        p = os.path.join(d, w + ".json")
        if os.path.exists(p):
            k["results"].append(json.load(open(p)))
        else:
            k["failed"].append("validate %s did not finish (%s)" % (c, os.path.join(i, w + ".txt")))
    kernels.append(k)
# The command that made the tables, with the settings the environment gave.
env = ["%s=%s" % (k, os.environ[k]) for k in ("SWAPLAB_VALIDATE_POLICIES", "SWAPLAB_VALIDATE_CELLS",
       "SWAPLAB_VALIDATE_LIMITS", "SWAPLAB_VALIDATE_ARGS") if os.environ.get(k)]
cmd = (["env"] + env if env else []) + ["scripts/kernels.sh", "--validate"]
json.dump({"kind": "swaplab.fidelity", "version": 1, "command": cmd, "kernels": kernels},
          open(os.path.join(out, "fidelity.json"), "w"), indent=1)
def pct(x):
    return "-" if x is None else "%+.0f %%" % (x * 100)
def num(x):
    return "-" if x is None else "{:,}".format(int(round(x)))
for k in kernels:
    pols = []
    for r in k["results"]:
        for p in r.get("policies") or ["linux"]:
            if p not in pols:
                pols.append(p)
    print("\n**%s** (kernel %s): major faults, measured / predicted (error)\n" % (k["label"], k["kernel"]))
    print("| cell | pages | measured | " + " | ".join(pols) + " | OPT ≤ swap-ins |")
    print("|---|---|---|" + "---|" * len(pols) + "---|")
    within = {p: [0, 0, 0] for p in pols}
    for r in k["results"]:
        c = r["workload_command"][1:]
        c = [("%dM" % (int(x) >> 20) if i > 0 and c[i - 1] == "--size" and x.isdigit() else x) for i, x in enumerate(c)]
        w = " ".join(x for x in c if x != "--size")
        for row in r["rows"]:
            preds = {p["policy"]: p for p in row.get("predictions") or
                     [{"policy": "linux", "sim_majflt": row["sim_majflt"], "majflt_err": row["majflt_err"]}]}
            cols = []
            for p in pols:
                x = preds.get(p)
                cols.append("-" if x is None else "%s (%s)" % (num(x["sim_majflt"]), pct(x["majflt_err"])))
                if x is not None and x["majflt_err"] is not None:
                    e = abs(x["majflt_err"])
                    within[p][0] += 1
                    within[p][1] += e <= 0.15
                    within[p][2] += e <= 0.25
            oc = {True: "yes", False: "NO", None: "-"}[row["opt_check"]]
            print("| %s at %g %% | %s | %s | %s | %s |" % (w, row["limit_pct"], num(row["capacity_pages"]),
                  num(row["measured_majflt"]), " | ".join(cols), oc))
    for f in k["failed"]:
        print("| %s | | | %s | |" % (f, " | ".join("-" for _ in pols)))
    print("\n" + "; ".join("%s: %d of %d cells within 15 %%, %d within 25 %%" % (p, v[1], v[0], v[2]) for p, v in within.items()))
PY
  "$swaplab" report "$VALIDATE_OUT/fidelity.json" -o "$VALIDATE_OUT/fidelity.html" || return 1
}

# --remote, on the host: per boot, a table of the RTTs (the device's
# calibrated read, run time and major faults measured and predicted, pfa's
# time), one of the other devices (with each tier's writes), and the
# report ($VALIDATE_OUT/remote-BOOT.html) whose last section draws the
# RTTs.
remote_report() {
  local swaplab=$1; shift
  local id files=()
  for id in "$@"; do
    echo "== remote swap against the RTT, $id (saved results: ${VALIDATE_OUT#"$ROOT"/}/$id/remote-RTT.json)"
    mapfile -t files < <(ls "$VALIDATE_OUT/$id"/remote-*.json 2>/dev/null)
    local devs=()
    mapfile -t devs < <(ls "$VALIDATE_OUT/$id"/device-*.json 2>/dev/null)
    [ "${#files[@]}" -ge 2 ] || [ "${#devs[@]}" -ge 1 ] || { echo "fewer than two RTTs measured and no other device: no figure"; return 1; }
    if [ "${#files[@]}" -ge 2 ]; then
      python3 - "${files[@]}" <<'PY' || return 1
import json, re, sys
def rtt(r):
    m = re.search(r"rtt=([0-9.]+)(ns|us|ms|s)?", r["swap"])
    return float(m.group(1)) * {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3, None: 1.0}[m.group(2)] if m else 0.0
results = sorted((json.load(open(f)) for f in sys.argv[1:]), key=rtt)
print("| RTT | random swap-in (calibrated) | limit | measured s | predicted s (error) | pfa s | measured major faults | predicted (error) |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for r in results:
    for row in r["rows"]:
        p = row["predictions"][0]
        pfa = next((o["predicted_wall_s"] for o in p.get("other_paths", []) if o["fault_path"].startswith("pfa")), None)
        pct = lambda e: "-" if e is None else "%+.0f %%" % (e * 100)
        s = lambda x: "-" if x is None else "%.2f" % x
        print("| %s | %.0f µs | %g %% | %s | %s (%s) | %s | %s | %s (%s) |" % (
            r["swap"].split("rtt=")[1].split(",")[0], r["profile"]["read_rand_us"], row["limit_pct"],
            s(row["measured_wall_s"]), s(p["predicted_wall_s"]), pct(p["wall_err"]), s(pfa),
            "-" if row["measured_majflt"] is None else "{:,.0f}".format(row["measured_majflt"]),
            "{:,}".format(p["sim_majflt"]), pct(p["majflt_err"])))
PY
    fi
    if [ "${#devs[@]}" -gt 0 ]; then
      echo "== the same cell on the other emulated devices, $id"
      python3 - "${devs[@]}" <<'PY' || return 1
import json, sys
print("| swap | random swap-in (calibrated) | measured s | predicted s (error) | measured major faults | predicted (error) | fast writes, predicted | slow writes, predicted |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
pct = lambda e: "-" if e is None else "%+.0f %%" % (e * 100)
s = lambda x: "-" if x is None else "%.2f" % x
n = lambda x: "-" if x is None else "{:,.0f}".format(x)
for f in sys.argv[1:]:
    r = json.load(open(f))
    for row in r["rows"]:
        p = row["predictions"][0]
        t = row.get("tiers") or {}
        print("| %s | %.0f µs | %s | %s (%s) | %s | %s (%s) | %s, %s | %s, %s |" % (
            r["swap"] + (" over " + r["lower_tier"] if r.get("lower_tier") else ""), r["profile"]["read_rand_us"],
            s(row["measured_wall_s"]), s(p["predicted_wall_s"]), pct(p["wall_err"]),
            n(row["measured_majflt"]), n(p["sim_majflt"]), pct(p["majflt_err"]),
            n(t.get("measured_fast_writes")), n(t.get("predicted_fast_writes")),
            n(t.get("measured_slow_writes")), n(t.get("predicted_slow_writes"))))
PY
    fi
    "$swaplab" report "${files[@]}" "${devs[@]}" -o "$VALIDATE_OUT/remote-$id.html" || return 1
  done
}

main "$@"
