//! Kernel symbols from System.map: guest PCs -> function, data addresses -> object.
//! Symbol ids index `functions`; two extra ids stand for user space and unknown kernel code.

#[derive(Default)]
pub struct Symbols {
    /// Sorted text symbols (t/T/w/W): start address and name.
    functions: Vec<(u64, String)>,
    /// Sorted data symbols (d/D/b/B/r/R) inside the kernel image. Per-CPU symbols (small
    /// offsets such as `__per_cpu_end`, not addresses) and absolute ones are left out.
    data: Vec<(u64, String)>,
    /// Start of the kernel image (`_text`, else `_stext`, else the lowest kernel-half symbol).
    kernel_start: u64,
    /// End of the kernel image (`_end`, else the last symbol).
    kernel_end: u64,
    /// The `.cpuidle.text` section (`__cpuidle_text_start` .. `__cpuidle_text_end`): the
    /// functions Linux marks `__cpuidle`, where a CPU halts or polls while idle.
    cpuidle_text: (u64, u64),
}

/// A linker-script marker of a section's edge rather than a function.
fn is_marker(name: &str) -> bool {
    name.starts_with("__start_")
        || name.starts_with("__stop_")
        || (name.starts_with("__") && (name.ends_with("_text_start") || name.ends_with("_text_end")))
}

impl Symbols {
    pub fn parse(text: &str) -> Result<Symbols, String> {
        let mut functions = Vec::new();
        let mut data = Vec::new();
        let mut kernel_end = 0;
        let mut lowest = u64::MAX;
        let (mut text_sym, mut stext, mut end) = (None, None, None);
        let mut cpuidle_text = (0, 0);
        for (n, line) in text.lines().enumerate() {
            let mut parts = line.split_whitespace();
            let (Some(addr), Some(kind), Some(name)) = (parts.next(), parts.next(), parts.next()) else {
                continue;
            };
            let addr = u64::from_str_radix(addr, 16).map_err(|_| format!("System.map line {}: bad address", n + 1))?;
            match kind {
                "t" | "T" | "w" | "W" => functions.push((addr, name.to_string())),
                "d" | "D" | "b" | "B" | "r" | "R" => data.push((addr, name.to_string())),
                _ => {}
            }
            if addr >> 63 == 1 {
                kernel_end = kernel_end.max(addr);
                lowest = lowest.min(addr);
            }
            match name {
                "_text" => text_sym = Some(addr),
                "_stext" => stext = Some(addr),
                "_end" => end = Some(addr),
                "__cpuidle_text_start" => cpuidle_text.0 = addr,
                "__cpuidle_text_end" => cpuidle_text.1 = addr,
                _ => {}
            }
        }
        let kernel_start = text_sym.or(stext).unwrap_or(lowest);
        let kernel_end = end.unwrap_or(kernel_end);
        // Where a function shares its address with a linker marker (`__cpuidle_text_start` at
        // `default_idle`, `__sched_text_start` at `__schedule`), the function keeps the name.
        functions.sort_by(|a, b| (a.0, is_marker(&a.1), &a.1).cmp(&(b.0, is_marker(&b.1), &b.1)));
        functions.dedup_by_key(|s| s.0);
        data.retain(|s| s.0 >= kernel_start && s.0 < kernel_end);
        data.sort();
        Ok(Symbols { functions, data, kernel_start, kernel_end, cpuidle_text })
    }

    pub fn load(path: &str) -> Result<Symbols, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read sysmap={path}: {e}"))?;
        let syms = Symbols::parse(&text)?;
        if syms.functions.is_empty() {
            return Err(format!("sysmap={path}: no text symbols found (is it a System.map?)"));
        }
        Ok(syms)
    }

    /// Number of ids, including the user-space and unknown-kernel ones.
    pub fn n_ids(&self) -> usize {
        self.functions.len() + 2
    }

    pub fn user_id(&self) -> u32 {
        self.functions.len() as u32
    }

    pub fn unknown_kernel_id(&self) -> u32 {
        self.functions.len() as u32 + 1
    }

    pub fn function_of(&self, pc: u64) -> u32 {
        if pc >> 63 == 0 {
            return self.user_id();
        }
        if pc > self.kernel_end || pc < self.kernel_start {
            return self.unknown_kernel_id();
        }
        match self.functions.partition_point(|s| s.0 <= pc) {
            0 => self.unknown_kernel_id(),
            i => (i - 1) as u32,
        }
    }

    /// Every function: its id, start address and name.
    pub fn functions(&self) -> impl Iterator<Item = (u32, u64, &str)> {
        self.functions.iter().enumerate().map(|(i, (addr, name))| (i as u32, *addr, name.as_str()))
    }

    /// Whether function `id` lies in `.cpuidle.text`.
    pub fn is_cpuidle(&self, id: u32) -> bool {
        self.functions
            .get(id as usize)
            .is_some_and(|(addr, _)| (self.cpuidle_text.0..self.cpuidle_text.1).contains(addr))
    }

    pub fn name(&self, id: u32) -> &str {
        match self.functions.get(id as usize) {
            Some((_, name)) => name,
            None if id == self.user_id() => "[user]",
            None => "[kernel]",
        }
    }

    /// `symbol+0xoffset` for a kernel data address, if one covers it. Only addresses inside
    /// the kernel image (`_text` <= addr < `_end`) resolve: the direct map (x86-64
    /// `0xffff888...`, where heap objects and per-CPU copies live), vmalloc, modules and user
    /// space do not, and the caller reports the raw address instead.
    pub fn data_name(&self, addr: u64) -> Option<String> {
        if addr >> 63 == 0 || addr < self.kernel_start || addr >= self.kernel_end {
            return None;
        }
        let i = self.data.partition_point(|s| s.0 <= addr).checked_sub(1)?;
        let (start, name) = &self.data[i];
        // The object ends where the next symbol of any kind starts (or at `_end`).
        let next_data = self.data.get(i + 1).map_or(u64::MAX, |s| s.0);
        let next_func = self.functions.get(self.functions.partition_point(|s| s.0 <= *start)).map_or(u64::MAX, |s| s.0);
        if addr >= next_data.min(next_func).min(self.kernel_end) {
            return None;
        }
        Some(format!("{name}+{:#x}", addr - start))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAP: &str = "\
ffffffff81000000 T _text
ffffffff81000100 T folio_add_lru
ffffffff81000200 t lru_add_fn
ffffffff82000000 D init_task
ffffffff82001000 b some_lock
ffffffff82001040 B _end
";

    #[test]
    fn functions_and_data_resolve() {
        let s = Symbols::parse(MAP).unwrap();
        assert_eq!(s.name(s.function_of(0xffffffff81000150)), "folio_add_lru");
        assert_eq!(s.name(s.function_of(0xffffffff81000200)), "lru_add_fn");
        assert_eq!(s.name(s.function_of(0x401000)), "[user]");
        assert_eq!(s.name(s.function_of(0xffffffffc0001000)), "[kernel]");
        assert_eq!(s.data_name(0xffffffff82001008).as_deref(), Some("some_lock+0x8"));
        assert_eq!(s.data_name(0x7fff0000), None);
        assert_eq!(s.data_name(0xffffffff82001040), None); // _end itself
        let empty = Symbols::default();
        assert_eq!(empty.name(empty.function_of(0xffffffff81000000)), "[kernel]");
    }

    #[test]
    fn a_function_at_a_section_marker_keeps_its_name() {
        let map = "ffffffff81000000 T _text\n\
                   ffffffff8142d550 T __cpuidle_text_start\n\
                   ffffffff8142d550 T default_idle\n\
                   ffffffff81427240 T __sched_text_start\n\
                   ffffffff81427240 t __schedule\n\
                   ffffffff81500000 B _end\n";
        let s = Symbols::parse(map).unwrap();
        assert_eq!(s.name(s.function_of(0xffffffff8142d560)), "default_idle");
        // No __cpuidle_text_end in this map: no function counts as idle text.
        assert!(!s.is_cpuidle(s.function_of(0xffffffff8142d560)));
        let with_end = format!("{map}ffffffff8142d700 T __cpuidle_text_end\nffffffff8142d5f0 t amd_e400_idle\n");
        let s = Symbols::parse(&with_end).unwrap();
        assert!(s.is_cpuidle(s.function_of(0xffffffff8142d560)));
        assert!(s.is_cpuidle(s.function_of(0xffffffff8142d600)));
        assert!(!s.is_cpuidle(s.function_of(0xffffffff81427250)));
        assert_eq!(s.name(s.function_of(0xffffffff81427250)), "__schedule");
        assert!(is_marker("__cpuidle_text_start") && is_marker("__start___ex_table"));
        assert!(!is_marker("__schedule") && !is_marker("_text"));
    }

    /// Per-CPU symbols sit at small offsets (`__per_cpu_end` = 0x2a6e0 in a 6.1 x86-64 map)
    /// and must not "cover" the whole kernel half of the address space.
    const PERCPU_MAP: &str = "\
0000000000000000 D __per_cpu_start
0000000000015200 D cpu_number
000000000002a6e0 D __per_cpu_end
0000000001000000 A phys_startup_64
ffffffff81000000 T _stext
ffffffff81000000 T _text
ffffffff81000100 T folio_add_lru
ffffffff82000000 D init_task
ffffffff82000800 d jiffies_lock
ffffffff82001000 b some_lock
ffffffff82001040 B _end
";

    #[test]
    fn only_kernel_image_addresses_symbolize() {
        let s = Symbols::parse(PERCPU_MAP).unwrap();
        // Direct map (a heap object or a per-CPU copy): raw address, no symbol.
        assert_eq!(s.data_name(0xffff888003a1c040), None);
        assert_eq!(s.data_name(0xffff88807fc15200), None);
        // vmalloc / modules / fixmap: outside the image.
        assert_eq!(s.data_name(0xffffc90000010000), None);
        assert_eq!(s.data_name(0xffffffffc0002000), None);
        assert_eq!(s.data_name(0xffffffffff5fd000), None);
        // Inside the image, in text before the first data symbol: nothing covers it.
        assert_eq!(s.data_name(0xffffffff81000180), None);
        // Data objects: offset from the start, bounded by the next symbol and by _end.
        assert_eq!(s.data_name(0xffffffff82000010).as_deref(), Some("init_task+0x10"));
        assert_eq!(s.data_name(0xffffffff820007ff).as_deref(), Some("init_task+0x7ff"));
        assert_eq!(s.data_name(0xffffffff82000840).as_deref(), Some("jiffies_lock+0x40"));
        assert_eq!(s.data_name(0xffffffff8200103f).as_deref(), Some("some_lock+0x3f"));
        assert_eq!(s.data_name(0xffffffff82001040), None);
        // Per-CPU offsets themselves are not addresses of anything.
        assert_eq!(s.data_name(0x15200), None);
        // Code: the direct map is not code of the image.
        assert_eq!(s.name(s.function_of(0xffff888001000000)), "[kernel]");
        assert_eq!(s.name(s.function_of(0xffffffff81000104)), "folio_add_lru");
    }
}
