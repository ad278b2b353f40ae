#!/usr/bin/env bash
# What the kernel's reclaim did to one command, per scan outcome, from the
# vmscan tracepoints: the breakdown /proc/vmstat cannot give (it has no
# nr_ref_keep, and on cgroup v1 its counters are machine-wide).
#
#   scripts/reclaim-breakdown.sh [--csv FILE] -- swaplab run --mem-limit 90% -- CMD...
#
# Root. The events are those of this script's process tree only
# (set_event_pid with event-fork): the command, its cgroup's direct
# reclaim, none of kswapd's. Prints the sums of mm_vmscan_lru_shrink_inactive
# (scanned, freed, kept for a second trip, activated, met under writeback,
# waited on, unmap failures; "written" is what is left: folios pageout()
# started and kept), of mm_vmscan_lru_shrink_active, and the calls by
# reclaim priority; --csv writes one row per event (time, list, priority,
# fields) for a figure. `swaplab sim --json` reports the same outcomes for
# `linux` (its `reclaim` field: pgscan, pgsteal, ref_keep, pgactivate).
#
# Restores what it changes: its tracefs instance is removed, and tracefs
# unmounted if this script mounted it, on exit, Ctrl-C or TERM; a run killed
# harder leaves both behind, and the next run removes them first.
set -euo pipefail

csv=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --csv) csv="$2"; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "reclaim-breakdown: unknown option $1 (give the command after --)" >&2; exit 2 ;;
  esac
done
if [[ $# -eq 0 ]]; then
  echo "reclaim-breakdown: no command: give it after -- (e.g. -- swaplab run --mem-limit 90% -- CMD)" >&2
  exit 2
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "reclaim-breakdown: tracefs needs root: run it with sudo" >&2
  exit 2
fi

T=/sys/kernel/tracing
MARK=/run/swaplab-reclaim-breakdown.mounted
NAME=swaplab-reclaim-breakdown
I=$T/instances/$NAME
EVENTS=(mm_vmscan_lru_shrink_inactive mm_vmscan_lru_shrink_active)

cleanup() {
  if [[ -d $I ]]; then
    echo 0 > "$I/tracing_on" 2>/dev/null || true
    for e in "${EVENTS[@]}"; do echo 0 > "$I/events/vmscan/$e/enable" 2>/dev/null || true; done
    rmdir "$I" 2>/dev/null || true
  fi
  if [[ -f $MARK ]]; then
    umount "$T" 2>/dev/null || true
    rm -f "$MARK"
  fi
}
# A run killed with SIGKILL left its instance (and maybe its mount) behind.
cleanup
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if ! mountpoint -q "$T"; then
  touch "$MARK"
  mount -t tracefs nodev "$T"
fi
for e in "${EVENTS[@]}"; do
  if [[ ! -d $T/events/vmscan/$e ]]; then
    echo "reclaim-breakdown: this kernel has no tracepoint vmscan:$e" >&2
    exit 1
  fi
done
mkdir "$I"
echo 0 > "$I/tracing_on"
echo 16384 > "$I/buffer_size_kb"
echo 1 > "$I/options/event-fork"
for e in "${EVENTS[@]}"; do echo 1 > "$I/events/vmscan/$e/enable"; done
echo $$ > "$I/set_event_pid"
echo 1 > "$I/tracing_on"

status=0
"$@" || status=$?

echo 0 > "$I/tracing_on"
lost=0
for s in "$I"/per_cpu/cpu*/stats; do
  n=$(awk '/^overrun:/ {print $2}' "$s")
  lost=$((lost + ${n:-0}))
done
python3 - "$I/trace" "$csv" "$lost" <<'PY'
import collections, re, sys

path, csv, lost = sys.argv[1], sys.argv[2], int(sys.argv[3])
ev = re.compile(r"\s(\d+\.\d+): mm_vmscan_lru_shrink_(inactive|active): (.*)")
tot = {"inactive": collections.Counter(), "active": collections.Counter()}
prio = collections.Counter()
rows = []
with open(path) as f:
    for line in f:
        m = ev.search(line)
        if not m:
            continue
        t, lst, rest = float(m.group(1)), m.group(2), m.group(3)
        kv = {}
        for w in rest.split():
            k, _, v = w.partition("=")
            if v.lstrip("-").isdigit():
                kv[k] = int(v)
        tot[lst].update({k: v for k, v in kv.items() if k not in ("nid", "priority")})
        if lst == "inactive":
            prio[kv.get("priority", -1)] += 1
        rows.append((t, lst, kv))
i, a = tot["inactive"], tot["active"]
if not rows:
    print("reclaim-breakdown: no reclaim in the command's process tree")
else:
    s = i["nr_scanned"]
    outcomes = [
        ("freed", i["nr_reclaimed"]),
        ("kept for a second trip (nr_ref_keep)", i["nr_ref_keep"]),
        ("activated (nr_activate_anon)", i["nr_activate_anon"]),
        ("activated, file (nr_activate_file)", i["nr_activate_file"]),
        ("  of those: under writeback (nr_writeback)", i["nr_writeback"]),
        ("  of those: under writeback, kswapd (nr_immediate)", i["nr_immediate"]),
        ("  of those: unmap failed (nr_unmap_fail)", i["nr_unmap_fail"]),
    ]
    # A folio met under writeback (v2's case 2, kswapd's case 1) or whose
    # unmap failed goes to activate_locked: it is among the activated.
    # Legacy memcg waits on one instead (case 3), counted nowhere.
    left = s - i["nr_reclaimed"] - i["nr_ref_keep"] - i["nr_activate_anon"] - i["nr_activate_file"]
    print(f"shrink_inactive_list: {sum(prio.values())} calls, {s} folios scanned")
    for name, v in outcomes:
        print(f"  {name:48} {v:>10}  {100 * v / max(s, 1):5.1f} %")
    print(f"  {'written and kept, or kept otherwise (the rest)':48} {left:>10}  {100 * left / max(s, 1):5.1f} %")
    if i["nr_dirty"] or i["nr_congested"]:
        print(f"  file folios dirty or under writeback (nr_dirty) {i['nr_dirty']}, congested {i['nr_congested']}")
    print(f"shrink_active_list: {a['nr_taken']} taken, {a['nr_deactivated']} deactivated, {a['nr_active']} kept active")
    print("shrink_inactive_list calls by priority: "
          + ", ".join(f"{p}: {n}" for p, n in sorted(prio.items(), reverse=True)))
if lost:
    print(f"reclaim-breakdown: {lost} events lost to a full buffer: the sums are short", file=sys.stderr)
if csv:
    keys = ["nr_scanned", "nr_reclaimed", "nr_ref_keep", "nr_activate_anon", "nr_activate_file",
            "nr_writeback", "nr_immediate", "nr_unmap_fail", "priority",
            "nr_taken", "nr_deactivated", "nr_active"]
    with open(csv, "w") as f:
        f.write("t_s,list," + ",".join(keys) + "\n")
        for t, lst, kv in rows:
            f.write(f"{t:.6f},{lst}," + ",".join(str(kv.get(k, "")) for k in keys) + "\n")
    print(f"per-event rows: {csv}")
PY
exit $status
