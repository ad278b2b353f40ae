# The C flags of every native build: native/Makefile includes this file and
# crates/lab/build.rs reads it (plain `NAME = flags` lines; no make syntax
# beyond that).  CFLAGS from the environment or make's command line are
# added after these.
CFLAGS_COMMON = -O2 -g -Wall -Wextra -Werror
# swaplab-workload (native/workloads)
CFLAGS_WORKLOAD = -std=c11 -pthread
LDLIBS_WORKLOAD = -pthread -lm
# libswaplab-preload.so (native/preload)
CFLAGS_PRELOAD = -std=gnu11 -fPIC -shared
LDLIBS_PRELOAD = -ldl -pthread
# swaplab-preload-probe (native/tests/preload_probe.c)
CFLAGS_PROBE = -std=gnu11
LDLIBS_PROBE = -ldl -lm -pthread
# The sanitizer builds of the library and the probe (make tsan, make asan;
# see native/tests/sanitize.sh), added after the flags above.
CFLAGS_TSAN = -fsanitize=thread -O1 -fno-omit-frame-pointer
CFLAGS_ASAN = -fsanitize=address -O1 -fno-omit-frame-pointer
