// SPDX-License-Identifier: Apache-2.0
//! Where the package's files live on the node, per package name (the package's key
//! in the SCR, so that two tuning entries never collide), and the names the bash
//! package (1.x) used.

use std::path::{Path, PathBuf};

use skyhook_core::Context;

/// The systemd unit directory holding drop-ins.
pub const SYSTEMD_DIR: &str = "/etc/systemd/system";

/// The file names of one package name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paths {
    /// The package name.
    pub name: String,
    /// Every name the bash package may have used for this entry (see [`Paths::from_ctx`]).
    pub legacy_names: Vec<String>,
}

impl Paths {
    /// The paths for the step's package. The bash package took the second
    /// `_`-separated field of `SKYHOOK_RESOURCE_ID`, which is the package name unless
    /// the resource id itself holds a `_`; both are looked at for leftovers.
    pub fn from_ctx(ctx: &Context) -> Self {
        let name = ctx.package_name().to_string();
        let raw = format!("{}_{}_{}", ctx.resource.resource, name, ctx.resource.version);
        let mut legacy_names = vec![name.clone()];
        if let Some(bash) = raw.split('_').nth(1)
            && bash != name
            && !bash.is_empty()
            && !bash.contains('/')
        {
            legacy_names.push(bash.to_string());
        }
        Paths { name, legacy_names }
    }

    /// Paths for `name` alone (tests and tools).
    pub fn named(name: &str) -> Self {
        Paths {
            name: name.to_string(),
            legacy_names: vec![name.to_string()],
        }
    }

    /// The sysctl drop-in. Named to sort after every usual sysctl.d file, so that
    /// its values are the ones the boot applies last.
    pub fn sysctl(&self) -> PathBuf {
        PathBuf::from(format!("/etc/sysctl.d/zz-skyhook-{}-tuning.conf", self.name))
    }

    /// The sysctl drop-in of the bash package for `name` (it sorts before files such
    /// as `cloud-optimization.conf`, which then win).
    pub fn legacy_sysctl(name: &str) -> PathBuf {
        PathBuf::from(format!("/etc/sysctl.d/999-{name}-tuning.conf"))
    }

    /// The user limits file (the bash package's path).
    pub fn ulimit(&self) -> PathBuf {
        Self::ulimit_of(&self.name)
    }

    /// The user limits file for `name`.
    pub fn ulimit_of(name: &str) -> PathBuf {
        PathBuf::from(format!("/etc/security/limits.d/999-{name}-tuning.conf"))
    }

    /// The file name of service drop-ins for `name`.
    pub fn dropin_file_name(name: &str) -> String {
        format!("999-{name}-tuning.conf")
    }

    /// The drop-in for `unit` (without `.service`), the bash package's path.
    pub fn dropin(&self, unit: &str) -> PathBuf {
        Path::new(SYSTEMD_DIR)
            .join(format!("{unit}.service.d"))
            .join(Self::dropin_file_name(&self.name))
    }

    /// The unit (without `.service`) a drop-in path belongs to, when it is one.
    pub fn unit_of(path: &Path) -> Option<String> {
        let dir = path.parent()?;
        if dir.parent()? != Path::new(SYSTEMD_DIR) {
            return None;
        }
        dir.file_name()?
            .to_str()?
            .strip_suffix(".service.d")
            .map(str::to_string)
    }

    /// The GRUB drop-in (the bash package's path).
    pub fn grub(&self) -> PathBuf {
        Self::grub_of(&self.name)
    }

    /// The GRUB drop-in for `name`.
    pub fn grub_of(name: &str) -> PathBuf {
        PathBuf::from(format!("/etc/default/grub.d/999-{name}-tuning.cfg"))
    }

    /// The first comment lines of every file the package writes (without `# `).
    pub fn header(&self, key: &str) -> String {
        format!(
            "Managed by the Skyhook package tuning ({}) from its configMap key {key}.\n\
             Edit the SCR, not this file: changes made here are overwritten.",
            self.name
        )
    }

    /// [`Paths::header`] as comment lines, each ending in a newline.
    pub fn comment(&self, key: &str) -> String {
        self.header(key).lines().map(|l| format!("# {l}\n")).collect()
    }

    /// A file holding the value of configMap key `key` verbatim below the header,
    /// ending in a newline.
    pub fn verbatim(&self, key: &str, value: &str) -> String {
        let mut out = self.comment(key);
        out.push_str(value);
        if !value.is_empty() && !value.ends_with('\n') {
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_package_name() {
        let p = Paths::named("gpu");
        assert_eq!(p.sysctl(), PathBuf::from("/etc/sysctl.d/zz-skyhook-gpu-tuning.conf"));
        assert_eq!(
            Paths::legacy_sysctl("gpu"),
            PathBuf::from("/etc/sysctl.d/999-gpu-tuning.conf")
        );
        assert_eq!(p.ulimit(), PathBuf::from("/etc/security/limits.d/999-gpu-tuning.conf"));
        assert_eq!(
            p.dropin("containerd"),
            PathBuf::from("/etc/systemd/system/containerd.service.d/999-gpu-tuning.conf")
        );
        assert_eq!(
            Paths::unit_of(&p.dropin("nvidia-fabricmanager")).as_deref(),
            Some("nvidia-fabricmanager")
        );
        assert_eq!(Paths::unit_of(&p.ulimit()), None);
        assert_eq!(p.grub(), PathBuf::from("/etc/default/grub.d/999-gpu-tuning.cfg"));
        assert!(p.sysctl().file_name() > PathBuf::from("/etc/sysctl.d/cloud-optimization.conf").file_name());
        assert!(p.comment("sysctl.conf").lines().all(|l| l.starts_with("# ")));
    }

    #[test]
    fn bash_names_come_from_the_second_field_of_the_resource_id() {
        let ctx = |id: &str| {
            Context::from_vars(skyhook_core::Mode::Config, |n| match n {
                "SKYHOOK_DIR" => Some("/x".into()),
                "SKYHOOK_RESOURCE_ID" => Some(id.into()),
                _ => None,
            })
            .unwrap()
        };
        assert_eq!(Paths::from_ctx(&ctx("scr_gpu_1.0.0")).legacy_names, ["gpu"]);
        assert_eq!(Paths::from_ctx(&ctx("my_scr_gpu_1.0.0")).legacy_names, ["gpu", "scr"]);
    }
}
