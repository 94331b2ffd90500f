// SPDX-License-Identifier: Apache-2.0
//! Where the package's files live on the node, per package name (the package's key
//! in the SCR, so that two tuning entries never collide), and the names the bash
//! package (1.x) used.

use std::path::{Path, PathBuf};

use skyhook_core::{Context, Step};

use crate::modprobe::PresetFile;

/// The owner of the files when tuning's own binary writes them.
const OWNER: &str = "tuning";

/// The systemd unit directory holding drop-ins.
pub const SYSTEMD_DIR: &str = "/etc/systemd/system";
/// The sysctl.d directory the package writes to.
const SYSCTL_DIR: &str = "/etc/sysctl.d";
/// The pam_limits drop-in directory.
const LIMITS_DIR: &str = "/etc/security/limits.d";
/// The GRUB defaults drop-in directory (Debian-like hosts).
const GRUB_DIR: &str = "/etc/default/grub.d";

/// What one of the package's files is, kept with its path from the moment the path
/// is made, so that nothing later guesses it from a directory prefix.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum FileKind {
    /// A sysctl.d file (`sysctl.conf`), this package's or the bash package's.
    Sysctl,
    /// A limits.d file (`ulimit.conf`).
    Limits,
    /// A systemd drop-in for `<unit>.service` (unit without `.service`).
    DropIn(String),
    /// A GRUB defaults drop-in (`grub.conf`).
    Grub,
    /// A modprobe.d file (`modprobe.conf`).
    Modprobe,
    /// A file the state records that none of this entry's names makes (an entry
    /// renamed since, say): removed like the others, asking for nothing more.
    Other,
}

impl FileKind {
    /// The kind of file, for messages.
    pub fn describe(&self) -> &'static str {
        match self {
            FileKind::Sysctl => "sysctl file",
            FileKind::Limits => "user limits file",
            FileKind::DropIn(_) => "service drop-in",
            FileKind::Grub => "GRUB drop-in",
            FileKind::Modprobe => "modprobe.d file",
            FileKind::Other => "file",
        }
    }

    /// The unit a drop-in belongs to.
    pub fn unit(&self) -> Option<&str> {
        match self {
            FileKind::DropIn(unit) => Some(unit),
            _ => None,
        }
    }
}

/// A file of the package with its kind.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Managed {
    /// Where it lives on the host.
    pub path: PathBuf,
    /// What it is.
    pub kind: FileKind,
}

/// The file names of one package name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paths {
    /// The package name.
    pub name: String,
    /// Every name the bash package may have used for this entry (see [`Paths::from_ctx`]).
    pub legacy_names: Vec<String>,
    /// The package whose step writes the files: `tuning`, or a package running this
    /// engine in process (`nvidia-tuning-gke`), named in each file's header.
    pub owner: String,
    /// A preset's own modprobe.d file in place of [`Paths::modprobe`]'s usual name
    /// (`copy-fail`'s `/etc/modprobe.d/disable-algif.conf`).
    pub modprobe_preset: Option<PresetFile>,
    /// Whether the limits.d file also gives its limits to root, which the `*` domain
    /// does not cover (limits.conf(5)): a preset's choice ([`crate::Preset::ulimit_root`]).
    pub ulimit_root: bool,
}

impl Paths {
    /// This entry as the shared ledger names it: `<owner>/<name>` (`tuning/gpu`,
    /// `nvidia-tuning-gke/gke`).
    pub fn entry(&self) -> String {
        format!("{}/{}", self.owner, self.name)
    }

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
        Paths {
            name,
            legacy_names,
            owner: OWNER.to_string(),
            modprobe_preset: None,
            ulimit_root: false,
        }
    }

    /// The paths for `step`, its kind named as the files' owner.
    pub fn for_step(step: &Step) -> Self {
        Paths {
            owner: step.kind().to_string(),
            ..Self::from_ctx(&step.ctx)
        }
    }

    /// Paths for `name` alone (tests and tools).
    pub fn named(name: &str) -> Self {
        Paths {
            name: name.to_string(),
            legacy_names: vec![name.to_string()],
            owner: OWNER.to_string(),
            modprobe_preset: None,
            ulimit_root: false,
        }
    }

    /// The file name of every file of this entry: `zz-skyhook-<name>-tuning.<ext>`.
    /// Each directory it goes to is read in file name order, a later file winning
    /// (sysctl.d, limits.d in "C" locale order, a unit's drop-ins across all its
    /// drop-in directories, `/etc/default/grub.d`), and `zz-` sorts after digits and
    /// after the usual names (`cloud-optimization.conf`, `override.conf` of
    /// `systemctl edit`, `nofile.conf`), so the entry's settings are the ones applied last.
    fn file_name(name: &str, ext: &str) -> String {
        format!("zz-skyhook-{name}-tuning.{ext}")
    }

    /// The name the bash package (1.x) and this package before 2.1.0 gave the files
    /// of `name`: it sorts before any name starting with a letter, which then wins.
    fn old_file_name(name: &str, ext: &str) -> String {
        format!("999-{name}-tuning.{ext}")
    }

    /// The sysctl drop-in.
    pub fn sysctl(&self) -> PathBuf {
        Path::new(SYSCTL_DIR).join(Self::file_name(&self.name, "conf"))
    }

    /// The sysctl drop-in of the bash package for `name` (it sorts before files such
    /// as `cloud-optimization.conf`, which then win).
    pub fn legacy_sysctl(name: &str) -> PathBuf {
        Path::new(SYSCTL_DIR).join(Self::old_file_name(name, "conf"))
    }

    /// The modprobe.d file (`modprobe.conf`): a preset's own, else one named like
    /// the sysctl drop-in.
    pub fn modprobe(&self) -> PathBuf {
        match &self.modprobe_preset {
            Some(p) => p.path.clone(),
            None => PathBuf::from(format!("/etc/modprobe.d/zz-skyhook-{}-tuning.conf", self.name)),
        }
    }

    /// The user limits file.
    pub fn ulimit(&self) -> PathBuf {
        Path::new(LIMITS_DIR).join(Self::file_name(&self.name, "conf"))
    }

    /// The user limits file of the bash package (and of this package before 2.1.0)
    /// for `name`.
    pub fn legacy_ulimit(name: &str) -> PathBuf {
        Path::new(LIMITS_DIR).join(Self::old_file_name(name, "conf"))
    }

    /// The file name of this entry's service drop-ins.
    pub fn dropin_file_name(&self) -> String {
        Self::file_name(&self.name, "conf")
    }

    /// The file name of the bash package's (and this package's before 2.1.0) service
    /// drop-ins for `name`.
    pub fn legacy_dropin_file_name(name: &str) -> String {
        Self::old_file_name(name, "conf")
    }

    /// The drop-in for `unit` (without `.service`).
    pub fn dropin(&self, unit: &str) -> PathBuf {
        Path::new(SYSTEMD_DIR)
            .join(format!("{unit}.service.d"))
            .join(self.dropin_file_name())
    }

    /// The kind of a path the state recorded (the state keeps paths only): the
    /// inverse of the naming functions above, for every name of this entry, exact
    /// names only. `None` for a path none of them makes.
    pub fn kind_of(&self, path: &Path) -> Option<FileKind> {
        if path == self.sysctl() {
            return Some(FileKind::Sysctl);
        }
        if path == self.modprobe() {
            return Some(FileKind::Modprobe);
        }
        if path == self.ulimit() {
            return Some(FileKind::Limits);
        }
        if path == self.grub() {
            return Some(FileKind::Grub);
        }
        let file = path.file_name().and_then(|f| f.to_str());
        if file == Some(&self.dropin_file_name())
            && let Some(unit) = Self::dropin_dir_unit(path.parent()?)
        {
            return Some(FileKind::DropIn(unit));
        }
        for name in &self.legacy_names {
            if path == Self::legacy_sysctl(name) {
                return Some(FileKind::Sysctl);
            }
            if path == Self::legacy_ulimit(name) {
                return Some(FileKind::Limits);
            }
            if path == Self::legacy_grub(name) {
                return Some(FileKind::Grub);
            }
            if file == Some(&Self::legacy_dropin_file_name(name))
                && let Some(unit) = Self::dropin_dir_unit(path.parent()?)
            {
                return Some(FileKind::DropIn(unit));
            }
        }
        None
    }

    /// A recorded path with its kind ([`Paths::kind_of`], [`FileKind::Other`] when
    /// none).
    pub fn managed(&self, path: &Path) -> Managed {
        Managed {
            path: path.to_path_buf(),
            kind: self.kind_of(path).unwrap_or(FileKind::Other),
        }
    }

    /// The unit of a drop-in directory `/etc/systemd/system/<unit>.service.d`.
    fn dropin_dir_unit(dir: &Path) -> Option<String> {
        if dir.parent()? != Path::new(SYSTEMD_DIR) {
            return None;
        }
        dir.file_name()?
            .to_str()?
            .strip_suffix(".service.d")
            .filter(|u| !u.is_empty())
            .map(str::to_string)
    }

    /// The GRUB drop-in.
    pub fn grub(&self) -> PathBuf {
        Path::new(GRUB_DIR).join(Self::file_name(&self.name, "cfg"))
    }

    /// The GRUB drop-in of the bash package (and of this package before 2.1.0) for `name`.
    pub fn legacy_grub(name: &str) -> PathBuf {
        Path::new(GRUB_DIR).join(Self::old_file_name(name, "cfg"))
    }

    /// The first comment lines of every file the package writes (without `# `).
    pub fn header(&self, key: &str) -> String {
        if self.owner == OWNER {
            format!(
                "Managed by the Skyhook package tuning ({}) from its configMap key {key}.\n\
                 Edit the SCR, not this file: changes made here are overwritten.",
                self.name
            )
        } else {
            format!(
                "Managed by the Skyhook package {} ({}), through the tuning engine ({key}).\n\
                 Edit the SCR, not this file: changes made here are overwritten.",
                self.owner, self.name
            )
        }
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
        assert_eq!(
            p.ulimit(),
            PathBuf::from("/etc/security/limits.d/zz-skyhook-gpu-tuning.conf")
        );
        assert_eq!(
            p.dropin("containerd"),
            PathBuf::from("/etc/systemd/system/containerd.service.d/zz-skyhook-gpu-tuning.conf")
        );
        assert_eq!(p.grub(), PathBuf::from("/etc/default/grub.d/zz-skyhook-gpu-tuning.cfg"));
        assert_eq!(
            p.kind_of(&p.dropin("nvidia-fabricmanager")),
            Some(FileKind::DropIn("nvidia-fabricmanager".into()))
        );
        assert_eq!(p.kind_of(&p.ulimit()), Some(FileKind::Limits));
        assert_eq!(p.kind_of(&p.sysctl()), Some(FileKind::Sysctl));
        assert_eq!(p.kind_of(&p.grub()), Some(FileKind::Grub));
        assert_eq!(
            p.kind_of(Path::new("/etc/systemd/system/x.service.d/999-other-tuning.conf")),
            None,
            "another entry's drop-in"
        );
        assert_eq!(
            p.kind_of(Path::new(
                "/etc/systemd/system/x.service.d/zz-skyhook-other-tuning.conf"
            )),
            None,
            "another entry's drop-in"
        );
        assert_eq!(
            p.kind_of(Path::new("/etc/sysctl.d/zz-skyhook-gpu-tuning.conf.bak")),
            None
        );
        assert_eq!(
            p.modprobe(),
            PathBuf::from("/etc/modprobe.d/zz-skyhook-gpu-tuning.conf")
        );
        assert_eq!(p.kind_of(&p.modprobe()), Some(FileKind::Modprobe));
        let preset = Paths {
            modprobe_preset: Some(PresetFile {
                path: "/etc/modprobe.d/disable-algif.conf".into(),
                text: "install algif_aead /bin/false\n".into(),
            }),
            ..Paths::named("gpu")
        };
        assert_eq!(preset.modprobe(), PathBuf::from("/etc/modprobe.d/disable-algif.conf"));
        assert_eq!(preset.kind_of(&preset.modprobe()), Some(FileKind::Modprobe));
        assert_eq!(
            preset.kind_of(&p.modprobe()),
            None,
            "the usual name is not the preset's"
        );
        assert!(p.sysctl().file_name() > PathBuf::from("/etc/sysctl.d/cloud-optimization.conf").file_name());
        assert!(p.comment("sysctl.conf").lines().all(|l| l.starts_with("# ")));
    }

    #[test]
    fn the_names_before_2_1_0_are_known_by_their_kind() {
        let p = Paths::named("gpu");
        for (old, kind) in [
            ("/etc/sysctl.d/999-gpu-tuning.conf", FileKind::Sysctl),
            ("/etc/security/limits.d/999-gpu-tuning.conf", FileKind::Limits),
            (
                "/etc/systemd/system/containerd.service.d/999-gpu-tuning.conf",
                FileKind::DropIn("containerd".into()),
            ),
            ("/etc/default/grub.d/999-gpu-tuning.cfg", FileKind::Grub),
        ] {
            assert_eq!(p.kind_of(Path::new(old)), Some(kind), "{old}");
        }
    }

    #[test]
    fn every_file_sorts_after_the_names_that_won_over_999() {
        let p = Paths::named("gpu");
        let later = |ours: PathBuf, theirs: &str| {
            assert!(
                ours.file_name().unwrap().as_encoded_bytes() > theirs.as_bytes(),
                "{} sorts before {theirs}",
                ours.display()
            )
        };
        later(p.sysctl(), "cloud-optimization.conf");
        later(p.ulimit(), "nofile.conf");
        later(p.dropin("containerd"), "override.conf");
        later(p.grub(), "kdump-tools.cfg");
        later(p.grub(), "init-select.cfg");
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
