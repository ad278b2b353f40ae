//! (not implemented yet)
use crate::engine::SimError;
use crate::policy::PolicyInfo;

#[allow(dead_code)]
pub const INFO: PolicyInfo = PolicyInfo {
    name: "opt",
    summary: "Belady's optimal: evict the page whose next use is farthest",
    params: "",
    needs_future: true,
    build: |_| {
        Err(SimError::BadParam(
            "policy 'opt' is not implemented yet".into(),
        ))
    },
};
