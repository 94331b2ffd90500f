// SPDX-License-Identifier: Apache-2.0
//! aks-h100 on a simulated Azure node: the InfiniBand modules loaded and listed for
//! the boot, unlimited locked memory through the tuning engine (limits.d, pam_limits,
//! containerd's and kubelet's drop-ins), the checks before and after the services'
//! restart, the bash version's files taken over, uninstall, and kill points.

mod common;

use common::*;
use skyhook_testkit::kmod;

const MODULES_LOAD: &str = "/etc/modules-load.d/ib-umad.conf";
const LIMITS: &str = "/etc/security/limits.d/zz-skyhook-nvidia-setup-tuning.conf";

#[test]
fn aks_loads_the_modules_and_unlocks_memory_then_the_restart_is_checked() {
    let n = aks();
    let before = n.snapshot();
    run(&n, "apply", 0).expect_output("interrupt needed: {type: service, services: [containerd, kubelet]}");
    assert!(kmod::is_loaded(&n, "ib_umad") && kmod::is_loaded(&n, "rdma_ucm"));
    assert_eq!(n.read(MODULES_LOAD).as_deref(), Some("ib_umad\nrdma_ucm\n"));
    let limits = n.read(LIMITS).unwrap();
    // root too (limits.conf(5): `*` does not cover root), as upstream's file did.
    for domain in ["*", "root"] {
        for kind in ["soft", "hard"] {
            let line = format!("{domain}\t{kind}\tmemlock\tunlimited\n");
            assert!(limits.contains(&line), "{line:?} missing:\n{limits}");
        }
    }
    for d in DROP_INS {
        assert!(n.read(d).unwrap().contains("LimitMEMLOCK=infinity"), "{d}");
    }
    assert!(n.read("/etc/pam.d/common-session").unwrap().contains("pam_limits.so"));
    run(&n, "apply-check", 0);
    run(&n, "post-interrupt-check", 1).expect_output("containerd");
    start(&n, 4200, true);
    run(&n, "post-interrupt-check", 0);

    let applied = n.snapshot();
    run(&n, "apply", 0);
    applied.assert_same(&n.snapshot());

    for pid in [4200, 4201] {
        std::fs::remove_dir_all(n.path(&format!("/proc/{pid}"))).unwrap();
    }
    start(&n, 4100, false);
    run(&n, "uninstall", 0);
    run(&n, "uninstall-check", 0);
    // The modules stay loaded until the next boot; everything else is as it was.
    kmod::loaded(&n, &[]);
    before.assert_same(&n.snapshot());
}

#[test]
fn the_bash_versions_files_are_taken_over_and_gone_after_uninstall() {
    let n = aks();
    n.file(MODULES_LOAD, "ib_umad\nrdma_ucm\n")
        .file(
            "/etc/security/limits.d/99-ib-memlock.conf",
            "* - memlock unlimited\nroot - memlock unlimited\n",
        )
        .file(
            "/etc/systemd/system/containerd.service.d/memlock.conf",
            "[Service]\nLimitMEMLOCK=infinity\n",
        )
        .file(
            "/etc/systemd/system/kubelet.service.d/memlock.conf",
            "[Service]\nLimitMEMLOCK=infinity\n",
        );
    run(&n, "apply", 0).expect_output("taken over");
    assert!(!n.exists("/etc/security/limits.d/99-ib-memlock.conf"));
    run(&n, "uninstall", 0);
    assert!(!n.exists(MODULES_LOAD), "the bash version's file is this package's own");
    assert!(!n.exists("/etc/systemd/system/containerd.service.d/memlock.conf"));

    let n = aks();
    n.file(MODULES_LOAD, "# the admin's\nib_umad\n");
    run(&n, "apply", 0);
    run(&n, "uninstall", 0);
    assert_eq!(
        n.read(MODULES_LOAD).as_deref(),
        Some("# the admin's\nib_umad\n"),
        "an admin's file comes back"
    );
}

#[test]
fn a_kernel_without_the_infiniband_module_is_refused_unchanged() {
    let n = aks();
    kmod::install_modprobe(&n, &["mlx5_ib"]);
    let before = n.snapshot();
    run(&n, "apply", 1).expect_output("modprobe ib_umad failed");
    before.assert_same(&n.snapshot());
}
