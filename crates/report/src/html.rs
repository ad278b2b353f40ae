//! The page: an askama template (`templates/report.html`), which escapes
//! every string it is given (titles, captions, table cells, paths,
//! commands, environment values). Only two things go in unescaped: the
//! stylesheet and script below (constants), and the figures' SVG, which
//! plotters writes with its text XML-escaped (tested in
//! `tests/it/escaping.rs`).

use askama::Template;
use base64::Engine;

use crate::model::{Report, Table};
use crate::{plot, Error, Result, TableDoc};

/// Shown-table rows on the page; the CSV link always has all of them.
pub const MAX_SHOWN_ROWS: usize = 200;

const CSS: &str = r#"
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:0;color:#222;background:#fff;line-height:1.45}
header{background:#f4f6f8;border-bottom:1px solid #dde;padding:1em 2em}
header h1{margin:0 0 .2em 0;font-size:1.6em}
.meta{color:#555;font-size:.9em;margin:.2em 0}
nav ol{margin:.4em 0;padding-left:1.4em}
main{padding:0 2em 3em 2em;max-width:1100px}
section.report-section{border-bottom:2px solid #e4e6ea;padding:1em 0 1.5em 0}
h2{font-size:1.35em;margin:.6em 0}
h3{font-size:1.05em;margin:1em 0 .3em 0}
p.design{max-width:60em}
p.note{color:#8a5a00;background:#fff8e6;border-left:3px solid #e0a800;padding:.3em .6em;max-width:60em}
figure.fig{margin:1.2em 0;padding:.5em;border:1px solid #e4e6ea;border-radius:4px;display:inline-block;max-width:100%}
figure.fig svg{max-width:100%;height:auto;display:block}
figcaption{max-width:760px;font-size:.92em;color:#333;margin-top:.4em}
p.links{font-size:.88em;margin:.3em 0}
table{border-collapse:collapse;font-size:.88em;margin:.3em 0}
th,td{border:1px solid #dde;padding:.2em .5em;text-align:left;vertical-align:top}
thead th{background:#f4f6f8}
td.num{text-align:right;font-variant-numeric:tabular-nums}
table.kv th{background:#f8f9fa;font-weight:600;white-space:nowrap}
code{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:.95em;white-space:pre-wrap;word-break:break-all}
details{margin:.5em 0;border:1px solid #e4e6ea;border-radius:4px;padding:.3em .8em}
details>summary{cursor:pointer;font-weight:600}
.table-wrap{overflow-x:auto}
"#;

/// The page's only script: the SVG links download the figure's inline
/// SVG as a file (a Blob made on click), so the page does not carry every
/// figure twice.
const JS: &str = r#"
document.querySelectorAll('a.dl-svg').forEach(function (a) {
  a.addEventListener('click', function () {
    var svg = document.getElementById(a.getAttribute('data-for')).querySelector('svg');
    var text = '<?xml version="1.0" encoding="UTF-8"?>\n' + new XMLSerializer().serializeToString(svg);
    a.href = URL.createObjectURL(new Blob([text], {type: 'image/svg+xml'}));
  });
});
"#;

/// An embedded CSV: what the template needs for its link.
struct DataLink {
    name: String,
    href: String,
    columns_json: String,
    rows: usize,
    size: String,
}

impl DataLink {
    fn of(t: &Table) -> Result<DataLink> {
        let csv = t.to_csv()?;
        Ok(DataLink {
            name: t.doc.name.clone(),
            href: format!(
                "data:text/csv;charset=utf-8;base64,{}",
                base64::engine::general_purpose::STANDARD.encode(&csv)
            ),
            columns_json: json(&t.doc.names()),
            rows: t.rows.len(),
            size: swaplab_trace::units::format_bytes(csv.len() as u64),
        })
    }
}

fn json<T: serde::Serialize + ?Sized>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "[]".into())
}

struct FigView {
    id: String,
    number: usize,
    svg: String,
    caption: String,
    series_json: String,
    data: DataLink,
}

struct TableView {
    id: String,
    about: String,
    /// (name, tooltip: unit and meaning)
    header: Vec<(String, String)>,
    /// (text, numeric)
    body: Vec<Vec<(String, bool)>>,
    truncated: usize,
    data: DataLink,
}

struct FileView {
    path: String,
    url: String,
    about: String,
    size: String,
}

struct SectionView {
    id: String,
    kind: String,
    title: String,
    design: Vec<String>,
    notes: Vec<String>,
    figures: Vec<FigView>,
    tables: Vec<TableView>,
    schemas: Vec<TableDoc>,
    config: Vec<(String, String)>,
    files: Vec<FileView>,
}

#[derive(Template)]
#[template(path = "report.html")]
struct Page<'a> {
    title: &'a str,
    generated_by: &'a str,
    css: &'a str,
    js: &'a str,
    sections: Vec<SectionView>,
}

/// A `file://` URL for a local path (percent-encoding what a URL cannot hold).
fn file_url(p: &std::path::Path) -> String {
    let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let mut s = String::from("file://");
    for b in abs.to_string_lossy().bytes() {
        if b.is_ascii_alphanumeric() || b"/-_.~".contains(&b) {
            s.push(b as char);
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    s
}

/// Makes `kind` safe as a CSS class and id part.
fn slug(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}

/// Renders the whole page.
pub fn render(r: &Report) -> Result<String> {
    let mut figure_no = 0;
    let mut sections = Vec::new();
    for (si, s) in r.sections.iter().enumerate() {
        let mut figures = Vec::new();
        let mut schemas = Vec::new();
        for f in &s.figures {
            figure_no += 1;
            figures.push(FigView {
                id: format!("fig-{figure_no}"),
                number: figure_no,
                svg: strip_xml_decl(plot::svg(f)?),
                caption: f.caption.clone(),
                series_json: json(&f.chart.series_names()),
                data: DataLink::of(&f.data)?,
            });
            schemas.push(f.data.doc.clone());
        }
        let mut tables = Vec::new();
        for (ti, t) in s.tables.iter().enumerate() {
            tables.push(TableView {
                id: format!("sec-{}-table-{}", si + 1, ti + 1),
                about: t.doc.about.clone(),
                header: t
                    .doc
                    .columns
                    .iter()
                    .map(|c| {
                        let tip = if c.unit.is_empty() {
                            c.meaning.clone()
                        } else {
                            format!("{} ({})", c.meaning, c.unit)
                        };
                        (c.name.clone(), tip)
                    })
                    .collect(),
                body: t
                    .rows
                    .iter()
                    .take(MAX_SHOWN_ROWS)
                    .map(|row| row.iter().map(|v| (v.display(), v.is_number())).collect())
                    .collect(),
                truncated: t.rows.len().saturating_sub(MAX_SHOWN_ROWS),
                data: DataLink::of(t)?,
            });
            schemas.push(t.doc.clone());
        }
        schemas.extend(s.file_schemas.iter().cloned());
        sections.push(SectionView {
            id: format!("sec-{}", si + 1),
            kind: slug(&s.kind),
            title: s.title.clone(),
            design: s.design.clone(),
            notes: s.notes.clone(),
            figures,
            tables,
            schemas,
            config: s.config.clone(),
            files: s
                .files
                .iter()
                .map(|f| FileView {
                    path: f.path.display().to_string(),
                    url: file_url(&f.path),
                    about: f.about.clone(),
                    size: file_size(&f.path),
                })
                .collect(),
        });
    }
    let page = Page {
        title: &r.title,
        generated_by: &r.generated_by,
        css: CSS,
        js: JS,
        sections,
    };
    page.render().map_err(|e| Error::Render(e.to_string()))
}

fn file_size(p: &std::path::Path) -> String {
    let size = |m: std::fs::Metadata| {
        if m.is_dir() {
            std::fs::read_dir(p)
                .map(|d| {
                    d.filter_map(|e| e.ok()?.metadata().ok())
                        .filter(|m| m.is_file())
                        .map(|m| m.len())
                        .sum::<u64>()
                })
                .unwrap_or(0)
        } else {
            m.len()
        }
    };
    match std::fs::metadata(p) {
        Ok(m) => swaplab_trace::units::format_bytes(size(m)),
        Err(_) => "missing".into(),
    }
}

/// plotters starts its SVG with an XML declaration, which is not allowed
/// inside HTML: drop it.
fn strip_xml_decl(svg: String) -> String {
    match svg.strip_prefix("<?xml") {
        Some(rest) => rest
            .find("?>")
            .map(|i| rest[i + 2..].trim_start().to_string())
            .unwrap_or(svg),
        None => svg,
    }
}

impl Report {
    /// Writes the page to `path` atomically.
    pub fn write(&self, path: &std::path::Path) -> Result<u64> {
        let html = render(self)?;
        swaplab_trace::atomic::write_atomic(path, html.as_bytes())
            .map_err(|e| Error::Invalid(format!("writing {}: {e}", path.display())))?;
        Ok(html.len() as u64)
    }
}
