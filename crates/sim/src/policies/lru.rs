//! LRU: evict the least recently used page. One intrusive list.
use crate::policy::{Access, Policy, PolicyInfo, Req};
use crate::util::Lists;

pub const INFO: PolicyInfo = PolicyInfo {
    name: "lru",
    summary: "least recently used",
    params: "",
    needs_future: false,
    build: |c| {
        c.params.allow("lru", &[])?;
        Ok(Box::new(Lru {
            list: Lists::new(1, c.pages),
            cap: c.capacity,
        }))
    },
};

struct Lru {
    list: Lists,
    cap: usize,
}

impl Policy for Lru {
    #[inline]
    fn access(&mut self, id: u32, _req: &Req) -> Access {
        if self.list.contains(0, id) {
            self.list.move_front(0, id);
            return Access::Hit;
        }
        let victim = if self.list.len(0) >= self.cap {
            self.list.pop_back(0)
        } else {
            None
        };
        self.list.push_front(0, id);
        Access::Miss { victim }
    }
    fn bytes_per_page(&self) -> usize {
        Lists::BYTES_PER_PAGE
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
    }
    #[test]
    fn contract() {
        contract_all("lru");
    }
}
