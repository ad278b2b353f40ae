//! The section of a trace directory (`swaplab trace`): where and when the
//! program swapped, by object and allocation site, and what to do about it
//! (swpTracer's figures and advice).
//!
//! # The scatters
//!
//! Two scatters of time × virtual address: swap-ins with major faults (the
//! program waiting for its pages), and swap-outs (the kernel evicting
//! them). Each mark is coloured by the object the event belongs to: the 8
//! objects with the most events in that figure, then "other objects" and
//! "unattributed". Each of those objects is drawn over a band: its address
//! range over its lifetime.
//!
//! **Address axis.** A process's used addresses are a few islands in a
//! 128 TiB space, so the axis cuts the gaps between them: every event's
//! page and every drawn object's range are merged into address ranges; a
//! gap between ranges that is longer than 4 % of all the ranges' bytes is
//! cut (the 11 longest such gaps at most) and drawn as a fixed 4 % space
//! with a grey line labelled with the address where the next range starts.
//! Within a piece, the axis is linear. Processes share the axis (their
//! address spaces overlap; the CSV says whose event each mark is).
//!
//! **Binning.** A trace has up to millions of events; the figure has
//! [`NX`] × [`NY`] cells (about 3 × 3 pixels each, the size of a mark).
//! Each cell with events gets one mark, in the colour of the group that
//! comes first in the legend among those with events in the cell (objects
//! in order of their events in the figure, then "other objects", then
//! "unattributed"), placed at that group's first event in the cell. So
//! every event of the object numbered 1 is visible, every event of object
//! 2 is unless object 1 shares its cell, and so on; the figure's CSV holds
//! one row per mark with its group's events by kind and the other groups'
//! events it hides, so the counts add up to the trace. The report's size
//! is bounded by the grid, not the trace: at most `NX × NY` marks per
//! scatter (about 7 MB for both scatters of a trace that fills every cell).
//!
//! Legend entries are numbered; the CSV names a mark's group by that
//! number (`other`, `none`), which keeps it small.

use std::path::Path;

use swaplab_analysis::advise::{advise, AdviseContext};
use swaplab_analysis::analyze::{analyze, Analysis, AnalyzeOptions, PatternKind};
use swaplab_host::procfs::Environment;
use swaplab_report::{Axis, Band, Chart, ColumnDoc, Figure, ScatterGroup, Section, Table, Value};
use swaplab_trace::events::TraceTables;
use swaplab_trace::trace_dir::{self, TraceMetaFile};
use swaplab_trace::units::format_bytes;

use super::{col, existing, linux_config, shell_line, ConfigSource};
use swaplab_lab::error::Result;

/// Time cells of a scatter.
pub const NX: usize = 200;
/// Address cells of a scatter.
pub const NY: usize = 125;
/// Objects drawn in their own colour per scatter.
pub const TOP_OBJECTS: usize = 8;
/// Rows of the objects and sites tables (the rest are counted in a note).
pub const TABLE_ROWS: usize = 100;
/// The share of the drawn bytes a cut gap takes on the address axis.
const GAP_SHARE: f64 = 0.04;
/// Gaps cut at most.
const MAX_CUTS: usize = 11;

/// A trace directory's section.
pub fn trace_section(dir: &Path) -> Result<Section> {
    let meta = trace_dir::read_meta(dir)?;
    let t = trace_dir::read_tables(dir)?;
    Ok(section_of(dir, &meta, &t))
}

/// The section of trace tables `t` with their metadata.
pub fn section_of(dir: &Path, meta: &TraceMetaFile, t: &TraceTables) -> Section {
    let an = analyze(t, &AnalyzeOptions::default());
    let ctx = AdviseContext::of_trace(meta);
    let mut advice = advise(&an, t, &ctx);
    // as `swaplab advise` does: a hint that is not a clear gain for the
    // whole process in the simulation becomes nothing, with the reason
    swaplab_analysis::predict::screen(&an, t, &ctx, &mut advice);
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| dir.display().to_string());
    let mut notes: Vec<String> = meta.notes.clone();
    let mut figures = Vec::new();
    for which in [Which::In, Which::Out] {
        match scatter_figure(&an, which, &name) {
            Some(f) => figures.push(f),
            None => notes.push(format!(
                "No {} were traced, so their scatter is not drawn{}.",
                which.what(),
                if which == Which::In {
                    ": the run did not wait for swapped pages (was the limit above its footprint?)"
                } else {
                    ""
                }
            )),
        }
    }
    figures.extend(object_bars(&an, &name));
    figures.extend(site_bars(&an, &name));
    if an.objects.len() > TABLE_ROWS || an.sites.len() > TABLE_ROWS {
        notes.push(format!(
            "The tables show the {TABLE_ROWS} top-ranked objects and sites (of {} and {}); `swaplab analyze {}` writes all of them.",
            an.objects.len(),
            an.sites.len(),
            dir.display()
        ));
    }
    let tables = vec![
        objects_table(&an, &name),
        sites_table(&an, &name),
        patterns_table(&an, &name),
        advice_table(&advice, &name),
    ];
    let env: Option<Environment> = serde_json::from_value(meta.environment.clone()).ok();
    let mut reproduce = vec!["swaplab".to_string(), "trace".to_string()];
    if let Some(b) = meta.run_limit_bytes() {
        reproduce.extend(["--mem-limit".to_string(), b.to_string()]);
    }
    reproduce.push("--".into());
    reproduce.extend(meta.command.iter().cloned());
    let swap_asked: Vec<String> = meta
        .options
        .pointer("/run/swap")
        .and_then(|v| v.as_array())
        .map(|a| {
            a.iter()
                .map(|s| s.as_str().map_or_else(|| s.to_string(), str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let mut config = linux_config(&ConfigSource {
        env: env.as_ref(),
        settings: None,
        cgroup: None,
        limit: meta.run_limit_bytes().map(|b| (format_bytes(b), Some(b))),
        swap_asked,
        reproduce: shell_line(&reproduce),
    });
    if let Some(pc) = meta.run_page_cluster() {
        if let Some(row) = config.iter_mut().find(|r| r.0 == "vm.page-cluster") {
            row.1 = pc.to_string();
        }
    }
    let mut files: Vec<(std::path::PathBuf, &str)> = vec![(
        dir.join("meta.json"),
        "the trace's metadata: command, options, machine, row counts, notes",
    )];
    for doc in trace_dir::schemas() {
        let stem = doc.name.trim_end_matches(".parquet").to_string();
        files.push((
            trace_dir::table_path(dir, &stem),
            "a table of the trace (Schema above)",
        ));
    }
    files.push((dir.join("hints.toml"), "hints written by `swaplab advise`"));
    files.push((
        dir.join("analysis"),
        "`swaplab analyze` output: analysis.json, scatter.csv, bands.csv",
    ));
    Section {
        kind: "trace".into(),
        title: match meta.run_id {
            Some(id) => format!("Trace of run {id}: {}", shell_line(&meta.command)),
            None => format!("Trace {name}: {}", shell_line(&meta.command)),
        },
        design: design(meta, &an, advice.len()),
        figures,
        tables,
        file_schemas: trace_dir::schemas(),
        config,
        files: existing(files),
        notes,
    }
}

fn design(meta: &TraceMetaFile, an: &Analysis, advice: usize) -> Vec<String> {
    let o = &meta.options;
    let source = o
        .get("source")
        .and_then(|v| v.as_str())
        .unwrap_or("unknown");
    let hz = o.get("pagemap_hz").and_then(|v| v.as_f64());
    let tt = &an.totals;
    let lost = o.get("lost_events").and_then(|v| v.as_u64()).unwrap_or(0);
    vec![
        format!(
            "`{}` ran once under `swaplab trace`{}, {}. Page faults came from the {source} source; swap-ins and swap-outs from the processes' pagemap{}; allocations of at least {} from the preloaded allocation tracer, with their call stacks.",
            shell_line(&meta.command),
            meta.run_id.map(|i| format!(" (catalog run {i})")).unwrap_or_default(),
            match meta.run_limit_bytes() {
                Some(b) => format!("in a memory cgroup limited to {}", format_bytes(b)),
                None => "without a memory limit".into(),
            },
            hz.map(|h| format!(", scanned {h} times a second")).unwrap_or_default(),
            o.get("alloc_min")
                .and_then(|v| v.as_u64())
                .map_or_else(|| "the default size".to_string(), format_bytes),
        ),
        format!(
            "Over {:.3} s and {} process{}, it recorded {} faults ({} major), {} swap-ins and {} swap-outs{}, and {} allocation{} at {} site{}. Every event is attributed to the allocation live at its address and time, else to its mapping (docs/tracing.md, Analysis); {} faults and {} swap events belong to nothing known. Each object's access pattern is classified from its faults; {advice} piece{} of advice follow{} (advise's rules, mlock budget half the limit, each hint simulated on the run's faults and kept only when it is a clear gain for the whole process).",
            tt.t_end_ns as f64 / 1e9,
            tt.processes,
            if tt.processes == 1 { "" } else { "es" },
            tt.faults,
            tt.major_faults,
            tt.swap_ins,
            tt.swap_outs,
            if lost > 0 { format!(" ({lost} events were lost by the tracer)") } else { String::new() },
            tt.allocations,
            if tt.allocations == 1 { "" } else { "s" },
            an.sites.len(),
            if an.sites.len() == 1 { "" } else { "s" },
            an.unattributed.0,
            an.unattributed.1,
            if advice == 1 { "" } else { "s" },
            if advice == 1 { "s" } else { "" },
        ),
    ]
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Which {
    In,
    Out,
}

impl Which {
    fn what(self) -> &'static str {
        match self {
            Which::In => "swap-ins or major faults",
            Which::Out => "swap-outs",
        }
    }
    fn takes(self, kind: &str) -> bool {
        match self {
            Which::In => kind == "swap_in" || kind == "major",
            Which::Out => kind == "swap_out",
        }
    }
}

/// A piecewise-linear address axis with the long gaps cut.
#[derive(Debug)]
pub struct AddrAxis {
    /// (first address, y of it) per piece, by address.
    pieces: Vec<(u64, f64)>,
    /// y of the end of the last piece.
    top: f64,
}

impl AddrAxis {
    /// The axis over address ranges `[start, end)` (any order, may overlap).
    pub fn new(mut ranges: Vec<(u64, u64)>) -> AddrAxis {
        ranges.retain(|r| r.1 > r.0);
        ranges.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::new();
        for (a, z) in ranges {
            match merged.last_mut() {
                Some(last) if a <= last.1 => last.1 = last.1.max(z),
                _ => merged.push((a, z)),
            }
        }
        let bytes: u64 = merged.iter().map(|r| r.1 - r.0).sum();
        let space = bytes as f64 * GAP_SHARE;
        // The gaps to cut: the longest ones that are longer than the space
        // drawn in their place.
        let mut gaps: Vec<(u64, usize)> = merged
            .windows(2)
            .enumerate()
            .map(|(i, w)| (w[1].0 - w[0].1, i + 1))
            .filter(|g| g.0 as f64 > space)
            .collect();
        gaps.sort_unstable_by(|a, b| b.cmp(a));
        gaps.truncate(MAX_CUTS);
        let mut cut_before: Vec<usize> = gaps.iter().map(|g| g.1).collect();
        cut_before.sort_unstable();
        let mut pieces = Vec::new();
        let mut y = 0.0;
        let mut starts = std::iter::once(0)
            .chain(cut_before.iter().copied())
            .peekable();
        while let Some(first) = starts.next() {
            let last = starts.peek().map_or(merged.len(), |&n| n).saturating_sub(1);
            if let (Some(a), Some(z)) = (merged.get(first), merged.get(last)) {
                if !pieces.is_empty() {
                    y += space;
                }
                pieces.push((a.0, y));
                y += (z.1 - a.0) as f64;
            }
        }
        AddrAxis { pieces, top: y }
    }

    /// The y of an address (addresses outside every range go to the
    /// nearest piece).
    pub fn y(&self, addr: u64) -> f64 {
        let i = self.pieces.partition_point(|p| p.0 <= addr);
        match i.checked_sub(1).and_then(|i| self.pieces.get(i)) {
            Some(&(a, y)) => y + (addr - a) as f64,
            None => 0.0,
        }
    }

    /// The highest y.
    pub fn top(&self) -> f64 {
        self.top
    }

    /// Labelled marks at the start of each piece.
    pub fn marks(&self) -> Vec<(f64, String)> {
        self.pieces
            .iter()
            .map(|&(a, y)| (y / MIB, format!("{a:#x}")))
            .collect()
    }

    /// Pieces (for tests): how many gaps were cut, plus one.
    pub fn pieces(&self) -> usize {
        self.pieces.len()
    }
}

const MIB: f64 = 1024.0 * 1024.0;

/// The group names of a scatter: top objects, then the rest.
fn group_label(an: &Analysis, obj: usize) -> String {
    let o = &an.objects[obj];
    if an.totals.processes > 1 {
        format!("[pid {}] {}", o.pid, o.label)
    } else {
        o.label.clone()
    }
}

fn scatter_figure(an: &Analysis, which: Which, name: &str) -> Option<Figure> {
    let points: Vec<&swaplab_analysis::analyze::ScatterPoint> =
        an.scatter.iter().filter(|p| which.takes(p.kind)).collect();
    if points.is_empty() {
        return None;
    }
    // Objects by their events in this figure (ties: the analysis's rank).
    let mut per_obj = vec![0u64; an.objects.len()];
    for p in &points {
        if let Some(o) = p.object {
            per_obj[o] += 1;
        }
    }
    let mut top: Vec<usize> = (0..an.objects.len()).filter(|&o| per_obj[o] > 0).collect();
    top.sort_by_key(|&o| (std::cmp::Reverse(per_obj[o]), o));
    let rest = top.len().saturating_sub(TOP_OBJECTS);
    top.truncate(TOP_OBJECTS);
    let mut names: Vec<String> = top
        .iter()
        .enumerate()
        .map(|(g, &o)| format!("{}: {}", g + 1, group_label(an, o)))
        .collect();
    let mut keys: Vec<String> = (1..=top.len()).map(|g| g.to_string()).collect();
    let other = names.len();
    names.push(format!("other objects ({rest})"));
    keys.push("other".into());
    let unattributed = names.len();
    names.push("unattributed".into());
    keys.push("none".into());
    let group_of = |obj: Option<usize>| match obj {
        Some(o) => top.iter().position(|&t| t == o).unwrap_or(other),
        None => unattributed,
    };

    let page = an.page_size.max(1);
    let mut ranges: Vec<(u64, u64)> = points
        .iter()
        .map(|p| {
            let a = p.vaddr / page * page;
            (a, a.saturating_add(page))
        })
        .collect();
    for &o in &top {
        let b = &an.bands[o];
        ranges.push((b.start, b.end));
    }
    let axis = AddrAxis::new(ranges);
    let t_end = points
        .iter()
        .map(|p| p.t_ns)
        .chain(top.iter().map(|&o| an.bands[o].t_to))
        .max()
        .unwrap_or(0)
        .max(an.totals.t_end_ns)
        .max(1) as f64;
    let y_top = axis.top().max(1.0);
    let cell_of = |t: u64, addr: u64| {
        let ix = ((t as f64 / t_end) * NX as f64) as usize;
        let iy = ((axis.y(addr) / y_top) * NY as f64) as usize;
        ix.min(NX - 1) * NY + iy.min(NY - 1)
    };
    // Per cell: the group drawn (the first in legend order with events in
    // the cell), its first event and counts by kind, and the other events.
    #[derive(Clone, Copy)]
    struct Cell {
        group: usize,
        first: u32,
        n: [u32; 3],
        others: u32,
    }
    let mut grid = vec![
        Cell {
            group: usize::MAX,
            first: 0,
            n: [0; 3],
            others: 0,
        };
        NX * NY
    ];
    for (i, p) in points.iter().enumerate() {
        let g = group_of(p.object);
        let c = &mut grid[cell_of(p.t_ns, p.vaddr)];
        if g < c.group {
            // A group earlier in the legend takes the cell over.
            c.others += c.n.iter().sum::<u32>();
            *c = Cell {
                group: g,
                first: i as u32,
                n: [0; 3],
                others: c.others,
            };
        }
        if g == c.group {
            c.n[match p.kind {
                "swap_in" => 0,
                "major" => 1,
                _ => 2,
            }] += 1;
        } else {
            c.others += 1;
        }
    }
    let mut data = Table::new(
        &format!("{name}-{}-scatter", if which == Which::In { "swapin" } else { "swapout" }),
        "one row per mark: a time × address cell, the group drawn in it (the first in the legend's order with events there), that group's first event in the cell and its events; the other groups' events in the cell are counted",
        vec![
            col("t_s", "float", "s", "time of the group's first event in the cell, since the command started"),
            col("pid", "integer", "", "its process"),
            col("vaddr", "text", "hex", "its page's virtual address"),
            col("group", "text", "", "the legend's number of the object, `other` (other objects) or `none` (unattributed)"),
            col("events", "integer", "count", "events of the group in the cell"),
            col("swap_ins", "integer", "count", "of which swap-ins"),
            col("major_faults", "integer", "count", "of which major faults"),
            col("swap_outs", "integer", "count", "of which swap-outs"),
            col("other_events", "integer", "count", "events of other groups in the cell (hidden under this mark)"),
        ],
    );
    let mut groups: Vec<ScatterGroup> = names
        .iter()
        .map(|n| ScatterGroup {
            name: n.clone(),
            points: Vec::new(),
        })
        .collect();
    let mut drawn: Vec<&Cell> = grid.iter().filter(|c| c.group != usize::MAX).collect();
    drawn.sort_by_key(|c| c.first);
    for c in drawn {
        let p = points[c.first as usize];
        groups[c.group]
            .points
            .push((p.t_ns as f64 / 1e9, axis.y(p.vaddr) / MIB));
        data.push(vec![
            Value::from((p.t_ns / 1000) as f64 / 1e6),
            Value::from(p.pid as u64),
            Value::from(format!("{:#x}", p.vaddr / page * page)),
            Value::from(keys[c.group].as_str()),
            Value::from(c.n.iter().map(|&v| v as u64).sum::<u64>()),
            Value::from(c.n[0] as u64),
            Value::from(c.n[1] as u64),
            Value::from(c.n[2] as u64),
            Value::from(c.others as u64),
        ]);
    }
    let marks = data.rows.len();
    let bands: Vec<Band> = top
        .iter()
        .enumerate()
        .map(|(g, &o)| {
            let b = &an.bands[o];
            Band {
                group: g,
                x: (b.t_from as f64 / 1e9, b.t_to as f64 / 1e9),
                y: (axis.y(b.start) / MIB, axis.y(b.end.saturating_sub(1)) / MIB),
            }
        })
        .collect();
    // Empty "other objects" and "unattributed" groups stay out of the
    // legend. The top objects stay in it even when others' marks hide all
    // of theirs: they keep their numbers and colours (and their bands).
    let n_top = top.len();
    let mut i = 0;
    groups.retain(|g| {
        i += 1;
        i <= n_top || !g.points.is_empty()
    });
    let pieces = axis.pieces();
    let (title, what) = match which {
        Which::In => (
            "Swap-ins and major faults by address and time",
            "swap-ins and major faults",
        ),
        Which::Out => ("Swap-outs by address and time", "swap-outs"),
    };
    Some(Figure {
        title: title.into(),
        caption: format!(
            "{} {what} drawn as {marks} marks: the plot is cut into {NX} × {NY} time × address cells, and each cell with events shows one mark, at the first event of the group first in the legend among those with events there, so every event of the object numbered 1 is visible (the CSV counts each mark's events and those it hides). Colours: the {} objects with the most {what}, then the {rest} other objects and events attributed to none; shaded bands are those objects' address ranges over their lifetimes. The address axis {}.",
            points.len(),
            top.len(),
            if pieces > 1 {
                format!("cuts the {} longest gaps between used address ranges (grey lines, labelled with the address after the gap); it is linear in between", pieces - 1)
            } else {
                "is linear".to_string()
            }
        ),
        chart: Chart::Scatter {
            x: Axis::linear("time since start (s)"),
            y: Axis::linear("virtual address (long gaps cut)"),
            groups,
            bands,
            y_marks: axis.marks(),
        },
        data,
    })
}

/// The objects or sites worth a bar: at least 1 % of the events of the
/// one with the most, 12 at most, in rank order.
fn worth_a_bar(events: impl Iterator<Item = u64>) -> Vec<usize> {
    let events: Vec<u64> = events.collect();
    let max = events.iter().copied().max().unwrap_or(0);
    (0..events.len())
        .filter(|&i| events[i] > 0 && events[i] * 100 >= max)
        .take(BARS)
        .collect()
}

/// Bars of the per-object and per-site figures at most.
const BARS: usize = 12;

/// One bar group: its legend label, its table label, the second column's
/// value (pid or objects), and (swap-ins, swap-outs, major faults).
struct BarRow {
    category: String,
    label: String,
    second: u64,
    counts: [u64; 3],
}

/// What a per-object or per-site bar figure says about its rows.
struct BarFigure<'a> {
    file: String,
    title: &'a str,
    about: &'a str,
    first: ColumnDoc,
    second: ColumnDoc,
    whose: &'a str,
    caption: String,
}

fn bar_figure(f: BarFigure<'_>, rows: Vec<BarRow>) -> Option<Figure> {
    if rows.is_empty() {
        return None;
    }
    let w = f.whose;
    let mut data = Table::new(
        &f.file,
        f.about,
        vec![
            f.first,
            f.second,
            col(
                "swap_ins",
                "integer",
                "pages",
                &format!("pages of {w} swapped in"),
            ),
            col(
                "swap_outs",
                "integer",
                "pages",
                &format!("pages of {w} swapped out"),
            ),
            col(
                "major_faults",
                "integer",
                "count",
                &format!("major faults on {w}"),
            ),
        ],
    );
    let mut series: Vec<(String, Vec<f64>)> = ["swap-ins", "swap-outs", "major faults"]
        .iter()
        .map(|n| (n.to_string(), Vec::new()))
        .collect();
    let mut categories = Vec::new();
    for r in rows {
        for (s, &v) in series.iter_mut().zip(&r.counts) {
            s.1.push(v as f64);
        }
        let mut row: Vec<Value> = vec![r.label.into(), r.second.into()];
        row.extend(r.counts.iter().map(|&v| Value::from(v)));
        data.push(row);
        categories.push(r.category);
    }
    Some(Figure {
        title: f.title.into(),
        caption: f.caption,
        chart: Chart::Bars {
            categories,
            series,
            value: Axis::linear("pages / faults"),
        },
        data,
    })
}

const BAR_RULE: &str =
    "with at least 1 % of the swap events and major faults of the one with the most";

fn object_bars(an: &Analysis, name: &str) -> Option<Figure> {
    let objs = worth_a_bar(
        an.objects
            .iter()
            .map(|o| o.swap_ins + o.swap_outs + o.major_faults),
    );
    let f = BarFigure {
        file: format!("{name}-objects-swapping"),
        title: "Swapping per object",
        about: "one row per object drawn: its swap traffic and major faults",
        first: col("object", "text", "", "the object's label (allocation site and address, or mapping)"),
        second: col("pid", "integer", "", "its process"),
        whose: "it",
        caption: format!(
            "{} of the {} objects: those {BAR_RULE} ({BARS} at most), ranked by major faults + swap-ins: pages swapped in and out, and major faults. All objects are in the objects table.",
            objs.len(),
            an.objects.len()
        ),
    };
    let rows = objs
        .iter()
        .map(|&i| {
            let o = &an.objects[i];
            BarRow {
                category: group_label(an, i),
                label: o.label.clone(),
                second: o.pid as u64,
                counts: [o.swap_ins, o.swap_outs, o.major_faults],
            }
        })
        .collect();
    bar_figure(f, rows)
}

fn site_bars(an: &Analysis, name: &str) -> Option<Figure> {
    let sites = worth_a_bar(
        an.sites
            .iter()
            .map(|s| s.swap_ins + s.swap_outs + s.major_faults),
    );
    let f = BarFigure {
        file: format!("{name}-sites-swapping"),
        title: "Swapping per allocation site",
        about: "one row per allocation site drawn: the swap traffic and major faults of all its objects",
        first: col("site", "text", "", "the site's label: the first frame outside allocator wrappers, with its file:line"),
        second: col("objects", "integer", "count", "objects allocated there that have events"),
        whose: "its objects",
        caption: format!(
            "{} of the {} allocation sites: those {BAR_RULE} ({BARS} at most); the sums over their objects.",
            sites.len(),
            an.sites.len()
        ),
    };
    let rows = sites
        .iter()
        .map(|&i| {
            let s = &an.sites[i];
            let label = if s.sampled {
                format!(
                    "{} (sampled: ~{} live, est. {:.0} major + swap-ins)",
                    s.label,
                    swaplab_trace::units::format_bytes(s.est_live_bytes),
                    s.est_major_swap_ins
                )
            } else {
                s.label.clone()
            };
            BarRow {
                category: label.clone(),
                label,
                second: s.objects as u64,
                counts: [s.swap_ins, s.swap_outs, s.major_faults],
            }
        })
        .collect();
    bar_figure(f, rows)
}

fn secs(ns: Option<u64>) -> Value {
    ns.map(|n| n as f64 / 1e9).into()
}

fn objects_table(an: &Analysis, name: &str) -> Table {
    let mut t = Table::new(
        &format!("{name}-objects"),
        "one row per object with events (an allocation, or a mapping for events outside every traced allocation), ranked by major faults + swap-ins",
        vec![
            col("rank", "integer", "", "1 = the object that made the program wait most"),
            col("object", "text", "", "label: allocation site and size, or the mapping"),
            col("pid", "integer", "", "its process"),
            col("start", "text", "hex", "first byte"),
            col("bytes", "integer", "bytes", "size"),
            col("faults", "integer", "count", "page faults on it"),
            col("major_faults", "integer", "count", "of which major"),
            col("swap_ins", "integer", "pages", "pages swapped in"),
            col("swap_outs", "integer", "pages", "pages swapped out"),
            col("pages_touched", "integer", "pages", "distinct pages that faulted"),
            col("pattern", "text", "", "access pattern from its faults, with confidence (docs/tracing.md, Analysis)"),
            col("first_s", "float", "s", "first access"),
            col("last_s", "float", "s", "last access"),
        ],
    );
    for (i, o) in an.objects.iter().take(TABLE_ROWS).enumerate() {
        t.push(vec![
            (i as u64 + 1).into(),
            o.label.as_str().into(),
            (o.pid as u64).into(),
            format!("{:#x}", o.start).into(),
            o.bytes.into(),
            o.faults.into(),
            o.major_faults.into(),
            o.swap_ins.into(),
            o.swap_outs.into(),
            o.pages_touched.into(),
            o.pattern.short().into(),
            secs(o.first_ns),
            secs(o.last_ns),
        ]);
    }
    t
}

fn sites_table(an: &Analysis, name: &str) -> Table {
    let mut t = Table::new(
        &format!("{name}-sites"),
        "one row per allocation site with events, ranked by estimated major faults + swap-ins (sampled sites: scaled from their samples)",
        vec![
            col(
                "site",
                "text",
                "",
                "label: the first frame outside allocator wrappers, with its file:line",
            ),
            col("objects", "integer", "count", "its objects with events"),
            col("bytes", "integer", "bytes", "their total size"),
            col("faults", "integer", "count", "page faults on them"),
            col("major_faults", "integer", "count", "of which major"),
            col("swap_ins", "integer", "pages", "pages swapped in"),
            col("swap_outs", "integer", "pages", "pages swapped out"),
            col(
                "pattern",
                "text",
                "",
                "the pattern of its top-ranked object",
            ),
            col(
                "sampled",
                "text",
                "",
                "`sampled`: its objects are below the preload library's threshold, seen through sampling (--heap-sample), and its counts are those of the sampled objects' pages; `exact` otherwise",
            ),
            col(
                "est_live_bytes",
                "integer",
                "bytes",
                "sampled sites: estimated peak live bytes (sum of the live samples' weights); exact sites: empty",
            ),
            col(
                "est_major_swap_ins",
                "float",
                "count",
                "major faults + swap-ins the site stands for (sampled sites: each event's page share × the sample's weight / size)",
            ),
        ],
    );
    for s in an.sites.iter().take(TABLE_ROWS) {
        t.push(vec![
            s.label.as_str().into(),
            (s.objects as u64).into(),
            s.bytes.into(),
            s.faults.into(),
            s.major_faults.into(),
            s.swap_ins.into(),
            s.swap_outs.into(),
            s.pattern.short().into(),
            if s.sampled { "sampled" } else { "exact" }.into(),
            if s.sampled {
                s.est_live_bytes.into()
            } else {
                Value::Empty
            },
            ((s.est_major_swap_ins * 10.0).round() / 10.0).into(),
        ]);
    }
    t
}

fn pattern_class(k: &PatternKind) -> &'static str {
    match k {
        PatternKind::Sequential => "sequential",
        PatternKind::Strided { .. } => "strided",
        PatternKind::Sweeps { .. } => "repeated sweeps",
        PatternKind::Random => "random",
        PatternKind::TooFew => "too few faults to tell",
    }
}

fn patterns_table(an: &Analysis, name: &str) -> Table {
    let mut t = Table::new(
        &format!("{name}-patterns"),
        "one row per access-pattern class: the objects classified so and their share of the waiting",
        vec![
            col("pattern", "text", "", "sequential, strided, repeated sweeps, random, too few faults to tell"),
            col("objects", "integer", "count", "objects of the class"),
            col("bytes", "integer", "bytes", "their total size"),
            col("major_faults", "integer", "count", "major faults on them"),
            col("swap_ins", "integer", "pages", "pages of them swapped in"),
            col("share_of_swap_ins", "float", "%", "their share of all attributed swap-ins"),
        ],
    );
    let classes = [
        "sequential",
        "strided",
        "repeated sweeps",
        "random",
        "too few faults to tell",
    ];
    let total: u64 = an.objects.iter().map(|o| o.swap_ins).sum();
    for c in classes {
        let of: Vec<_> = an
            .objects
            .iter()
            .filter(|o| pattern_class(&o.pattern.kind) == c)
            .collect();
        if of.is_empty() {
            continue;
        }
        let si: u64 = of.iter().map(|o| o.swap_ins).sum();
        t.push(vec![
            c.into(),
            (of.len() as u64).into(),
            of.iter().map(|o| o.bytes).sum::<u64>().into(),
            of.iter().map(|o| o.major_faults).sum::<u64>().into(),
            si.into(),
            (if total > 0 {
                Some(si as f64 / total as f64 * 100.0)
            } else {
                None
            })
            .into(),
        ]);
    }
    t
}

fn advice_table(advice: &[swaplab_analysis::advise::Advice], name: &str) -> Table {
    let mut t = Table::new(
        &format!("{name}-advice"),
        "one row per allocation site with advice (`swaplab advise` writes it as a hint file for `run --hints`)",
        vec![
            col("site", "text", "", "file:line of the site, else its innermost frame"),
            col("action", "text", "", "mlock, willneed (prefetch), cold or pageout, or nothing"),
            col("expected", "text", "", "what should change"),
            col("expected_fault_reduction", "float", "%", "expected share of the site's major faults that go away"),
            col("evidence", "text", "", "why"),
        ],
    );
    for a in advice {
        let site = if a.location.is_empty() {
            a.site_frames.first().cloned().unwrap_or_default()
        } else {
            a.location.clone()
        };
        t.push(vec![
            site.into(),
            a.action.to_string().into(),
            a.expected.as_str().into(),
            (a.expected_fault_reduction * 100.0).into(),
            a.evidence.as_str().into(),
        ]);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use swaplab_trace::events::{
        Allocation, FaultEvent, FaultKind, Process, Site, SwapDir, SwapEvent, SwapSource,
    };

    const MIB_U: u64 = 1 << 20;
    const A: u64 = 0x5555_0000_0000; // object a: 4 MiB
    const B: u64 = 0x7f00_0000_0000; // object b: 1 MiB

    #[test]
    fn the_address_axis_cuts_long_gaps_only() {
        // 1 MiB, a 4 KiB gap (shorter than the 4 % space: kept linear),
        // 4 KiB, a 64 GiB gap (cut), 8 KiB.
        let axis = AddrAxis::new(vec![
            (0x10_0000_0000, 0x10_0000_2000),
            (0, 0x10_0000),
            (0x10_1000, 0x10_2000),
        ]);
        assert_eq!(axis.pieces(), 2);
        let space = (0x10_0000 + 0x1000 + 0x2000) as f64 * GAP_SHARE;
        assert_eq!(axis.y(0), 0.0);
        assert_eq!(axis.y(0x10_1800), 0x10_1800 as f64);
        assert_eq!(axis.y(0x10_0000_0000), 0x10_2000 as f64 + space);
        assert_eq!(axis.top(), 0x10_2000 as f64 + space + 0x2000 as f64);
        let marks = axis.marks();
        assert_eq!(marks[1].1, "0x1000000000");
        // Nothing to cut: one piece.
        assert_eq!(AddrAxis::new(vec![(0, 4096)]).pieces(), 1);
        assert_eq!(AddrAxis::new(vec![]).pieces(), 0);
    }

    fn swap(t_ns: u64, vaddr: u64, dir: SwapDir) -> SwapEvent {
        SwapEvent {
            t_ns,
            pid: 7,
            vaddr,
            dir,
            swap_type: Some(0),
            swap_offset: None,
            source: SwapSource::Pagemap,
        }
    }

    /// Object `a` (4 MiB, site 1) is swept twice: every page swapped out
    /// then swapped in with a major fault; object `b` (1 MiB, site 2) has
    /// `nb` random swap-ins; 3 swap-ins hit no object.
    fn tables(nb: u64) -> TraceTables {
        let pages = 4 * MIB_U / 4096;
        let mut faults = Vec::new();
        let mut swaps = Vec::new();
        for p in 0..pages {
            let t = 1_000_000 + p * 1000;
            swaps.push(swap(t, A + p * 4096, SwapDir::Out));
        }
        for p in 0..pages {
            let t = 2_000_000_000 + p * 1000;
            faults.push(FaultEvent {
                t_ns: t,
                pid: 7,
                tid: 7,
                addr: A + p * 4096 + 8,
                ip: 0x401000,
                kind: FaultKind::Major,
            });
            swaps.push(swap(t, A + p * 4096, SwapDir::In));
        }
        let mut x = 12345u64;
        for i in 0..nb {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let page = (x >> 33) % 256;
            swaps.push(swap(3_000_000_000 + i * 10, B + page * 4096, SwapDir::In));
        }
        for i in 0..3 {
            swaps.push(swap(3_500_000_000 + i, 0x1000_0000 + i * 4096, SwapDir::In));
        }
        // Another process's swap-in at a's first page, when a's comes back:
        // unattributed, in the same cell as a's, hidden under a's mark.
        swaps.push(SwapEvent {
            pid: 9,
            ..swap(2_000_000_000, A, SwapDir::In)
        });
        swaps.sort_by_key(|s| s.t_ns);
        TraceTables {
            faults,
            swaps,
            regions: vec![],
            allocations: vec![
                Allocation {
                    pid: 7,
                    tid: 7,
                    start: A,
                    size: 4 * MIB_U,
                    t_alloc_ns: 0,
                    t_free_ns: None,
                    site_id: 1,
                    func: "malloc".into(),
                    weight: None,
                },
                Allocation {
                    pid: 7,
                    tid: 7,
                    start: B,
                    size: MIB_U,
                    t_alloc_ns: 0,
                    t_free_ns: None,
                    site_id: 2,
                    func: "malloc".into(),
                    weight: None,
                },
            ],
            sites: vec![
                Site {
                    site_id: 1,
                    frames: vec!["w!sweep+0x10".into()],
                    locations: vec!["w.c:10".into()],
                },
                Site {
                    site_id: 2,
                    frames: vec!["w!table+0x20".into()],
                    locations: vec!["w.c:20".into()],
                },
            ],
            processes: vec![Process {
                pid: 7,
                ppid: 1,
                t_start_ns: 0,
                comm: "w".into(),
            }],
        }
    }

    fn meta() -> TraceMetaFile {
        TraceMetaFile {
            command: vec!["w".into(), "<arg>".into()],
            argv: vec![],
            started_unix_ns: 0,
            t0_monotonic_ns: 0,
            options: serde_json::json!({"source": "perf", "pagemap_hz": 100.0, "alloc_min": 65536}),
            environment: serde_json::Value::Null,
            counts: Default::default(),
            notes: vec![],
            swaplab_version: "test".into(),
            run_id: Some(3),
            limit_bytes: Some(2 * MIB_U),
            page_cluster: Some(0),
        }
    }

    fn int(v: &Value) -> u64 {
        v.csv().parse().unwrap()
    }

    /// Sum of a column over the rows of one group.
    fn sum(t: &Table, group_pred: impl Fn(&str) -> bool, column: &str) -> u64 {
        let c = t.doc.columns.iter().position(|c| c.name == column).unwrap();
        let g = t
            .doc
            .columns
            .iter()
            .position(|c| c.name == "group")
            .unwrap();
        t.rows
            .iter()
            .filter(|r| group_pred(&r[g].csv()))
            .map(|r| int(&r[c]))
            .sum()
    }

    #[test]
    fn the_scatters_account_for_every_event_and_the_tables_for_every_object() {
        let t = tables(500);
        let s = section_of(Path::new("/tmp/t1"), &meta(), &t);
        let titles: Vec<&str> = s.figures.iter().map(|f| f.title.as_str()).collect();
        assert_eq!(
            titles,
            [
                "Swap-ins and major faults by address and time",
                "Swap-outs by address and time",
                "Swapping per object",
                "Swapping per allocation site"
            ]
        );
        let pages = 1024;
        let swin = &s.figures[0].data;
        // Every event is counted by exactly one mark of its group.
        assert_eq!(sum(swin, |g| g == "1", "swap_ins"), pages);
        assert_eq!(sum(swin, |g| g == "1", "major_faults"), pages);
        assert_eq!(sum(swin, |g| g == "2", "swap_ins"), 500);
        assert_eq!(sum(swin, |g| g == "none", "swap_ins"), 3);
        assert_eq!(sum(swin, |_| true, "events"), 2 * pages + 503);
        assert_eq!(sum(swin, |_| true, "other_events"), 1);
        assert_eq!(sum(swin, |g| g == "1", "other_events"), 1);
        // b's 500 swap-ins at 256 pages in a 5 µs span share time cells:
        // fewer marks than events, at most one per (cell, group).
        let b_marks = swin.rows.iter().filter(|r| r[3].csv() == "2").count();
        assert!(b_marks < 500 && b_marks > 10, "{b_marks}");
        let swout = &s.figures[1].data;
        assert_eq!(sum(swout, |_| true, "swap_outs"), pages);
        assert_eq!(sum(swout, |_| true, "events"), pages);
        // The scatter's groups: a, b, unattributed (no "other objects").
        match &s.figures[0].chart {
            Chart::Scatter {
                groups,
                bands,
                y_marks,
                ..
            } => {
                let names: Vec<&str> = groups.iter().map(|g| g.name.as_str()).collect();
                assert_eq!(names.len(), 3, "{names:?}");
                assert_eq!(names[2], "unattributed");
                assert_eq!(bands.len(), 2);
                // The unattributed page, a and b are 3 islands: 2 cuts.
                assert_eq!(y_marks.len(), 3, "{y_marks:?}");
                assert_eq!(y_marks[1].1, format!("{A:#x}"));
            }
            other => panic!("{other:?}"),
        }
        // Objects table: a first (1024 majors + 1024 swap-ins).
        let objs = &s.tables[0];
        assert_eq!(int(&objs.rows[0][6]), pages); // major_faults
        assert_eq!(int(&objs.rows[0][7]), pages); // swap_ins
        assert_eq!(int(&objs.rows[0][8]), pages); // swap_outs
        assert_eq!(int(&objs.rows[1][7]), 500);
        // Every table writes a CSV that matches its schema.
        for table in s.tables.iter().chain(s.figures.iter().map(|f| &f.data)) {
            table.to_csv().unwrap();
        }
        assert!(s.design[0].contains("limited to 2M"), "{}", s.design[0]);
        assert!(s.design[0].contains("at least 64K from"), "{}", s.design[0]);
        assert!(s
            .config
            .iter()
            .any(|r| r.0 == "vm.page-cluster" && r.1 == "0"));
        assert!(
            s.config.iter().any(|r| r.1.contains("'<arg>'")),
            "{:?}",
            s.config
        );
    }

    #[test]
    fn a_trace_without_swapping_says_so_instead_of_drawing() {
        let mut t = tables(0);
        t.swaps.clear();
        t.faults.iter_mut().for_each(|f| f.kind = FaultKind::Minor);
        let s = section_of(Path::new("/tmp/t2"), &meta(), &t);
        assert!(s.figures.is_empty(), "{:?}", s.figures.len());
        assert_eq!(s.notes.len(), 2, "{:?}", s.notes);
        assert!(s.notes[0].contains("No swap-ins or major faults"));
    }

    /// The size and build time of a report of a trace of 1 M events
    /// spread over every cell of the scatters (the worst case for the
    /// size): printed; the targets — at most 10 MB and 5 s — are checked
    /// here for the size only, which does not depend on the machine.
    #[test]
    fn a_report_of_a_million_events_stays_small() {
        let mut t = tables(0);
        t.faults.clear();
        t.swaps.clear();
        let gib_pages = (1u64 << 30) / 4096;
        t.allocations[0].size = 1 << 30;
        let mut x = 99u64;
        for i in 0..1_000_000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let dir = if i % 2 == 0 {
                SwapDir::In
            } else {
                SwapDir::Out
            };
            t.swaps
                .push(swap(i * 10_000, A + (x >> 30) % gib_pages * 4096, dir));
        }
        let dir = tempfile::tempdir().unwrap();
        trace_dir::write_tables(dir.path(), &t).unwrap();
        trace_dir::write_meta(dir.path(), &meta()).unwrap();
        let started = std::time::Instant::now();
        let s = trace_section(dir.path()).unwrap();
        let marks: usize = s.figures.iter().take(2).map(|f| f.data.rows.len()).sum();
        let rep = super::super::report_of(vec![s], None, &["test".into()]);
        let out = dir.path().join("r.html");
        let bytes = rep.write(&out).unwrap();
        eprintln!(
            "report of a trace directory of 1000000 events ({marks} marks): {bytes} bytes, read, analysed and written in {:.2} s",
            started.elapsed().as_secs_f64()
        );
        // Every cell of both scatters is occupied.
        assert_eq!(marks, 2 * NX * NY);
        assert!(bytes <= 10_000_000, "{bytes} bytes");
    }
}
