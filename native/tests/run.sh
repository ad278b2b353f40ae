#!/usr/bin/env bash
# Tests for native/: builds swaplab-workload into a temp dir and checks every
# workload at a small size.  Needs bash, make, gcc, jq.  Last line of output:
# "N passed, N failed"; exit status non-zero on any failure.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/swaplab-native-test.XXXXXX")
bg_pid=
cleanup() {
    if [ -n "$bg_pid" ]; then kill -CONT "$bg_pid" 2>/dev/null; kill "$bg_pid" 2>/dev/null; fi
    rm -rf "$tmp"
}
trap cleanup EXIT

pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
check() { # check DESCRIPTION COMMAND...
    local d=$1; shift
    if "$@"; then ok; else bad "$d"; fi
}

command -v jq >/dev/null || { echo "jq is required"; echo "0 passed, 1 failed"; exit 1; }

if ! make -s -C "$here" OUT="$tmp/build" -j2 all >"$tmp/build.log" 2>&1; then
    cat "$tmp/build.log"
    bad "build"
    echo "$pass passed, $fail failed"
    exit 1
fi
ok
B=$tmp/build/swaplab-workload
SIZE=8M
SIZE_BYTES=$((8 << 20))

# run NAME ARGS...: stdout to $tmp/out, stderr to $tmp/err, status in $rc
run() { "$B" "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?; }
field() { jq -r "$1" <"$tmp/out"; }

for w in qsort genome traverse chase kv; do
    run "$w" --size "$SIZE" --objects
    check "$w: exit 0 (got $rc: $(head -c 300 "$tmp/err"))" [ "$rc" = 0 ]
    check "$w: exactly one stdout line" [ "$(wc -l <"$tmp/out")" = 1 ]
    check "$w: valid JSON with the required fields" jq -e \
        --arg w "$w" --argjson size "$SIZE_BYTES" \
        '.workload == $w and .size == $size and .seed == 42 and (.work | type == "number")
         and .work > 0 and (.work_unit | type == "string")
         and (.checksum | test("^0x[0-9a-f]{16}$")) and .elapsed_ns > 0' "$tmp/out" >/dev/null
    cs1=$(field .checksum)
    cp "$tmp/err" "$tmp/objects.$w"

    # objects: well-formed, bytes = end - start, total within 10 % of SIZE
    check "$w: --objects lines are JSON objects with start/end/bytes" jq -e -s \
        'length > 0 and all(.[]; (.object | type == "string") and (.start | test("^0x[0-9a-f]+$"))
         and (.end | test("^0x[0-9a-f]+$")) and .bytes > 0)' "$tmp/objects.$w" >/dev/null
    total=$(jq -s 'map(.bytes) | add' "$tmp/objects.$w")
    check "$w: objects total $total within 10% of $SIZE_BYTES" \
        [ "$((total * 10 >= SIZE_BYTES * 9 && total * 10 <= SIZE_BYTES * 11))" = 1 ]
    spans_ok=1
    while read -r s e b; do
        [ $((e - s)) = "$b" ] || spans_ok=0
    done < <(jq -r '"\(.start) \(.end) \(.bytes)"' "$tmp/objects.$w")
    check "$w: object end - start == bytes" [ "$spans_ok" = 1 ]

    run "$w" --size "$SIZE"
    check "$w: same seed, same checksum" [ "$(field .checksum)" = "$cs1" ]
    run "$w" --size "$SIZE" --seed 7
    check "$w: seed 7 runs" [ "$rc" = 0 ]
    check "$w: different seed, different checksum" [ "$(field .checksum)" != "$cs1" ]
    check "$w: seed echoed" [ "$(field .seed)" = 7 ]

    # --stop: objects lie inside mappings of the live process; result unchanged
    "$B" "$w" --size "$SIZE" --objects --stop >"$tmp/out" 2>"$tmp/err" &
    bg_pid=$!
    state=
    for _ in $(seq 1 200); do
        state=$(awk '{print $3}' "/proc/$bg_pid/stat" 2>/dev/null)
        [ "$state" = T ] && break
        sleep 0.05
    done
    check "$w: --stop stops the process (state '$state')" [ "$state" = T ]
    inside=1
    if [ "$state" = T ]; then
        maps=$(cat "/proc/$bg_pid/maps")
        while read -r s e; do
            found=0
            while read -r range _; do
                ms=$((16#${range%-*})); me=$((16#${range#*-}))
                if [ $((s >= ms && e <= me)) = 1 ]; then found=1; break; fi
            done <<<"$maps"
            [ "$found" = 1 ] || { inside=0; echo "  object $s-$e not inside one mapping"; }
        done < <(jq -r '"\(.start) \(.end)"' "$tmp/err")
    else
        inside=0
    fi
    check "$w: object ranges lie inside the process's mappings" [ "$inside" = 1 ]
    kill -CONT "$bg_pid" 2>/dev/null
    wait "$bg_pid"; rc=$?
    bg_pid=
    check "$w: resumed run exits 0" [ "$rc" = 0 ]
    check "$w: resumed run has the same checksum" [ "$(field .checksum)" = "$cs1" ]
done

# workload-specific checks
run qsort --size "$SIZE"
check "qsort: sorted" [ "$(field .sorted)" = true ]
check "qsort: work = elements" [ "$(field .work)" = $((SIZE_BYTES / 8)) ]
run qsort --size 4100
check "qsort: odd size sorts" [ "$rc $(field .sorted) $(field .work)" = "0 true 512" ]

run traverse --size "$SIZE"
cs_t=$(field .checksum)
check "traverse: work = passes x bytes" [ "$(field .work)" = $((4 * SIZE_BYTES)) ]
run traverse --size "$SIZE" --threads 2
check "traverse: --threads 2 same checksum" [ "$rc $(field .checksum) $(field .threads)" = "0 $cs_t 2" ]
run traverse --size "$SIZE" --fork --threads 2
check "traverse: --fork same checksum" [ "$rc $(field .checksum) $(field .fork)" = "0 $cs_t true" ]
check "traverse: --fork child pid reported" [ "$(field .child_pid)" -gt 0 ]
run traverse --size "$SIZE" --passes 2
check "traverse: --passes 2" [ "$rc $(field .work)" = "0 $((2 * SIZE_BYTES))" ]

run chase --size "$SIZE" --threads 2
check "chase: --threads 2" [ "$rc $(field .work) $(field .threads)" = "0 $((4 * SIZE_BYTES / 8)) 2" ]
cs_c2=$(field .checksum)
run chase --size "$SIZE" --threads 2
check "chase: --threads 2 deterministic" [ "$(field .checksum)" = "$cs_c2" ]
run chase --size "$SIZE" --ops 1001
check "chase: --ops" [ "$rc $(field .work)" = "0 1001" ]

run genome --size 1M --ops 10000
check "genome: --ops bounds probes" [ "$rc" = 0 ] && \
    check "genome: probes close to --ops" [ "$(field '.work <= 10000 and .work >= 9996')" = true ]
run genome --size "$SIZE"
check "genome: contigs extended" [ "$(field '.contigs > 0 and .contig_bases > .contigs * 31')" = true ]

run kv --size "$SIZE" --ops 100000
check "kv: --ops, no misses, ~90% GET" \
    [ "$(field '.work == 100000 and .misses == 0 and (.gets / .work) > 0.88 and (.gets / .work) < 0.92')" = true ]

run traverse --size 1.5M
check "size 1.5M = 1572864" [ "$rc $(field .size)" = "0 1572864" ]
run traverse --size=64KiB --seed=3
check "--size=64KiB --seed=3" [ "$rc $(field .size) $(field .seed)" = "0 65536 3" ]

run list
check "list" [ "$rc $(wc -l <"$tmp/out")" = "0 5" ]
run list --json
check "list --json" jq -e 'length == 5 and all(.[]; .name and .description and .work_unit)' "$tmp/out" >/dev/null

# bad arguments -> exit 2 with a message and the usage on stderr
bad_args() {
    run "$@"
    if [ "$rc" = 2 ] && grep -q 'usage:' "$tmp/err" && [ ! -s "$tmp/out" ]; then ok
    else bad "bad args '$*' -> exit $rc (want 2 + usage)"; fi
}
bad_args
bad_args nosuch --size 8M
bad_args qsort
bad_args qsort --size
bad_args qsort --size 0
bad_args qsort --size abc
bad_args qsort --size 12Q
bad_args qsort --size 100
bad_args qsort --size 8M --seed -1
bad_args qsort --size 8M --seed 1x
bad_args qsort --size 8M --ops 5
bad_args qsort --size 8M --threads 2
bad_args kv --size 8M --fork
bad_args traverse --size 8M --passes 0
bad_args traverse --size 8M --threads 0
bad_args traverse --size 8M --frobnicate
bad_args list --bogus

# allocation failure -> exit 4 with a message
(ulimit -v 200000; exec "$B" traverse --size 1G) >"$tmp/out" 2>"$tmp/err"; rc=$?
check "allocation failure -> exit 4 (got $rc)" [ "$rc" = 4 ]
check "allocation failure message" grep -q 'cannot allocate' "$tmp/err"

# bench-vma: what /proc/self/maps reports for each pattern's region
for p in control cont strided random frag; do
    run bench-vma --pattern "$p" --ops 512 --points 16 --lat "$tmp/lat.$p" --samples "$tmp/smp.$p"
    check "bench-vma $p: exit 0 (got $rc: $(head -c 300 "$tmp/err"))" [ "$rc" = 0 ]
    timed=$(field .timed_ops)
    check "bench-vma $p: one u32 latency per timed operation" \
        [ "$(stat -c %s "$tmp/lat.$p")" = "$((timed * 4))" ]
    check "bench-vma $p: 17 samples + header" [ "$(wc -l <"$tmp/smp.$p")" = 18 ]
done
run bench-vma --pattern cont --ops 512 --points 16 --lat "$tmp/lat" --samples "$tmp/smp"
check "bench-vma cont: one VMA for the region" [ "$(field .region_vmas)" = 1 ]
run bench-vma --pattern strided --ops 512 --points 16 --lat "$tmp/lat" --samples "$tmp/smp"
check "bench-vma strided: one VMA per mapping" [ "$(field .region_vmas)" = 512 ]
run bench-vma --pattern frag --ops 512 --points 16 --lat "$tmp/lat" --samples "$tmp/smp"
check "bench-vma frag: the blocks left in place are separate VMAs" [ "$(field .region_vmas)" = 256 ]
for a in "" "--pattern x --ops 5 --lat a --samples b" "--pattern cont --ops 0 --lat a --samples b" \
         "--pattern cont --lat a --samples b" "--pattern frag --ops 1 --lat a --samples b"; do
    # shellcheck disable=SC2086
    run bench-vma $a
    check "bench-vma '$a' -> exit 2 (got $rc)" [ "$rc" = 2 ]
done

check "preload library (native/tests/preload.sh)" "$here/tests/preload.sh" "$tmp/build"
check "preload library under ThreadSanitizer and AddressSanitizer (native/tests/sanitize.sh)" \
    "$here/tests/sanitize.sh" "$tmp/build"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
