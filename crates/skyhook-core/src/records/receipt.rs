// SPDX-License-Identifier: Apache-2.0
//! The install receipt: whether a package's distribution packages were already on the
//! node before its apply, and which packages the install added (dependencies
//! included), kept in the package's state so that uninstall removes exactly those.
//!
//! The receipt is recorded *before* the install starts, marked pending with what the
//! node held then (the requested packages that were missing, and every installed
//! package), and recorded again once the install has finished. An apply killed in
//! between finds the receipt pending on its rerun: it finishes the install and
//! computes what was added against the packages installed *before the first run*
//! (installed now − installed then), so it records exactly what an uninterrupted run
//! records, although the packages are already there.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::os::pkgmgr::PackageManager;

/// What an apply found and added.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstallReceipt {
    /// Every requested package was installed before the package's first apply.
    pub preinstalled: bool,
    /// The packages the install added (the requested ones and their dependencies);
    /// empty until an install has finished.
    #[serde(default)]
    pub added: Vec<String>,
    /// Set from just before an install starts until it has finished and `added` holds
    /// what it added.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<PendingInstall>,
}

/// The node just before an install that may not have finished.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingInstall {
    /// The requested packages that were missing: what the install installs.
    pub missing: Vec<String>,
    /// Every package installed then (`None` when the package database could not be
    /// listed: `added` then holds `missing` only, as an uninterrupted install's does).
    pub installed_before: Option<BTreeSet<String>>,
}

impl PendingInstall {
    /// What the install added so far: the missing packages it installs, and every
    /// package installed now that was not before it (its dependencies).
    fn added_since(&self, pm: &PackageManager) -> Result<BTreeSet<String>> {
        let mut added: BTreeSet<String> = self.missing.iter().cloned().collect();
        if let (Some(before), Some(now)) = (&self.installed_before, pm.installed_packages()?) {
            added.extend(now.difference(before).cloned());
        }
        Ok(added)
    }
}

impl InstallReceipt {
    /// The receipt of a first apply: whether `packages` are all installed now.
    pub fn before(pm: &PackageManager, packages: &[&str]) -> Result<Self> {
        let mut preinstalled = true;
        for p in packages {
            preinstalled &= pm.is_installed(p)?;
        }
        Ok(InstallReceipt {
            preinstalled,
            ..InstallReceipt::default()
        })
    }

    /// Whether an install was started and has not been seen to finish.
    pub fn is_pending(&self) -> bool {
        self.pending.is_some()
    }

    /// Installs whichever of `packages` are missing (a pending receipt: finishes the
    /// install it recorded, `packages` aside). `record` persists the receipt: it is
    /// called before anything is installed (pending) and again once the install has
    /// finished, with what it added. Returns the packages the install added.
    pub fn install(
        &mut self,
        pm: &PackageManager,
        packages: &[&str],
        mut record: impl FnMut(&InstallReceipt) -> Result<()>,
    ) -> Result<Vec<String>> {
        if self.pending.is_none() {
            let mut missing = Vec::new();
            for p in packages {
                if !pm.is_installed(p)? {
                    missing.push(p.to_string());
                }
            }
            if !missing.is_empty() {
                let installed_before = pm.installed_packages()?;
                self.pending = Some(PendingInstall {
                    missing,
                    installed_before,
                });
            }
        }
        record(self)?;
        let Some(pending) = self.pending.clone() else {
            log::info!("already installed: {}", packages.join(", "));
            return Ok(Vec::new());
        };
        let missing: Vec<&str> = pending.missing.iter().map(String::as_str).collect();
        let mut added: BTreeSet<String> = pm.install(&missing)?.into_iter().collect();
        added.extend(pending.added_since(pm)?);
        let recorded: BTreeSet<String> = self.added.iter().chain(&added).cloned().collect();
        self.added = recorded.into_iter().collect();
        self.pending = None;
        record(self)?;
        Ok(added.into_iter().collect())
    }

    /// Whether the install added `package`, or may have (it was missing when an
    /// install that has not been seen to finish started).
    pub fn may_have_added(&self, package: &str) -> bool {
        self.added.iter().any(|p| p == package)
            || self
                .pending
                .as_ref()
                .is_some_and(|p| p.missing.iter().any(|m| m == package))
    }

    /// Whether uninstall should take the packages away: apply found them missing.
    pub fn installed_by_us(&self) -> bool {
        !self.preinstalled
    }

    /// Removes `packages` and what the install added with them (see
    /// [`PackageManager::remove_added`]); returns the packages removed. A receipt
    /// still pending (an apply killed during its install) counts as added what is
    /// installed now and was not before the install, with the packages it installs.
    pub fn remove(&self, pm: &PackageManager, packages: &[&str]) -> Result<Vec<String>> {
        let mut added: BTreeSet<String> = self.added.iter().cloned().collect();
        if let Some(pending) = &self.pending {
            added.extend(pending.added_since(pm)?);
        }
        let added: Vec<String> = added.into_iter().collect();
        pm.remove_added(packages, &added)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::Host;
    use crate::host::command::{Cmd, Output, RecordingRunner};
    use crate::os::distro::Family;
    use crate::os::pkgmgr::Retry;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    fn rpm_host(installed: Arc<Mutex<bool>>) -> (tempfile::TempDir, Host) {
        let d = tempfile::tempdir().unwrap();
        let runner = RecordingRunner::new(move |c: &Cmd| {
            let done = *installed.lock().unwrap();
            Ok(match c.program.as_str() {
                "which" => Output::exited(0, format!("/usr/bin/{}", c.args[0])),
                "rpm" if c.args[0] == "-qa" => {
                    Output::exited(0, if done { "bash\ntuned\npython3-dbus\n" } else { "bash\n" })
                }
                "rpm" if done => Output::exited(0, "2.25.1-1.el10"),
                "rpm" => Output::exited(1, "package tuned is not installed"),
                "dnf" => {
                    *installed.lock().unwrap() = true;
                    Output::exited(0, "")
                }
                other => panic!("unexpected {other}"),
            })
        });
        let h = Host::new(d.path(), Arc::new(runner));
        (d, h)
    }

    fn fast() -> Retry {
        Retry {
            attempts: 1,
            pause: Duration::ZERO,
        }
    }

    #[test]
    fn is_recorded_pending_before_the_install_and_again_with_what_it_added() {
        let installed = Arc::new(Mutex::new(false));
        let (_d, h) = rpm_host(installed.clone());
        let pm = PackageManager::detect(&h, Family::Rhel, fast()).unwrap();
        let mut receipt = InstallReceipt::before(&pm, &["tuned"]).unwrap();
        assert!(receipt.installed_by_us());
        let mut recorded = Vec::new();
        receipt
            .install(&pm, &["tuned"], |r| {
                recorded.push((r.clone(), *installed.lock().unwrap()));
                Ok(())
            })
            .unwrap();
        assert_eq!(recorded.len(), 2, "{recorded:?}");
        let (first, installed_then) = &recorded[0];
        assert!(!installed_then, "recorded before installing");
        assert_eq!(
            first.pending,
            Some(PendingInstall {
                missing: vec!["tuned".into()],
                installed_before: Some(["bash".to_string()].into()),
            })
        );
        assert!(first.added.is_empty());
        assert_eq!(recorded[1].0.added, ["python3-dbus", "tuned"]);
        assert!(!recorded[1].0.is_pending(), "finished");
        assert!(InstallReceipt::before(&pm, &["tuned"]).unwrap().preinstalled);
    }

    #[test]
    fn a_rerun_after_a_kill_during_the_install_records_what_it_added() {
        let installed = Arc::new(Mutex::new(false));
        let (_d, h) = rpm_host(installed.clone());
        let pm = PackageManager::detect(&h, Family::Rhel, fast()).unwrap();
        // The first run is killed once the install has run, before its final record.
        let mut persisted = None;
        let mut receipt = InstallReceipt::before(&pm, &["tuned"]).unwrap();
        let killed = receipt.install(&pm, &["tuned"], |r| match persisted {
            None => {
                persisted = Some(r.clone());
                Ok(())
            }
            Some(_) => Err(crate::Error::action("killed")),
        });
        assert!(killed.is_err());
        assert!(*installed.lock().unwrap(), "the install ran");
        let mut rerun = persisted.unwrap();
        assert!(rerun.is_pending());
        assert!(
            rerun.may_have_added("tuned"),
            "an uninstall now removes what it asked for"
        );
        assert!(!rerun.may_have_added("bash"), "installed before");
        let mut last = None;
        let added = rerun
            .install(&pm, &["tuned"], |r| {
                last = Some(r.clone());
                Ok(())
            })
            .unwrap();
        assert_eq!(added, ["python3-dbus", "tuned"]);
        let last = last.unwrap();
        assert_eq!(last.added, ["python3-dbus", "tuned"], "as an uninterrupted run records");
        assert!(!last.is_pending());
        assert!(last.installed_by_us());
    }

    #[test]
    fn an_installed_package_is_recorded_once_and_not_pending() {
        let installed = Arc::new(Mutex::new(true));
        let (_d, h) = rpm_host(installed);
        let pm = PackageManager::detect(&h, Family::Rhel, fast()).unwrap();
        let mut receipt = InstallReceipt::before(&pm, &["tuned"]).unwrap();
        let mut recorded = Vec::new();
        let added = receipt
            .install(&pm, &["tuned"], |r| {
                recorded.push(r.clone());
                Ok(())
            })
            .unwrap();
        assert!(added.is_empty());
        assert_eq!(
            recorded,
            [InstallReceipt {
                preinstalled: true,
                ..InstallReceipt::default()
            }]
        );
        assert!(!receipt.installed_by_us());
    }

    #[test]
    fn a_pending_receipt_reads_from_a_record_without_the_field() {
        let r: InstallReceipt = serde_json::from_str(r#"{"preinstalled": false, "added": ["tuned"]}"#).unwrap();
        assert!(!r.is_pending());
        assert!(r.may_have_added("tuned"));
        let text = serde_json::to_string(&r).unwrap();
        assert!(
            !text.contains("pending"),
            "a finished receipt writes no pending field: {text}"
        );
    }

    #[test]
    fn a_failing_record_stops_the_install() {
        let installed = Arc::new(Mutex::new(false));
        let (_d, h) = rpm_host(installed.clone());
        let pm = PackageManager::detect(&h, Family::Rhel, fast()).unwrap();
        let mut receipt = InstallReceipt::before(&pm, &["tuned"]).unwrap();
        let e = receipt
            .install(&pm, &["tuned"], |_| Err(crate::Error::action("disk full")))
            .unwrap_err();
        assert!(e.to_string().contains("disk full"), "{e}");
        assert!(!*installed.lock().unwrap(), "nothing installed without a receipt");
    }
}
