//! Memory-controller bandwidth: each controller's busy time per epoch of modelled time, and the
//! queueing delay a line read meets (README.md "Memory bandwidth").
//!
//! Time is the requesting vCPU's own modelled clock (ns). Epoch `k` covers `[kE, (k+1)E)`.
//! A request of service time `S` (64 bytes / the device's bandwidth) is booked into the first
//! epoch at or after its own whose booked busy time leaves room for it (busy + S <= E). Its
//! delay is
//! - the **overload** wait: 0 if booked into its own epoch, else the start of the epoch it was
//!   booked into minus its arrival time (the controller had no capacity left before then);
//! - plus the **M/D/1** wait `rho / (2 (1 - rho)) x S`, with `rho` the busy fraction of the
//!   epoch before its own (clipped at `RHO_MAX`).
//!
//! So no epoch carries more than E of work: over any span the controller moves at most its
//! bandwidth, and vCPUs that ask for more are pushed later, which is what bounds the modelled
//! bandwidth. Bookings are by epoch, not by arrival order, so the order in which QEMU runs
//! the vCPUs (one turn after another) does not change the capacity.
//!
//! A vCPU whose clock fell more than `behind` epochs (`bw.behind_epochs`, default 8) behind the
//! furthest clock any request
//! came at (`Frontier`) executed nothing for a while (a halted vCPU, or one asleep in a
//! barrier, has no cycles) or ran far fewer cycles per turn: its clock is moved up to `behind`
//! epochs before that frontier and the shift is counted as its idle time, so the region's
//! modelled time covers every booking it made. The frontier follows the vCPUs' clocks only,
//! never the epochs a backlog pushed requests into: a backlog is waited for, not forgiven.

/// Epochs remembered per controller.
pub const RING: usize = 4096;
/// Utilisation is clipped here in the M/D/1 formula (which diverges at 1).
pub const RHO_MAX: f64 = 0.95;
/// How far ahead a request may be pushed, in epochs (bounds the search).
const MAX_PUSH: u64 = RING as u64 / 2;

#[derive(Clone, Copy, Default, Debug)]
struct Epoch {
    /// Epoch number + 1 (0 = never used).
    tag: u64,
    /// Booked service time (ns).
    busy: f64,
}

pub struct Controller {
    ring: Vec<Epoch>,
    /// Newest epoch booked + 1 (0 = none).
    newest: u64,
}

/// What one booking cost: the overload and M/D/1 parts of the wait (ns).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Booking {
    pub overload_ns: f64,
    pub mdl_ns: f64,
}

/// The furthest modelled clock (ns) any request arrived at since the clocks' origin.
#[derive(Clone, Copy, Debug, Default)]
pub struct Frontier {
    newest_ns: f64,
}

impl Frontier {
    /// A request at clock `t` (ns): how far the vCPU's clock must move up (0 if it is at most
    /// `behind` epochs of `epoch` ns behind the frontier); the frontier then includes it.
    pub fn rejoin(&mut self, t: f64, epoch: f64, behind: u64) -> f64 {
        let earliest = self.newest_ns - behind as f64 * epoch;
        let shift = if t < earliest { earliest - t } else { 0.0 };
        self.newest_ns = self.newest_ns.max(t + shift);
        shift
    }

    pub fn clear(&mut self) {
        self.newest_ns = 0.0;
    }
}

impl Booking {
    pub fn wait_ns(&self) -> f64 {
        self.overload_ns + self.mdl_ns
    }
}

/// The M/D/1 mean waiting time for utilisation `rho` (clipped at `RHO_MAX`) and service `s`.
pub fn md1_wait(rho: f64, s: f64) -> f64 {
    let rho = rho.clamp(0.0, RHO_MAX);
    rho / (2.0 * (1.0 - rho)) * s
}

impl Default for Controller {
    fn default() -> Self {
        Controller { ring: vec![Epoch::default(); RING], newest: 0 }
    }
}

impl Controller {
    /// Forgets every booking (the clocks were reset).
    pub fn clear(&mut self) {
        self.ring.iter_mut().for_each(|e| *e = Epoch::default());
        self.newest = 0;
    }

    fn busy(&self, k: u64) -> f64 {
        let e = self.ring[(k % RING as u64) as usize];
        if e.tag == k + 1 {
            e.busy
        } else {
            0.0
        }
    }

    /// The slot of epoch `k`, emptied if it held an older epoch.
    fn slot(&mut self, k: u64) -> &mut Epoch {
        let e = &mut self.ring[(k % RING as u64) as usize];
        if e.tag != k + 1 {
            *e = Epoch { tag: k + 1, busy: 0.0 };
        }
        e
    }

    /// Books a request of service time `s` (ns) arriving at `t` (ns) with epochs of `epoch`
    /// ns; returns its delay.
    pub fn book(&mut self, t: f64, s: f64, epoch: f64) -> Booking {
        let t = t.max(0.0);
        let k = (t / epoch) as u64;
        let rho = if k > 0 { self.busy(k - 1) / epoch } else { 0.0 };
        let mut j = k;
        while j < k + MAX_PUSH && self.busy(j) + s > epoch {
            j += 1;
        }
        self.slot(j).busy += s;
        self.newest = self.newest.max(j + 1);
        let overload_ns = if j == k { 0.0 } else { j as f64 * epoch - t };
        Booking { overload_ns, mdl_ns: md1_wait(rho, s) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn md1_wait_by_hand() {
        // rho 0.5: 0.5 / (2 x 0.5) = 0.5 service times; rho 0.8: 0.8 / 0.4 = 2; clipped at 0.95:
        // 0.95 / 0.1 = 9.5.
        assert_eq!(md1_wait(0.0, 2.0), 0.0);
        assert!((md1_wait(0.5, 2.0) - 1.0).abs() < 1e-12);
        assert!((md1_wait(0.8, 1.0) - 2.0).abs() < 1e-12);
        assert!((md1_wait(3.0, 1.0) - 9.5).abs() < 1e-12);
    }

    #[test]
    fn an_idle_controller_adds_nothing() {
        let mut c = Controller::default();
        assert_eq!(c.book(50.0, 1.0, 100.0), Booking::default());
    }

    #[test]
    fn utilisation_of_the_previous_epoch_sets_the_md1_wait() {
        // Epoch 100 ns, service 10 ns: 8 requests in epoch 0 book 80 ns (rho 0.8); a request
        // in epoch 1 waits 0.8 / 0.4 x 10 = 20 ns, one in epoch 2 (epoch 1 holds 10 ns,
        // rho 0.1) 0.1 / 1.8 x 10 = 0.556 ns.
        let mut c = Controller::default();
        for i in 0..8 {
            let b = c.book(i as f64 * 10.0, 10.0, 100.0);
            assert_eq!(b.wait_ns(), 0.0, "request {i}");
        }
        let b = c.book(150.0, 10.0, 100.0);
        assert!((b.mdl_ns - 20.0).abs() < 1e-9, "{b:?}");
        assert_eq!(b.overload_ns, 0.0);
        let b = c.book(250.0, 10.0, 100.0);
        assert!((b.mdl_ns - 10.0 / 18.0).abs() < 1e-9, "{b:?}");
    }

    #[test]
    fn a_full_epoch_pushes_requests_to_the_next_with_room() {
        // Epoch 100 ns, service 25 ns: four requests fill epoch 0; the fifth, at t = 30, is
        // booked into epoch 1 and waits 100 - 30 = 70 ns (plus no M/D/1 part: epoch -1 is
        // empty). Four more fill epoch 1; the tenth, at t = 40, goes to epoch 2: 160 ns, and
        // its M/D/1 part still reads epoch -1 (its own epoch is 0).
        let mut c = Controller::default();
        for _ in 0..4 {
            assert_eq!(c.book(10.0, 25.0, 100.0).wait_ns(), 0.0);
        }
        let b = c.book(30.0, 25.0, 100.0);
        assert_eq!((b.overload_ns, b.mdl_ns), (70.0, 0.0));
        for _ in 0..3 {
            c.book(30.0, 25.0, 100.0);
        }
        let b = c.book(40.0, 25.0, 100.0);
        assert_eq!(b.overload_ns, 160.0);
        // A request arriving in epoch 1 sees epoch 0 full: rho 1 clipped to 0.95,
        // 9.5 x 25 = 237.5 ns, and is pushed to epoch 3 (epochs 1 and 2 are full: 300 - 150).
        for _ in 0..3 {
            c.book(40.0, 25.0, 100.0);
        }
        let b = c.book(150.0, 25.0, 100.0);
        assert_eq!(b.overload_ns, 150.0);
        assert!((b.mdl_ns - 237.5).abs() < 1e-9);
    }

    #[test]
    fn no_epoch_holds_more_than_its_length_of_work() {
        // 1000 requests of 7 ns all arriving at t = 0 with 100 ns epochs: 14 fit per epoch, so
        // they span ceil(1000 / 14) = 72 epochs: the controller's throughput is its bandwidth,
        // and the last waits 71 epochs (a backlog is never forgiven).
        let mut c = Controller::default();
        let mut last = Booking::default();
        for _ in 0..1000 {
            last = c.book(0.0, 7.0, 100.0);
        }
        assert_eq!(c.newest, 72);
        assert_eq!(last.overload_ns, 7100.0);
        assert!((0..72).all(|k| c.busy(k) <= 100.0 && c.busy(k) >= 98.0 || k == 71));
    }

    impl Frontier {
        fn rejoin8(&mut self, t: f64, epoch: f64) -> f64 {
            self.rejoin(t, epoch, 8)
        }
    }

    #[test]
    fn a_clock_far_behind_the_frontier_moves_up_to_behind_epochs_before_it() {
        // Epoch 10 ns, 8 epochs behind allowed: a request at 1000 ns sets the frontier; one at 3 ns is more
        // than 80 ns behind: it moves up to 920 ns (shift 917); one at 925 ns is within 80 ns
        // (no shift); one at 1500 ns moves the frontier on, after which 1420 ns is the
        // earliest clock that needs no shift.
        let mut f = Frontier::default();
        assert_eq!(f.rejoin8(1000.0, 10.0), 0.0);
        assert_eq!(f.rejoin8(3.0, 10.0), 917.0);
        assert_eq!(f.rejoin8(925.0, 10.0), 0.0);
        assert_eq!(f.rejoin8(1500.0, 10.0), 0.0);
        assert_eq!(f.rejoin8(1420.0, 10.0), 0.0);
        assert_eq!(f.rejoin8(1419.0, 10.0), 1.0);
        f.clear();
        assert_eq!(f.rejoin8(0.0, 10.0), 0.0);
        // Allowing 2 epochs: 0 ns is 20 ns behind the frontier at 20: no shift; at 21, 1 ns.
        f.rejoin(20.0, 10.0, 2);
        assert_eq!((f.rejoin(0.0, 10.0, 2), f.rejoin(-1.0, 10.0, 2)), (0.0, 1.0));
    }

    #[test]
    fn a_backlog_does_not_move_the_frontier() {
        // Epoch 10 ns, service 5 ns: 40 requests at t = 0 fill epochs 0..19; the frontier stays
        // at 0 (only clocks move it), so a request at 0 is not moved up but waits for epoch 20.
        let mut c = Controller::default();
        let mut f = Frontier::default();
        for _ in 0..40 {
            assert_eq!(f.rejoin8(0.0, 10.0), 0.0);
            c.book(0.0, 5.0, 10.0);
        }
        assert_eq!(f.rejoin8(0.0, 10.0), 0.0);
        assert_eq!(c.book(0.0, 5.0, 10.0).overload_ns, 200.0);
    }
}
