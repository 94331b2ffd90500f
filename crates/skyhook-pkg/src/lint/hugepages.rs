// SPDX-License-Identifier: Apache-2.0
//! Huge page sizes an SCR asks for that some node's kernel cannot register: lint
//! warns (the node decides: config refuses there, before any change, naming the
//! node's page size; core's `boot::hugepages`).
//!
//! - nvidia-tuned, for an accelerator whose nodes are arm64 ([`ARM64_ACCELERATORS`]):
//!   each `hugepagesz=`/`default_hugepagesz=` of the chain that an arm64 kernel of
//!   some page size (4k, 16k, 64k) cannot register, naming those page sizes. Grace
//!   nodes run 64k-page kernels on some distributions and 4k on others, so this is
//!   a warning, not an error.
//! - tuning's `grub.conf` and tuned's `[bootloader]` options: a size that no x86_64
//!   or arm64 kernel registers on any page size (`3M`): every node of those
//!   architectures refuses it. A warning too: another architecture (ppc64le's 16M)
//!   may register it.
//!
//! Values that are no size at all are the packages' own bad input (an error).

use skyhook_core::boot::hugepages::{BasePage, HugePageSize, size_args};
use skyhook_core::os::arch::Arch;

/// The accelerators whose nodes are arm64: Grace CPUs (gb200, gb300) and Vera (vr200).
pub const ARM64_ACCELERATORS: [&str; 3] = ["gb200", "gb300", "vr200"];

/// The requested sizes of `args`, each argument once, in order.
fn sizes(args: &[String]) -> Vec<(String, HugePageSize)> {
    let mut out: Vec<(String, HugePageSize)> = Vec::new();
    for (arg, v) in size_args(args) {
        if let Some(s) = HugePageSize::parse(v)
            && !out.iter().any(|(a, _)| a == arg)
        {
            out.push((arg.to_string(), s));
        }
    }
    out
}

fn pages(list: &[BasePage]) -> String {
    let shown: Vec<String> = list.iter().map(BasePage::to_string).collect();
    shown.join(" or ")
}

/// For `accelerator`'s chain kernel arguments `args`: one warning per size an arm64
/// kernel of some page size cannot register; none for an accelerator not in
/// [`ARM64_ACCELERATORS`].
pub fn arm64_warnings(accelerator: &str, args: &[String]) -> Vec<String> {
    if !ARM64_ACCELERATORS.contains(&accelerator) {
        return Vec::new();
    }
    let arm = Arch::Aarch64;
    sizes(args)
        .into_iter()
        .filter_map(|(arg, s)| {
            let can = BasePage::registering(&arm, s);
            let cannot: Vec<BasePage> = BasePage::of_arch(&arm)
                .into_iter()
                .filter(|p| !can.contains(p))
                .collect();
            (!cannot.is_empty()).then(|| {
                let only = if can.is_empty() {
                    "no arm64 kernel does".to_string()
                } else {
                    format!("only kernels with {} pages do", pages(&can))
                };
                format!(
                    "{accelerator} nodes are arm64, and the chain asks {arg}, which arm64 kernels with {} \
                     pages cannot register ({only}); {accelerator} nodes run 64k-page kernels on some distributions \
                     and 4k on others, so the node decides: config refuses on a node whose kernel cannot register it, \
                     before any change, naming its page size. Check the page size of the nodes' kernels \
                     (`getconf PAGESIZE`: 4096, 16384 or 65536)",
                    pages(&cannot)
                )
            })
        })
        .collect()
}

/// For tuning's or tuned's kernel arguments `args` (from `source`): one warning per
/// size no x86_64 or arm64 kernel registers, whatever its page size.
pub fn nowhere_warnings(source: &str, args: &[String]) -> Vec<String> {
    sizes(args)
        .into_iter()
        .filter(|(_, s)| {
            [Arch::X86_64, Arch::Aarch64]
                .iter()
                .all(|a| BasePage::registering(a, *s).is_empty())
        })
        .map(|(arg, s)| {
            format!(
                "{source}: {arg} asks for {s} huge pages, which no x86_64 kernel (2M, 1G) and no arm64 kernel \
                 (4k pages: 64K, 2M, 32M, 1G; 16k: 2M, 32M, 1G; 64k: 2M, 512M, 16G) registers: config refuses it on \
                 those nodes; use one of those sizes"
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn grace_chains_are_warned_of_the_page_sizes_that_cannot_register_them() {
        let w = arm64_warnings(
            "gb200",
            &args("hugepagesz=2M hugepages=5128 hugepagesz=512M hugepages=4 default_hugepagesz=2M"),
        );
        assert_eq!(w.len(), 1, "2M registers on every arm64 page size: {w:#?}");
        assert!(
            w[0].contains("hugepagesz=512M, which arm64 kernels with 4k or 16k pages cannot register (only kernels with 64k pages do)"),
            "{}",
            w[0]
        );
        let w = arm64_warnings("gb300", &args("hugepagesz=1G hugepages=4"));
        assert!(w[0].contains("arm64 kernels with 64k pages cannot register"), "{w:#?}");
        assert!(arm64_warnings("h100", &args("hugepagesz=512M")).is_empty(), "x86_64");
    }

    #[test]
    fn a_size_no_kernel_registers_is_warned() {
        let w = nowhere_warnings(
            "grub.conf",
            &args("hugepagesz=3M hugepages=2 hugepagesz=512M default_hugepagesz=16M"),
        );
        assert_eq!(w.len(), 2, "{w:#?}");
        assert!(
            w[0].contains("grub.conf: hugepagesz=3M asks for 3M huge pages"),
            "{}",
            w[0]
        );
        assert!(w[1].contains("default_hugepagesz=16M"), "{}", w[1]);
    }
}
