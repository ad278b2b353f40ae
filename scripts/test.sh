#!/usr/bin/env bash
# Set up and run swaplab's whole test suite (the README's test command).
#   scripts/test.sh            build everything, run every test
# Every test binary runs even after a failure (--no-fail-fast); the suite
# ends with "N passed, N failed, N skipped" and lists each skip with its
# reason. Every result is machine-readable, in one folder,
# target/test-results: libtest's JSON events of each Rust test binary
# (host: scripts/test-runner; guests: scripts/kernels.sh), of pytest's
# tests (python/tests/conftest.py) and of the harness's own checks;
# scripts/test-summary.py reads them into the summary. A test skips only
# for a missing facility (crates/testkit); on CI (CI=true) a facility this
# machine kind has (cgroup v1 memory, swap files,
# zram, perf, pagemap, process_madvise, tracefs, root, the browser for
# report checks) fails instead.
# The system state that tests may touch (swap areas, swaplab cgroups, zram,
# zswap, sysctls, tracefs mounts and instances, balloon processes: the
# snapshot of crates/testkit/src/state.rs, which the tests use too) is
# recorded before and compared after: the suite fails if anything was left
# changed, even when a test failed.
# Each phase prints its duration, the guest matrix its boots' and
# configurations' too, and the end lists the phases, the slowest test
# binaries and tests (target/test-results/times.txt has them all).
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
results=$PWD/target/test-results
rm -rf "$results"
mkdir -p "$results"
# The harness's own checks, as test events beside the tests'.
check() { python3 scripts/test-summary.py --event "$results/harness.json" "$@"; }
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
( t=$(date +%s); swaplab_pyenv; s=$?; echo "   (the Python tools set up in $(( $(date +%s) - t )) s)"; exit $s ) > target/pyenv-setup.log 2>&1 &
pyenv_pid=$!

phase native
echo "== native (C): build with -Wall -Wextra -Werror and test (native/tests/run.sh: the workloads, the preload library, its TSan and ASan builds)"
if make -s -C native OUT="$PWD/target/native" && bash native/tests/run.sh; then
  check "native: make, native/tests/run.sh" ok
else
  check "native: make, native/tests/run.sh" failed "the native build or its tests failed (see above)"
fi

phase "cargo build"
echo "== cargo test --no-run (build every test binary of the workspace)"
# The Python extension (python/, swaplab-py) is built here too, without
# pyo3's extension-module feature (maturin builds pyo3 again with it, a
# few crates): left out, the build resolves the shared crates' features
# without numpy's and pyo3's, and both scripts/kernels.sh's guest-test
# build and `maturin develop` compiled the workspace once more (91 s and
# ~240 s in a fresh clone's suite). docs/decisions.md, "The suite's build
# and its time".
# .ci/run lints in this build (clippy-driver as the workspace's rustc
# wrapper): a lint is then a build error here.
case ${RUSTC_WORKSPACE_WRAPPER:-} in
  *clippy-driver*) echo "   with clippy's lints (RUSTC_WORKSPACE_WRAPPER=clippy-driver, CLIPPY_ARGS=${CLIPPY_ARGS:-})" ;;
esac
cargo test --workspace --no-run --quiet 2>&1 | tee "$log"
if [ "${PIPESTATUS[0]}" = 0 ]; then
  check "cargo build: every test binary" ok
else
  check "cargo build: every test binary" failed "cargo test --no-run failed: see $log"
fi

phase "cargo test"
echo "== cargo test (workspace, every test binary even after a failure, three at a time; a line of counts per binary)"
# The test binaries of `cargo test --workspace --lib --bins --tests`, run
# by scripts/test-binaries three at a time on two CPUs (the root tests of
# all of them take turns through one lock, swaplab_testkit::system_lock;
# the other binaries' tests that need none run beside them), each through
# scripts/test-runner (libtest's JSON events into
# target/test-results/cargo). The doc tests run in the next phase.
mkdir -p "$results/cargo"
cargo test --workspace --no-run --lib --bins --tests --message-format=json > target/test-binaries.json 2>> "$log"
SWAPLAB_TEST_RESULTS=$results/cargo SWAPLAB_TEST_LOCK_LOG=$results/lock-held.tsv \
  python3 scripts/test-binaries target/test-binaries.json 2>&1 | tee -a "$log"
# 1: a binary failed (its results say which); anything else: none ran.
case ${PIPESTATUS[0]} in
  0|1) ;;
  *) check "cargo test: the test binaries run (scripts/test-binaries)" failed "see $log" ;;
esac
# The tests that take turns are the phase's critical path: how long the
# system lock was held in all, and by whom longest.
if [ -s "$results/lock-held.tsv" ]; then
  sort -rn "$results/lock-held.tsv" | awk -F'\t' '{s += $1; if (NR <= 6) top = top sprintf("\n     %6.1f s  %s", $1, $2)}
    END {printf "   (the system lock was held %.0f s by %d tests; longest:%s)\n", s, NR, top}'
fi

# The guest kernels and the python phase run side by side: three one-vCPU
# guests under TCG keep both cores busy, while maturin's compile of one
# crate and pytest use about one core, so the python phase costs the
# guests about half its length instead of all of it. Beside `cargo test`
# they made the host's tests slower by more than they gained, even at the
# lowest CPU weight (docs/decisions.md). The guests are started first and
# their build step (a no-op after the build phase) is waited for, so that
# it does not queue behind maturin's build for cargo's lock.
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
# The dev profile is the tests' (Cargo.toml), and the package asks for
# the features of the tests' build (python/Cargo.toml): maturin reuses
# every workspace crate that build compiled and compiles only pyo3's
# crates and the package's own.
echo "== python: build the package into target/pyenv (maturin develop) and run its tests (pytest)"
p0=$(date +%s)
pylog=target/pytest.log
: > "$pylog"
wait "$pyenv_pid"; pyenv_status=$?
cat target/pyenv-setup.log
p1=$(date +%s)
if [ "$pyenv_status" = 0 ] && (cd python && VIRTUAL_ENV="$PYENV" PATH="$PYENV/bin:$PATH" \
      "$PYENV/bin/maturin" develop --quiet >/dev/null 2>"$OLDPWD/target/maturin.log" \
      || { cat "$OLDPWD/target/maturin.log"; exit 1; }); then
  echo "   (waited $((p1 - p0)) s for the Python tools, maturin develop took $(( $(date +%s) - p1 )) s)"
  # -rs lists each skip with its reason (collected into the summary below).
  SWAPLAB_PYTEST_JSON=$results/pytest.json "$PYENV/bin/python" -m pytest -q -rs -p no:cacheprovider python/tests 2>&1 | tee "$pylog"
  echo "${PIPESTATUS[0]}" > "$results/pytest.status"
  check "python: the package set up (maturin develop)" ok
else
  check "python: the package set up (maturin develop)" failed "the Python package could not be set up (see above)"
fi
echo "   (python: $(( $(date +%s) - p0 )) s)"
# The doc tests (30 s, most of it compiling them) here too, beside the
# guests, where the python phase leaves time before the guests end and no
# host test measures anything (beside the test binaries, in the one run
# that had them there, a prefetch test's prefetcher fell behind its walk;
# docs/decisions.md). Through a rustdoc that may take
# -Z unstable-options (scripts/rustdoc-json: RUSTC_BOOTSTRAP for rustdoc
# only, never in cargo's environment, where build scripts read it and the
# workspace would be rebuilt).
echo "== doc tests (cargo test --doc)"
RUSTDOC=$PWD/scripts/rustdoc-json cargo test --workspace --no-fail-fast --doc -- -Z unstable-options \
  --format json --report-time > "$results/cargo/doc-tests.json" 2>> "$log"
echo $? > "$results/cargo/doc-tests.status"
python3 scripts/test-summary.py --one "$results/cargo/doc-tests.json"
echo "== guest kernels (scripts/kernels.sh): waiting for them"
kstatus=0
if [ -n "$kernels_pid" ]; then
  wait "$kernels_pid"; kstatus=$?
  echo "   (guest kernels: $(( $(date +%s) - k0 )) s)"
fi
cat "$klog"
# The guests' tests are counted from their results. scripts/kernels.sh
# failing without a failed guest test (a configuration that did not
# report, a guest that hung, a matrix that could not start or was killed)
# is the harness's failure. SWAPLAB_KERNELS=0 (never on CI) is one skip.
guest_failed=$(python3 scripts/test-summary.py --counts "$results/guest" 2>/dev/null | tail -1 | grep -Eo '[0-9]+ failed' | grep -Eo '[0-9]+')
if grep -q '^SKIP guest kernels' "$klog"; then
  check "guest kernels" ok
  grep '^SKIP guest kernels' "$klog" > "$results/harness.skips"
elif [ "$kstatus" != 0 ] && [ "${guest_failed:-0}" = 0 ]; then
  check "guest kernels" failed "scripts/kernels.sh exited with status $kstatus and no failed guest test: \
$(grep 'did not report\|could not\|did not finish\|killed' "$klog" || tail -5 "$klog")"
else
  check "guest kernels" ok
fi
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
  check "system state: as before the suite" failed "$(diff <(echo "$before") <(echo "$after"))"
else
  check "system state: as before the suite" ok
fi

echo "phases: $(IFS=,; echo "${phases[*]}" | sed 's/,/, /g')"
# Every result (the host's and guests' test binaries, pytest, the checks
# above) into the summary: failures with their output, skips with their
# reasons, the slowest, and "N passed, N failed, N skipped".
python3 scripts/test-summary.py "$results" --seconds $(( $(date +%s) - start )) || status=1
exit $status
