//! (not implemented yet)
use crate::engine::SimError;
use crate::policy::PolicyInfo;

#[allow(dead_code)]
pub const SRRIP: PolicyInfo = PolicyInfo {
    name: "srrip",
    summary: "static re-reference interval prediction",
    params: "",
    needs_future: false,
    build: |_| {
        Err(SimError::BadParam(
            "policy 'srrip' is not implemented yet".into(),
        ))
    },
};
#[allow(dead_code)]
pub const BRRIP: PolicyInfo = PolicyInfo {
    name: "brrip",
    summary: "bimodal RRIP",
    params: "",
    needs_future: false,
    build: |_| {
        Err(SimError::BadParam(
            "policy 'brrip' is not implemented yet".into(),
        ))
    },
};
#[allow(dead_code)]
pub const DRRIP: PolicyInfo = PolicyInfo {
    name: "drrip",
    summary: "dynamic RRIP (set dueling SRRIP/BRRIP)",
    params: "",
    needs_future: false,
    build: |_| {
        Err(SimError::BadParam(
            "policy 'drrip' is not implemented yet".into(),
        ))
    },
};
