//! Symbolization of stack frames given as `(module, offset)`.
//!
//! `offset` is the address minus the module's load base as `dladdr` gives
//! it (`dli_fbase`, the start of the module's first mapping). For PIE
//! executables and shared libraries that is the ELF virtual address; in
//! general the virtual address is `offset + B`, where `B` is the lowest
//! `PT_LOAD` `p_vaddr` rounded down to the page size (0 for PIE and shared
//! libraries, 0x400000 for a typical x86-64 non-PIE executable).
//!
//! Each [`Symbolized`] frame carries a `key`,
//! `<module file name>!<raw symbol>+0x<offset from the symbol's start>`, or
//! `<module file name>+0x<offset>` when no function symbol covers the
//! address. The raw (mangled) symbol comes from the ELF symbol table
//! (`.symtab`, so static functions too, and `.dynsym`): the key is exact
//! and stable across runs and ASLR, and [`Symbolizer::resolve_key`] turns it
//! back into the offset. A name defined at several addresses (two static
//! functions `init` in different files) gets a `~N` suffix in keys, N the
//! 1-based rank by address: `prog!init~2+0x10`.
//!
//! Frames are return addresses, which point after the call:
//! [`Symbolizer::symbolize`] looks up function and file:line at
//! `offset − 1` (use [`Symbolizer::symbolize_exact`] for an instruction
//! address, such as a faulting IP). With inlining, `file` and `line` are
//! those of the innermost inlined function (as `addr2line -i` prints
//! first: the most precise source position), while `function`, `symbol`
//! and `key` name the real, outermost function the code belongs to.
//!
//! DWARF comes from the gimli family (`addr2line`'s loader, which also
//! follows `.gnu_debuglink` and split DWARF); the symbol table from
//! `object`. Parsed modules are cached for the symbolizer's lifetime.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use object::{Object, ObjectSection, ObjectSegment, ObjectSymbol, SymbolKind};

/// One symbolized frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbolized {
    /// The module's file name.
    pub module: String,
    /// Demangled name of the real (outermost, not inlined) function from
    /// DWARF, else the demangled symbol.
    pub function: Option<String>,
    /// Raw (mangled) name of the symbol-table function covering the address.
    pub symbol: Option<String>,
    /// Offset of the frame's address from `symbol`'s start (0 without one).
    pub sym_offset: u64,
    /// Source file (full path as recorded in DWARF).
    pub file: Option<String>,
    pub line: Option<u32>,
    /// Stable identity of the frame, see the module docs.
    pub key: String,
}

#[derive(Debug, Clone)]
struct Sym {
    addr: u64,
    size: u64,
    /// End of the symbol's section: the limit of a size-0 symbol.
    section_end: u64,
    name: String,
    /// 0 global, 1 weak, 2 local: preferred lower when symbols alias.
    rank: u8,
    /// `~N` disambiguator (0: the name is unique in the module).
    dup: u32,
}

impl Sym {
    fn key_name(&self) -> Cow<'_, str> {
        if self.dup == 0 {
            Cow::Borrowed(&self.name)
        } else {
            Cow::Owned(format!("{}~{}", self.name, self.dup))
        }
    }
}

struct Module {
    name: String,
    /// Virtual address of offset 0.
    base: u64,
    /// Function symbols sorted by (addr, rank, name).
    syms: Vec<Sym>,
    /// Key name → index in `syms`, built on the first resolve_key.
    by_name: Option<HashMap<String, usize>>,
    dwarf: Option<addr2line::Loader>,
}

impl Module {
    fn load(path: &Path) -> Option<Module> {
        let name = file_name(path);
        let data = std::fs::read(path).ok()?;
        let file = object::File::parse(&*data).ok()?;
        let page = page_size();
        let base = file
            .segments()
            .map(|s| s.address())
            .min()
            .map(|a| a & !(page - 1))
            .unwrap_or(0);
        let mut syms = Vec::new();
        for s in file.symbols().chain(file.dynamic_symbols()) {
            if s.kind() != SymbolKind::Text || !s.is_definition() || s.address() == 0 {
                continue;
            }
            let Ok(n) = s.name() else { continue };
            if n.is_empty() {
                continue;
            }
            let section_end = s
                .section_index()
                .and_then(|i| file.section_by_index(i).ok())
                .map(|sec| sec.address() + sec.size())
                .unwrap_or(u64::MAX);
            syms.push(Sym {
                addr: s.address(),
                size: s.size(),
                section_end,
                name: n.to_string(),
                rank: if s.is_global() {
                    0
                } else if s.is_weak() {
                    1
                } else {
                    2
                },
                dup: 0,
            });
        }
        drop(file);
        drop(data);
        // .symtab and .dynsym repeat the exported functions.
        syms.sort_by(|a, b| (a.addr, &a.name, a.rank).cmp(&(b.addr, &b.name, b.rank)));
        syms.dedup_by(|b, a| a.addr == b.addr && a.name == b.name);
        // Aliases at one address: global before weak before local.
        syms.sort_by(|a, b| (a.addr, a.rank, &a.name).cmp(&(b.addr, b.rank, &b.name)));
        // Names defined at several addresses get ~1, ~2, … by address.
        let mut count: HashMap<&str, u32> = HashMap::new();
        for s in &syms {
            *count.entry(&s.name).or_default() += 1;
        }
        let dups: HashMap<String, u32> = count
            .into_iter()
            .filter(|&(_, c)| c > 1)
            .map(|(n, _)| (n.to_string(), 0))
            .collect();
        if !dups.is_empty() {
            let mut seen = dups;
            for s in &mut syms {
                if let Some(k) = seen.get_mut(&s.name) {
                    *k += 1;
                    s.dup = *k;
                }
            }
        }
        let dwarf = addr2line::Loader::new(path).ok();
        Some(Module {
            name,
            base,
            syms,
            by_name: None,
            dwarf,
        })
    }

    /// The function symbol covering virtual address `probe`.
    fn symbol_at(&self, probe: u64) -> Option<&Sym> {
        let end = self.syms.partition_point(|s| s.addr <= probe);
        if end == 0 {
            return None;
        }
        // The group of symbols starting nearest below `probe`.
        let nearest = self.syms[end - 1].addr;
        let group_start = self.syms[..end].partition_point(|s| s.addr < nearest);
        let group = &self.syms[group_start..end];
        if let Some(s) = group.iter().find(|s| s.size > 0 && probe < s.addr + s.size) {
            return Some(s);
        }
        if group.iter().all(|s| s.size == 0) {
            // Size unknown (assembly): up to the next symbol (none lies in
            // between) within the section.
            let s = &group[0];
            return (probe < s.section_end).then_some(s);
        }
        // Past the nearest function's end: padding, or inside an enclosing
        // symbol that starts earlier.
        self.syms[..group_start]
            .iter()
            .rev()
            .take(64)
            .find(|s| s.size > 0 && probe < s.addr + s.size)
    }
}

/// Symbolizes frames, caching every module it has parsed.
#[derive(Default)]
pub struct Symbolizer {
    modules: HashMap<PathBuf, Option<Module>>,
}

impl std::fmt::Debug for Symbolizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Symbolizer")
            .field("modules", &self.modules.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Symbolizer {
    pub fn new() -> Self {
        Self::default()
    }

    fn module(&mut self, path: &Path) -> Option<&mut Module> {
        if !self.modules.contains_key(path) {
            let m = Module::load(path);
            self.modules.insert(path.to_path_buf(), m);
        }
        self.modules.get_mut(path).and_then(Option::as_mut)
    }

    /// Symbolizes a return address at `offset` in `module` (see the module
    /// docs). Never fails: an unreadable module or an address no symbol
    /// covers gives key `module+0xOFF` and no names.
    pub fn symbolize(&mut self, module: &Path, offset: u64) -> Symbolized {
        self.lookup(module, offset, true)
    }

    /// Like [`Symbolizer::symbolize`] for the address of an instruction
    /// itself (a faulting IP, a function's address): no `− 1`.
    pub fn symbolize_exact(&mut self, module: &Path, offset: u64) -> Symbolized {
        self.lookup(module, offset, false)
    }

    fn lookup(&mut self, module: &Path, offset: u64, return_address: bool) -> Symbolized {
        let fallback_name = file_name(module);
        let Some(m) = self.module(module) else {
            return Symbolized {
                key: format!("{fallback_name}+{offset:#x}"),
                module: fallback_name,
                function: None,
                symbol: None,
                sym_offset: 0,
                file: None,
                line: None,
            };
        };
        let addr = offset.wrapping_add(m.base);
        let probe = if return_address && offset > 0 {
            addr - 1
        } else {
            addr
        };
        let sym = m.symbol_at(probe);
        let (mut function, mut file, mut line) = (None, None, None);
        if let Some(dwarf) = &m.dwarf {
            if let Ok(mut frames) = dwarf.find_frames(probe) {
                // Innermost first: file:line from the first frame that has
                // one, the function from the last (outermost) frame.
                while let Ok(Some(frame)) = frames.next() {
                    if let Some(name) = frame.function.as_ref().and_then(|f| f.demangle().ok()) {
                        function = Some(name.into_owned());
                    }
                    if file.is_none() {
                        if let Some(loc) = &frame.location {
                            file = loc.file.map(clean_path);
                            line = loc.line;
                        }
                    }
                }
            }
            if file.is_none() {
                if let Ok(Some(loc)) = dwarf.find_location(probe) {
                    file = loc.file.map(clean_path);
                    line = loc.line;
                }
            }
        }
        if function.is_none() {
            function =
                sym.map(|s| addr2line::demangle_auto(Cow::Borrowed(&s.name), None).into_owned());
        }
        let (key, symbol, sym_offset) = match sym {
            Some(s) => {
                let off = addr - s.addr;
                (
                    format!("{}!{}+{off:#x}", m.name, s.key_name()),
                    Some(s.name.clone()),
                    off,
                )
            }
            None => (format!("{}+{offset:#x}", m.name), None, 0),
        };
        Symbolized {
            module: m.name.clone(),
            function,
            symbol,
            sym_offset,
            file,
            line,
            key,
        }
    }

    /// The offset in `module` that a key of [`Symbolizer::symbolize`]
    /// stands for: `module!symbol+0xOFF` (the symbol's address + OFF − the
    /// base) or `module+0xOFF`. `None` when the key is malformed, names
    /// another module's file, or a symbol this module does not define.
    pub fn resolve_key(&mut self, module: &Path, key: &str) -> Option<u64> {
        let want = file_name(module);
        let (head, off) = key.rsplit_once("+0x")?;
        let off = u64::from_str_radix(off, 16).ok()?;
        let (mod_name, sym) = match head.split_once('!') {
            Some((m, s)) => (m, Some(s)),
            None => (head, None),
        };
        if mod_name != want {
            return None;
        }
        let Some(sym) = sym else {
            return Some(off);
        };
        let m = self.module(module)?;
        if m.by_name.is_none() {
            let mut map = HashMap::with_capacity(m.syms.len());
            for (i, s) in m.syms.iter().enumerate() {
                map.entry(s.key_name().into_owned()).or_insert(i);
            }
            m.by_name = Some(map);
        }
        let i = *m.by_name.as_ref()?.get(sym)?;
        (m.syms[i].addr + off).checked_sub(m.base)
    }
}

/// The ELF build-id of the file at `path` (lowercase hex), if it has one.
pub fn build_id(path: &Path) -> Option<String> {
    let data = std::fs::read(path).ok()?;
    let file = object::File::parse(&*data).ok()?;
    let id = file.build_id().ok()??;
    Some(id.iter().map(|b| format!("{b:02x}")).collect())
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.to_string_lossy().into_owned())
}

/// The loader maps a module from its lowest `PT_LOAD` address rounded down
/// to the page; the frames' offsets count from there. 4 KiB pages (x86-64,
/// and the usual arm64 configuration): the symbolizer runs offline, perhaps
/// on another machine, so it cannot ask the traced machine's page size.
fn page_size() -> u64 {
    4096
}
/// A debug-info path without `.` components (`././native/a.c` →
/// `native/a.c`): compilers given `-ffile-prefix-map=DIR=.` (as swaplab's
/// own build does, so paths do not name the checkout) produce them.
fn clean_path(p: &str) -> String {
    let path = Path::new(p);
    let cleaned: std::path::PathBuf = path
        .components()
        .filter(|c| !matches!(c, std::path::Component::CurDir))
        .collect();
    cleaned.display().to_string()
}
