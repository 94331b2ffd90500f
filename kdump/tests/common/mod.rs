// SPDX-License-Identifier: Apache-2.0
//! Simulated Debian-like and RHEL-like nodes for the kdump package tests: os-release,
//! memory, GRUB or BLS boot entries, and stand-ins for every tool the package runs.
//! The stand-ins keep what they simulate (installed packages, enabled and active
//! units, debconf answers) in the commands directory, and change the host root the
//! way the real tools would (conffiles installed and purged, grub.cfg generated from
//! the GRUB defaults and drop-ins, BLS entries edited as grubby does).

#![allow(dead_code)]

use std::path::Path;

use skyhook_core::os::distro::fixtures;
/// The test kit's update-grub, the one every package's tests use.
pub use skyhook_testkit::boot_tools::UPDATE_GRUB;
pub use skyhook_testkit::boot_tools::bls_options;
use skyhook_testkit::boot_tools::{GRUB2_MKCONFIG, GRUBBY};
pub use skyhook_testkit::kdumpctl::Kdumpctl;
use skyhook_testkit::kdumpctl::{self, DISPATCH, POSTTRANS};
use skyhook_testkit::{DistPackage, Manager, Node, Tree};

/// A distribution under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Distro {
    /// A short name for messages.
    pub name: &'static str,
    /// The os-release text.
    pub os_release: &'static str,
    /// Debian-like (true) or RHEL-like.
    pub debian: bool,
    /// The crashkernel default kdump-tools ships (Debian-like) in its drop-in.
    pub package_default: &'static str,
    /// RHEL-like: the kexec-tools version the repositories offer.
    pub kexec_tools: &'static str,
    /// RHEL-like: the kdumpctl that version brings.
    pub kdumpctl: Kdumpctl,
    /// RHEL-like: the `/etc/kdump.conf` that version installs.
    pub kdump_conf: &'static str,
    /// RHEL-like: the distribution's systemd preset enables kdump.service, so the
    /// install's `%systemd_post` enables it (RHEL and its rebuilds).
    pub preset_enables_kdump: bool,
    /// RHEL-like: yum only (Amazon Linux 2), not dnf.
    pub yum: bool,
}

/// What the Debian-like distributions leave empty.
const NOT_RPM: (&str, Kdumpctl, &str, bool, bool) = ("", Kdumpctl::Legacy, "", false, false);

/// Ubuntu 24.04.
pub const UBUNTU: Distro = Distro {
    name: "ubuntu-24.04",
    os_release: fixtures::UBUNTU_2404,
    debian: true,
    package_default: "crashkernel=2G-4G:320M,4G-32G:512M,32G-64G:1024M,64G-128G:2048M,128G-:4096M",
    kexec_tools: NOT_RPM.0,
    kdumpctl: NOT_RPM.1,
    kdump_conf: NOT_RPM.2,
    preset_enables_kdump: NOT_RPM.3,
    yum: NOT_RPM.4,
};
/// Debian 12.
pub const DEBIAN: Distro = Distro {
    name: "debian-12",
    os_release: fixtures::DEBIAN_12,
    debian: true,
    package_default: "crashkernel=384M-:128M",
    kexec_tools: NOT_RPM.0,
    kdumpctl: NOT_RPM.1,
    kdump_conf: NOT_RPM.2,
    preset_enables_kdump: NOT_RPM.3,
    yum: NOT_RPM.4,
};
/// RHEL 9.
pub const RHEL: Distro = Distro {
    name: "rhel-9",
    os_release: fixtures::RHEL_9,
    debian: false,
    package_default: "",
    kexec_tools: "2.0.27-8.el9",
    kdumpctl: Kdumpctl::KexecTools,
    kdump_conf: RHEL_KDUMP_CONF,
    preset_enables_kdump: true,
    yum: false,
};
/// Rocky Linux 9.
pub const ROCKY: Distro = Distro {
    name: "rocky-9",
    os_release: fixtures::ROCKY_9,
    ..RHEL
};
/// Rocky Linux 8: kexec-tools of the RHEL 8 line, whose kdumpctl has no
/// `auto_reset_crashkernel` (it refuses the option) and resets nothing.
pub const ROCKY_8: Distro = Distro {
    name: "rocky-8",
    os_release: "NAME=\"Rocky Linux\"\nVERSION=\"8.10 (Green Obsidian)\"\nID=\"rocky\"\nID_LIKE=\"rhel centos fedora\"\nVERSION_ID=\"8.10\"\nPRETTY_NAME=\"Rocky Linux 8.10 (Green Obsidian)\"\n",
    kexec_tools: "2.0.26-14.el8",
    kdumpctl: Kdumpctl::Legacy,
    kdump_conf: RHEL8_KDUMP_CONF,
    ..RHEL
};
/// Amazon Linux 2023.
pub const AMAZON: Distro = Distro {
    name: "amazon-linux-2023",
    os_release: fixtures::AMAZON_LINUX_2023,
    preset_enables_kdump: false,
    ..RHEL
};
/// Amazon Linux 2: yum, and kexec-tools of the RHEL 7 line (2.0.15), whose kdumpctl
/// has no `auto_reset_crashkernel`.
pub const AMAZON_2: Distro = Distro {
    name: "amazon-linux-2",
    os_release: fixtures::AMAZON_LINUX_2,
    kexec_tools: "2.0.15",
    kdumpctl: Kdumpctl::Legacy,
    kdump_conf: RHEL8_KDUMP_CONF,
    preset_enables_kdump: false,
    yum: true,
    ..RHEL
};
/// Every distribution the issue names.
pub const ALL: [Distro; 5] = [UBUNTU, DEBIAN, RHEL, ROCKY, AMAZON];
/// The RHEL-like distributions whose kdumpctl does not know `auto_reset_crashkernel`.
pub const LEGACY: [Distro; 2] = [ROCKY_8, AMAZON_2];

/// The RHEL 9 default crashkernel range list.
pub const RHEL_DEFAULT: &str = "crashkernel=1G-4G:192M,4G-64G:256M,64G-:512M";
/// The original `/etc/kdump.conf` kexec-tools installs (the stock file says
/// `auto_reset_crashkernel yes`).
pub const RHEL_KDUMP_CONF: &str = "# This file contains a series of commands to perform (in order) in the kdump\n#\nauto_reset_crashkernel yes\npath /var/crash\ncore_collector makedumpfile -l --message-level 7 -d 31\n";
/// The original `/etc/kdump.conf` of kexec-tools before 2.0.23-2 (RHEL 7 and 8,
/// Amazon Linux 2): no `auto_reset_crashkernel`.
pub const RHEL8_KDUMP_CONF: &str = "# This file contains a series of commands to perform (in order) in the kdump\n#\npath /var/crash\ncore_collector makedumpfile -l --message-level 1 -d 31\n";
/// Memory of the simulated nodes: 64 GiB.
pub const MEM_KB: u64 = 64 * 1024 * 1024;

/// The `systemctl` stand-in, with unit state under `systemd/` of the commands
/// directory: `enable`/`disable` and `is-enabled` (`enabled` exit 0, `disabled`
/// exit 1), `start`/`restart` (each logged in `<unit>.starts`), `stop` and
/// `is-active` (`active` exit 0, `inactive` exit 3), as systemctl answers for an
/// installed unit; `daemon-reload` succeeds; any other verb fails. Not modelled: units
/// that are not installed, jobs that fail.
const SYSTEMCTL: &str = r#"D=$(dirname "$0"); S="$D/systemd"; mkdir -p "$S"
cmd="$1"; shift
unit="${1%.service}"
case "$cmd" in
  enable) touch "$S/$unit.enabled" ;;
  disable) rm -f "$S/$unit.enabled" ;;
  start|restart) touch "$S/$unit.active"; echo "$cmd" >> "$S/$unit.starts" ;;
  stop) rm -f "$S/$unit.active" ;;
  is-enabled) if [ -f "$S/$unit.enabled" ]; then echo enabled; else echo disabled; exit 1; fi ;;
  is-active) if [ -f "$S/$unit.active" ]; then echo active; else echo inactive; exit 3; fi ;;
  daemon-reload) ;;
  *) echo "unexpected: systemctl $cmd $*" >&2; exit 1 ;;
esac"#;

const DEBCONF: &str = r#"cat >> "$(dirname "$0")/debconf.db""#;

/// kdump-tools in the simulated Debian repositories: its conffiles (the drop-in
/// carries the distribution's default `default`), `kexec`, the service enabled.
fn kdump_tools(default: &str) -> DistPackage {
    DistPackage::new("kdump-tools", "1:1.10.3")
        .on_install(&format!(
            r#"mkdir -p "$D/systemd"
use=0; grep -q "^kdump-tools kdump-tools/use_kdump boolean true$" "$D/debconf.db" 2>/dev/null && use=1
mkdir -p "$R/etc/default/grub.d"
[ -f "$R/etc/default/kdump-tools" ] || printf '# kdump-tools configuration\nUSE_KDUMP=%s\nKDUMP_COREDIR="/var/crash"\n' "$use" > "$R/etc/default/kdump-tools"
[ -f "$R/etc/default/grub.d/kdump-tools.cfg" ] || echo 'GRUB_CMDLINE_LINUX_DEFAULT="$GRUB_CMDLINE_LINUX_DEFAULT {default}"' > "$R/etc/default/grub.d/kdump-tools.cfg"
printf '#!/bin/sh\n' > "$D/kexec"; chmod 755 "$D/kexec"
touch "$D/systemd/kdump-tools.enabled""#
        ))
        .on_remove(r#"rm -f "$D/kexec" "$D/systemd/kdump-tools.enabled" "$D/systemd/kdump-tools.active""#)
        .on_purge(
            r#"rm -f "$R/etc/default/kdump-tools" "$R/etc/default/grub.d/kdump-tools.cfg"
rmdir "$R/etc/default/grub.d" 2>/dev/null || true"#,
        )
}

/// kexec-tools of `distro` in the simulated RHEL repositories: `/etc/kdump.conf` (a
/// modified one is kept as .rpmsave on removal, as rpm does with %config files),
/// `kexec`, its kdumpctl ([`kdumpctl`]'s model), kdump.service enabled where the
/// preset says so, and the `%posttrans` reset of crashkernel where kdumpctl has it.
fn kexec_tools(distro: Distro) -> DistPackage {
    let conf = distro.kdump_conf;
    let preset = if distro.preset_enables_kdump {
        "mkdir -p \"$D/systemd\"; touch \"$D/systemd/kdump.enabled\"\n"
    } else {
        ""
    };
    let package = DistPackage::new("kexec-tools", distro.kexec_tools)
        .on_install(&format!(
            r#"[ -f "$R/etc/kdump.conf" ] || printf '%s' '{conf}' > "$R/etc/kdump.conf"
printf '#!/bin/sh\n' > "$D/kexec"; chmod 755 "$D/kexec"
{preset}{model}"#,
            model = kdumpctl::install_sh(distro.kdumpctl)
        ))
        .on_remove(&format!(
            r#"rm -f "$D/kexec" "$D/systemd/kdump.enabled" "$D/systemd/kdump.active"
if [ -f "$R/etc/kdump.conf" ]; then
  if [ "$(cat "$R/etc/kdump.conf")" = "$(printf '%s' '{conf}')" ]; then rm -f "$R/etc/kdump.conf"
  else mv "$R/etc/kdump.conf" "$R/etc/kdump.conf.rpmsave"; fi
fi
{model}"#,
            model = kdumpctl::remove_sh()
        ));
    match distro.kdumpctl {
        Kdumpctl::Legacy => package,
        _ => package.on_posttrans(POSTTRANS),
    }
}

/// Runs a stand-in script directly (no call logged), e.g. to generate the pristine grub.cfg.
fn run_stand_in(node: &Node, program: &str, args: &[&str]) {
    node.run_stand_in(program, args).expect_code(0);
}

/// A node of `distro`, 64 GiB of memory, booted, systemd running; the kdump package not installed.
pub fn node(distro: Distro) -> Node {
    let node = Node::new(env!("CARGO_BIN_EXE_kdump")).named("kdump");
    node.file("/etc/os-release", distro.os_release)
        .file(
            "/proc/meminfo",
            format!("MemTotal:       {MEM_KB} kB\nMemFree:        1024 kB\n"),
        )
        .systemd_running(true)
        .stand_in("systemctl", SYSTEMCTL);
    std::fs::create_dir_all(node.commands_dir().join("systemd")).unwrap();
    std::fs::create_dir_all(node.path("/var/lib")).unwrap();
    if distro.debian {
        node.file(
            "/etc/default/grub",
            "GRUB_DEFAULT=0\nGRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX_DEFAULT=\"quiet splash\"\nGRUB_CMDLINE_LINUX=\"\"\n",
        )
        .file(
            "/etc/default/grub.d/init-select.cfg",
            "# init-select\nGRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT\"\n",
        )
        .package_manager(Manager::Apt, &[kdump_tools(distro.package_default)])
        .stand_in("debconf-set-selections", DEBCONF)
        .stand_in("update-grub", UPDATE_GRUB);
        run_stand_in(&node, "update-grub", &[]);
        node.file(
            "/proc/cmdline",
            "BOOT_IMAGE=/boot/vmlinuz-6.8.0-31-generic root=UUID=0b1c ro quiet splash\n",
        );
    } else {
        node.file(
            "/etc/default/grub",
            "GRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX=\"rd.lvm.lv=rl/root rhgb quiet\"\nGRUB_ENABLE_BLSCFG=true\n",
        )
        .file(
            "/boot/loader/entries/0a1b-5.14.0-427.el9.x86_64.conf",
            "title Linux (5.14.0-427.el9.x86_64)\nversion 5.14.0-427.el9.x86_64\nlinux /vmlinuz-5.14.0-427.el9.x86_64\ninitrd /initramfs-5.14.0-427.el9.x86_64.img\noptions root=/dev/mapper/rl-root ro rd.lvm.lv=rl/root rhgb quiet\n",
        )
        .file(
            "/boot/loader/entries/0a1b-0-rescue.conf",
            "title Linux (0-rescue)\nversion 0-rescue-0a1b\nlinux /vmlinuz-0-rescue-0a1b\ninitrd /initramfs-0-rescue-0a1b.img\noptions root=/dev/mapper/rl-root ro rd.lvm.lv=rl/root\n",
        )
        .file(
            "/proc/cmdline",
            "BOOT_IMAGE=(hd0,gpt2)/vmlinuz-5.14.0-427.el9.x86_64 root=/dev/mapper/rl-root ro rd.lvm.lv=rl/root rhgb quiet\n",
        )
        .package_manager(
            if distro.yum { Manager::Yum } else { Manager::Dnf },
            &[kexec_tools(distro)],
        )
        .stand_in("grubby", GRUBBY)
            .stand_in("kdumpctl", DISPATCH);
        // systemd's kernel-install directory: grubby-bls writes /etc/kernel/cmdline there.
        std::fs::create_dir_all(node.path("/etc/kernel/install.d")).unwrap();
    }
    node
}

/// A RHEL-like node without grubby: `/etc/default/grub` and grub2-mkconfig (BIOS).
pub fn grub2_node() -> Node {
    let node = node(ROCKY);
    node.remove_stand_in("grubby")
        .stand_in("grub2-mkconfig", GRUB2_MKCONFIG);
    run_stand_in(&node, "grub2-mkconfig", &["-o", "/boot/grub2/grub.cfg"]);
    node
}

/// Marks the distribution's kdump package as installed already, as the stand-in
/// package manager would have installed it, with its service enabled; on RHEL-like
/// nodes the boot entries carry the distribution's default crashkernel.
pub fn preinstall(node: &Node, distro: Distro) {
    if distro.debian {
        std::fs::write(
            node.commands_dir().join("debconf.db"),
            "kdump-tools kdump-tools/use_kdump boolean true\n",
        )
        .unwrap();
        node.preinstall_package("kdump-tools");
        std::fs::remove_file(node.commands_dir().join("debconf.db")).unwrap();
        run_stand_in(node, "update-grub", &[]);
    } else {
        node.preinstall_package("kexec-tools");
        run_stand_in(
            node,
            "grubby",
            &["--update-kernel=ALL", &format!("--args={RHEL_DEFAULT}")],
        );
        std::fs::write(node.commands_dir().join("systemd/kdump.enabled"), "").unwrap();
    }
}

/// Simulates the reboot after config: the running kernel's command line from the
/// default boot entry, the reservation the kernel made, a crash kernel loaded by the
/// active service.
pub fn reboot(node: &Node, distro: Distro, reserved: u64) {
    let args = default_entry_args(node, distro);
    node.file("/proc/cmdline", format!("BOOT_IMAGE=/boot/vmlinuz {args}\n"))
        .file("/sys/kernel/kexec_crash_size", format!("{reserved}\n"))
        .file(
            "/sys/kernel/kexec_crash_loaded",
            if reserved > 0 { "1\n" } else { "0\n" },
        );
    let unit = if distro.debian { "kdump-tools" } else { "kdump" };
    std::fs::write(node.commands_dir().join(format!("systemd/{unit}.active")), "").unwrap();
}

/// The kernel arguments of the default boot entry.
pub fn default_entry_args(node: &Node, distro: Distro) -> String {
    if distro.debian {
        let cfg = node.read("/boot/grub/grub.cfg").expect("grub.cfg");
        let line = cfg
            .lines()
            .find(|l| l.trim_start().starts_with("linux"))
            .expect("a linux line");
        line.split_whitespace().skip(2).collect::<Vec<_>>().join(" ")
    } else {
        bls_options(node, "/boot/loader/entries/0a1b-5.14.0-427.el9.x86_64.conf")
    }
}

/// Whether the stand-in systemd has `unit` enabled / active.
pub fn unit_state(node: &Node, unit: &str) -> (bool, bool) {
    let s = node.commands_dir().join("systemd");
    (
        s.join(format!("{unit}.enabled")).exists(),
        s.join(format!("{unit}.active")).exists(),
    )
}

/// How often the stand-in systemd started or restarted `unit`.
pub fn starts(node: &Node, unit: &str) -> usize {
    std::fs::read_to_string(node.commands_dir().join(format!("systemd/{unit}.starts")))
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

/// The host tree without /proc and /sys (which a reboot legitimately changes).
pub fn files(node: &Node) -> Tree {
    let mut tree = node.snapshot();
    tree.0.retain(|p, _| !p.starts_with("proc") && !p.starts_with("sys"));
    tree
}

/// The modification times of `paths` (to prove nothing was rewritten).
pub fn mtimes(node: &Node, paths: &[&str]) -> Vec<Option<std::time::SystemTime>> {
    paths
        .iter()
        .map(|p| std::fs::metadata(node.path(p)).and_then(|m| m.modified()).ok())
        .collect()
}

/// Whether a path exists under the commands directory.
pub fn has_stand_in_file(node: &Node, name: &str) -> bool {
    Path::new(&node.commands_dir().join(name)).exists()
}
