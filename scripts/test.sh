#!/usr/bin/env bash
# Set up and run swaplab's whole test suite (the README's test command).
#   scripts/test.sh            build everything, run every test
# Every test binary runs even after a failure (--no-fail-fast); the suite
# ends with "N passed, N failed, N skipped" and lists each skip with its
# reason. A test skips only for a missing facility (crates/testkit); on CI
# (CI=true) a facility this machine kind has (cgroup v1 memory, swap files,
# zram, perf, pagemap, process_madvise, tracefs, root, the browser for
# report checks) fails instead.
# The system state that tests may touch (swap areas, swaplab cgroups, zram,
# zswap, sysctls, tracefs mounts and instances) is recorded before and
# compared after: the suite fails if anything was left changed, even when a
# test failed.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
start=$(date +%s)

snapshot() {
  {
    echo "swaps:"; tail -n +2 /proc/swaps 2>/dev/null | awk '{print $1, $2, $3}'
    echo "cgroups:"; find /sys/fs/cgroup -maxdepth 3 -type d -iname '*swaplab*' 2>/dev/null | sort
    for f in /proc/sys/vm/swappiness /proc/sys/vm/page-cluster /sys/kernel/mm/transparent_hugepage/enabled \
             /sys/module/zswap/parameters/enabled /sys/module/zswap/parameters/compressor /sys/block/zram*/disksize; do
      [ -r "$f" ] && echo "$f: $(cat "$f" 2>/dev/null)"
    done
    echo "tracefs mounts:"; awk '$3 == "tracefs" {print $2}' /proc/self/mounts | sort
    echo "tracefs instances:"; ls /sys/kernel/tracing/instances 2>/dev/null | grep swaplab || true
  }
}
before=$(snapshot)
status=0
mkdir -p target
export SWAPLAB_SKIP_LOG="$PWD/target/test-skips.log"
: > "$SWAPLAB_SKIP_LOG"
log=target/cargo-test.log

echo "== native (C) workloads: build with -Wall -Wextra -Werror and test"
make -s -C native OUT="$PWD/target/native" || status=1
bash native/tests/run.sh || status=1

echo "== cargo test (workspace, every test binary even after a failure)"
cargo test --workspace --no-fail-fast --quiet 2>&1 | tee "$log"
[ "${PIPESTATUS[0]}" = 0 ] || status=1

echo "== python: build the package into target/pyenv (maturin develop) and run its tests (pytest)"
pylog=target/pytest.log
: > "$pylog"
if swaplab_pyenv && (cd python && VIRTUAL_ENV="$PYENV" PATH="$PYENV/bin:$PATH" \
      "$PYENV/bin/maturin" develop --quiet >/dev/null 2>"$OLDPWD/target/maturin.log" \
      || { cat "$OLDPWD/target/maturin.log"; exit 1; }); then
  # -rs lists each skip with its reason (collected into the summary below).
  "$PYENV/bin/python" -m pytest -q -rs -p no:cacheprovider python/tests 2>&1 | tee "$pylog"
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
else
  echo "error: the Python package could not be set up (see above)" | tee -a "$pylog"
  status=1
fi

echo "== guest kernels (scripts/kernels.sh): 6.1 MGLRU off/on and 6.12, each with a swapfile and zram"
klog=target/kernels.log
: > "$klog"
if [ "${SWAPLAB_KERNELS:-1}" = 0 ] && [ "${CI:-}" != true ]; then
  echo "SKIP guest kernels: SWAPLAB_KERNELS=0 (CI never skips them)" | tee "$klog"
else
  scripts/kernels.sh 2>&1 | tee "$klog"
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi

after=$(snapshot)
# A swaplab session still tearing down (its cgroup is removed after its
# tasks are gone) is not a leak: give it up to 30 s before judging.
for _ in $(seq 30); do
  [ "$before" = "$after" ] && break
  sleep 1; after=$(snapshot)
done
if [ "$before" != "$after" ]; then
  echo "SYSTEM STATE CHANGED BY THE TESTS (a bug: tests must restore what they change):"
  diff <(echo "$before") <(echo "$after") || true
  status=1
fi

# Summary over all cargo test binaries. libtest counts a skipped test (it
# returned early) as passed: take the skips out.
sum() { grep -E '^test result:' "$log" | grep -Eo "[0-9]+ $1" | awk '{s+=$1} END {print s+0}'; }
lib_passed=$(sum passed)
failed=$(sum failed)
skipped=$(sort -u "$SWAPLAB_SKIP_LOG" | grep -c '^SKIP ' || true)
passed=$((lib_passed - skipped))
# pytest's summary line: "N passed, N skipped, N failed in T s".
py() { tail -n 5 "$pylog" | grep -E '(passed|failed|error|skipped).* in [0-9.]+s' | grep -Eo "[0-9]+ $1" | awk '{s+=$1} END {print s+0}'; }
passed=$((passed + $(py passed)))
failed=$((failed + $(py failed) + $(py error)))
py_skipped=$(py skipped)
skipped=$((skipped + py_skipped))
grep -q '^error: the Python package could not be set up' "$pylog" && failed=$((failed + 1))
# The guest matrix: one "kernel … : N passed, N failed, N skipped" line per
# configuration; a configuration that did not report, or the matrix
# skipped, counts as one failure / six skips.
kg() { grep -E '^kernel .*: [0-9]+ passed' "$klog" | grep -Eo "[0-9]+ $1" | awk '{s+=$1} END {print s+0}'; }
passed=$((passed + $(kg passed)))
failed=$((failed + $(kg failed)))
skipped=$((skipped + $(kg skipped)))
grep -q 'did not report\|could not' "$klog" && failed=$((failed + 1))
grep -q '^SKIP guest kernels' "$klog" && skipped=$((skipped + 6))
# A test binary that did not build or crashed has no result line.
if grep -Eq '^error(\[|:)' "$log"; then
  echo "cargo reported errors (a build failure or a crashed test binary): see $log"
  grep -E '^error' "$log" | sort -u | head -20
  status=1
fi
if [ "$failed" -gt 0 ]; then
  echo "failed tests:"
  awk '/^failures:$/ {f=1; next} /^$/ {f=0} f && /^    [^ ]+$/ {print "  " $1}' "$log" | sort -u
  grep -E '^(FAILED|ERROR) ' "$pylog" | sed 's/^/  python: /'
fi
if [ "$skipped" -gt 0 ]; then
  echo "skipped tests:"
  sort -u "$SWAPLAB_SKIP_LOG" | sed 's/^SKIP /  /'
  grep -E '^SKIPPED' "$pylog" | sed 's/^SKIPPED \[[0-9]*\] /  python: /'
  grep -E '^SKIP guest' "$klog" | sed 's/^SKIP /  /'
fi
echo "$passed passed, $failed failed, $skipped skipped ($(( $(date +%s) - start )) s)"
[ "$failed" = 0 ] || status=1
exit $status
