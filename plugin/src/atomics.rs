//! Which guest instructions are atomic read-modify-writes, decided from their bytes at
//! translation time. Under TCG such an instruction reaches the plugin as a load and then a
//! store; the model treats the pair as one ownership request (`Machine::access_rmw`).

use crate::roi::Isa;

/// x86 legacy prefixes that may precede LOCK or the opcode (segment, size, REP).
const X86_PREFIXES: [u8; 10] = [0xf0, 0xf2, 0xf3, 0x2e, 0x36, 0x3e, 0x26, 0x64, 0x65, 0x66];

pub fn is_atomic(isa: Isa, bytes: &[u8]) -> bool {
    match isa {
        Isa::X86_64 => x86_atomic(bytes),
        Isa::Arm64 => bytes.len() == 4 && arm64_atomic(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])),
        Isa::Other => false,
    }
}

/// A LOCK-prefixed instruction (LOCK is only valid on read-modify-writes of memory), or XCHG
/// with a memory operand, which is locked without the prefix.
fn x86_atomic(bytes: &[u8]) -> bool {
    let mut i = 0;
    let mut lock = false;
    while i < bytes.len() && (X86_PREFIXES.contains(&bytes[i]) || bytes[i] == 0x67) {
        lock |= bytes[i] == 0xf0;
        i += 1;
    }
    if lock {
        return true;
    }
    if i < bytes.len() && bytes[i] & 0xf0 == 0x40 {
        i += 1; // REX
    }
    match (bytes.get(i), bytes.get(i + 1)) {
        (Some(0x86 | 0x87), Some(&modrm)) => modrm >> 6 != 3,
        _ => false,
    }
}

/// Load/store-exclusive (LDXR/STXR/LDAXR/STLXR and pairs), compare-and-swap (CAS, CASP) and the
/// LSE atomic memory operations (LDADD, LDCLR, LDEOR, LDSET, LD{S,U}{MAX,MIN}, SWP). Not the
/// plain acquire/release accesses (LDAR, STLR, LDAPR) that share their encoding groups.
fn arm64_atomic(insn: u32) -> bool {
    if insn & 0x3f00_0000 == 0x0800_0000 {
        let o2 = insn >> 23 & 1;
        let o1 = insn >> 21 & 1;
        return o2 == 0 || o1 == 1;
    }
    if insn & 0x3f20_0c00 == 0x3820_0000 {
        let o3 = insn >> 15 & 1;
        let opc = insn >> 12 & 7;
        return o3 == 0 || opc == 0;
    }
    false
}
