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
# zswap, sysctls, tracefs mounts and instances, balloon processes: the
# snapshot of crates/testkit/src/state.rs, which the tests use too) is
# recorded before and compared after: the suite fails if anything was left
# changed, even when a test failed.
# Each phase prints its duration, the guest matrix its boots' and
# configurations' too, and the end lists the phases and the slowest test
# binaries (target/test-times.txt has them all).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
start=$(date +%s)

# The system state is the tests' own snapshot (crates/testkit/src/state.rs),
# printed by testkit's state-snapshot binary, built first (in the test
# profile and with the workspace's features, as the test build below
# builds testkit and its few dependencies).
mkdir -p target
echo "== state-snapshot (crates/testkit): the system state before the tests"
cargo build --quiet --workspace --profile test --bin state-snapshot \
  || { echo "could not build state-snapshot: the suite cannot check the system state"; exit 1; }
snapshot() { "${CARGO_TARGET_DIR:-target}/debug/state-snapshot"; }
before=$(snapshot) || { echo "state-snapshot failed"; exit 1; }
status=0
export SWAPLAB_SKIP_LOG="$PWD/target/test-skips.log"
: > "$SWAPLAB_SKIP_LOG"
log=target/cargo-test.log

# Phase times: `phase NAME` starts one (ending the previous), `phase` ends the last.
# Each phase also prints the CPU time (user + system) of the processes it
# waited for: on a shared machine wall times vary with the others' load,
# CPU times much less (compare those across runs).
phases=()
phase_name=
phase_t0=0
phase_cpu0=0
# CPU seconds of this shell's finished children: bash's `times` (2nd
# line), run in this shell (in a pipe or $(…) it would be a subshell's).
phase() {
  local now cpu; now=$(date +%s)
  times > target/.times
  cpu=$(tail -1 target/.times | awk '{s = 0; for (i = 1; i <= 2; i++) {split($i, a, /[ms]/); s += a[1] * 60 + a[2]} printf "%.0f", s}')
  if [ -n "$phase_name" ]; then
    echo "   ($phase_name: $((now - phase_t0)) s, CPU $((cpu - phase_cpu0)) s)"
    phases+=("$phase_name $((now - phase_t0)) s")
  fi
  phase_name=${1:-}
  phase_t0=$now
  phase_cpu0=$cpu
}

# Downloads and installs that need no CPU to speak of run in the background
# while the code builds: the guest kernels' packages and virtme-ng
# (scripts/kernels.sh --prepare) and the Python package's tools.
kernels=1
[ "${SWAPLAB_KERNELS:-1}" = 0 ] && [ "${CI:-}" != true ] && kernels=0
prep_pid=
if [ "$kernels" = 1 ]; then
  scripts/kernels.sh --prepare > target/kernels-prepare.log 2>&1 &
  prep_pid=$!
fi
( swaplab_pyenv ) > target/pyenv-setup.log 2>&1 &
pyenv_pid=$!

phase native
echo "== native (C): build with -Wall -Wextra -Werror and test (native/tests/run.sh: the workloads, the preload library, its TSan and ASan builds)"
make -s -C native OUT="$PWD/target/native" || status=1
bash native/tests/run.sh || status=1

phase "cargo build"
echo "== cargo test --no-run (build every test binary of the workspace)"
# .ci/run lints in this build (clippy-driver as the workspace's rustc
# wrapper): a lint is then a build error here.
case ${RUSTC_WORKSPACE_WRAPPER:-} in
  *clippy-driver*) echo "   with clippy's lints (RUSTC_WORKSPACE_WRAPPER=clippy-driver, CLIPPY_ARGS=${CLIPPY_ARGS:-})" ;;
esac
cargo test --workspace --no-run --quiet 2>&1 | tee "$log"
[ "${PIPESTATUS[0]}" = 0 ] || status=1

phase "cargo test"
echo "== cargo test (workspace, every test binary even after a failure)"
cargo test --workspace --no-fail-fast -- --quiet 2>&1 | tee -a "$log" | grep -v '^ *\(Running\|Doc-tests\|Finished\) '
[ "${PIPESTATUS[0]}" = 0 ] || status=1
# Each test binary's time (libtest's "finished in"), slowest first. A
# crate's integration tests are one binary, tests/it/main.rs (it), named
# here after the crate whose unit tests cargo ran just before it.
awk '/^ *Running / {name = $0; sub(/^ *Running /, "", name); sub(/target\/debug\/deps\//, "", name); sub(/-[0-9a-f]+\)$/, ")", name)
                    if (name ~ /^unittests src\/lib\.rs /) {crate = name; sub(/^.*\(/, "", crate); sub(/\)$/, "", crate)}
                    if (name ~ /^tests\/it\/main\.rs /) name = "tests/it/main.rs (" crate ")"}
     /^ *Doc-tests / {name = "doc-tests of " $2}
     /^test result:/ {for (i = 1; i <= NF; i++) if ($i == "in") {t = $(i + 1); sub("s$", "", t); printf "%8.1f s  %s\n", t, name}}' \
  "$log" | sort -rn > target/test-times.txt
echo "   slowest test binaries (all in target/test-times.txt; sum $(awk '{s += $1} END {printf "%.0f", s}' target/test-times.txt) s):"
head -6 target/test-times.txt

# The guest kernels and the python phase run side by side: three one-vCPU
# guests under TCG keep both cores busy for about 340 s, while maturin's
# compile of one crate and pytest use about one core, so the python phase
# costs the guests about half its length instead of all of it. (Beside
# `cargo test` they would slow and disturb the tests that measure the
# machine: memory pressure, kswapd, timings.) The guests are started first
# and their build step (a no-op after the build phase) is waited for, so
# that it does not queue behind maturin's build for cargo's lock.
phase "python and guest kernels"
echo "== guest kernels (scripts/kernels.sh, in the background): 6.1 MGLRU off/on and 6.12, each with a swapfile and zram"
klog=target/kernels.log
: > "$klog"
kernels_pid=
if [ "$kernels" = 0 ]; then
  echo "SKIP guest kernels: SWAPLAB_KERNELS=0 (CI never skips them)" > "$klog"
else
  wait "$prep_pid" || echo "(scripts/kernels.sh --prepare failed: it runs again now)"
  cat target/kernels-prepare.log
  k0=$(date +%s)
  scripts/kernels.sh > "$klog" 2>&1 &
  kernels_pid=$!
  for _ in $(seq 300); do
    grep -q '^== booting\|^could not' "$klog" && break
    kill -0 "$kernels_pid" 2>/dev/null || break
    sleep 1
  done
fi
echo "== python: build the package into target/pyenv (maturin develop) and run its tests (pytest)"
p0=$(date +%s)
pylog=target/pytest.log
: > "$pylog"
wait "$pyenv_pid"; pyenv_status=$?
cat target/pyenv-setup.log
if [ "$pyenv_status" = 0 ] && (cd python && VIRTUAL_ENV="$PYENV" PATH="$PYENV/bin:$PATH" \
      "$PYENV/bin/maturin" develop --quiet >/dev/null 2>"$OLDPWD/target/maturin.log" \
      || { cat "$OLDPWD/target/maturin.log"; exit 1; }); then
  # -rs lists each skip with its reason (collected into the summary below).
  "$PYENV/bin/python" -m pytest -q -rs -p no:cacheprovider python/tests 2>&1 | tee "$pylog"
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
else
  echo "error: the Python package could not be set up (see above)" | tee -a "$pylog"
  status=1
fi
echo "   (python: $(( $(date +%s) - p0 )) s)"
echo "== guest kernels (scripts/kernels.sh): waiting for them"
if [ -n "$kernels_pid" ]; then
  wait "$kernels_pid" || status=1
  echo "   (guest kernels: $(( $(date +%s) - k0 )) s)"
fi
cat "$klog"
phase

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
echo "phases: $(IFS=,; echo "${phases[*]}" | sed 's/,/, /g')"
echo "$passed passed, $failed failed, $skipped skipped ($(( $(date +%s) - start )) s)"
[ "$failed" = 0 ] || status=1
exit $status
