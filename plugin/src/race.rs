//! The race rule (`race=`, README "Modelled time"): whether a store that follows its vCPU's own
//! load of a line, with the line still shared (an upgrade), finds the line taken away in
//! between by another vCPU's store, as a core on the machine would when another core's
//! ownership request reaches the home between its load and its store.
//!
//! Under single-threaded TCG a load and the store after it run in one translation block, so in
//! one turn: no other vCPU's access ever falls between them in the order the model sees. The
//! rule looks at modelled time instead: the line's last store (the causal clock's stamp, by
//! another vCPU) against the time this vCPU loaded the line and the time of its store.

/// Which stores lose their line between their own load and themselves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Race {
    /// None (the model before the rule): the host order decides.
    Off,
    /// Those whose line was last stored by another vCPU at a modelled time after the load and
    /// not after the store: the other store falls between them on the modelled clock.
    Window,
    /// Those whose line was last stored by another vCPU at most the lax window before the load
    /// (or at any time after it): another vCPU writes the line concurrently, within the time
    /// the clocks cannot order (one turn), and the rule takes it to have come between.
    Lax,
}

impl Race {
    pub fn parse(value: &str) -> Result<Race, String> {
        match value {
            "off" => Ok(Race::Off),
            "window" => Ok(Race::Window),
            "lax" => Ok(Race::Lax),
            _ => Err(format!("bad value '{value}' for race: expected off, window or lax")),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Race::Off => "off",
            Race::Window => "window",
            Race::Lax => "lax",
        }
    }

    /// Did another vCPU's store at `stored` (ns) take the line between this vCPU's load at
    /// `loaded` and its store at `now`? `lax` is the causal clock's lax window (ns).
    pub fn lost(self, loaded: f64, stored: f64, now: f64, lax: f64) -> bool {
        match self {
            Race::Off => false,
            Race::Window => loaded < stored && stored <= now,
            Race::Lax => stored >= loaded - lax,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn which_stores_lose_their_line() {
        // A load at 1000 ns, its store at 1100 ns, a lax window of 1000 ns.
        let lost = |r: Race, stored: f64| r.lost(1000.0, stored, 1100.0, 1000.0);
        for stored in [1000.5, 1050.0, 1100.0] {
            assert!(lost(Race::Window, stored), "{stored}");
        }
        // Before the load (the reader already saw it) or after the store: not between.
        for stored in [0.0, 999.0, 1000.0, 1100.5, 1900.0] {
            assert!(!lost(Race::Window, stored), "{stored}");
        }
        // Lax: any store from one window before the load on.
        for stored in [0.0, 500.0, 1000.0, 1050.0, 1900.0] {
            assert!(lost(Race::Lax, stored), "{stored}");
        }
        assert!(!lost(Race::Lax, -0.5));
        assert!((0..3000).all(|t| !lost(Race::Off, t as f64)));
        for r in [Race::Off, Race::Window, Race::Lax] {
            assert_eq!(Race::parse(r.name()), Ok(r));
        }
        assert_eq!(Race::parse("on").unwrap_err(), "bad value 'on' for race: expected off, window or lax");
    }
}
