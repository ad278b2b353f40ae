# Sourced by scripts/test.sh and scripts/demo.sh: makes sure the toolchain is there.
# Rust comes from rustup on these machines; gcc and make from Debian.
if ! command -v cargo >/dev/null 2>&1; then
  [ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
fi
command -v cargo >/dev/null || { echo "cargo not found: install Rust with rustup (https://rustup.rs)"; exit 1; }
if ! command -v cc >/dev/null 2>&1 || ! command -v make >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc make >/dev/null
  else
    echo "gcc and make are needed (apt-get install gcc make)"; exit 1
  fi
fi
export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}
