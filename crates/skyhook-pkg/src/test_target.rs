// SPDX-License-Identifier: Apache-2.0
//! `skyhook-pkg test --target <triple> [cargo test arguments]`: the workspace's tests
//! built for another target exactly as `dist` builds the packages (the toolchain that
//! has the target's standard library, the cross linker, `+crt-static`) and run by
//! cargo. Binaries of another architecture run where the kernel can run them: on
//! such a machine, or under qemu-user registered with binfmt_misc
//! (`ci/with-qemu-binfmt aarch64 skyhook-pkg test --target aarch64-unknown-linux-gnu …`).

use crate::error::ToolError;
use crate::{dist, workspace};

/// Runs `cargo test --target <target> <args>`; true when every test passed.
pub fn run(target: &str, args: &[String]) -> Result<bool, ToolError> {
    let mut cmd = dist::cargo_for(&workspace::root(), "test", target)?;
    cmd.args(args);
    let status = cmd
        .status()
        .map_err(|e| ToolError::spawn(format!("{} test", cmd.get_program().to_string_lossy()), e))?;
    Ok(status.success())
}
