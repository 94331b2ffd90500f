// SPDX-License-Identifier: Apache-2.0
//! The install receipt: whether a package's distribution packages were already on the
//! node before its apply, and which packages the install added (dependencies
//! included), kept in the package's state so that uninstall removes exactly those.
//!
//! The receipt is recorded *before* the install starts, and again once it has
//! finished: an apply killed in between still knows that the packages were not there
//! before, and an uninstall then removes them (letting the package manager pick the
//! unneeded dependencies, since the exact list was never recorded).

use serde::{Deserialize, Serialize};

use crate::os::pkgmgr::PackageManager;
use crate::runtime::error::Result;

/// What an apply found and added.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstallReceipt {
    /// Every requested package was installed before the package's first apply.
    pub preinstalled: bool,
    /// The packages the install added (the requested ones and their dependencies);
    /// empty until an install has finished.
    #[serde(default)]
    pub added: Vec<String>,
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
            added: Vec::new(),
        })
    }

    /// Installs whichever of `packages` are missing. `record` persists the receipt: it
    /// is called before anything is installed and again with what the install added.
    /// Returns the packages added by this call.
    pub fn install(
        &mut self,
        pm: &PackageManager,
        packages: &[&str],
        mut record: impl FnMut(&InstallReceipt) -> Result<()>,
    ) -> Result<Vec<String>> {
        record(self)?;
        let added = pm.install(packages)?;
        if !added.is_empty() {
            for p in &added {
                if !self.added.contains(p) {
                    self.added.push(p.clone());
                }
            }
            self.added.sort();
            record(self)?;
        }
        Ok(added)
    }

    /// Whether uninstall should take the packages away: apply found them missing.
    pub fn installed_by_us(&self) -> bool {
        !self.preinstalled
    }

    /// Removes `packages` and what the install added with them (see
    /// [`PackageManager::remove_added`]); returns the packages removed.
    pub fn remove(&self, pm: &PackageManager, packages: &[&str]) -> Result<Vec<String>> {
        pm.remove_added(packages, &self.added)
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
                "rpm" if c.args[0] == "-qa" => Output::exited(0, if done { "bash\ntuned\n" } else { "bash\n" }),
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
    fn is_recorded_before_the_install_and_again_with_what_it_added() {
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
        assert_eq!(
            recorded[0],
            (InstallReceipt::default(), false),
            "recorded before installing"
        );
        assert_eq!(recorded[1].0.added, ["tuned"]);
        assert!(InstallReceipt::before(&pm, &["tuned"]).unwrap().preinstalled);
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
