//! One page request of a trace: who asked, in which process state, for which page, read or write.

use std::fmt;

/// Android-style process importance classes. Only `Foreground` is special to the
/// paper's policy; the others are kept for reporting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ProcState {
    Foreground = 0,
    Visible = 1,
    Service = 2,
    Background = 3,
    Empty = 4,
}

impl ProcState {
    pub const ALL: [ProcState; 5] = [
        ProcState::Foreground,
        ProcState::Visible,
        ProcState::Service,
        ProcState::Background,
        ProcState::Empty,
    ];

    pub fn from_code(code: u8) -> Option<ProcState> {
        ProcState::ALL.get(code as usize).copied()
    }

    pub fn name(self) -> &'static str {
        match self {
            ProcState::Foreground => "foreground",
            ProcState::Visible => "visible",
            ProcState::Service => "service",
            ProcState::Background => "background",
            ProcState::Empty => "empty",
        }
    }

    pub fn parse(s: &str) -> Option<ProcState> {
        ProcState::ALL.iter().copied().find(|p| p.name() == s)
    }

    /// Map an Android `oom_adj` value (the pre-Lollipop scale, -17..15) to a state.
    /// 0 is the foreground app (the paper's test); 1-2 visible/perceptible; 3-5 heavy-weight,
    /// backup and service; 6-8 home, previous and B-services; 9 and above cached/hidden apps;
    /// negative values (system and native daemons) are treated as services.
    pub fn from_oom_adj(adj: i16) -> ProcState {
        ProcState::from_oom(adj, false)
    }

    /// Map a Linux `oom_score_adj` value (-1000..1000) to a state by the ranges Android
    /// (7.0 and later) writes, the `oom_adj` classes times 100: 0 foreground; 1-299 visible and
    /// perceptible; 300-599 backup, heavy-weight and service; 600-899 home, previous and
    /// B-services; 900 and above cached; negative (system, persistent, native) services.
    pub fn from_oom_score_adj(adj: i16) -> ProcState {
        ProcState::from_oom(adj, true)
    }

    /// The state for an oom value on the trace's scale (`score`: `oom_score_adj`, whose class
    /// boundaries are `oom_adj`'s times 100).
    pub fn from_oom(adj: i16, score: bool) -> ProcState {
        let step = if score { 100 } else { 1 };
        match adj {
            0 => ProcState::Foreground,
            a if a < 0 => ProcState::Service,
            a if a < 3 * step => ProcState::Visible,
            a if a < 6 * step => ProcState::Service,
            a if a < 9 * step => ProcState::Background,
            _ => ProcState::Empty,
        }
    }

    pub fn is_foreground(self) -> bool {
        self == ProcState::Foreground
    }
}

impl fmt::Display for ProcState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `oom_adj` value meaning "not recorded".
pub const OOM_ADJ_UNKNOWN: i16 = i16::MIN;

/// A page identity as captured: a file page (`dev`, `ino`, page `index`) or, when `dev` and
/// `ino` are both 0, a physical page frame number in `index`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct PageId {
    pub dev: u32,
    pub ino: u64,
    pub index: u64,
}

impl PageId {
    pub fn is_physical(&self) -> bool {
        self.dev == 0 && self.ino == 0
    }
}

/// One trace record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    /// Nanoseconds since trace start, or a sequence number (see the trace header flags).
    pub time: u64,
    pub page: PageId,
    pub pid: u32,
    pub state: ProcState,
    /// Raw `oom_adj`, or `oom_score_adj` when the trace says so ([`TraceInfo`]'s
    /// `oom_score_adj`), if recorded, else [`OOM_ADJ_UNKNOWN`].
    ///
    /// [`TraceInfo`]: crate::trace::TraceInfo
    pub oom_adj: i16,
    pub write: bool,
}

/// The compact form the simulator consumes: the page id interned to one `u64` key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    pub time: u64,
    pub key: u64,
    pub foreground: bool,
    pub write: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oom_adj_mapping() {
        assert_eq!(ProcState::from_oom_adj(0), ProcState::Foreground);
        assert_eq!(ProcState::from_oom_adj(1), ProcState::Visible);
        assert_eq!(ProcState::from_oom_adj(5), ProcState::Service);
        assert_eq!(ProcState::from_oom_adj(7), ProcState::Background);
        assert_eq!(ProcState::from_oom_adj(15), ProcState::Empty);
        assert_eq!(ProcState::from_oom_adj(-12), ProcState::Service);
    }

    #[test]
    fn oom_score_adj_mapping() {
        let cases = [
            (0, ProcState::Foreground),
            (1, ProcState::Visible),
            (100, ProcState::Visible),
            (299, ProcState::Visible),
            (300, ProcState::Service),
            (500, ProcState::Service),
            (600, ProcState::Background),
            (899, ProcState::Background),
            (900, ProcState::Empty),
            (1000, ProcState::Empty),
            (-1, ProcState::Service),
            (-1000, ProcState::Service),
        ];
        for (adj, state) in cases {
            assert_eq!(ProcState::from_oom_score_adj(adj), state, "{adj}");
            assert_eq!(ProcState::from_oom(adj, true), state, "{adj}");
        }
        assert_eq!(ProcState::from_oom(500, false), ProcState::Empty);
    }

    #[test]
    fn state_names_round_trip() {
        for s in ProcState::ALL {
            assert_eq!(ProcState::parse(s.name()), Some(s));
            assert_eq!(ProcState::from_code(s as u8), Some(s));
        }
        assert_eq!(ProcState::from_code(5), None);
    }
}
