//! The section of a trace directory (`swaplab trace`).

use std::path::Path;

use swaplab_report::Section;

use crate::error::Result;

/// A trace directory's section.
pub fn trace_section(dir: &Path) -> Result<Section> {
    Ok(Section {
        kind: "trace".into(),
        title: format!("Trace {}", dir.display()),
        ..Default::default()
    })
}
