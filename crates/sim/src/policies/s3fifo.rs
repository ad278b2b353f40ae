//! (not implemented yet)
use crate::engine::SimError;
use crate::policy::PolicyInfo;

#[allow(dead_code)]
pub const INFO: PolicyInfo = PolicyInfo {
    name: "s3fifo",
    summary: "S3-FIFO (SOSP 2023)",
    params: "",
    needs_future: false,
    build: |_| {
        Err(SimError::BadParam(
            "policy 's3fifo' is not implemented yet".into(),
        ))
    },
};
