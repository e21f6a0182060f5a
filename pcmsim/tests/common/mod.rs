//! What the integration tests share.

use pcmsim::gen::Rng;

/// A random small case: 1..=`max_dram` DRAM frames, 1..=`max_pcm` PCM frames and a footprint
/// of 1..=`max_pages` pages, drawn in that order.
pub fn random_sizes(rng: &mut Rng, max_dram: u64, max_pcm: u64, max_pages: u64) -> (usize, usize, u64) {
    let dram = 1 + rng.below(max_dram) as usize;
    let pcm = 1 + rng.below(max_pcm) as usize;
    (dram, pcm, 1 + rng.below(max_pages))
}
