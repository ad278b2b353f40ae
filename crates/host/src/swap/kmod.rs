//! Kernel modules and helper programs the emulated swap devices need:
//! whether a module is loaded, built in, loadable or missing (and why),
//! loading one (the caller journals the unload first) and unloading it.
//!
//! "Cannot load modules" means: no /proc/modules (a kernel built without
//! CONFIG_MODULES), `nomodule` on the kernel command line, or
//! /proc/sys/kernel/modules_disabled set. The machines swaplab is developed
//! on are such kernels; the guest kernels that scripts/kernels.sh boots
//! load them with modprobe.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{Error, Result};

/// Where a kernel module stands on this kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModuleState {
    /// Loaded as a module (/sys/module/NAME/initstate).
    Loaded,
    /// Compiled into the kernel.
    Builtin,
    /// Not loaded, and `modprobe -n` finds it.
    Loadable,
    /// Neither: the reason, in words.
    Missing(String),
}

impl ModuleState {
    /// True unless missing.
    pub fn usable(&self) -> bool {
        !matches!(self, ModuleState::Missing(_))
    }
}

/// A module's name as /sys/module shows it (dashes become underscores).
pub fn sys_name(name: &str) -> String {
    name.replace('-', "_")
}

fn sys_module(name: &str) -> PathBuf {
    Path::new("/sys/module").join(sys_name(name))
}

/// True when `name` is loaded as a module right now.
pub fn is_loaded(name: &str) -> bool {
    sys_module(name).join("initstate").exists()
}

/// Why this kernel cannot load modules, or `None` when it can.
pub fn cannot_load_modules() -> Option<String> {
    if !Path::new("/proc/modules").exists() {
        return Some("this kernel cannot load modules (no /proc/modules)".into());
    }
    if fs::read_to_string("/proc/cmdline")
        .map(|c| c.split_whitespace().any(|w| w == "nomodule"))
        .unwrap_or(false)
    {
        return Some("this kernel cannot load modules (booted with nomodule)".into());
    }
    if fs::read_to_string("/proc/sys/kernel/modules_disabled")
        .map(|v| v.trim() == "1")
        .unwrap_or(false)
    {
        return Some("this kernel cannot load modules (kernel.modules_disabled = 1)".into());
    }
    None
}

fn builtin(name: &str) -> bool {
    let Ok(rel) = fs::read_to_string("/proc/sys/kernel/osrelease") else {
        return false;
    };
    let file = Path::new("/lib/modules")
        .join(rel.trim())
        .join("modules.builtin");
    let want = format!("/{}.ko", name);
    let want2 = format!("/{}.ko", sys_name(name));
    fs::read_to_string(file)
        .map(|t| t.lines().any(|l| l.ends_with(&want) || l.ends_with(&want2)))
        .unwrap_or(false)
}

/// Where `name` stands (see [`ModuleState`]).
pub fn module_state(name: &str) -> ModuleState {
    if is_loaded(name) {
        return ModuleState::Loaded;
    }
    if sys_module(name).exists() || builtin(name) {
        return ModuleState::Builtin;
    }
    if let Some(why) = cannot_load_modules() {
        return ModuleState::Missing(format!(
            "the {} module is missing and {why}",
            sys_name(name)
        ));
    }
    match Command::new("modprobe").args(["-n", "-q", name]).status() {
        Ok(s) if s.success() => ModuleState::Loadable,
        Ok(_) => ModuleState::Missing(format!(
            "this kernel has no {} module (`modprobe -n {name}` finds none)",
            sys_name(name)
        )),
        Err(e) => ModuleState::Missing(format!(
            "the {} module is not loaded and modprobe cannot run ({e}); install kmod",
            sys_name(name)
        )),
    }
}

/// Fails with `no WHAT: REASON` unless the module is usable.
pub fn require_module(what: &str, name: &str, fix: &str) -> Result<ModuleState> {
    match module_state(name) {
        ModuleState::Missing(why) => Err(Error::unsupported(format!("no {what}"), why, fix)),
        s => Ok(s),
    }
}

/// Runs `modprobe NAME ARGS…`.
pub fn load(name: &str, args: &[String]) -> Result<()> {
    run("modprobe", &[&[name.to_string()], args].concat())
}

/// Unloads a module swaplab loaded (`modprobe -r`, which also drops the
/// dependencies that came with it and are unused now). Succeeds when it is
/// not loaded.
pub fn unload(name: &str) -> Result<()> {
    if !is_loaded(name) {
        return Ok(());
    }
    run("modprobe", &["-r".to_string(), name.to_string()])
}

pub use crate::util::find_program;

/// Fails with `no WHAT: PROGRAM is not installed` unless it is.
pub fn require_program(what: &str, program: &str, package: &str) -> Result<PathBuf> {
    find_program(program).ok_or_else(|| {
        Error::unsupported(
            format!("no {what}"),
            format!("{program} is not installed"),
            format!("install it: apt-get install {package}"),
        )
    })
}

/// Runs a helper program; a failure carries its stderr.
pub fn run(program: &str, args: &[String]) -> Result<()> {
    output(program, args).map(|_| ())
}

/// Runs a helper program and returns its stdout; a failure carries its
/// stderr and exit status.
pub fn output(program: &str, args: &[String]) -> Result<String> {
    let exe = find_program(program).unwrap_or_else(|| PathBuf::from(program));
    let o = Command::new(&exe)
        .args(args)
        .env("DM_DISABLE_UDEV", "1")
        .output()
        .map_err(|e| Error::Io {
            op: "running",
            path: exe.clone(),
            source: e,
            hint: format!("is {program} installed?"),
        })?;
    if !o.status.success() {
        return Err(Error::unsupported(
            format!("`{program} {}` failed ({})", args.join(" "), o.status),
            String::from_utf8_lossy(&o.stderr).trim().to_string(),
            "",
        ));
    }
    Ok(String::from_utf8_lossy(&o.stdout).into_owned())
}

/// Runs a program that may leave a daemon behind (nbd-server forks one):
/// its output goes to `log` (appended), not to pipes that the daemon would
/// hold open. A failure carries the log's last lines.
pub fn run_logged(program: &str, args: &[String], log: &Path) -> Result<()> {
    let exe = find_program(program).unwrap_or_else(|| PathBuf::from(program));
    let out = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(|e| Error::io("opening", log, e))?;
    let err = out.try_clone().map_err(|e| Error::io("opening", log, e))?;
    let status = Command::new(&exe)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(out)
        .stderr(err)
        .status()
        .map_err(|e| Error::Io {
            op: "running",
            path: exe.clone(),
            source: e,
            hint: format!("is {program} installed?"),
        })?;
    if !status.success() {
        let text = fs::read_to_string(log).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(5).collect();
        return Err(Error::unsupported(
            format!("`{program} {}` failed ({status})", args.join(" ")),
            tail.into_iter().rev().collect::<Vec<_>>().join("; "),
            format!("its output is in {}", log.display()),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_states() {
        assert_eq!(sys_name("dm-delay"), "dm_delay");
        assert_eq!(
            module_state("swaplab-no-such-module"),
            match cannot_load_modules() {
                Some(why) => ModuleState::Missing(format!(
                    "the swaplab_no_such_module module is missing and {why}"
                )),
                None => module_state("swaplab-no-such-module"),
            }
        );
        assert!(!module_state("swaplab-no-such-module").usable());
        // /proc/modules and the module list agree with "can load".
        if !Path::new("/proc/modules").exists() {
            assert!(cannot_load_modules().is_some());
        }
        assert!(find_program("sh").is_some());
        assert!(find_program("swaplab-no-such-program").is_none());
        let e = output("sh", &["-c".into(), "echo oops >&2; exit 3".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("oops") && e.contains("exit status: 3"), "{e}");
    }
}
