//! Which vCPU is running, from the guest's per-CPU base register.
//!
//! QEMU 10.0 single-threaded TCG compiles the translating vCPU's index into each translation
//! block as a constant (plugin-gen.c `gen_cpu_index` assumes no `CF_PARALLEL` means one vCPU),
//! and blocks are shared between vCPUs, so the index a callback receives is the one of the vCPU
//! that first translated the block. Linux keeps each CPU's per-CPU base in a register (x86-64:
//! GS base in the kernel, the swapped-out kernel GS base in user mode; arm64: TPIDR_EL1), and
//! the per-CPU variable `cpu_number` at a fixed offset from it holds the CPU's number. The
//! plugin reads the register at the start of every block and maps it to the CPU number once.

/// Per-CPU base -> vCPU number, learned as bases appear (a few hundred at most).
#[derive(Default)]
pub struct BaseTable {
    bases: Vec<u64>,
    vcpus: Vec<u32>,
}

impl BaseTable {
    pub fn lookup(&self, base: u64) -> Option<u32> {
        self.bases.iter().position(|&b| b == base).map(|i| self.vcpus[i])
    }

    pub fn insert(&mut self, base: u64, vcpu: u32) {
        self.bases.push(base);
        self.vcpus.push(vcpu);
    }

    /// The vCPU whose per-CPU base is `base`. A new base is learned with the CPU number `read`
    /// finds at it; with no `cpu_number` symbol to read (`by_symbol` false) bases are numbered
    /// in the order they appear. A read that fails learns nothing and gives `None`: on arm64
    /// `cpu_number` cannot be read from user mode, where a restored guest may run first, and
    /// numbering that base by its order would give it another vCPU's number for the whole run.
    pub fn resolve(
        &mut self,
        base: u64,
        by_symbol: bool,
        max_vcpus: usize,
        read: impl FnOnce() -> Option<u32>,
    ) -> Option<u32> {
        if let Some(v) = self.lookup(base) {
            return Some(v);
        }
        let v = if by_symbol { read()? } else { (self.len() % max_vcpus) as u32 };
        self.insert(base, v);
        Some(v)
    }

    pub fn len(&self) -> usize {
        self.bases.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bases.is_empty()
    }
}

/// The per-CPU base register(s) to read, by gdb register name.
pub fn base_registers(target: &str) -> &'static [&'static str] {
    if target.starts_with("x86_64") {
        &["gs_base", "k_gs_base"]
    } else if target.starts_with("aarch64") {
        &["TPIDR_EL1"]
    } else {
        &[]
    }
}

/// The per-CPU base among the values read: on x86-64 GS base while the kernel runs with its
/// GS (kernel text), else the kernel GS base that SWAPGS parked.
pub fn per_cpu_base(values: &[u64], kernel_text: bool) -> u64 {
    match values {
        [gs, kernel_gs] => {
            if kernel_text {
                *gs
            } else {
                *kernel_gs
            }
        }
        [base] => *base,
        _ => 0,
    }
}

/// The address of `cpu_number` in a System.map: an offset from the per-CPU base on x86-64
/// (zero-based per-CPU section), the link address on arm64; both are added to the base.
pub fn cpu_number_symbol(system_map: &str) -> Option<u64> {
    system_map.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        let (addr, _, name) = (words.next()?, words.next()?, words.next()?);
        (name == "cpu_number").then(|| u64::from_str_radix(addr, 16).ok()).flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_learns_bases_in_any_order() {
        let mut t = BaseTable::default();
        assert_eq!(t.lookup(0xffff88801fc00000), None);
        t.insert(0xffff88801fc00000, 2);
        t.insert(0xffff88801f800000, 0);
        assert_eq!((t.lookup(0xffff88801fc00000), t.lookup(0xffff88801f800000)), (Some(2), Some(0)));
        assert_eq!(t.len(), 2);
    }

    #[test]
    fn a_base_whose_number_cannot_be_read_is_not_learned() {
        let mut t = BaseTable::default();
        // CPU 3 first seen where cpu_number cannot be read: not numbered 0 by its order
        assert_eq!(t.resolve(0x4000, true, 4, || None), None);
        assert_eq!(t.resolve(0x1000, true, 4, || Some(0)), Some(0));
        assert_eq!(t.resolve(0x4000, true, 4, || Some(3)), Some(3));
        assert_eq!(t.resolve(0x4000, true, 4, || panic!("read again")), Some(3));
        assert_eq!(t.len(), 2);
        // without the symbol: the order bases appear in
        let mut order = BaseTable::default();
        assert_eq!(order.resolve(0x4000, false, 4, || None), Some(0));
        assert_eq!(order.resolve(0x1000, false, 4, || None), Some(1));
        assert_eq!(order.resolve(0x4000, false, 4, || None), Some(0));
    }

    #[test]
    fn x86_reads_gs_in_the_kernel_and_the_parked_base_in_user_mode() {
        assert_eq!(per_cpu_base(&[0xaaaa, 0xbbbb], true), 0xaaaa);
        assert_eq!(per_cpu_base(&[0, 0xbbbb], false), 0xbbbb);
        assert_eq!(per_cpu_base(&[0x77], false), 0x77);
    }

    #[test]
    fn cpu_number_comes_from_the_system_map() {
        let x86 = "0000000000000000 D __per_cpu_start\n0000000000015200 D cpu_number\n";
        let arm = "ffffffc00851f000 D this_cpu_off\nffffffc00851f008 D cpu_number\n";
        assert_eq!(cpu_number_symbol(x86), Some(0x15200));
        assert_eq!(cpu_number_symbol(arm), Some(0xffffffc00851f008));
        assert_eq!(cpu_number_symbol("ffffffff81000000 T _text\n"), None);
    }
}
