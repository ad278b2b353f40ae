//! Intrusive doubly-linked lists over dense page ids whose links are stored
//! together (`[prev, next]` in one 8-byte cell per page), for policies that
//! already track in their own per-page state which list a page is on
//! (`linux`, `linux-rrip`, `s3fifo`, `lirs`). Compared with
//! [`crate::util::Lists`] (separate `prev`, `next` and `which` arrays),
//! unlinking touches 3 cache lines instead of about 5 and linking 2 instead
//! of 4, which is most of the cost of these policies on large traces.
//!
//! The caller must pass the list a page is on; a page is in at most one
//! list of a `Links`. 8 bytes per page. Every operation is O(1).
use crate::util::NIL;

pub(crate) struct Links {
    /// `[prev, next]` of each page; prev points towards the front (head).
    link: Vec<[u32; 2]>,
    head: Vec<u32>,
    tail: Vec<u32>,
    len: Vec<usize>,
}

impl Links {
    pub(crate) const BYTES_PER_PAGE: usize = 8;

    /// `lists` lists over pages `0..pages`.
    pub(crate) fn new(lists: usize, pages: usize) -> Self {
        Links {
            link: vec![[NIL, NIL]; pages],
            head: vec![NIL; lists],
            tail: vec![NIL; lists],
            len: vec![0; lists],
        }
    }
    #[inline]
    pub(crate) fn len(&self, list: usize) -> usize {
        self.len[list]
    }
    /// The oldest end of `list`.
    #[inline]
    pub(crate) fn back(&self, list: usize) -> Option<u32> {
        let t = self.tail[list];
        (t != NIL).then_some(t)
    }
    /// Inserts `id` (in no list) at the front of `list`.
    #[inline]
    pub(crate) fn push_front(&mut self, list: usize, id: u32) {
        let h = self.head[list];
        self.link[id as usize] = [NIL, h];
        if h != NIL {
            self.link[h as usize][0] = id;
        } else {
            self.tail[list] = id;
        }
        self.head[list] = id;
        self.len[list] += 1;
    }
    /// Removes `id` from `list`, which must hold it.
    #[inline]
    pub(crate) fn remove(&mut self, list: usize, id: u32) {
        let [p, n] = self.link[id as usize];
        if p != NIL {
            self.link[p as usize][1] = n;
        } else {
            self.head[list] = n;
        }
        if n != NIL {
            self.link[n as usize][0] = p;
        } else {
            self.tail[list] = p;
        }
        self.len[list] -= 1;
    }
    /// Moves `id` from list `from` (which holds it) to the front of `to`.
    #[inline]
    pub(crate) fn move_front(&mut self, from: usize, to: usize, id: u32) {
        if self.head[to] == id {
            return; // already at the front of `to` (so from == to)
        }
        self.remove(from, id);
        self.push_front(to, id);
    }
    /// Removes and returns the back of `list`.
    #[inline]
    pub(crate) fn pop_back(&mut self, list: usize) -> Option<u32> {
        let t = self.back(list)?;
        self.remove(list, t);
        Some(t)
    }
    /// The members of `list`, front first.
    #[cfg(test)]
    pub(crate) fn contents(&self, list: usize) -> Vec<u32> {
        let mut out = Vec::new();
        let mut x = self.head[list];
        while x != NIL {
            out.push(x);
            x = self.link[x as usize][1];
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(l: &Links, list: usize) -> Vec<u32> {
        // Walk from the back through prev links, then reverse: front first.
        let mut out = Vec::new();
        let mut x = l.tail[list];
        while x != NIL {
            out.push(x);
            x = l.link[x as usize][0];
        }
        out.reverse();
        // The forward walk must agree.
        let mut fwd = Vec::new();
        let mut x = l.head[list];
        while x != NIL {
            fwd.push(x);
            x = l.link[x as usize][1];
        }
        assert_eq!(out, fwd);
        assert_eq!(out.len(), l.len(list));
        out
    }

    #[test]
    fn links_keep_order() {
        let mut l = Links::new(2, 10);
        l.push_front(0, 1);
        l.push_front(0, 2);
        l.push_front(0, 3); // 3 2 1
        l.push_front(1, 4);
        assert_eq!(order(&l, 0), vec![3, 2, 1]);
        l.move_front(0, 0, 1); // 1 3 2
        assert_eq!(order(&l, 0), vec![1, 3, 2]);
        l.move_front(0, 0, 1); // already at the front
        assert_eq!(order(&l, 0), vec![1, 3, 2]);
        l.move_front(0, 1, 3); // list0: 1 2, list1: 3 4
        assert_eq!((order(&l, 0), order(&l, 1)), (vec![1, 2], vec![3, 4]));
        assert_eq!(l.pop_back(1), Some(4));
        assert_eq!(l.pop_back(1), Some(3));
        assert_eq!(l.pop_back(1), None);
        l.remove(0, 1);
        assert_eq!(order(&l, 0), vec![2]);
        assert_eq!(l.back(0), Some(2));
        l.remove(0, 2);
        assert_eq!((l.len(0), l.back(0)), (0, None));
    }
}
