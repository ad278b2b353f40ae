//! The section of one recorded run.

use swaplab_report::Section;

use crate::error::Result;
use crate::record::RunRecord;

/// A run's section.
pub fn run_section(rec: &RunRecord) -> Result<Section> {
    Ok(Section {
        kind: "run".into(),
        title: format!("Run {}", rec.id),
        ..Default::default()
    })
}
