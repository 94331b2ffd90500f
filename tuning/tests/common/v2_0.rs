// SPDX-License-Identifier: Apache-2.0
//! A node as this package before 2.1.0 left it: the limits file, the service
//! drop-ins and the GRUB drop-in named `999-<name>-tuning.*`, for the name tests and
//! the kill points of the move to the new names.

use super::*;

/// What this package before 2.1.0 left after config of [`full_configmap`]: the
/// same files, but the limits file, the drop-ins and the GRUB drop-in (and the
/// state's record of them) named `999-gpu-tuning.*`.
pub fn configured_by_2_0(n: &Node) {
    full_configmap(n);
    run(n, "config", 0);
    for new in [limits_file(), containerd_dropin(), grub_file()] {
        let old = new.replace("zz-skyhook-gpu-tuning", "999-gpu-tuning");
        std::fs::rename(n.path(&new), n.path(&old)).unwrap();
    }
    let state = "/var/lib/skyhook-packages/tuning/gpu/state.json";
    let text = n.read(state).unwrap();
    let old = text
        .replace("limits.d/zz-skyhook-gpu-tuning", "limits.d/999-gpu-tuning")
        .replace("service.d/zz-skyhook-gpu-tuning", "service.d/999-gpu-tuning")
        .replace("grub.d/zz-skyhook-gpu-tuning", "grub.d/999-gpu-tuning");
    assert_ne!(old, text, "the state records the files");
    n.file(state, old);
    n.run_stand_in("update-grub", &[]).expect_code(0);
}

/// The files on `n` named as before 2.1.0.
pub fn old_names(n: &Node) -> Vec<String> {
    n.snapshot()
        .0
        .keys()
        .map(|p| format!("/{}", p.display()))
        .filter(|p| p.contains("999-gpu-tuning"))
        .collect()
}
