#!/usr/bin/env bash
# The preload library and its probe built with ThreadSanitizer and with
# AddressSanitizer (`make tsan`, `make asan`), run under each: the probe's
# self-checking modes (as in preload.sh), and under ASan also the workload
# (not instrumented) with the library's log, heap sampler and prefetch
# thread.
#   native/tests/sanitize.sh [BUILD_DIR]
# BUILD_DIR holds swaplab-workload (run.sh passes its own); the sanitizer
# builds go into BUILD_DIR/tsan and BUILD_DIR/asan (without BUILD_DIR, a
# temp dir).  A sanitizer report, a failed check or a hang fails.  A
# compiler that cannot build and run a program with -fsanitize=thread (or
# address) skips that sanitizer with a SKIP line; on CI (CI=true) that is
# a failure.  Last line: "N passed, N failed, N skipped".
#
# How the library is loaded (docs/decisions.md, native/preload): LD_PRELOAD
# of the instrumented library into the instrumented probe; both need the
# same runtime (libtsan / libasan), which the dynamic linker loads after
# the library, so the library's malloc comes first.  The interposed
# functions are not instrumented (NOSAN in preload/preload.h): the runtime
# calls them while it starts.  TSan sees every access and lock of the
# library's and the probe's threads.  ASan insists on being first in the
# library list (verify_asan_link_order=0 lets it run second); malloc's
# blocks come from glibc through the library, without redzones, so ASan
# checks the instrumented code's globals and stacks, not heap bounds.
# TSan cannot start threads in a child forked from a multi-threaded
# process, nor run threads in a program that is not instrumented: the
# probe's fork and gate modes (which fork while the library's thread runs)
# and the workload run under ASan only.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/swaplab-sanitize-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

pass=0
fail=0
skip=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
check() { # check DESCRIPTION COMMAND...
    local d=$1; shift
    if "$@"; then ok; else bad "$d"; fi
}

build=${1:-$tmp/build}
make -s -C "$here" OUT="$build" "$build/swaplab-workload" >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; bad "build the workload"; }
W=$build/swaplab-workload
root=0
[ "$(id -u)" = 0 ] && root=1

# TSan reports every race and exits 66 at the end; ASan stops at its first
# error (an ERROR line, exit 1).
export TSAN_OPTIONS="die_after_fork=0 exitcode=66"
export ASAN_OPTIONS="verify_asan_link_order=0 detect_leaks=0"

# runs SAN DESCRIPTION WANT_RC [VAR=VALUE...] COMMAND...: under the library
# $SO, output in $tmp/out, $tmp/err; passes when the exit status is
# WANT_RC and the sanitizer reported nothing.
runs() {
    local san=$1 d=$2 want=$3; shift 3
    timeout 300 env -u SWAPLAB_HINTS -u SWAPLAB_ALLOC_DIR -u SWAPLAB_PREFETCH LD_PRELOAD="$SO" "$@" \
        >"$tmp/out" 2>"$tmp/err"; local rc=$?
    local reports
    reports=$(grep -c 'WARNING: ThreadSanitizer\|ERROR: AddressSanitizer\|ERROR: LeakSanitizer\|Sanitizer:DEADLYSIGNAL' "$tmp/err")
    if [ "$rc" = "$want" ] && [ "$reports" = 0 ]; then
        ok
    else
        bad "$san: $d (exit $rc, want $want; $reports sanitizer reports):
$(head -c 4000 "$tmp/err")
$(head -c 500 "$tmp/out")"
    fi
}

for san in tsan asan; do
    flag=$([ "$san" = tsan ] && echo thread || echo address)
    # Can this compiler build and run a sanitized program at all?
    printf 'int main(void) { return 0; }\n' >"$tmp/t.c"
    if ! ${CC:-gcc} -fsanitize="$flag" -o "$tmp/t" "$tmp/t.c" >"$tmp/t.log" 2>&1 || ! "$tmp/t" >>"$tmp/t.log" 2>&1; then
        if [ "${CI:-}" = true ]; then
            bad "$san: ${CC:-gcc} cannot build and run a program with -fsanitize=$flag (CI has the runtime: install libtsan / libasan): $(head -c 500 "$tmp/t.log")"
        else
            skip=$((skip + 1))
            echo "SKIP $san: ${CC:-gcc} cannot build and run a program with -fsanitize=$flag (install the compiler's libtsan / libasan): $(head -c 300 "$tmp/t.log")"
        fi
        continue
    fi
    if ! make -s -C "$here" OUT="$build" "$san" >"$tmp/build.log" 2>&1; then
        cat "$tmp/build.log"; bad "$san: make $san"; continue
    fi
    SO=$build/$san/libswaplab-preload.so
    P=$build/$san/swaplab-preload-probe

    # the probe's modes (as in preload.sh; hints learned from its own log)
    d=$tmp/$san; rm -rf "$d"; mkdir -p "$d/learn"
    runs $san "probe hints" 0 SWAPLAB_ALLOC_DIR="$d/learn" "$P" hints "$d/hints" $((3 << 20))
    probe() { # probe MODE ARGS...: with the hints
        rm -rf "$d/logs"; mkdir -p "$d/logs"
        runs $san "probe $*" 0 SWAPLAB_ALLOC_DIR="$d/logs" SWAPLAB_HINTS="$d/hints" "$P" "$@"
    }
    if [ "$root" = 1 ]; then
        probe remap
    else # (its hints mlock 2 MiB)
        rm -rf "$d/logs"; mkdir -p "$d/logs"
        runs $san "probe remap (no hints)" 0 SWAPLAB_ALLOC_DIR="$d/logs" "$P" remap
    fi
    probe dliter
    probe many 20000
    [ "$san" = asan ] && probe gate
    if [ "$root" = 1 ]; then # mlock of 3 MiB (RLIMIT_MEMLOCK), perf events
        probe mremap
        probe quota
        [ "$san" = asan ] && probe fork 10
        mkdir -p "$d/trend"
        runs $san "probe trend (the prefetch thread)" 0 SWAPLAB_PREFETCH=thread \
            SWAPLAB_HINT_REPORT="$d/trend-report" "$P" trend "$d/trend"
    fi
    rm -rf "$d/logs"; mkdir -p "$d/logs"
    runs $san "probe sample" 0 SWAPLAB_ALLOC_DIR="$d/logs" SWAPLAB_HEAP_SAMPLE=64K \
        SWAPLAB_HEAP_SAMPLE_SEED=7 "$P" sample

    # the workload (not instrumented) under the instrumented library: same
    # checksums as without it
    [ "$san" = asan ] || continue
    for args in "traverse --size 8M --threads 4" "traverse --size 8M --fork" "genome --size 8M" "kv --size 8M"; do
        rm -rf "$d/logs"; mkdir -p "$d/logs"
        # shellcheck disable=SC2086
        want=$("$W" $args | jq -r .checksum)
        # shellcheck disable=SC2086
        runs $san "workload $args (log, heap sampler, prefetch thread)" 0 SWAPLAB_ALLOC_DIR="$d/logs" \
            SWAPLAB_HEAP_SAMPLE=64K SWAPLAB_PREFETCH=thread "$W" $args
        check "$san: workload $args: same checksum" [ "$(jq -r .checksum <"$tmp/out")" = "$want" ]
    done
done

echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]
