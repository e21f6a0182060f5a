//! Trace formats and streaming readers/writers.
//!
//! * `binary`: the compact `.mlpt` format (magic + version header, little-endian 40-byte records);
//! * `csv`: a header-named CSV import/export;
//! * `intern`: turns captured page ids into the simulator's `u64` keys.
//!
//! Readers are iterators of `Result<Record, TraceError>` and hold one buffer, never the trace.

pub mod binary;
pub mod csv;
pub mod intern;

use crate::request::Record;
use std::fmt;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

/// An error while reading a trace, with the 1-based record number (and CSV line) if known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceError {
    pub record: Option<u64>,
    pub line: Option<u64>,
    pub msg: String,
}

impl TraceError {
    pub fn new(msg: impl Into<String>) -> TraceError {
        TraceError { record: None, line: None, msg: msg.into() }
    }

    pub fn at_record(record: u64, msg: impl Into<String>) -> TraceError {
        TraceError { record: Some(record), line: None, msg: msg.into() }
    }
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.record) {
            (Some(l), Some(r)) => write!(f, "line {l} (record {r}): {}", self.msg),
            (Some(l), None) => write!(f, "line {l}: {}", self.msg),
            (None, Some(r)) => write!(f, "record {r}: {}", self.msg),
            (None, None) => f.write_str(&self.msg),
        }
    }
}

impl std::error::Error for TraceError {}

/// What a trace says about itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceInfo {
    /// Time fields are nanoseconds since trace start (else sequence numbers).
    pub time_ns: bool,
    /// Every page id is a physical frame number.
    pub physical: bool,
    pub page_bytes: u32,
    /// Record count from the header, if the writer knew it.
    pub records: Option<u64>,
    /// The records' oom field holds Linux `oom_score_adj` (-1000..1000), as a Linux guest
    /// records it, instead of Android's pre-Lollipop `oom_adj` (-17..15).
    pub oom_score_adj: bool,
}

impl Default for TraceInfo {
    fn default() -> Self {
        TraceInfo { time_ns: false, physical: false, page_bytes: 4096, records: None, oom_score_adj: false }
    }
}

pub type RecordIter = Box<dyn Iterator<Item = Result<Record, TraceError>>>;

/// Open a trace file, binary or CSV, chosen by its first bytes (the binary magic).
pub fn open(path: &Path) -> Result<(TraceInfo, RecordIter), TraceError> {
    let mut f =
        File::open(path).map_err(|e| TraceError::new(format!("cannot open {}: {e}", path.display())))?;
    let mut head = [0u8; 8];
    let n = read_up_to(&mut f, &mut head)
        .map_err(|e| TraceError::new(format!("cannot read {}: {e}", path.display())))?;
    let f = File::open(path).map_err(|e| TraceError::new(format!("cannot open {}: {e}", path.display())))?;
    let r = BufReader::with_capacity(1 << 20, f);
    if n == 8 && head == binary::MAGIC {
        let rd = binary::Reader::new(r)?;
        Ok((rd.info(), Box::new(rd)))
    } else {
        let rd = csv::Reader::new(r)?;
        Ok((rd.info(), Box::new(rd)))
    }
}

/// Stream a trace file's records to `f`, stopping at the first error (of the trace or of
/// `f`). Binary traces are decoded in bulk ([`binary::Reader::read_all`]); CSV goes through
/// its iterator. Errors read like the iterators' (`record 17: ...`).
pub fn for_each_record(
    path: &Path,
    mut f: impl FnMut(&Record) -> Result<(), String>,
) -> Result<TraceInfo, String> {
    let mut file = File::open(path)
        .map_err(|e| TraceError::new(format!("cannot open {}: {e}", path.display())).to_string())?;
    let mut head = [0u8; 8];
    let n = read_up_to(&mut file, &mut head)
        .map_err(|e| TraceError::new(format!("cannot read {}: {e}", path.display())).to_string())?;
    if n == 8 && head == binary::MAGIC {
        let file = File::open(path)
            .map_err(|e| TraceError::new(format!("cannot open {}: {e}", path.display())).to_string())?;
        let mut rd = binary::Reader::new(file).map_err(|e| e.to_string())?;
        rd.read_all(f)?;
        return Ok(rd.info());
    }
    let (info, it) = open(path).map_err(|e| e.to_string())?;
    for r in it {
        f(&r.map_err(|e| e.to_string())?)?;
    }
    Ok(info)
}

fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}
