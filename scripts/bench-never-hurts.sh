#!/usr/bin/env bash
# The benchmark of "advice and prefetching that never hurt by default"
# (docs/prefetch.md, "Never slower by default"): on each real program
# (docs/programs.md) at 50 % of its peak, swaplab's default advice
# (`swaplab advise`, which simulates each hint and, as root, verifies it)
# and `--prefetch leap` against the program alone, medians of REPEAT
# interleaved runs; and traverse started through `sh -c` at 64M and 128M,
# leap against base. Prints one line per program with the ratios and
# whether each target holds, and writes one report of every sweep.
#
#   sudo scripts/bench-never-hurts.sh [SIZE] [REPEAT]     (default 64M 5)
#   PROGRAMS="sqlite sort" TIMEOUT=120s scripts/bench-never-hurts.sh 64M 3
#   PROGRAMS=xz TRAVERSE= scripts/bench-never-hurts.sh 32M 5   (no traverse)
#
# Targets: advised and leap each at most 1.05x base's run time on every
# program; leap at least 2x faster than base on traverse through sh -c.
# Needs root, a memory cgroup and swap files (what `swaplab run` needs).
set -euo pipefail
cd "$(dirname "$0")/.."
size=${1:-64M}
repeat=${2:-5}
swaplab=${SWAPLAB:-target/release/swaplab}
[ -x "$swaplab" ] || cargo build --release -q -p swaplab
out=${OUT:-target/bench-never-hurts}
mkdir -p "$out"
swap=file:2G
# A cell's runs are killed at this time (xz and pydict at 64M and 50 %
# take minutes per run on a 2-CPU VM with a swap file).
timeout=${TIMEOUT:-300s}
programs=${PROGRAMS-sqlite sort xz pydict}
traverse_sizes=${TRAVERSE-64M 128M}
sweeps=()

median_wall() { # JSON of a sweep, variant -> median wall s
  python3 -c 'import json,sys
d=json.load(open(sys.argv[1]))
for c in d["cells"]:
    if c["variant"]==sys.argv[2]:
        print("%.3f" % (c["wall_ns"]["median"]/1e9) if c.get("wall_ns") else "nan")' "$1" "$2"
}
spread() { # JSON of a sweep -> each variant's runs as min-max over base's median
  python3 -c 'import json,sys
d=json.load(open(sys.argv[1]))
cs={c["variant"]: c.get("wall_ns") for c in d["cells"]}
b=(cs.get("base") or {}).get("median")
print(" ".join("%s %.2f-%.2f" % (v, w["min"]/b, w["max"]/b) for v, w in cs.items() if w and b))' "$1"
}
outcome() {
  python3 -c 'import json,sys
d=json.load(open(sys.argv[1]))
print(";".join("%s=%s" % (c["variant"], ",".join("%s %d" % kv for kv in c.get("idle", {}).items()) or "-") for c in d["cells"]))' "$1"
}
verdict() { # ratio limit cmp -> PASS/FAIL
  python3 -c 'import sys
r,l,op=float(sys.argv[1]),float(sys.argv[2]),sys.argv[3]
print("PASS" if (r<=l if op=="le" else r>=l) else "FAIL")' "$1" "$2" "$3"
}
sweep_id() {
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["sweep_id"])' "$1"
}

printf '%-10s %9s %9s %9s  %s\n' program base_s leap/base adv/base "targets (<= 1.05) and outcomes"
for p in $programs; do
  cmd=(swaplab-workload "$p" --size "$size")
  tr=$("$swaplab" trace --mem-limit 50% --swap "$swap" --timeout "$timeout" --json -- "${cmd[@]}" 2>"$out/$p-trace.err" \
       | python3 -c 'import json,sys; print(json.load(sys.stdin)["runs"][0]["id"])' 2>/dev/null) \
    || { echo "tracing $p failed: see $out/$p-trace.err"; exit 1; }
  "$swaplab" advise "$tr" -o "$out/$p-hints.toml" > "$out/$p-advise.txt" 2>&1
  "$swaplab" sweep --limits 50% --repeat "$repeat" --swap "$swap" --timeout "$timeout" --variant base= \
    --variant leap="--prefetch leap" --variant advised="--hints $out/$p-hints.toml" \
    --json -- "${cmd[@]}" > "$out/$p.json" 2>"$out/$p.err" || true
  sweeps+=("s$(sweep_id "$out/$p.json")")
  b=$(median_wall "$out/$p.json" base)
  l=$(median_wall "$out/$p.json" leap)
  a=$(median_wall "$out/$p.json" advised)
  rl=$(python3 -c "print('%.3f' % (float('$l')/float('$b')))")
  ra=$(python3 -c "print('%.3f' % (float('$a')/float('$b')))")
  # advise may keep no hint: then the advised runs are the program alone
  # and their ratio is only the spread of identical runs.
  if grep -q '^\[\[hint\]\]' "$out/$p-hints.toml"; then va=$(verdict "$ra" 1.05 le); else va="n/a (no hint written)"; fi
  printf '%-10s %9s %9s %9s  leap %s, advised %s; %s; runs/base median: %s\n' "$p" "$b" "$rl" "$ra" \
    "$(verdict "$rl" 1.05 le)" "$va" "$(outcome "$out/$p.json")" "$(spread "$out/$p.json")"
done

w=$("$swaplab" workload list | awk '/^binary:/ {print $2}')
for s in $traverse_sizes; do
  "$swaplab" sweep --limits 50% --repeat "$repeat" --swap "$swap" --variant base= \
    --variant leap="--prefetch leap" --json -- sh -c "$w traverse --size $s; true" \
    > "$out/traverse-sh-$s.json" 2>"$out/traverse-sh-$s.err" || true
  sweeps+=("s$(sweep_id "$out/traverse-sh-$s.json")")
  b=$(median_wall "$out/traverse-sh-$s.json" base)
  l=$(median_wall "$out/traverse-sh-$s.json" leap)
  speed=$(python3 -c "print('%.2f' % ($b/$l))")
  printf '%-10s %9s %9s %9s  leap %.2fx base: %s (>= 2x); %s\n' "sh-trav$s" "$b" \
    "$(python3 -c "print('%.3f' % ($l/$b))")" - "$speed" "$(verdict "$speed" 2 ge)" \
    "$(outcome "$out/traverse-sh-$s.json")"
done
"$swaplab" report "${sweeps[@]}" -o "$out/never-hurts.html" >/dev/null
echo "report: $out/never-hurts.html (sweeps ${sweeps[*]}); hint files and advise output in $out/"
