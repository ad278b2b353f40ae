/* genome: synthetic genome-assembly hash table (little locality).
 *
 * Setup: a random reference genome (ACGT, 2-bit packed) and reads of 150
 * bases sampled from it with 0.1 % substitution errors; every k-mer (k=31,
 * 62-bit encoded) of every read is counted in an open-addressing hash table
 * (linear probing, 16-byte slots).  Sizes: the table takes 90 % of SIZE and
 * holds genome-length/table-slots = 0.5; the reads take the rest (about
 * 12x coverage), the packed genome about 0.16 %.
 *
 * Work: contig extension.  From a random seed k-mer of the genome, look up
 * the 4 possible successor k-mers and follow the only solid one (count >= 2);
 * stop at a branch, a dead end or a random length limit (64..1023), then take
 * a new seed.  Every table lookup is a probe; work = probes (default
 * 2 x table slots, about 2.6 s at 64M including the setup). */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>

#define K 31
#define KMER_MASK ((1ULL << (2 * K)) - 1)
#define OCCUPIED (1ULL << 63)
#define READ_LEN 150
#define READ_WORDS 5            /* 160 bases of capacity, 40 bytes */
#define ERROR_PER_MILLE 1       /* 0.1 % substitutions */
#define SOLID 2

struct slot {
    uint64_t key;   /* kmer | OCCUPIED, 0 = empty */
    uint64_t count;
};

struct table {
    struct slot *s;
    uint64_t cap;
    uint64_t used;
};

static inline uint64_t kmer_hash(uint64_t kmer)
{
    return mix64(kmer * 0xd6e8feb86659fd93ULL);
}

static int table_add(struct table *t, uint64_t kmer)
{
    uint64_t key = kmer | OCCUPIED;
    uint64_t i = fastrange64(kmer_hash(kmer), t->cap);
    for (;;) {
        struct slot *s = &t->s[i];
        REF(&s->key, 0);
        if (s->key == key) {
            REF(&s->count, 0);
            REF(&s->count, 1);
            s->count++;
            return 0;
        }
        if (s->key == 0) {
            if (t->used + 1 >= t->cap)
                return -1;
            REF(&s->key, 1);
            s->key = key;
            REF(&s->count, 1);
            s->count = 1;
            t->used++;
            return 0;
        }
        if (++i == t->cap)
            i = 0;
    }
}

static inline uint64_t table_get(const struct table *t, uint64_t kmer)
{
    uint64_t key = kmer | OCCUPIED;
    uint64_t i = fastrange64(kmer_hash(kmer), t->cap);
    for (;;) {
        const struct slot *s = &t->s[i];
        REF(&s->key, 0);
        if (s->key == key) {
            REF(&s->count, 0);
            return s->count;
        }
        if (s->key == 0)
            return 0;
        if (++i == t->cap)
            i = 0;
    }
}

static inline unsigned base_at(const uint64_t *packed, uint64_t i)
{
    REF(&packed[i >> 5], 0);
    return (unsigned)(packed[i >> 5] >> (2 * (i & 31))) & 3;
}

static inline void set_base(uint64_t *packed, uint64_t i, unsigned b)
{
    REF(&packed[i >> 5], 1);
    packed[i >> 5] |= (uint64_t)b << (2 * (i & 31));
}

int run_genome(const struct opts *o, struct result *r)
{
    uint64_t t0 = now_ns();

    /* Sizing. */
    uint64_t cap = (o->size / 10 * 9) / sizeof(struct slot);
    uint64_t glen = cap / 2;
    uint64_t gwords = (glen + 31) / 32;
    uint64_t table_bytes = cap * sizeof(struct slot);
    uint64_t genome_bytes = gwords * sizeof(uint64_t);
    uint64_t rest = o->size > table_bytes + genome_bytes ? o->size - table_bytes - genome_bytes : 0;
    uint64_t nreads = rest / (READ_WORDS * sizeof(uint64_t));
    uint64_t reads_bytes = nreads * READ_WORDS * sizeof(uint64_t);
    if (glen < 4 * READ_LEN || nreads == 0)
        die(EXIT_USAGE, "genome: --size too small");

    uint64_t *genome = xcalloc(o, "genome", gwords, sizeof(uint64_t));
    report_object(o, "genome", genome, genome_bytes);
    uint64_t *reads = xcalloc(o, "reads", nreads * READ_WORDS, sizeof(uint64_t));
    report_object(o, "reads", reads, reads_bytes);
    struct table t = {.cap = cap, .used = 0};
    t.s = xcalloc(o, "kmer_table", cap, sizeof(struct slot));
    report_object(o, "kmer_table", t.s, table_bytes);

    struct rng g;
    rng_seed(&g, o->seed, 2);
    for (uint64_t w = 0; w < gwords; w++) {
        REF(&genome[w], 1);
        genome[w] = rng_next(&g);
    }
    if (glen % 32) {
        REF(&genome[gwords - 1], 1);
        genome[gwords - 1] &= (1ULL << (2 * (glen % 32))) - 1;
    }

    /* Sample reads with substitution errors. */
    for (uint64_t k = 0; k < nreads; k++) {
        uint64_t *rd = &reads[k * READ_WORDS];
        uint64_t pos = rng_below(&g, glen - READ_LEN + 1);
        for (uint64_t j = 0; j < READ_LEN; j++) {
            unsigned b = base_at(genome, pos + j);
            if (rng_below(&g, 1000) < ERROR_PER_MILLE)
                b = (b + 1 + (unsigned)rng_below(&g, 3)) & 3;
            set_base(rd, j, b);
        }
    }

    /* Count k-mers. */
    uint64_t inserted = 0;
    for (uint64_t k = 0; k < nreads; k++) {
        const uint64_t *rd = &reads[k * READ_WORDS];
        uint64_t kmer = 0;
        for (uint64_t j = 0; j < READ_LEN; j++) {
            kmer = ((kmer << 2) | base_at(rd, j)) & KMER_MASK;
            if (j + 1 >= K) {
                if (table_add(&t, kmer))
                    die(EXIT_FAIL, "genome: k-mer table full (%llu slots)",
                        (unsigned long long)cap);
                inserted++;
            }
        }
    }
    uint64_t t1 = now_ns();
    setup_done(o);
    uint64_t t2 = now_ns();

    /* Contig extension. */
    uint64_t budget = o->ops ? o->ops : 2 * cap;
    uint64_t probes = 0, contigs = 0, contig_bases = 0, branches = 0;
    uint64_t cs = cs_add(0, t.used);
    while (probes < budget) {
        uint64_t p = rng_below(&g, glen - K + 1);
        uint64_t kmer = 0;
        for (uint64_t j = 0; j < K; j++)
            kmer = (kmer << 2) | base_at(genome, p + j);
        probes++;
        if (table_get(&t, kmer) < SOLID) {
            cs = cs_add(cs, 0);
            continue;
        }
        uint64_t limit = 64 + rng_below(&g, 960), len = 0;
        while (len < limit && probes + 4 <= budget) {
            uint64_t next = 0;
            unsigned solid = 0;
            for (unsigned b = 0; b < 4; b++) {
                uint64_t succ = ((kmer << 2) | b) & KMER_MASK;
                probes++;
                if (table_get(&t, succ) >= SOLID) {
                    solid++;
                    next = succ;
                }
            }
            if (solid != 1) {
                branches += solid > 1;
                break;
            }
            kmer = next;
            len++;
        }
        contigs++;
        contig_bases += len + K;
        cs = cs_add(cs, len);
        cs = cs_add(cs, kmer);
    }
    uint64_t t3 = now_ns();

    r->work = probes;
    r->checksum = cs;
    r->setup_ns = t1 - t0;
    r->work_ns = t3 - t2;
    snprintf(r->extra, sizeof r->extra,
             "\"genome_bases\":%llu,\"reads\":%llu,\"kmers_inserted\":%llu,"
             "\"distinct_kmers\":%llu,\"table_slots\":%llu,\"contigs\":%llu,"
             "\"contig_bases\":%llu,\"branches\":%llu",
             (unsigned long long)glen, (unsigned long long)nreads,
             (unsigned long long)inserted, (unsigned long long)t.used,
             (unsigned long long)cap, (unsigned long long)contigs,
             (unsigned long long)contig_bases, (unsigned long long)branches);
    free(t.s);
    free(reads);
    free(genome);
    return EXIT_OK;
}
