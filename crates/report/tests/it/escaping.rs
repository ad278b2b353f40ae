//! The page escapes every string it is given, including those that reach
//! the figures' SVG through plotters, and embeds data that decodes back.

use base64::Engine;
use swaplab_report::*;

const EVIL: &str = "<script>alert(1)</script> \"q\" 'x' & </svg><img src=x onerror=alert(2)>";

fn cols(names: &[&str]) -> Vec<ColumnDoc> {
    names
        .iter()
        .map(|n| ColumnDoc::new(n, "float", "", "test column"))
        .collect()
}

fn report() -> Report {
    let mut data = Table::new("lines", "one row per point", cols(&["x", "y"]));
    data.push(vec![1.0.into(), 2.0.into()]);
    let line = Figure {
        title: format!("lines {EVIL}"),
        caption: format!("caption {EVIL}"),
        chart: Chart::Lines {
            x: Axis::linear(&format!("x {EVIL}")),
            y: Axis::log("y (s)"),
            series: vec![
                Series {
                    name: format!("series {EVIL}"),
                    points: vec![(1.0, 2.0), (2.0, 3.0)],
                    err: vec![(1.5, 2.5), (2.5, 3.5)],
                },
                Series {
                    name: "b".into(),
                    points: vec![(1.0, 1.0), (2.0, 0.0)],
                    err: vec![],
                },
            ],
            x_marks: vec![(1.0, format!("{EVIL} %"))],
        },
        data: data.clone(),
    };
    let scatter = Figure {
        title: "scatter".into(),
        caption: "c".into(),
        chart: Chart::Scatter {
            x: Axis::linear("t (s)"),
            y: Axis::linear("address"),
            groups: vec![ScatterGroup {
                name: EVIL.into(),
                points: vec![(0.5, 10.0)],
            }],
            bands: vec![Band {
                group: 0,
                x: (0.0, 1.0),
                y: (5.0, 15.0),
            }],
            y_marks: vec![(5.0, format!("0x1000 {EVIL}"))],
        },
        data: data.clone(),
    };
    let bars = Figure {
        title: "bars".into(),
        caption: "c".into(),
        chart: Chart::Bars {
            categories: vec![EVIL.into(), "two".into()],
            series: vec![
                ("in".into(), vec![3.0, 1.0]),
                ("out".into(), vec![2.0, 0.0]),
            ],
            value: Axis::linear("pages"),
        },
        data: data.clone(),
    };
    let mut shown = Table::new("shown", &format!("a table {EVIL}"), cols(&[EVIL, "b"]));
    shown.push(vec![EVIL.into(), 1.5.into()]);
    Report {
        title: format!("report {EVIL}"),
        generated_by: format!("swaplab report {EVIL}"),
        sections: vec![Section {
            kind: EVIL.into(),
            title: format!("section {EVIL}"),
            design: vec![format!("ran {EVIL}")],
            figures: vec![line, scatter, bars],
            tables: vec![shown],
            file_schemas: vec![],
            config: vec![(EVIL.into(), EVIL.into())],
            files: vec![DataFile {
                path: format!("/tmp/{EVIL}").into(),
                about: EVIL.into(),
            }],
            notes: vec![EVIL.into()],
        }],
    }
}

#[test]
fn nothing_from_the_data_becomes_markup() {
    let html = html::render(&report()).unwrap();
    // The only script element is the page's own.
    assert_eq!(html.matches("<script").count(), 1, "{html}");
    assert!(html.contains("<script id=\"swaplab-js\">"));
    assert!(!html.contains("<img"), "an <img> got through");
    // `onerror=` only as escaped text, never as an attribute.
    assert_eq!(
        html.matches("onerror=").count(),
        html.matches("&lt;img src=x onerror=").count()
            + html.matches("&#60;img src=x onerror=").count(),
        "an event handler got through"
    );
    // Escaped forms are there (HTML and SVG text alike).
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;")); // plotters
    assert!(html.contains("&#60;script&#62;alert(1)&#60;/script&#62;")); // askama
                                                                         // Three figures with their SVG, series lists and CSV links.
    assert_eq!(html.matches("<figure class=\"fig\"").count(), 3);
    assert_eq!(html.matches("<svg").count(), 3);
    assert_eq!(html.matches("class=\"dl-svg\"").count(), 3);
    // 3 figure CSVs + 1 table CSV.
    assert_eq!(html.matches("class=\"dl-csv\"").count(), 4);
    // Only the download script's prefix: no XML declaration inside the HTML.
    assert_eq!(html.matches("<?xml").count(), 1);
}

#[test]
fn csv_links_decode_to_their_tables() {
    let r = report();
    let html = html::render(&r).unwrap();
    let prefix = "href=\"data:text/csv;charset=utf-8;base64,";
    let mut decoded = Vec::new();
    for part in html.split(prefix).skip(1) {
        let b64 = &part[..part.find('"').unwrap()];
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap();
        decoded.push(String::from_utf8(bytes).unwrap());
    }
    assert_eq!(decoded.len(), 4);
    assert_eq!(decoded[0], "x,y\n1,2\n");
    let mut rd = csv::Reader::from_reader(decoded[3].as_bytes());
    assert_eq!(rd.headers().unwrap().iter().next().unwrap(), EVIL);
    let row = rd.records().next().unwrap().unwrap();
    assert_eq!(&row[0], EVIL);
    assert_eq!(&row[1], "1.5");
}
