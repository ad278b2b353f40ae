#!/usr/bin/env python3
"""Miss counts of the peer (libCacheSim, via its PyPI package `libcachesim`)
on an oracleGeneral trace, every object counted as one page
(ignore_obj_size), no warm-up. Provenance of the numbers in
crates/sim/tests/it/peer.rs.

usage: peer_misses.py TRACE.oracleGeneral[.zst] POLICY[,POLICY...] SIZE[,SIZE...]
prints one line per (policy, size): policy size misses requests
"""
import sys

import libcachesim as lcs

POLICIES = {
    "lru": lcs.LRU, "fifo": lcs.FIFO, "arc": lcs.ARC, "lirs": lcs.LIRS,
    "sieve": lcs.Sieve, "s3fifo": lcs.S3FIFO, "clock": lcs.Clock,
    "2q": lcs.TwoQ, "lfu": lcs.LFU, "opt": lcs.Belady,
}


def main():
    path, policies, sizes = sys.argv[1], sys.argv[2].split(","), sys.argv[3].split(",")
    params = lcs.ReaderInitParam(ignore_obj_size=True)
    reader = lcs.TraceReader(path, lcs.TraceType.ORACLE_GENERAL_TRACE, reader_init_params=params)
    for pol in policies:
        for size in sizes:
            cache = POLICIES[pol](int(size))
            reader.reset()
            n = hits = 0
            mr, _ = cache.process_trace(reader)
            n = reader.get_num_of_req() if hasattr(reader, "get_num_of_req") else 0
            print(pol, size, round(mr * n), n, mr, flush=True)


if __name__ == "__main__":
    main()
