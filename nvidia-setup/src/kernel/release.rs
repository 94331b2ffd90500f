// SPDX-License-Identifier: Apache-2.0
//! Kernel releases as Ubuntu names them (`6.17.0-1019-aws-64k`: upstream version,
//! ABI number, flavour), the release a combination wants on this node, and when a
//! running kernel satisfies it.
//!
//! Upstream compared only the part before the first `-`, so `6.17.0-1017-aws`
//! passed for `6.17.0-1019-aws` and a 4k-page kernel passed for a 64k-page target
//! (UPSTREAM.md §12 item 6), while its post-interrupt check wanted the exact
//! release. Here both compare the whole release: exactly, or with
//! `NVIDIA_SETUP_KERNEL_ALLOW_NEWER` a newer version or ABI of the same flavour.

use std::cmp::Ordering;

use skyhook_core::os::arch::Arch;

/// The suffix of Ubuntu's arm64 kernels built for 64 KiB pages.
pub const PAGE_64K: &str = "-64k";

/// The release a combination's kernel resolves to on a node of `arch`: on arm64
/// the 64k-page flavour (the Grace accelerators' kernels; upstream's
/// `resolve_full_kernel` since 0.4.0), elsewhere the release as given.
pub fn target_release(kernel: &str, arch: &Arch) -> String {
    match arch {
        Arch::Aarch64 if !kernel.ends_with(PAGE_64K) => format!("{kernel}{PAGE_64K}"),
        _ => kernel.to_string(),
    }
}

/// A release split as Ubuntu's kernel packages name it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Parts<'a> {
    /// `6.17.0`, compared number by number.
    version: Vec<u64>,
    /// `1019`.
    abi: u64,
    /// `aws-64k` (empty when the release has none).
    flavour: &'a str,
}

fn parts(release: &str) -> Option<Parts<'_>> {
    let mut it = release.splitn(3, '-');
    let version = it
        .next()?
        .split('.')
        .map(|n| n.parse().ok())
        .collect::<Option<Vec<u64>>>()?;
    let abi = it.next()?.parse().ok()?;
    Some(Parts {
        version,
        abi,
        flavour: it.next().unwrap_or(""),
    })
}

/// Whether `running` satisfies `target`: the same release, or with `allow_newer` a
/// release of the same flavour whose version and ABI are not older.
pub fn satisfies(running: &str, target: &str, allow_newer: bool) -> bool {
    if running == target {
        return true;
    }
    if !allow_newer {
        return false;
    }
    match (parts(running), parts(target)) {
        (Some(r), Some(t)) if r.flavour == t.flavour => {
            (r.version.as_slice(), r.abi).cmp(&(t.version.as_slice(), t.abi)) != Ordering::Less
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arm64_gets_the_64k_flavour_once() {
        assert_eq!(target_release("6.17.0-1019-aws", &Arch::Aarch64), "6.17.0-1019-aws-64k");
        assert_eq!(
            target_release("6.17.0-1019-aws-64k", &Arch::Aarch64),
            "6.17.0-1019-aws-64k"
        );
        assert_eq!(target_release("6.17.0-1019-aws", &Arch::X86_64), "6.17.0-1019-aws");
    }

    #[test]
    fn the_whole_release_counts_and_newer_only_within_the_flavour() {
        let t = "6.17.0-1019-aws-64k";
        assert!(satisfies(t, t, false));
        assert!(
            !satisfies("6.17.0-1017-aws-64k", t, false),
            "upstream passed an older ABI"
        );
        assert!(
            !satisfies("6.17.0-1019-aws", t, true),
            "a 4k kernel never satisfies a 64k target"
        );
        assert!(satisfies("6.17.0-1020-aws-64k", t, true));
        assert!(satisfies("6.18.0-1001-aws-64k", t, true));
        assert!(satisfies("6.17.10-1001-aws-64k", t, true), "10 > 0 as numbers");
        assert!(!satisfies("6.17.0-1018-aws-64k", t, true));
        assert!(!satisfies("6.17.0-1020-aws-64k", t, false));
        assert!(!satisfies("garbage", t, true));
    }
}
