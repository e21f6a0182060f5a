//! Placement/replacement policies behind one trait.
//!
//! Frame numbering is shared by all policies: frames `0..dram` are DRAM, `dram..dram+pcm` are
//! PCM. Every policy reports its work to a [`Meter`]: for each request it calls `hit` or
//! `fill`, any `evict`/`migrate` it causes, and finally `access` for the request's own read or
//! write on the frame that holds the page afterwards.

/// Trait methods that the policies whose `self.map` finds each page's node in `self.links`
/// write alike, expanded inside their `impl Policy`: `prefetch` (the key's hash bucket) and
/// `prefetch_slot` (its node); given a list, also `prefetch_near`: the node's list neighbours
/// or, for a miss, what evicting the tail of that list will touch.
macro_rules! linked_lookups {
    () => {
        #[inline]
        fn prefetch(&self, key: u64) {
            self.map.prefetch(key);
        }

        #[inline]
        fn prefetch_slot(&self, key: u64) {
            self.links.prefetch_slot_of(&self.map, key);
        }
    };
    ($victims:ident) => {
        linked_lookups!();

        #[inline]
        fn prefetch_near(&self, key: u64, _foreground: bool) {
            if !self.links.prefetch_neighbors_of(&self.map, key) {
                self.links.prefetch_tail(&self.$victims, |k| self.map.prefetch(k));
            }
        }
    };
}

/// `resident` of a policy whose `self.map` holds its resident pages and nothing else.
macro_rules! resident_pages_are_mapped {
    () => {
        fn resident(&self) -> usize {
            self.map.len()
        }
    };
}

mod clockdwf;
mod fgbg;
mod frames;
mod lru;
mod twoq;

pub use clockdwf::ClockDwf;
pub use fgbg::FgBg;
pub use frames::{dev_of, Geometry};
pub use lru::Lru;
pub use twoq::TwoQ;

use crate::meter::Meter;

pub trait Policy {
    /// Short name used in configs and results.
    fn name(&self) -> &'static str;
    /// Serve one request; the meter's `begin` has already been called.
    fn access(&mut self, key: u64, write: bool, foreground: bool, m: &mut Meter);
    /// Pages currently in memory.
    fn resident(&self) -> usize;
    /// A request for `key` is coming soon: start fetching its hash bucket.
    fn prefetch(&self, _key: u64) {}
    /// A request for `key` is coming very soon (its bucket should be cached): start fetching
    /// the slot it maps to.
    fn prefetch_slot(&self, _key: u64) {}
    /// A request for `key` is next but one (its slot should be cached): start fetching the
    /// list neighbours it will relink, or, for a miss, what the eviction will touch.
    fn prefetch_near(&self, _key: u64, _foreground: bool) {}
}

/// Tunables of the policies that have any.
#[derive(Clone, Debug, PartialEq)]
pub struct PolicyParams {
    /// 2Q: A1in size as a fraction of the frames (Johnson & Shasha suggest 25%).
    pub kin: f64,
    /// 2Q: A1out (ghost) size as a fraction of the frames (they suggest 50%).
    pub kout: f64,
    /// CLOCK-DWF-like: saturation value of the per-page write-frequency counter.
    pub dwf_max_freq: u8,
}

impl Default for PolicyParams {
    fn default() -> Self {
        PolicyParams { kin: 0.25, kout: 0.5, dwf_max_freq: 3 }
    }
}

pub const POLICY_NAMES: [&str; 4] = ["lru", "2q", "fgbg", "clock-dwf"];

/// Build a policy by name.
pub fn build(name: &str, g: Geometry, p: &PolicyParams) -> Result<Box<dyn Policy>, String> {
    match name {
        "lru" => Ok(Box::new(Lru::new(g)?)),
        "2q" => Ok(Box::new(TwoQ::new(g, p.kin, p.kout)?)),
        "fgbg" => Ok(Box::new(FgBg::new(g)?)),
        "clock-dwf" => Ok(Box::new(ClockDwf::new(g, p.dwf_max_freq)?)),
        _ => Err(format!("unknown policy '{name}' (known: {})", POLICY_NAMES.join(", "))),
    }
}

#[cfg(test)]
mod test_util;
