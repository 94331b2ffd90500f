// SPDX-License-Identifier: Apache-2.0
//! What a scenario uses: a [`Vm`] is one test's machine (a copy-on-write overlay of
//! the cached base image), driven boot by boot. Each [`Vm::boot`] powers the machine
//! on, lets the guest's runner run a bash script once systemd is up, and returns a
//! [`Boot`]: the script's exit code and output, files it left in `$OUT`. The runner reboots
//! the guest at the end, which ends qemu (`-no-reboot`): the next `boot` is the
//! machine coming back through its BIOS and GRUB, a real reboot.
//!
//! The script reaches the host through a data disk (ext4 labelled `skyhook-vm`,
//! mounted at `/run/skyhook-vm`, made by `mkfs.ext4 -d` before each boot and read
//! back with `debugfs` after it). In the script:
//!
//! | name | what |
//! |---|---|
//! | `skyhook-pkg` | on PATH: the static local agent (`skyhook-pkg run …`) |
//! | `$DIST/<package>` | the static package trees of `skyhook-pkg dist` |
//! | `$FILES/<name>` | files and trees added with [`Vm::add_file`] / [`Vm::add_text`] |
//! | `$OUT` | the working directory; what is left there is [`Boot::file`] on the host |
//! | `keep FILE [NAME]` | copies a guest file into `$OUT` |
//! | `record NAME CMD…` | runs a command without ending the script; [`Boot::record`] on the host |
//! | `fail`, `expect_eq`, `expect_code`, `expect_exists`, `expect_gone`, `on_cmdline`, `snapshot`, `expect_same_snapshot`, `expect_untouched`, `wait_until`, `dpkg_status` | assertions and helpers in the guest (`guest/prelude.sh`) |
//! | `<name> MODE…` | `skyhook-pkg run` of a package deployed with [`Vm::package`] |
//!
//! The script runs under `set -euo pipefail` as root, in a systemd service.

#![allow(dead_code)] // the scenario API: not every scenario uses every helper

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use nix::fcntl::Flock;

use crate::image::{self, Image};
use crate::qemu::{self, DirectKernel, Launch, Qemu};
use crate::{cache, disk};

/// The data disk's label (the guest runner looks for it).
const LABEL: &str = "skyhook-vm";
/// What every script starts with.
const PRELUDE: &str = include_str!("guest/prelude.sh");
/// A boot's default time limit: boot (~20 s), the script, the reboot.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);
/// The Rust target of the guest.
const TARGET: &str = "x86_64-unknown-linux-gnu";

/// Everything a test machine is made from, prepared once per test process.
struct Env {
    _lock: Flock<File>,
    cache: PathBuf,
    qemu: Qemu,
    image: Image,
    /// `bin/skyhook-pkg` and `dist/<package>/`.
    payload: PathBuf,
}

static ENV: OnceLock<Result<Env, String>> = OnceLock::new();
/// One guest runs at a time: two TCG guests on a 2-core machine would only slow
/// each other down and blur every timeout.
static MACHINE: Mutex<()> = Mutex::new(());
/// One scenario runs at a time, from `Vm::new` to its drop: its boots are not
/// interleaved with another's, so its log reads in order and its time is its own.
static SCENARIO: Mutex<()> = Mutex::new(());

fn env() -> &'static Env {
    match ENV.get_or_init(prepare) {
        Ok(env) => env,
        Err(e) => panic!("the VM tier cannot run: {e}"),
    }
}

fn prepare() -> Result<Env, String> {
    if !nix::unistd::geteuid().is_root() {
        return Err("it needs root (debootstrap, chroot, the cache in /var/cache); run the tier as root".into());
    }
    let started = Instant::now();
    let cache = cache::dir()?;
    let lock = cache::lock(&cache)?;
    let qemu = Qemu::obtain(&cache)?;
    let image = image::base(&cache, &qemu)?;
    let payload = build_payload(&cache)?;
    eprintln!("vm: ready in {:.0?}", started.elapsed());
    Ok(Env {
        _lock: lock,
        cache,
        qemu,
        image,
        payload,
    })
}

/// `skyhook-pkg dist` and `skyhook-pkg dist-self` (static, release, without fat LTO)
/// for the guest, into `<cache>/payload`.
fn build_payload(cache: &Path) -> Result<PathBuf, String> {
    let started = Instant::now();
    let payload = cache.join("payload");
    cache::remove(&payload)?;
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let tool = env!("CARGO_BIN_EXE_skyhook-pkg");
    for (subcommand, out) in [("dist", "dist"), ("dist-self", "bin/skyhook-pkg")] {
        let mut cmd = Command::new(tool);
        cmd.args([subcommand, "--target", TARGET, "--out"])
            .arg(payload.join(out))
            .current_dir(&workspace);
        if subcommand == "dist-self" {
            // The test agent needs no fat LTO: 1 min to build from cold instead of 3-5.
            cmd.env("CARGO_PROFILE_RELEASE_LTO", "false")
                .env("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "16");
        }
        cache::run(&mut cmd)?;
    }
    eprintln!(
        "vm: dist trees and static skyhook-pkg built in {:.0?}",
        started.elapsed()
    );
    Ok(payload)
}

/// What one boot is made of.
pub struct BootSpec<'a> {
    /// The boot disk and its format.
    pub disk: (&'a Path, &'static str),
    /// A direct kernel boot instead of the disk's GRUB.
    pub kernel: Option<DirectKernel>,
    /// The data disk's tree (the script is added to it).
    pub stage: &'a Path,
    /// Where the boot's logs and results go (`<work>/<label>/`).
    pub work: &'a Path,
    /// The boot's name.
    pub label: &'a str,
    /// Its time limit.
    pub timeout: Duration,
}

/// One boot: the machine runs `script` (after [`PRELUDE`]) in the guest and reboots.
/// An error means the boot itself went wrong (timeout, qemu failure, the guest went
/// down before the script finished); the script's own failure is [`Boot::code`].
pub fn boot_once(qemu: &Qemu, spec: BootSpec, script: &str) -> Result<Boot, String> {
    let dir = spec.work.join(spec.label);
    cache::remove(&dir)?;
    fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    fs::write(spec.stage.join("script"), format!("{PRELUDE}{script}")).map_err(|e| e.to_string())?;
    let data = spec.work.join("data.img");
    disk::make_data_disk(&data, data_disk_mib(spec.stage), LABEL, spec.stage)?;
    let console = dir.join("console.log");
    let machine = MACHINE.lock().unwrap_or_else(|p| p.into_inner());
    let elapsed = qemu
        .run(&Launch {
            disks: vec![(spec.disk.0.to_path_buf(), spec.disk.1), (data.clone(), "raw")],
            kernel: spec.kernel,
            console: console.clone(),
            timeout: spec.timeout,
        })
        .map_err(|e| format!("boot {:?}: {e}", spec.label))?;
    drop(machine);
    for d in ["/result", "/out"] {
        disk::read_dir(&data, d, &dir)?;
    }
    let read = |name: &str| fs::read_to_string(dir.join("result").join(name)).ok();
    let Some(exit) = read("exit") else {
        let how = if read("started").is_none() {
            "the runner never started (no system up, or no data disk seen)"
        } else {
            "the guest went down before the script finished"
        };
        return Err(format!(
            "boot {:?}: {how}\n{}",
            spec.label,
            qemu::console_tail(&console)
        ));
    };
    let mut boot = Boot {
        label: spec.label.to_string(),
        script: Outcome {
            name: "the script".into(),
            code: exit.trim().parse().map_err(|_| format!("result/exit holds {exit:?}"))?,
            output: read("output").unwrap_or_default(),
            context: String::new(),
        },
        state: read("state").unwrap_or_default().trim().to_string(),
        failed_units: read("failed-units").unwrap_or_default(),
        startup: read("startup").unwrap_or_default().trim().to_string(),
        out: dir.join("out"),
        console,
        elapsed,
    };
    boot.script.context = boot.context();
    Ok(boot)
}

/// The data disk's size: its tree and 256 MiB for what the script leaves.
fn data_disk_mib(tree: &Path) -> u64 {
    fn size(p: &Path) -> u64 {
        match fs::symlink_metadata(p) {
            Ok(m) if m.is_dir() => fs::read_dir(p)
                .map(|r| r.flatten().map(|e| size(&e.path())).sum())
                .unwrap_or(0),
            Ok(m) => m.len(),
            Err(_) => 0,
        }
    }
    size(tree) / (1 << 20) * 2 + 256
}

/// How one boot went.
#[derive(Debug, Clone)]
pub struct Boot {
    /// The boot's name.
    pub label: String,
    /// How the boot's script ended.
    pub script: Outcome,
    /// `systemctl is-system-running --wait` before the script ran.
    pub state: String,
    /// `systemctl list-units --failed` before the script ran.
    pub failed_units: String,
    /// `systemd-analyze`: how long the guest took to start.
    pub startup: String,
    /// The files the script left in `$OUT`.
    pub out: PathBuf,
    /// The serial console log.
    pub console: PathBuf,
    /// From power-on to the end of the reboot.
    pub elapsed: Duration,
}

impl Boot {
    /// The boot, its system state and the console's tail, for failure messages.
    fn context(&self) -> String {
        format!(
            "--- boot {:?}: system {}, {:.0?} in qemu; {}\n--- failed units\n{}{}",
            self.label,
            self.state,
            self.elapsed,
            self.startup,
            self.failed_units,
            qemu::console_tail(&self.console)
        )
    }

    /// Everything about the boot, for a failure message.
    pub fn report(&self) -> String {
        format!(
            "--- script: exit code {}\n{}{}",
            self.script.code,
            self.script.output,
            self.context()
        )
    }

    /// Asserts that systemd reached `running`: no unit failed during the boot.
    #[track_caller]
    pub fn expect_running(&self) -> &Self {
        assert!(self.state == "running", "the system is not running\n{}", self.report());
        self
    }

    /// The text of a file the script left in `$OUT`.
    #[track_caller]
    pub fn file(&self, name: &str) -> String {
        fs::read_to_string(self.out.join(name)).unwrap_or_else(|e| panic!("$OUT/{name}: {e}\n{}", self.report()))
    }

    /// How the command the script ran with `record NAME …` ended.
    #[track_caller]
    pub fn record(&self, name: &str) -> Outcome {
        let code = self.file(&format!("{name}.code"));
        Outcome {
            name: format!("recorded command {name:?}"),
            code: code
                .trim()
                .parse()
                .unwrap_or_else(|_| panic!("$OUT/{name}.code holds {code:?}")),
            output: self.file(&format!("{name}.out")),
            context: self.report(),
        }
    }
}

/// How a command in the guest ended: a boot's script, or a command it `record`ed.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// What ran, for messages.
    pub name: String,
    /// Its exit code.
    pub code: i32,
    /// Its stdout and stderr.
    pub output: String,
    /// The boot around it, for failure messages.
    context: String,
}

impl Outcome {
    /// Asserts that it succeeded.
    #[track_caller]
    pub fn success(&self) -> &Self {
        self.expect(self.code == 0, "failed")
    }

    /// Asserts that it failed.
    #[track_caller]
    pub fn failure(&self) -> &Self {
        self.expect(self.code != 0, "succeeded, it should not have")
    }

    /// Asserts that its output contains `text`.
    #[track_caller]
    pub fn expect_output(&self, text: &str) -> &Self {
        self.expect(self.output.contains(text), &format!("printed no {text:?}"))
    }

    /// Asserts that `skyhook-pkg run`'s summary has a row for `mode` whose step exited
    /// with `code` (0: the step succeeded).
    #[track_caller]
    pub fn expect_step(&self, mode: &str, code: i32) -> &Self {
        let code = code.to_string();
        let found = self.output.lines().filter(|l| l.contains(" ms  ")).any(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            cols.len() > 4 && cols[0] == mode && cols[2] == code
        });
        self.expect(found, &format!("has no summary row for {mode} with exit code {code}"))
    }

    #[track_caller]
    fn expect(&self, ok: bool, what: &str) -> &Self {
        assert!(
            ok,
            "{} {what} (exit code {})\n--- its output\n{}{}",
            self.name, self.code, self.output, self.context
        );
        self
    }
}

/// One test's machine.
pub struct Vm {
    /// This scenario's turn ([`SCENARIO`]), held until the machine is dropped.
    _turn: MutexGuard<'static, ()>,
    name: String,
    work: PathBuf,
    overlay: PathBuf,
    stage: PathBuf,
    boots: usize,
    /// When its turn came.
    started: Instant,
    timeout: Duration,
    /// Bash run before every boot's script ([`Vm::define`], [`Vm::package`]).
    defines: String,
}

impl Vm {
    /// A new machine named `name`: a fresh overlay of the base image. Panics with
    /// the reason when the tier cannot run.
    pub fn new(name: &str) -> Vm {
        let env = env();
        let turn = SCENARIO.lock().unwrap_or_else(|p| p.into_inner());
        let started = Instant::now();
        let work = env.cache.join("runs").join(name);
        let overlay = work.join("disk.qcow2");
        let stage = work.join("stage");
        let setup = || -> Result<(), String> {
            cache::remove(&work)?;
            fs::create_dir_all(stage.join("files")).map_err(|e| e.to_string())?;
            cache::run(
                Command::new("qemu-img")
                    .args(["create", "-q", "-f", "qcow2", "-F", "raw", "-b"])
                    .arg(&env.image.disk)
                    .arg(&overlay),
            )?;
            for d in ["bin", "dist"] {
                cache::run(Command::new("cp").arg("-a").arg(env.payload.join(d)).arg(&stage))?;
            }
            Ok(())
        };
        if let Err(e) = setup() {
            panic!("the VM tier cannot set up machine {name}: {e}");
        }
        Vm {
            _turn: turn,
            started,
            name: name.to_string(),
            work,
            overlay,
            stage,
            boots: 0,
            timeout: DEFAULT_TIMEOUT,
            defines: String::new(),
        }
    }

    /// Sets the time limit of the following boots.
    pub fn timeout(&mut self, limit: Duration) -> &mut Self {
        self.timeout = limit;
        self
    }

    /// Adds a file or a whole tree as `$FILES/<name>` for every following boot.
    pub fn add_file(&mut self, name: &str, from: &Path) -> &mut Self {
        let to = self.stage.join("files").join(name);
        cache::remove(&to)
            .and_then(|_| cache::run(Command::new("cp").arg("-a").arg(from).arg(&to)))
            .unwrap_or_else(|e| panic!("{}: cannot add {name}: {e}", self.name));
        self
    }

    /// Adds `$FILES/<name>` holding `text` for every following boot.
    pub fn add_text(&mut self, name: &str, text: &str) -> &mut Self {
        let to = self.stage.join("files").join(name);
        fs::write(&to, text).unwrap_or_else(|e| panic!("{}: {}: {e}", self.name, to.display()));
        self
    }

    /// Adds bash (variables, functions) that every following boot's script starts with.
    pub fn define(&mut self, bash: &str) -> &mut Self {
        self.defines.push_str(bash);
        self.defines.push('\n');
        self
    }

    /// Deploys `package` (a tree of `$DIST`) under the SCR name `name` with `configmap`:
    /// every following boot's script can run `<name> MODE…` or `<name> --lifecycle …`,
    /// that is `skyhook-pkg run "$DIST/<package>" --root / --name <name>` with the
    /// configMap (its keys are files in `$FILES/<name>.configmap/`) and the arguments.
    pub fn package(&mut self, name: &str, package: &str, configmap: &[(&str, &str)]) -> &mut Self {
        let dir = format!("{name}.configmap");
        let real = self.stage.join("files").join(&dir);
        cache::remove(&real)
            .and_then(|_| fs::create_dir_all(&real).map_err(|e| e.to_string()))
            .unwrap_or_else(|e| panic!("{}: {}: {e}", self.name, real.display()));
        for (key, value) in configmap {
            self.add_text(&format!("{dir}/{key}"), value);
        }
        self.define(&format!(
            "{name}() {{ skyhook-pkg run \"$DIST/{package}\" --root / --name {name} --configmap-dir \"$FILES/{dir}\" \"$@\"; }}"
        ))
    }

    /// Powers the machine on, runs `script` in the guest once systemd is up, and
    /// returns when the guest has rebooted. Panics when the boot itself fails
    /// (timeout, the guest went down early), with the serial console's tail.
    pub fn boot(&mut self, label: &str, script: &str) -> Boot {
        self.boots += 1;
        let label = format!("{:02}-{label}", self.boots);
        let started = Instant::now();
        let boot = boot_once(
            &env().qemu,
            BootSpec {
                disk: (&self.overlay, "qcow2"),
                kernel: None,
                stage: &self.stage,
                work: &self.work,
                label: &label,
                timeout: self.timeout,
            },
            &format!("{}{script}", self.defines),
        )
        .unwrap_or_else(|e| panic!("{}: {e}", self.name));
        eprintln!(
            "vm: {} boot {label}: exit {} in {:.0?} ({:.0?} with the disks); guest: {}",
            self.name,
            boot.script.code,
            boot.elapsed,
            started.elapsed(),
            boot.startup.lines().next().unwrap_or("?")
        );
        boot
    }
}

impl Drop for Vm {
    fn drop(&mut self) {
        eprintln!(
            "vm: {}: {} boot(s) in {:.0?}",
            self.name,
            self.boots,
            self.started.elapsed()
        );
        if std::thread::panicking() || std::env::var_os("SKYHOOK_VM_KEEP").is_some() {
            eprintln!(
                "vm: {}: kept for inspection: {} (disk, console logs and results per boot)",
                self.name,
                self.work.display()
            );
        } else if let Err(e) = cache::remove(&self.work) {
            eprintln!("vm: {e}");
        }
    }
}
