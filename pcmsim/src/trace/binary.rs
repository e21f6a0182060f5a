//! The `.mlpt` binary trace format, version 1. All integers little-endian.
//!
//! Header, 32 bytes:
//!
//! | offset | size | field        | meaning                                                   |
//! |-------:|-----:|--------------|-----------------------------------------------------------|
//! | 0      | 8    | magic        | ASCII `MLPAGETR`                                          |
//! | 8      | 2    | version      | 1                                                         |
//! | 10     | 2    | header_bytes | 32 (readers skip any extra header bytes)                  |
//! | 12     | 2    | record_bytes | 40 (readers skip any extra bytes at the end of a record)  |
//! | 14     | 2    | flags        | bit 0: times are ns since start; bit 1: all ids physical; |
//! |        |      |              | bit 2: oom_adj fields hold Linux oom_score_adj            |
//! | 16     | 4    | page_bytes   | page size, e.g. 4096                                      |
//! | 20     | 4    | reserved     | 0                                                         |
//! | 24     | 8    | records      | record count, 0 if unknown (streamed writer)              |
//!
//! Record, 40 bytes:
//!
//! | offset | size | field    | meaning                                                      |
//! |-------:|-----:|----------|--------------------------------------------------------------|
//! | 0      | 8    | time     | u64, ns since trace start or sequence number                 |
//! | 8      | 8    | ino      | u64 inode number; 0 with dev 0 = physical frame              |
//! | 16     | 8    | index    | u64 page index in the file, or the page frame number         |
//! | 24     | 4    | dev      | u32 device number (Linux `new_encode_dev` encoding)          |
//! | 28     | 4    | pid      | u32 process id                                               |
//! | 32     | 2    | oom_adj  | i16 Android oom_adj (flag bit 2: oom_score_adj), -32768 = not recorded |
//! | 34     | 1    | state    | u8 0 foreground, 1 visible, 2 service, 3 background, 4 empty |
//! | 35     | 1    | op       | u8 0 read, 1 write                                           |
//! | 36     | 4    | reserved | 0                                                            |

use super::{TraceError, TraceInfo};
use crate::request::{PageId, ProcState, Record};
use std::io::{Read, Seek, SeekFrom, Write};

pub const MAGIC: [u8; 8] = *b"MLPAGETR";
pub const VERSION: u16 = 1;
pub const HEADER_BYTES: usize = 32;
pub const RECORD_BYTES: usize = 40;
pub const FLAG_TIME_NS: u16 = 1;
pub const FLAG_PHYSICAL: u16 = 2;
pub const FLAG_OOM_SCORE_ADJ: u16 = 4;

pub fn encode_header(info: &TraceInfo) -> [u8; HEADER_BYTES] {
    let mut h = [0u8; HEADER_BYTES];
    h[0..8].copy_from_slice(&MAGIC);
    h[8..10].copy_from_slice(&VERSION.to_le_bytes());
    h[10..12].copy_from_slice(&(HEADER_BYTES as u16).to_le_bytes());
    h[12..14].copy_from_slice(&(RECORD_BYTES as u16).to_le_bytes());
    let flags = if info.time_ns { FLAG_TIME_NS } else { 0 }
        | if info.physical { FLAG_PHYSICAL } else { 0 }
        | if info.oom_score_adj { FLAG_OOM_SCORE_ADJ } else { 0 };
    h[14..16].copy_from_slice(&flags.to_le_bytes());
    h[16..20].copy_from_slice(&info.page_bytes.to_le_bytes());
    h[24..32].copy_from_slice(&info.records.unwrap_or(0).to_le_bytes());
    h
}

pub fn encode_record(r: &Record) -> [u8; RECORD_BYTES] {
    let mut b = [0u8; RECORD_BYTES];
    b[0..8].copy_from_slice(&r.time.to_le_bytes());
    b[8..16].copy_from_slice(&r.page.ino.to_le_bytes());
    b[16..24].copy_from_slice(&r.page.index.to_le_bytes());
    b[24..28].copy_from_slice(&r.page.dev.to_le_bytes());
    b[28..32].copy_from_slice(&r.pid.to_le_bytes());
    b[32..34].copy_from_slice(&r.oom_adj.to_le_bytes());
    b[34] = r.state as u8;
    b[35] = u8::from(r.write);
    b
}

#[inline]
fn u16_at(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes([b[o], b[o + 1]])
}
#[inline]
fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().expect("4 bytes"))
}
#[inline]
fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"))
}

/// Decode one record; `n` is its 1-based number for errors.
#[inline]
pub fn decode_record(b: &[u8], n: u64) -> Result<Record, TraceError> {
    // One length check up front; the field reads below are then at constant offsets.
    let b: &[u8; RECORD_BYTES] = b[..RECORD_BYTES].try_into().expect("a whole record");
    let state = match ProcState::from_code(b[34]) {
        Some(s) => s,
        None => return Err(TraceError::at_record(n, format!("invalid state code {} (0..4)", b[34]))),
    };
    let write = match b[35] {
        0 => false,
        1 => true,
        x => return Err(TraceError::at_record(n, format!("invalid op code {x} (0 read, 1 write)"))),
    };
    Ok(Record {
        time: u64_at(b, 0),
        page: PageId { ino: u64_at(b, 8), index: u64_at(b, 16), dev: u32_at(b, 24) },
        pid: u32_at(b, 28),
        oom_adj: u16_at(b, 32) as i16,
        state,
        write,
    })
}

/// Records read per `read` call by [`Reader::read_all`].
pub const CHUNK_RECORDS: usize = 4096;

/// Read into `buf` until it is full or the input ends: the bytes read and the error that
/// stopped it early, if any.
fn fill(r: &mut impl Read, buf: &mut [u8]) -> (usize, Option<std::io::Error>) {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return (got, Some(e)),
        }
    }
    (got, None)
}

pub struct Reader<R: Read> {
    r: R,
    info: TraceInfo,
    record_bytes: usize,
    buf: Vec<u8>,
    n: u64,
    done: bool,
}

impl<R: Read> Reader<R> {
    pub fn new(mut r: R) -> Result<Reader<R>, TraceError> {
        let mut h = [0u8; HEADER_BYTES];
        r.read_exact(&mut h).map_err(|_| TraceError::new("header: truncated (need 32 bytes)"))?;
        if h[0..8] != MAGIC {
            return Err(TraceError::new("header: bad magic (not an .mlpt trace)"));
        }
        let version = u16_at(&h, 8);
        if version != VERSION {
            return Err(TraceError::new(format!(
                "header: unsupported version {version} (this reader: {VERSION})"
            )));
        }
        let header_bytes = u16_at(&h, 10) as usize;
        let record_bytes = u16_at(&h, 12) as usize;
        if header_bytes < HEADER_BYTES || record_bytes < RECORD_BYTES {
            return Err(TraceError::new(format!(
                "header: header_bytes {header_bytes} / record_bytes {record_bytes} below 32 / 40"
            )));
        }
        let flags = u16_at(&h, 14);
        if flags & !(FLAG_TIME_NS | FLAG_PHYSICAL | FLAG_OOM_SCORE_ADJ) != 0 {
            return Err(TraceError::new(format!("header: unknown flags 0x{flags:04x}")));
        }
        let mut skip = vec![0u8; header_bytes - HEADER_BYTES];
        r.read_exact(&mut skip).map_err(|_| TraceError::new("header: truncated"))?;
        let count = u64_at(&h, 24);
        let info = TraceInfo {
            time_ns: flags & FLAG_TIME_NS != 0,
            physical: flags & FLAG_PHYSICAL != 0,
            page_bytes: u32_at(&h, 16),
            records: if count == 0 { None } else { Some(count) },
            oom_score_adj: flags & FLAG_OOM_SCORE_ADJ != 0,
        };
        Ok(Reader { r, info, record_bytes, buf: vec![0; record_bytes], n: 0, done: false })
    }

    pub fn info(&self) -> TraceInfo {
        self.info
    }

    /// Bulk read: `CHUNK_RECORDS` records per `read` call into one buffer, each decoded in
    /// place and handed to `f`. The same records, checks and error texts as the iterator, but
    /// stops at the first error (of the trace or of `f`). Give it the file itself, not a
    /// `BufReader`: the chunk is the buffer.
    pub fn read_all(&mut self, mut f: impl FnMut(&Record) -> Result<(), String>) -> Result<(), String> {
        let rb = self.record_bytes;
        let mut buf = vec![0u8; CHUNK_RECORDS * rb];
        while !self.done {
            let (got, err) = fill(&mut self.r, &mut buf);
            let whole = got / rb;
            for b in buf[..whole * rb].chunks_exact(rb) {
                self.n += 1;
                f(&decode_record(b, self.n).map_err(|e| e.to_string())?)?;
            }
            let n = self.n + 1;
            if let Some(e) = err {
                self.done = true;
                return Err(TraceError::at_record(n, format!("read error: {e}")).to_string());
            }
            if got < buf.len() {
                self.done = true;
                let rest = got - whole * rb;
                if rest > 0 {
                    let msg = format!("truncated record ({rest} of {rb} bytes)");
                    return Err(TraceError::at_record(n, msg).to_string());
                }
                if let Some(c) = self.info.records {
                    if c != self.n {
                        return Err(format!("header says {c} records, file has {}", self.n));
                    }
                }
            }
        }
        Ok(())
    }
}

impl<R: Read> Iterator for Reader<R> {
    type Item = Result<Record, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let n = self.n + 1;
        let mut got = 0;
        while got < self.record_bytes {
            match self.r.read(&mut self.buf[got..]) {
                Ok(0) => break,
                Ok(k) => got += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.done = true;
                    return Some(Err(TraceError::at_record(n, format!("read error: {e}"))));
                }
            }
        }
        if got == 0 {
            self.done = true;
            if let Some(c) = self.info.records {
                if c != self.n {
                    return Some(Err(TraceError::new(format!(
                        "header says {c} records, file has {}",
                        self.n
                    ))));
                }
            }
            return None;
        }
        if got < self.record_bytes {
            self.done = true;
            return Some(Err(TraceError::at_record(
                n,
                format!("truncated record ({got} of {} bytes)", self.record_bytes),
            )));
        }
        self.n = n;
        Some(decode_record(&self.buf, n))
    }
}

/// Streaming writer. `finish` patches the record count into the header when the sink can seek.
pub struct Writer<W: Write> {
    w: W,
    n: u64,
}

impl<W: Write> Writer<W> {
    pub fn new(mut w: W, info: &TraceInfo) -> std::io::Result<Writer<W>> {
        let info = TraceInfo { records: None, ..*info };
        w.write_all(&encode_header(&info))?;
        Ok(Writer { w, n: 0 })
    }

    pub fn write(&mut self, r: &Record) -> std::io::Result<()> {
        self.n += 1;
        self.w.write_all(&encode_record(r))
    }

    pub fn count(&self) -> u64 {
        self.n
    }

    /// Flush without patching the count (for non-seekable sinks).
    pub fn finish_stream(mut self) -> std::io::Result<W> {
        self.w.flush()?;
        Ok(self.w)
    }
}

impl<W: Write + Seek> Writer<W> {
    pub fn finish(mut self) -> std::io::Result<W> {
        self.w.flush()?;
        self.w.seek(SeekFrom::Start(24))?;
        self.w.write_all(&self.n.to_le_bytes())?;
        self.w.seek(SeekFrom::End(0))?;
        self.w.flush()?;
        Ok(self.w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::OOM_ADJ_UNKNOWN;
    use std::io::Cursor;

    fn rec(i: u64) -> Record {
        Record {
            time: i * 10,
            page: PageId { dev: 0x801, ino: 12 + i, index: i * 3 },
            pid: 100 + i as u32,
            state: ProcState::ALL[(i % 5) as usize],
            oom_adj: if i == 0 { OOM_ADJ_UNKNOWN } else { i as i16 },
            write: i % 2 == 1,
        }
    }

    #[test]
    fn round_trip_and_layout() {
        let info = TraceInfo { time_ns: true, ..TraceInfo::default() };
        let mut w = Writer::new(Cursor::new(Vec::new()), &info).unwrap();
        for i in 0..5 {
            w.write(&rec(i)).unwrap();
        }
        let bytes = w.finish().unwrap().into_inner();
        assert_eq!(bytes.len(), 32 + 5 * 40);
        assert_eq!(&bytes[0..8], b"MLPAGETR");
        assert_eq!(bytes[14], 1); // flags: time_ns
        assert_eq!(u64_at(&bytes, 24), 5);
        // record 2 (i = 1) starts at 72: time 10, ino 13, index 3, dev 0x801, pid 101,
        // oom_adj 1, state 1 (visible), op 1 (write).
        let r = &bytes[72..112];
        assert_eq!(u64_at(r, 0), 10);
        assert_eq!(u64_at(r, 8), 13);
        assert_eq!(u64_at(r, 16), 3);
        assert_eq!(u32_at(r, 24), 0x801);
        assert_eq!(u32_at(r, 28), 101);
        assert_eq!((r[32], r[33], r[34], r[35]), (1, 0, 1, 1));
        let rd = Reader::new(Cursor::new(bytes)).unwrap();
        assert!(rd.info().time_ns);
        let back: Vec<Record> = rd.map(|r| r.unwrap()).collect();
        assert_eq!(back, (0..5).map(rec).collect::<Vec<_>>());
    }

    #[test]
    fn errors_name_the_record() {
        let mut w = Writer::new(Cursor::new(Vec::new()), &TraceInfo::default()).unwrap();
        for i in 0..3 {
            w.write(&rec(i)).unwrap();
        }
        let mut bytes = w.finish_stream().unwrap().into_inner();
        bytes[32 + 40 + 34] = 9; // record 2: bad state
        bytes.truncate(bytes.len() - 5); // record 3 truncated
        let errs: Vec<String> =
            Reader::new(Cursor::new(bytes)).unwrap().filter_map(|r| r.err().map(|e| e.to_string())).collect();
        assert_eq!(
            errs,
            vec![
                "record 2: invalid state code 9 (0..4)".to_string(),
                "record 3: truncated record (35 of 40 bytes)".to_string(),
            ]
        );
        assert!(Reader::new(Cursor::new(b"NOTATRACE-------------------------------".to_vec())).is_err());
    }

    #[test]
    fn oom_score_adj_flag() {
        let info = TraceInfo { oom_score_adj: true, ..TraceInfo::default() };
        let mut w = Writer::new(Cursor::new(Vec::new()), &info).unwrap();
        w.write(&Record { oom_adj: -900, ..rec(1) }).unwrap();
        let bytes = w.finish().unwrap().into_inner();
        assert_eq!(bytes[14], 4); // flags: bit 2 only
        assert_eq!(&bytes[32 + 32..32 + 34], &(-900i16).to_le_bytes());
        let rd = Reader::new(Cursor::new(bytes.clone())).unwrap();
        assert!(rd.info().oom_score_adj && !rd.info().time_ns);
        let mut bad = bytes;
        bad[14] = 8;
        let e = Reader::new(Cursor::new(bad)).err().unwrap();
        assert_eq!(e.to_string(), "header: unknown flags 0x0008");
    }
}
