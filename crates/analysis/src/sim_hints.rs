//! Hint files resolved into the simulator's page ranges: a hint file's
//! range hints as pages, and its site hints matched against a trace's
//! allocation sites and the program's modules ([`resolve_sim_hints`]), for
//! `swaplab sim --hints`.

use std::collections::{BTreeSet, HashMap};

use swaplab_sim::{HintKind, RangeHint};
use swaplab_trace::alloc_sites::AllocSites;

use crate::error::{Error, Result};
use crate::hints::{frame_module, module_stem, HintAction, HintFile};

/// A hint file's range hints as the simulator's page ranges, for a trace
/// whose page numbers are byte addresses / `page_size`. mlock pins `bytes`
/// from the range's start (0 = all of it) within `mlock_budget` (all pins
/// together); willneed's window is rounded up to whole pages; cold and
/// pageout fire `delay_ms × refs_per_ms` references after the range's
/// first touch (a reference trace has no clock). Site hints are refused:
/// without allocation sites (see [`resolve_sim_hints`]) they name nothing.
pub fn sim_hints(file: &HintFile, page_size: u64, refs_per_ms: u64) -> Result<Vec<RangeHint>> {
    Ok(resolve_sim_hints(file, page_size, refs_per_ms, None)?.ranges)
}

/// What `sim --hints` applies, and what it tells the user about it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SimHints {
    /// The simulator's ranges: each hint's in file order (a site hint's
    /// ranges in allocation order).
    pub ranges: Vec<RangeHint>,
    /// Per hint of the file: how many allocations it matched (`None` for
    /// a range hint).
    pub matched: Vec<Option<usize>>,
    /// Per hint of the file: the pages its ranges cover (overlaps counted
    /// once per range).
    pub pages: Vec<u64>,
    /// Hints that match nothing, mlocks the library would refuse, pages
    /// shared with other sites: one line each, naming the hint's number.
    pub warnings: Vec<String>,
}

/// The most hints that apply to one allocation (the preload library's
/// `MAX_SITE_HINTS`, native/preload/preload.c).
pub const MAX_HINTS_PER_ALLOCATION: usize = 4;

/// True when hint frame `hint` names trace frame `frame`: the same key,
/// or both in the captured program, whose file name a hint may spell with
/// another build hash (`run --hints` looks such frames up in the program
/// it runs; [`module_stem`]).
fn frame_matches(hint: &str, frame: &str, program: &str) -> bool {
    if hint == frame {
        return true;
    }
    let (hm, fm) = (frame_module(hint), frame_module(frame));
    let stem = module_stem;
    fm == program && hm != fm && stem(hm) == stem(program) && hint[hm.len()..] == frame[fm.len()..]
}

/// True when a hint's frames are a prefix of a site's (the preload
/// library's rule: its frames equal the allocation's first frames).
fn site_matches(hint: &[String], site: &[String], program: &str) -> bool {
    !hint.is_empty()
        && hint.len() <= site.len()
        && hint
            .iter()
            .zip(site)
            .all(|(h, f)| frame_matches(h, f, program))
}

/// A hint file as the simulator's page ranges: range hints as
/// [`sim_hints`] describes, site hints through `sites` (the trace's
/// allocation sites, [`swaplab_trace::alloc_sites`]).
///
/// A site hint applies to every allocation whose call stack starts with
/// its frames — the rule `run --hints` applies through the preload library
/// — at most [`MAX_HINTS_PER_ALLOCATION`] hints per allocation, in file
/// order, and becomes one range per allocation (its bytes, whole pages).
/// mlock follows the library's accounting, replayed in the log's order of
/// allocations and frees: `bytes > 0` is the hint's total over all its
/// allocations (each locks `min(bytes left, its size)`), `bytes = 0` locks
/// each whole allocation; a lock that would take the locked total past
/// `mlock_budget` is skipped (the library's ENOMEM) and a free gives its
/// bytes back; a second mlock hint on one allocation is skipped. Range
/// hints' pins are counted first. The ranges hold for the whole trace
/// (the stream has no clock to say when an allocation lives; cold and
/// pageout start from the range's first touch). A site hint that matches
/// no allocation, skipped mlocks, and pages a hint's allocations share
/// with other sites' allocations are reported in
/// [`SimHints::warnings`]. Without `sites`, a site hint is an error.
pub fn resolve_sim_hints(
    file: &HintFile,
    page_size: u64,
    refs_per_ms: u64,
    sites: Option<&AllocSites>,
) -> Result<SimHints> {
    let ps = page_size.max(1);
    let n = file.hints.len();
    let mut per_hint: Vec<Vec<RangeHint>> = vec![Vec::new(); n];
    let mut out = SimHints {
        matched: vec![None; n],
        pages: vec![0; n],
        ..Default::default()
    };
    let mut pinned = 0u64;
    let timed = |delay_ms: u64| delay_ms.saturating_mul(refs_per_ms);
    let kind_of = |a: HintAction| match a {
        // The chunk (how much the preload thread releases per step) does
        // not change which pages are read ahead, only when.
        HintAction::Willneed { window, .. } => Some(HintKind::Willneed {
            window: window.div_ceil(ps),
        }),
        HintAction::Cold { delay_ms } => Some(HintKind::Cold {
            after: timed(delay_ms),
        }),
        HintAction::Pageout { delay_ms } => Some(HintKind::Pageout {
            after: timed(delay_ms),
        }),
        HintAction::Mlock { .. } => None,
    };
    let mut site_hints = Vec::new();
    for (i, h) in file.hints.iter().enumerate() {
        let Some((a, b)) = h.range else {
            if sites.is_none() {
                return Err(Error::Invalid(format!(
                    "hint {} is a site hint, but this trace has no allocation sites; use range \
                     hints (range = [\"0xSTART\", \"0xEND\"], byte addresses = page number x {ps}) \
                     with `sim`, capture the trace with `swaplab trace --refs -- CMD` (which \
                     writes its sites to TRACE.sites.json beside it), or apply site hints to a \
                     program with `swaplab run --hints`",
                    i + 1
                )));
            }
            site_hints.push(i);
            continue;
        };
        let (start, end) = (a / ps, b.div_ceil(ps));
        let range = if let HintAction::Mlock { bytes } = h.action {
            let len = if bytes == 0 { b - a } else { bytes.min(b - a) };
            pinned = pinned.saturating_add(len);
            if pinned > file.mlock_budget {
                return Err(Error::Invalid(format!(
                    "hint {}: mlock hints lock {pinned} bytes, more than mlock_budget = {}: \
                     lower their bytes or raise mlock_budget",
                    i + 1,
                    file.mlock_budget
                )));
            }
            RangeHint {
                start,
                end: (a + len).div_ceil(ps),
                action: HintKind::Pin,
            }
        } else if let Some(action) = kind_of(h.action) {
            RangeHint { start, end, action }
        } else {
            continue;
        };
        per_hint[i].push(range);
    }
    if let (Some(sites), false) = (sites, site_hints.is_empty()) {
        check_modules(file, sites, &site_hints)?;
        apply_site_hints(
            file,
            sites,
            &site_hints,
            pinned,
            ps,
            &kind_of,
            &mut per_hint,
            &mut out,
        );
    }
    for (i, r) in per_hint.into_iter().enumerate() {
        out.pages[i] = r.iter().map(|r| r.end - r.start).sum();
        out.ranges.extend(r);
    }
    Ok(out)
}

/// Refuses a site hint whose module the hint file pins to a build-id
/// other than the captured one (its offsets mean other code), as
/// `run --hints` refuses a changed library.
fn check_modules(file: &HintFile, sites: &AllocSites, site_hints: &[usize]) -> Result<()> {
    for &i in site_hints {
        for f in &file.hints[i].site {
            let m = frame_module(f);
            let (Some(want), Some(have)) = (file.modules.get(m), sites.modules.get(m)) else {
                continue;
            };
            if let (Some(w), Some(h)) = (&want.build_id, &have.build_id) {
                if w != h {
                    return Err(Error::Invalid(format!(
                        "hint {} names module {m:?}: it was build-id {w} when advised and {h} ({}) when this trace was captured (run `swaplab advise` again on a trace of this program)",
                        i + 1,
                        have.path
                    )));
                }
            }
        }
    }
    Ok(())
}

/// The site hints' part of [`resolve_sim_hints`].
#[allow(clippy::too_many_arguments)]
fn apply_site_hints(
    file: &HintFile,
    sites: &AllocSites,
    site_hints: &[usize],
    range_pinned: u64,
    ps: u64,
    kind_of: &dyn Fn(HintAction) -> Option<HintKind>,
    per_hint: &mut [Vec<RangeHint>],
    out: &mut SimHints,
) {
    // Which site hints (file order, at most 4) apply to each site.
    let mut of_site: HashMap<u32, Vec<usize>> = HashMap::new();
    for s in &sites.sites {
        let ks: Vec<usize> = site_hints
            .iter()
            .copied()
            .filter(|&k| site_matches(&file.hints[k].site, &s.frames, &sites.program))
            .take(MAX_HINTS_PER_ALLOCATION)
            .collect();
        if !ks.is_empty() {
            of_site.insert(s.site_id, ks);
        }
    }
    for &k in site_hints {
        out.matched[k] = Some(0);
    }
    // The allocations and frees in the log's order.
    let mut events: Vec<(u64, bool, usize)> = Vec::with_capacity(sites.allocations.len() * 2);
    for (j, a) in sites.allocations.iter().enumerate() {
        events.push((a.seq, true, j));
        if let Some(f) = a.free_seq {
            events.push((f, false, j));
        }
    }
    events.sort_unstable();
    let mut locked_by = vec![0u64; sites.allocations.len()];
    let mut locked = range_pinned;
    let mut spent = vec![0u64; file.hints.len()];
    // Per hint: (no quota left, over the budget, locked already).
    let mut refused = vec![(0u64, 0u64, 0u64); file.hints.len()];
    let mut hinted: Vec<(usize, usize)> = Vec::new();
    for (_, alloc, j) in events {
        let a = &sites.allocations[j];
        if !alloc {
            locked = locked.saturating_sub(locked_by[j]);
            continue;
        }
        if a.size < sites.alloc_min || a.size == 0 {
            continue;
        }
        let Some(ks) = of_site.get(&a.site_id) else {
            continue;
        };
        let (start, end) = (a.start / ps, (a.start + a.size).div_ceil(ps));
        for &k in ks {
            *out.matched[k].get_or_insert(0) += 1;
            hinted.push((k, j));
            if let Some(action) = kind_of(file.hints[k].action) {
                per_hint[k].push(RangeHint { start, end, action });
                continue;
            }
            let HintAction::Mlock { bytes } = file.hints[k].action else {
                continue;
            };
            if locked_by[j] > 0 {
                refused[k].2 += 1;
                continue;
            }
            let mut len = if bytes == 0 || bytes > a.size {
                a.size
            } else {
                bytes
            };
            if bytes > 0 {
                let grant = (bytes - spent[k]).min(len);
                if grant == 0 {
                    refused[k].0 += 1;
                    continue;
                }
                spent[k] += grant;
                len = grant;
            }
            if locked.saturating_add(len) > file.mlock_budget {
                refused[k].1 += 1;
                continue;
            }
            locked += len;
            locked_by[j] = len;
            per_hint[k].push(RangeHint {
                start,
                end: (a.start + len).div_ceil(ps),
                action: HintKind::Pin,
            });
        }
    }
    let first = |k: usize| {
        let s = &file.hints[k].site;
        format!(
            "{}{}",
            s.first().map(String::as_str).unwrap_or(""),
            if s.len() > 1 { " …" } else { "" }
        )
    };
    let listed = sites
        .allocations
        .iter()
        .filter(|a| a.size >= sites.alloc_min)
        .count();
    for &k in site_hints {
        let m = out.matched[k].unwrap_or(0);
        if m == 0 {
            out.warnings.push(format!(
                "hint {} (site {}) matches none of the trace's {listed} allocations of at least \
                 {} bytes ({} sites): it is not applied; check its frames against the trace's \
                 sites (TRACE.sites.json) and that the trace is of the advised program{}",
                k + 1,
                first(k),
                sites.alloc_min,
                sites.sites.len(),
                if sites.capture.as_deref() == Some("instrumented") {
                    " (this trace is a built-in workload's own recording, whose stacks name \
                     the recording copies of its functions, e.g. run_traverse_refs: for hints \
                     advised on the workload, capture with `swaplab trace --refs --lackey`)"
                } else {
                    ""
                }
            ));
        }
        let (quota, budget, again) = refused[k];
        if quota + budget + again > 0 {
            let mut why = Vec::new();
            if quota > 0 {
                why.push(format!("{quota} after its bytes ran out"));
            }
            if budget > 0 {
                why.push(format!(
                    "{budget} that would pass mlock_budget = {} (the library's ENOMEM)",
                    file.mlock_budget
                ));
            }
            if again > 0 {
                why.push(format!("{again} locked by an earlier hint already"));
            }
            out.warnings.push(format!(
                "hint {}: mlock skipped on {} of its {m} allocations: {}",
                k + 1,
                quota + budget + again,
                why.join(", ")
            ));
        }
    }
    // Pages a hint's allocations share with other sites' allocations.
    let mut spans: Vec<(u64, u64, u32)> = sites
        .allocations
        .iter()
        .filter(|a| a.size > 0)
        .map(|a| (a.start / ps, (a.start + a.size).div_ceil(ps), a.site_id))
        .collect();
    spans.sort_unstable();
    // A span that overlaps s..e starts within the longest span's length
    // before s: only those are scanned.
    let longest = spans.iter().map(|x| x.1 - x.0).max().unwrap_or(0);
    let mut shared: Vec<BTreeSet<u32>> = vec![BTreeSet::new(); file.hints.len()];
    for (k, j) in hinted {
        let a = &sites.allocations[j];
        let (s, e) = (a.start / ps, (a.start + a.size).div_ceil(ps));
        let from = spans.partition_point(|x| x.0 < s.saturating_sub(longest));
        let upto = spans.partition_point(|x| x.0 < e);
        for &(s2, e2, site) in &spans[from..upto.max(from)] {
            if e2 > s && s2 < e && !of_site.get(&site).is_some_and(|ks| ks.contains(&k)) {
                shared[k].insert(site);
            }
        }
    }
    for (k, other) in shared.iter().enumerate() {
        if !other.is_empty() {
            let list: Vec<String> = other.iter().take(5).map(|s| s.to_string()).collect();
            out.warnings.push(format!(
                "hint {}: its allocations share pages with allocations of {} other site(s) \
                 (ids {}{}): neighbours on a page, or addresses reused after a free; the hint \
                 acts on those pages too, for the whole trace",
                k + 1,
                other.len(),
                list.join(", "),
                if other.len() > 5 { ", …" } else { "" }
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hint_files_become_page_ranges() {
        let text = "version = 1\nmlock_budget = 8192\n\
            [[hint]]\nrange = [\"0x1000\", \"0x9000\"]\naction = \"mlock\"\nbytes = 0\n\
            [[hint]]\nrange = [\"0x10800\", \"0x20001\"]\naction = \"willneed\"\nwindow = 5000\n\
            [[hint]]\nrange = [\"0\", \"4096\"]\naction = \"pageout\"\ndelay_ms = 3\n";
        let f = crate::hints::parse(text, "h.toml").unwrap();
        // The mlock range is 8 pages but the budget is 2 pages: refused.
        let e = sim_hints(&f, 4096, 10).unwrap_err().to_string();
        assert!(e.contains("more than mlock_budget = 8192"), "{e}");
        let f = crate::hints::parse(&text.replace("bytes = 0", "bytes = 5000"), "h").unwrap();
        let h = sim_hints(&f, 4096, 10).unwrap();
        assert_eq!(
            h,
            vec![
                // 0x1000 + 5000 bytes: pages 1 and 2.
                RangeHint {
                    start: 1,
                    end: 3,
                    action: HintKind::Pin
                },
                // 0x10800..0x20001: pages 16..=32; 5000 bytes = 2 pages.
                RangeHint {
                    start: 16,
                    end: 33,
                    action: HintKind::Willneed { window: 2 }
                },
                RangeHint {
                    start: 0,
                    end: 1,
                    action: HintKind::Pageout { after: 30 }
                },
            ]
        );
        let site = "version = 1\n[[hint]]\nsite = [\"w!f+0x1\"]\naction = \"cold\"\ndelay_ms = 1\n";
        let f = crate::hints::parse(site, "h").unwrap();
        let e = sim_hints(&f, 4096, 1).unwrap_err().to_string();
        assert!(
            e.contains("this trace has no allocation sites; use range hints"),
            "{e}"
        );
        assert!(e.contains("swaplab trace --refs"), "{e}");
    }

    use swaplab_sim::{simulate_ext, Extras, PolicySpec, PrefetchSpec};
    use swaplab_trace::alloc_sites::{SiteAlloc, SiteEntry, SiteModule, SITES_KIND, SITES_VERSION};
    use swaplab_trace::DenseTrace;

    const PROG: &str = "w-00112233aabbccdd";

    /// Allocation sites by hand: `(site frames)` and `(start, size, site,
    /// free_seq)` in seq order (seq = index among allocs and frees, as given).
    fn sites(frames: &[&[&str]], allocs: &[(u64, u64, u64, u32, Option<u64>)]) -> AllocSites {
        AllocSites {
            kind: SITES_KIND.into(),
            version: SITES_VERSION,
            trace_count: 0,
            trace_distinct_pages: 0,
            page_size: 4096,
            alloc_min: 4096,
            capture: None,
            pid: 1,
            program: PROG.into(),
            modules: Default::default(),
            sites: frames
                .iter()
                .enumerate()
                .map(|(i, f)| SiteEntry {
                    site_id: i as u32 + 1,
                    frames: f.iter().map(|s| s.to_string()).collect(),
                    locations: vec![String::new(); f.len()],
                })
                .collect(),
            allocations: allocs
                .iter()
                .map(|&(seq, start, size, site_id, free_seq)| SiteAlloc {
                    seq,
                    start,
                    size,
                    site_id,
                    func: "malloc".into(),
                    free_seq,
                })
                .collect(),
        }
    }

    fn hint_file(text: &str) -> HintFile {
        crate::hints::parse(&format!("version = 1\n{text}"), "h.toml").unwrap()
    }

    /// Major faults of `t` under LRU with no readahead at `cap` pages.
    fn majors(t: &DenseTrace, cap: usize, hints: &[RangeHint]) -> swaplab_sim::SimResult {
        let spec = PolicySpec::parse("lru").unwrap();
        let pf = PrefetchSpec::parse("none").unwrap();
        let x = Extras {
            prefetch: Some(&pf),
            hints,
        };
        simulate_ext(t, None, &spec, cap, 1, &x, &|_| {}).unwrap()
    }

    #[test]
    fn a_site_hint_acts_like_the_range_of_its_allocation() {
        // An array of 10 pages at page 100 (0x64000), filled and then swept
        // 3 times, all writes; memory for 6 pages. LRU evicts each page
        // before its next use: every sweep faults all 10 pages (30 major
        // faults). Pinning the first 4 leaves 2 frames to the other 6,
        // which fault every sweep: 18.
        let refs: Vec<(u64, bool)> = (0..40).map(|i| (100 + i % 10, true)).collect();
        let t = DenseTrace::from_refs(&refs);
        let s = sites(
            &[
                &[
                    "w-00112233aabbccdd!xmalloc+0x1e",
                    "w-00112233aabbccdd!run+0x10",
                ],
                &["libc.so.6!strdup+0x5"],
            ],
            &[
                (0, 0x64000, 10 * 4096, 1, Some(2)),
                (1, 0x20000, 8192, 2, None),
            ],
        );
        // The hint names the program by another build's hash: the same
        // program (run --hints's rule).
        let site = hint_file(
            "mlock_budget = 16384\n[[hint]]\nsite = [\"w-0123456789abcdef!xmalloc+0x1e\", \
             \"w-0123456789abcdef!run+0x10\"]\naction = \"mlock\"\nbytes = 16384\n",
        );
        let range = hint_file(
            "mlock_budget = 16384\n[[hint]]\nrange = [\"0x64000\", \"0x6e000\"]\n\
             action = \"mlock\"\nbytes = 16384\n",
        );
        let hs = resolve_sim_hints(&site, 4096, 1, Some(&s)).unwrap();
        assert_eq!(hs.matched, vec![Some(1)]);
        assert_eq!(hs.pages, vec![4]);
        assert!(hs.warnings.is_empty(), "{:?}", hs.warnings);
        let hr = resolve_sim_hints(&range, 4096, 1, None).unwrap();
        assert_eq!(hs.ranges, hr.ranges);
        assert_eq!(
            hs.ranges,
            vec![RangeHint {
                start: 100,
                end: 104,
                action: HintKind::Pin
            }]
        );
        let (with_site, with_range, none) = (
            majors(&t, 6, &hs.ranges),
            majors(&t, 6, &hr.ranges),
            majors(&t, 6, &[]),
        );
        assert_eq!(with_site.counters, with_range.counters);
        assert_eq!(none.counters.major_faults, 30);
        assert_eq!(with_site.counters.major_faults, 18);
        // A willneed, cold and pageout site hint become the allocation's
        // whole pages; a frame of another module or a longer hint does not
        // match.
        let f = hint_file(
            "[[hint]]\nsite = [\"w-0123456789abcdef!xmalloc+0x1e\"]\naction = \"willneed\"\n\
             window = 5000\n[[hint]]\nsite = [\"libc.so.6!strdup+0x5\"]\naction = \"pageout\"\n\
             delay_ms = 2\n[[hint]]\nsite = [\"other!xmalloc+0x1e\"]\naction = \"cold\"\n\
             delay_ms = 1\n[[hint]]\nsite = [\"libc.so.6!strdup+0x5\", \"w!main+0x1\"]\n\
             action = \"cold\"\ndelay_ms = 1\n",
        );
        let h = resolve_sim_hints(&f, 4096, 10, Some(&s)).unwrap();
        assert_eq!(
            h.ranges,
            vec![
                RangeHint {
                    start: 100,
                    end: 110,
                    action: HintKind::Willneed { window: 2 }
                },
                RangeHint {
                    start: 0x20,
                    end: 0x22,
                    action: HintKind::Pageout { after: 20 }
                },
            ]
        );
        assert_eq!(h.matched, vec![Some(1), Some(1), Some(0), Some(0)]);
        assert_eq!(h.warnings.len(), 2, "{:?}", h.warnings);
        assert!(h.warnings[0].starts_with("hint 3 (site other!xmalloc+0x1e)"));
        assert!(h.warnings[0].contains("matches none of the trace's 2 allocations"));
        assert!(h.warnings[1].starts_with("hint 4 (site libc.so.6!strdup+0x5 …)"));
    }

    #[test]
    fn site_mlock_follows_the_preload_librarys_accounting() {
        // One site, three allocations of 3 pages each, at pages 0x10, 0x20
        // and 0x30; the first is freed before the third is made.
        let s = sites(
            &[&["w!f+0x1"]],
            &[
                (0, 0x10000, 3 * 4096, 1, Some(2)),
                (1, 0x20000, 3 * 4096, 1, None),
                (3, 0x30000, 3 * 4096, 1, None),
            ],
        );
        let pin = |start: u64, end: u64| RangeHint {
            start,
            end,
            action: HintKind::Pin,
        };
        // bytes = 4 pages is the hint's total: 3 pages of the first
        // allocation, 1 of the second, none of the third (its quota is spent).
        let f = hint_file(
            "mlock_budget = 1000000\n[[hint]]\nsite = [\"w!f+0x1\"]\naction = \"mlock\"\nbytes = 16384\n",
        );
        let h = resolve_sim_hints(&f, 4096, 1, Some(&s)).unwrap();
        assert_eq!(h.ranges, vec![pin(0x10, 0x13), pin(0x20, 0x21)]);
        assert_eq!(h.warnings.len(), 1);
        assert!(
            h.warnings[0]
                .contains("mlock skipped on 1 of its 3 allocations: 1 after its bytes ran out"),
            "{}",
            h.warnings[0]
        );
        // bytes = 0 locks whole allocations within a budget of 6 pages: the
        // first two fit; the third fits only because the first was freed
        // before it (its 3 pages came back).
        let f = hint_file(
            "mlock_budget = 24576\n[[hint]]\nsite = [\"w!f+0x1\"]\naction = \"mlock\"\nbytes = 0\n",
        );
        let h = resolve_sim_hints(&f, 4096, 1, Some(&s)).unwrap();
        assert_eq!(
            h.ranges,
            vec![pin(0x10, 0x13), pin(0x20, 0x23), pin(0x30, 0x33)]
        );
        assert!(h.warnings.is_empty(), "{:?}", h.warnings);
        // Never freed, the third passes the budget: skipped (ENOMEM).
        let mut kept = s.clone();
        kept.allocations[0].free_seq = None;
        let h = resolve_sim_hints(&f, 4096, 1, Some(&kept)).unwrap();
        assert_eq!(h.ranges, vec![pin(0x10, 0x13), pin(0x20, 0x23)]);
        assert!(
            h.warnings[0].contains("1 that would pass mlock_budget = 24576"),
            "{:?}",
            h.warnings
        );
        // A range hint's pin counts first: its 3 pages of a 7-page budget
        // leave room for one allocation (hint 2) and one page of hint 3's
        // quota, which it spends on the second allocation (the first is
        // locked already); the third finds hint 3's quota spent.
        let f = hint_file(
            "mlock_budget = 28672\n[[hint]]\nrange = [\"0x90000\", \"0x93000\"]\n\
             action = \"mlock\"\nbytes = 0\n[[hint]]\nsite = [\"w!f+0x1\"]\naction = \"mlock\"\n\
             bytes = 0\n[[hint]]\nsite = [\"w!f+0x1\"]\naction = \"mlock\"\nbytes = 4096\n",
        );
        let h = resolve_sim_hints(&f, 4096, 1, Some(&kept)).unwrap();
        assert_eq!(
            h.ranges,
            vec![pin(0x90, 0x93), pin(0x10, 0x13), pin(0x20, 0x21)]
        );
        assert_eq!(h.matched, vec![None, Some(3), Some(3)]);
        assert!(h.warnings[0].starts_with("hint 2: mlock skipped on 2 of its 3"));
        assert!(h.warnings[1].starts_with("hint 3: mlock skipped on 2 of its 3"));
        assert!(h.warnings[1].contains("1 locked by an earlier hint already"));
        assert!(h.warnings[1].contains("1 after its bytes ran out"));
    }

    #[test]
    fn at_most_four_hints_per_allocation_and_shared_pages_are_reported() {
        // Site 1's allocation at 0x10000..0x12800 shares page 0x12 with
        // site 2's, which starts at 0x12800, and page 0x10 with site 3's
        // (0xf000..0x10800, freed before site 1's was made: address reuse).
        // Site 4's, a long one, ends before it.
        let s = sites(
            &[&["w!f+0x1"], &["w!g+0x1"], &["w!h+0x1"], &["w!i+0x1"]],
            &[
                (0, 0x0, 0xf000, 4, None),
                (1, 0xf000, 0x1800, 3, Some(2)),
                (3, 0x10000, 0x2800, 1, None),
                (4, 0x12800, 0x2000, 2, None),
            ],
        );
        let cold = "[[hint]]\nsite = [\"w!f+0x1\"]\naction = \"cold\"\ndelay_ms = 1\n";
        let f = hint_file(&cold.repeat(5));
        let h = resolve_sim_hints(&f, 4096, 1, Some(&s)).unwrap();
        assert_eq!(h.matched, vec![Some(1), Some(1), Some(1), Some(1), Some(0)]);
        assert_eq!(h.ranges.len(), 4);
        assert!(h
            .warnings
            .iter()
            .any(|w| w.starts_with("hint 5 (site w!f+0x1)") && w.contains("matches none")));
        let shared: Vec<&String> = h
            .warnings
            .iter()
            .filter(|w| w.contains("share pages with allocations of 2 other site(s) (ids 2, 3)"))
            .collect();
        assert_eq!(shared.len(), 4, "{:?}", h.warnings);
    }

    #[test]
    fn a_changed_module_is_refused() {
        let mut s = sites(
            &[&["libz.so.1!deflate+0x10"]],
            &[(0, 0x10000, 4096, 1, None)],
        );
        s.modules.insert(
            "libz.so.1".into(),
            SiteModule {
                path: "/lib/libz.so.1".into(),
                build_id: Some("aa".into()),
            },
        );
        let f = hint_file(
            "[modules.\"libz.so.1\"]\npath = \"/lib/libz.so.1\"\nbuild_id = \"bb\"\n\
             [[hint]]\nsite = [\"libz.so.1!deflate+0x10\"]\naction = \"cold\"\ndelay_ms = 1\n",
        );
        let e = resolve_sim_hints(&f, 4096, 1, Some(&s))
            .unwrap_err()
            .to_string();
        assert!(e.contains("hint 1 names module \"libz.so.1\""), "{e}");
        assert!(e.contains("build-id bb when advised and aa"), "{e}");
        s.modules.get_mut("libz.so.1").unwrap().build_id = Some("bb".into());
        assert_eq!(
            resolve_sim_hints(&f, 4096, 1, Some(&s)).unwrap().matched,
            vec![Some(1)]
        );
    }
}
