//! The section of a sweep.

use swaplab_report::Section;

use crate::error::Result;
use crate::record::RunRecord;
use crate::sweep::SweepReport;

/// A sweep's section.
pub fn sweep_section(rep: &SweepReport, _runs: &[RunRecord]) -> Result<Section> {
    Ok(Section {
        kind: "sweep".into(),
        title: format!("Sweep s{}", rep.sweep_id),
        ..Default::default()
    })
}
