//! (not implemented yet)
use crate::engine::SimError;
use crate::policy::PolicyInfo;

#[allow(dead_code)]
pub const INFO: PolicyInfo = PolicyInfo {
    name: "2q",
    summary: "2Q (full version: A1in, A1out, Am)",
    params: "",
    needs_future: false,
    build: |_| {
        Err(SimError::BadParam(
            "policy '2q' is not implemented yet".into(),
        ))
    },
};
