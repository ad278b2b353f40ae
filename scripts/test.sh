#!/usr/bin/env bash
# Set up and run swaplab's whole test suite (the README's test command).
#   scripts/test.sh            build everything, run every test
# Tests that need root or a kernel facility skip with a reason elsewhere.
# The system state that tests may touch (swap areas, swaplab cgroups, zram,
# zswap, sysctls) is recorded before and compared after: the suite fails if
# anything was left changed, even when a test failed.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh

snapshot() {
  {
    echo "swaps:"; tail -n +2 /proc/swaps 2>/dev/null | awk '{print $1, $2, $3}'
    echo "cgroups:"; find /sys/fs/cgroup -maxdepth 3 -type d -iname '*swaplab*' 2>/dev/null | sort
    for f in /proc/sys/vm/swappiness /proc/sys/vm/page-cluster /sys/kernel/mm/transparent_hugepage/enabled \
             /sys/module/zswap/parameters/enabled /sys/module/zswap/parameters/compressor /sys/block/zram*/disksize; do
      [ -r "$f" ] && echo "$f: $(cat "$f" 2>/dev/null)"
    done
    echo "tracefs instances:"; ls /sys/kernel/tracing/instances 2>/dev/null || true
  }
}
before=$(snapshot)
status=0

echo "== native (C) workloads: build with -Wall -Wextra -Werror and test"
make -s -C native OUT="$PWD/target/native" || status=1
bash native/tests/run.sh || status=1

echo "== cargo test (workspace)"
cargo test --workspace --quiet 2>&1 | tee target/cargo-test.log || status=1

after=$(snapshot)
if [ "$before" != "$after" ]; then
  echo "SYSTEM STATE CHANGED BY THE TESTS (a bug: tests must restore what they change):"
  diff <(echo "$before") <(echo "$after") || true
  status=1
fi
# A plain summary line over all cargo test binaries.
passed=$(grep -Eo '[0-9]+ passed' target/cargo-test.log | awk '{s+=$1} END {print s+0}')
failed=$(grep -Eo '[0-9]+ failed' target/cargo-test.log | awk '{s+=$1} END {print s+0}')
echo "cargo: $passed passed, $failed failed"
exit $status
