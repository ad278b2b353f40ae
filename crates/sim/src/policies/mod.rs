//! One file per policy; adding a policy means one new file and one line in
//! [`REGISTRY`].
use crate::error::SimError;
use crate::policy::PolicyInfo;

pub mod arc;
pub mod clock;
pub mod fifo;
pub mod lfu;
pub mod linux;
pub mod linux_rrip;
pub mod lirs;
pub mod lru;
pub mod mglru;
pub mod opt;
pub mod rrip;
pub mod s3fifo;
pub mod sieve;
pub mod twoq;

/// Every policy `swaplab sim` knows, in the order `all` lists them.
pub static REGISTRY: &[&PolicyInfo] = &[
    &opt::INFO,
    &fifo::INFO,
    &lru::INFO,
    &clock::INFO,
    &linux::INFO,
    &rrip::SRRIP,
    &rrip::BRRIP,
    &rrip::DRRIP,
    &linux_rrip::INFO,
    &mglru::INFO,
    &arc::INFO,
    &twoq::INFO,
    &lirs::INFO,
    &sieve::INFO,
    &s3fifo::INFO,
    &lfu::INFO,
];

/// Finds a policy by name.
pub fn lookup(name: &str) -> Result<&'static PolicyInfo, SimError> {
    REGISTRY
        .iter()
        .copied()
        .find(|i| i.name == name)
        .ok_or_else(|| {
            SimError::UnknownPolicy(
                name.to_string(),
                REGISTRY
                    .iter()
                    .map(|i| i.name)
                    .collect::<Vec<_>>()
                    .join(", "),
            )
        })
}
