//! Guest-physical ranges -> memory devices (DDR DRAM, MCDRAM, PCM, storage).

use crate::params::{DeviceParams, Params, LINE_BYTES};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceKind {
    Dram = 0,
    Mcdram = 1,
    Pcm = 2,
    /// Guest RAM that the guest kernel uses as a block device (legacy persistent memory): the
    /// workload's disk, so that fills and writebacks of the page cache are CPU copies.
    Storage = 3,
}

pub const N_DEVICES: usize = 4;
pub const DEVICE_KINDS: [DeviceKind; N_DEVICES] =
    [DeviceKind::Dram, DeviceKind::Mcdram, DeviceKind::Pcm, DeviceKind::Storage];

impl DeviceKind {
    pub fn name(self) -> &'static str {
        match self {
            DeviceKind::Dram => "dram",
            DeviceKind::Mcdram => "mcdram",
            DeviceKind::Pcm => "pcm",
            DeviceKind::Storage => "storage",
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
            DeviceKind::Storage => &p.storage,
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
        Ok(MemRange::parse_with_node(text)?.0)
    }

    /// Parses `kind:start:size[:node]`: the range and its NUMA node (decimal), if given.
    pub fn parse_with_node(text: &str) -> Result<(MemRange, Option<u32>), String> {
        let bad = || {
            format!("bad value '{text}' for mem: expected <dram|mcdram|pcm|storage>:<start hex>:<size hex>[:<node>]")
        };
        let mut parts = text.split(':');
        let (Some(kind), Some(start), Some(size), node, None) =
            (parts.next(), parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(bad());
        };
        let node = match node {
            None => None,
            Some(n) => Some(n.parse::<u32>().map_err(|_| bad())?),
        };
        let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x").trim_start_matches("0X"), 16);
        let kind = DeviceKind::parse(kind).ok_or_else(bad)?;
        let (Ok(start), Ok(size)) = (hex(start), hex(size)) else {
            return Err(bad());
        };
        if size == 0 || start.checked_add(size).is_none() {
            return Err(bad());
        }
        Ok((MemRange { kind, start, size }, node))
    }
}

/// Where a physical line lives: its device, which quarter of its range it is in, and the
/// rank of its NUMA node among the nodes holding that device (SNC modes, "The model").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    pub kind: DeviceKind,
    pub quarter: usize,
    pub node_rank: Option<usize>,
}

impl Placement {
    /// The line's cluster among `k` (1, 2 or 4) in an SNC mode: its node's rank if the guest
    /// has several nodes of the device, else the part of its range it falls in.
    pub fn cluster(&self, k: usize) -> usize {
        match self.node_rank {
            Some(rank) => rank % k,
            None => self.quarter * k / 4,
        }
    }
}

#[derive(Debug, Default)]
pub struct MemoryMap {
    ranges: Vec<MemRange>,
    /// Per range (same order), the rank of its node among the nodes holding its device, when
    /// the guest has two or more such nodes.
    node_rank: Vec<Option<usize>>,
    /// Per vCPU, the rank of its NUMA node (as for its node's memory), if known.
    vcpu_rank: Vec<Option<usize>>,
}

/// Addresses outside every `mem=` range are DRAM; the SNC quarter of such an address is
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
        let node_rank = vec![None; ranges.len()];
        Ok(MemoryMap { ranges, node_rank, vcpu_rank: Vec::new() })
    }

    /// The guest's NUMA layout: `nodes[i]` is the node of range `ranges[i]` (as given to
    /// `new`, before sorting), `node_cpus` each node's vCPUs. For every device the nodes holding
    /// it get ranks 0, 1, ... in node order; a node's vCPUs get the rank of its memory (its
    /// first range's device). Devices held by a single node get no rank.
    pub fn with_numa(
        ranges: Vec<MemRange>,
        nodes: &[Option<u32>],
        node_cpus: &[(u32, Vec<usize>)],
    ) -> Result<MemoryMap, String> {
        let mut paired: Vec<(MemRange, Option<u32>)> =
            ranges.into_iter().enumerate().map(|(i, r)| (r, nodes.get(i).copied().flatten())).collect();
        paired.sort_by_key(|(r, _)| r.start);
        let mut map = MemoryMap::new(paired.iter().map(|(r, _)| *r).collect())?;
        let rank_of = |kind: DeviceKind, node: u32| -> Option<usize> {
            let mut of_kind: Vec<u32> = paired.iter().filter(|(r, _)| r.kind == kind).filter_map(|(_, n)| *n).collect();
            of_kind.sort_unstable();
            of_kind.dedup();
            if of_kind.len() < 2 {
                return None;
            }
            of_kind.iter().position(|&n| n == node)
        };
        map.node_rank = paired.iter().map(|(r, n)| n.and_then(|n| rank_of(r.kind, n))).collect();
        for (node, cpus) in node_cpus {
            let rank = paired.iter().find(|(_, n)| *n == Some(*node)).and_then(|(r, _)| rank_of(r.kind, *node));
            for &cpu in cpus {
                if cpu >= map.vcpu_rank.len() {
                    map.vcpu_rank.resize(cpu + 1, None);
                }
                map.vcpu_rank[cpu] = rank;
            }
        }
        Ok(map)
    }

    /// The NUMA rank of vCPU `v`'s node (see `with_numa`), if the guest gave one.
    pub fn vcpu_rank(&self, v: usize) -> Option<usize> {
        self.vcpu_rank.get(v).copied().flatten()
    }

    pub fn ranges(&self) -> &[MemRange] {
        &self.ranges
    }

    #[inline]
    pub fn place(&self, line: u64) -> Placement {
        let addr = line * LINE_BYTES;
        for (i, r) in self.ranges.iter().enumerate() {
            if addr >= r.start && addr - r.start < r.size {
                let quarter = (((addr - r.start) as u128 * 4) / r.size as u128) as usize;
                return Placement { kind: r.kind, quarter, node_rank: self.node_rank[i] };
            }
        }
        let quarter = ((addr % DEFAULT_SPAN) / (DEFAULT_SPAN / 4)) as usize;
        Placement { kind: DeviceKind::Dram, quarter, node_rank: None }
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
