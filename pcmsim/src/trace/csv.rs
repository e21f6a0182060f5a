//! CSV traces: one header row naming the columns (any order), then one record per row.
//! Lines starting with `#` and blank lines are ignored. Columns:
//!
//! | column  | required | values                                                          |
//! |---------|----------|-----------------------------------------------------------------|
//! | index   | yes      | page index in the file, or the page frame number                |
//! | op      | yes      | `R`/`W` (also `r`, `w`, `read`, `write`)                        |
//! | state   | one of   | `foreground`, `visible`, `service`, `background`, `empty`       |
//! | oom_adj | the two  | integer Android oom_adj (mapped when `state` is empty/absent)   |
//! | or oom_score_adj |  | integer Linux oom_score_adj (-1000..1000), mapped likewise      |
//! | time    | no       | u64; default = record number                                    |
//! | dev     | no       | u32 device number, default 0                                    |
//! | ino     | no       | u64 inode, default 0 (dev 0 + ino 0 = physical frame)           |
//! | pid     | no       | u32, default 0                                                  |
//!
//! A first comment line `# mlpt time_ns=1 page_bytes=4096` carries the header flags; the oom
//! column's name carries the scale (the binary header's `oom_score_adj` flag).

use super::{TraceError, TraceInfo};
use crate::request::{PageId, ProcState, Record, OOM_ADJ_UNKNOWN};
use std::io::{BufRead, Write};

/// The columns the writer writes (`oom_adj` is named `oom_score_adj` on that scale).
pub const COLUMNS: [&str; 8] = ["time", "dev", "ino", "index", "pid", "state", "oom_adj", "op"];
/// Every column a reader knows.
pub const KNOWN: [&str; 9] =
    ["time", "dev", "ino", "index", "pid", "state", "oom_adj", "oom_score_adj", "op"];

#[derive(Default, Clone, Copy)]
struct Cols {
    time: Option<usize>,
    dev: Option<usize>,
    ino: Option<usize>,
    index: Option<usize>,
    pid: Option<usize>,
    state: Option<usize>,
    oom_adj: Option<usize>,
    oom_score_adj: Option<usize>,
    op: Option<usize>,
}

pub struct Reader<R: BufRead> {
    r: R,
    info: TraceInfo,
    cols: Cols,
    ncols: usize,
    line: String,
    lineno: u64,
    n: u64,
    done: bool,
}

fn parse_meta(line: &str, info: &mut TraceInfo) {
    for kv in line.trim_start_matches('#').split_whitespace().skip(1) {
        match kv.split_once('=') {
            Some(("time_ns", v)) => info.time_ns = v == "1",
            Some(("physical", v)) => info.physical = v == "1",
            Some(("page_bytes", v)) => {
                if let Ok(p) = v.parse() {
                    info.page_bytes = p;
                }
            }
            _ => {}
        }
    }
}

impl<R: BufRead> Reader<R> {
    pub fn new(mut r: R) -> Result<Reader<R>, TraceError> {
        let mut info = TraceInfo::default();
        let mut line = String::new();
        let mut lineno = 0;
        loop {
            line.clear();
            lineno += 1;
            let k = r.read_line(&mut line).map_err(|e| TraceError {
                line: Some(lineno),
                record: None,
                msg: format!("read error: {e}"),
            })?;
            if k == 0 {
                return Err(TraceError::new("empty CSV trace: no header row"));
            }
            let t = line.trim();
            if t.starts_with("# mlpt") {
                parse_meta(t, &mut info);
            }
            if !t.is_empty() && !t.starts_with('#') {
                break;
            }
        }
        let herr = |msg: String| TraceError { line: Some(lineno), record: None, msg };
        let mut cols = Cols::default();
        let names: Vec<&str> = line.trim().split(',').map(|s| s.trim()).collect();
        for (i, name) in names.iter().enumerate() {
            let slot = match *name {
                "time" => &mut cols.time,
                "dev" => &mut cols.dev,
                "ino" => &mut cols.ino,
                "index" => &mut cols.index,
                "pid" => &mut cols.pid,
                "state" => &mut cols.state,
                "oom_adj" => &mut cols.oom_adj,
                "oom_score_adj" => &mut cols.oom_score_adj,
                "op" => &mut cols.op,
                other => return Err(herr(format!("unknown column '{other}' (known: {})", KNOWN.join(", ")))),
            };
            if slot.replace(i).is_some() {
                return Err(herr(format!("duplicate column '{name}'")));
            }
        }
        if cols.index.is_none() || cols.op.is_none() {
            return Err(herr("header must name the columns 'index' and 'op'".into()));
        }
        if cols.oom_adj.is_some() && cols.oom_score_adj.is_some() {
            return Err(herr("'oom_adj' and 'oom_score_adj' are two scales of one field: give one".into()));
        }
        if cols.state.is_none() && cols.oom_adj.is_none() && cols.oom_score_adj.is_none() {
            return Err(herr("header must name 'state', 'oom_adj' or 'oom_score_adj'".into()));
        }
        info.oom_score_adj = cols.oom_score_adj.is_some();
        cols.oom_adj = cols.oom_adj.or(cols.oom_score_adj);
        Ok(Reader { r, info, cols, ncols: names.len(), line, lineno, n: 0, done: false })
    }

    pub fn info(&self) -> TraceInfo {
        self.info
    }

    fn parse_line(&self, n: u64) -> Result<Record, String> {
        let f: Vec<&str> = self.line.trim().split(',').map(|s| s.trim()).collect();
        if f.len() != self.ncols {
            return Err(format!("expected {} fields, got {}", self.ncols, f.len()));
        }
        let c = &self.cols;
        fn num<T: std::str::FromStr>(
            f: &[&str],
            col: Option<usize>,
            name: &str,
            default: T,
        ) -> Result<T, String> {
            match col {
                None => Ok(default),
                Some(i) if f[i].is_empty() => Ok(default),
                Some(i) => f[i].parse().map_err(|_| format!("bad {name} '{}'", f[i])),
            }
        }
        let index: u64 = match c.index {
            Some(i) if !f[i].is_empty() => f[i].parse().map_err(|_| format!("bad index '{}'", f[i]))?,
            _ => return Err("missing index".into()),
        };
        let oom_name = if self.info.oom_score_adj { "oom_score_adj" } else { "oom_adj" };
        let oom_adj: i16 = num(&f, c.oom_adj, oom_name, OOM_ADJ_UNKNOWN)?;
        let state = match c.state.map(|i| f[i]).filter(|s| !s.is_empty()) {
            Some(s) => ProcState::parse(s).ok_or_else(|| {
                format!("bad state '{s}' (foreground, visible, service, background, empty)")
            })?,
            None if oom_adj != OOM_ADJ_UNKNOWN => ProcState::from_oom(oom_adj, self.info.oom_score_adj),
            None => return Err(format!("no state and no {oom_name}")),
        };
        let write = match c.op.map(|i| f[i]).unwrap_or("") {
            "R" | "r" | "read" => false,
            "W" | "w" | "write" => true,
            other => return Err(format!("bad op '{other}' (R or W)")),
        };
        Ok(Record {
            time: num(&f, c.time, "time", n - 1)?,
            page: PageId { dev: num(&f, c.dev, "dev", 0)?, ino: num(&f, c.ino, "ino", 0)?, index },
            pid: num(&f, c.pid, "pid", 0)?,
            state,
            oom_adj,
            write,
        })
    }
}

impl<R: BufRead> Iterator for Reader<R> {
    type Item = Result<Record, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            self.line.clear();
            self.lineno += 1;
            match self.r.read_line(&mut self.line) {
                Ok(0) => self.done = true,
                Ok(_) => {
                    let t = self.line.trim();
                    if t.is_empty() || t.starts_with('#') {
                        continue;
                    }
                    self.n += 1;
                    let n = self.n;
                    return Some(self.parse_line(n).map_err(|msg| TraceError {
                        line: Some(self.lineno),
                        record: Some(n),
                        msg,
                    }));
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(TraceError {
                        line: Some(self.lineno),
                        record: None,
                        msg: format!("read error: {e}"),
                    }));
                }
            }
        }
        None
    }
}

/// CSV writer with all columns.
pub struct Writer<W: Write> {
    w: W,
}

impl<W: Write> Writer<W> {
    pub fn new(mut w: W, info: &TraceInfo) -> std::io::Result<Writer<W>> {
        writeln!(
            w,
            "# mlpt time_ns={} physical={} page_bytes={}",
            u8::from(info.time_ns),
            u8::from(info.physical),
            info.page_bytes
        )?;
        let oom = if info.oom_score_adj { "oom_score_adj" } else { "oom_adj" };
        let names: Vec<&str> = COLUMNS.iter().map(|&c| if c == "oom_adj" { oom } else { c }).collect();
        writeln!(w, "{}", names.join(","))?;
        Ok(Writer { w })
    }

    pub fn write(&mut self, r: &Record) -> std::io::Result<()> {
        let adj = if r.oom_adj == OOM_ADJ_UNKNOWN { String::new() } else { r.oom_adj.to_string() };
        writeln!(
            self.w,
            "{},{},{},{},{},{},{},{}",
            r.time,
            r.page.dev,
            r.page.ino,
            r.page.index,
            r.pid,
            r.state.name(),
            adj,
            if r.write { 'W' } else { 'R' }
        )
    }

    pub fn finish(mut self) -> std::io::Result<W> {
        self.w.flush()?;
        Ok(self.w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(s: &str) -> Result<Vec<Record>, TraceError> {
        Reader::new(s.as_bytes())?.collect()
    }

    #[test]
    fn minimal_columns_and_defaults() {
        let recs = read_all("# comment\nindex,op,oom_adj\n7,W,0\n\n8,r,11\n").unwrap();
        assert_eq!(recs.len(), 2);
        assert_eq!(recs[0].state, ProcState::Foreground);
        assert!(recs[0].write);
        assert_eq!(recs[1].state, ProcState::Empty);
        assert_eq!(recs[1].time, 1); // default: record number - 1
        assert!(recs[1].page.is_physical());
    }

    #[test]
    fn errors_carry_line_and_record() {
        let e = read_all("index,op,state\n1,R,foreground\n2,X,foreground\n").unwrap_err();
        assert_eq!(e.to_string(), "line 3 (record 2): bad op 'X' (R or W)");
        let e = read_all("index,op,state\n1,R\n").unwrap_err();
        assert_eq!(e.to_string(), "line 2 (record 1): expected 3 fields, got 2");
        let e = read_all("index,op,state\n#x\nq,R,empty\n").unwrap_err();
        assert_eq!(e.to_string(), "line 3 (record 1): bad index 'q'");
        let e = read_all("index,op,state\n1,R,sleeping\n").unwrap_err();
        assert!(e.to_string().starts_with("line 2 (record 1): bad state 'sleeping'"));
        let e = read_all("index,state\n").unwrap_err();
        assert_eq!(e.to_string(), "line 1: header must name the columns 'index' and 'op'");
        let e = read_all("index,op,color\n").unwrap_err();
        assert!(e.to_string().starts_with("line 1: unknown column 'color'"));
        assert!(read_all("").is_err());
    }

    #[test]
    fn oom_score_adj_column() {
        let text =
            "index,op,oom_score_adj,pid\n1,R,0,7\n2,W,100,7\n3,R,500,8\n4,R,700,8\n5,R,950,9\n6,R,-900,9\n";
        let rd = Reader::new(text.as_bytes()).unwrap();
        assert!(rd.info().oom_score_adj);
        let recs: Vec<Record> = rd.map(|r| r.unwrap()).collect();
        let states: Vec<ProcState> = recs.iter().map(|r| r.state).collect();
        use ProcState::*;
        assert_eq!(states, [Foreground, Visible, Service, Background, Empty, Service]);
        assert_eq!(recs[5].oom_adj, -900);
        let mut w =
            Writer::new(Vec::new(), &TraceInfo { oom_score_adj: true, ..TraceInfo::default() }).unwrap();
        w.write(&recs[2]).unwrap();
        let out = String::from_utf8(w.finish().unwrap()).unwrap();
        assert!(
            out.contains("\ntime,dev,ino,index,pid,state,oom_score_adj,op\n2,0,0,3,8,service,500,R\n"),
            "{out}"
        );
        let e = read_all("index,op,oom_adj,oom_score_adj\n").unwrap_err();
        assert!(e.to_string().starts_with("line 1: 'oom_adj' and 'oom_score_adj' are two scales"));
        let e = read_all("index,op,oom_score_adj\n1,R,\n").unwrap_err();
        assert_eq!(e.to_string(), "line 2 (record 1): no state and no oom_score_adj");
    }

    #[test]
    fn write_then_read() {
        let info = TraceInfo { time_ns: true, ..TraceInfo::default() };
        let recs = read_all("time,dev,ino,index,pid,state,oom_adj,op\n5,2049,77,3,42,service,,W\n").unwrap();
        let mut w = Writer::new(Vec::new(), &info).unwrap();
        w.write(&recs[0]).unwrap();
        let text = String::from_utf8(w.finish().unwrap()).unwrap();
        let rd = Reader::new(text.as_bytes()).unwrap();
        assert!(rd.info().time_ns);
        let back: Vec<Record> = rd.map(|r| r.unwrap()).collect();
        assert_eq!(back, recs);
    }
}
