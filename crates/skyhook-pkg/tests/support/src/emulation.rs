// SPDX-License-Identifier: Apache-2.0
//! Running arm64 programs on this machine for the arm64 scenarios: qemu-user
//! registered with binfmt_misc while at least one [`Emulation`] is alive, as
//! `ci/with-qemu-binfmt` does it: a handler of this process's own name
//! (`skyhook-qemu-aarch64-<pid>`) with Debian's line from
//! `/usr/lib/binfmt.d/qemu-aarch64.conf` (flag F: the interpreter is opened at
//! registration, so it serves inside chroots too), whatever else is registered. The
//! shared `qemu-aarch64` entry is never touched, so a concurrent run (another chroot
//! tier, `ci/with-qemu-binfmt`, the VM image build) can neither break this one nor be
//! broken by it. The handler is taken back when the last guard goes, and the
//! binfmt_misc mount when this process made it and no other handler is registered
//! by then (unmounting drops every registration, a concurrent run's too).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

const MISC: &str = "/proc/sys/fs/binfmt_misc";
const ARCH: &str = "aarch64";

/// What this process changed, and how many guards are alive.
struct State {
    guards: usize,
    registered: bool,
    mounted: bool,
}

static STATE: Mutex<State> = Mutex::new(State {
    guards: 0,
    registered: false,
    mounted: false,
});

/// This process's own handler (`skyhook-qemu-aarch64-<pid>`).
fn handler() -> PathBuf {
    Path::new(MISC).join(format!("skyhook-qemu-{ARCH}-{}", std::process::id()))
}

/// Debian's registration line for qemu-`ARCH` (`:qemu-aarch64:M:…`) with `name` in
/// its first field.
fn own_line(conf: &str, name: &str) -> Option<String> {
    let line = conf.lines().find(|l| l.starts_with(':'))?;
    let rest = line[1..].split_once(':')?.1;
    Some(format!(":{name}:{rest}"))
}

/// The handlers registered now, but for binfmt_misc's own `register` and `status`.
fn others_registered() -> Vec<String> {
    fs::read_dir(MISC)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n != "register" && n != "status")
                .collect()
        })
        .unwrap_or_default()
}

/// While alive, this machine runs aarch64 programs through qemu-user.
pub struct Emulation(());

impl Emulation {
    /// Registers this process's qemu-aarch64 handler when no guard holds it yet;
    /// panics saying what is missing.
    pub fn start() -> Emulation {
        let mut state = STATE.lock().unwrap_or_else(|e| e.into_inner());
        if state.guards == 0 {
            let conf = format!("/usr/lib/binfmt.d/qemu-{ARCH}.conf");
            let text = fs::read_to_string(&conf).unwrap_or_else(|e| {
                panic!("{conf}: {e}: the arm64 scenarios need qemu-user-static (run ci/setup-toolchain)")
            });
            let handler = handler();
            let name = handler
                .file_name()
                .expect("a handler name")
                .to_string_lossy()
                .into_owned();
            let line = own_line(&text, &name)
                .unwrap_or_else(|| panic!("{conf} holds no binfmt_misc registration line (`:name:type:…`)"));
            if !Path::new(MISC).join("register").exists() {
                let ok = Command::new("mount")
                    .args(["-t", "binfmt_misc", "binfmt_misc", MISC])
                    .status()
                    .is_ok_and(|s| s.success());
                assert!(ok, "cannot mount binfmt_misc on {MISC} (the arm64 scenarios need root)");
                state.mounted = true;
            }
            if !handler.exists() {
                fs::write(Path::new(MISC).join("register"), line)
                    .unwrap_or_else(|e| panic!("cannot register {name} with binfmt_misc: {e}"));
                state.registered = true;
            }
        }
        state.guards += 1;
        Emulation(())
    }
}

impl Drop for Emulation {
    fn drop(&mut self) {
        let mut state = STATE.lock().unwrap_or_else(|e| e.into_inner());
        state.guards -= 1;
        if state.guards > 0 {
            return;
        }
        if std::mem::take(&mut state.registered) {
            let _ = fs::write(handler(), "-1");
        }
        if std::mem::take(&mut state.mounted) && others_registered().is_empty() {
            let _ = Command::new("umount").arg(MISC).status();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debians_line_is_registered_under_our_own_name() {
        let conf =
            "# comment\n:qemu-aarch64:M::\\x7fELF\\x02:\\xff\\xff:/usr/libexec/qemu-binfmt/aarch64-binfmt-P:OCPF\n";
        assert_eq!(
            own_line(conf, "skyhook-qemu-aarch64-7").as_deref(),
            Some(":skyhook-qemu-aarch64-7:M::\\x7fELF\\x02:\\xff\\xff:/usr/libexec/qemu-binfmt/aarch64-binfmt-P:OCPF")
        );
        assert_eq!(own_line("# nothing\n", "x"), None);
    }
}
