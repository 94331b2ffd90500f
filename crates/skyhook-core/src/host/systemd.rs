// SPDX-License-Identifier: Apache-2.0
//! systemd on the host: unit operations through `systemctl`, and the detection of a
//! host where systemd is not running (a chroot, an image being built). There,
//! starting, stopping, restarting and reloading are skipped with a warning, and
//! questions about live state answer "unknown", while enabling and disabling (which
//! only change files) still happen.

use crate::error::{HostError, Result};
use crate::host::Host;
use crate::host::command::Cmd;

/// The directories systemd loads unit files from, highest precedence first
/// (systemd.unit(5); `/usr/local/lib` is where RKE2's tarball installs its units).
const UNIT_DIRS: [&str; 5] = [
    "/etc/systemd/system",
    "/run/systemd/system",
    "/usr/local/lib/systemd/system",
    "/usr/lib/systemd/system",
    "/lib/systemd/system",
];

/// Where `systemctl enable` links the units it enables (`<target>.wants/`).
const ENABLEMENT_DIR: &str = "/etc/systemd/system";

/// systemd operations on one host.
pub struct Systemd<'h> {
    host: &'h Host,
}

/// What happened to a request that needs a running systemd.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// It was carried out.
    Done,
    /// systemd is not running on this host; it was skipped (and a warning logged).
    Skipped,
}

impl<'h> Systemd<'h> {
    /// systemd of `host`.
    pub fn new(host: &'h Host) -> Self {
        Systemd { host }
    }

    /// Whether systemd runs as the host's init (`/run/systemd/system` exists, as
    /// sd_booted(3) decides).
    pub fn is_running(&self) -> bool {
        self.host.exists("/run/systemd/system")
    }

    fn systemctl(&self, args: &[&str]) -> Result<crate::host::command::Output, HostError> {
        self.host.run(&Cmd::new("systemctl").args(args.iter().copied()))
    }

    fn live(&self, what: &str, args: &[&str]) -> Result<Applied, HostError> {
        if !self.is_running() {
            log::warn!("systemd is not running on this host (chroot or image build): skipped {what}");
            return Ok(Applied::Skipped);
        }
        self.host.run_ok(&Cmd::new("systemctl").args(args.iter().copied()))?;
        Ok(Applied::Done)
    }

    /// `systemctl daemon-reload`.
    pub fn daemon_reload(&self) -> Result<Applied, HostError> {
        self.live("systemctl daemon-reload", &["daemon-reload"])
    }

    /// `systemctl start <unit>`.
    pub fn start(&self, unit: &str) -> Result<Applied, HostError> {
        self.live(&format!("starting {unit}"), &["start", unit])
    }

    /// `systemctl stop <unit>`.
    pub fn stop(&self, unit: &str) -> Result<Applied, HostError> {
        self.live(&format!("stopping {unit}"), &["stop", unit])
    }

    /// `systemctl restart <unit>`.
    pub fn restart(&self, unit: &str) -> Result<Applied, HostError> {
        self.live(&format!("restarting {unit}"), &["restart", unit])
    }

    /// `systemctl enable <unit>` (works without a running systemd).
    pub fn enable(&self, unit: &str) -> Result<(), HostError> {
        self.host.run_ok(&Cmd::new("systemctl").args(["enable", unit]))?;
        Ok(())
    }

    /// `systemctl disable <unit>` (works without a running systemd).
    pub fn disable(&self, unit: &str) -> Result<(), HostError> {
        self.host.run_ok(&Cmd::new("systemctl").args(["disable", unit]))?;
        Ok(())
    }

    /// Disables `unit`, whose file a package installed at `path` (in
    /// `/etc/systemd/system`): with `systemctl disable` while the file is there. Once it
    /// is gone (removed by hand) systemctl cannot disable it any more, so the links
    /// named `unit` that point at `path` in `/etc/systemd/system/*.wants/` and
    /// `*.requires/` (what `enable` made) are removed instead; any other link stays.
    /// Returns whether anything was disabled.
    pub fn disable_installed(&self, unit: &str, path: &str) -> Result<bool, HostError> {
        if self.host.exists(path) {
            self.disable(unit)?;
            return Ok(true);
        }
        let mut removed = false;
        for dir in self.host.list_dir(ENABLEMENT_DIR)? {
            if !(dir.ends_with(".wants") || dir.ends_with(".requires")) {
                continue;
            }
            let link = std::path::Path::new(ENABLEMENT_DIR).join(&dir).join(unit);
            if self.host.read_link(&link)?.as_deref() == Some(std::path::Path::new(path)) {
                removed |= self.host.remove(&link)?;
                log::info!(
                    "removed {}: {unit} was enabled but its file {path} is gone",
                    link.display()
                );
            }
        }
        Ok(removed)
    }

    /// `systemctl mask <unit>` (works without a running systemd): its unit file in
    /// `/etc` becomes a link to `/dev/null`, so nothing starts it.
    pub fn mask(&self, unit: &str) -> Result<(), HostError> {
        self.host.run_ok(&Cmd::new("systemctl").args(["mask", unit]))?;
        Ok(())
    }

    /// `systemctl unmask <unit>` (works without a running systemd).
    pub fn unmask(&self, unit: &str) -> Result<(), HostError> {
        self.host.run_ok(&Cmd::new("systemctl").args(["unmask", unit]))?;
        Ok(())
    }

    /// Whether the unit is enabled (`systemctl is-enabled`: enabled, static, alias…).
    pub fn is_enabled(&self, unit: &str) -> Result<bool, HostError> {
        let out = self.systemctl(&["is-enabled", unit])?;
        Ok(out.success()
            && matches!(
                out.stdout.trim(),
                "enabled" | "enabled-runtime" | "static" | "alias" | "indirect" | "generated"
            ))
    }

    /// Whether the unit is active; `None` when systemd is not running.
    pub fn is_active(&self, unit: &str) -> Result<Option<bool>, HostError> {
        if !self.is_running() {
            return Ok(None);
        }
        let out = self.systemctl(&["is-active", unit])?;
        Ok(Some(out.success() && out.stdout.trim() == "active"))
    }

    /// Whether a unit file named `unit` (`rke2-agent.service`) is installed: found in
    /// systemd's unit directories, in their order of precedence, and not masked (a
    /// link to `/dev/null`). Reads files only, so it answers in a chroot and before
    /// the unit has started; a link is not followed.
    pub fn is_installed(&self, unit: &str) -> Result<bool, HostError> {
        for dir in UNIT_DIRS {
            let path = std::path::Path::new(dir).join(unit);
            if let Some(target) = self.host.read_link(&path)? {
                return Ok(target != std::path::Path::new("/dev/null"));
            }
            if self.host.exists(&path) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The installed units (as [`Systemd::is_installed`] says) whose names match
    /// `pattern`, a unit name with one `*` (`k3s-*.service`: K3s installed under another
    /// name), sorted: the unit directories are read, no command runs. Template units
    /// (`name@.service`), names systemd would refuse and directories are left out.
    pub fn installed_matching(&self, pattern: &str) -> Result<Vec<String>, HostError> {
        let Some((prefix, suffix)) = pattern.split_once('*') else {
            return Ok(if self.is_installed(pattern)? {
                vec![pattern.to_string()]
            } else {
                Vec::new()
            });
        };
        let mut found = std::collections::BTreeSet::new();
        for dir in UNIT_DIRS {
            for name in self.host.list_dir(dir)? {
                let matches = name.len() >= prefix.len() + suffix.len()
                    && name.starts_with(prefix)
                    && name.ends_with(suffix)
                    && !name.contains('@')
                    && crate::formats::unitfile::check_unit_name(&name).is_ok();
                if !matches {
                    continue;
                }
                // A link is a unit (or a mask), never followed here; a directory is not.
                let path = std::path::Path::new(dir).join(&name);
                if self.host.read_link(&path)?.is_some() || !self.host.is_dir(&path) {
                    found.insert(name);
                }
            }
        }
        let mut installed = Vec::new();
        for name in found {
            if self.is_installed(&name)? {
                installed.push(name);
            }
        }
        Ok(installed)
    }

    /// The unit's main process id; `None` when it has none or systemd is not running.
    pub fn main_pid(&self, unit: &str) -> Result<Option<u32>> {
        if !self.is_running() {
            return Ok(None);
        }
        let out = self
            .host
            .run_ok(&Cmd::new("systemctl").args(["show", "--property=MainPID", "--value", unit]))?;
        let text = out.stdout.trim();
        let text = text.strip_prefix("MainPID=").unwrap_or(text);
        match text.parse::<u32>() {
            Ok(0) => Ok(None),
            Ok(pid) => Ok(Some(pid)),
            Err(_) => Err(crate::Error::action(format!(
                "systemctl show --property=MainPID {unit} printed {text:?}, not a process id"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::command::{Output, RecordingRunner};

    fn host(running: bool, answer: impl Fn(&Cmd) -> Output + Send + Sync + 'static) -> (tempfile::TempDir, Host) {
        let d = tempfile::tempdir().unwrap();
        if running {
            std::fs::create_dir_all(d.path().join("run/systemd/system")).unwrap();
        }
        let h = Host::new(d.path(), RecordingRunner::new(move |c| Ok(answer(c))));
        (d, h)
    }

    #[test]
    fn live_operations_are_skipped_without_a_running_systemd() {
        let (_d, h) = host(false, |_| Output::exited(0, "active\n"));
        let s = Systemd::new(&h);
        assert!(!s.is_running());
        assert_eq!(s.restart("tuned").unwrap(), Applied::Skipped);
        assert_eq!(s.daemon_reload().unwrap(), Applied::Skipped);
        assert_eq!(s.is_active("tuned").unwrap(), None);
        assert_eq!(s.main_pid("tuned").unwrap(), None);
        s.enable("tuned").unwrap();
    }

    #[test]
    fn live_operations_run_with_a_running_systemd() {
        let (_d, h) = host(true, |c| match c.args[0].as_str() {
            "is-active" => Output::exited(3, "inactive\n"),
            "is-enabled" => Output::exited(0, "enabled\n"),
            "show" => Output::exited(0, "1234\n"),
            _ => Output::exited(0, ""),
        });
        let s = Systemd::new(&h);
        assert_eq!(s.restart("containerd.service").unwrap(), Applied::Done);
        assert_eq!(s.is_active("tuned").unwrap(), Some(false));
        assert!(s.is_enabled("tuned").unwrap());
        assert_eq!(s.main_pid("containerd").unwrap(), Some(1234));
    }

    #[test]
    fn disabling_a_unit_whose_file_is_gone_removes_only_its_own_enablement_links() {
        let d = tempfile::tempdir().unwrap();
        let runner = std::sync::Arc::new(RecordingRunner::succeeding());
        let h = Host::new(d.path(), runner.clone());
        let s = Systemd::new(&h);
        let etc = d.path().join("etc/systemd/system");
        for dir in ["multi-user.target.wants", "local-fs.target.requires", "other.d"] {
            std::fs::create_dir_all(etc.join(dir)).unwrap();
        }
        let ours = "/etc/systemd/system/ours.service";
        let link = |dir: &str, to: &str| std::os::unix::fs::symlink(to, etc.join(dir).join("ours.service")).unwrap();
        link("multi-user.target.wants", ours);
        link("local-fs.target.requires", ours);
        link("other.d", ours);
        std::os::unix::fs::symlink("/lib/systemd/system/ours.service", etc.join("ours-elsewhere")).unwrap();
        assert!(s.disable_installed("ours.service", ours).unwrap());
        assert!(!etc.join("multi-user.target.wants/ours.service").is_symlink());
        assert!(!etc.join("local-fs.target.requires/ours.service").is_symlink());
        assert!(
            etc.join("other.d/ours.service").is_symlink(),
            "not an enablement directory"
        );
        assert!(
            runner.calls().is_empty(),
            "systemctl cannot disable a unit without its file"
        );
        // A link of the same name to another file is someone else's.
        std::fs::remove_file(etc.join("other.d/ours.service")).unwrap();
        link("multi-user.target.wants", "/lib/systemd/system/ours.service");
        assert!(!s.disable_installed("ours.service", ours).unwrap());
        assert!(etc.join("multi-user.target.wants/ours.service").is_symlink());
        // With the file there, systemctl disables it.
        std::fs::write(etc.join("ours.service"), "[Unit]\n").unwrap();
        assert!(s.disable_installed("ours.service", ours).unwrap());
        assert_eq!(runner.calls(), ["systemctl disable ours.service"]);
    }

    #[test]
    fn a_unit_is_installed_when_a_unit_directory_has_its_file_and_it_is_not_masked() {
        let (d, h) = host(false, |_| Output::exited(0, ""));
        let s = Systemd::new(&h);
        let file = |rel: &str| {
            let p = d.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "[Service]\n").unwrap();
        };
        file("usr/local/lib/systemd/system/rke2-agent.service");
        file("lib/systemd/system/containerd.service");
        file("usr/lib/systemd/system/k3s.service");
        std::fs::create_dir_all(d.path().join("etc/systemd/system")).unwrap();
        std::os::unix::fs::symlink("/dev/null", d.path().join("etc/systemd/system/k3s.service")).unwrap();
        assert!(s.is_installed("rke2-agent.service").unwrap());
        assert!(s.is_installed("containerd.service").unwrap());
        assert!(
            !s.is_installed("k3s.service").unwrap(),
            "masked in /etc wins over /usr/lib"
        );
        assert!(!s.is_installed("rke2-server.service").unwrap());
    }

    #[test]
    fn units_matching_a_pattern_are_found_in_every_unit_directory_unless_masked() {
        let (d, h) = host(false, |_| Output::exited(0, ""));
        let s = Systemd::new(&h);
        let file = |rel: &str| {
            let p = d.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "[Service]\n").unwrap();
        };
        file("etc/systemd/system/k3s-gpu.service");
        file("usr/local/lib/systemd/system/k3s-agent-edge.service");
        file("usr/lib/systemd/system/k3s-old.service");
        file("usr/lib/systemd/system/k3s-tmpl@.service");
        file("usr/lib/systemd/system/k3s.service");
        file("etc/systemd/system/k3s-gpu.service.d/containerd.conf");
        std::fs::create_dir_all(d.path().join("lib/systemd/system/k3s-dir.service")).unwrap();
        std::os::unix::fs::symlink("/dev/null", d.path().join("etc/systemd/system/k3s-old.service")).unwrap();
        assert_eq!(
            s.installed_matching("k3s-*.service").unwrap(),
            ["k3s-agent-edge.service", "k3s-gpu.service"],
            "a masked one, a template, a directory and the drop-in directory are not units"
        );
        assert_eq!(s.installed_matching("k3s.service").unwrap(), ["k3s.service"]);
        assert!(s.installed_matching("rke2-*.service").unwrap().is_empty());
    }

    #[test]
    fn failing_systemctl_is_an_error_with_its_output() {
        let (_d, h) = host(true, |_| Output {
            code: Some(5),
            stderr: "Unit x.service not found.\n".into(),
            ..Output::default()
        });
        let e = Systemd::new(&h).restart("x.service").unwrap_err().to_string();
        assert!(
            e.contains("systemctl restart x.service") && e.contains("not found"),
            "{e}"
        );
    }
}
