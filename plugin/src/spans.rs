//! Spans: stretches of one vCPU's modelled time between a span-begin and a span-end marker
//! executed by that vCPU (workloads/include/manylab_roi.h `manylab_span_begin(n)`), such as one
//! request of a task. Unlike regions they are per vCPU and do not restart the clocks, so many
//! short spans can run on every vCPU inside one region (README "Spans").
//!
//! A span's time is what its vCPU's clock advanced by between the two markers, less the idle
//! time the bandwidth frontier moved that clock up by meanwhile (a halted vCPU's catch-up,
//! which belongs to the time before the span). What a sleeping task waits for reaches the
//! clock through the causal rule when it wakes, so a sleep inside a span is still counted.
//! A vCPU has at most one open span per number (spans of different numbers may overlap, as
//! when a task sleeps in its span and another task's runs): a begin replaces an open span of
//! its number. An end is lost (counted, not timed) if its vCPU has no open span of that number
//! (the task migrated in the span, or the span was replaced) or a region marker restarted the
//! clocks since its begin. So every end is counted once, timed or lost.

/// Where a span began: its vCPU's clock, idle time and clock generation then.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Opened {
    clock_ns: f64,
    idle_ns: f64,
    gen: u32,
}

/// The open spans of each vCPU, by span number.
#[derive(Default)]
pub struct OpenSpans {
    open: Vec<Vec<Option<Opened>>>,
}

impl OpenSpans {
    /// `vcpu` begins span `span` with its clock at `clock_ns`.
    pub fn begin(&mut self, vcpu: usize, span: u8, clock_ns: f64, idle_ns: f64, gen: u32) {
        if self.open.len() <= vcpu {
            self.open.resize(vcpu + 1, Vec::new());
        }
        let mine = &mut self.open[vcpu];
        if mine.len() <= span as usize {
            mine.resize(span as usize + 1, None);
        }
        mine[span as usize] = Some(Opened { clock_ns, idle_ns, gen });
    }

    /// `vcpu` ends span `span`: the span's time and the idle time left out of it (ns), or
    /// None if the span is lost.
    pub fn end(&mut self, vcpu: usize, span: u8, clock_ns: f64, idle_ns: f64, gen: u32) -> Option<(f64, f64)> {
        let opened = self.open.get_mut(vcpu).and_then(|m| m.get_mut(span as usize)).and_then(Option::take)?;
        if opened.gen != gen {
            return None;
        }
        let idle = (idle_ns - opened.idle_ns).max(0.0);
        Some(((clock_ns - opened.clock_ns - idle).max(0.0), idle))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_span_takes_its_vcpus_clock_less_idle() {
        let mut spans = OpenSpans::default();
        spans.begin(1, 0, 100.0, 10.0, 1);
        assert_eq!(spans.end(1, 0, 350.0, 60.0, 1), Some((200.0, 50.0)));
        // already closed
        assert_eq!(spans.end(1, 0, 400.0, 60.0, 1), None);
    }

    #[test]
    fn spans_are_lost_across_vcpus_numbers_and_clock_restarts() {
        let mut spans = OpenSpans::default();
        spans.begin(0, 2, 0.0, 0.0, 1);
        assert_eq!(spans.end(1, 2, 10.0, 0.0, 1), None);
        assert_eq!(spans.end(0, 3, 10.0, 0.0, 1), None);
        spans.begin(0, 2, 0.0, 0.0, 1);
        assert_eq!(spans.end(0, 2, 10.0, 0.0, 2), None);
        // spans of two numbers overlap on a vCPU; a begin of an open number replaces it
        spans.begin(0, 4, 0.0, 0.0, 2);
        spans.begin(0, 5, 1.0, 0.0, 2);
        assert_eq!(spans.end(0, 4, 5.0, 0.0, 2), Some((5.0, 0.0)));
        spans.begin(0, 5, 3.0, 0.0, 2);
        assert_eq!(spans.end(0, 5, 11.0, 0.0, 2), Some((8.0, 0.0)));
        assert_eq!(spans.end(0, 5, 12.0, 0.0, 2), None);
    }
}
