//! The run timeline: a cheap sampler of a memory cgroup (about 20 Hz) and
//! its Parquet file, `timeline.parquet` in the run directory.
//!
//! Each tick reads four small files (which four depends on the cgroup
//! version) through descriptors opened once (`pread` at offset 0, no
//! open/close per tick): the group's usage
//! (`memory.usage_in_bytes` / `memory.current`), its `memory.stat`
//! (faults; swap on v1; the charged pages), v2 `memory.swap.current`, v1
//! `memory.kmem.usage_in_bytes`, and a memory PSI file (the group's or its
//! companion's `memory.pressure`, else /proc/pressure/memory, marked
//! `system` in the file's metadata).
//!
//! `charged_bytes` is what the group's pages and kernel objects hold,
//! counted from memory.stat. The usage counter holds that plus the
//! per-CPU charge stock: a task charges its group in batches of 64 pages
//! (`MEMCG_CHARGE_BATCH`) and keeps the rest of a batch on its CPU for its
//! next charges, so an unlimited run's usage (and its peak) is rounded up
//! by up to 64 pages for each CPU that charged. Under a limit a charge
//! that does not fit takes only its own pages, so the stock is not memory
//! a limited run can count on. `swaplab validate` takes the program's
//! memory beside its traced data from `charged_bytes` for that reason.
//!
//! | column | type | unit | meaning |
//! |---|---|---|---|
//! | `t_ns` | INT64 | ns | time since the workload was started |
//! | `usage_bytes` | INT64, nullable | bytes | the group's memory usage ("RSS" of the group: anon + page cache charged to it) |
//! | `swap_bytes` | INT64, nullable | bytes | the group's memory in swap (v1 memory.stat `swap`, v2 `memory.swap.current`) |
//! | `pgfault` | INT64, nullable | count | the group's page faults so far (memory.stat) |
//! | `pgmajfault` | INT64, nullable | count | the group's major faults so far (memory.stat) |
//! | `psi_some_us` | INT64, nullable | µs | memory PSI "some" stall total (cumulative; see `psi_scope`) |
//! | `psi_full_us` | INT64, nullable | µs | memory PSI "full" stall total (cumulative) |
//! | `charged_bytes` | INT64, nullable | bytes | the group's pages and kernel memory without the per-CPU charge stock (v1 memory.stat `rss` + `cache` + `memory.kmem.usage_in_bytes`, v2 memory.stat `anon` + `file` + `kernel`) |

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::data_type::Int64Type;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{WriterProperties, WriterVersion};
use parquet::file::reader::FileReader;
use parquet::file::serialized_reader::SerializedFileReader;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;
use serde::{Deserialize, Serialize};
use swaplab_host::cgroup::{CgroupVersion, MemoryGroup};

use crate::error::{Error, Result};

/// The column names, in file order.
pub const COLUMNS: [&str; 8] = [
    "t_ns",
    "usage_bytes",
    "swap_bytes",
    "pgfault",
    "pgmajfault",
    "psi_some_us",
    "psi_full_us",
    "charged_bytes",
];

/// The columns with their documentation (type, unit, meaning), in file
/// order: the module docs' table and the report's Schema come from here.
pub const COLUMN_DOCS: [(&str, &str, &str, &str); 8] = [
    ("t_ns", "INT64", "ns", "time since the workload was started"),
    (
        "usage_bytes",
        "INT64, nullable",
        "bytes",
        "the group's memory usage (\"RSS\" of the group: anon + page cache charged to it)",
    ),
    (
        "swap_bytes",
        "INT64, nullable",
        "bytes",
        "the group's memory in swap (v1 memory.stat `swap`, v2 `memory.swap.current`)",
    ),
    (
        "pgfault",
        "INT64, nullable",
        "count",
        "the group's page faults so far (memory.stat)",
    ),
    (
        "pgmajfault",
        "INT64, nullable",
        "count",
        "the group's major faults so far (memory.stat)",
    ),
    (
        "psi_some_us",
        "INT64, nullable",
        "µs",
        "memory PSI \"some\" stall total (cumulative; see `psi_scope`)",
    ),
    (
        "psi_full_us",
        "INT64, nullable",
        "µs",
        "memory PSI \"full\" stall total (cumulative)",
    ),
    (
        "charged_bytes",
        "INT64, nullable",
        "bytes",
        "the group's pages and kernel memory without the per-CPU charge stock (v1 memory.stat `rss` + `cache` + `memory.kmem.usage_in_bytes`, v2 memory.stat `anon` + `file` + `kernel`)",
    ),
];

/// The documented schema of `timeline.parquet`.
pub fn schema() -> swaplab_trace::schema::TableDoc {
    swaplab_trace::schema::TableDoc {
        name: "timeline.parquet".into(),
        about: "one row per sample of the run's memory cgroup (about 20 Hz)".into(),
        columns: COLUMN_DOCS
            .iter()
            .map(|c| swaplab_trace::schema::ColumnDoc::new(c.0, c.1, c.2, c.3))
            .collect(),
    }
}

/// One tick.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sample {
    /// Nanoseconds since the workload started.
    pub t_ns: u64,
    /// Group memory usage, bytes.
    pub usage_bytes: Option<u64>,
    /// Group memory in swap, bytes.
    pub swap_bytes: Option<u64>,
    /// Group page faults (cumulative).
    pub pgfault: Option<u64>,
    /// Group major faults (cumulative).
    pub pgmajfault: Option<u64>,
    /// Memory PSI some, µs (cumulative).
    pub psi_some_us: Option<u64>,
    /// Memory PSI full, µs (cumulative).
    pub psi_full_us: Option<u64>,
    /// The group's pages and kernel memory, without the per-CPU charge
    /// stock that `usage_bytes` includes (the module docs).
    pub charged_bytes: Option<u64>,
}

/// Where PSI numbers come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// The workload's processes (rusage of the child and its waited-for descendants).
    Process,
    /// The workload's cgroup.
    Cgroup,
    /// The whole machine (meaningful only when the experiment runs alone).
    System,
    /// swaplab itself.
    Swaplab,
}

impl Scope {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Process => "process",
            Scope::Cgroup => "cgroup",
            Scope::System => "system",
            Scope::Swaplab => "swaplab",
        }
    }
}

/// The files one sampler reads.
#[derive(Debug, Clone, Default)]
pub struct SamplerPaths {
    /// Usage file (v1 memory.usage_in_bytes, v2 memory.current).
    pub usage: Option<PathBuf>,
    /// memory.stat.
    pub stat: Option<PathBuf>,
    /// v2 memory.swap.current (v1 takes swap from memory.stat).
    pub swap: Option<PathBuf>,
    /// v1 memory.kmem.usage_in_bytes (v2 counts `kernel` in memory.stat).
    pub kmem: Option<PathBuf>,
    /// A memory PSI file.
    pub psi: Option<PathBuf>,
    /// Whose PSI that is.
    pub psi_scope: Option<Scope>,
}

impl SamplerPaths {
    /// The files for an experiment's group: the PSI file is the group's,
    /// else its companion's, else the system's.
    pub fn for_group(group: &MemoryGroup) -> SamplerPaths {
        let m = &group.memory;
        let (usage, swap, kmem) = match m.version {
            CgroupVersion::V1 => (
                m.file("memory.usage_in_bytes"),
                None,
                Some(m.file("memory.kmem.usage_in_bytes")),
            ),
            CgroupVersion::V2 => (
                m.file("memory.current"),
                Some(m.file("memory.swap.current")),
                None,
            ),
        };
        let mut psi_candidates = vec![(m.file("memory.pressure"), Scope::Cgroup)];
        if let Some(c) = &group.psi {
            psi_candidates.push((c.file("memory.pressure"), Scope::Cgroup));
        }
        psi_candidates.push((PathBuf::from("/proc/pressure/memory"), Scope::System));
        let psi = psi_candidates.into_iter().find(|(p, _)| p.exists());
        SamplerPaths {
            usage: Some(usage),
            stat: Some(m.file("memory.stat")),
            swap: swap.filter(|p| p.exists()),
            kmem: kmem.filter(|p| p.exists()),
            psi_scope: psi.as_ref().map(|(_, s)| *s),
            psi: psi.map(|(p, _)| p),
        }
    }
}

/// Reads a cgroup's counters cheaply, tick after tick.
#[derive(Debug)]
pub struct Sampler {
    usage: Option<File>,
    stat: Option<File>,
    swap: Option<File>,
    kmem: Option<File>,
    psi: Option<File>,
    /// Where the PSI numbers come from.
    pub psi_scope: Option<Scope>,
    buf: Vec<u8>,
    t0: Instant,
}

fn open(p: &Option<PathBuf>) -> Option<File> {
    p.as_ref().and_then(|p| File::open(p).ok())
}

impl Sampler {
    /// Opens the files (missing ones are skipped: their columns stay null).
    pub fn new(paths: &SamplerPaths, t0: Instant) -> Sampler {
        Sampler {
            usage: open(&paths.usage),
            stat: open(&paths.stat),
            swap: open(&paths.swap),
            kmem: open(&paths.kmem),
            psi: open(&paths.psi),
            psi_scope: paths.psi_scope,
            buf: vec![0u8; 16 << 10],
            t0,
        }
    }

    fn read(buf: &mut Vec<u8>, f: &File) -> Option<usize> {
        let mut n = 0;
        loop {
            if n == buf.len() {
                buf.resize(buf.len() * 2, 0);
            }
            match f.read_at(&mut buf[n..], n as u64) {
                Ok(0) => return Some(n),
                Ok(r) => n += r,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return None,
            }
        }
    }

    /// Takes one sample now.
    pub fn sample(&mut self) -> Sample {
        let mut s = Sample {
            t_ns: self.t0.elapsed().as_nanos() as u64,
            ..Default::default()
        };
        if let Some(f) = &self.usage {
            if let Some(n) = Self::read(&mut self.buf, f) {
                s.usage_bytes = parse_u64(&self.buf[..n]);
            }
        }
        if let Some(f) = &self.swap {
            if let Some(n) = Self::read(&mut self.buf, f) {
                s.swap_bytes = parse_u64(&self.buf[..n]);
            }
        }
        if let Some(f) = &self.stat {
            if let Some(n) = Self::read(&mut self.buf, f) {
                // v1: rss + cache (+ kmem below); v2: anon + file + kernel.
                let (mut pages, mut kernel) = (None::<u64>, None::<u64>);
                for line in self.buf[..n].split(|&b| b == b'\n') {
                    let mut it = line.splitn(2, |&b| b == b' ');
                    let (Some(k), Some(v)) = (it.next(), it.next()) else {
                        continue;
                    };
                    match k {
                        b"pgfault" => s.pgfault = parse_u64(v),
                        b"pgmajfault" => s.pgmajfault = parse_u64(v),
                        b"swap" if self.swap.is_none() => s.swap_bytes = parse_u64(v),
                        b"rss" | b"cache" | b"anon" | b"file" => {
                            if let Some(v) = parse_u64(v) {
                                pages = Some(pages.unwrap_or(0) + v);
                            }
                        }
                        b"kernel" => kernel = parse_u64(v),
                        _ => {}
                    }
                }
                if kernel.is_none() {
                    if let Some(f) = &self.kmem {
                        if let Some(n) = Self::read(&mut self.buf, f) {
                            kernel = parse_u64(&self.buf[..n]);
                        }
                    }
                }
                s.charged_bytes = pages.map(|p| p + kernel.unwrap_or(0));
            }
        }
        if let Some(f) = &self.psi {
            if let Some(n) = Self::read(&mut self.buf, f) {
                for line in self.buf[..n].split(|&b| b == b'\n') {
                    let total = line
                        .windows(6)
                        .position(|w| w == b"total=")
                        .and_then(|i| parse_u64(&line[i + 6..]));
                    if line.starts_with(b"some") {
                        s.psi_some_us = total;
                    } else if line.starts_with(b"full") {
                        s.psi_full_us = total;
                    }
                }
            }
        }
        s
    }
}

fn parse_u64(b: &[u8]) -> Option<u64> {
    let t = std::str::from_utf8(b).ok()?.trim();
    t.split_whitespace().next()?.parse().ok()
}

/// Metadata stored in the Parquet footer under this key (JSON).
pub const META_KEY: &str = "swaplab.timeline";

/// What the file says about itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimelineMeta {
    /// Samples per second asked for.
    pub sample_hz: u32,
    /// Whose PSI the psi columns are (`cgroup` or `system`).
    pub psi_scope: Option<Scope>,
    /// The memory cgroup's version.
    pub cgroup_version: Option<CgroupVersion>,
    /// Writer.
    pub writer: String,
}

fn pq(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::Parquet {
        path: path.to_path_buf(),
        msg: e.to_string(),
    }
}

/// Writes the samples to `path` atomically (temporary file, then rename).
pub fn write_parquet(path: &Path, samples: &[Sample], meta: &TimelineMeta) -> Result<()> {
    let schema = "message swaplab_timeline { required int64 t_ns (INTEGER(64,false)); \
        optional int64 usage_bytes (INTEGER(64,false)); optional int64 swap_bytes (INTEGER(64,false)); \
        optional int64 pgfault (INTEGER(64,false)); optional int64 pgmajfault (INTEGER(64,false)); \
        optional int64 psi_some_us (INTEGER(64,false)); optional int64 psi_full_us (INTEGER(64,false)); \
        optional int64 charged_bytes (INTEGER(64,false)); }";
    let schema = Arc::new(parse_message_type(schema).map_err(|e| pq(path, e))?);
    let props = WriterProperties::builder()
        .set_writer_version(WriterVersion::PARQUET_2_0)
        .set_compression(Compression::ZSTD(
            ZstdLevel::try_new(3).map_err(|e| pq(path, e))?,
        ))
        .set_dictionary_enabled(false)
        .set_encoding(Encoding::DELTA_BINARY_PACKED)
        .build();
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let file = File::create(&tmp).map_err(|e| Error::io("creating", &tmp, e))?;
    let result = (|| -> Result<()> {
        let mut w =
            SerializedFileWriter::new(file, schema, Arc::new(props)).map_err(|e| pq(path, e))?;
        let mut rg = w.next_row_group().map_err(|e| pq(path, e))?;
        let getters: [fn(&Sample) -> Option<u64>; 8] = [
            |s| Some(s.t_ns),
            |s| s.usage_bytes,
            |s| s.swap_bytes,
            |s| s.pgfault,
            |s| s.pgmajfault,
            |s| s.psi_some_us,
            |s| s.psi_full_us,
            |s| s.charged_bytes,
        ];
        for (i, get) in getters.iter().enumerate() {
            let mut col = rg.next_column().map_err(|e| pq(path, e))?.ok_or_else(|| {
                pq(
                    path,
                    format!("column {} missing from the schema", COLUMNS[i]),
                )
            })?;
            let vals: Vec<i64> = samples
                .iter()
                .filter_map(|s| get(s).map(|v| v as i64))
                .collect();
            let w = col.typed::<Int64Type>();
            if i == 0 {
                w.write_batch(&vals, None, None).map_err(|e| pq(path, e))?;
            } else {
                let def: Vec<i16> = samples
                    .iter()
                    .map(|s| i16::from(get(s).is_some()))
                    .collect();
                w.write_batch(&vals, Some(&def), None)
                    .map_err(|e| pq(path, e))?;
            }
            col.close().map_err(|e| pq(path, e))?;
        }
        rg.close().map_err(|e| pq(path, e))?;
        w.append_key_value_metadata(KeyValue::new(
            META_KEY.to_string(),
            serde_json::to_string(meta).map_err(|e| pq(path, e))?,
        ));
        let file = w.into_inner().map_err(|e| pq(path, e))?;
        file.sync_all().map_err(|e| Error::io("syncing", &tmp, e))?;
        Ok(())
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    std::fs::rename(&tmp, path).map_err(|e| Error::io("renaming into place", path, e))
}

/// Reads a timeline file back.
pub fn read_parquet(path: &Path) -> Result<(Vec<Sample>, Option<TimelineMeta>)> {
    use parquet::record::Field;
    let file = File::open(path).map_err(|e| Error::io("opening", path, e))?;
    let reader = SerializedFileReader::new(file).map_err(|e| pq(path, e))?;
    let meta = reader
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .and_then(|kv| kv.iter().find(|k| k.key == META_KEY))
        .and_then(|k| k.value.as_ref())
        .and_then(|v| serde_json::from_str(v).ok());
    let mut out = Vec::new();
    for row in reader.get_row_iter(None).map_err(|e| pq(path, e))? {
        let row = row.map_err(|e| pq(path, e))?;
        let mut vals: [Option<u64>; 8] = [None; 8];
        for (name, field) in row.get_column_iter() {
            let Some(i) = COLUMNS.iter().position(|c| c == name) else {
                continue;
            };
            vals[i] = match field {
                Field::Long(v) => Some(*v as u64),
                Field::ULong(v) => Some(*v),
                _ => None,
            };
        }
        out.push(Sample {
            t_ns: vals[0].unwrap_or(0),
            usage_bytes: vals[1],
            swap_bytes: vals[2],
            pgfault: vals[3],
            pgmajfault: vals[4],
            psi_some_us: vals[5],
            psi_full_us: vals[6],
            charged_bytes: vals[7],
        });
    }
    Ok((out, meta))
}

#[cfg(test)]
mod tests {
    /// The module docs, the written columns and the documented schema agree.
    #[test]
    fn docs_match_the_columns() {
        let sch = super::schema();
        assert_eq!(sch.names(), super::COLUMNS.to_vec());
        let docs: String = include_str!("timeline.rs")
            .lines()
            .take_while(|l| l.starts_with("//!"))
            .filter(|l| l.starts_with("//! |"))
            .map(|l| format!("{}\n", l.trim_start_matches("//! ")))
            .collect();
        assert_eq!(docs, sch.markdown());
    }

    use super::*;

    /// A fake v2 group: the sampler reads what the files say.
    #[test]
    fn samples_a_fake_v2_group() {
        let dir = tempfile::tempdir().unwrap();
        let g = dir.path().join("swaplab-1-0");
        std::fs::create_dir(&g).unwrap();
        std::fs::write(g.join("memory.current"), "1048576\n").unwrap();
        std::fs::write(g.join("memory.swap.current"), "8192\n").unwrap();
        std::fs::write(
            g.join("memory.stat"),
            "anon 4096\nfile 8192\nkernel 20480\nkernel_stack 16384\npgfault 120\npgmajfault 7\nswap 999\n",
        )
        .unwrap();
        std::fs::write(
            g.join("memory.pressure"),
            "some avg10=0.00 avg60=0.00 avg300=0.00 total=1500\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=900\n",
        )
        .unwrap();
        let group = MemoryGroup {
            memory: swaplab_host::cgroup::Cgroup {
                path: g.clone(),
                version: CgroupVersion::V2,
            },
            psi: None,
        };
        let paths = SamplerPaths::for_group(&group);
        assert_eq!(paths.psi_scope, Some(Scope::Cgroup));
        let mut s = Sampler::new(&paths, Instant::now());
        let a = s.sample();
        assert_eq!(a.usage_bytes, Some(1 << 20));
        assert_eq!(
            a.swap_bytes,
            Some(8192),
            "v2 swap comes from memory.swap.current, not memory.stat"
        );
        assert_eq!((a.pgfault, a.pgmajfault), (Some(120), Some(7)));
        // anon + file + kernel; kernel_stack is part of kernel, not added again.
        assert_eq!(a.charged_bytes, Some(4096 + 8192 + 20480));
        assert_eq!((a.psi_some_us, a.psi_full_us), (Some(1500), Some(900)));
        // Files change in place (same descriptor re-read at offset 0), and a longer text is read whole.
        let long: String = (0..2000).map(|i| format!("x{i} {i}\n")).collect();
        std::fs::write(
            g.join("memory.stat"),
            format!("{long}pgfault 130\npgmajfault 9\n"),
        )
        .unwrap();
        std::fs::write(g.join("memory.current"), "2097152\n").unwrap();
        let b = s.sample();
        assert_eq!(
            (b.usage_bytes, b.pgfault, b.pgmajfault),
            (Some(2 << 20), Some(130), Some(9))
        );
        assert!(b.t_ns >= a.t_ns);
    }

    #[test]
    fn v1_swap_comes_from_memory_stat() {
        let dir = tempfile::tempdir().unwrap();
        let g = dir.path().join("swaplab-1-1");
        std::fs::create_dir(&g).unwrap();
        std::fs::write(g.join("memory.usage_in_bytes"), "4096\n").unwrap();
        std::fs::write(
            g.join("memory.stat"),
            "cache 8192\nrss 40960\nrss_huge 0\nswap 65536\npgfault 3\npgmajfault 1\ntotal_swap 65536\ntotal_rss 40960\n",
        )
        .unwrap();
        std::fs::write(g.join("memory.kmem.usage_in_bytes"), "12288\n").unwrap();
        let group = MemoryGroup {
            memory: swaplab_host::cgroup::Cgroup {
                path: g,
                version: CgroupVersion::V1,
            },
            psi: None,
        };
        let paths = SamplerPaths::for_group(&group);
        let mut s = Sampler::new(&paths, Instant::now());
        let a = s.sample();
        assert_eq!((a.usage_bytes, a.swap_bytes), (Some(4096), Some(65536)));
        // rss + cache + kmem (not the hierarchy's total_ lines).
        assert_eq!(a.charged_bytes, Some(40960 + 8192 + 12288));
        // Without a group PSI file the system's is used, and marked so.
        if Path::new("/proc/pressure/memory").exists() {
            assert_eq!(paths.psi_scope, Some(Scope::System));
            assert!(a.psi_some_us.is_some());
        }
    }

    #[test]
    fn parquet_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("timeline.parquet");
        let samples: Vec<Sample> = (0..100u64)
            .map(|i| Sample {
                t_ns: i * 50_000_000,
                usage_bytes: Some(i << 20),
                swap_bytes: if i % 3 == 0 { None } else { Some(i * 4096) },
                pgfault: Some(i * 10),
                pgmajfault: Some(i),
                psi_some_us: Some(i * 7),
                psi_full_us: None,
                charged_bytes: Some(i << 19),
            })
            .collect();
        let meta = TimelineMeta {
            sample_hz: 20,
            psi_scope: Some(Scope::System),
            cgroup_version: Some(CgroupVersion::V1),
            writer: "test".into(),
        };
        write_parquet(&p, &samples, &meta).unwrap();
        let (back, m) = read_parquet(&p).unwrap();
        assert_eq!(back, samples);
        assert_eq!(m, Some(meta));
        assert!(!dir.path().join("timeline.parquet.tmp").exists());
        // Empty timelines are valid files too.
        write_parquet(&p, &[], m.as_ref().unwrap()).unwrap();
        assert!(read_parquet(&p).unwrap().0.is_empty());
    }
}
