// SPDX-License-Identifier: Apache-2.0
//! Huge pages asked for on the kernel command line (`hugepagesz=`, `hugepages=`,
//! `default_hugepagesz=`): which sizes the node's kernel can register, the refusal
//! of one it cannot (before any change), and whether each `hugepages=` count was
//! reserved for its size after the reboot. tuning (`grub.conf`), tuned (the active
//! profiles' `[bootloader]` options) and nvidia-tuned (its chain's) share it, and so
//! does `skyhook-pkg lint`.
//!
//! **What a kernel registers.** The kernel registers a fixed set of huge page sizes
//! at boot and lists exactly those as `/sys/kernel/mm/hugepages/hugepages-<N>kB`;
//! a `hugepagesz=` or `default_hugepagesz=` of any other size is ignored at boot
//! ("Unsupported page size"), with the `hugepages=` count after it. The set depends
//! on the architecture and on the kernel's base page size ([`BasePage`]):
//!
//! | architecture | page size | huge page sizes |
//! |---|---|---|
//! | x86_64 | 4k | 2M, and 1G where the processor has 1G pages (`pdpe1gb`) |
//! | arm64 | 4k | 64K (contiguous PTEs), 2M (PMD), 32M (contiguous PMDs), 1G (PUD) |
//! | arm64 | 16k | 2M (contiguous PTEs), 32M (PMD), 1G (contiguous PMDs) |
//! | arm64 | 64k | 2M (contiguous PTEs), 512M (PMD), 16G (contiguous PMDs) |
//!
//! Sources (facts only): Linux `arch/arm64/mm/hugetlbpage.c` at torvalds/linux
//! commit 02410ac72ac3707936c07ede66e94360d0d65319 — its support matrix,
//! `__hugetlb_valid_size`/`arch_hugetlb_valid_size` (`PUD_SIZE` only where
//! `pud_sect_supported()`, which `arch/arm64/include/asm/pgtable.h` defines as
//! `PAGE_SIZE == SZ_4K`; `CONT_PMD_SIZE`, `PMD_SIZE`, `CONT_PTE_SIZE` always) and
//! `hugetlbpage_init`, which registers every one of them at boot; x86's
//! `arch/x86/mm/hugetlbpage.c` (commit 04421fe2671c1790ab6529fad87ce8c73af0e1eb,
//! `setup_hugepagesz`: `PMD_SIZE`, and `PUD_SIZE` only with 1G-page support).
//!
//! **The node's page size** is derived from what the running kernel lists, with the
//! architecture ([`crate::os::arch::Arch`]): on arm64 a 64K size exists only with
//! 4k pages, 512M and 16G only with 64k pages, and 32M without 64K only with 16k
//! pages; x86_64 always runs 4k pages. `Hugepagesize` in `/proc/meminfo` says
//! nothing about it: it is the default huge page size, which `default_hugepagesz=`
//! changes (it is read only for a count before any `hugepagesz=`).

use std::collections::BTreeSet;
use std::fmt;
use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::host::Host;
use crate::os::arch::Arch;
use crate::runtime::check::Checklist;

/// Where the kernel lists the huge page sizes it registered.
pub const SYSFS: &str = "/sys/kernel/mm/hugepages";

/// Where the kernel tells its default huge page size.
pub const MEMINFO: &str = "/proc/meminfo";

/// A huge page size, in KiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HugePageSize(u64);

impl HugePageSize {
    /// The size of `kib` KiB.
    pub const fn from_kib(kib: u64) -> Self {
        HugePageSize(kib)
    }

    /// The size in KiB.
    pub const fn kib(&self) -> u64 {
        self.0
    }

    /// Parses a size as the kernel reads it from the command line (`memparse`): a
    /// number (decimal, or hexadecimal after `0x`) with an optional K, M, G, T, P or
    /// E suffix in either case, bytes without one. `None` for anything else (trailing
    /// text the kernel would silently drop, a fraction, a sign) and for a size that
    /// is not a whole number of KiB: no kernel has such a huge page size.
    pub fn parse(text: &str) -> Option<HugePageSize> {
        let (radix, body) = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
            Some(hex) => (16, hex),
            None => (10, text),
        };
        let digits = body.find(|c: char| !c.is_digit(radix)).unwrap_or(body.len());
        let (number, suffix) = body.split_at(digits);
        if number.is_empty() {
            return None;
        }
        let n = u64::from_str_radix(number, radix).ok()?;
        let shift = match suffix.to_ascii_uppercase().as_str() {
            "" => 0,
            "K" => 10,
            "M" => 20,
            "G" => 30,
            "T" => 40,
            "P" => 50,
            "E" => 60,
            _ => return None,
        };
        let bytes = n.checked_mul(1u64 << shift)?;
        (bytes >= 1024 && bytes % 1024 == 0).then_some(HugePageSize(bytes / 1024))
    }

    /// The size of a directory `hugepages-<N>kB` under [`SYSFS`].
    pub fn of_dir(name: &str) -> Option<HugePageSize> {
        let kb = name.strip_prefix("hugepages-")?.strip_suffix("kB")?;
        if kb.is_empty() || !kb.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        kb.parse().ok().filter(|&k| k > 0).map(HugePageSize)
    }

    /// The file holding how many pages of this size are reserved.
    pub fn nr_hugepages(&self) -> PathBuf {
        PathBuf::from(format!("{SYSFS}/hugepages-{}kB/nr_hugepages", self.0))
    }
}

impl fmt::Display for HugePageSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kb = self.0;
        match [(1 << 40, "P"), (1 << 30, "T"), (1 << 20, "G"), (1 << 10, "M")]
            .into_iter()
            .find(|(unit, _)| kb % unit == 0)
        {
            Some((unit, suffix)) => write!(f, "{}{suffix}", kb / unit),
            None => write!(f, "{kb}K"),
        }
    }
}

const K64: HugePageSize = HugePageSize(64);
const M2: HugePageSize = HugePageSize(2 << 10);
const M32: HugePageSize = HugePageSize(32 << 10);
const M512: HugePageSize = HugePageSize(512 << 10);
const G1: HugePageSize = HugePageSize(1 << 20);
const G16: HugePageSize = HugePageSize(16 << 20);

/// A kernel's base page size (its translation granule).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum BasePage {
    /// 4 KiB pages (x86_64; arm64's `CONFIG_ARM64_4K_PAGES`).
    K4,
    /// 16 KiB pages (arm64's `CONFIG_ARM64_16K_PAGES`, e.g. Debian's `linux-image-arm64-16k`).
    K16,
    /// 64 KiB pages (arm64's `CONFIG_ARM64_64K_PAGES`, e.g. the `-64k` kernels Grace nodes run).
    K64,
}

impl BasePage {
    /// Every base page size, smallest first.
    pub const ALL: [BasePage; 3] = [BasePage::K4, BasePage::K16, BasePage::K64];

    /// The huge page sizes a kernel of `arch` with this page size can register (see
    /// the module's table); `None` where the architecture has no such kernel or is
    /// not one this table knows. x86_64's 1G needs the processor's 1G pages.
    pub fn huge_sizes(self, arch: &Arch) -> Option<&'static [HugePageSize]> {
        match (arch, self) {
            (Arch::X86_64, BasePage::K4) => Some(&[M2, G1]),
            (Arch::Aarch64, BasePage::K4) => Some(&[K64, M2, M32, G1]),
            (Arch::Aarch64, BasePage::K16) => Some(&[M2, M32, G1]),
            (Arch::Aarch64, BasePage::K64) => Some(&[M2, M512, G16]),
            _ => None,
        }
    }

    /// The page sizes whose `arch` kernels can register `size`, smallest first.
    pub fn registering(arch: &Arch, size: HugePageSize) -> Vec<BasePage> {
        Self::ALL
            .into_iter()
            .filter(|p| p.huge_sizes(arch).is_some_and(|s| s.contains(&size)))
            .collect()
    }

    /// The page sizes `arch` kernels run with (those the table knows).
    pub fn of_arch(arch: &Arch) -> Vec<BasePage> {
        Self::ALL.into_iter().filter(|p| p.huge_sizes(arch).is_some()).collect()
    }

    /// The page size of a running kernel of `arch` that lists `sizes`, where they
    /// tell it (see the module's documentation); `None` otherwise.
    pub fn derive(arch: &Arch, sizes: &BTreeSet<HugePageSize>) -> Option<BasePage> {
        match arch {
            Arch::X86_64 => Some(BasePage::K4),
            Arch::Aarch64 if sizes.contains(&K64) => Some(BasePage::K4),
            Arch::Aarch64 if sizes.contains(&M512) || sizes.contains(&G16) => Some(BasePage::K64),
            Arch::Aarch64 if sizes.contains(&M32) => Some(BasePage::K16),
            _ => None,
        }
    }
}

impl fmt::Display for BasePage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BasePage::K4 => "4k",
            BasePage::K16 => "16k",
            BasePage::K64 => "64k",
        })
    }
}

/// The sizes as a list for messages (`2M, 1G`).
pub fn list<'a>(sizes: impl IntoIterator<Item = &'a HugePageSize>) -> String {
    let shown: Vec<String> = sizes.into_iter().map(HugePageSize::to_string).collect();
    if shown.is_empty() {
        "none".into()
    } else {
        shown.join(", ")
    }
}

/// What the running kernel registered: its architecture, the sizes it lists under
/// [`SYSFS`] and the page size they tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registered {
    /// The node's architecture.
    pub arch: Arch,
    /// The sizes listed (directories `hugepages-<N>kB`; any other entry is ignored).
    pub sizes: BTreeSet<HugePageSize>,
    /// The kernel's page size, where the sizes tell it ([`BasePage::derive`]).
    pub base: Option<BasePage>,
}

impl Registered {
    /// The running kernel's sizes; `None` when it lists none: no [`SYSFS`] (a chroot
    /// or an image build has no `/sys`; a kernel without hugetlbfs has none either).
    pub fn read(host: &Host) -> Result<Option<Registered>> {
        if !host.is_dir(SYSFS) {
            return Ok(None);
        }
        let sizes: BTreeSet<HugePageSize> = host
            .list_dir(SYSFS)?
            .iter()
            .filter(|n| host.is_dir(format!("{SYSFS}/{n}")))
            .filter_map(|n| HugePageSize::of_dir(n))
            .collect();
        let arch = Arch::detect(host);
        let base = BasePage::derive(&arch, &sizes);
        Ok(Some(Registered { arch, sizes, base }))
    }

    /// `this node's kernel runs with 16k pages (page size 16k, aarch64) and registers only 2M, 32M, 1G`.
    pub fn describe(&self) -> String {
        let page = match self.base {
            Some(p) => format!("runs with {p} pages (page size {p}, {})", self.arch),
            None => format!("({}; its page size is not told by the sizes it lists)", self.arch),
        };
        format!("this node's kernel {page} and registers only {}", list(&self.sizes))
    }

    /// What to do about `size`, which this kernel does not register.
    fn remedy(&self, size: HugePageSize) -> String {
        let mut out = format!("ask for one of {} instead", list(&self.sizes));
        let others: Vec<String> = BasePage::registering(&self.arch, size)
            .into_iter()
            .filter(|p| Some(*p) != self.base)
            .map(|p| p.to_string())
            .collect();
        if self.arch == Arch::X86_64 && size == G1 {
            out.push_str(
                ", or run on a processor with 1G pages (cpu flag pdpe1gb; on a VM, a machine type exposing it)",
            );
        } else if !others.is_empty() {
            out.push_str(&format!(
                ", or boot this node on a kernel with {} pages (which registers {size})",
                others.join(" or ")
            ));
        } else if !BasePage::of_arch(&self.arch).is_empty() {
            out.push_str(&format!(" (no {} kernel registers {size})", self.arch));
        }
        out
    }
}

/// The value of `name=` in `arg`.
fn value<'a>(arg: &'a str, name: &str) -> Option<&'a str> {
    arg.strip_prefix(name)?.strip_prefix('=')
}

/// The `hugepagesz=` and `default_hugepagesz=` arguments of `args`, with their values.
pub fn size_args(args: &[String]) -> Vec<(&str, &str)> {
    args.iter()
        .filter_map(|a| {
            value(a, "hugepagesz")
                .or_else(|| value(a, "default_hugepagesz"))
                .map(|v| (a.as_str(), v))
        })
        .collect()
}

/// Why `arg` is bad input, if it is a `hugepagesz=` or `default_hugepagesz=` whose
/// value is no size at all (on any kernel): the kernel would ignore it.
pub fn not_a_size(arg: &str) -> Option<String> {
    let v = value(arg, "hugepagesz").or_else(|| value(arg, "default_hugepagesz"))?;
    HugePageSize::parse(v).is_none().then(|| {
        format!(
            "{arg} is not a huge page size (a whole number of KiB: a number with K, M or G, e.g. 2M or 1G); the \
             kernel would ignore it, with the hugepages= count after it"
        )
    })
}

/// Refuses (exit 1), before any change, every `hugepagesz=` and
/// `default_hugepagesz=` of `args` whose size the running kernel does not register:
/// it would ignore it at boot and reserve none of the pages counted after it. The
/// message names `source` (where the arguments come from), each argument as
/// written, the node's page size and what it registers, and what to do. Where the
/// kernel lists no sizes (no [`SYSFS`]: a chroot, an image build) it only warns.
/// Values that are no size at all are the caller's bad input ([`not_a_size`]) and
/// are skipped here.
pub fn refuse_unregistrable(host: &Host, source: &str, args: &[String]) -> Result<()> {
    let asked = size_args(args);
    if asked.is_empty() {
        return Ok(());
    }
    let Some(node) = Registered::read(host)? else {
        log::warn!(
            "{source}: this kernel lists no huge page sizes ({SYSFS} is missing: a chroot or image build, or a \
             kernel built without hugetlbfs), so {} cannot be checked and may be ignored at boot",
            asked.iter().map(|(a, _)| *a).collect::<Vec<_>>().join(" ")
        );
        return Ok(());
    };
    let problems: Vec<String> = asked
        .iter()
        .filter_map(|(arg, v)| HugePageSize::parse(v).map(|s| (arg, s)))
        .filter(|(_, s)| !node.sizes.contains(s))
        .map(|(arg, s)| {
            format!(
                "{source}: {arg} asks for {s} huge pages, which {} (listed under {SYSFS}): the kernel would ignore \
                 it at boot and reserve none of the pages counted after it. Nothing was changed; {}",
                node.describe(),
                node.remedy(s)
            )
        })
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(Error::Action(problems.join("\n")))
    }
}

/// One `hugepages=` argument: the pages it asks for and of which size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The argument as written (`hugepages=4`).
    pub arg: String,
    /// The size it follows (`None`: the default size).
    pub size: Option<HugePageSize>,
    /// The `hugepagesz=` it follows does not name a size (never reserved).
    pub bad_size: bool,
    /// The pages asked for: the number, or the sum of a per-node list (`0:2,1:2`).
    pub count: Option<u64>,
}

/// The count of a `hugepages=` value: a number, or `node:count` pairs.
fn count(text: &str) -> Option<u64> {
    if !text.contains(':') {
        return text.parse().ok();
    }
    text.split(',').try_fold(0u64, |sum, pair| {
        let (_, n) = pair.split_once(':')?;
        sum.checked_add(n.parse().ok()?)
    })
}

/// The `hugepages=` requests of `args`, in order; the first one for a size counts,
/// as in the kernel.
pub fn requests(args: &[String]) -> Vec<Request> {
    let mut out: Vec<Request> = Vec::new();
    let mut size: Option<Option<HugePageSize>> = None;
    for arg in args {
        if let Some(v) = value(arg, "hugepagesz") {
            size = Some(HugePageSize::parse(v));
        } else if let Some(v) = value(arg, "hugepages") {
            let r = Request {
                arg: arg.clone(),
                size: size.flatten(),
                bad_size: matches!(size, Some(None)),
                count: count(v),
            };
            if !out.iter().any(|o| o.size == r.size && o.bad_size == r.bad_size) {
                out.push(r);
            }
        }
    }
    out
}

/// The default huge page size (`Hugepagesize` in [`MEMINFO`]), or why it is unknown.
fn default_size(host: &Host) -> Result<std::result::Result<HugePageSize, String>> {
    let Some(text) = host.read_to_string(MEMINFO)? else {
        return Ok(Err(format!("{MEMINFO} is missing")));
    };
    let field = text
        .lines()
        .find_map(|l| l.strip_prefix("Hugepagesize:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|kb| kb.trim().parse().ok());
    Ok(field
        .map(HugePageSize)
        .ok_or_else(|| format!("{MEMINFO} has no Hugepagesize line")))
}

/// Checks that every `hugepages=` count of `args` is reserved for its size: the
/// kernel's `nr_hugepages` of that size (under [`SYSFS`]) is at least the count.
/// Each unmet one names `source`, the argument, the size and both figures.
pub fn check_reserved(host: &Host, source: &str, args: &[String], c: &mut Checklist) -> Result<()> {
    let requests = requests(args);
    if requests.is_empty() {
        return Ok(());
    }
    let Some(node) = Registered::read(host)? else {
        if host.is_dir("/sys/kernel") {
            c.fail(format!(
                "{source}: the running kernel has no {SYSFS}: it supports no huge pages, so it reserved none of {}",
                requests.iter().map(|r| r.arg.as_str()).collect::<Vec<_>>().join(" ")
            ));
        } else {
            c.skip(format!(
                "{source}: the huge pages reserved: this host has no /sys (a chroot or image build, not a booted node)"
            ));
        }
        return Ok(());
    };
    for r in &requests {
        let Some(wanted) = r.count else {
            c.fail(format!("{source}: {} is not a page count", r.arg));
            continue;
        };
        let size = match (r.size, r.bad_size) {
            (_, true) => {
                c.fail(format!(
                    "{source}: {} follows a hugepagesz= that is not a size, so the kernel reserved none of its {wanted} pages",
                    r.arg
                ));
                continue;
            }
            (Some(s), false) => s,
            (None, false) => match default_size(host)? {
                Ok(s) => s,
                Err(why) => {
                    c.fail(format!(
                        "{source}: {} counts pages of the default huge page size, which is unknown: {why}",
                        r.arg
                    ));
                    continue;
                }
            },
        };
        check_one(host, source, r, size, wanted, &node, c)?;
    }
    Ok(())
}

/// Checks one request of `wanted` pages of `size`.
fn check_one(
    host: &Host,
    source: &str,
    r: &Request,
    size: HugePageSize,
    wanted: u64,
    node: &Registered,
    c: &mut Checklist,
) -> Result<()> {
    if !node.sizes.contains(&size) {
        c.fail(format!(
            "{source}: {} asks for {wanted} huge pages of {size}, a size the running kernel does not register \
             ({}), so it reserved 0 of {wanted}: use a size this kernel lists",
            r.arg,
            node.describe()
        ));
        return Ok(());
    }
    let file = size.nr_hugepages();
    let reserved: Option<u64> = host.read_to_string(&file)?.and_then(|t| t.trim().parse().ok());
    let reserved = reserved.unwrap_or(0);
    c.expect(reserved >= wanted, || {
        format!(
            "{source}: {} asks for {wanted} huge pages of {size}, the kernel reserved {reserved} ({}): not enough \
             contiguous memory at boot, or the node was not rebooted since config; reboot, or lower the count",
            r.arg,
            file.display()
        )
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::command::RecordingRunner;

    fn args(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_string).collect()
    }

    fn kib(sizes: &[&str]) -> BTreeSet<HugePageSize> {
        sizes.iter().map(|s| HugePageSize::parse(s).unwrap()).collect()
    }

    #[test]
    fn sizes_parse_as_the_kernel_reads_them_and_show_as_it_writes_them() {
        let kb = |t| HugePageSize::parse(t).map(|s| s.0);
        assert_eq!(kb("2M"), Some(2048));
        assert_eq!(kb("2m"), Some(2048));
        assert_eq!(kb("1G"), Some(1 << 20));
        assert_eq!(kb("64k"), Some(64));
        assert_eq!(kb("16G"), Some(16 << 20));
        assert_eq!(kb("2097152"), Some(2048), "bytes without a suffix");
        assert_eq!(kb("0x200000"), Some(2048), "memparse reads 0x as hexadecimal");
        for bad in ["", "M", "2X", "1.5G", "-2M", "100", "0x", "2Mfoo", "99999999999E"] {
            assert_eq!(HugePageSize::parse(bad), None, "{bad:?}");
        }
        let shown: Vec<String> = [64, 2048, 32768, 524288, 1 << 20, 16 << 20, 3]
            .map(|k| HugePageSize(k).to_string())
            .into();
        assert_eq!(shown, ["64K", "2M", "32M", "512M", "1G", "16G", "3K"]);
        assert_eq!(HugePageSize::of_dir("hugepages-1048576kB"), Some(G1));
        for odd in [
            "hugepages-xkB",
            "hugepages-kB",
            "hugepages-0kB",
            "hugepages-+2048kB",
            "hugepages-99999999999999999999kB",
        ] {
            assert_eq!(HugePageSize::of_dir(odd), None, "{odd}");
        }
    }

    #[test]
    fn the_page_size_follows_from_the_listed_sizes_as_in_the_kernels_table() {
        let arm = Arch::Aarch64;
        for base in BasePage::ALL {
            let listed: BTreeSet<HugePageSize> = base.huge_sizes(&arm).unwrap().iter().copied().collect();
            assert_eq!(BasePage::derive(&arm, &listed), Some(base), "{base}");
        }
        assert_eq!(BasePage::derive(&Arch::X86_64, &kib(&["2M"])), Some(BasePage::K4));
        assert_eq!(BasePage::derive(&arm, &kib(&["2M"])), None, "2M alone tells nothing");
        assert_eq!(BasePage::derive(&Arch::Other("riscv64".into()), &kib(&["2M"])), None);
        assert_eq!(
            BasePage::registering(&arm, HugePageSize::parse("512M").unwrap()),
            [BasePage::K64]
        );
        assert_eq!(
            BasePage::registering(&arm, HugePageSize::parse("2M").unwrap()),
            BasePage::ALL
        );
        assert_eq!(
            BasePage::registering(&arm, HugePageSize::parse("1G").unwrap()),
            [BasePage::K4, BasePage::K16]
        );
        assert!(BasePage::registering(&arm, HugePageSize::parse("3M").unwrap()).is_empty());
        assert_eq!(
            ["4k", "16k", "64k"],
            BasePage::ALL.map(|p| p.to_string()),
            "messages write the page size as people do"
        );
    }

    fn node(arch: &str, dirs: &[&str]) -> (tempfile::TempDir, Host) {
        let d = tempfile::tempdir().unwrap();
        let h = Host::new(d.path(), RecordingRunner::succeeding());
        h.write(crate::os::arch::KERNEL_ARCH, format!("{arch}\n").as_bytes(), 0o444)
            .unwrap();
        for dir in dirs {
            h.write(format!("{SYSFS}/{dir}/nr_hugepages"), b"0\n", 0o644).unwrap();
        }
        (d, h)
    }

    #[test]
    fn a_size_the_kernel_cannot_register_is_refused_naming_the_page_size() {
        let (_d, h) = node(
            "aarch64",
            &["hugepages-2048kB", "hugepages-32768kB", "hugepages-1048576kB"],
        );
        let e = refuse_unregistrable(&h, "grub.conf", &args("hugepagesz=512M hugepages=4 hugepagesz=2M")).unwrap_err();
        assert_eq!(e.exit_code(), 1, "the node decides, not the input");
        let text = e.to_string();
        for want in [
            "grub.conf: hugepagesz=512M asks for 512M huge pages",
            "this node's kernel runs with 16k pages (page size 16k, aarch64) and registers only 2M, 32M, 1G",
            "Nothing was changed",
            "ask for one of 2M, 32M, 1G instead, or boot this node on a kernel with 64k pages (which registers 512M)",
        ] {
            assert!(text.contains(want), "{want}\n{text}");
        }
        assert!(
            !text.contains("hugepagesz=2M"),
            "a registered size is not named: {text}"
        );
        refuse_unregistrable(
            &h,
            "grub.conf",
            &args("hugepagesz=1G hugepages=2 default_hugepagesz=2M"),
        )
        .unwrap();
        let e = refuse_unregistrable(&h, "x", &args("default_hugepagesz=64K")).unwrap_err();
        assert!(
            e.to_string()
                .contains("boot this node on a kernel with 4k pages (which registers 64K)"),
            "{e}"
        );
        let e = refuse_unregistrable(&h, "x", &args("hugepagesz=3M")).unwrap_err();
        assert!(e.to_string().contains("(no aarch64 kernel registers 3M)"), "{e}");
    }

    #[test]
    fn odd_sysfs_entries_count_for_nothing() {
        let (_d, h) = node(
            "x86_64",
            &[
                "hugepages-2048kB",
                "hugepages-abckB",
                "hugepages-99999999999999999999kB",
            ],
        );
        h.write(format!("{SYSFS}/hugepages-1048576kB"), b"a file\n", 0o644)
            .unwrap();
        let r = Registered::read(&h).unwrap().unwrap();
        assert_eq!(r.sizes, kib(&["2M"]));
        let e = refuse_unregistrable(&h, "grub.conf", &args("hugepagesz=1G")).unwrap_err();
        assert!(
            e.to_string()
                .contains("runs with 4k pages (page size 4k, x86_64) and registers only 2M"),
            "{e}"
        );
        assert!(e.to_string().contains("pdpe1gb"), "{e}");
    }

    #[test]
    fn without_sysfs_nothing_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let h = Host::new(d.path(), RecordingRunner::succeeding());
        refuse_unregistrable(&h, "grub.conf", &args("hugepagesz=512M hugepages=4")).unwrap();
    }

    #[test]
    fn not_a_size_is_named() {
        assert!(
            not_a_size("hugepagesz=huge")
                .unwrap()
                .contains("hugepagesz=huge is not a huge page size")
        );
        assert!(not_a_size("default_hugepagesz=1.5G").is_some());
        assert_eq!(not_a_size("hugepagesz=512M"), None);
        assert_eq!(not_a_size("hugepages=huge"), None, "a count is not a size");
    }

    #[test]
    fn a_count_applies_to_the_size_before_it_or_the_default() {
        let r = requests(&args(
            "hugepages=8 hugepagesz=1G hugepages=4 hugepagesz=2M hugepages=0:256,1:256 hugepagesz=1G hugepages=9 \
             hugepagesz=huge hugepages=3 quiet",
        ));
        let got: Vec<(Option<u64>, bool, Option<u64>)> =
            r.iter().map(|r| (r.size.map(|s| s.0), r.bad_size, r.count)).collect();
        assert_eq!(
            got,
            [
                (None, false, Some(8)),
                (Some(1 << 20), false, Some(4)),
                (Some(2048), false, Some(512)),
                (None, true, Some(3)),
            ],
            "the second 1G count is ignored, as the kernel does"
        );
    }
}
