//! (not implemented yet)
use crate::engine::SimError;
use crate::policy::PolicyInfo;

#[allow(dead_code)]
pub const INFO: PolicyInfo = PolicyInfo {
    name: "clock",
    summary: "second chance (bits=N: N-bit reference counter)",
    params: "",
    needs_future: false,
    build: |_| {
        Err(SimError::BadParam(
            "policy 'clock' is not implemented yet".into(),
        ))
    },
};
