//! Building blocks shared by policies.

/// "No page" in intrusive lists.
pub const NIL: u32 = u32::MAX;

/// Up to 255 intrusive doubly-linked lists over the same set of page ids: a
/// page is in at most one list at a time. Lists are ordered head (most
/// recent, "front") to tail ("back"). 9 bytes per page. Every operation is O(1).
#[derive(Debug, Clone)]
pub struct Lists {
    prev: Vec<u32>,
    next: Vec<u32>,
    /// List of each page, or `NONE`.
    which: Vec<u8>,
    head: Vec<u32>,
    tail: Vec<u32>,
    len: Vec<usize>,
}

impl Lists {
    pub const NONE: u8 = u8::MAX;
    pub const BYTES_PER_PAGE: usize = 9;

    /// `lists` lists over pages `0..pages`.
    pub fn new(lists: usize, pages: usize) -> Self {
        assert!(lists < 255);
        Lists {
            prev: vec![NIL; pages],
            next: vec![NIL; pages],
            which: vec![Self::NONE; pages],
            head: vec![NIL; lists],
            tail: vec![NIL; lists],
            len: vec![0; lists],
        }
    }
    /// The list that holds `id`, or None.
    #[inline]
    pub fn which(&self, id: u32) -> Option<u8> {
        let w = self.which[id as usize];
        (w != Self::NONE).then_some(w)
    }
    #[inline]
    pub fn contains(&self, list: u8, id: u32) -> bool {
        self.which[id as usize] == list
    }
    #[inline]
    pub fn len(&self, list: u8) -> usize {
        self.len[list as usize]
    }
    #[inline]
    pub fn is_empty(&self, list: u8) -> bool {
        self.len[list as usize] == 0
    }
    /// The most recently inserted end.
    #[inline]
    pub fn front(&self, list: u8) -> Option<u32> {
        let h = self.head[list as usize];
        (h != NIL).then_some(h)
    }
    /// The oldest end.
    #[inline]
    pub fn back(&self, list: u8) -> Option<u32> {
        let t = self.tail[list as usize];
        (t != NIL).then_some(t)
    }
    /// The neighbour of `id` towards the front.
    #[inline]
    pub fn prev(&self, id: u32) -> Option<u32> {
        let p = self.prev[id as usize];
        (p != NIL).then_some(p)
    }
    /// Inserts `id` (which must be in no list) at the front of `list`.
    #[inline]
    pub fn push_front(&mut self, list: u8, id: u32) {
        debug_assert_eq!(self.which[id as usize], Self::NONE);
        let l = list as usize;
        let h = self.head[l];
        self.prev[id as usize] = NIL;
        self.next[id as usize] = h;
        if h != NIL {
            self.prev[h as usize] = id;
        } else {
            self.tail[l] = id;
        }
        self.head[l] = id;
        self.which[id as usize] = list;
        self.len[l] += 1;
    }
    /// Inserts `id` (which must be in no list) at the back of `list`.
    #[inline]
    pub fn push_back(&mut self, list: u8, id: u32) {
        debug_assert_eq!(self.which[id as usize], Self::NONE);
        let l = list as usize;
        let t = self.tail[l];
        self.next[id as usize] = NIL;
        self.prev[id as usize] = t;
        if t != NIL {
            self.next[t as usize] = id;
        } else {
            self.head[l] = id;
        }
        self.tail[l] = id;
        self.which[id as usize] = list;
        self.len[l] += 1;
    }
    /// Removes `id` from whatever list holds it (no-op if none).
    #[inline]
    pub fn remove(&mut self, id: u32) {
        let w = self.which[id as usize];
        if w == Self::NONE {
            return;
        }
        let l = w as usize;
        let (p, n) = (self.prev[id as usize], self.next[id as usize]);
        if p != NIL {
            self.next[p as usize] = n;
        } else {
            self.head[l] = n;
        }
        if n != NIL {
            self.prev[n as usize] = p;
        } else {
            self.tail[l] = p;
        }
        self.which[id as usize] = Self::NONE;
        self.len[l] -= 1;
    }
    /// Removes and returns the back (oldest) of `list`.
    #[inline]
    pub fn pop_back(&mut self, list: u8) -> Option<u32> {
        let t = self.back(list)?;
        self.remove(t);
        Some(t)
    }
    /// Moves `id` (in any list or none) to the front of `list`.
    #[inline]
    pub fn move_front(&mut self, list: u8, id: u32) {
        self.remove(id);
        self.push_front(list, id);
    }
    /// Moves `id` (in any list or none) to the back of `list`.
    #[inline]
    pub fn move_back(&mut self, list: u8, id: u32) {
        self.remove(id);
        self.push_back(list, id);
    }
}

/// A small, fast, deterministic random number generator (SplitMix64) for
/// policies that draw (BRRIP's 1/32 insertion, DRRIP's sampling). Its
/// sequence is fixed forever, so results stay reproducible across versions.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x5DEE_CE66_D1CE_4E5B)
    }
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// True with probability 1/n.
    #[inline]
    pub fn one_in(&mut self, n: u64) -> bool {
        self.next_u64().is_multiple_of(n)
    }
}

/// A per-page array of `len` copies of `value`, in transparent huge pages
/// where the kernel gives them.
///
/// The simulator's per-page arrays (the engine's state bits, LRU's queue
/// positions, CLOCK's bitmaps) are read at random, one page id after
/// another, and on a large trace they are tens to hundreds of MB: with 4
/// KiB pages nearly every access then also misses the TLB, and the page
/// walk is paid even by the software prefetch meant to hide the access
/// (profiled on 20 M pages: LRU's prefetch of its position array, and
/// its queue filter, spent most of their time there). Linux gives huge
/// pages to anonymous memory only after `madvise(MADV_HUGEPAGE)` in its
/// common `madvise` mode, so the array is allocated, advised and only
/// then filled (the fill faults the huge pages in). Small arrays (below
/// 4 MiB) and other systems: a plain `vec!`. The advice is a hint: when
/// the kernel refuses it, nothing changes but speed.
pub fn page_array<T: Copy>(value: T, len: usize) -> Vec<T> {
    let mut v = Vec::with_capacity(len);
    let bytes = len.saturating_mul(std::mem::size_of::<T>());
    #[cfg(target_os = "linux")]
    if bytes >= 4 << 20 {
        const HUGE: usize = 2 << 20;
        let at = v.as_ptr() as usize;
        // The 2 MiB-aligned part of the allocation (madvise needs an
        // aligned start; huge pages only ever cover aligned 2 MiB anyway).
        let start = at.next_multiple_of(HUGE);
        let end = (at + bytes) & !(HUGE - 1);
        if end > start {
            // SAFETY: [start, end) lies inside the allocation `v` owns
            // (capacity `len` elements, `bytes` bytes from `at`), and
            // MADV_HUGEPAGE changes only how the kernel backs those pages,
            // never their contents or the mapping's permissions.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = bytes;
    v.resize(len, value);
    v
}

/// A hint to the CPU to bring `p`'s cache line in (no-op off x86-64).
/// Never faults, whatever the address.
#[inline(always)]
pub fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE is part of the x86-64 baseline, and a prefetch is only a
    // hint: it never faults and reads nothing the program can observe.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p as *const i8)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// A 64-bit mixing hash of a page id (for sampling: SHARDS, DRRIP's leader sets).
#[inline]
pub fn hash64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    /// Above the huge-page threshold (advised, then filled) and below it,
    /// the array holds `len` copies of the value.
    #[test]
    fn page_arrays_hold_the_value() {
        for len in [0, 1, 1000, (5 << 20) / 4 + 3] {
            let v = page_array(u32::MAX, len);
            assert_eq!(v.len(), len);
            assert!(v.iter().all(|&x| x == u32::MAX));
        }
        let z = page_array(0u64, 3 << 20);
        assert!(z.iter().all(|&x| x == 0));
    }
    #[test]
    fn lists_keep_order_and_membership() {
        let mut l = Lists::new(2, 10);
        l.push_front(0, 1);
        l.push_front(0, 2);
        l.push_back(0, 3); // 2 1 3
        l.push_front(1, 4);
        assert_eq!(
            (l.front(0), l.back(0), l.len(0), l.len(1)),
            (Some(2), Some(3), 3, 1)
        );
        l.move_front(1, 1); // list0: 2 3, list1: 1 4
        assert_eq!(l.which(1), Some(1));
        assert_eq!(l.pop_back(0), Some(3));
        assert_eq!(l.pop_back(0), Some(2));
        assert_eq!(l.pop_back(0), None);
        assert_eq!(l.back(1), Some(4));
        assert_eq!(l.prev(4), Some(1));
        l.remove(7); // not in a list: no-op
        assert_eq!(l.which(7), None);
    }
}
