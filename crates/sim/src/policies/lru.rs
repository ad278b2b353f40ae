//! LRU: evict the least recently used page.
//!
//! One intrusive doubly-linked list whose `[prev, next]` links sit together
//! in one 8-byte cell per page, so a hit touches the page's cell and its two
//! neighbours' (which the engine's prefetch hint brings in early for the
//! page itself). A page outside the list has `prev == OUT`.
use crate::policy::{Access, Policy, PolicyInfo, Req};
use crate::util::{prefetch, NIL};

pub const INFO: PolicyInfo = PolicyInfo {
    name: "lru",
    summary: "least recently used",
    params: "",
    needs_future: false,
    build: |c| {
        c.params.allow("lru", &[])?;
        Ok(Box::new(Lru {
            link: vec![[OUT, NIL]; c.pages],
            head: NIL,
            tail: NIL,
            len: 0,
            cap: c.capacity,
        }))
    },
};

/// `prev` of a page that is not in the list.
const OUT: u32 = u32::MAX - 1;

struct Lru {
    /// `[prev (towards head), next (towards tail)]` per page.
    link: Vec<[u32; 2]>,
    head: u32,
    tail: u32,
    len: usize,
    cap: usize,
}

impl Lru {
    #[inline]
    fn unlink(&mut self, id: u32) {
        let [p, n] = self.link[id as usize];
        if p != NIL {
            self.link[p as usize][1] = n;
        } else {
            self.head = n;
        }
        if n != NIL {
            self.link[n as usize][0] = p;
        } else {
            self.tail = p;
        }
    }
    #[inline]
    fn push_front(&mut self, id: u32) {
        let h = self.head;
        self.link[id as usize] = [NIL, h];
        if h != NIL {
            self.link[h as usize][0] = id;
        } else {
            self.tail = id;
        }
        self.head = id;
    }
}

impl Policy for Lru {
    #[inline]
    fn access(&mut self, id: u32, _req: &Req) -> Access {
        if self.link[id as usize][0] != OUT {
            if self.head != id {
                self.unlink(id);
                self.push_front(id);
            }
            return Access::Hit;
        }
        let victim = if self.len >= self.cap {
            let v = self.tail;
            self.unlink(v);
            self.link[v as usize][0] = OUT;
            Some(v)
        } else {
            self.len += 1;
            None
        };
        self.push_front(id);
        Access::Miss { victim }
    }
    #[inline]
    fn prefetch(&self, id: u32) {
        prefetch(self.link.as_ptr().wrapping_add(id as usize));
    }
    fn bytes_per_page(&self) -> usize {
        8
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::testutil::*;
    #[test]
    fn hand_worked() {
        // cap 3: 1 2 3 1 4 (evicts 2) 2 (miss, evicts 3) 1 (hit) 3 (miss, evicts 4)
        assert_eq!(
            hits("lru", 3, &[1, 2, 3, 1, 4, 2, 1, 3]),
            vec![false, false, false, true, false, false, true, false]
        );
        // The loop pattern larger than memory misses every time under LRU.
        let lp: Vec<u64> = (0..10).cycle().take(100).collect();
        assert_eq!(misses("lru", 9, &lp), 100);
        // Capacity 1: only immediate re-references hit.
        assert_eq!(
            hits("lru", 1, &[5, 5, 6, 5, 5]),
            vec![false, true, false, false, true]
        );
    }
    #[test]
    fn contract() {
        contract_all("lru");
    }
}
