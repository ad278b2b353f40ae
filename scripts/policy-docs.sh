#!/usr/bin/env bash
# Regenerates docs/policies.md from the policies' own //! documentation.
set -euo pipefail
cd "$(dirname "$0")/.."
sed -n '1,/^## `opt.rs`/p' docs/policies.md | sed '$d' > /tmp/policies-head.md
{ cat /tmp/policies-head.md
  for f in opt fifo lru clock linux linux_rrip mglru rrip arc twoq lirs sieve s3fifo lfu; do
    echo "## \`$f.rs\`"; echo; grep '^//!' "crates/sim/src/policies/$f.rs" | sed 's/^\/\/! \{0,1\}//'; echo
  done; } > docs/policies.md
