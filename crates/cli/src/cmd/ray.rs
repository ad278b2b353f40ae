//! `swaplab ray`: the Python package's Ray verbs (`python -m swaplab.ray`)
//! for users who do not write Python.
use anyhow::{anyhow, bail, Result};
use clap::Args;
use std::path::PathBuf;
use std::process::Command;

#[derive(Args)]
#[command(after_help = "EXAMPLES\n  \
swaplab ray sim a.parquet b.parquet --policy lru,arc --mem 10%,50%   # a local Ray cluster\n  \
swaplab ray sim t.parquet --address ray://head:10001 --json          # an existing cluster\n  \
swaplab ray bench                                                    # one worker against two\n\n\
Runs `python -m swaplab.ray ARGS` (docs/python.md): the Python package and Ray must be\n\
installed (pip install './python[ray]'). The interpreter: $SWAPLAB_PYTHON, else this\n\
checkout's target/pyenv (scripts/test.sh makes it), else python3.")]
pub struct RayArgs {
    /// `sim TRACES... [--policy L] [--mem L] [--prefetch L] [--size-group N] [--address A] [--json]`
    /// (a simulation grid on a Ray cluster, printed as CSV or JSON) or `bench [--refs N]`.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        required = true,
        value_name = "ARGS"
    )]
    args: Vec<String>,
}

/// $SWAPLAB_PYTHON, else the checkout's venv beside this binary
/// (target/{debug,release}/swaplab → target/pyenv), else python3.
fn python() -> PathBuf {
    if let Some(p) = std::env::var_os("SWAPLAB_PYTHON").filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    if let Ok(exe) = std::env::current_exe() {
        if let Some(target) = exe.parent().and_then(|d| d.parent()) {
            let p = target.join("pyenv/bin/python");
            if p.is_file() {
                return p;
            }
        }
    }
    PathBuf::from("python3")
}

pub fn run(a: RayArgs) -> Result<i32> {
    let py = python();
    let check = Command::new(&py)
        .args(["-c", "import swaplab.ray, ray"])
        .output()
        .map_err(|e| {
            anyhow!(
                "cannot start {} ({e}): install Python 3, or set SWAPLAB_PYTHON",
                py.display()
            )
        })?;
    if !check.status.success() {
        let err = String::from_utf8_lossy(&check.stderr);
        let last = err.lines().last().unwrap_or("").to_string();
        bail!(
            "{} cannot import swaplab.ray and ray ({last}): install them with \
             `pip install './python[ray]'` from the checkout, or set SWAPLAB_PYTHON to a Python that has them",
            py.display()
        );
    }
    let st = Command::new(&py)
        .args(["-m", "swaplab.ray"])
        .args(&a.args)
        .status()
        .map_err(|e| anyhow!("cannot start {} ({e})", py.display()))?;
    Ok(st.code().unwrap_or(1))
}
