// SPDX-License-Identifier: Apache-2.0
//! The family's package manager (apt-get on Debian-like hosts, dnf or yum on
//! RHEL-like ones): non-interactive installs and removals that wait for the package
//! manager's lock instead of failing on it, retry transient failures with a pause,
//! and skip the work (and the repository refresh) when nothing is missing.
//!
//! Retries are tunable from the SCR's `env`: `SKYHOOK_PKG_ATTEMPTS` (default 3) and
//! `SKYHOOK_PKG_RETRY_PAUSE` (seconds, default 15), bounded by [`MAX_ATTEMPTS`] and
//! [`MAX_PAUSE`].
//!
//! apt-get waits for the dpkg locks only (`DPkg::Lock::Timeout`): `apt-get update`
//! fails at once on the apt lists lock (`/var/lib/apt/lists/lock`), and `apt-get
//! install` and `purge` on the download directory's lock (`/var/cache/apt/archives/lock`),
//! both of which apt-daily / unattended-upgrades hold for minutes on a freshly booted
//! node. Every apt-get command that changes something therefore waits for them, up to
//! [`APT_LOCK_WAIT`], checking at most [`APT_LOCK_POLL`] apart (the retry pause when
//! shorter, never less than [`APT_LOCK_POLL_FLOOR`]) and saying which process holds
//! the lock. A refresh that fails on one repository (a third-party
//! repository whose key rotated, say) does not stop the install: it goes on with the
//! package lists as they are, and fails only if the package cannot be found there.
//! Failures that no retry can cure (an unknown package, no enabled repository) fail at
//! once, saying why.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use crate::error::{Error, HostError, Result, excerpt};
use crate::host::Host;
use crate::host::command::{Cmd, Output};
use crate::os::distro::Family;

/// Which package manager runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    /// apt-get with dpkg.
    AptGet,
    /// dnf with rpm.
    Dnf,
    /// yum with rpm (hosts without dnf, e.g. Amazon Linux 2).
    Yum,
}

impl Tool {
    /// The program name.
    pub fn program(self) -> &'static str {
        match self {
            Tool::AptGet => "apt-get",
            Tool::Dnf => "dnf",
            Tool::Yum => "yum",
        }
    }
}

/// How often, and how far apart, a failing package manager command is tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retry {
    /// Attempts in all (at least 1).
    pub attempts: u32,
    /// Pause between attempts.
    pub pause: Duration,
}

impl Default for Retry {
    fn default() -> Self {
        Retry {
            attempts: 3,
            pause: Duration::from_secs(15),
        }
    }
}

impl Retry {
    /// The policy from `SKYHOOK_PKG_ATTEMPTS` and `SKYHOOK_PKG_RETRY_PAUSE`; a
    /// malformed or out-of-range value is bad input naming the variable. Modes that
    /// install or remove a package read it first, before they change anything.
    pub fn from_env() -> Result<Self> {
        Self::from_vars(|n| std::env::var(n).ok())
    }

    /// The policy from variables looked up through `var`.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let mut retry = Retry::default();
        if let Some(v) = var("SKYHOOK_PKG_ATTEMPTS") {
            retry.attempts = v
                .trim()
                .parse()
                .ok()
                .filter(|n| (1..=MAX_ATTEMPTS).contains(n))
                .ok_or_else(|| {
                    Error::input(format!(
                        "SKYHOOK_PKG_ATTEMPTS={} must be a whole number from 1 to {MAX_ATTEMPTS} (the SCR's \
                         env of this package; unset, it is 3)",
                        excerpt(&v)
                    ))
                })?;
        }
        if let Some(v) = var("SKYHOOK_PKG_RETRY_PAUSE") {
            let max = MAX_PAUSE.as_secs();
            let secs: f64 = v
                .trim()
                .parse()
                .ok()
                .filter(|s: &f64| s.is_finite() && (0.0..=max as f64).contains(s))
                .ok_or_else(|| {
                    Error::input(format!(
                        "SKYHOOK_PKG_RETRY_PAUSE={} must be a number of seconds from 0 to {max} (the SCR's \
                         env of this package; unset, it is 15)",
                        excerpt(&v)
                    ))
                })?;
            retry.pause = Duration::from_secs_f64(secs);
        }
        Ok(retry)
    }
}

/// The most attempts `SKYHOOK_PKG_ATTEMPTS` may ask for.
pub const MAX_ATTEMPTS: u32 = 100;
/// The longest pause `SKYHOOK_PKG_RETRY_PAUSE` may ask for: one hour.
pub const MAX_PAUSE: Duration = Duration::from_secs(3600);

/// How long an apt-get command waits for an apt lock apt itself does not wait for
/// (the lists lock, the download directory's lock): 10 minutes.
pub const APT_LOCK_WAIT: Duration = Duration::from_secs(600);
/// The longest pause between two checks of such a lock (the retry pause when shorter).
pub const APT_LOCK_POLL: Duration = Duration::from_secs(5);
/// The shortest pause between two checks, whatever the retry pause (`0` included):
/// the wait lasts [`APT_LOCK_WAIT`] however short the pause is.
pub const APT_LOCK_POLL_FLOOR: Duration = Duration::from_millis(100);

/// An apt lock that apt-get does not wait for (`DPkg::Lock::Timeout` covers the dpkg
/// locks only), as apt reports it when another process holds it.
struct AptLock {
    /// The start of apt's message (apt `GetLock`: "Could not get lock <file>. It is held
    /// by process <pid> (<name>)", the name where `/proc` tells it).
    message: &'static str,
    /// The lock, for the operator.
    what: &'static str,
    /// Who holds it on a freshly booted node.
    usual_holder: &'static str,
}

/// The apt locks waited for: `apt-get update` takes the lists lock, `install`,
/// `remove` and `purge` the download directory's (apt `pkgAcquire::GetLock`).
const APT_LOCKS: [AptLock; 2] = [
    AptLock {
        message: "Could not get lock /var/lib/apt/lists/lock",
        what: "the package lists lock (/var/lib/apt/lists/lock)",
        usual_holder: "apt-daily.service or unattended-upgrades refreshing",
    },
    AptLock {
        message: "Could not get lock /var/cache/apt/archives/lock",
        what: "the package download directory's lock (/var/cache/apt/archives/lock)",
        usual_holder: "apt-daily.service, apt-daily-upgrade.service or unattended-upgrades downloading",
    },
];

/// The apt lock `text` (a failed command's diagnostics) says another process holds,
/// with apt's line naming the holder.
fn held_apt_lock(text: &str) -> Option<(&'static AptLock, &str)> {
    text.lines().find_map(|l| {
        APT_LOCKS
            .iter()
            .find(|lock| l.contains(lock.message))
            .map(|lock| (lock, l.trim()))
    })
}

/// Output that means retrying cannot help, with why, for the operator.
const PERMANENT: &[(&str, &str)] = &[
    ("Unable to locate package", "the package is unknown to the repositories"),
    ("No match for argument", "the package is unknown to the repositories"),
    (
        "has no installation candidate",
        "the package is unknown to the repositories",
    ),
    (
        "There are no enabled repositories",
        "this host has no enabled package repository, which no retry changes: on RHEL, register the \
         node (subscription-manager register, with an activation key or Simple Content Access) or \
         configure a repository in /etc/yum.repos.d",
    ),
];

/// Output of `apt-get update` that names one broken repository (the others refreshed).
const REPOSITORY_BROKEN: &[&str] = &[
    "is not signed",
    "NO_PUBKEY",
    "EXPKEYSIG",
    "does not have a Release file",
];

/// Why `out` is a failure no retry cures, if it is.
fn permanent(out: &Output) -> Option<&'static str> {
    PERMANENT
        .iter()
        .find(|(p, _)| out.stdout.contains(p) || out.stderr.contains(p))
        .map(|(_, why)| *why)
}

/// The host's package manager.
pub struct PackageManager<'h> {
    host: &'h Host,
    tool: Tool,
    retry: Retry,
    lock_wait: Duration,
}

impl<'h> PackageManager<'h> {
    /// The package manager of `family` on `host`: apt-get, or dnf (yum where dnf is absent).
    pub fn detect(host: &'h Host, family: Family, retry: Retry) -> Result<Self> {
        let tool = match family {
            Family::Debian => Tool::AptGet,
            Family::Rhel if host.which("dnf").is_some() => Tool::Dnf,
            Family::Rhel if host.which("yum").is_some() => Tool::Yum,
            Family::Rhel => return Err(Error::action("this RHEL-like host has neither dnf nor yum")),
        };
        if host.which(tool.program()).is_none() {
            return Err(Error::action(format!("this {family} host has no {}", tool.program())));
        }
        Ok(PackageManager {
            host,
            tool,
            retry,
            lock_wait: APT_LOCK_WAIT,
        })
    }

    /// The tool in use.
    pub fn tool(&self) -> Tool {
        self.tool
    }

    /// Whether `package` is installed.
    pub fn is_installed(&self, package: &str) -> Result<bool, HostError> {
        Ok(self.installed_version(package)?.is_some())
    }

    /// The installed version of `package` (`2.21.0-1`), `None` when not installed.
    pub fn installed_version(&self, package: &str) -> Result<Option<String>, HostError> {
        let out = match self.tool {
            Tool::AptGet => {
                let out = self
                    .host
                    .run(&Cmd::new("dpkg-query").args(["-W", "-f=${Status}\t${Version}", package]))?;
                let installed =
                    out.success() && out.stdout.split('\t').next().is_some_and(|s| s.ends_with(" installed"));
                return Ok(installed.then(|| out.stdout.split('\t').nth(1).unwrap_or("").trim().to_string()));
            }
            Tool::Dnf | Tool::Yum => {
                self.host
                    .run(&Cmd::new("rpm").args(["-q", "--qf", "%{VERSION}-%{RELEASE}", package]))?
            }
        };
        Ok(out.success().then(|| out.stdout.trim().to_string()))
    }

    /// Whether `package` is installed or offered by the repositories (`dnf -q info`,
    /// `yum -q info`, `apt-cache show`).
    pub fn is_available(&self, package: &str) -> Result<bool, HostError> {
        let cmd = match self.tool {
            Tool::AptGet => Cmd::new("apt-cache").args(["show", "-q", package]),
            Tool::Dnf | Tool::Yum => Cmd::new(self.tool.program()).args(["-q", "info", package]),
        };
        Ok(self.host.run(&cmd)?.success())
    }

    /// Answers debconf questions before an install (apt only; no-op elsewhere).
    /// `selections` is debconf-set-selections(1) input, passed on stdin, never to a shell.
    pub fn preseed(&self, selections: &str) -> Result<(), HostError> {
        if self.tool == Tool::AptGet {
            self.host
                .run_ok(&Cmd::new("debconf-set-selections").stdin(selections))?;
        }
        Ok(())
    }

    /// Every installed package, by name (`None` when the package database cannot be
    /// listed, e.g. by a stand-in that only answers single-package queries).
    pub fn installed_packages(&self) -> Result<Option<BTreeSet<String>>, HostError> {
        let out = match self.tool {
            Tool::AptGet => self
                .host
                .run(&Cmd::new("dpkg-query").args(["-W", r"-f=${Package}\t${Status}\n"]))?,
            Tool::Dnf | Tool::Yum => self.host.run(&Cmd::new("rpm").args(["-qa", "--qf", "%{NAME}\n"]))?,
        };
        if !out.success() {
            return Ok(None);
        }
        Ok(Some(
            out.stdout
                .lines()
                .filter_map(|l| match self.tool {
                    Tool::AptGet => {
                        let (name, status) = l.split_once('\t')?;
                        status.ends_with(" installed").then(|| name.to_string())
                    }
                    Tool::Dnf | Tool::Yum => Some(l.trim().to_string()).filter(|n| !n.is_empty()),
                })
                .collect(),
        ))
    }

    /// Installs the packages of `packages` that are missing. Returns every package the
    /// install added — the requested ones and the dependencies pulled in with them —
    /// so that an uninstall can remove exactly those ([`PackageManager::remove_added`]).
    /// Nothing runs (not even a repository refresh) when all are installed.
    pub fn install(&self, packages: &[&str]) -> Result<Vec<String>> {
        let mut missing = Vec::new();
        for p in packages {
            if !self.is_installed(p)? {
                missing.push(p.to_string());
            }
        }
        if missing.is_empty() {
            log::info!("already installed: {}", packages.join(", "));
            return Ok(missing);
        }
        log::info!("installing {} with {}", missing.join(", "), self.tool.program());
        let before = self.installed_packages()?;
        match self.tool {
            Tool::AptGet => {
                self.refresh_lists()?;
                self.waiting_for_apt_locks(&apt_keeping_conffiles("install").args(&missing))?;
            }
            Tool::Dnf | Tool::Yum => {
                self.retrying(
                    &Cmd::new(self.tool.program())
                        .args(["-y", "install"])
                        .args(&missing)
                        .echo(),
                )?;
            }
        }
        let mut added: BTreeSet<String> = missing.into_iter().collect();
        if let (Some(before), Some(after)) = (before, self.installed_packages()?) {
            added.extend(after.difference(&before).cloned());
        }
        let added: Vec<String> = added.into_iter().collect();
        log::info!("installed {} package(s): {}", added.len(), added.join(", "));
        Ok(added)
    }

    /// The packages an upgrade would change, as `(name, new version)`, after a
    /// refresh of the lists: the `Inst` lines of `apt-get -s upgrade` (apt only; an
    /// upgrade with dnf or yum is refused as an action this package manager does not
    /// carry out here).
    pub fn upgradable(&self) -> Result<Vec<(String, String)>> {
        self.require_apt("an upgrade")?;
        self.refresh_lists()?;
        let out = self.host.run_ok(&apt(["-s", "upgrade"]))?;
        Ok(out
            .stdout
            .lines()
            .filter_map(|l| {
                let mut words = l.strip_prefix("Inst ")?.split_whitespace();
                let name = words.next()?;
                let new = words.find(|w| w.starts_with('('))?.trim_start_matches('(');
                Some((name.to_string(), new.to_string()))
            })
            .collect())
    }

    /// `apt-get upgrade`, keeping the node's changed configuration files (apt only).
    pub fn upgrade(&self) -> Result<()> {
        self.require_apt("an upgrade")?;
        log::info!("upgrading every upgradable package with apt-get");
        self.waiting_for_apt_locks(&apt_keeping_conffiles("upgrade"))?;
        Ok(())
    }

    /// Refuses `what` where the package manager is not apt-get.
    fn require_apt(&self, what: &str) -> Result<()> {
        match self.tool {
            Tool::AptGet => Ok(()),
            Tool::Dnf | Tool::Yum => Err(Error::action(format!(
                "{what} with {} is not carried out here (apt-get only)",
                self.tool.program()
            ))),
        }
    }

    /// Removes what an [`install`](PackageManager::install) added: `added` (as it
    /// returned) and `packages`, exactly — on apt purged with their configuration,
    /// nothing else — when no package installed since depends on them. Otherwise, and
    /// when nothing was recorded (`added` empty), falls back to [`remove`](PackageManager::remove)
    /// of `packages`, which lets the package manager pick the unneeded dependencies.
    /// Returns the packages removed.
    pub fn remove_added(&self, packages: &[&str], added: &[String]) -> Result<Vec<String>> {
        if self.tool != Tool::AptGet || added.is_empty() {
            return self.remove(packages);
        }
        let Some(installed) = self.installed_packages()? else {
            return self.remove(packages);
        };
        let candidates: Vec<String> = added
            .iter()
            .map(String::as_str)
            .chain(packages.iter().copied())
            .filter(|p| installed.contains(*p))
            .map(str::to_string)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        if candidates.is_empty() {
            log::info!("not installed, nothing to remove: {}", packages.join(", "));
            return Ok(candidates);
        }
        let simulation = self.host.run_ok(&apt(["-s", "purge"]).args(&candidates))?;
        let collateral: Vec<&str> = simulation
            .stdout
            .lines()
            .filter_map(|l| l.strip_prefix("Purg ").or_else(|| l.strip_prefix("Remv ")))
            .filter_map(|l| l.split_whitespace().next())
            .filter(|p| !candidates.iter().any(|c| c == p))
            .collect();
        if !collateral.is_empty() {
            log::warn!(
                "packages installed since depend on what {} brought in ({}): removing only {} and \
                 the dependencies apt finds unneeded",
                packages.join(", "),
                collateral.join(", "),
                packages.join(", ")
            );
            return self.remove(packages);
        }
        log::info!(
            "removing {} and the {} package(s) installed with it with apt-get",
            packages.join(", "),
            candidates.len()
        );
        self.waiting_for_apt_locks(&apt(["purge", "-y", "-q"]).args(&candidates))?;
        Ok(candidates)
    }

    /// Removes the installed packages of `packages` (on apt also purging their
    /// configuration and the dependencies installed only for them); returns those removed.
    pub fn remove(&self, packages: &[&str]) -> Result<Vec<String>> {
        let mut present = Vec::new();
        for p in packages {
            if self.is_installed(p)? {
                present.push(p.to_string());
            }
        }
        if present.is_empty() {
            log::info!("not installed, nothing to remove: {}", packages.join(", "));
            return Ok(present);
        }
        log::info!("removing {} with {}", present.join(", "), self.tool.program());
        match self.tool {
            Tool::AptGet => self.waiting_for_apt_locks(&apt(["purge", "-y", "-q", "--auto-remove"]).args(&present))?,
            Tool::Dnf | Tool::Yum => self.retrying(
                &Cmd::new(self.tool.program())
                    .args(["-y", "remove"])
                    .args(&present)
                    .echo(),
            )?,
        };
        Ok(present)
    }

    /// `apt-get update`, waiting for the lists lock; a failure on a repository is
    /// reported and passed over (the install then uses the lists as they are).
    fn refresh_lists(&self) -> Result<()> {
        match self.waiting_for_apt_locks(&apt(["update", "-q"])) {
            Ok(_) => Ok(()),
            Err(e) if held_apt_lock(&e.to_string()).is_some() => Err(e),
            Err(e) => {
                log::warn!(
                    "the package lists could not all be refreshed; installing from the lists as they are \
                     (the install fails only if what it needs is missing there). {e}"
                );
                Ok(())
            }
        }
    }

    /// Runs the apt-get `cmd` (with [`retrying`](Self::retrying)), and again while
    /// another process holds an apt lock apt-get does not wait for ([`APT_LOCKS`]),
    /// until the lock is free or [`APT_LOCK_WAIT`] has passed, naming the holder.
    fn waiting_for_apt_locks(&self, cmd: &Cmd) -> Result<Output> {
        let deadline = Instant::now() + self.lock_wait;
        let poll = self.retry.pause.min(APT_LOCK_POLL).max(APT_LOCK_POLL_FLOOR);
        for check in 1.. {
            let e = match self.retrying(cmd) {
                Ok(out) => return Ok(out),
                Err(e) => e,
            };
            let text = e.to_string();
            let Some((lock, holder)) = held_apt_lock(&text) else {
                return Err(e);
            };
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Error::action(format!(
                    "{text}\n{} stayed held for {}: see which process holds it (`systemctl status \
                     apt-daily.service apt-daily-upgrade.service unattended-upgrades.service`), let it \
                     finish, then run this step again",
                    capitalized(lock.what),
                    humantime(self.lock_wait)
                )));
            }
            log::warn!(
                "`{}`: another process holds {} ({holder}); on a freshly booted node that is {}. Waiting for \
                 it (check {check}, every {}, {} in all)",
                cmd.display(),
                lock.what,
                lock.usual_holder,
                humantime(poll),
                humantime(self.lock_wait)
            );
            std::thread::sleep(poll.min(left));
        }
        unreachable!("the loop returns")
    }

    fn retrying(&self, cmd: &Cmd) -> Result<Output> {
        let attempts = self.retry.attempts.max(1);
        for attempt in 1..=attempts {
            let out = self.host.run(cmd)?;
            if out.success() {
                return Ok(out);
            }
            let why = permanent(&out).or_else(|| {
                REPOSITORY_BROKEN
                    .iter()
                    .any(|p| out.stderr.contains(p) || out.stdout.contains(p))
                    .then_some("a repository's signing key is missing, expired or rotated")
            });
            let why = why.or_else(|| {
                held_apt_lock(&out.stderr)
                    .map(|_| "another process holds an apt lock apt-get does not wait for (waited for separately)")
            });
            let failure = HostError::Command {
                command: cmd.display(),
                status: out.status_text(),
                stderr: out.diagnostics().to_string(),
            };
            if why.is_some() || attempt == attempts {
                return Err(Error::action(format!(
                    "{failure}\n(attempt {attempt} of {attempts}{}; check the package repositories and the network of this node)",
                    why.map(|w| format!(", not retried: {w}")).unwrap_or_default()
                )));
            }
            log::warn!(
                "attempt {attempt} of {attempts} failed ({}): `{}`; retrying in {:?}",
                out.status_text(),
                cmd.display(),
                self.retry.pause
            );
            std::thread::sleep(self.retry.pause);
        }
        unreachable!("the loop returns on its last attempt")
    }
}

/// `600 s` as `10 min`, `0.1 s` as `100 ms`, for messages.
fn humantime(d: Duration) -> String {
    let secs = d.as_secs();
    if d.subsec_nanos() != 0 {
        format!("{} ms", d.as_millis())
    } else if secs % 60 == 0 && secs > 0 {
        format!("{} min", secs / 60)
    } else {
        format!("{secs} s")
    }
}

/// `text` with its first letter in capitals.
fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// An apt-get command that never asks, waits up to 10 minutes for the dpkg lock,
/// and does not let needrestart restart the node's services.
/// `apt-get <action> -y -q`, keeping a configuration file the node changed where
/// the package ships a new one (`--force-confdef --force-confold`).
fn apt_keeping_conffiles(action: &str) -> Cmd {
    apt([
        action,
        "-y",
        "-q",
        "-o",
        "Dpkg::Options::=--force-confdef",
        "-o",
        "Dpkg::Options::=--force-confold",
    ])
}

fn apt<const N: usize>(args: [&str; N]) -> Cmd {
    Cmd::new("apt-get")
        .args(["-o", "DPkg::Lock::Timeout=600"])
        .args(args)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .env("NEEDRESTART_SUSPEND", "1")
        .env("NEEDRESTART_MODE", "l")
        .echo()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::command::RecordingRunner;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    fn fast() -> Retry {
        Retry {
            attempts: 3,
            pause: Duration::ZERO,
        }
    }

    fn host(
        answer: impl Fn(&Cmd) -> Output + Send + Sync + 'static,
    ) -> (tempfile::TempDir, Host, Arc<RecordingRunner>) {
        let d = tempfile::tempdir().unwrap();
        let runner = Arc::new(RecordingRunner::new(move |c| {
            if c.program == "which" {
                return Ok(Output::exited(0, format!("/usr/bin/{}", c.args[0])));
            }
            Ok(answer(c))
        }));
        let h = Host::new(d.path(), runner.clone());
        (d, h, runner)
    }

    #[test]
    fn skips_everything_when_already_installed() {
        let (_d, h, r) = host(|c| match c.program.as_str() {
            "dpkg-query" => Output::exited(0, "install ok installed\t2.21.0-1"),
            _ => panic!("unexpected {}", c.display()),
        });
        let pm = PackageManager::detect(&h, Family::Debian, fast()).unwrap();
        assert!(pm.install(&["tuned"]).unwrap().is_empty());
        assert_eq!(pm.installed_version("tuned").unwrap().as_deref(), Some("2.21.0-1"));
        assert!(r.calls().iter().all(|c| c.starts_with("dpkg-query")), "{:?}", r.calls());
    }

    #[test]
    fn apt_install_refreshes_then_installs_non_interactively() {
        let (_d, h, r) = host(|c| match c.program.as_str() {
            "dpkg-query" => Output::exited(1, "dpkg-query: no packages found matching tuned"),
            _ => Output::exited(0, ""),
        });
        let pm = PackageManager::detect(&h, Family::Debian, fast()).unwrap();
        assert_eq!(pm.install(&["tuned"]).unwrap(), ["tuned"]);
        let calls: Vec<String> = r.calls().into_iter().filter(|c| c.starts_with("apt-get")).collect();
        assert_eq!(calls[0], "apt-get -o DPkg::Lock::Timeout=600 update -q");
        assert!(
            calls[1].starts_with("apt-get -o DPkg::Lock::Timeout=600 install -y -q") && calls[1].ends_with(" tuned"),
            "{}",
            calls[1]
        );
    }

    #[test]
    fn retries_transient_failures_then_succeeds() {
        let tries = Arc::new(AtomicU32::new(0));
        let t = tries.clone();
        let (_d, h, _r) = host(move |c| match c.program.as_str() {
            "rpm" => Output::exited(1, "package tuned is not installed"),
            "dnf" if t.fetch_add(1, Ordering::SeqCst) == 0 => Output {
                code: Some(1),
                stderr: "Curl error (6): Couldn't resolve host name".into(),
                ..Output::default()
            },
            _ => Output::exited(0, ""),
        });
        let pm = PackageManager::detect(&h, Family::Rhel, fast()).unwrap();
        assert_eq!(pm.tool(), Tool::Dnf);
        assert_eq!(pm.install(&["tuned"]).unwrap(), ["tuned"]);
        assert_eq!(tries.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn gives_up_after_the_last_attempt_with_the_tool_output() {
        let (_d, h, r) = host(|c| match c.program.as_str() {
            "dpkg-query" => Output::exited(1, ""),
            _ => Output {
                code: Some(100),
                stderr: "E: Could not get lock /var/lib/dpkg/lock-frontend".into(),
                ..Output::default()
            },
        });
        let pm = PackageManager::detect(&h, Family::Debian, fast()).unwrap();
        let e = pm.install(&["kdump-tools"]).unwrap_err().to_string();
        assert!(e.contains("Could not get lock") && e.contains("attempt 3 of 3"), "{e}");
        assert_eq!(r.calls().iter().filter(|c| c.contains(" update ")).count(), 3);
    }

    /// An apt-get stand-in answer: `lock` held (apt's message) for the first `held`
    /// calls of `action`, then success.
    fn apt_lock_held(action: &'static str, lock: &'static str, held: u32) -> impl Fn(&Cmd) -> Output + Send + Sync {
        let calls = AtomicU32::new(0);
        move |c: &Cmd| match c.program.as_str() {
            "dpkg-query" if c.args.len() == 3 && c.args[2] == "tuned" && action == "purge" => {
                Output::exited(0, "install ok installed\t2.21")
            }
            "dpkg-query" => Output::exited(1, ""),
            "apt-get" if c.args.iter().any(|a| a == action) && calls.fetch_add(1, Ordering::SeqCst) < held => Output {
                code: Some(100),
                stderr: format!(
                    "E: Could not get lock {lock}. It is held by process 2112 (apt-get)\nN: Be aware that \
                         removing the lock file is not a solution and may break your system.\nE: Unable to lock \
                         directory {}/",
                    lock.trim_end_matches("/lock")
                ),
                ..Output::default()
            },
            _ => Output::exited(0, ""),
        }
    }

    #[test]
    fn install_and_purge_wait_for_the_download_directory_lock_apt_does_not_wait_for() {
        for action in ["install", "purge"] {
            let (_d, h, r) = host(apt_lock_held(action, "/var/cache/apt/archives/lock", 5));
            let pm = PackageManager::detect(&h, Family::Debian, fast()).unwrap();
            let t = Instant::now();
            if action == "install" {
                assert_eq!(pm.install(&["tuned"]).unwrap(), ["tuned"]);
            } else {
                assert_eq!(pm.remove(&["tuned"]).unwrap(), ["tuned"]);
            }
            let runs = r.calls().iter().filter(|c| c.contains(&format!(" {action} "))).count();
            assert_eq!(
                runs, 6,
                "{action}: five refused (more than the 3 attempts), the sixth runs"
            );
            assert!(
                t.elapsed() >= APT_LOCK_POLL_FLOOR * 5,
                "{action}: checks at least 100 ms apart with a zero retry pause: {:?}",
                t.elapsed()
            );
        }
    }

    #[test]
    fn with_a_zero_retry_pause_the_lists_lock_is_still_waited_for() {
        let (_d, h, r) = host(apt_lock_held("update", "/var/lib/apt/lists/lock", 3));
        let pm = PackageManager::detect(&h, Family::Debian, fast()).unwrap();
        let t = Instant::now();
        pm.install(&["tuned"]).unwrap();
        assert_eq!(r.calls().iter().filter(|c| c.contains(" update ")).count(), 4);
        assert!(t.elapsed() >= APT_LOCK_POLL_FLOOR * 3, "{:?}", t.elapsed());
    }

    #[test]
    fn a_lock_held_past_the_wait_fails_naming_the_lock_and_its_holder() {
        let (_d, h, r) = host(apt_lock_held("install", "/var/cache/apt/archives/lock", u32::MAX));
        let mut pm = PackageManager::detect(&h, Family::Debian, fast()).unwrap();
        pm.lock_wait = Duration::from_millis(350);
        let e = pm.install(&["tuned"]).unwrap_err();
        let text = e.to_string();
        assert_eq!(e.exit_code(), 1, "{text}");
        assert!(
            text.contains("It is held by process 2112 (apt-get)")
                && text.contains(
                    "The package download directory's lock (/var/cache/apt/archives/lock) stayed held for 350 ms"
                )
                && text.contains("apt-daily-upgrade.service"),
            "{text}"
        );
        let runs = r.calls().iter().filter(|c| c.contains(" install ")).count();
        assert!((3..=6).contains(&runs), "about one check per 100 ms: {runs}");
    }

    #[test]
    fn does_not_retry_an_unknown_package() {
        let (_d, h, r) = host(|c| match c.program.as_str() {
            "dpkg-query" => Output::exited(1, ""),
            "apt-get" if c.args.contains(&"install".to_string()) => Output {
                code: Some(100),
                stderr: "E: Unable to locate package tunedx".into(),
                ..Output::default()
            },
            _ => Output::exited(0, ""),
        });
        let pm = PackageManager::detect(&h, Family::Debian, fast()).unwrap();
        let e = pm.install(&["tunedx"]).unwrap_err().to_string();
        assert!(e.contains("not retried"), "{e}");
        assert_eq!(r.calls().iter().filter(|c| c.contains(" install ")).count(), 1);
    }

    #[test]
    fn retry_policy_comes_from_the_environment() {
        let r = Retry::from_vars(|n| match n {
            "SKYHOOK_PKG_ATTEMPTS" => Some("5".into()),
            "SKYHOOK_PKG_RETRY_PAUSE" => Some("0.5".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(
            r,
            Retry {
                attempts: 5,
                pause: Duration::from_millis(500)
            }
        );
        let e = Retry::from_vars(|n| (n == "SKYHOOK_PKG_ATTEMPTS").then(|| "0".into())).unwrap_err();
        assert!(e.to_string().contains("SKYHOOK_PKG_ATTEMPTS=\"0\""), "{e}");
    }

    #[test]
    fn out_of_range_retry_settings_are_bad_input_naming_the_variable() {
        let cases = [
            ("SKYHOOK_PKG_ATTEMPTS", "101", "from 1 to 100"),
            ("SKYHOOK_PKG_ATTEMPTS", "99999999999999999999999", "from 1 to 100"),
            ("SKYHOOK_PKG_ATTEMPTS", "-1", "from 1 to 100"),
            ("SKYHOOK_PKG_RETRY_PAUSE", "99999999999999999999999", "from 0 to 3600"),
            ("SKYHOOK_PKG_RETRY_PAUSE", "3600.5", "from 0 to 3600"),
            ("SKYHOOK_PKG_RETRY_PAUSE", "NaN", "from 0 to 3600"),
            ("SKYHOOK_PKG_RETRY_PAUSE", "inf", "from 0 to 3600"),
            ("SKYHOOK_PKG_RETRY_PAUSE", "-0.5", "from 0 to 3600"),
        ];
        for (var, value, why) in cases {
            let e = Retry::from_vars(|n| (n == var).then(|| value.to_string())).unwrap_err();
            let text = e.to_string();
            assert_eq!(e.exit_code(), 2, "{var}={value}: {text}");
            assert!(
                text.contains(&format!("{var}=\"{value}\"")) && text.contains(why),
                "{text}"
            );
        }
        let huge = "9".repeat(100_000);
        let e = Retry::from_vars(|n| (n == "SKYHOOK_PKG_RETRY_PAUSE").then(|| huge.clone())).unwrap_err();
        assert!(e.to_string().len() < 400, "the value is cut: {e}");
        let r = Retry::from_vars(|n| (n == "SKYHOOK_PKG_RETRY_PAUSE").then(|| "3600".into())).unwrap();
        assert_eq!(r.pause, MAX_PAUSE);
    }

    #[test]
    fn install_reports_the_dependencies_it_pulled_in() {
        let installed = Arc::new(std::sync::Mutex::new(false));
        let state = installed.clone();
        let (_d, h, _r) = host(move |c| {
            let done = *state.lock().unwrap();
            match (c.program.as_str(), c.args.len()) {
                ("dpkg-query", 2) if done => Output::exited(
                    0,
                    "bash\tinstall ok installed\ntuned\tinstall ok installed\npython3-dbus\tinstall ok installed\nold\tdeinstall ok config-files\n",
                ),
                ("dpkg-query", 2) => Output::exited(0, "bash\tinstall ok installed\nold\tdeinstall ok config-files\n"),
                ("dpkg-query", _) => Output::exited(1, ""),
                ("apt-get", _) if c.args.contains(&"install".to_string()) => {
                    *state.lock().unwrap() = true;
                    Output::exited(0, "")
                }
                _ => Output::exited(0, ""),
            }
        });
        let pm = PackageManager::detect(&h, Family::Debian, fast()).unwrap();
        assert_eq!(pm.install(&["tuned"]).unwrap(), ["python3-dbus", "tuned"]);
    }

    #[test]
    fn remove_added_purges_exactly_what_the_install_added() {
        let (_d, h, r) = host(|c| match (c.program.as_str(), c.args.len()) {
            ("dpkg-query", 2) => Output::exited(
                0,
                "bash\tinstall ok installed\ntuned\tinstall ok installed\npython3-dbus\tinstall ok installed\n",
            ),
            ("apt-get", _) if c.args.contains(&"-s".to_string()) => {
                Output::exited(0, "Purg python3-dbus [1.3]\nPurg tuned [2.20]\n")
            }
            _ => Output::exited(0, ""),
        });
        let pm = PackageManager::detect(&h, Family::Debian, fast()).unwrap();
        let added = [
            "python3-dbus".to_string(),
            "tuned".to_string(),
            "gone-already".to_string(),
        ];
        assert_eq!(pm.remove_added(&["tuned"], &added).unwrap(), ["python3-dbus", "tuned"]);
        let calls = r.calls();
        assert_eq!(
            calls.last().unwrap(),
            "apt-get -o DPkg::Lock::Timeout=600 purge -y -q python3-dbus tuned"
        );
        assert!(!calls.iter().any(|c| c.contains("--auto-remove")), "{calls:?}");
    }

    #[test]
    fn remove_added_falls_back_when_something_new_depends_on_a_dependency() {
        let (_d, h, r) = host(|c| match (c.program.as_str(), c.args.len()) {
            ("dpkg-query", 2) => Output::exited(0, "tuned\tinstall ok installed\npython3-dbus\tinstall ok installed\n"),
            ("dpkg-query", _) => Output::exited(0, "install ok installed\t1"),
            ("apt-get", _) if c.args.contains(&"-s".to_string()) => {
                Output::exited(0, "Purg python3-dbus [1]\nPurg tuned [2]\nRemv my-app [1]\n")
            }
            _ => Output::exited(0, ""),
        });
        let pm = PackageManager::detect(&h, Family::Debian, fast()).unwrap();
        pm.remove_added(&["tuned"], &["python3-dbus".into(), "tuned".into()])
            .unwrap();
        assert_eq!(
            r.calls().last().unwrap(),
            "apt-get -o DPkg::Lock::Timeout=600 purge -y -q --auto-remove tuned"
        );
    }

    #[test]
    fn removes_only_what_is_installed() {
        let (_d, h, r) = host(|c| match (c.program.as_str(), c.args.last().map(String::as_str)) {
            ("rpm", Some("kexec-tools")) => Output::exited(0, "2.0.27-8.el9"),
            ("rpm", _) => Output::exited(1, ""),
            _ => Output::exited(0, ""),
        });
        let pm = PackageManager::detect(&h, Family::Rhel, fast()).unwrap();
        assert_eq!(pm.remove(&["kexec-tools", "absent"]).unwrap(), ["kexec-tools"]);
        assert!(
            r.calls().contains(&"dnf -y remove kexec-tools".to_string()),
            "{:?}",
            r.calls()
        );
    }
}
