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
# The Parquet cross-reader tests read every table swaplab writes with
# pyarrow (independent of our reader): install it when it is missing.
if command -v python3 >/dev/null 2>&1 && ! python3 -c 'import pyarrow' >/dev/null 2>&1; then
  echo "installing pyarrow with pip (for the Parquet cross-reader tests)"
  python3 -m pip install --quiet pyarrow >/dev/null 2>&1 \
    || python3 -m pip install --quiet --break-system-packages pyarrow >/dev/null 2>&1 \
    || echo "could not install pyarrow (python3 -m pip install pyarrow): the cross-reader tests will skip, or fail on CI"
fi
# The browser checks of HTML reports (tests/browser/check-report.mjs) drive
# Debian's Chromium with playwright-core: install both when missing (about
# 30 s for chromium on a fresh machine, 2 s for npm ci). Playwright's own
# browser download does not work here.
if [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing chromium with apt-get (for the browser checks of reports)"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } >/dev/null 2>&1 \
      || echo "could not install chromium (apt-get install chromium): the browser tests will skip, or fail on CI"
  else
    echo "chromium is missing (apt-get install chromium as root): the browser tests will skip, or fail on CI"
  fi
fi
# `swaplab serve --preset redis` and its tests need redis-server and
# redis-benchmark (Debian's redis-server brings redis-tools).
if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-benchmark >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing redis-server with apt-get (for swaplab serve --preset redis)"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server; } >/dev/null 2>&1 \
      || echo "could not install redis-server (apt-get install redis-server): the serve tests will skip, or fail on CI"
  else
    echo "redis-server is missing (apt-get install redis-server as root): the serve tests will skip, or fail on CI"
  fi
fi
if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
  # npm ci writes node_modules/.package-lock.json last: older than the
  # lockfile (or missing) means stale or half-installed.
  if [ tests/browser/package-lock.json -nt tests/browser/node_modules/.package-lock.json ]; then
    npm ci --prefix tests/browser --no-audit --no-fund --loglevel=error >/dev/null 2>&1 \
      || echo "could not install playwright-core (npm ci --prefix tests/browser): the browser tests will skip, or fail on CI"
  fi
else
  echo "node and npm are missing (Node.js >= 20): the browser tests will skip, or fail on CI"
fi
# The Python package (python/, `import swaplab`) lives in a venv under
# target/ so nothing is installed into the system Python. swaplab_pyenv
# creates it and installs the build tool and dependencies (maturin, numpy,
# pyarrow, pandas, pytest, mypy with pandas' stubs, ray) once, again only
# when python/pyproject.toml changes; scripts/test.sh calls it, then builds the package into it
# (maturin develop: the dev profile, which is the tests' build, in this
# checkout's target/).
PYENV="$PWD/target/pyenv"
swaplab_pyenv() {
  command -v python3 >/dev/null 2>&1 || { echo "python3 is missing (apt-get install python3 python3-venv): the Python tests cannot run"; return 1; }
  local stamp="$PYENV/.swaplab-deps"
  if [ ! -x "$PYENV/bin/python" ]; then
    mkdir -p target
    python3 -m venv "$PYENV" || { echo "could not create a venv (apt-get install python3-venv)"; return 1; }
  fi
  if [ ! -f "$stamp" ] || [ python/pyproject.toml -nt "$stamp" ]; then
    echo "installing the Python package's tools into target/pyenv (maturin, numpy, pyarrow, pandas, pytest, mypy, ray)"
    "$PYENV/bin/python" -m pip install --quiet --upgrade pip >/dev/null 2>&1
    # mypy and pandas-stubs: the tests type-check the package (python/tests/test_types.py).
    "$PYENV/bin/python" -m pip install --quiet 'maturin>=1.5,<2' numpy pyarrow pandas pytest mypy pandas-stubs >/dev/null \
      || { echo "could not install maturin/numpy/pyarrow/pandas/pytest/mypy/pandas-stubs with pip"; return 1; }
    # Ray is optional for the package; its tests skip without it (and fail on CI).
    "$PYENV/bin/python" -m pip install --quiet 'ray>=2.9' >/dev/null 2>&1 \
      || echo "could not install ray (pip install ray): the Ray tests will skip, or fail on CI"
    touch "$stamp"
  fi
}
