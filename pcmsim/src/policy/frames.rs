//! Memory geometry and frame bookkeeping shared by the policies.

use crate::meter::Dev;

/// How many page frames of each device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    pub dram: usize,
    pub pcm: usize,
}

impl Geometry {
    pub fn new(dram: usize, pcm: usize) -> Geometry {
        Geometry { dram, pcm }
    }

    pub fn frames(&self) -> usize {
        self.dram + self.pcm
    }

    /// Check limits; `hybrid` policies need at least one frame of each device.
    pub fn check(&self, hybrid: bool) -> Result<(), String> {
        if self.frames() == 0 {
            return Err("memory must have at least one frame".into());
        }
        if self.frames() >= u32::MAX as usize / 2 {
            return Err(format!("too many frames ({})", self.frames()));
        }
        if hybrid && (self.dram == 0 || self.pcm == 0) {
            return Err(format!(
                "this policy needs at least one DRAM and one PCM frame (got {} DRAM, {} PCM)",
                self.dram, self.pcm
            ));
        }
        Ok(())
    }

    /// The order in which a device-blind policy (LRU, 2Q) takes free frames: DRAM and PCM
    /// interleaved evenly (Bresenham), so that at any fill level the share of occupied DRAM
    /// frames equals the DRAM share of the memory. Returned as a stack (pop = next frame).
    pub fn interleaved_free_stack(&self) -> Vec<u32> {
        let n = self.frames();
        let (mut next_d, mut next_p) = (0u32, self.dram as u32);
        let mut order = Vec::with_capacity(n);
        for k in 0..n {
            let take_dram = ((k + 1) * self.dram) / n > (k * self.dram) / n;
            if take_dram {
                order.push(next_d);
                next_d += 1;
            } else {
                order.push(next_p);
                next_p += 1;
            }
        }
        order.reverse();
        order
    }

    /// Free stack of one device's frames, lowest frame first out.
    pub fn device_free_stack(&self, dev: Dev) -> Vec<u32> {
        let r = match dev {
            Dev::Dram => 0..self.dram as u32,
            Dev::Pcm => self.dram as u32..self.frames() as u32,
        };
        r.rev().collect()
    }
}

#[inline]
pub fn dev_of(frame: u32, dram: usize) -> Dev {
    if (frame as usize) < dram {
        Dev::Dram
    } else {
        Dev::Pcm
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleave_keeps_share() {
        let g = Geometry::new(2, 8);
        let mut s = g.interleaved_free_stack();
        let mut order = Vec::new();
        while let Some(f) = s.pop() {
            order.push(f);
        }
        // k=4 and k=9 take DRAM: floor((k+1)*2/10) steps up at k+1 = 5 and 10.
        assert_eq!(order, vec![2, 3, 4, 5, 0, 6, 7, 8, 9, 1]);
    }
}
