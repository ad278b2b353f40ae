//! swaplab's report pages.
//!
//! A [`Report`] is a list of [`Section`]s — one per run, sweep, trace,
//! simulation or benchmark — and renders to ONE self-contained HTML file:
//! inline CSS, figures as inline SVG drawn with `plotters`, every figure's
//! data embedded as a CSV `data:` link, collapsible Schema, Linux config and
//! Data parts, and one small script (the SVG download links). Nothing is
//! fetched: the page opens offline in any browser.
//!
//! The core knows nothing about runs or traces: whoever has results builds
//! [`Section`]s from them (swaplab-lab's `report` module does it for runs,
//! sweeps, traces and simulations), so a new kind of result adds a builder,
//! not a change here.
//!
//! * [`model`]: sections, figures, charts, tables (the data model).
//! * [`plot`]: charts → SVG with plotters.
//! * [`html`]: the page, from an askama template (every string escaped).

#![forbid(unsafe_code)]

pub mod html;
pub mod model;
pub mod plot;

pub use model::{
    Axis, Band, Chart, DataFile, Figure, Report, ScatterGroup, Section, Series, Table, Value,
};
pub use swaplab_trace::schema::{ColumnDoc, TableDoc};

/// Errors of building or writing a report.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Drawing a figure failed (plotters).
    #[error("drawing figure {figure:?}: {msg}")]
    Plot {
        /// The figure's title.
        figure: String,
        /// What plotters said.
        msg: String,
    },
    /// Rendering the page failed (askama).
    #[error("rendering the report page: {0}")]
    Render(String),
    /// Writing a file failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A table is inconsistent (e.g. a row with the wrong number of values).
    #[error("{0}")]
    Invalid(String),
}

/// Result with [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
