//! The kernel's reclaim, scan by scan, for one process tree
//! (`swaplab run --reclaim-trace`).
//!
//! /proc/vmstat says how many folios reclaim scanned, freed and activated,
//! not why, and on cgroup v1 it counts the whole machine. The vmscan
//! tracepoints say both: each `mm_vmscan_lru_shrink_inactive` event is one
//! `shrink_inactive_list` call (up to 32 folios) with what
//! `shrink_folio_list` did to them: freed (`nr_reclaimed`), kept for a
//! second trip because a page table referenced them (`nr_ref_keep`),
//! activated (`nr_activate0/1`, anon and file), and among the activated
//! those met under writeback (`nr_writeback`: cgroup v2's "case 2";
//! `nr_immediate`: kswapd's case 1) and those whose unmap failed. What is
//! left of the scanned folios is mostly the ones `pageout()` started
//! writing and kept (the kernel counts them in /proc/vmstat `pswpout`).
//! `mm_vmscan_lru_shrink_active` adds the active list's deactivations.
//!
//! A private tracefs instance, journaled like every other change
//! ([`Session::add_tracefs_instance`]), with `event-fork` and
//! `set_event_pid` written by the child between fork and exec (the same
//! hook as the fault tracer, [`TracefsHook`]): the events are those of
//! the command and its descendants, which is where a memory cgroup's limit
//! reclaim runs (it is the charging task's own work). kswapd's reclaim is
//! not in it. The events are read in binary from `trace_pipe_raw`, as the
//! fault tracer does, and only summed: a run of any length keeps a few
//! counters. Cost: one event per 32 folios scanned.

use std::fs;
use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::faults::tracefs::{
    get, open_cpu_pipes, parse_page, read_cpu_page, read_format, read_tracefs_file, EventFormat,
    Field, PageLayout, RawEntry, TracefsHook, COMMON_TYPE,
};
use crate::journal::Session;
use crate::util;

/// The event of each `shrink_inactive_list` call.
pub const INACTIVE_EVENT: &str = "vmscan/mm_vmscan_lru_shrink_inactive";
/// The event of each `shrink_active_list` call.
pub const ACTIVE_EVENT: &str = "vmscan/mm_vmscan_lru_shrink_active";
/// Buffer per CPU, KiB: an event is about 100 bytes, and the buffer is
/// read at every sample of the run.
pub const BUFFER_KB: u64 = 4096;

/// Whether a run can trace reclaim here: tracefs is mounted with both
/// events in a layout this reader knows, or it is not mounted and we are root on a kernel that has it
/// (swaplab mounts it then, and a kernel without the events is told at
/// set-up).
pub fn available() -> bool {
    match crate::tracefs_mount::tracefs_root() {
        Some(root) => {
            let format = |ev: &str| {
                read_tracefs_file(&root.join("events").join(ev).join("format"))
                    .and_then(|t| EventFormat::parse(&t))
            };
            // Both events, in a layout this reader knows.
            matches!(
                (format(INACTIVE_EVENT), format(ACTIVE_EVENT)),
                (Ok(i), Ok(a)) if Formats::parse(&i, &a).is_ok()
            )
        }
        None => {
            // SAFETY: geteuid cannot fail.
            let root = unsafe { libc::geteuid() } == 0;
            root && fs::read_to_string("/proc/filesystems")
                .is_ok_and(|f| f.lines().any(|l| l.ends_with("\ttracefs")))
        }
    }
}

/// The sums of a run's reclaim events.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReclaimBreakdown {
    /// `shrink_inactive_list` calls.
    pub inactive_calls: u64,
    /// Of those, at priority 0 (the whole list in reach).
    pub priority0_calls: u64,
    /// Folios taken from the inactive lists (`nr_scanned`).
    pub scanned: u64,
    /// Folios freed (`nr_reclaimed`).
    pub reclaimed: u64,
    /// Folios referenced once, kept for a second trip (`nr_ref_keep`).
    pub ref_keep: u64,
    /// Anonymous folios activated (`nr_activate0`).
    pub activate_anon: u64,
    /// File folios activated (`nr_activate1`).
    pub activate_file: u64,
    /// Of the activated, met under writeback (`nr_writeback`).
    pub writeback: u64,
    /// Of the activated, met under writeback by kswapd (`nr_immediate`).
    pub immediate: u64,
    /// Of the activated, whose unmap failed (`nr_unmap_fail`).
    pub unmap_fail: u64,
    /// Folios `shrink_active_list` took (`nr_taken`).
    pub active_taken: u64,
    /// Of those, moved to the inactive list (`nr_deactivated`).
    pub deactivated: u64,
    /// Events the buffer dropped (the sums are short by them).
    pub lost: u64,
}

impl ReclaimBreakdown {
    /// The scanned folios neither freed, kept nor activated: mostly those
    /// `pageout()` started writing and kept under writeback (and the few
    /// kept for other reasons: a locked folio, a failed swap-slot
    /// allocation's retry).
    pub fn written_or_kept(&self) -> u64 {
        self.scanned.saturating_sub(
            self.reclaimed + self.ref_keep + self.activate_anon + self.activate_file,
        )
    }

    /// Adds one event's record (`rec`, the payload after the ring-buffer
    /// header) read with `f`'s layouts. Records of other events are
    /// ignored.
    fn add(&mut self, rec: &[u8], f: &Formats) {
        let Some(typ) = get(rec, COMMON_TYPE) else {
            return;
        };
        let u = |field: Field| get(rec, field).unwrap_or(0).max(0) as u64;
        if typ as u16 == f.inactive.id {
            let i = &f.inactive;
            self.inactive_calls += 1;
            if get(rec, i.priority) == Some(0) {
                self.priority0_calls += 1;
            }
            self.scanned += u(i.scanned);
            self.reclaimed += u(i.reclaimed);
            self.ref_keep += u(i.ref_keep);
            self.activate_anon += u(i.activate_anon);
            self.activate_file += u(i.activate_file);
            self.writeback += u(i.writeback);
            self.immediate += u(i.immediate);
            self.unmap_fail += u(i.unmap_fail);
        } else if typ as u16 == f.active.id {
            self.active_taken += u(f.active.taken);
            self.deactivated += u(f.active.deactivated);
        }
    }
}

struct InactiveFormat {
    id: u16,
    scanned: Field,
    reclaimed: Field,
    ref_keep: Field,
    activate_anon: Field,
    activate_file: Field,
    writeback: Field,
    immediate: Field,
    unmap_fail: Field,
    priority: Field,
}

struct ActiveFormat {
    id: u16,
    taken: Field,
    deactivated: Field,
}

struct Formats {
    inactive: InactiveFormat,
    active: ActiveFormat,
}

impl Formats {
    fn parse(inactive: &EventFormat, active: &EventFormat) -> Result<Formats> {
        let w = [4, 8];
        let i = |name: &str| inactive.field(name, &w).map_err(unsupported_layout);
        let a = |name: &str| active.field(name, &w).map_err(unsupported_layout);
        Ok(Formats {
            inactive: InactiveFormat {
                id: inactive.id,
                scanned: i("nr_scanned")?,
                reclaimed: i("nr_reclaimed")?,
                ref_keep: i("nr_ref_keep")?,
                activate_anon: i("nr_activate0")?,
                activate_file: i("nr_activate1")?,
                writeback: i("nr_writeback")?,
                immediate: i("nr_immediate")?,
                unmap_fail: i("nr_unmap_fail")?,
                priority: i("priority")?,
            },
            active: ActiveFormat {
                id: active.id,
                taken: a("nr_taken")?,
                deactivated: a("nr_deactivated")?,
            },
        })
    }
}

fn unsupported_layout(e: Error) -> Error {
    Error::unsupported(
        "this kernel's vmscan tracepoints have another layout",
        e.to_string(),
        "run without --reclaim-trace (the /proc/vmstat counters are recorded either way)",
    )
}

/// The parent's side before spawn.
pub struct ReclaimTraceSetup {
    instance: PathBuf,
    hook: Arc<TracefsHook>,
    cpus: Vec<(u32, fs::File)>,
    layout: PageLayout,
    subbuf: usize,
    formats: Formats,
}

impl ReclaimTraceSetup {
    /// Creates and configures the instance (journaled in `session`);
    /// tracing stays off until the child's hook turns it on.
    pub fn new(session: &mut Session) -> Result<ReclaimTraceSetup> {
        let root = session.use_tracefs()?;
        for ev in [INACTIVE_EVENT, ACTIVE_EVENT] {
            if !root.join("events").join(ev).join("format").exists() {
                return Err(Error::unsupported(
                    format!("no tracepoint {}", ev.replace('/', ":")),
                    format!("{} is missing", root.join("events").join(ev).display()),
                    "run without --reclaim-trace (the /proc/vmstat counters are recorded either way)",
                ));
            }
        }
        let layout = PageLayout::parse(
            &read_tracefs_file(&root.join("events/header_page"))?,
            &read_tracefs_file(&root.join("events/header_event"))?,
        )?;
        let inst = session.add_tracefs_instance()?;
        let formats = Formats::parse(
            &read_format(&inst, &root, INACTIVE_EVENT)?,
            &read_format(&inst, &root, ACTIVE_EVENT)?,
        )?;
        util::write_str(&inst.join("tracing_on"), "0")?;
        util::write_str(&inst.join("buffer_size_kb"), &BUFFER_KB.to_string())?;
        util::write_str(&inst.join("options/overwrite"), "0")?;
        util::write_str(&inst.join("options/event-fork"), "1")?;
        for ev in [INACTIVE_EVENT, ACTIVE_EVENT] {
            util::write_str(&inst.join("events").join(ev).join("enable"), "1")?;
        }
        let (cpus, subbuf) = open_cpu_pipes(&inst)?;
        let hook = Arc::new(TracefsHook::open(&inst)?);
        Ok(ReclaimTraceSetup {
            instance: inst,
            hook,
            cpus,
            layout,
            subbuf,
            formats,
        })
    }

    /// The hook to run in the child between fork and exec
    /// (`CommandExt::pre_exec(move || hook.run())`).
    pub fn hook(&self) -> Arc<TracefsHook> {
        self.hook.clone()
    }

    /// After spawn returned (the hook has switched tracing on).
    pub fn attach(self) -> Result<ReclaimTracer> {
        self.hook.close();
        let on = util::read_trimmed(&self.instance.join("tracing_on"))?;
        if on != "1" {
            return Err(Error::unsupported(
                format!("tracing is off in {}", self.instance.display()),
                "the child did not switch it on",
                "install the child hook with CommandExt::pre_exec before spawning",
            ));
        }
        Ok(ReclaimTracer {
            page: vec![0; self.subbuf],
            setup: self,
            entries: Vec::new(),
            sums: ReclaimBreakdown::default(),
        })
    }
}

/// The running trace: [`ReclaimTracer::drain`] it now and then, and
/// [`ReclaimTracer::finish`] it after the command ended.
pub struct ReclaimTracer {
    setup: ReclaimTraceSetup,
    page: Vec<u8>,
    entries: Vec<RawEntry>,
    sums: ReclaimBreakdown,
}

impl ReclaimTracer {
    /// Reads what the buffers hold and adds it up.
    pub fn drain(&mut self) -> Result<()> {
        for (cpu, file) in &mut self.setup.cpus {
            while let Some(n) = read_cpu_page(&self.setup.instance, *cpu, file, &mut self.page)? {
                self.entries.clear();
                self.sums.lost +=
                    parse_page(&self.page[..n], &self.setup.layout, &mut self.entries);
                for e in &self.entries {
                    let rec = &self.page[e.start..(e.start + e.len).min(n)];
                    self.sums.add(rec, &self.setup.formats);
                }
            }
        }
        Ok(())
    }

    /// Stops tracing, reads the rest and returns the sums. The instance
    /// itself goes when the session restores.
    pub fn finish(mut self) -> Result<ReclaimBreakdown> {
        util::write_str(&self.setup.instance.join("tracing_on"), "0")?;
        self.drain()?;
        Ok(self.sums)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The format files of this machine's kernel (6.18), as tracefs
    // prints them.
    const INACTIVE_FORMAT: &str = "name: mm_vmscan_lru_shrink_inactive
ID: 617
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:int nid;\toffset:8;\tsize:4;\tsigned:1;
\tfield:unsigned long nr_scanned;\toffset:16;\tsize:8;\tsigned:0;
\tfield:unsigned long nr_reclaimed;\toffset:24;\tsize:8;\tsigned:0;
\tfield:unsigned long nr_dirty;\toffset:32;\tsize:8;\tsigned:0;
\tfield:unsigned long nr_writeback;\toffset:40;\tsize:8;\tsigned:0;
\tfield:unsigned long nr_congested;\toffset:48;\tsize:8;\tsigned:0;
\tfield:unsigned long nr_immediate;\toffset:56;\tsize:8;\tsigned:0;
\tfield:unsigned int nr_activate0;\toffset:64;\tsize:4;\tsigned:0;
\tfield:unsigned int nr_activate1;\toffset:68;\tsize:4;\tsigned:0;
\tfield:unsigned long nr_ref_keep;\toffset:72;\tsize:8;\tsigned:0;
\tfield:unsigned long nr_unmap_fail;\toffset:80;\tsize:8;\tsigned:0;
\tfield:int priority;\toffset:88;\tsize:4;\tsigned:1;
\tfield:int reclaim_flags;\toffset:92;\tsize:4;\tsigned:1;
";
    const ACTIVE_FORMAT: &str = "name: mm_vmscan_lru_shrink_active
ID: 616
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:int nid;\toffset:8;\tsize:4;\tsigned:1;
\tfield:unsigned long nr_taken;\toffset:16;\tsize:8;\tsigned:0;
\tfield:unsigned long nr_active;\toffset:24;\tsize:8;\tsigned:0;
\tfield:unsigned long nr_deactivated;\toffset:32;\tsize:8;\tsigned:0;
\tfield:unsigned long nr_referenced;\toffset:40;\tsize:8;\tsigned:0;
\tfield:int priority;\toffset:48;\tsize:4;\tsigned:1;
\tfield:int reclaim_flags;\toffset:52;\tsize:4;\tsigned:1;
";

    fn formats() -> Formats {
        Formats::parse(
            &EventFormat::parse(INACTIVE_FORMAT).unwrap(),
            &EventFormat::parse(ACTIVE_FORMAT).unwrap(),
        )
        .unwrap()
    }

    fn put(rec: &mut [u8], off: usize, size: usize, v: u64) {
        rec[off..off + size].copy_from_slice(&v.to_ne_bytes()[..size]);
    }

    /// An inactive-list record: (scanned, reclaimed, writeback, activate
    /// anon, activate file, ref_keep, unmap_fail, priority).
    fn inactive(v: [u64; 8]) -> Vec<u8> {
        let mut r = vec![0u8; 96];
        put(&mut r, 0, 2, 617);
        for (k, (off, size)) in [
            (16, 8),
            (24, 8),
            (40, 8),
            (64, 4),
            (68, 4),
            (72, 8),
            (80, 8),
            (88, 4),
        ]
        .into_iter()
        .enumerate()
        {
            put(&mut r, off, size, v[k]);
        }
        r
    }

    #[test]
    fn sums_the_outcomes_of_each_scan() {
        let f = formats();
        let mut s = ReclaimBreakdown::default();
        // Three calls, worked by hand: 32 scanned, 4 freed, 10 activated,
        // 12 kept, so 6 written; 20 scanned at priority 0, 20 activated,
        // 3 of them under writeback; 5 scanned, 5 freed, 1 unmap failure
        // among 1 file activation (priority 3).
        s.add(&inactive([32, 4, 0, 10, 0, 12, 0, 7]), &f);
        s.add(&inactive([20, 0, 3, 20, 0, 0, 0, 0]), &f);
        s.add(&inactive([6, 5, 0, 0, 1, 0, 1, 3]), &f);
        // A deactivation: 32 taken, 30 deactivated.
        let mut a = vec![0u8; 56];
        put(&mut a, 0, 2, 616);
        put(&mut a, 16, 8, 32);
        put(&mut a, 32, 8, 30);
        s.add(&a, &f);
        // Another event's record is not counted.
        let mut other = inactive([99, 99, 99, 99, 99, 99, 99, 0]);
        put(&mut other, 0, 2, 618);
        s.add(&other, &f);
        assert_eq!(
            (s.inactive_calls, s.priority0_calls, s.scanned, s.reclaimed),
            (3, 1, 58, 9)
        );
        assert_eq!((s.ref_keep, s.activate_anon, s.activate_file), (12, 30, 1));
        assert_eq!((s.writeback, s.immediate, s.unmap_fail), (3, 0, 1));
        assert_eq!((s.active_taken, s.deactivated), (32, 30));
        // 58 − 9 − 12 − 30 − 1
        assert_eq!(s.written_or_kept(), 6);
    }

    #[test]
    fn a_short_record_adds_nothing_it_cannot_read() {
        let f = formats();
        let mut s = ReclaimBreakdown::default();
        let r = inactive([32, 4, 0, 10, 0, 12, 0, 7]);
        s.add(&r[..1], &f);
        assert_eq!(s, ReclaimBreakdown::default());
        // Cut before nr_ref_keep: the call and the fields before it count.
        s.add(&r[..72], &f);
        assert_eq!((s.inactive_calls, s.scanned, s.ref_keep), (1, 32, 0));
    }

    #[test]
    fn an_older_layout_is_refused_with_what_to_do() {
        // 4.x had one nr_activate.
        let old = INACTIVE_FORMAT
            .replace("nr_activate0", "nr_activate")
            .replace(
                "\tfield:unsigned int nr_activate1;\toffset:68;\tsize:4;\tsigned:0;\n",
                "",
            );
        let e = Formats::parse(
            &EventFormat::parse(&old).unwrap(),
            &EventFormat::parse(ACTIVE_FORMAT).unwrap(),
        )
        .err()
        .unwrap()
        .to_string();
        assert!(e.contains("--reclaim-trace"), "{e}");
    }
}
