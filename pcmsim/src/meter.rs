//! Event counting. Policies report what they do (hits, fills, evictions, migrations, the
//! request's own access); the meter counts page-granular device operations per request class
//! (foreground / other) and PCM writes per PCM frame. Time and energy are linear in these
//! counts and are computed afterwards by `model`.

/// The two memory devices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dev {
    Dram = 0,
    Pcm = 1,
}

/// Page-granular operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    DramRead = 0,
    DramWrite = 1,
    PcmRead = 2,
    PcmWrite = 3,
    StorageRead = 4,
    StorageWrite = 5,
}

pub const N_OPS: usize = 6;
pub const OP_NAMES: [&str; N_OPS] =
    ["dram_read", "dram_write", "pcm_read", "pcm_write", "storage_read", "storage_write"];

/// Request class index: 0 = foreground, 1 = every other state.
pub const FG: usize = 0;
pub const OTHER: usize = 1;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClassCounts {
    pub requests: u64,
    pub hits: u64,
    pub dram_hits: u64,
    pub pcm_hits: u64,
    /// Requests whose page sits in DRAM once the request is served.
    pub on_dram: u64,
    pub ops: [u64; N_OPS],
    /// Pages moved PCM -> DRAM.
    pub to_dram: u64,
    /// Pages moved DRAM -> PCM.
    pub to_pcm: u64,
    /// Pages dropped from memory to storage.
    pub evictions: u64,
    /// Of those, dirty ones written back.
    pub writebacks: u64,
    /// Of those, pages whose last request was a foreground one.
    pub fg_victims: u64,
}

pub struct Meter {
    pub class: [ClassCounts; 2],
    /// Writes per PCM frame (index = frame - first PCM frame).
    pub pcm_wear: Vec<u64>,
    first_pcm: u32,
    cur: usize,
}

impl Meter {
    pub fn new(dram_frames: usize, pcm_frames: usize) -> Meter {
        Meter {
            class: [ClassCounts::default(), ClassCounts::default()],
            pcm_wear: crate::mem::filled(pcm_frames, 0),
            first_pcm: dram_frames as u32,
            cur: FG,
        }
    }

    /// Start a request; everything until the next `begin` is charged to its class.
    #[inline]
    pub fn begin(&mut self, foreground: bool) {
        self.cur = if foreground { FG } else { OTHER };
        self.class[self.cur].requests += 1;
    }

    #[inline]
    fn op(&mut self, op: Op) {
        self.class[self.cur].ops[op as usize] += 1;
    }

    #[inline]
    pub fn read(&mut self, dev: Dev) {
        self.op(if dev == Dev::Dram { Op::DramRead } else { Op::PcmRead });
    }

    /// A page write into `frame` (a global frame number; PCM frames follow DRAM frames).
    #[inline]
    pub fn write(&mut self, dev: Dev, frame: u32) {
        if dev == Dev::Dram {
            self.op(Op::DramWrite);
        } else {
            self.op(Op::PcmWrite);
            self.pcm_wear[(frame - self.first_pcm) as usize] += 1;
        }
    }

    /// Hint the CPU to fetch the wear counter of `frame` (if it is a PCM frame).
    #[inline]
    pub fn prefetch_wear(&self, frame: u32) {
        if frame >= self.first_pcm {
            crate::pagemap::prefetch_ptr(
                self.pcm_wear.as_ptr().wrapping_add((frame - self.first_pcm) as usize),
            );
        }
    }

    /// The request's own access to its page, now in `frame`.
    #[inline]
    pub fn access(&mut self, dev: Dev, frame: u32, write: bool) {
        self.class[self.cur].on_dram += u64::from(dev == Dev::Dram);
        if write {
            self.write(dev, frame);
        } else {
            self.read(dev);
        }
    }

    #[inline]
    pub fn hit(&mut self, dev: Dev) {
        let c = &mut self.class[self.cur];
        c.hits += 1;
        if dev == Dev::Dram {
            c.dram_hits += 1;
        } else {
            c.pcm_hits += 1;
        }
    }

    /// A miss brings the page from storage into `frame`.
    #[inline]
    pub fn fill(&mut self, dev: Dev, frame: u32) {
        self.op(Op::StorageRead);
        self.write(dev, frame);
    }

    /// A page leaves memory from `dev`; a dirty one is read out and written to storage.
    /// `fg_page`: the page's last request was a foreground one.
    #[inline]
    pub fn evict(&mut self, dev: Dev, dirty: bool, fg_page: bool) {
        self.class[self.cur].evictions += 1;
        self.class[self.cur].fg_victims += u64::from(fg_page);
        if dirty {
            self.class[self.cur].writebacks += 1;
            self.read(dev);
            self.op(Op::StorageWrite);
        }
    }

    /// A page moves between devices: read of the source, write of the destination.
    #[inline]
    pub fn migrate(&mut self, from: Dev, to: Dev, to_frame: u32) {
        self.read(from);
        self.write(to, to_frame);
        if to == Dev::Dram {
            self.class[self.cur].to_dram += 1;
        } else {
            self.class[self.cur].to_pcm += 1;
        }
    }

    /// Sum of both classes.
    pub fn total(&self) -> ClassCounts {
        let (a, b) = (&self.class[FG], &self.class[OTHER]);
        let mut ops = [0; N_OPS];
        for (i, o) in ops.iter_mut().enumerate() {
            *o = a.ops[i] + b.ops[i];
        }
        ClassCounts {
            requests: a.requests + b.requests,
            hits: a.hits + b.hits,
            dram_hits: a.dram_hits + b.dram_hits,
            pcm_hits: a.pcm_hits + b.pcm_hits,
            on_dram: a.on_dram + b.on_dram,
            ops,
            to_dram: a.to_dram + b.to_dram,
            to_pcm: a.to_pcm + b.to_pcm,
            evictions: a.evictions + b.evictions,
            writebacks: a.writebacks + b.writebacks,
            fg_victims: a.fg_victims + b.fg_victims,
        }
    }
}
