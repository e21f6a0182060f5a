//! Region-of-interest markers (workloads/include/manylab_roi.h) and the regions they open.
//!   x86-64: nopl 0x4d4cOOAA(%rax,%rax,1) = 0f 1f 84 00 AA OO 4c 4d
//!   arm64:  movz xzr, #0xOOAA, lsl #48    = 0xd2e00000 | (0xOOAA << 5) | 31
//! OO: 1 begin, 2 end, 3 phase, 4 end of run, 5 span begin, 6 span end; AA: region, phase or
//! span number (0 for end of run). Spans are per vCPU (`spans.rs`); they open no region.
//! End of run is the guest's last word before it powers off: the plugin reports then, so what
//! the power-off costs (a host-timed wait for QEMU's main loop) is in no count.

use crate::memory::N_DEVICES;
use crate::stats::{Ctr, Stats, TOTAL};

/// Discriminants are the marker's OO byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum MarkerOp {
    Begin = 1,
    End = 2,
    Phase = 3,
    RunEnd = 4,
    SpanBegin = 5,
    SpanEnd = 6,
}

impl MarkerOp {
    pub fn from_code(code: u8) -> Option<MarkerOp> {
        [MarkerOp::Begin, MarkerOp::End, MarkerOp::Phase, MarkerOp::RunEnd, MarkerOp::SpanBegin, MarkerOp::SpanEnd]
            .into_iter()
            .find(|op| *op as u8 == code)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Marker {
    pub op: MarkerOp,
    pub arg: u8,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isa {
    X86_64,
    Arm64,
    Other,
}

impl Isa {
    pub fn from_target(name: &str) -> Isa {
        if name.starts_with("x86_64") {
            Isa::X86_64
        } else if name.starts_with("aarch64") {
            Isa::Arm64
        } else {
            Isa::Other
        }
    }
}

pub fn decode(isa: Isa, bytes: &[u8]) -> Option<Marker> {
    match isa {
        Isa::X86_64 => {
            if bytes.len() != 8 || bytes[..4] != [0x0f, 0x1f, 0x84, 0x00] || bytes[6..] != [0x4c, 0x4d] {
                return None;
            }
            Some(Marker { op: MarkerOp::from_code(bytes[5])?, arg: bytes[4] })
        }
        Isa::Arm64 => {
            let word = u32::from_le_bytes(bytes.try_into().ok()?);
            if word & 0xffe0_001f != 0xd2e0_001f {
                return None;
            }
            let imm = (word >> 5) & 0xffff;
            Some(Marker { op: MarkerOp::from_code((imm >> 8) as u8)?, arg: imm as u8 })
        }
        Isa::Other => None,
    }
}

/// Counts kept outside the model (per-vCPU counters), sampled when a region opens or closes.
#[derive(Clone, Default, Debug)]
pub struct Sample {
    pub insts: u64,
    pub loads: u64,
    pub stores: u64,
    pub func_insts: Vec<u64>,
    /// Instructions per vCPU (their sum is `insts`).
    pub vcpu_insts: Vec<u64>,
    /// Dirty (M) lines per memory device in the model's caches (full mode; only filled for
    /// markers that can close a region, and at exit).
    pub dirty: [u64; N_DEVICES],
    /// Host seconds since the plugin started (not deterministic; for speed figures only).
    pub host_s: f64,
    /// CPU seconds (user + system, all threads) of the QEMU process so far (not
    /// deterministic; for speed figures only).
    pub host_cpu_s: f64,
}

/// Which regions and phases are open. Regions are machine-wide: any vCPU's marker opens or
/// closes them. A phase marker closes the previous phase of the innermost open region.
#[derive(Default)]
pub struct Regions {
    /// Open regions, innermost last: (region number, its slot, its open phase slot).
    open: Vec<(u8, usize, Option<usize>)>,
    /// Phase opened outside any region.
    loose_phase: Option<usize>,
    /// Sample taken when each slot opened (indexed by slot).
    opened_at: Vec<Option<Sample>>,
    /// Loads and stores come from the sample too (count mode); in full mode the model
    /// counts them per slot itself.
    pub sample_accesses: bool,
    pub markers_seen: u64,
}

pub fn region_name(n: u8) -> String {
    if n == 0 {
        "roi".into()
    } else {
        format!("region{n}")
    }
}

impl Regions {
    pub fn new(sample_accesses: bool) -> Regions {
        Regions { sample_accesses, ..Default::default() }
    }

    pub fn any_open(&self) -> bool {
        !self.open.is_empty() || self.loose_phase.is_some()
    }

    /// Applies a marker; `sample` reads the current outside-the-model counts.
    pub fn apply(&mut self, stats: &mut Stats, marker: Marker, sample: &dyn Fn() -> Sample) {
        self.markers_seen += 1;
        match marker.op {
            MarkerOp::Begin => {
                if self.open.iter().any(|o| o.0 == marker.arg) {
                    return;
                }
                let slot = stats.slot_named(&region_name(marker.arg));
                self.activate(stats, slot, sample);
                self.open.push((marker.arg, slot, None));
            }
            MarkerOp::End => {
                let Some(i) = self.open.iter().position(|o| o.0 == marker.arg) else {
                    return;
                };
                let (_, slot, phase) = self.open.remove(i);
                if let Some(p) = phase {
                    self.deactivate(stats, p, sample);
                }
                self.deactivate(stats, slot, sample);
            }
            MarkerOp::Phase => {
                let (parent, previous) = match self.open.last_mut() {
                    Some((n, _, phase)) => (format!("{}.", region_name(*n)), phase.take()),
                    None => (String::new(), self.loose_phase.take()),
                };
                if let Some(p) = previous {
                    self.deactivate(stats, p, sample);
                }
                let slot = stats.slot_named(&format!("{parent}phase{}", marker.arg));
                self.activate(stats, slot, sample);
                match self.open.last_mut() {
                    Some(open) => open.2 = Some(slot),
                    None => self.loose_phase = Some(slot),
                }
            }
            // The plugin reports at the run's end (`finish`) and times spans in the model
            // (`spans.rs`): neither opens or closes a slot.
            MarkerOp::RunEnd | MarkerOp::SpanBegin | MarkerOp::SpanEnd => {}
        }
    }

    fn activate(&mut self, stats: &mut Stats, slot: usize, sample: &dyn Fn() -> Sample) {
        stats.settle();
        if self.opened_at.len() <= slot {
            self.opened_at.resize(slot + 1, None);
        }
        self.opened_at[slot] = Some(sample());
        stats.slots[slot].entered += 1;
        if !stats.active.contains(&slot) {
            stats.active.push(slot);
        }
    }

    fn deactivate(&mut self, stats: &mut Stats, slot: usize, sample: &dyn Fn() -> Sample) {
        stats.settle();
        stats.active.retain(|&s| s != slot);
        let Some(start) = self.opened_at.get_mut(slot).and_then(Option::take) else {
            return;
        };
        let now = sample();
        let s = &mut stats.slots[slot];
        s.ctr[Ctr::Insts as usize] += now.insts - start.insts;
        s.host_wall_s += now.host_s - start.host_s;
        s.host_cpu_s += now.host_cpu_s - start.host_cpu_s;
        if self.sample_accesses {
            s.ctr[Ctr::Loads as usize] += now.loads - start.loads;
            s.ctr[Ctr::Stores as usize] += now.stores - start.stores;
        }
        for (i, (a, b)) in now.func_insts.iter().zip(start.func_insts.iter()).enumerate() {
            s.func_insts[i] += a - b;
        }
        if s.vcpu_insts.len() < now.vcpu_insts.len() {
            s.vcpu_insts.resize(now.vcpu_insts.len(), 0);
        }
        for (v, &n) in now.vcpu_insts.iter().enumerate() {
            s.vcpu_insts[v] += n - start.vcpu_insts.get(v).copied().unwrap_or(0);
        }
        s.dirty_at_end = now.dirty;
    }

    /// At exit: closes whatever is still open and fills the "total" slot.
    pub fn finish(&mut self, stats: &mut Stats, sample: &dyn Fn() -> Sample) {
        while let Some((n, _, _)) = self.open.last().copied() {
            self.apply(stats, Marker { op: MarkerOp::End, arg: n }, sample);
        }
        if let Some(p) = self.loose_phase.take() {
            self.deactivate(stats, p, sample);
        }
        stats.settle();
        let now = sample();
        let total = &mut stats.slots[TOTAL];
        total.ctr[Ctr::Insts as usize] = now.insts;
        if self.sample_accesses {
            total.ctr[Ctr::Loads as usize] = now.loads;
            total.ctr[Ctr::Stores as usize] = now.stores;
        }
        total.entered = 1;
        total.host_wall_s = now.host_s;
        total.host_cpu_s = now.host_cpu_s;
        for (i, n) in now.func_insts.iter().enumerate() {
            total.func_insts[i] = *n;
        }
        total.vcpu_insts = now.vcpu_insts.clone();
        total.dirty_at_end = now.dirty;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn header_encodings_decode() {
        let x86 = [0x0f, 0x1f, 0x84, 0x00, 0x05, 0x01, 0x4c, 0x4d];
        assert_eq!(decode(Isa::X86_64, &x86), Some(Marker { op: MarkerOp::Begin, arg: 5 }));
        let wrong_magic = [0x0f, 0x1f, 0x84, 0x00, 0x4b, 0x47, 0x41, 0x4d];
        assert_eq!(decode(Isa::X86_64, &wrong_magic), None);
        let word: u32 = 0xd2e0_0000 | (0x0207 << 5) | 31;
        assert_eq!(decode(Isa::Arm64, &word.to_le_bytes()), Some(Marker { op: MarkerOp::End, arg: 7 }));
        let run_end = [0x0f, 0x1f, 0x84, 0x00, 0x00, 0x04, 0x4c, 0x4d];
        assert_eq!(decode(Isa::X86_64, &run_end), Some(Marker { op: MarkerOp::RunEnd, arg: 0 }));
        let span_end = [0x0f, 0x1f, 0x84, 0x00, 0x03, 0x06, 0x4c, 0x4d];
        assert_eq!(decode(Isa::X86_64, &span_end), Some(Marker { op: MarkerOp::SpanEnd, arg: 3 }));
        let unknown_op = [0x0f, 0x1f, 0x84, 0x00, 0x00, 0x07, 0x4c, 0x4d];
        assert_eq!(decode(Isa::X86_64, &unknown_op), None);
        let movz_x0: u32 = 0xd2e0_0000 | (0x0207 << 5);
        assert_eq!(decode(Isa::Arm64, &movz_x0.to_le_bytes()), None);
        assert_eq!(Isa::from_target("x86_64"), Isa::X86_64);
    }

    #[test]
    fn regions_and_phases_take_instruction_deltas() {
        let mut stats = Stats::new(0);
        let mut regions = Regions::new(true);
        let insts = Cell::new(100u64);
        let sample = || Sample { insts: insts.get(), loads: insts.get() / 2, ..Default::default() };
        regions.apply(&mut stats, Marker { op: MarkerOp::Begin, arg: 0 }, &sample);
        insts.set(150);
        regions.apply(&mut stats, Marker { op: MarkerOp::Phase, arg: 1 }, &sample);
        insts.set(170);
        regions.apply(&mut stats, Marker { op: MarkerOp::Phase, arg: 2 }, &sample);
        assert_eq!(stats.active.len(), 3);
        insts.set(200);
        regions.apply(&mut stats, Marker { op: MarkerOp::End, arg: 0 }, &sample);
        insts.set(1000);
        regions.finish(&mut stats, &sample);
        let by_name = |n: &str| stats.slots.iter().find(|s| s.name == n).unwrap().get(Ctr::Insts);
        assert_eq!(by_name("roi"), 100);
        assert_eq!(by_name("roi.phase1"), 20);
        assert_eq!(by_name("roi.phase2"), 30);
        assert_eq!(by_name("total"), 1000);
        assert_eq!(stats.active, vec![TOTAL]);
    }
}
