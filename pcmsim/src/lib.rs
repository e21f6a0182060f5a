//! manylab-pcmsim: a trace-driven simulator of page placement and replacement policies for a
//! hybrid DRAM/PCM main memory (or buffer cache).
//!
//! Modules, one job each:
//! * `request`  - trace records, process states, oom_adj mapping
//! * `trace`    - binary (.mlpt) and CSV formats, streaming readers/writers, key interning
//! * `pagemap`, `lru_list` - the O(1) data structures the policies are built from
//! * `policy`   - LRU, 2Q, the paper's foreground/background policy, a CLOCK-DWF-like baseline
//! * `meter`    - counting of device operations per request class, PCM wear
//! * `model`    - time and energy presets; `config` - loading/overriding them
//! * `gen`      - synthetic workload generator shaped like the paper's two traces
//! * `sim`      - one simulation point and its results; `sweep` - many points in one pass
//! * `json`     - the JSON-lines output (serde_json); `bench` - throughput
//!
//! The binary (`main.rs`) parses its command line with clap.

pub mod bench;
pub mod config;
pub mod gen;
pub mod json;
pub mod lru_list;
pub mod mem;
pub mod meter;
pub mod model;
pub mod pagemap;
pub mod policy;
pub mod request;
pub mod sim;
pub mod sweep;
pub mod trace;
