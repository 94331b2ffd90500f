// SPDX-License-Identifier: Apache-2.0
//! A simulated node for the tuned package: stand-ins for systemctl, the package
//! managers, tuned and tuned-adm that change the scratch root the way the real tools
//! change a node (package files, the enablement link, tuned's pid file, the active
//! profile), so tests can follow a node through apply, config, checks and uninstall.
#![allow(dead_code)]

use skyhook_core::os::distro::fixtures;
use skyhook_testkit::{DistPackage, Manager, Node};

/// The package binary under test.
/// (nvidia-tuned's tests include this module too: there it is nvidia-tuned's binary.)
pub const BIN: &str = match (
    option_env!("CARGO_BIN_EXE_tuned"),
    option_env!("CARGO_BIN_EXE_nvidia-tuned"),
) {
    (Some(bin), _) | (None, Some(bin)) => bin,
    (None, None) => panic!("no package binary to test"),
};

/// Where the built-in profiles of tuned `version` live.
pub fn system_dir(version: &str) -> &'static str {
    if newer_layout(version) {
        "/usr/lib/tuned/profiles"
    } else {
        "/usr/lib/tuned"
    }
}

/// Where custom profiles go for tuned `version`.
pub fn user_dir(version: &str) -> &'static str {
    if newer_layout(version) {
        "/etc/tuned/profiles"
    } else {
        "/etc/tuned"
    }
}

fn newer_layout(version: &str) -> bool {
    parts(version) >= (2, 23, 0)
}

fn parts(version: &str) -> (u32, u32, u32) {
    let mut p = version.split('.').map(|n| n.parse::<u32>().unwrap());
    (p.next().unwrap(), p.next().unwrap(), p.next().unwrap_or(0))
}

/// The profile directories (system, user) tuned `version` is built with: tuned's
/// spec builds RHEL < 10 with the old ones from 2.24.1 on (`%if 0%{?rhel} < 10`).
pub fn build_dirs(version: &str, el_below_10: bool) -> (&'static str, &'static str) {
    if el_below_10 && parts(version) >= (2, 24, 1) {
        ("/usr/lib/tuned", "/etc/tuned")
    } else {
        (system_dir(version), user_dir(version))
    }
}

/// Where the simulated tuned package installs its Python constants.
fn consts_path(debian: bool) -> &'static str {
    if debian {
        "/usr/lib/python3/dist-packages/tuned/consts.py"
    } else {
        "/usr/lib/python3.9/site-packages/tuned/consts.py"
    }
}

/// The built-in profiles the simulated tuned package ships.
pub const BUILTIN: &[(&str, &str)] = &[
    (
        "balanced",
        "[main]\nsummary=General non-specialized tuned profile\n\n[cpu]\ngovernor=conservative|powersave\n",
    ),
    (
        "throughput-performance",
        "[main]\nsummary=Broadly applicable tuning that provides excellent performance\n\n[sysctl]\nvm.swappiness=10\n",
    ),
    (
        "latency-performance",
        "[main]\nsummary=Optimize for deterministic performance\n\n[cpu]\nforce_latency=1\n",
    ),
    (
        "network-latency",
        "[main]\nsummary=Optimize for low latency network performance\ninclude=latency-performance\n\n[sysctl]\nnet.core.busy_read=50\n",
    ),
    (
        "realtime",
        "[main]\nsummary=Optimize for realtime workloads\ninclude=network-latency\n\n[bootloader]\ncmdline_realtime=+isolcpus=2-3\n",
    ),
];

/// Shell commands that put the tuned package's files on the node (as a package
/// install would): the programs, the built-in profiles in the build's system
/// directory, and the build's directories in its `consts.py`.
fn install_sh(version: &str, (system, user): (&str, &str), debian: bool) -> String {
    let mut sh = String::from(
        "R=\"$SKYHOOK_HOST_ROOT\"; D=$(dirname \"$0\")\nmkdir -p \"$R/usr/sbin\" \"$R/etc/tuned\" \"$R/var/log/tuned\"\n",
    );
    sh.push_str(&format!(
        "mkdir -p \"$R{user}\"\necho '{system} {user}' > \"$D/tuned-dirs\"\n"
    ));
    let consts = if newer_layout(version) {
        sh.push_str("touch \"$D/tuned-profile-dirs-option\"\n");
        format!("USER_PROFILES_DIR = \\\"{user}\\\"\\nSYSTEM_PROFILES_DIR = \\\"{system}\\\"\\n")
    } else {
        sh.push_str("rm -f \"$D/tuned-profile-dirs-option\"\n");
        format!("LOAD_DIRECTORIES = [\\\"{system}\\\", \\\"{user}\\\"]\\n")
    };
    let path = consts_path(debian);
    sh.push_str(&format!(
        "mkdir -p \"$(dirname \"$R{path}\")\"\nprintf \"{consts}\" > \"$R{path}\"\n"
    ));
    sh.push_str("printf '#!/usr/bin/python3\\n' > \"$R/usr/sbin/tuned\"\n");
    sh.push_str("printf '#!/usr/bin/python3\\n' > \"$R/usr/sbin/tuned-adm\"\n");
    for (name, content) in BUILTIN {
        let dir = format!("{system}/{name}");
        sh.push_str(&format!(
            "mkdir -p \"$R{dir}\"\nprintf '%s' '{content}' > \"$R{dir}/tuned.conf\"\n"
        ));
    }
    for (program, body) in [("tuned", tuned_sh(version)), ("tuned-adm", tuned_adm_sh(true))] {
        sh.push_str(&format!(
            "cat > \"$D/{program}\" <<'STANDIN'\n#!/bin/sh\n{body}\nSTANDIN\nchmod 755 \"$D/{program}\"\n"
        ));
    }
    sh
}

/// Shell commands that take the tuned package's files away again (as a purge would).
const REMOVE_SH: &str = "R=\"$SKYHOOK_HOST_ROOT\"; D=$(dirname \"$0\")
rm -f \"$R/usr/sbin/tuned\" \"$R/usr/sbin/tuned-adm\" \"$R/run/tuned/tuned.pid\"
rm -f \"$R/etc/systemd/system/multi-user.target.wants/tuned.service\"
rm -rf \"$R/usr/lib/tuned\" \"$R/usr/lib/python3\" \"$R/usr/lib/python3.9\"
rm -f \"$D/tuned\" \"$D/tuned-adm\" \"$D/tuned-dirs\" \"$D/tuned-profile-dirs-option\"";

/// The `tuned` stand-in: answers `--version`.
pub fn tuned_sh(version: &str) -> String {
    format!("echo 'tuned {version}'")
}

/// The `tuned-adm` stand-in. Models tuned-adm of tuned 2.28.0
/// (redhat-performance/tuned at 2bfa442, `tuned/admin/admin.py`, `tuned-adm.py`; read
/// for this model), the daemon answering over D-Bus:
///
/// - `list`: `Available profiles:`, then one line per profile of the directories
///   tuned was built with (or those `profile_dirs` in tuned-main.conf sets, from
///   tuned 2.23 on), sorted: `- <name>` padded to 30 columns then `- <summary>`
///   (the `summary=` of its `tuned.conf`), `- <name>` alone without a summary; then
///   the active profile's line as `active` prints it.
/// - `profile <name>…`: a name no directory holds fails with `Unable to switch
///   profile: Requested profile '<names>' doesn't exist.` (exit 1, nothing changed);
///   otherwise the names, space-separated, become `/etc/tuned/active_profile` and
///   `profile_mode` is `manual`.
/// - `active`: `Current active profile: <names>` (exit 0) while tuned runs (its pid
///   file); with tuned stopped, `It seems that tuned daemon is not running, preset
///   profile is not activated.` and `Preset profile: <names>` (exit 0); no profile:
///   `No current active profile.` (exit 1).
/// - `verify`: `Verification succeeded, current system settings match the preset
///   profile.` (exit 0) or, when `verify_passes` is false, `Verification failed, …`
///   with tuned's advice (restart tuned, or reboot for the bootloader plugin) (exit 1);
///   both end with `See TuneD log file ('/var/log/tuned/tuned.log') for details.`
///
/// Not modelled: applying a profile's settings, the daemon's log, `--async`,
/// `off`, `recommend`, `auto_profile`, `profile_info`, the no-daemon fallback.
pub fn tuned_adm_sh(verify_passes: bool) -> String {
    let verify = if verify_passes {
        "echo 'Verification succeeded, current system settings match the preset profile.'"
    } else {
        "echo 'Verification failed, current system settings differ from the preset profile.'; \
         echo 'You can mostly fix this by restarting the TuneD daemon, e.g.:'; echo '  systemctl restart tuned'; \
         echo 'or'; echo '  service tuned restart'; \
         echo 'Sometimes (if some plugins like bootloader are used) a reboot may be required.'; rc=1"
    };
    format!(
        "R=\"$SKYHOOK_HOST_ROOT\"; D=$(dirname \"$0\"); T=$(printf '\\t')
dirs=$(cat \"$D/tuned-dirs\")
if [ -f \"$D/tuned-profile-dirs-option\" ]; then
  pd=$(sed -n 's/#.*//; s/^[[:space:]]*profile_dirs[[:space:]]*=//p' \"$R/etc/tuned/tuned-main.conf\" 2>/dev/null | tr ',;' '  ')
  [ -n \"$pd\" ] && dirs=\"$pd\"
fi
active() {{
  if [ -s \"$R/etc/tuned/active_profile\" ]; then
    if [ -e \"$R/run/tuned/tuned.pid\" ]; then echo \"Current active profile: $(cat \"$R/etc/tuned/active_profile\")\"
    else echo 'It seems that tuned daemon is not running, preset profile is not activated.'; echo \"Preset profile: $(cat \"$R/etc/tuned/active_profile\")\"; fi
  else echo 'No current active profile.'; return 1; fi
}}
case \"$1\" in
  list) echo 'Available profiles:'
        for d in $dirs; do for f in \"$R$d\"/*/tuned.conf; do [ -f \"$f\" ] || continue
          printf '%s\\t%s\\n' \"$(basename \"$(dirname \"$f\")\")\" \"$(sed -n 's/^summary=//p' \"$f\" | head -n 1)\"
        done; done | sort -t \"$T\" -k1,1 -u | while IFS=\"$T\" read -r n s; do
          if [ -n \"$s\" ]; then printf '%-30s- %s\\n' \"- $n\" \"$s\"; else echo \"- $n\"; fi
        done
        active || true ;;
  profile) shift
        for n; do found=0; for d in $dirs; do [ -f \"$R$d/$n/tuned.conf\" ] && found=1; done
          if [ $found = 0 ]; then echo \"Unable to switch profile: Requested profile '$*' doesn't exist.\" >&2; exit 1; fi
        done
        echo \"$*\" > \"$R/etc/tuned/active_profile\"; echo manual > \"$R/etc/tuned/profile_mode\" ;;
  active) active ;;
  verify) rc=0; {verify}; echo \"See TuneD log file ('/var/log/tuned/tuned.log') for details.\"; exit $rc ;;
  *) echo \"unexpected tuned-adm $*\" >&2; exit 2 ;;
esac"
    )
}

/// The `systemctl` stand-in: enablement is the wants link, activity tuned's pid file
/// (another unit's: a marker under `/run/stand-in-units`, see [`runtime_unit`]); the
/// tuned unit file exists while the tuned package is installed (`/usr/sbin/tuned`).
/// Models systemctl of systemd 253+ (systemd/systemd `src/systemctl/`
/// `systemctl-start-unit.c`, `systemctl-is-active.c`, `systemctl-is-enabled.c`, as
/// read on main; systemd 255 is Ubuntu 24.04's):
///
/// - `enable <unit>`: the `multi-user.target.wants` link; without the unit file,
///   `Failed to enable unit: Unit file <unit>.service does not exist.` (exit 1).
/// - `disable`: the link removed.
/// - `start`, `restart`: the unit runs; without the unit file, `Failed to start
///   <unit>.service: Unit <unit>.service not found.` (exit 5).
/// - `stop`: the unit no longer runs.
/// - `is-enabled`: `enabled` (exit 0) or `disabled` (exit 1); without the unit file
///   `not-found` (exit 4; systemd 252 and older print an error and exit 1).
/// - `is-active`: `active` (exit 0) or `inactive` (exit 3; without the unit file
///   exit 4, systemd 252 and older 3).
///
/// - `show --property=MainPID --value <unit>`: the test kit's model
///   ([`skyhook_testkit::systemctl_show_main_pid!`]): the pid of a unit
///   [`runtime_unit`] or [`skyhook_testkit::systemd::run_unit`] started, else `0`.
///
/// Not modelled: `[Install]` sections other than `WantedBy=multi-user.target`,
/// `daemon-reload`, jobs that fail, other `show` properties, masking, a restart of
/// another unit giving it a new main process (the test restarts it with
/// `skyhook_testkit::systemd::run_unit`, as the agent's service interrupt would).
pub const SYSTEMCTL_SH: &str = concat!("R=\"$SKYHOOK_HOST_ROOT\"; W=\"$R/etc/systemd/system/multi-user.target.wants\"
case \"$1\" in
", skyhook_testkit::systemctl_show_main_pid!(), "  enable) [ -e \"$R/usr/sbin/tuned\" ] || { echo \"Failed to enable unit: Unit file $2.service does not exist.\" >&2; exit 1; }
          mkdir -p \"$W\"; ln -sf /usr/lib/systemd/system/$2.service \"$W/$2.service\" ;;
  disable) rm -f \"$W/$2.service\" ;;
  start) [ -e \"$R/usr/sbin/tuned\" ] || { echo \"Failed to start $2.service: Unit $2.service not found.\" >&2; exit 5; }
         mkdir -p \"$R/run/tuned\"; echo 4242 > \"$R/run/tuned/tuned.pid\" ;;
  restart) [ -e \"$R/usr/sbin/tuned\" ] || { echo \"Failed to restart $2.service: Unit $2.service not found.\" >&2; exit 5; }
         mkdir -p \"$R/run/tuned\"; echo 4242 > \"$R/run/tuned/tuned.pid\" ;;
  stop) rm -f \"$R/run/tuned/tuned.pid\" ;;
  is-enabled) if [ -L \"$W/$2.service\" ]; then echo enabled
      elif [ \"${2%.service}\" = tuned ] && [ ! -e \"$R/usr/sbin/tuned\" ]; then echo not-found; exit 4
      else echo disabled; exit 1; fi ;;
  is-active) case \"$2\" in
      tuned|tuned.service) A=\"$R/run/tuned/tuned.pid\"; [ -e \"$R/usr/sbin/tuned\" ] || { echo inactive; exit 4; } ;;
      *) A=\"$R/run/stand-in-units/${2%.service}.active\" ;;
    esac
    if [ -e \"$A\" ]; then echo active; else echo inactive; exit 3; fi ;;
  *) echo \"unexpected systemctl $*\" >&2; exit 1 ;;
esac");

/// Installs a unit file for `unit` (`rke2-agent.service`) under `dir`, running
/// (as `systemctl is-active` answers) when `active`: then its main process (a pid
/// derived from the name, [`runtime_pid`]) has the stack limit a service gets
/// when nothing sets it (it started before any drop-in of ours).
pub fn runtime_unit(node: &Node, dir: &str, unit: &str, active: bool) {
    node.file(&format!("{dir}/{unit}"), "[Service]\nExecStart=/usr/bin/true\n");
    if active {
        let name = unit.strip_suffix(".service").unwrap_or(unit);
        node.file(&format!("/run/stand-in-units/{name}.active"), "");
        skyhook_testkit::systemd::run_unit(node, unit, runtime_pid(unit), skyhook_testkit::systemd::DEFAULT_STACK);
    }
}

/// The main process id [`runtime_unit`] gives `unit`: one per unit name.
pub fn runtime_pid(unit: &str) -> u32 {
    10_000 + unit.bytes().map(u32::from).sum::<u32>()
}

/// The tuned package of the simulated repositories: `version` built with `dirs`.
pub fn tuned_package(version: &str, dirs: (&str, &str), debian: bool) -> DistPackage {
    let release = if debian { "-1" } else { "-1.el9" };
    DistPackage::new("tuned", &format!("{version}{release}"))
        .on_install(&install_sh(version, dirs, debian))
        .on_remove(REMOVE_SH)
}

/// A Debian-like node (Ubuntu 22.04) with systemd running; tuned `version` installed
/// and running, or not installed (`None`) but installable as `installable`.
pub fn debian(installed: Option<&str>) -> Node {
    let version = installed.unwrap_or("2.21.0");
    let node = Node::new(BIN);
    node.file("/etc/os-release", fixtures::UBUNTU_2204)
        .systemd_running(true);
    node.stand_in("systemctl", SYSTEMCTL_SH).package_manager(
        Manager::Apt,
        &[tuned_package(version, build_dirs(version, false), true)],
    );
    if installed.is_some() {
        preinstall(&node, version);
    }
    node
}

/// A RHEL-like node (`os_release`) with dnf (or only yum when `yum_only`).
pub fn rhel(os_release: &str, yum_only: bool, installed: Option<&str>) -> Node {
    let version = installed.unwrap_or("2.21.0");
    let node = Node::new(BIN);
    node.file("/etc/os-release", os_release).systemd_running(true);
    let el_below_10 = ["platform:el8", "platform:el9"].iter().any(|p| os_release.contains(p));
    if el_below_10 {
        std::fs::write(node.commands_dir().join("el-below-10"), "").unwrap();
    }
    let manager = if yum_only { Manager::Yum } else { Manager::Dnf };
    node.stand_in("systemctl", SYSTEMCTL_SH).package_manager(
        manager,
        &[tuned_package(version, build_dirs(version, el_below_10), false)],
    );
    if installed.is_some() {
        preinstall(&node, version);
    }
    node
}

/// Installs (or upgrades to) tuned `version` on `node` and starts it, as apply
/// would have.
pub fn preinstall(node: &Node, version: &str) {
    let debian = node.commands_dir().join("dpkg-query").exists();
    let el_below_10 = node.commands_dir().join("el-below-10").exists();
    node.offer_package(&tuned_package(version, build_dirs(version, el_below_10), debian))
        .preinstall_package("tuned");
    let wants = node.path("/etc/systemd/system/multi-user.target.wants");
    std::fs::create_dir_all(&wants).unwrap();
    let link = wants.join("tuned.service");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink("/usr/lib/systemd/system/tuned.service", link).unwrap();
    node.file("/run/tuned/tuned.pid", "4242\n");
}

/// The README example of the bash package (a profile including another, a script,
/// a bootloader option).
pub const README_PROFILE: &str = "[main]
summary=AI/ML kernel settings
include=custom_profile_1

[sysctl]
kernel.numa_balancing=1                  # avoid NUMA page bouncing
kernel.panic=10

[bootloader]
cmdline_myprofile=-kernel.panic +kernel.panic=20

[script]
script=/etc/tuned/scripts/ai_init";

/// The included profile of the README example.
pub const README_PROFILE_1: &str = "[main]
summary=AI/ML performance profile

[cpu]
governor=performance             # lock CPUs at max frequency
energy_perf_bias=performance     # disable energy saving bias
force_latency=0                  # minimize C-state latency

[disk]
readahead=4096                   # bigger readahead for large dataset loads

[vm]
transparent_hugepages=always     # large pages help with tensor allocations
swappiness=10                    # avoid swapping under load";

/// The helper script of the README example.
pub const README_SCRIPT: &str = "#!/bin/bash
# Custom AI/ML initialization script
echo \"Initializing AI/ML optimizations...\"
echo 1 > /proc/sys/vm/overcommit_memory
echo \"AI initialization complete\"";

/// Sets the README example's configMap on `node`.
pub fn readme_configmap(node: &Node) {
    node.configmap("tuned_profile", "custom_profile")
        .configmap("custom_profile", README_PROFILE)
        .configmap("custom_profile_1", README_PROFILE_1)
        .configmap("ai_init_script", README_SCRIPT);
}

/// The calls of `program` logged so far.
pub fn calls_of(node: &Node, program: &str) -> Vec<String> {
    node.calls()
        .into_iter()
        .filter(|c| c.split_whitespace().next() == Some(program))
        .collect()
}

/// The inode of a host file (to prove a file was not rewritten).
pub fn inode(node: &Node, path: &str) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(node.path(path)).unwrap().ino()
}
