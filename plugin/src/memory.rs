//! Guest-physical ranges -> memory devices (DDR DRAM, MCDRAM, PCM).

use crate::params::{DeviceParams, Params, LINE_BYTES};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceKind {
    Dram = 0,
    Mcdram = 1,
    Pcm = 2,
}

pub const DEVICE_KINDS: [DeviceKind; 3] = [DeviceKind::Dram, DeviceKind::Mcdram, DeviceKind::Pcm];

impl DeviceKind {
    pub fn name(self) -> &'static str {
        match self {
            DeviceKind::Dram => "dram",
            DeviceKind::Mcdram => "mcdram",
            DeviceKind::Pcm => "pcm",
        }
    }

    pub fn parse(s: &str) -> Option<DeviceKind> {
        DEVICE_KINDS.into_iter().find(|k| k.name() == s)
    }

    pub fn params(self, p: &Params) -> &DeviceParams {
        match self {
            DeviceKind::Dram => &p.dram,
            DeviceKind::Mcdram => &p.mcdram,
            DeviceKind::Pcm => &p.pcm,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemRange {
    pub kind: DeviceKind,
    pub start: u64,
    pub size: u64,
}

impl MemRange {
    /// Parses `kind:start:size` with hexadecimal start and size (`0x` optional).
    pub fn parse(text: &str) -> Result<MemRange, String> {
        let bad = || format!("bad value '{text}' for mem: expected <dram|mcdram|pcm>:<start hex>:<size hex>");
        let mut parts = text.split(':');
        let (Some(kind), Some(start), Some(size), None) = (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(bad());
        };
        let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x").trim_start_matches("0X"), 16);
        let kind = DeviceKind::parse(kind).ok_or_else(bad)?;
        let (Ok(start), Ok(size)) = (hex(start), hex(size)) else {
            return Err(bad());
        };
        if size == 0 || start.checked_add(size).is_none() {
            return Err(bad());
        }
        Ok(MemRange { kind, start, size })
    }
}

/// Where a physical line lives: its device and, for SNC-4, which quarter of the range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    pub kind: DeviceKind,
    pub quarter: usize,
}

#[derive(Debug)]
pub struct MemoryMap {
    ranges: Vec<MemRange>,
}

/// Addresses outside every `mem=` range are DRAM; the SNC-4 quarter of such an address is
/// taken from its position within this span (the first 4 GiB, where QEMU puts low RAM).
const DEFAULT_SPAN: u64 = 4 << 30;

impl MemoryMap {
    pub fn new(mut ranges: Vec<MemRange>) -> Result<MemoryMap, String> {
        ranges.sort_by_key(|r| r.start);
        for pair in ranges.windows(2) {
            if pair[0].start + pair[0].size > pair[1].start {
                return Err(format!(
                    "mem ranges overlap: {}:{:#x}:{:#x} and {}:{:#x}:{:#x}",
                    pair[0].kind.name(),
                    pair[0].start,
                    pair[0].size,
                    pair[1].kind.name(),
                    pair[1].start,
                    pair[1].size
                ));
            }
        }
        Ok(MemoryMap { ranges })
    }

    pub fn ranges(&self) -> &[MemRange] {
        &self.ranges
    }

    #[inline]
    pub fn place(&self, line: u64) -> Placement {
        let addr = line * LINE_BYTES;
        for r in &self.ranges {
            if addr >= r.start && addr - r.start < r.size {
                let quarter = (((addr - r.start) as u128 * 4) / r.size as u128) as usize;
                return Placement { kind: r.kind, quarter };
            }
        }
        Placement { kind: DeviceKind::Dram, quarter: ((addr % DEFAULT_SPAN) / (DEFAULT_SPAN / 4)) as usize }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_and_place() {
        let pcm = MemRange::parse("pcm:0x40000000:40000000").unwrap();
        assert_eq!(pcm, MemRange { kind: DeviceKind::Pcm, start: 1 << 30, size: 1 << 30 });
        let map = MemoryMap::new(vec![pcm]).unwrap();
        assert_eq!(map.place((1 << 30) / 64).kind, DeviceKind::Pcm);
        assert_eq!(map.place(((1 << 30) + (3 << 28)) / 64).quarter, 3);
        assert_eq!(map.place(5).kind, DeviceKind::Dram);
        assert!(MemRange::parse("flash:0:10").unwrap_err().contains("mem"));
        assert!(MemRange::parse("dram:0:0").is_err());
        let a = MemRange::parse("dram:0:100").unwrap();
        let b = MemRange::parse("pcm:80:100").unwrap();
        assert!(MemoryMap::new(vec![a, b]).is_err());
    }
}
