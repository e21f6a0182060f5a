//! What a vCPU's turn (`quantum=N`) counts: guest instructions, or modelled cycles
//! (`quantum_unit=cycles`: instructions x `core.cpi` + stall cycles / `core.mlp`, the vCPU's
//! modelled clock), so that a vCPU that stalls more runs fewer instructions per turn.

use crate::topology::mix;

/// Cycles are counted in 1/1024ths, so that a block of a few instructions at a CPI below 1
/// is not rounded away.
pub const FIXED_ONE: u64 = 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QuantumUnit {
    Instructions,
    Cycles,
}

impl QuantumUnit {
    pub fn parse(value: &str) -> Result<QuantumUnit, String> {
        match value {
            "instructions" | "insts" => Ok(QuantumUnit::Instructions),
            "cycles" => Ok(QuantumUnit::Cycles),
            _ => Err(format!("bad value '{value}' for quantum_unit: expected instructions or cycles")),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            QuantumUnit::Instructions => "instructions",
            QuantumUnit::Cycles => "cycles",
        }
    }

    /// A turn of `quantum` units in the counter's units.
    pub fn turn(self, quantum: u64) -> u64 {
        match self {
            QuantumUnit::Instructions => quantum,
            QuantumUnit::Cycles => quantum.saturating_mul(FIXED_ONE),
        }
    }

    /// What a block of `insts` instructions costs the turn, the vCPU having stalled
    /// `stall_cycles` (before the MLP division) since its previous block.
    pub fn cost(self, insts: u64, stall_cycles: u64, cpi: f64, mlp: f64) -> u64 {
        match self {
            QuantumUnit::Instructions => insts,
            QuantumUnit::Cycles => {
                let cycles = insts as f64 * cpi + stall_cycles as f64 / mlp;
                (cycles * FIXED_ONE as f64).round() as u64
            }
        }
    }
}

/// The turn that follows one a block overran by `overrun` units: `turn` less the overrun
/// (modulo a turn), so a vCPU's turns end where its own count crosses multiples of the turn
/// and a phase once given (`first_turn`) stays, however much one block costs.
pub fn next_turn(turn: u64, overrun: u64) -> u64 {
    if turn == 0 {
        return 0;
    }
    turn - overrun % turn
}

/// The first turn of `vcpu` in the regions, `turn` units long at most: the whole turn for
/// seed 0, else 1 to `turn` units drawn from the seed and the vCPU's index (splitmix64), so
/// the vCPUs start the region at other phases of their turns.
pub fn first_turn(turn: u64, seed: u64, vcpu: usize) -> u64 {
    if seed == 0 || turn == 0 {
        return turn;
    }
    1 + mix(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15).wrapping_add(vcpu as u64)) % turn
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks of 10 instructions, each followed by `stall` cycles, until a turn of `quantum`
    /// units is used up (as `spend_turn` does: the block that reaches it ends the turn);
    /// returns the instructions the turn ran.
    fn turn_insts(unit: QuantumUnit, quantum: u64, stall: u64, cpi: f64, mlp: f64) -> u64 {
        let mut left = unit.turn(quantum);
        let mut insts = 0;
        loop {
            insts += 10;
            let cost = unit.cost(10, stall, cpi, mlp);
            if left > cost {
                left -= cost;
            } else {
                return insts;
            }
        }
    }

    #[test]
    fn a_turn_of_cycles_runs_fewer_instructions_when_the_vcpu_stalls() {
        let i = QuantumUnit::Instructions;
        let c = QuantumUnit::Cycles;
        // instructions: 1000 whatever the stalls
        assert_eq!(turn_insts(i, 1000, 0, 1.0, 1.0), 1000);
        assert_eq!(turn_insts(i, 1000, 90, 1.0, 1.0), 1000);
        // cycles at CPI 1, no stall: 1000 cycles = 1000 instructions
        assert_eq!(turn_insts(c, 1000, 0, 1.0, 1.0), 1000);
        // 90 stall cycles per 10 instructions: 100 cycles a block, 10 blocks = 100 insts
        assert_eq!(turn_insts(c, 1000, 90, 1.0, 1.0), 100);
        // MLP 3 divides the stalls: 10 + 30 = 40 cycles a block, 25 blocks
        assert_eq!(turn_insts(c, 1000, 90, 1.0, 3.0), 250);
        // CPI 0.125: 10 instructions cost 1.25 cycles (kept in 1/1024ths): 800 blocks
        assert_eq!(c.cost(10, 0, 0.125, 1.0), 1280);
        assert_eq!(turn_insts(c, 1000, 0, 0.125, 1.0), 8000);
        assert!(QuantumUnit::parse("ticks").unwrap_err().contains("quantum_unit"));
        assert_eq!(QuantumUnit::parse("cycles").unwrap().name(), "cycles");
    }

    #[test]
    fn an_overrun_is_taken_from_the_next_turn_modulo_a_turn() {
        assert_eq!(next_turn(1000, 0), 1000);
        assert_eq!(next_turn(1000, 1), 999);
        assert_eq!(next_turn(1000, 999), 1);
        // a block of 2.5 turns past the boundary: the next turn ends at the next boundary
        assert_eq!(next_turn(1000, 2500), 500);
        assert_eq!(next_turn(1000, 3000), 1000);
        assert_eq!(next_turn(0, 7), 0);
    }

    /// The instruction counts at which a vCPU yields: blocks of `costs` (cycled), a first turn
    /// of `first`, then turns of `turn` with the overrun carried.
    fn yields(costs: &[u64], first: u64, turn: u64, n: usize) -> Vec<u64> {
        let (mut left, mut at, mut out) = (first, 0, Vec::new());
        for &cost in costs.iter().cycle() {
            at += 1;
            if left > cost {
                left -= cost;
            } else {
                out.push(at);
                if out.len() == n {
                    return out;
                }
                left = next_turn(turn, cost - left);
            }
        }
        unreachable!()
    }

    #[test]
    fn a_block_dearer_than_any_first_turn_does_not_erase_the_phase() {
        // one block of 850 then nine of 100 (cycles, turns of 1000). Both cut first turns end
        // in the dear block; had the next turn been whole, both would then yield at blocks 11,
        // 21, 31, ... (as the whole first turn would from block 11 on).
        let costs = [850, 100, 100, 100, 100, 100, 100, 100, 100, 100];
        assert_eq!(yields(&costs, 300, 1000, 4), [1, 6, 11, 18]); // 550 over: next turn 450
        assert_eq!(yields(&costs, 800, 1000, 4), [1, 11, 13, 21]); // 50 over: next turn 950
        assert_eq!(yields(&costs, 1000, 1000, 4), [3, 11, 15, 21]);
    }

    #[test]
    fn first_turns_are_whole_without_a_seed_and_spread_with_one() {
        assert_eq!(first_turn(1000, 0, 5), 1000);
        assert_eq!(first_turn(0, 7, 5), 0);
        let turns: Vec<u64> = (0..64).map(|v| first_turn(1000, 1, v)).collect();
        assert!(turns.iter().all(|&t| (1..=1000).contains(&t)));
        assert_eq!(turns, (0..64).map(|v| first_turn(1000, 1, v)).collect::<Vec<_>>());
        let distinct: std::collections::BTreeSet<u64> = turns.iter().copied().collect();
        assert!(distinct.len() > 56, "{distinct:?}");
        let low = turns.iter().filter(|&&t| t <= 500).count();
        assert!((20..=44).contains(&low), "{low} of 64 in the lower half");
        let other: Vec<u64> = (0..64).map(|v| first_turn(1000, 2, v)).collect();
        assert_ne!(turns, other);
    }
}
