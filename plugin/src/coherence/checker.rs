//! The invariant checker (`checker=on`, and the tests): single writer / multiple readers,
//! directory/cache agreement and inclusion for a line or for every line, and the
//! request/response balance of a statistics slot.

use super::{Machine, L1_M, L1_S, T_E, T_F, T_M, T_O};
use crate::directory::{bit, DirState, NO_TILE};
use crate::stats::{Ctr, Msg};

impl Machine {
    /// Checks single-writer/multiple-reader and directory/cache agreement for one line.
    pub fn check_line(&self, line: u64) -> Result<(), String> {
        let e = self.dir.get(line).copied().unwrap_or_default();
        let mut holders = 0u128;
        let mut writers = 0;
        let mut forwarders = 0;
        for tile in 0..self.l2.len() {
            let l2_slot = self.l2[tile].find(line);
            let tile_state = l2_slot.map_or(0, |s| self.l2[tile].state(s));
            if let Some(s2) = l2_slot {
                if Some(self.l2[tile].word(s2) as usize) != self.dir.find(line) {
                    return Err(format!("line {line:#x}: tile {tile} L2 points to the wrong directory entry"));
                }
                holders |= bit(tile);
                match tile_state {
                    T_E | T_M => writers += 1,
                    T_F | T_O => forwarders += 1,
                    _ => {}
                }
                if tile_state == T_O && !self.moesif {
                    return Err(format!("line {line:#x}: tile {tile} in O under MESIF"));
                }
            }
            let mut l1_writers = 0;
            let mut l1_copies = 0;
            for local in 0..self.topo.cores_per_tile {
                let core = self.tile_core(tile, local);
                let Some(s1) = self.l1[core].find(line) else {
                    if let Some(s2) = l2_slot {
                        if self.l2[tile].aux(s2) & (1 << local) != 0 {
                            return Err(format!(
                                "line {line:#x}: tile {tile} presence bit set for core {core} without a copy"
                            ));
                        }
                    }
                    continue;
                };
                let Some(s2) = l2_slot else {
                    return Err(format!(
                        "line {line:#x}: core {core} holds it but its tile {tile} L2 does not (inclusion)"
                    ));
                };
                if self.l2[tile].aux(s2) & (1 << local) == 0 {
                    return Err(format!("line {line:#x}: core {core} holds it but the presence bit is clear"));
                }
                l1_copies += 1;
                let s = self.l1[core].state(s1);
                if s != L1_S {
                    l1_writers += 1;
                    if tile_state != T_E && tile_state != T_M {
                        return Err(format!(
                            "line {line:#x}: core {core} writable in L1D but tile {tile} in state {tile_state}"
                        ));
                    }
                }
                if s == L1_M && tile_state != T_M {
                    return Err(format!("line {line:#x}: core {core} dirty but tile {tile} not M"));
                }
            }
            if l1_writers > 0 && l1_copies > 1 {
                return Err(format!("line {line:#x}: tile {tile} has a writable L1D copy and {l1_copies} copies"));
            }
        }
        if holders != e.sharers {
            return Err(format!("line {line:#x}: directory sharers {:#x} but holders {holders:#x}", e.sharers));
        }
        match e.state {
            DirState::Uncached if holders != 0 => Err(format!("line {line:#x}: uncached in directory but held")),
            DirState::Owned if writers != 1 || holders.count_ones() != 1 || holders != bit(e.owner as usize) => {
                Err(format!("line {line:#x}: owned by {} but holders {holders:#x}, {writers} writers", e.owner))
            }
            DirState::Shared if writers != 0 => Err(format!("line {line:#x}: shared with {writers} E/M copies")),
            DirState::Shared if forwarders > 1 => Err(format!("line {line:#x}: {forwarders} F/O copies")),
            DirState::Shared if e.owner != NO_TILE && !self.is_forwarder(e.owner as usize, line) => {
                Err(format!("line {line:#x}: directory F/O holder {} not in F or O", e.owner))
            }
            DirState::Shared if e.owner == NO_TILE && forwarders != 0 => {
                Err(format!("line {line:#x}: directory has no F/O holder but a tile is F or O"))
            }
            DirState::Shared if holders == 0 => Err(format!("line {line:#x}: shared without holders")),
            _ => Ok(()),
        }
    }

    fn is_forwarder(&self, tile: usize, line: u64) -> bool {
        self.l2[tile].find(line).is_some_and(|s| matches!(self.l2[tile].state(s), T_F | T_O))
    }

    /// Checks every line known to the directory or present in any cache.
    pub fn check_all(&self) -> Result<(), String> {
        for line in self.dir.lines() {
            self.check_line(line)?;
        }
        for cache in self.l1.iter().chain(self.l2.iter()) {
            for (_, line) in cache.lines() {
                if self.dir.get(line).is_none() {
                    return Err(format!("line {line:#x} cached but unknown to the directory"));
                }
            }
        }
        Ok(())
    }

    /// Request/response balance of a slot: every request got exactly one response.
    pub fn balance_errors(&mut self, slot: usize) -> Vec<String> {
        self.stats.settle();
        let s = &self.stats.slots[slot];
        let m = |x: Msg| s.msgs(x);
        let mut errors = Vec::new();
        let mut expect = |what: &str, a: u64, b: u64| {
            if a != b {
                errors.push(format!("{what}: {a} != {b}"));
            }
        };
        expect(
            "gets+getm = data+data_cache+data_llc",
            m(Msg::GetS) + m(Msg::GetM),
            m(Msg::Data) + m(Msg::DataCache) + m(Msg::DataLlc),
        );
        expect("fwd_gets+fwd_getm = data_cache", m(Msg::FwdGetS) + m(Msg::FwdGetM), m(Msg::DataCache));
        expect("inv = inv_ack", m(Msg::Inv), m(Msg::InvAck));
        expect("upgrade = ack", m(Msg::Upgrade), m(Msg::Ack));
        expect("mem_rd = data", m(Msg::MemRd), m(Msg::Data));
        expect(
            "putm+wb+llc.writebacks = mem_wr+llc.dirty_fills",
            m(Msg::PutM) + m(Msg::Wb) + s.get(Ctr::LlcWritebacks),
            m(Msg::MemWr) + s.get(Ctr::LlcDirtyFills),
        );
        expect("llc.hits = data_llc", s.get(Ctr::LlcHits), m(Msg::DataLlc));
        expect("l2.writebacks = putm", s.get(Ctr::L2Writebacks), m(Msg::PutM));
        expect("l2.misses = gets+getm", s.get(Ctr::L2Misses), m(Msg::GetS) + m(Msg::GetM));
        expect("l2.upgrades = upgrade", s.get(Ctr::L2Upgrades), m(Msg::Upgrade));
        expect("l2.evictions = putm+pute+puts", s.get(Ctr::L2Evictions), m(Msg::PutM) + m(Msg::PutE) + m(Msg::PutS));
        let dev_reads: u64 = s.dev_reads.iter().sum();
        let dev_writes: u64 = s.dev_writes.iter().sum();
        expect("device reads = mem_rd", dev_reads, m(Msg::MemRd));
        expect("device writes = mem_wr", dev_writes, m(Msg::MemWr));
        expect(
            "l1d misses = cold+capacity+coherence",
            s.get(Ctr::L1dMisses),
            s.get(Ctr::L1dMissCold) + s.get(Ctr::L1dMissCapacity) + s.get(Ctr::L1dMissCoherence),
        );
        expect(
            "l2 misses = cold+capacity+coherence",
            s.get(Ctr::L2Misses),
            s.get(Ctr::L2MissCold) + s.get(Ctr::L2MissCapacity) + s.get(Ctr::L2MissCoherence),
        );
        errors
    }
}
