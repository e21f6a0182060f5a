//! Hardware threads of one core share its issue slots (README "Modelled time", SMT).
//!
//! `core.smt_gain` (G) is a core's instruction throughput with all `threads_per_core` (T)
//! threads busy, relative to one thread alone. With n threads of a core busy the core runs
//! 1 + (G - 1) (n - 1) / (T - 1) threads' worth, shared evenly: each busy thread's base
//! cycles per instruction are `core.cpi` x n / that. A thread is busy unless its vCPU is in
//! the kernel's idle loop: a function of `.cpuidle.text` (the `__cpuidle` functions, where
//! Linux halts or polls: `default_idle`, `mwait_idle`, `cpu_idle_poll`, arm64 `cpu_do_idle`,
//! ...) or of `IDLE_LOOP`.

/// The generic idle loop of Linux 6.1 around the `__cpuidle` functions, and x86's
/// `amd_e400_idle` (outside `.cpuidle.text`, it halts with `default_idle` inlined; Linux picks
/// it for QEMU's default AMD CPU models).
pub const IDLE_LOOP: &[&str] = &["do_idle", "cpuidle_idle_call", "default_idle_call", "arch_cpu_idle", "amd_e400_idle"];

/// How much slower one busy thread runs with `busy` threads of its `threads`-thread core busy
/// and a whole-core throughput gain `gain` (1 for a single busy thread).
pub fn slowdown(busy: u32, threads: u32, gain: f64) -> f64 {
    if busy <= 1 || threads <= 1 {
        return 1.0;
    }
    let busy = busy.min(threads);
    let throughput = 1.0 + (gain - 1.0) * (busy - 1) as f64 / (threads - 1) as f64;
    busy as f64 / throughput
}

/// Which vCPUs are busy, per core.
pub struct SmtCores {
    threads: u32,
    gain: f64,
    core_of: Vec<u16>,
    busy: Vec<bool>,
    busy_on_core: Vec<u32>,
}

impl SmtCores {
    /// `None` when no core hosts two vCPUs (then no thread ever shares its core).
    pub fn new(threads: u32, gain: f64, core_of: &[u16], n_cores: usize) -> Option<SmtCores> {
        let mut hosted = vec![0u32; n_cores];
        for &c in core_of {
            hosted[c as usize] += 1;
        }
        if threads <= 1 || hosted.iter().all(|&n| n <= 1) {
            return None;
        }
        // Every vCPU starts busy (booting), as a vCPU does until it first idles.
        Some(SmtCores {
            threads,
            gain,
            core_of: core_of.to_vec(),
            busy: vec![true; core_of.len()],
            busy_on_core: hosted,
        })
    }

    /// A block of `vcpu` ran, in the idle loop or not; returns its base-cycle slowdown.
    pub fn block(&mut self, vcpu: usize, idle: bool) -> f64 {
        let Some(&core) = self.core_of.get(vcpu) else { return 1.0 };
        let core = core as usize;
        if self.busy[vcpu] == idle {
            self.busy[vcpu] = !idle;
            if idle {
                self.busy_on_core[core] -= 1;
            } else {
                self.busy_on_core[core] += 1;
            }
        }
        if idle {
            1.0
        } else {
            slowdown(self.busy_on_core[core], self.threads, self.gain)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_siblings_share_the_core_by_its_gain() {
        // KNL-like: 4 threads, the core 1.5x one thread with all busy.
        assert_eq!(slowdown(1, 4, 1.5), 1.0);
        // 2 busy: 1 + 0.5 x 1/3 = 7/6 threads' worth for 2: 12/7 each.
        assert!((slowdown(2, 4, 1.5) - 12.0 / 7.0).abs() < 1e-12);
        assert_eq!(slowdown(4, 4, 1.5), 4.0 / 1.5);
        // gain 1: siblings take turns; gain = threads: no sharing.
        assert_eq!(slowdown(2, 2, 1.0), 2.0);
        assert_eq!(slowdown(2, 2, 2.0), 1.0);
        assert_eq!(slowdown(3, 1, 1.0), 1.0);
    }

    #[test]
    fn idle_siblings_leave_the_core_to_the_busy_one() {
        // 4 vCPUs on 2 cores of 2 threads (vCPUs 0, 2 on core 0; 1, 3 on core 1), gain 1.25.
        let mut s = SmtCores::new(2, 1.25, &[0, 1, 0, 1], 2).unwrap();
        let shared = 2.0 / 1.25;
        assert_eq!(s.block(0, false), shared);
        assert_eq!(s.block(2, true), 1.0); // vCPU 2 idles: core 0 has one busy thread
        assert_eq!(s.block(0, false), 1.0);
        assert_eq!(s.block(1, false), shared); // core 1 untouched: both still busy
        assert_eq!(s.block(2, false), shared); // vCPU 2 wakes
        assert_eq!(s.block(0, false), shared);
        assert!(SmtCores::new(2, 1.25, &[0, 1], 2).is_none());
        assert!(SmtCores::new(1, 1.0, &[0, 0], 1).is_none());
    }
}
