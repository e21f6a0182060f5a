//! Kernel symbols from System.map: guest PCs -> function, data addresses -> object.
//! Symbol ids index `functions`; two extra ids stand for user space and unknown kernel code.

#[derive(Default)]
pub struct Symbols {
    /// Sorted text symbols (t/T/w/W): start address and name.
    functions: Vec<(u64, String)>,
    /// Sorted data symbols (d/D/b/B/r/R).
    data: Vec<(u64, String)>,
    /// End of the kernel image (`_end`, else the last symbol).
    kernel_end: u64,
}

impl Symbols {
    pub fn parse(text: &str) -> Result<Symbols, String> {
        let mut functions = Vec::new();
        let mut data = Vec::new();
        let mut kernel_end = 0;
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
            if name == "_end" || (addr > kernel_end && addr >> 63 == 1) {
                kernel_end = kernel_end.max(addr);
            }
        }
        functions.sort();
        functions.dedup_by_key(|s| s.0);
        data.sort();
        Ok(Symbols { functions, data, kernel_end })
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
        if pc > self.kernel_end {
            return self.unknown_kernel_id();
        }
        match self.functions.partition_point(|s| s.0 <= pc) {
            0 => self.unknown_kernel_id(),
            i => (i - 1) as u32,
        }
    }

    pub fn name(&self, id: u32) -> &str {
        match self.functions.get(id as usize) {
            Some((_, name)) => name,
            None if id == self.user_id() => "[user]",
            None => "[kernel]",
        }
    }

    /// `symbol+0xoffset` for a kernel data address, if one covers it.
    pub fn data_name(&self, addr: u64) -> Option<String> {
        if addr >> 63 == 0 || addr > self.kernel_end {
            return None;
        }
        let i = self.data.partition_point(|s| s.0 <= addr).checked_sub(1)?;
        let (start, name) = &self.data[i];
        // The object ends where the next symbol of any kind starts.
        let next_data = self.data.get(i + 1).map_or(u64::MAX, |s| s.0);
        let next_func = self.functions.get(self.functions.partition_point(|s| s.0 <= *start)).map_or(u64::MAX, |s| s.0);
        if addr >= next_data.min(next_func) {
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
        let empty = Symbols::default();
        assert_eq!(empty.name(empty.function_of(0xffffffff81000000)), "[kernel]");
    }
}
