/* traverse with its page references recorded (`--refs-fd N`): the same
 * source compiled with SWAPLAB_REFS=1, its entry point renamed. */
#define SWAPLAB_REFS 1
#define run_traverse run_traverse_refs
#include "traverse.c"
