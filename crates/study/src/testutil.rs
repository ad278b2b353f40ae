//! Helpers for the crate's unit tests.

use swaplab_lab::record::{Metrics, Outcome, Role, RunRecord, Status};

/// A measured run that ended ok at `limit_label`, with `metrics` and
/// nothing else recorded; tests set the fields they need on it.
pub(crate) fn ok_run(id: i64, limit_label: &str, metrics: Metrics) -> RunRecord {
    RunRecord {
        id,
        dir: Default::default(),
        sweep_id: None,
        variant: None,
        limit_label: limit_label.into(),
        repeat_idx: 0,
        role: Role::Measure,
        status: Status::Done,
        outcome: Some(Outcome::Ok),
        exit_code: Some(0),
        term_signal: None,
        command: vec![],
        resolved_command: vec![],
        options: Default::default(),
        limit_bytes: None,
        started_unix_ns: 0,
        finished_unix_ns: None,
        cgroup: None,
        env: None,
        metrics,
        workload_output: None,
        notes: vec![],
        error: None,
        trace_dir: None,
        settings: None,
        timeline_hz: None,
        swap_areas: Vec::new(),
    }
}
