// SPDX-License-Identifier: Apache-2.0
//! qemu without touching this machine's packages: `apt-get download` of
//! qemu-system-x86 (or qemu-system-arm), its data and firmware packages and every
//! library they need that is not installed here, unpacked with `dpkg -x` into
//! `<cache>/qemu/<arch>-<version>/` and run with `LD_LIBRARY_PATH` and `-L` pointing
//! there. (Installing it fails on hosts whose qemu-utils comes from backports.)
//! `SKYHOOK_VM_QEMU=/path/to/qemu-system-x86_64` (`SKYHOOK_VM_QEMU_ARM64=…` for
//! qemu-system-aarch64) uses another binary instead.
//!
//! Guests run under TCG (`/dev/kvm` on these machines cannot run a stock kernel), and
//! with `-no-reboot`: a guest reboot ends the qemu process. arm64 guests run on the
//! `virt` machine with UEFI (qemu-efi-aarch64's `QEMU_EFI.fd` as `-bios`).

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::arch::Arch;
use crate::cache;

/// The package of qemu's loadable modules, unpacked for the TCG accelerator module
/// only (its other modules, and their libraries, serve displays and audio).
const MODULES_PACKAGE: &str = "qemu-system-common";
/// The module directory of the unpacked tree (`QEMU_MODULE_DIR`).
const MODULE_DIR: &str = "usr/lib/x86_64-linux-gnu/qemu";
/// Library directories of the unpacked tree.
const LIB_DIRS: [&str; 2] = ["usr/lib/x86_64-linux-gnu", "lib/x86_64-linux-gnu"];
/// The UEFI firmware of arm64 guests, in the unpacked tree (qemu-efi-aarch64).
const AARCH64_UEFI: &str = "usr/share/qemu-efi-aarch64/QEMU_EFI.fd";

/// The x86_64 guests' CPU model: the x86-64 baseline that Debian builds for. Under
/// TCG the guest's libraries and kernel then take their baseline code paths, which
/// emulate faster than the vector extensions of `-cpu max`: the same boot ran
/// measurably shorter (each run's progress lines give every boot's time).
const X86_64_CPU: &str = "qemu64";

/// What is unpacked for, and passed to, the qemu of one guest architecture.
struct Flavour {
    /// The packages unpacked; their `lib*` dependencies missing here are added.
    packages: &'static [&'static str],
    /// The emulator in the unpacked tree.
    binary: &'static str,
    /// The loadable modules the tier needs, checked for missing libraries (x86's TCG
    /// is a module; arm's is built in).
    modules: &'static [&'static str],
    /// Firmware directories of the unpacked tree (`-L`).
    firmware_dirs: &'static [&'static str],
    /// The environment variable naming another binary to use instead.
    override_var: &'static str,
}

fn flavour(arch: Arch) -> Flavour {
    match arch {
        Arch::X86_64 => Flavour {
            packages: &["qemu-system-x86", "qemu-system-data", "seabios", "ipxe-qemu"],
            binary: "usr/bin/qemu-system-x86_64",
            modules: &["accel-tcg-x86_64.so"],
            firmware_dirs: &["usr/share/qemu", "usr/share/seabios", "usr/lib/ipxe/qemu"],
            override_var: "SKYHOOK_VM_QEMU",
        },
        Arch::Arm64 => Flavour {
            packages: &["qemu-system-arm", "qemu-system-data", "qemu-efi-aarch64"],
            binary: "usr/bin/qemu-system-aarch64",
            modules: &[],
            firmware_dirs: &["usr/share/qemu"],
            override_var: "SKYHOOK_VM_QEMU_ARM64",
        },
    }
}

/// A runnable qemu-system-x86_64 or qemu-system-aarch64.
#[derive(Debug, Clone)]
pub struct Qemu {
    arch: Arch,
    binary: PathBuf,
    /// The unpacked tree, `None` for `SKYHOOK_VM_QEMU`.
    tree: Option<PathBuf>,
}

/// One run of the machine, from power-on to the guest's reboot or power-off.
#[derive(Debug, Clone)]
pub struct Launch {
    /// Virtio disks in order (`/dev/vda`, `/dev/vdb`, …): path and format.
    pub disks: Vec<(PathBuf, &'static str)>,
    /// NVMe disks in order (`/dev/nvme0n1`, …): a raw image and the controller's
    /// serial number.
    pub nvme: Vec<(PathBuf, String)>,
    /// Where the serial console (ttyS0) is written.
    pub console: PathBuf,
    /// How long the guest may run.
    pub timeout: Duration,
    /// The CPU model, when not the architecture's default (`arch::Guest::cpu`).
    pub cpu: Option<&'static str>,
}

/// How a run of the machine went.
#[derive(Debug, Clone, Copy)]
pub struct Ran {
    /// From power-on to the guest's reboot or power-off.
    pub elapsed: Duration,
    /// From power-on to the runner's "system …" line on the serial console (the
    /// system up), when it came.
    pub up: Option<Duration>,
}

/// The runner's line once systemd is up (guest/skyhook-vm-runner).
const UP_MARKER: &[u8] = b"skyhook-vm: system ";

impl Qemu {
    /// The private qemu for `arch` guests, downloaded and unpacked into the cache on
    /// first use.
    pub fn obtain(cache_dir: &Path, arch: Arch) -> Result<Qemu, String> {
        let flavour = flavour(arch);
        if let Some(binary) = std::env::var_os(flavour.override_var) {
            return Ok(Qemu {
                arch,
                binary: binary.into(),
                tree: None,
            });
        }
        let version = candidate(flavour.packages[0])?;
        let dir = cache_dir
            .join("qemu")
            .join(format!("{}-{}", arch.name(), version.replace([':', '~', '+'], "_")));
        let qemu = Qemu {
            arch,
            binary: dir.join(flavour.binary),
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
        let mut packages = closure(flavour.packages)?;
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
            arch,
            binary: tmp.join(flavour.binary),
            tree: Some(tmp.clone()),
        };
        unpacked.check_libraries()?;
        let version_line = cache::run(unpacked.command(None).arg("--version"))?;
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
        let modules = flavour(self.arch).modules.iter();
        let objects = std::iter::once(self.binary.clone()).chain(modules.map(|m| tree.join(MODULE_DIR).join(m)));
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
                "the downloaded qemu still misses libraries: {}; add their packages to flavour() in {}",
                missing.join(", "),
                file!()
            ))
        }
    }

    /// The guest architecture this qemu runs.
    pub fn arch(&self) -> Arch {
        self.arch
    }

    /// The emulator with the private libraries and firmware, TCG, 2 vCPUs, 1 GiB, no
    /// display, no default devices, `-no-reboot`; for arm64 the `virt` machine with a
    /// Cortex-A57 (`max` adds features TCG emulates slowly, such as pointer
    /// authentication; the two are not compared yet: `SKYHOOK_VM_ARM64_CPU`) and UEFI.
    /// `cpu` replaces the architecture's CPU model (a guest that needs another one).
    pub fn command(&self, cpu: Option<&str>) -> Command {
        let mut cmd = Command::new(&self.binary);
        if let Some(path) = self.library_path() {
            cmd.env("LD_LIBRARY_PATH", path);
        }
        if let Some(tree) = &self.tree {
            cmd.env("QEMU_MODULE_DIR", tree.join(MODULE_DIR));
            for d in flavour(self.arch).firmware_dirs {
                cmd.arg("-L").arg(tree.join(d));
            }
        }
        match self.arch {
            Arch::X86_64 => cmd.args(["-cpu", cpu.unwrap_or(X86_64_CPU)]),
            Arch::Arm64 => {
                let uefi = match &self.tree {
                    Some(tree) => tree.join(AARCH64_UEFI),
                    None => Path::new("/").join(AARCH64_UEFI),
                };
                let model = cpu.map_or_else(cpu_arm64, str::to_string);
                cmd.args(["-machine", "virt", "-cpu", &model]).arg("-bios").arg(uefi)
            }
        };
        cmd.args(["-accel", "tcg,thread=multi", "-m", "1024"])
            .arg("-smp")
            .arg(self.arch.vcpus().to_string())
            .args(["-nodefaults", "-display", "none", "-no-reboot"]);
        cmd
    }

    /// Runs the machine until the guest reboots or powers off; a timeout kills it.
    pub fn run(&self, launch: &Launch) -> Result<Ran, String> {
        let mut cmd = self.command(launch.cpu);
        for (i, (path, format)) in launch.disks.iter().enumerate() {
            cmd.arg("-drive").arg(format!(
                "file={},format={format},if=virtio,cache=unsafe,index={i}",
                path.display()
            ));
        }
        for (i, (path, serial)) in launch.nvme.iter().enumerate() {
            cmd.arg("-drive")
                .arg(format!(
                    "file={},format=raw,if=none,id=nvme{i},cache=unsafe",
                    path.display()
                ))
                .arg("-device")
                .arg(format!("nvme,drive=nvme{i},serial={serial}"));
        }
        // No option ROM: x86's iPXE ROM means nothing to the arm64 UEFI firmware.
        let nic = match self.arch {
            Arch::X86_64 => "virtio-net-pci,netdev=net0",
            Arch::Arm64 => "virtio-net-pci,netdev=net0,romfile=",
        };
        cmd.args(["-netdev", "user,id=net0", "-device", nic])
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
        let mut up = None;
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", cache::show(&cmd)))?;
        loop {
            if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
                if status.success() {
                    let elapsed = started.elapsed();
                    return Ok(Ran {
                        elapsed,
                        up: up.or_else(|| is_up(&launch.console).then_some(elapsed)),
                    });
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
            if up.is_none() && is_up(&launch.console) {
                up = Some(started.elapsed());
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// The CPU of arm64 guests: `SKYHOOK_VM_ARM64_CPU`, else a Cortex-A57.
fn cpu_arm64() -> String {
    std::env::var("SKYHOOK_VM_ARM64_CPU").unwrap_or_else(|_| "cortex-a57".into())
}

/// True when the serial console shows the runner's "system …" line.
fn is_up(console: &Path) -> bool {
    fs::read(console).is_ok_and(|b| b.windows(UP_MARKER.len()).any(|w| w == UP_MARKER))
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
pub fn candidate(package: &str) -> Result<String, String> {
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

/// `packages` plus every `lib*` package they need, directly or not, that is not
/// installed here.
fn closure(packages: &[&str]) -> Result<Vec<String>, String> {
    let mut todo: Vec<String> = packages.iter().map(|p| p.to_string()).collect();
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
