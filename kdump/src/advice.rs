// SPDX-License-Identifier: Apache-2.0
//! What a node likely needs from its crash reservation, beyond what the value says:
//! arm64 kernels with 64 KiB pages (the usual kernel on EKS Grace nodes) and
//! ConnectX (mlx5) NICs make the crash kernel need far more memory than on x86_64.
//! RHEL's own arm64 defaults add memory for 64k pages, the SMMU and mlx5, about
//! 1 GiB on a Grace node with ConnectX; a smaller reservation boots, then the crash
//! kernel runs out of memory just when a dump is wanted. Advice only: it warns, it
//! never refuses.

use skyhook_core::formats::human::size as human;
use skyhook_core::{Host, Result};

/// The reservation below which a node with 64 KiB pages is warned.
pub const LARGE_PAGE_FLOOR: u64 = 1 << 30;

/// What the node shows that makes a crash kernel need more memory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeFacts {
    /// The kernel runs with 64 KiB pages (its default huge page is 512 MiB).
    pub pages_64k: bool,
    /// Mellanox ConnectX devices bound to mlx5_core.
    pub mlx5_devices: usize,
}

impl NodeFacts {
    /// Reads the facts from the host: `Hugepagesize` of `/proc/meminfo` (512 MiB
    /// only with 64 KiB pages) and `/sys/bus/pci/drivers/mlx5_core`.
    pub fn read(host: &Host) -> Result<Self> {
        let meminfo = host.read("/proc/meminfo")?.unwrap_or_default();
        let pages_64k = String::from_utf8_lossy(&meminfo).lines().any(|l| {
            l.strip_prefix("Hugepagesize:")
                .is_some_and(|v| v.split_whitespace().next() == Some("524288"))
        });
        let mlx5_devices = host
            .list_dir("/sys/bus/pci/drivers/mlx5_core")?
            .iter()
            .filter(|n| n.contains(':'))
            .count();
        Ok(NodeFacts {
            pages_64k,
            mlx5_devices,
        })
    }
}

/// The warning for a reservation of `reserved` bytes on a node with `facts`, if it
/// is likely too small.
pub fn too_small(reserved: u64, facts: &NodeFacts) -> Option<String> {
    if !facts.pages_64k || reserved == 0 || reserved >= LARGE_PAGE_FLOOR {
        return None;
    }
    let nics = match facts.mlx5_devices {
        0 => String::new(),
        n => format!(" and {n} ConnectX (mlx5) device(s), whose driver the crash kernel loads too"),
    };
    Some(format!(
        "this node's kernel runs with 64 KiB pages{nics}: its crash kernel likely needs about {} \
         (RHEL's arm64 defaults add memory for 64k pages, the SMMU and mlx5), and {} may leave it out of \
         memory when a dump is taken. Consider crashkernel=1G (or a range list giving such nodes 1G), then \
         prove it with a test crash on one node",
        human(LARGE_PAGE_FLOOR),
        human(reserved)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use skyhook_core::host::command::RecordingRunner;

    #[test]
    fn warns_only_for_small_reservations_on_64k_page_kernels() {
        let grace = NodeFacts {
            pages_64k: true,
            mlx5_devices: 2,
        };
        let w = too_small(256 << 20, &grace).expect("256M on 64k pages");
        assert!(
            w.contains("64 KiB pages") && w.contains("2 ConnectX") && w.contains("crashkernel=1G"),
            "{w}"
        );
        assert_eq!(too_small(1 << 30, &grace), None);
        assert_eq!(too_small(0, &grace), None, "no reservation is warned about elsewhere");
        assert_eq!(too_small(256 << 20, &NodeFacts::default()), None, "4k pages: no advice");
    }

    #[test]
    fn reads_the_page_size_and_the_nics_from_the_host() {
        let d = tempfile::tempdir().unwrap();
        let h = Host::new(d.path(), RecordingRunner::succeeding());
        assert_eq!(NodeFacts::read(&h).unwrap(), NodeFacts::default());
        h.write(
            "/proc/meminfo",
            b"MemTotal: 100 kB\nHugepagesize:     524288 kB\n",
            0o444,
        )
        .unwrap();
        for dev in ["0000:01:00.0", "0000:01:00.1", "bind", "module"] {
            h.write(format!("/sys/bus/pci/drivers/mlx5_core/{dev}"), b"", 0o644)
                .unwrap();
        }
        assert_eq!(
            NodeFacts::read(&h).unwrap(),
            NodeFacts {
                pages_64k: true,
                mlx5_devices: 2
            }
        );
    }
}
