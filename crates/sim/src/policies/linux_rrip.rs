//! Linux's two lists (see [`linux`](super::linux), Linux 6.1 classic LRU)
//! with the active list aged by re-reference prediction values (RRPV,
//! M bits, param `m=`, 1..=8, default 2) instead of plain LRU order.
//!
//! * A hit on an active page sets its RRPV to 0 (the simulator sees every
//!   reference; hits on inactive pages set the young bit as in `linux`).
//! * A page entering the active list — activated at the inactive tail by
//!   `folio_check_references()`, or activated on refault — gets RRPV
//!   2^M − 2 ("long" re-reference interval).
//! * Deactivation (while `inactive × ratio < active`) scans the active
//!   tail: a page whose RRPV is 2^M − 1 is deactivated (to the inactive
//!   head, young bit cleared, `PG_referenced` kept, as in `linux`);
//!   otherwise its RRPV is incremented and it is rotated to the active head.
//!   So deactivation picks the least recently rotated page among those
//!   predicted to be re-referenced furthest in the future.
//!
//! Everything else — faults, the inactive list, refault activation
//! (`refault=`), the inactive ratio (`ratio=`) and every simplification — is
//! exactly as in `linux`; the two share one implementation.
use super::linux::TwoLists;
use crate::policy::PolicyInfo;

pub const INFO: PolicyInfo = PolicyInfo {
    name: "linux-rrip",
    summary: "Linux's two lists with the active list aged by RRPV",
    params: "m=N (RRPV bits 1-8, default 2), ratio=N, refault=0|1 (as in linux)",
    needs_future: false,
    build: |c| {
        c.params.allow("linux-rrip", &["m", "ratio", "refault"])?;
        let m = c.params.int("m", 2, 1, 8)? as u32;
        Ok(Box::new(TwoLists::<true>::new(c, m, false)?))
    },
};

#[cfg(test)]
mod tests {
    use crate::engine::testutil::*;
    use crate::error::SimError;

    const A: u64 = 1;
    const B: u64 = 2;
    const C: u64 = 3;
    const D: u64 = 4;
    const E: u64 = 5;
    const F: u64 = 6;
    const G: u64 = 7;

    #[test]
    fn hand_worked_rrpv_protects_a_page_hit_while_active() {
        // cap 3 (ratio 1), m=2 (max RRPV 3, promotion sets 2), refault off.
        // I/A = inactive/active list, head first; Y = young, R = PG_referenced.
        //  1-3 a b c: I [c b a], all Y.
        //  4 d: a, b, c rotated (R set, Y clear), a evicted. I [d c b].
        //  5 b: Y.
        //  6 e: tail b: Y+R -> activated, A [b] (RRPV 2). 2*1 < 1 no.
        //       tail c: Y clear -> evicted. I [e d].
        //  7 b: hit on an active page: RRPV 0 (linux: no change of order).
        //  8 f: tail d: Y, no R -> rotated (R set); e likewise; d evicted.
        //       I [f e]; e has R, no Y.
        //  9 e: Y.
        // 10 g: tail e: Y+R -> activated: A [e b], e RRPV 2, b RRPV 0.
        //       I [f]: 1*1 < 2 is low, deactivate:
        //       linux: the active tail b goes: I [b f], A [e].
        //       linux-rrip: b 0->1 rotated, A [b e]; e 2->3 rotated, A [e b];
        //       b 1->2 rotated, A [b e]; e is at 3: deactivated: I [e f], A [b].
        //       Then tail f: Y, no R -> rotated; the deactivated page (Y clear)
        //       is evicted: linux evicts b, linux-rrip evicts e.
        // 11 b: linux miss, linux-rrip hit (active).
        // 12 e: linux hit (active), linux-rrip miss.
        let t = [A, B, C, D, B, E, B, F, E, G, B, E];
        let m = false;
        let h = true;
        let mut common = vec![m, m, m, m, h, m, h, m, h, m];
        let mut rrip = common.clone();
        rrip.extend([h, m]);
        common.extend([m, h]);
        assert_eq!(hits("linux-rrip:refault=0", 3, &t), rrip);
        assert_eq!(hits("linux:refault=0", 3, &t), common);
    }

    #[test]
    fn hand_worked_one_bit_rrpv() {
        // m=1: max RRPV 1, promotion sets 0. Same trace up to step 10:
        // A [e b] with e RRPV 0 (promoted) and b RRPV 0 (hit). Deactivation:
        // b 0->1 rotated, A [b e]; e 0->1 rotated, A [e b]; b at 1:
        // deactivated. So with one bit the RRPV of both is equal and the
        // order is LRU-like again: b is evicted, as under linux.
        let t = [A, B, C, D, B, E, B, F, E, G, B, E];
        let got = hits("linux-rrip:m=1:refault=0", 3, &t);
        assert_eq!(&got[10..], &[false, true]);
    }

    fn build(spec: &str) -> Result<usize, SimError> {
        crate::engine::testutil::build_bytes(spec, 4, 10)
    }

    #[test]
    fn params_are_checked() {
        // Flags 1 + RRPV 1 + shadow age 4; the queues are still empty.
        assert_eq!(build("linux-rrip").unwrap(), 6);
        assert!(build("linux-rrip:m=8").is_ok());
        assert!(build("linux-rrip:m=0").is_err());
        assert!(build("linux-rrip:m=9").is_err());
        assert!(build("linux-rrip:ratio=0").is_err());
        assert!(build("linux-rrip:eps=1").is_err());
    }

    #[test]
    fn contract() {
        contract_all("linux-rrip");
        contract_all("linux-rrip:m=1:refault=0");
        contract_all("linux-rrip:m=8:ratio=4");
    }
}
