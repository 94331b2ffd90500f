// SPDX-License-Identifier: Apache-2.0
//! qemu without touching this machine's packages: `apt-get download` of
//! qemu-system-x86, its data and firmware packages and every library they need that
//! is not installed here, unpacked with `dpkg -x` into `<cache>/qemu/<version>/` and
//! run with `LD_LIBRARY_PATH` and `-L` pointing there. (Installing it fails on hosts
//! whose qemu-utils comes from backports.) `SKYHOOK_VM_QEMU=/path/to/qemu-system-x86_64`
//! uses another binary instead.
//!
//! Guests run under TCG (`/dev/kvm` on these machines cannot run a stock kernel), and
//! with `-no-reboot`: a guest reboot ends the qemu process.

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::cache;

/// The packages unpacked; their `lib*` dependencies missing here are added.
const PACKAGES: [&str; 4] = ["qemu-system-x86", "qemu-system-data", "seabios", "ipxe-qemu"];
/// The package of qemu's loadable modules, unpacked for the TCG accelerator module
/// only (its other modules, and their libraries, serve displays and audio).
const MODULES_PACKAGE: &str = "qemu-system-common";
/// The module directory of the unpacked tree (`QEMU_MODULE_DIR`).
const MODULE_DIR: &str = "usr/lib/x86_64-linux-gnu/qemu";
/// The modules the tier needs, checked for missing libraries.
const MODULES: [&str; 1] = ["accel-tcg-x86_64.so"];
/// Library directories of the unpacked tree.
const LIB_DIRS: [&str; 2] = ["usr/lib/x86_64-linux-gnu", "lib/x86_64-linux-gnu"];
/// Firmware directories of the unpacked tree (`-L`).
const FIRMWARE_DIRS: [&str; 3] = ["usr/share/qemu", "usr/share/seabios", "usr/lib/ipxe/qemu"];

/// A runnable qemu-system-x86_64.
#[derive(Debug, Clone)]
pub struct Qemu {
    binary: PathBuf,
    /// The unpacked tree, `None` for `SKYHOOK_VM_QEMU`.
    tree: Option<PathBuf>,
}

/// The kernel, initrd and command line of a direct-kernel boot (`-kernel`).
#[derive(Debug, Clone)]
pub struct DirectKernel {
    /// The kernel image.
    pub kernel: PathBuf,
    /// The initrd.
    pub initrd: PathBuf,
    /// The kernel command line.
    pub append: String,
}

/// One run of the machine, from power-on to the guest's reboot or power-off.
#[derive(Debug, Clone)]
pub struct Launch {
    /// Virtio disks in order (`/dev/vda`, `/dev/vdb`, …): path and format.
    pub disks: Vec<(PathBuf, &'static str)>,
    /// Boot this kernel instead of the disk's boot loader.
    pub kernel: Option<DirectKernel>,
    /// Where the serial console (ttyS0) is written.
    pub console: PathBuf,
    /// How long the guest may run.
    pub timeout: Duration,
}

impl Qemu {
    /// The private qemu, downloaded and unpacked into the cache on first use.
    pub fn obtain(cache_dir: &Path) -> Result<Qemu, String> {
        if let Some(binary) = std::env::var_os("SKYHOOK_VM_QEMU") {
            return Ok(Qemu {
                binary: binary.into(),
                tree: None,
            });
        }
        let version = candidate("qemu-system-x86")?;
        let dir = cache_dir.join("qemu").join(version.replace([':', '~', '+'], "_"));
        let qemu = Qemu {
            binary: dir.join("usr/bin/qemu-system-x86_64"),
            tree: Some(dir.clone()),
        };
        if dir.join(".complete").exists() {
            return Ok(qemu);
        }
        let started = Instant::now();
        let tmp = dir.with_extension("partial");
        cache::remove(&tmp)?;
        let debs = tmp.join("debs");
        fs::create_dir_all(&debs).map_err(|e| format!("{}: {e}", debs.display()))?;
        let mut packages = closure()?;
        packages.push(MODULES_PACKAGE.to_string());
        cache::run(
            Command::new("apt-get")
                .args(["download", "-q", "-o", "APT::Sandbox::User=root"])
                .args(&packages)
                .current_dir(&debs),
        )
        .map_err(|e| format!("cannot download qemu ({}): {e}", packages.join(" ")))?;
        for deb in fs::read_dir(&debs).map_err(|e| e.to_string())?.flatten() {
            cache::run(Command::new("dpkg").arg("-x").arg(deb.path()).arg(&tmp))?;
        }
        let unpacked = Qemu {
            binary: tmp.join("usr/bin/qemu-system-x86_64"),
            tree: Some(tmp.clone()),
        };
        unpacked.check_libraries()?;
        let version_line = cache::run(unpacked.command().arg("--version"))?;
        cache::remove(&dir)?;
        fs::rename(&tmp, &dir).map_err(|e| format!("{} -> {}: {e}", tmp.display(), dir.display()))?;
        fs::write(dir.join(".complete"), &version_line).map_err(|e| e.to_string())?;
        eprintln!(
            "vm: qemu {} unpacked into {} in {:.0?}",
            version_line.lines().next().unwrap_or_default(),
            dir.display(),
            started.elapsed()
        );
        Ok(qemu)
    }

    fn library_path(&self) -> Option<String> {
        let tree = self.tree.as_ref()?;
        let dirs: Vec<String> = LIB_DIRS.iter().map(|d| tree.join(d).display().to_string()).collect();
        Some(dirs.join(":"))
    }

    fn check_libraries(&self) -> Result<(), String> {
        let tree = self.tree.as_ref().expect("an unpacked qemu");
        let mut missing = Vec::new();
        let objects = std::iter::once(self.binary.clone()).chain(MODULES.iter().map(|m| tree.join(MODULE_DIR).join(m)));
        for object in objects {
            if !object.is_file() {
                return Err(format!("the downloaded qemu has no {}", object.display()));
            }
            let mut ldd = Command::new("ldd");
            ldd.arg(&object);
            if let Some(path) = self.library_path() {
                ldd.env("LD_LIBRARY_PATH", path);
            }
            let out = cache::run(&mut ldd)?;
            missing.extend(
                out.lines()
                    .filter(|l| l.contains("not found"))
                    .map(|l| l.split_whitespace().next().unwrap_or(l).to_string()),
            );
        }
        if missing.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "the downloaded qemu still misses libraries: {}; add their packages to PACKAGES in {}",
                missing.join(", "),
                file!()
            ))
        }
    }

    /// `qemu-system-x86_64` with the private libraries and firmware, TCG, 2 vCPUs,
    /// 1 GiB, no display, no default devices, `-no-reboot`.
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(&self.binary);
        if let Some(path) = self.library_path() {
            cmd.env("LD_LIBRARY_PATH", path);
        }
        if let Some(tree) = &self.tree {
            cmd.env("QEMU_MODULE_DIR", tree.join(MODULE_DIR));
            for d in FIRMWARE_DIRS {
                cmd.arg("-L").arg(tree.join(d));
            }
        }
        cmd.args(["-accel", "tcg,thread=multi", "-cpu", "max", "-smp", "2", "-m", "1024"])
            .args(["-nodefaults", "-display", "none", "-no-reboot"]);
        cmd
    }

    /// Runs the machine until the guest reboots or powers off; a timeout kills it.
    pub fn run(&self, launch: &Launch) -> Result<Duration, String> {
        let mut cmd = self.command();
        for (i, (path, format)) in launch.disks.iter().enumerate() {
            cmd.arg("-drive").arg(format!(
                "file={},format={format},if=virtio,cache=unsafe,index={i}",
                path.display()
            ));
        }
        if let Some(k) = &launch.kernel {
            cmd.arg("-kernel").arg(&k.kernel).arg("-initrd").arg(&k.initrd);
            cmd.arg("-append").arg(&k.append);
        }
        cmd.args(["-netdev", "user,id=net0", "-device", "virtio-net-pci,netdev=net0"])
            .arg("-serial")
            .arg(format!("file:{}", launch.console.display()));
        let stderr_path = launch.console.with_extension("qemu.log");
        let stderr = fs::File::create(&stderr_path).map_err(|e| format!("{}: {e}", stderr_path.display()))?;
        // SAFETY: prctl(PR_SET_PDEATHSIG) is async-signal-safe; it makes a killed test
        // run take its guest with it instead of leaving qemu spinning.
        unsafe {
            cmd.pre_exec(|| {
                nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL).map_err(std::io::Error::from)
            });
        }
        let started = Instant::now();
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", cache::show(&cmd)))?;
        loop {
            if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
                if status.success() {
                    return Ok(started.elapsed());
                }
                return Err(format!(
                    "qemu failed ({status}): {}\n{}",
                    fs::read_to_string(&stderr_path).unwrap_or_default().trim(),
                    console_tail(&launch.console)
                ));
            }
            if started.elapsed() > launch.timeout {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "the guest did not reboot or power off within {} s; it was killed\n{}",
                    launch.timeout.as_secs(),
                    console_tail(&launch.console)
                ));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// The last lines of a serial console log, framed for a failure message.
pub fn console_tail(console: &Path) -> String {
    let text = fs::read(console).map(|b| String::from_utf8_lossy(&b).into_owned());
    match text {
        Ok(t) => format!(
            "--- last 40 lines of the serial console ({})\n{}---",
            console.display(),
            cache::tail(&plain(&t), 40)
        ),
        Err(e) => format!("(no serial console log at {}: {e})", console.display()),
    }
}

/// `text` without carriage returns and terminal escape sequences (GRUB's screen
/// handling).
fn plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\r' => {}
            '\x1b' => {
                // CSI: ESC [ parameters, then a final byte in @..~
                if chars.next() == Some('[') {
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// The version apt would download of `package`, refreshing the lists once if needed.
fn candidate(package: &str) -> Result<String, String> {
    let read = || -> Result<Option<String>, String> {
        let out = cache::run(Command::new("apt-cache").args(["policy", package]))?;
        Ok(out
            .lines()
            .find_map(|l| l.trim().strip_prefix("Candidate: "))
            .filter(|v| *v != "(none)")
            .map(str::to_string))
    };
    if let Some(v) = read()? {
        return Ok(v);
    }
    cache::run(Command::new("apt-get").args(["update", "-q"]))?;
    read()?.ok_or_else(|| {
        format!("apt knows no {package} even after apt-get update: add a Debian mirror to this machine's apt sources")
    })
}

/// PACKAGES plus every `lib*` package they need, directly or not, that is not
/// installed here.
fn closure() -> Result<Vec<String>, String> {
    let mut todo: Vec<String> = PACKAGES.iter().map(|p| p.to_string()).collect();
    let mut seen: Vec<String> = Vec::new();
    while let Some(p) = todo.pop() {
        if seen.contains(&p) {
            continue;
        }
        let out = cache::run(Command::new("apt-cache").args([
            "depends",
            "--no-recommends",
            "--no-suggests",
            "--no-conflicts",
            "--no-breaks",
            "--no-replaces",
            "--no-enhances",
            &p,
        ]))?;
        for dep in out.lines().filter_map(|l| {
            let l = l.trim().trim_start_matches('|');
            l.strip_prefix("Depends: ").or_else(|| l.strip_prefix("PreDepends: "))
        }) {
            if dep.starts_with("lib") && !seen.iter().any(|s| s == dep) && !is_installed(dep) {
                todo.push(dep.to_string());
            }
        }
        seen.push(p);
    }
    Ok(seen)
}

fn is_installed(package: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${db:Status-Abbrev}", package])
        .stderr(Stdio::null())
        .output()
        .map(|o| o.stdout.starts_with(b"ii"))
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn console_text_loses_escape_sequences() {
        assert_eq!(
            plain("\x1b[H\x1b[J\x1b[1;1H  Booting `Debian'\r\nok\r\n"),
            "  Booting `Debian'\nok\n"
        );
    }
}
