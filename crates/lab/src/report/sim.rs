//! Sections of saved simulations and miss-ratio curves.

use std::path::Path;

use swaplab_report::Section;

use crate::error::Result;

/// `"kind"` of a saved `swaplab sim` result.
pub const SIM_KIND: &str = "swaplab.sim";
/// `"kind"` of a saved `swaplab mrc` result.
pub const MRC_KIND: &str = "swaplab.mrc";

/// A saved simulation's section.
pub fn sim_section(_p: &Path, _v: &serde_json::Value) -> Result<Section> {
    Ok(Section::default())
}

/// A saved miss-ratio curve's section.
pub fn mrc_section(_p: &Path, _v: &serde_json::Value) -> Result<Section> {
    Ok(Section::default())
}
