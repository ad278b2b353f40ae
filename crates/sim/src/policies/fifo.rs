//! (not implemented yet)
use crate::engine::SimError;
use crate::policy::PolicyInfo;

#[allow(dead_code)]
pub const INFO: PolicyInfo = PolicyInfo {
    name: "fifo",
    summary: "first in, first out",
    params: "",
    needs_future: false,
    build: |_| {
        Err(SimError::BadParam(
            "policy 'fifo' is not implemented yet".into(),
        ))
    },
};
