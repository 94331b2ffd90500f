// SPDX-License-Identifier: Apache-2.0
//! Running arm64 programs on this machine for the arm64 scenarios: qemu-user
//! registered with binfmt_misc while at least one [`Emulation`] is alive, with
//! Debian's own line (`/usr/lib/binfmt.d/qemu-aarch64.conf`, flag F: the interpreter
//! is opened at registration, so it serves inside chroots too). What this process
//! registered or mounted is taken back when the last guard goes; a registration
//! found in place is left alone.

use std::fs;
use std::path::Path;
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

/// While alive, this machine runs aarch64 programs through qemu-user.
pub struct Emulation(());

impl Emulation {
    /// Registers qemu-aarch64 unless it already is; panics saying what is missing.
    pub fn start() -> Emulation {
        let mut state = STATE.lock().unwrap_or_else(|e| e.into_inner());
        let handler = Path::new(MISC).join(format!("qemu-{ARCH}"));
        if state.guards == 0 && !handler.exists() {
            let conf = format!("/usr/lib/binfmt.d/qemu-{ARCH}.conf");
            let line = fs::read_to_string(&conf).unwrap_or_else(|e| {
                panic!("{conf}: {e}: the arm64 scenarios need qemu-user-static (run ci/setup-toolchain)")
            });
            if !Path::new(MISC).join("register").exists() {
                let ok = Command::new("mount")
                    .args(["-t", "binfmt_misc", "binfmt_misc", MISC])
                    .status()
                    .is_ok_and(|s| s.success());
                assert!(ok, "cannot mount binfmt_misc on {MISC} (the arm64 scenarios need root)");
                state.mounted = true;
            }
            let line: String = line.lines().filter(|l| !l.starts_with('#')).collect();
            fs::write(Path::new(MISC).join("register"), line)
                .unwrap_or_else(|e| panic!("cannot register qemu-{ARCH} with binfmt_misc: {e}"));
            state.registered = true;
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
            let _ = fs::write(Path::new(MISC).join(format!("qemu-{ARCH}")), "-1");
        }
        if std::mem::take(&mut state.mounted) {
            let _ = Command::new("umount").arg(MISC).status();
        }
    }
}
