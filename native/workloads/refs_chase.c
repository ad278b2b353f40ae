/* chase with its page references recorded (`--refs-fd N`): the same
 * source compiled with SWAPLAB_REFS=1, its entry point renamed. */
#define SWAPLAB_REFS 1
#define run_chase run_chase_refs
#include "chase.c"
