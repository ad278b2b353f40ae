//! (not implemented yet)
use crate::engine::SimError;
use crate::policy::PolicyInfo;

#[allow(dead_code)]
pub const INFO: PolicyInfo = PolicyInfo {
    name: "linux-rrip",
    summary: "Linux's two lists with the active list aged by RRPV",
    params: "",
    needs_future: false,
    build: |_| {
        Err(SimError::BadParam(
            "policy 'linux-rrip' is not implemented yet".into(),
        ))
    },
};
