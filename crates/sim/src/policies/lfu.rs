//! (not implemented yet)
use crate::engine::SimError;
use crate::policy::PolicyInfo;

#[allow(dead_code)]
pub const INFO: PolicyInfo = PolicyInfo {
    name: "lfu",
    summary: "least frequently used, ties broken by age",
    params: "",
    needs_future: false,
    build: |_| {
        Err(SimError::BadParam(
            "policy 'lfu' is not implemented yet".into(),
        ))
    },
};
