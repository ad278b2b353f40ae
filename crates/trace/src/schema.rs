//! Column documentation of the files swaplab writes: name, type, unit and
//! meaning. Each writer defines its columns once, with their documentation,
//! and exposes them as [`TableDoc`]s; the report's Schema sections and the
//! module docs' tables are generated from (or tested against) the same
//! definitions, so the documentation cannot drift from the files.

use serde::Serialize;

/// One column of a table or file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ColumnDoc {
    /// Column name, as in the file's header or schema.
    pub name: String,
    /// Storage type, e.g. `INT64 (u64), delta`, `integer`, `float`, `text`.
    pub ty: String,
    /// Unit (`ns`, `bytes`, `pages`, `address`, `code`, …), empty if none.
    pub unit: String,
    /// What a value means.
    pub meaning: String,
}

impl ColumnDoc {
    /// A column from string slices.
    pub fn new(name: &str, ty: &str, unit: &str, meaning: &str) -> ColumnDoc {
        ColumnDoc {
            name: name.to_string(),
            ty: ty.to_string(),
            unit: unit.to_string(),
            meaning: meaning.to_string(),
        }
    }
}

/// One table or file: its name, what a row is, and its columns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TableDoc {
    /// File or table name, e.g. `faults.parquet`.
    pub name: String,
    /// What one row is, e.g. "one row per page fault, in time order".
    pub about: String,
    /// The columns, in file order.
    pub columns: Vec<ColumnDoc>,
}

impl TableDoc {
    /// The column names, in order.
    pub fn names(&self) -> Vec<&str> {
        self.columns.iter().map(|c| c.name.as_str()).collect()
    }

    /// The columns as a Markdown table (`| column | type | unit | meaning |`),
    /// the form the module docs use.
    pub fn markdown(&self) -> String {
        let mut s = String::from("| column | type | unit | meaning |\n|---|---|---|---|\n");
        for c in &self.columns {
            let unit = if c.unit.is_empty() {
                " ".to_string()
            } else {
                format!(" {} ", c.unit)
            };
            s.push_str(&format!(
                "| `{}` | {} |{unit}| {} |\n",
                c.name, c.ty, c.meaning
            ));
        }
        s
    }
}
