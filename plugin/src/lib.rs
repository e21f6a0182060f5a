//! manylab QEMU TCG plugin: a many-core mesh with private L1Ds, shared per-tile L2s, a MESIF
//! directory, and DRAM/MCDRAM/PCM memory devices. See README.md for arguments and schema.

pub mod args;
pub mod atomics;
pub mod bandwidth;
pub mod cache;
pub mod coherence;
pub mod describe;
pub mod directory;
pub mod json;
pub mod lock_sites;
pub mod memory;
pub mod nvmain_trace;
pub mod param_keys;
pub mod params;
pub mod presets;
pub mod quantum;
pub mod race;
pub mod report;
pub mod roi;
pub mod running_vcpu;
pub mod smt;
pub mod spans;
pub mod stats;
pub mod symbols;
pub mod topology;

#[cfg(not(test))]
mod qemu;

#[cfg(test)]
mod causal_tests;
#[cfg(test)]
mod tests;
