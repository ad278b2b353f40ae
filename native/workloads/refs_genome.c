/* genome with its page references recorded (`--refs-fd N`): the same
 * source compiled with SWAPLAB_REFS=1, its entry point renamed. */
#define SWAPLAB_REFS 1
#define run_genome run_genome_refs
#include "genome.c"
