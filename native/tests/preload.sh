#!/usr/bin/env bash
# Tests of libswaplab-preload.so on the built workload.
#   native/tests/preload.sh [BUILD_DIR]
# BUILD_DIR holds swaplab-workload, libswaplab-preload.so and
# swaplab-preload-probe (run.sh passes its own); without it the script
# builds into a temp dir.  Needs bash, make,
# gcc, jq, python3 (a small parser of the allocation log).  Last line:
# "N passed, N failed"; exit status non-zero on any failure.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/swaplab-preload-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
check() { # check DESCRIPTION COMMAND...
    local d=$1; shift
    if "$@"; then ok; else bad "$d"; fi
}

for t in jq python3; do
    command -v "$t" >/dev/null || { echo "$t is required"; echo "0 passed, 1 failed"; exit 1; }
done

build=${1:-}
if [ -z "$build" ]; then
    build=$tmp/build
    if ! make -s -C "$here" OUT="$build" -j2 all >"$tmp/build.log" 2>&1; then
        cat "$tmp/build.log"; bad "build"; echo "$pass passed, $fail failed"; exit 1
    fi
fi
B=$build/swaplab-workload
SO=$build/libswaplab-preload.so
check "library built" [ -f "$SO" ]

# A parser of allocs.*.bin (the format is documented in preload/preload.c).
# parse.py DIR: one JSON object per file on stdout:
#   {"pid","ppid","forked","allocs":[[addr,size,stack_id,func]...],
#    "frees":[[addr,size,func]...],"forks":[pid...],"hints":[[id,action,addr,len,result]...],
#    "stacks":{id:[[module,offset]...]},"modules":{id:path}}
# Exits 1 with a message on any malformed file.
cat >"$tmp/parse.py" <<'EOF'
import glob, json, os, struct, sys
def parse(path):
    b = open(path, "rb").read()
    if len(b) < 32 or b[:8] != b"SWLALOG1":
        raise ValueError("bad header")
    ver, pid, ppid, flags, t0 = struct.unpack_from("<IIIIQ", b, 8)
    if ver != 1:
        raise ValueError("version %d" % ver)
    out = {"pid": pid, "ppid": ppid, "forked": bool(flags & 1), "allocs": [], "frees": [],
           "forks": [], "hints": [], "stacks": {}, "modules": {}}
    off = 32
    while off < len(b):
        if len(b) - off < 8:
            raise ValueError("truncated at %d" % off)
        ty, ln = struct.unpack_from("<II", b, off)
        if ln < 8 or ln % 8 or off + ln > len(b):
            raise ValueError("bad length %d at %d" % (ln, off))
        if ty in (1, 2):
            assert ln == 48
            tid, func, t, addr, size, stk = struct.unpack_from("<IIQQQI", b, off + 8)
            if ty == 1:
                out["allocs"].append([addr, size, stk, func])
            else:
                out["frees"].append([addr, size, func])
        elif ty == 3:
            sid, depth = struct.unpack_from("<II", b, off + 8)
            assert ln == 16 + 16 * depth and depth <= 16
            fr = [list(struct.unpack_from("<I4xQ", b, off + 16 + 16 * i)) for i in range(depth)]
            out["stacks"][sid] = fr
        elif ty == 4:
            mid, plen = struct.unpack_from("<II", b, off + 8)
            assert ln == (16 + plen + 7) // 8 * 8
            out["modules"][mid] = b[off + 16:off + 16 + plen].decode()
        elif ty == 5:
            tid, hid, t, addr, l, act, res = struct.unpack_from("<IIQQQIi", b, off + 8)
            out["hints"].append([hid, act, addr, l, res])
        elif ty == 6:
            assert ln == 24
            out["forks"].append(struct.unpack_from("<I", b, off + 8)[0])
        else:
            raise ValueError("unknown type %d at %d" % (ty, off))
        off += ln
    # every referenced stack and module is defined
    for a in out["allocs"]:
        assert a[2] in out["stacks"], "stack %d undefined" % a[2]
    for fr in out["stacks"].values():
        for m, _ in fr:
            assert m == 0 or m in out["modules"], "module %d undefined" % m
    return out
try:
    for p in sorted(glob.glob(os.path.join(sys.argv[1], "allocs.*.bin"))):
        print(json.dumps(parse(p)))
except Exception as e:
    print("malformed log %s: %r" % (p, e), file=sys.stderr)
    sys.exit(1)
EOF

# objects_logged OBJECTS_FILE PARSED_FILE: every object >= 64 KiB reported by
# --objects has an ALLOC with the same start and size >= its bytes.
objects_logged() {
    python3 - "$1" "$2" <<'EOF'
import json, sys
objs = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
logs = [json.loads(l) for l in open(sys.argv[2])]
allocs = [a for l in logs for a in l["allocs"]]
ok = len(objs) > 0
for o in objs:
    if o["bytes"] < 65536:
        continue
    s = int(o["start"], 16)
    if not any(a[0] == s and a[1] >= o["bytes"] for a in allocs):
        print("  no ALLOC for %s" % o)
        ok = False
sys.exit(0 if ok else 1)
EOF
}

# run_case NAME ARGS...: preloaded with --objects, then plain; compares.
run_case() {
    local name=$1; shift
    local d=$tmp/logs.$name
    rm -rf "$d"; mkdir -p "$d"
    LD_PRELOAD=$SO SWAPLAB_ALLOC_DIR=$d "$B" "$@" --objects >"$tmp/out" 2>"$tmp/err"; rc=$?
    check "$name: exit 0 under the library (got $rc: $(head -c 300 "$tmp/err"))" [ "$rc" = 0 ]
    "$B" "$@" >"$tmp/plain" 2>/dev/null
    check "$name: same checksum with and without the library" \
        [ "$(jq -r .checksum <"$tmp/out")" = "$(jq -r .checksum <"$tmp/plain")" ]
    check "$name: no stderr besides the objects" [ -z "$(grep -v '^{' "$tmp/err")" ]
    if python3 "$tmp/parse.py" "$d" >"$tmp/parsed.$name"; then ok; else bad "$name: logs parse"; fi
    check "$name: objects appear as ALLOC records" objects_logged "$tmp/err" "$tmp/parsed.$name"
}

run_case traverse traverse --size 8M
check "traverse: one log" [ "$(wc -l <"$tmp/parsed.traverse")" = 1 ]
check "traverse: the array is freed" jq -e --argjson s "$(jq '.start' -r <"$tmp/err" | head -1 | xargs printf '%d')" \
    '.frees | any(.[0] == $s and .[2] == 11)' "$tmp/parsed.traverse" >/dev/null
check "traverse: frames resolve to the workload executable" jq -e --arg exe "$(readlink -f "$B")" \
    '[.modules[]] | index($exe) != null' "$tmp/parsed.traverse" >/dev/null
run_case genome genome --size 8M
run_case chase chase --size 8M
run_case kv kv --size 8M
run_case qsort qsort --size 8M
run_case threads traverse --size 8M --threads 4
run_case fork traverse --size 8M --fork
check "fork: two logs" [ "$(wc -l <"$tmp/parsed.fork")" = 2 ]
parent=$(jq -r 'select(.forked | not) | .pid' "$tmp/parsed.fork")
child=$(jq -r .child_pid <"$tmp/out")
check "fork: the child's log is forked with ppid = parent" \
    [ "$(jq -r 'select(.forked) | "\(.pid) \(.ppid)"' "$tmp/parsed.fork")" = "$child $parent" ]
check "fork: the parent's log has a FORK record for the child" \
    [ "$(jq -r 'select(.forked | not) | .forks[0]' "$tmp/parsed.fork")" = "$child" ]

# exec: a preloaded shell forks and execs the workload, whose log is its own
d=$tmp/logs.exec; mkdir -p "$d"
LD_PRELOAD=$SO SWAPLAB_ALLOC_DIR=$d sh -c '"$0" traverse --size 8M --objects; true' "$B" \
    >"$tmp/out" 2>"$tmp/err"
check "exec: workload ran" [ "$(jq -r .workload <"$tmp/out")" = traverse ]
if python3 "$tmp/parse.py" "$d" >"$tmp/parsed.exec"; then ok; else bad "exec: logs parse"; fi
check "exec: the exec'd workload's array is logged" objects_logged "$tmp/err" "$tmp/parsed.exec"

# threshold
d=$tmp/logs.min; mkdir -p "$d"
LD_PRELOAD=$SO SWAPLAB_ALLOC_DIR=$d SWAPLAB_ALLOC_MIN=16M "$B" traverse --size 8M >/dev/null 2>&1
python3 "$tmp/parse.py" "$d" >"$tmp/parsed.min"
check "SWAPLAB_ALLOC_MIN=16M: nothing logged for an 8M array" \
    jq -e '.allocs | length == 0' "$tmp/parsed.min" >/dev/null

# no log directory: one message, the program still runs
LD_PRELOAD=$SO SWAPLAB_ALLOC_DIR=/nonexistent/swaplab "$B" traverse --size 8M >"$tmp/out" 2>"$tmp/err"; rc=$?
check "missing SWAPLAB_ALLOC_DIR: exit 0" [ "$rc" = 0 ]
check "missing SWAPLAB_ALLOC_DIR: message" grep -q '^swaplab-preload: cannot create /nonexistent/swaplab/allocs\.' "$tmp/err"
check "missing SWAPLAB_ALLOC_DIR: same checksum" \
    [ "$(jq -r .checksum <"$tmp/out")" = "$("$B" traverse --size 8M | jq -r .checksum)" ]

# hints: resolve the array's stack from the traverse log, mlock it
exe=$(readlink -f "$B")
python3 - "$tmp/parsed.traverse" "$tmp/hints" <<'EOF'
import json, sys
l = json.loads(open(sys.argv[1]).readline())
a = l["allocs"][0]
fr = l["stacks"][str(a[2])]
pairs = "".join("\t%s\t0x%x" % (l["modules"][str(m)], o) for m, o in fr)
open(sys.argv[2], "w").write("swaplab-hints\t1\nbudget\t%d\nhint\t3\tmlock\t0\t0\t%d%s\n" % (64 << 20, len(fr), pairs))
EOF
rm -f "$tmp/report"
LD_PRELOAD=$SO SWAPLAB_HINTS=$tmp/hints SWAPLAB_HINT_REPORT=$tmp/report "$B" traverse --size 8M --objects \
    >"$tmp/out" 2>"$tmp/err"; rc=$?
start=$(jq -r .start <"$tmp/err")
check "mlock hint: exit 0" [ "$rc" = 0 ]
check "mlock hint: report line ($(cat "$tmp/report" 2>/dev/null))" \
    grep -qP "^[0-9]+\t3\tmlock\t$start\t8388608\tok\$" "$tmp/report"
# the same hint over budget
sed -i 's/^budget\t.*/budget\t4096/' "$tmp/hints"
rm -f "$tmp/report"
LD_PRELOAD=$SO SWAPLAB_HINTS=$tmp/hints SWAPLAB_HINT_REPORT=$tmp/report "$B" traverse --size 8M >/dev/null 2>&1
check "mlock hint over budget: ENOMEM" grep -qP "\tmlock\t0x[0-9a-f]+\t8388608\tENOMEM\$" "$tmp/report"

# (64 MiB: the prefetch thread follows the first-touch frontier, and an 8 MiB
# first pass can end before a loaded machine schedules the thread at all)
# two hints on one site: mlock 40 % and willneed; both apply (mlock first)
sed -i 's/^budget\t.*/budget\t67108864/' "$tmp/hints"
frames=$(grep '^hint' "$tmp/hints" | cut -f6-)
lock=$(( (8 << 20) * 4 / 10 ))
printf 'hint\t4\tmlock\t%d\t0\t%s\nhint\t5\twillneed\t1048576\t200\t%s\n' \
    "$lock" "$frames" "$frames" >>"$tmp/hints"
sed -i '/^hint\t3\t/d' "$tmp/hints"
rm -f "$tmp/report"
LD_PRELOAD=$SO SWAPLAB_HINTS=$tmp/hints SWAPLAB_HINT_REPORT=$tmp/report "$B" traverse --size 64M --passes 2 \
    >"$tmp/out" 2>"$tmp/err"; rc=$?
check "mlock + willneed: exit 0 ($(cat "$tmp/err"))" [ "$rc" = 0 ]
check "mlock + willneed: mlock 40% first" grep -qP "^[0-9]+\t4\tmlock\t0x[0-9a-f]+\t$lock\tok\$" <(head -1 "$tmp/report")
check "mlock + willneed: prefetch windows issued" grep -qP "\t5\twillneed\t0x[0-9a-f]+\t[0-9]+\tok\$" "$tmp/report"

# malformed hints: one clear line, the program runs
printf 'swaplab-hints\t1\nbudget\tlots\n' >"$tmp/badhints"
LD_PRELOAD=$SO SWAPLAB_HINTS=$tmp/badhints "$B" traverse --size 1M >"$tmp/out" 2>"$tmp/err"; rc=$?
check "malformed hints: exit 0" [ "$rc" = 0 ]
check "malformed hints: FILE:LINE message ($(cat "$tmp/err"))" grep -q "^swaplab-preload: $tmp/badhints:2: budget" "$tmp/err"
LD_PRELOAD=$SO SWAPLAB_HINTS=/nonexistent/hints "$B" traverse --size 1M >"$tmp/out" 2>"$tmp/err"; rc=$?
check "missing hints file: exit 0 and a message" \
    [ "$rc $(grep -c '^swaplab-preload: /nonexistent/hints: cannot open' "$tmp/err")" = "0 1" ]

# The library's own rules, checked by the self-checking probe
# (tests/preload_probe.c; it reads back its own log, VmLck and the
# library's tree statistics).  A hang would be a deadlock: `timeout` turns
# it into a failure.
P=$build/swaplab-preload-probe
[ -x "$P" ] || make -s -C "$here" OUT="$build" "$P" >"$tmp/probe-build.log" 2>&1 || cat "$tmp/probe-build.log"
probe() { # probe DESCRIPTION MODE ARGS...
    local d=$1; shift
    rm -rf "$tmp/probe"; mkdir -p "$tmp/probe"
    LD_PRELOAD=$SO SWAPLAB_ALLOC_DIR=$tmp/probe SWAPLAB_HINTS=$tmp/probe-hints \
        timeout 300 "$P" "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?
    check "$d (exit $rc: $(cat "$tmp/out" "$tmp/err"))" [ "$rc" = 0 ]
}
rm -rf "$tmp/probe"; mkdir -p "$tmp/probe"
LD_PRELOAD=$SO SWAPLAB_ALLOC_DIR=$tmp/probe "$P" hints "$tmp/probe-hints" $((3 << 20)) >"$tmp/out" 2>"$tmp/err"
check "probe: hints learned from its own log ($(cat "$tmp/err"))" [ "$(grep -c '^hint' "$tmp/probe-hints")" = 5 ]
probe "failed mremap / munmap: no FREE, mlock budget kept" mremap
probe "fork: the child starts with no locked bytes, never deadlocks" fork 50
probe "no lock held across the background madvise" gate
probe "a hint's budget holds across every allocation it matches" quota
# SWAPLAB_PREFETCH=thread: prefetch ahead of a sequential walk, none for a random one
mkdir -p "$tmp/trend"; rm -f "$tmp/trend-report"
SWAPLAB_PREFETCH=thread SWAPLAB_HINT_REPORT=$tmp/trend-report LD_PRELOAD=$SO \
    timeout 300 "$P" trend "$tmp/trend" >"$tmp/out" 2>"$tmp/err"; rc=$?
check "prefetch thread: calls ahead of a sequential walk, none in a random one (exit $rc: $(cat "$tmp/out" "$tmp/err"))" [ "$rc" = 0 ]
check "prefetch thread: fewer major faults than pages" jq -e '.seq_majflt < .pages' "$tmp/out" >/dev/null
probe "mremap MREMAP_FIXED logs the replaced mapping's FREE, MREMAP_DONTUNMAP none" remap
probe "an allocation inside dl_iterate_phdr does not deadlock" dliter
probe "munmap of 100k mappings: exact FREEs, logarithmic tree cost" many 100000
check "many: steps per operation reported" jq -e '.steps_per_op > 0 and .steps_per_op <= .bound' "$tmp/out" >/dev/null
# the heap sampler: sample counts, intervals, stacks and FREEs (seeded: deterministic)
rm -rf "$tmp/probe"; mkdir -p "$tmp/probe"
LD_PRELOAD=$SO SWAPLAB_ALLOC_DIR=$tmp/probe SWAPLAB_HEAP_SAMPLE=64K SWAPLAB_HEAP_SAMPLE_SEED=7 \
    timeout 300 "$P" sample >"$tmp/out" 2>"$tmp/err"; rc=$?
check "heap sampler: samples, intervals, FREEs of sampled blocks only (exit $rc: $(cat "$tmp/out" "$tmp/err"))" [ "$rc" = 0 ]

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
