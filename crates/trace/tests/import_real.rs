//! Importers on real files: libCacheSim's cloudPhysicsIO sample (two
//! encodings of the same requests), a real valgrind lackey log and real
//! `perf script` output (tests/data/).
use std::path::{Path, PathBuf};
use swaplab_trace::export::write_oracle_general;
use swaplab_trace::import::{self, Column, Format, ImportOptions};
use swaplab_trace::{DenseTrace, RefBatch, RefSource, Source};

/// A file of the shared data directory, `../shared/data` beside the
/// checkout root (found from this crate's directory, never from one
/// machine's absolute path). Records a skip with the reason when it is
/// absent (on CI it is present, so there the skip fails the test).
fn shared(test: &str, name: &str) -> Option<PathBuf> {
    let root = swaplab_testkit::checkout_root(env!("CARGO_MANIFEST_DIR"));
    let found = swaplab_testkit::shared_data(env!("CARGO_MANIFEST_DIR"))
        .map(|d| d.join(name))
        .filter(|p| p.exists());
    if found.is_none() {
        swaplab_testkit::skip(
            test,
            swaplab_testkit::Facility::SharedData,
            format!(
                "{name} not found in {}",
                root.parent().unwrap_or(&root).join("shared/data").display()
            ),
        );
    }
    found
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// All references: (page, write), time_ns, tid.
fn read_all(src: &mut dyn RefSource) -> (Vec<(u64, bool)>, Vec<u64>, Vec<u32>) {
    let mut refs = vec![];
    let (mut time, mut tid) = (vec![], vec![]);
    let mut b = RefBatch::default();
    while src.next_batch(&mut b, 4096).unwrap() {
        b.check().unwrap();
        refs.extend(b.page.iter().copied().zip(b.write.iter().copied()));
        time.extend_from_slice(&b.time_ns);
        tid.extend_from_slice(&b.tid);
    }
    (refs, time, tid)
}

fn distinct(refs: &[(u64, bool)]) -> usize {
    let mut p: Vec<u64> = refs.iter().map(|r| r.0).collect();
    p.sort_unstable();
    p.dedup();
    p.len()
}

fn csv_opts() -> ImportOptions {
    ImportOptions {
        id_column: Column::Name("lbn".into()),
        has_header: true,
        op_column: Some(Column::Name("op".into())),
        time_column: Some(Column::Name("time".into())),
        ..Default::default()
    }
}

#[test]
fn cloudphysics_oracle_general_and_csv_agree() {
    let test = "cloudphysics_oracle_general_and_csv_agree";
    let Some(bin) = shared(test, "cloudPhysicsIO.oracleGeneral.bin.zst") else {
        return;
    };
    let Some(csv) = shared(test, "cloudPhysicsIO.csv.zst") else {
        return;
    };
    assert_eq!(import::detect(&bin), Some(Format::OracleGeneral));
    assert_eq!(import::detect(&csv), Some(Format::Csv));

    let opts = ImportOptions::default();
    let mut og = import::open(&bin, Format::OracleGeneral, &opts).unwrap();
    let (og_refs, og_time, og_tid) = read_all(og.as_mut());
    // The README's numbers.
    assert_eq!(og_refs.len(), 113_872);
    assert_eq!(distinct(&og_refs), 48_974);
    assert!(og_refs.iter().all(|r| !r.1));
    assert_eq!(og_time.len(), og_refs.len());
    assert!(og_tid.is_empty());
    // First record, read off the file with Python's struct '<IQIq':
    // (5633898, 42932745, 512, -1).
    assert_eq!(og_refs[0].0, 42_932_745);
    assert_eq!(og_time[0], 5_633_898 * 1_000_000_000);
    match og.source() {
        Source::Imported { format, path, .. } => {
            assert_eq!(format, "oracleGeneral");
            assert!(path.ends_with("cloudPhysicsIO.oracleGeneral.bin.zst"));
        }
        s => panic!("unexpected source {s:?}"),
    }

    let mut c = import::open(&csv, Format::Csv, &csv_opts()).unwrap();
    let (csv_refs, csv_time, _) = read_all(c.as_mut());
    // Same requests in the same order, and the same clock.
    assert_eq!(csv_refs.len(), og_refs.len());
    assert!(
        csv_refs.iter().map(|r| r.0).eq(og_refs.iter().map(|r| r.0)),
        "csv lbn stream differs from the oracleGeneral obj_id stream"
    );
    assert_eq!(csv_time, og_time);
    // 66,898 rows have op 2a (write), 46,974 have 28 (read) (counted with
    // Python's csv module).
    assert_eq!(csv_refs.iter().filter(|r| r.1).count(), 66_898);
}

/// The dense loaders (oracleGeneral on two threads, csv and txt on all
/// cores) give the trace the batch readers give on the shared
/// cloudPhysicsIO files (and on its ids written as a text trace).
#[test]
fn cloudphysics_dense_loaders_equal_the_batch_readers() {
    let test = "cloudphysics_dense_loaders_equal_the_batch_readers";
    let Some(bin) = shared(test, "cloudPhysicsIO.oracleGeneral.bin.zst") else {
        return;
    };
    let Some(csv) = shared(test, "cloudPhysicsIO.csv.zst") else {
        return;
    };
    let dense_of = |refs: &[(u64, bool)]| {
        let pages: Vec<u64> = refs.iter().map(|r| r.0).collect();
        let writes: Vec<bool> = refs.iter().map(|r| r.1).collect();
        DenseTrace::from_arrays(&pages, Some(&writes), 4096, Source::Unknown).unwrap()
    };
    let same = |a: &DenseTrace, b: &DenseTrace| {
        assert_eq!(a.ids, b.ids);
        assert_eq!(a.pages, b.pages);
        assert_eq!(a.write_bits(), b.write_bits());
    };
    let opts = ImportOptions::default();
    let (og_refs, _, _) = read_all(
        import::open(&bin, Format::OracleGeneral, &opts)
            .unwrap()
            .as_mut(),
    );
    let og = DenseTrace::load(
        import::open(&bin, Format::OracleGeneral, &opts)
            .unwrap()
            .as_mut(),
    )
    .unwrap();
    same(&og, &dense_of(&og_refs));
    assert_eq!((og.len(), og.distinct()), (113_872, 48_974));

    let (csv_refs, _, _) = read_all(
        import::open(&csv, Format::Csv, &csv_opts())
            .unwrap()
            .as_mut(),
    );
    let c = DenseTrace::load(
        import::open(&csv, Format::Csv, &csv_opts())
            .unwrap()
            .as_mut(),
    )
    .unwrap();
    same(&c, &dense_of(&csv_refs));
    assert_eq!(c.write_count(), 66_898);
    assert_eq!(c.ids, og.ids);

    let mut txt = Vec::new();
    for (p, w) in &csv_refs {
        txt.extend_from_slice(format!("{p} {}\n", if *w { "w" } else { "r" }).as_bytes());
    }
    let t = DenseTrace::load(
        import::from_reader(&txt[..], "t.txt", Format::Text, &opts)
            .unwrap()
            .as_mut(),
    )
    .unwrap();
    same(&t, &c);
}

#[test]
fn reexport_reproduces_next_access_vtime() {
    let Some(bin) = shared(
        "reexport_reproduces_next_access_vtime",
        "cloudPhysicsIO.oracleGeneral.bin.zst",
    ) else {
        return;
    };
    let original = zstd::decode_all(std::fs::File::open(&bin).unwrap()).unwrap();
    assert_eq!(original.len(), 113_872 * 24);
    let mut src = import::open(&bin, Format::OracleGeneral, &ImportOptions::default()).unwrap();
    let mut out = Vec::new();
    assert_eq!(
        write_oracle_general(src.as_mut(), &mut out).unwrap(),
        113_872
    );
    assert_eq!(out.len(), original.len());
    for (i, (a, b)) in original
        .chunks_exact(24)
        .zip(out.chunks_exact(24))
        .enumerate()
    {
        // clock_time, obj_id and next_access_vtime are reproduced exactly;
        // obj_size is the page size by design.
        assert_eq!(a[0..12], b[0..12], "clock_time/obj_id of record {i}");
        assert_eq!(a[16..24], b[16..24], "next_access_vtime of record {i}");
        assert_eq!(b[12..16], 4096u32.to_le_bytes());
    }
}

#[test]
fn real_lackey_log() {
    let path = fixture("lackey-true.txt");
    // `valgrind --tool=lackey --trace-mem=yes /bin/true`, first 300 lines
    // and the last 4. Counted independently (awk/Python): 26 L, 32 S, 3 M,
    // 233 I lines; none crosses a 4 KiB page boundary.
    let mut src = import::open(&path, Format::Lackey, &ImportOptions::default()).unwrap();
    let (refs, time, tid) = read_all(src.as_mut());
    assert_eq!(refs.len(), 26 + 32 + 3);
    assert_eq!(refs.iter().filter(|r| r.1).count(), 32 + 3);
    assert!(time.is_empty() && tid.is_empty());
    assert_eq!(distinct(&refs), 3);
    // First data access: " S 1fff000758,8" → page 0x1fff000.
    assert_eq!(refs[0], (0x1fff000, true));

    let with_i = ImportOptions {
        include_instructions: true,
        ..Default::default()
    };
    let mut src = import::open(&path, Format::Lackey, &with_i).unwrap();
    let (refs, _, _) = read_all(src.as_mut());
    assert_eq!(refs.len(), 233 + 26 + 32 + 3);
    assert_eq!(distinct(&refs), 5);
    // First line "I  0401ab70,3" → page 0x401a.
    assert_eq!(refs[0], (0x401a, false));
}

#[test]
fn real_perf_script_output() {
    // perf record -c 1 -e page-faults -d -- /bin/true
    // perf script -F comm,tid,time,event,addr,ip   (first 24 samples)
    let path = fixture("perf-script.txt");
    let mut src = import::open(&path, Format::PerfScript, &ImportOptions::default()).unwrap();
    let (refs, time, tid) = read_all(src.as_mut());
    assert_eq!(refs.len(), 24);
    assert_eq!(time.len(), 24);
    assert!(tid.iter().all(|&t| t == 10449) && tid.len() == 24);
    // "true 10449  2254.497627: page-faults:     55e9861b01e0 ffffffff81752b6a"
    assert_eq!(refs[0], (0x55e9861b0, false));
    assert_eq!(time[0], 2_254_497_627_000);
    // Last: "true 10449  2254.498962: page-faults:     7fb9560b2603     7fb9562a74b6"
    assert_eq!(refs[23], (0x7fb9560b2, false));
    assert_eq!(time[23], 2_254_498_962_000);
    assert!(time.windows(2).all(|w| w[0] <= w[1]));
}

#[test]
fn real_perf_default_output_is_rejected_with_advice() {
    // Plain `perf script` (no -F): shows the ip, not the data address.
    let path = fixture("perf-script-default.txt");
    let mut src = import::open(&path, Format::PerfScript, &ImportOptions::default()).unwrap();
    let mut b = RefBatch::default();
    let e = src.next_batch(&mut b, 100).unwrap_err().to_string();
    assert!(e.contains("line 1"), "{e}");
    assert!(e.contains("perf record -d") && e.contains("addr"), "{e}");
}

#[test]
fn real_perf_tracepoint_output() {
    // perf record -e exceptions:page_fault_user -- ls; perf script
    let path = fixture("perf-script-tracepoint.txt");
    let mut src = import::open(&path, Format::PerfScript, &ImportOptions::default()).unwrap();
    let (refs, time, tid) = read_all(src.as_mut());
    let pages: Vec<u64> = refs.iter().map(|r| r.0).collect();
    assert_eq!(
        pages,
        vec![
            0x7f3b81beb,
            0x7f3b81c04,
            0x7f3b81c03,
            0x7f3b81bd1,
            0x7f3b81c02,
            0x7ffe4a174
        ]
    );
    // error_code 0x14, 0x6, 0x6, 0x4, 0x6, 0x6: bit 1 (0x2) = write.
    let writes: Vec<bool> = refs.iter().map(|r| r.1).collect();
    assert_eq!(writes, vec![false, true, true, false, true, true]);
    assert_eq!(time[0], 826_401_395_000);
    assert!(tid.iter().all(|&t| t == 9296));
}

#[test]
fn open_reports_missing_files_with_their_path() {
    let e = match import::open(
        Path::new("/nonexistent/x.csv"),
        Format::Csv,
        &ImportOptions::default(),
    ) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("opened a missing file"),
    };
    assert!(e.contains("/nonexistent/x.csv"), "{e}");
}
