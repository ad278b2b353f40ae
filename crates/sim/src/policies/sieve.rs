//! (not implemented yet)
use crate::engine::SimError;
use crate::policy::PolicyInfo;

#[allow(dead_code)]
pub const INFO: PolicyInfo = PolicyInfo {
    name: "sieve",
    summary: "SIEVE (NSDI 2024)",
    params: "",
    needs_future: false,
    build: |_| {
        Err(SimError::BadParam(
            "policy 'sieve' is not implemented yet".into(),
        ))
    },
};
