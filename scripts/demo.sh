#!/usr/bin/env bash
# Set up (build in release mode) and run the main job: swaplab demo.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
cargo build --release --quiet -p swaplab
exec ./target/release/swaplab demo "$@"
