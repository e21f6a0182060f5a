//! NVMain trace output (`nvmain_trace=<path>`, `nvmain_device=<dram|mcdram|pcm|storage|all>`).
//!
//! While a region of interest is open, every line the model reads from a memory device
//! (`R`) or writes back to one (`W`) becomes one line of NVMain's trace format (version 0,
//! as NVMain's `traceReader/NVMainTrace` reads it):
//!
//! ```text
//! NVMV0
//! CYCLE OP ADDRESS DATA THREADID
//! ```
//!
//! - CYCLE (`nvmain_clock=instructions`, the default): guest instructions executed by all vCPUs
//!   while a region was open, counted from the first region's start (CPI 1: one cycle per
//!   instruction; NVMain reads the field as CPU cycles at its `CPUFreq`).
//!   `nvmain_clock=modelled`: nanoseconds of modelled time, the requesting vCPU's clock
//!   ("Modelled time") with the regions' phases laid end to end, each as long as its slowest
//!   vCPU (run NVMain with `CPUFreq=1000`). NVMain parses the field with `atoi`, so values
//!   above `MAX_CYCLE` are clamped (and counted).
//! - ADDRESS: hexadecimal byte address of the 64-byte line, rebased to the selected device
//!   (`trace_address`).
//! - DATA: 128 hexadecimal zeros, a placeholder (the model has no data values).
//! - THREADID: the model core whose access caused the request.
//!
//! NVMain skips the first line of a trace that does not start with `NVMV`, so the header is
//! always written.

use std::fs::File;
use std::io::{BufWriter, Write};

use crate::memory::{DeviceKind, MemoryMap};
use crate::params::LINE_BYTES;

/// NVMain reads the cycle with `atoi` into an `unsigned int`: the largest value it reads right.
pub const MAX_CYCLE: u64 = i32::MAX as u64;

/// The trace's header line: NVMain trace format version 0 (no old-data field).
pub const HEADER: &str = "NVMV0\n";

/// One 64-byte line of zero data, as 128 hexadecimal digits.
const ZERO_DATA: &str = "00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000";

/// What the trace's CYCLE field counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceClock {
    /// All vCPUs' guest instructions, one cycle each.
    Instructions,
    /// The requesting vCPU's modelled clock, in nanoseconds.
    Modelled,
}

impl TraceClock {
    pub fn parse(value: &str) -> Result<TraceClock, String> {
        match value {
            "instructions" => Ok(TraceClock::Instructions),
            "modelled" => Ok(TraceClock::Modelled),
            _ => Err(format!("bad value '{value}' for nvmain_clock: expected instructions or modelled")),
        }
    }
}

/// Which device's requests go into the trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Select {
    Device(DeviceKind),
    All,
}

impl Select {
    pub fn parse(value: &str) -> Result<Select, String> {
        match value {
            "all" => Ok(Select::All),
            _ => DeviceKind::parse(value).map(Select::Device).ok_or_else(|| {
                format!("bad value '{value}' for nvmain_device: expected dram, mcdram, pcm, storage or all")
            }),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Select::Device(kind) => kind.name(),
            Select::All => "all",
        }
    }
}

/// The trace address of `line`, or `None` when its device is not selected.
///
/// `all`: the guest-physical byte address. A device: the byte offset within that device's
/// `mem=` ranges taken in address order and laid end to end (one range: the offset from its
/// start), so the trace fits a memory of the device's size. DRAM outside every range (the
/// plugin's default for unlisted addresses) keeps its physical address.
pub fn trace_address(select: Select, map: &MemoryMap, line: u64) -> Option<u64> {
    let addr = line * LINE_BYTES;
    let kind = match select {
        Select::All => return Some(addr),
        Select::Device(kind) => kind,
    };
    let mut before = 0;
    for r in map.ranges() {
        if addr >= r.start && addr - r.start < r.size {
            return (r.kind == kind).then_some(before + addr - r.start);
        }
        if r.kind == kind {
            before += r.size;
        }
    }
    (kind == DeviceKind::Dram).then_some(addr)
}

/// Appends one trace line.
pub fn write_line(out: &mut impl Write, cycle: u64, write: bool, addr: u64, thread: usize) -> std::io::Result<()> {
    let op = if write { 'W' } else { 'R' };
    writeln!(out, "{cycle} {op} {addr:x} {ZERO_DATA} {thread}")
}

/// The trace being written: buffered, gated by the regions, timed by `timing`.
pub struct NvmainTrace<W: Write = BufWriter<File>> {
    out: W,
    pub select: Select,
    pub timing: TraceClock,
    /// Instructions executed by all vCPUs so far (the plugin sums its per-vCPU counters).
    clock: fn() -> u64,
    /// Modelled ns of the phases that ended while a region was open.
    phases_ns: f64,
    open: bool,
    /// Instructions at which the trace's cycle 0 lies, shifted by the time outside regions.
    offset: u64,
    /// The cycle reached when the last region closed.
    closed_at: u64,
    pub lines: u64,
    pub clamped: u64,
    pub error: Option<String>,
}

impl NvmainTrace {
    /// Creates `path` and writes the header.
    pub fn create(path: &str, select: Select, timing: TraceClock, clock: fn() -> u64) -> Result<NvmainTrace, String> {
        let file = File::create(path).map_err(|e| format!("cannot write nvmain_trace={path}: {e}"))?;
        NvmainTrace::new(BufWriter::with_capacity(1 << 20, file), select, timing, clock)
            .map_err(|e| format!("cannot write nvmain_trace={path}: {e}"))
    }
}

impl<W: Write> NvmainTrace<W> {
    pub fn new(mut out: W, select: Select, timing: TraceClock, clock: fn() -> u64) -> std::io::Result<NvmainTrace<W>> {
        out.write_all(HEADER.as_bytes())?;
        Ok(NvmainTrace {
            out,
            select,
            timing,
            clock,
            phases_ns: 0.0,
            open: false,
            offset: 0,
            closed_at: 0,
            lines: 0,
            clamped: 0,
            error: None,
        })
    }

    /// A phase of an open region ended after `modelled_ns` (its slowest vCPU's clock): the
    /// vCPUs' clocks restart at 0, so the next phase's requests are timed after it.
    pub fn phase_ended(&mut self, modelled_ns: f64) {
        if self.open {
            self.phases_ns += modelled_ns;
        }
    }

    /// Follows the regions: requests are written only while one is open; time outside regions
    /// does not advance the trace's cycle. Closing flushes the buffer.
    pub fn set_open(&mut self, open: bool) {
        if open == self.open {
            return;
        }
        let now = (self.clock)();
        if open {
            self.offset = now.saturating_sub(self.closed_at);
        } else {
            self.closed_at = now.saturating_sub(self.offset);
            self.flush();
        }
        self.open = open;
    }

    /// Records a request for `line` if a region is open and its device is selected;
    /// `modelled_ns` is the requesting vCPU's clock (read only by `TraceClock::Modelled`).
    #[inline]
    pub fn request(&mut self, map: &MemoryMap, line: u64, write: bool, thread: usize, modelled_ns: f64) {
        if !self.open || self.error.is_some() {
            return;
        }
        let Some(addr) = trace_address(self.select, map, line) else { return };
        let mut cycle = match self.timing {
            TraceClock::Instructions => (self.clock)().saturating_sub(self.offset),
            TraceClock::Modelled => (self.phases_ns + modelled_ns).max(0.0).round() as u64,
        };
        if cycle > MAX_CYCLE {
            cycle = MAX_CYCLE;
            self.clamped += 1;
        }
        match write_line(&mut self.out, cycle, write, addr, thread) {
            Ok(()) => self.lines += 1,
            Err(e) => self.error = Some(e.to_string()),
        }
    }

    pub fn flush(&mut self) {
        if let Err(e) = self.out.flush() {
            self.error.get_or_insert(e.to_string());
        }
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::MemRange;
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

    #[test]
    fn line_format_is_nvmains() {
        let mut out = Vec::new();
        write_line(&mut out, 1234, true, 0x1fc0, 3).unwrap();
        let text = String::from_utf8(out).unwrap();
        let fields: Vec<&str> = text.trim_end().split(' ').collect();
        assert_eq!(fields.len(), 5);
        assert_eq!((fields[0], fields[1], fields[2], fields[4]), ("1234", "W", "1fc0", "3"));
        assert_eq!(fields[3].len(), 128);
        assert!(fields[3].bytes().all(|b| b == b'0'));
        assert!(text.ends_with('\n'));
        let mut out = Vec::new();
        write_line(&mut out, 0, false, 0, 0).unwrap();
        assert!(String::from_utf8(out).unwrap().starts_with("0 R 0 0000"));
    }

    #[test]
    fn clock_parses() {
        assert_eq!(TraceClock::parse("modelled").unwrap(), TraceClock::Modelled);
        assert_eq!(TraceClock::parse("instructions").unwrap(), TraceClock::Instructions);
        assert!(TraceClock::parse("cycles").unwrap_err().contains("nvmain_clock"));
    }

    #[test]
    fn select_parses() {
        assert_eq!(Select::parse("pcm").unwrap(), Select::Device(DeviceKind::Pcm));
        assert_eq!(Select::parse("all").unwrap(), Select::All);
        assert!(Select::parse("flash").unwrap_err().contains("nvmain_device"));
    }

    #[test]
    fn addresses_are_rebased_to_the_device() {
        // DRAM 0..1 GiB, PCM 1 GiB..1.25 GiB and 2 GiB..2.25 GiB, MCDRAM 3 GiB..3.5 GiB.
        let map = MemoryMap::new(vec![
            MemRange::parse("dram:0:40000000").unwrap(),
            MemRange::parse("pcm:40000000:10000000").unwrap(),
            MemRange::parse("pcm:80000000:10000000").unwrap(),
            MemRange::parse("mcdram:c0000000:20000000").unwrap(),
        ])
        .unwrap();
        let pcm = Select::Device(DeviceKind::Pcm);
        let line = |addr: u64| addr / 64;
        // 0x4000_0040 is 0x40 into the first PCM range.
        assert_eq!(trace_address(pcm, &map, line(0x4000_0040)), Some(0x40));
        // 0x8000_0080 is 0x80 into the second, which follows the first's 0x1000_0000 bytes.
        assert_eq!(trace_address(pcm, &map, line(0x8000_0080)), Some(0x1000_0080));
        assert_eq!(trace_address(pcm, &map, line(0x100)), None);
        assert_eq!(trace_address(pcm, &map, line(0xc000_0000)), None);
        let mcdram = Select::Device(DeviceKind::Mcdram);
        assert_eq!(trace_address(mcdram, &map, line(0xc000_1000)), Some(0x1000));
        let dram = Select::Device(DeviceKind::Dram);
        assert_eq!(trace_address(dram, &map, line(0x1000)), Some(0x1000));
        assert_eq!(trace_address(dram, &map, line(0x4000_0040)), None);
        // Outside every range: DRAM by default, at its physical address.
        assert_eq!(trace_address(dram, &map, line(0x1_0000_0000)), Some(0x1_0000_0000));
        assert_eq!(trace_address(Select::All, &map, line(0x8000_0080)), Some(0x8000_0080));
    }

    static NOW: AtomicU64 = AtomicU64::new(0);
    fn now() -> u64 {
        NOW.load(Relaxed)
    }

    #[test]
    fn regions_gate_and_time_the_trace() {
        let map = MemoryMap::new(vec![MemRange::parse("pcm:40000000:40000000").unwrap()]).unwrap();
        let pcm_line = 0x4000_0000 / 64 + 2; // offset 0x80
        let dram_line = 5;
        NOW.store(1000, Relaxed);
        let mut t =
            NvmainTrace::new(Vec::new(), Select::Device(DeviceKind::Pcm), TraceClock::Instructions, now).unwrap();
        t.request(&map, pcm_line, true, 0, 0.0); // no region open: dropped
        t.set_open(true); // cycle 0 = instruction 1000
        NOW.store(1500, Relaxed);
        t.request(&map, pcm_line, false, 1, 9e9); // cycle 500 (the modelled clock is not read)
        t.request(&map, dram_line, true, 1, 0.0); // DRAM: not selected
        NOW.store(1700, Relaxed);
        t.set_open(false); // closed at cycle 700
        NOW.store(9000, Relaxed);
        t.request(&map, pcm_line, true, 2, 0.0); // closed: dropped
        t.set_open(true); // reopens at cycle 700
        NOW.store(9040, Relaxed);
        t.request(&map, pcm_line, true, 2, 0.0); // cycle 740
        NOW.store(9040 + MAX_CYCLE, Relaxed);
        t.request(&map, pcm_line, true, 3, 0.0); // cycle 740 + MAX_CYCLE: clamped
        assert_eq!((t.lines, t.clamped), (3, 1));
        assert_eq!(fields_but_data(t.into_inner()), ["NVMV0", "500 R 80 1", "740 W 80 2", "2147483647 W 80 3"]);
    }

    fn fields_but_data(out: Vec<u8>) -> Vec<String> {
        String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|l| l.split(' ').enumerate().filter(|(i, _)| *i != 3).map(|(_, f)| f).collect::<Vec<_>>().join(" "))
            .collect()
    }

    #[test]
    fn the_modelled_clock_lays_phases_end_to_end() {
        let map = MemoryMap::new(vec![MemRange::parse("pcm:40000000:40000000").unwrap()]).unwrap();
        let line = 0x4000_0000 / 64 + 1; // offset 0x40
        let mut t = NvmainTrace::new(Vec::new(), Select::Device(DeviceKind::Pcm), TraceClock::Modelled, now).unwrap();
        t.phase_ended(500.0); // before the region: not counted
        t.set_open(true);
        t.request(&map, line, false, 0, 120.4); // 120 ns
        t.request(&map, line, true, 1, 80.6); // another vCPU's clock, behind: 81 ns, as it is
        t.phase_ended(300.0); // the phase lasted 300 ns; the clocks restart at 0
        t.request(&map, line, false, 1, 10.0); // 310 ns
        t.set_open(false);
        t.phase_ended(1000.0); // closed: not counted
        t.set_open(true);
        t.request(&map, line, true, 0, 5.0); // 305 ns: time outside regions does not count
        t.request(&map, line, true, 0, MAX_CYCLE as f64); // clamped
        assert_eq!((t.lines, t.clamped), (5, 1));
        assert_eq!(
            fields_but_data(t.into_inner()),
            ["NVMV0", "120 R 40 0", "81 W 40 1", "310 R 40 1", "305 W 40 0", "2147483647 W 40 0"]
        );
    }
}
