//! Doubly linked lists threaded through index arrays: O(1) push, remove and move-to-front,
//! no allocation after construction. Several lists may share one `Links` (a slot is on at
//! most one list at a time). Each node also carries the policy's per-slot data (page key,
//! dirty bit, one spare counter) so that one request touches as few cache lines as possible.

use crate::meter::{Dev, Meter};
use crate::pagemap::PageMap;

pub const NIL: u32 = u32::MAX;

/// How many nodes at the LRU end a policy prefetches for after an eviction (see
/// [`Links::prefetch_lru_end`]).
pub const EVICT_AHEAD: usize = 3;

/// Below this many nodes the policy state stays in the CPU caches and the eviction prefetch
/// only costs instructions (measured: 5-14% slower LRU at 5k frames), so it is skipped.
pub const EVICT_PREFETCH_MIN_NODES: usize = 1 << 15;

/// One slot: links plus the policy's data for the page in it.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(32))]
pub struct Node {
    pub key: u64,
    prev: u32,
    next: u32,
    /// Policy-defined (reference count, queue id, ...).
    pub aux: u32,
    /// Policy-defined (the frame holding the page, when nodes are not frames).
    pub frame: u32,
    pub dirty: bool,
    /// The last request for the page was a foreground one.
    pub fg: bool,
}

/// The links of `n` slots.
pub struct Links {
    n: Vec<Node>,
}

/// One list: `head` is the MRU end, `tail` the LRU end.
#[derive(Clone, Copy, Debug)]
pub struct List {
    pub head: u32,
    pub tail: u32,
    pub len: usize,
}

impl Default for List {
    fn default() -> Self {
        List { head: NIL, tail: NIL, len: 0 }
    }
}

impl List {
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Links {
    pub fn new(n: usize) -> Links {
        Links {
            n: crate::mem::filled(
                n,
                Node { key: 0, prev: NIL, next: NIL, aux: 0, frame: 0, dirty: false, fg: false },
            ),
        }
    }

    /// Hint the CPU to fetch node `i`.
    #[inline]
    pub fn prefetch(&self, i: u32) {
        crate::pagemap::prefetch_ptr(self.n.as_ptr().wrapping_add(i as usize));
    }

    /// Hint the CPU to fetch the list neighbours of node `i` (it should be cached itself).
    #[inline]
    pub fn prefetch_neighbors(&self, i: u32) {
        let n = &self.n[i as usize];
        for j in [n.prev, n.next] {
            if j != NIL {
                self.prefetch(j);
            }
        }
    }

    /// For the slot `map` gives `key`, if it is resident: hint the CPU to fetch its node.
    #[inline]
    pub fn prefetch_slot_of(&self, map: &PageMap, key: u64) {
        if let Some(s) = map.get(key) {
            self.prefetch(s);
        }
    }

    /// For the slot `map` gives `key`, if it is resident: hint the CPU to fetch its list
    /// neighbours. Returns false for a key that is not resident (a miss is coming).
    #[inline]
    pub fn prefetch_neighbors_of(&self, map: &PageMap, key: u64) -> bool {
        match map.get(key) {
            Some(s) => {
                self.prefetch_neighbors(s);
                true
            }
            None => false,
        }
    }

    /// Hint the CPU to fetch what evicting the tail of `l` will touch: the tail's predecessor
    /// and the hash bucket of the tail's key (through `bucket`).
    #[inline]
    pub fn prefetch_tail(&self, l: &List, bucket: impl Fn(u64)) {
        if l.tail != NIL {
            let t = &self.n[l.tail as usize];
            if t.prev != NIL {
                self.prefetch(t.prev);
            }
            bucket(t.key);
        }
    }

    /// Hint the CPU to fetch what the next evictions from the LRU end of `l` will touch: `f`
    /// is called on each of the `depth` nodes (index, node) nearest the LRU end (to prefetch, say, their
    /// hash buckets), and the node after them is prefetched. Called after every eviction,
    /// the nodes walked were prefetched by earlier calls, so the walk itself rarely stalls.
    #[inline]
    pub fn prefetch_lru_end(&self, l: &List, depth: usize, f: impl Fn(u32, &Node)) {
        if self.n.len() < EVICT_PREFETCH_MIN_NODES {
            return;
        }
        let mut i = l.tail;
        for _ in 0..depth {
            if i == NIL {
                return;
            }
            let n = &self.n[i as usize];
            f(i, n);
            i = n.prev;
        }
        if i != NIL {
            self.prefetch(i);
        }
    }

    /// The request's own read or write, on the page of node `i` in `frame` of `dev`: counted by
    /// `m`, and the node's dirty bit (set by a write) and request class updated.
    #[inline]
    pub fn access(&mut self, m: &mut Meter, i: u32, dev: Dev, frame: u32, write: bool, fg: bool) {
        m.access(dev, frame, write);
        let n = &mut self.n[i as usize];
        n.dirty |= write;
        n.fg = fg;
    }

    #[inline]
    pub fn node(&self, i: u32) -> &Node {
        &self.n[i as usize]
    }

    #[inline]
    pub fn node_mut(&mut self, i: u32) -> &mut Node {
        &mut self.n[i as usize]
    }

    /// Set the page data of slot `i` (links untouched).
    #[inline]
    pub fn set(&mut self, i: u32, key: u64, dirty: bool, aux: u32) {
        let n = &mut self.n[i as usize];
        n.key = key;
        n.dirty = dirty;
        n.aux = aux;
    }

    #[inline]
    pub fn push_front(&mut self, l: &mut List, i: u32) {
        let iu = i as usize;
        self.n[iu].prev = NIL;
        self.n[iu].next = l.head;
        if l.head != NIL {
            self.n[l.head as usize].prev = i;
        } else {
            l.tail = i;
        }
        l.head = i;
        l.len += 1;
    }

    #[inline]
    pub fn remove(&mut self, l: &mut List, i: u32) {
        let iu = i as usize;
        let (p, n) = (self.n[iu].prev, self.n[iu].next);
        if p != NIL {
            self.n[p as usize].next = n;
        } else {
            l.head = n;
        }
        if n != NIL {
            self.n[n as usize].prev = p;
        } else {
            l.tail = p;
        }
        l.len -= 1;
    }

    #[inline]
    pub fn move_to_front(&mut self, l: &mut List, i: u32) {
        if l.head != i {
            self.remove(l, i);
            self.push_front(l, i);
        }
    }

    /// Slots from MRU to LRU (for tests and debugging).
    pub fn iter(&self, l: &List) -> Vec<u32> {
        let mut out = Vec::with_capacity(l.len);
        let mut i = l.head;
        while i != NIL {
            out.push(i);
            i = self.n[i as usize].next;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_remove_move() {
        let mut links = Links::new(4);
        let mut l = List::default();
        for i in 0..4 {
            links.push_front(&mut l, i);
        }
        assert_eq!(links.iter(&l), vec![3, 2, 1, 0]);
        links.move_to_front(&mut l, 0);
        assert_eq!(links.iter(&l), vec![0, 3, 2, 1]);
        links.remove(&mut l, 2);
        assert_eq!(links.iter(&l), vec![0, 3, 1]);
        assert_eq!((l.head, l.tail, l.len), (0, 1, 3));
        links.remove(&mut l, 1);
        links.remove(&mut l, 0);
        links.remove(&mut l, 3);
        assert!(l.is_empty());
        assert_eq!((l.head, l.tail), (NIL, NIL));
    }
}
