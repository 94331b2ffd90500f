// SPDX-License-Identifier: Apache-2.0
//! Huge pages asked for on the kernel command line (`grub.conf`): whether the
//! running kernel supports each `hugepagesz=`, and whether each `hugepages=` count
//! was reserved for its size after the reboot.
//!
//! The sizes depend on the architecture and the kernel's page size (x86_64: 2M
//! and 1G; arm64 with 4k pages: 64K, 2M, 32M and 1G; arm64 with 64k pages: 2M,
//! 512M and 16G), and the kernel silently ignores a size it does not support,
//! with the count after it. The kernel lists its sizes as
//! `/sys/kernel/mm/hugepages/hugepages-<N>kB`, each with its `nr_hugepages`; a
//! `hugepages=` after a `hugepagesz=` counts pages of that size, one before any
//! counts pages of the default size (`Hugepagesize` in `/proc/meminfo`).

use std::collections::BTreeSet;
use std::fmt;
use std::path::PathBuf;

use skyhook_core::{Checklist, Host, Result};

use crate::grub;

/// Where the kernel lists its huge page sizes.
pub const SYSFS: &str = "/sys/kernel/mm/hugepages";

/// Where the kernel tells its default huge page size.
pub const MEMINFO: &str = "/proc/meminfo";

/// A huge page size, in KiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct PageSize(u64);

impl PageSize {
    /// Parses a size as the kernel command line writes it: a number with an
    /// optional K, M, G or T suffix (either case), in bytes without one.
    pub fn parse(text: &str) -> Option<PageSize> {
        let digits = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
        let (number, suffix) = text.split_at(digits);
        let n: u64 = number.parse().ok()?;
        let bytes = match suffix.to_ascii_uppercase().as_str() {
            "" => n,
            "K" => n.checked_mul(1 << 10)?,
            "M" => n.checked_mul(1 << 20)?,
            "G" => n.checked_mul(1 << 30)?,
            "T" => n.checked_mul(1 << 40)?,
            _ => return None,
        };
        (bytes >= 1024 && bytes % 1024 == 0).then_some(PageSize(bytes / 1024))
    }

    /// The size of a directory `hugepages-<N>kB` under [`SYSFS`].
    fn of_dir(name: &str) -> Option<PageSize> {
        let kb = name.strip_prefix("hugepages-")?.strip_suffix("kB")?;
        kb.parse().ok().map(PageSize)
    }

    /// The file holding how many pages of this size are reserved.
    pub fn nr_hugepages(&self) -> PathBuf {
        PathBuf::from(format!("{SYSFS}/hugepages-{}kB/nr_hugepages", self.0))
    }
}

impl fmt::Display for PageSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kb = self.0;
        match [(1 << 30, "T"), (1 << 20, "G"), (1 << 10, "M")]
            .into_iter()
            .find(|(unit, _)| kb % unit == 0)
        {
            Some((unit, suffix)) => write!(f, "{}{suffix}", kb / unit),
            None => write!(f, "{kb}K"),
        }
    }
}

/// One `hugepages=` argument: the pages it asks for and of which size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The argument as written (`hugepages=4`).
    pub arg: String,
    /// The size it follows (`None`: the default size).
    pub size: Option<PageSize>,
    /// The `hugepagesz=` it follows does not name a size (never reserved).
    pub bad_size: bool,
    /// The pages asked for: the number, or the sum of a per-node list (`0:2,1:2`).
    pub count: Option<u64>,
}

/// The value of `name=` in `arg`.
fn value<'a>(arg: &'a str, name: &str) -> Option<&'a str> {
    arg.strip_prefix(name)?.strip_prefix('=')
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
    let mut size: Option<Option<PageSize>> = None;
    for arg in args {
        if let Some(v) = value(arg, "hugepagesz") {
            size = Some(PageSize::parse(v));
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

/// The sizes the running kernel supports; `None` when it lists none (no [`SYSFS`]).
pub fn supported(host: &Host) -> Result<Option<BTreeSet<PageSize>>> {
    if !host.is_dir(SYSFS) {
        return Ok(None);
    }
    Ok(Some(
        host.list_dir(SYSFS)?
            .iter()
            .filter_map(|n| PageSize::of_dir(n))
            .collect(),
    ))
}

/// The sizes as a list for messages (`2M, 1G`).
fn list(sizes: &BTreeSet<PageSize>) -> String {
    sizes.iter().map(PageSize::to_string).collect::<Vec<_>>().join(", ")
}

/// Warns about every `hugepagesz=` and `default_hugepagesz=` of `args` that the
/// running kernel does not list under [`SYSFS`]: the kernel would ignore it at
/// boot, and the pages counted after it would not be reserved.
pub fn warn_unsupported(host: &Host, args: &[String]) -> Result<()> {
    let asked: Vec<(&String, &str)> = args
        .iter()
        .filter_map(|a| {
            value(a, "hugepagesz")
                .or_else(|| value(a, "default_hugepagesz"))
                .map(|v| (a, v))
        })
        .collect();
    if asked.is_empty() {
        return Ok(());
    }
    let Some(sizes) = supported(host)? else {
        log::warn!(
            "{}: this kernel lists no huge page sizes ({SYSFS} is missing: built without hugetlbfs?), so {} \
             cannot be checked and may be ignored at boot",
            grub::KEY,
            asked.iter().map(|(a, _)| a.as_str()).collect::<Vec<_>>().join(" ")
        );
        return Ok(());
    };
    for (arg, v) in asked {
        match PageSize::parse(v) {
            Some(s) if sizes.contains(&s) => {}
            Some(s) => log::warn!(
                "{}: {arg} asks for {s} huge pages, which the running kernel does not support (it lists {} under \
                 {SYSFS}; the sizes depend on the architecture and the kernel's page size): the kernel ignores it at \
                 boot and reserves none of the pages counted after it; use one of the listed sizes",
                grub::KEY,
                list(&sizes)
            ),
            None => log::warn!(
                "{}: {arg} is not a huge page size (a number with K, M or G, e.g. 2M): the kernel ignores it",
                grub::KEY
            ),
        }
    }
    Ok(())
}

/// The default huge page size (`Hugepagesize` in [`MEMINFO`]), or why it is unknown.
fn default_size(host: &Host) -> Result<std::result::Result<PageSize, String>> {
    let Some(text) = host.read_to_string(MEMINFO)? else {
        return Ok(Err(format!("{MEMINFO} is missing")));
    };
    let field = text
        .lines()
        .find_map(|l| l.strip_prefix("Hugepagesize:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|kb| kb.trim().parse().ok());
    Ok(field
        .map(PageSize)
        .ok_or_else(|| format!("{MEMINFO} has no Hugepagesize line")))
}

/// Checks that every `hugepages=` count of `args` is reserved for its size: the
/// kernel's `nr_hugepages` of that size is at least the count.
pub fn check_reserved(host: &Host, args: &[String], c: &mut Checklist) -> Result<()> {
    let requests = requests(args);
    if requests.is_empty() {
        return Ok(());
    }
    let Some(sizes) = supported(host)? else {
        if host.is_dir("/sys/kernel") {
            c.fail(format!(
                "{}: the running kernel has no {SYSFS}: it supports no huge pages, so it reserved none of {}",
                grub::KEY,
                requests.iter().map(|r| r.arg.as_str()).collect::<Vec<_>>().join(" ")
            ));
        } else {
            c.skip(format!(
                "{}: the huge pages reserved: this host has no /sys (a chroot or image build, not a booted node)",
                grub::KEY
            ));
        }
        return Ok(());
    };
    for r in &requests {
        let Some(wanted) = r.count else {
            c.fail(format!("{}: {} is not a page count", grub::KEY, r.arg));
            continue;
        };
        let size = match (r.size, r.bad_size) {
            (_, true) => {
                c.fail(format!(
                    "{}: {} follows a hugepagesz= that is not a size, so the kernel reserved none of its {wanted} pages",
                    grub::KEY,
                    r.arg
                ));
                continue;
            }
            (Some(s), false) => s,
            (None, false) => match default_size(host)? {
                Ok(s) => s,
                Err(why) => {
                    c.fail(format!(
                        "{}: {} counts pages of the default huge page size, which is unknown: {why}",
                        grub::KEY,
                        r.arg
                    ));
                    continue;
                }
            },
        };
        check_one(host, r, size, wanted, &sizes, c)?;
    }
    Ok(())
}

/// Checks one request of `wanted` pages of `size`.
fn check_one(
    host: &Host,
    r: &Request,
    size: PageSize,
    wanted: u64,
    sizes: &BTreeSet<PageSize>,
    c: &mut Checklist,
) -> Result<()> {
    if !sizes.contains(&size) {
        c.fail(format!(
            "{}: {} asks for {wanted} huge pages of {size}, a size the running kernel does not support (it lists: \
             {}), so it reserved 0 of {wanted}: use a size this kernel lists",
            grub::KEY,
            r.arg,
            if sizes.is_empty() {
                "none".to_string()
            } else {
                list(sizes)
            }
        ));
        return Ok(());
    }
    let file = size.nr_hugepages();
    let reserved: Option<u64> = host.read_to_string(&file)?.and_then(|t| t.trim().parse().ok());
    let reserved = reserved.unwrap_or(0);
    c.expect(reserved >= wanted, || {
        format!(
            "{}: {} asks for {wanted} huge pages of {size}, the kernel reserved {reserved} ({}): not enough \
             contiguous memory at boot, or the node was not rebooted since config; reboot, or lower the count",
            grub::KEY,
            r.arg,
            file.display()
        )
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn sizes_parse_and_show_as_the_kernel_writes_them() {
        let kb = |t| PageSize::parse(t).map(|s| s.0);
        assert_eq!(kb("2M"), Some(2048));
        assert_eq!(kb("1G"), Some(1 << 20));
        assert_eq!(kb("64k"), Some(64));
        assert_eq!(kb("16G"), Some(16 << 20));
        assert_eq!(kb("2097152"), Some(2048), "bytes without a suffix");
        for bad in ["", "M", "2X", "1.5G", "-2M", "100"] {
            assert_eq!(PageSize::parse(bad), None, "{bad:?}");
        }
        let shown: Vec<String> = [64, 2048, 32768, 524288, 1 << 20, 16 << 20]
            .map(|k| PageSize(k).to_string())
            .into();
        assert_eq!(shown, ["64K", "2M", "32M", "512M", "1G", "16G"]);
        assert_eq!(PageSize::of_dir("hugepages-1048576kB"), Some(PageSize(1 << 20)));
        assert_eq!(PageSize::of_dir("hugepages-xkB"), None);
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
