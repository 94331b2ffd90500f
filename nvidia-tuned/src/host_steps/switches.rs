// SPDX-License-Identifier: Apache-2.0
//! The environment variables of the host steps, as upstream's SCRs set them in the
//! package's `env`: `TOPO_PATH` (where the NCCL topology file goes, default
//! `/etc/nccl/topo.xml`), `CONFIGURE_PCIE_ACS` (default on) and
//! `CONFIGURE_IOMMU_PASSTHROUGH` (default `auto`); and `CONFIGURE_BOOTLOADER` (default
//! on), the switch of rke2's GRUB drop-in ([`configure_bootloader`]). Read once, every
//! problem listed, before any change; a value the original would have read as "on" by
//! accident (a typo) is refused here, naming the variable and an excerpt.

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use skyhook_core::error::excerpt;
use skyhook_core::{Error, Result};

/// Where the NCCL topology file goes.
pub const TOPO_PATH: &str = "TOPO_PATH";
/// The default of [`TOPO_PATH`].
pub const DEFAULT_TOPO_PATH: &str = "/etc/nccl/topo.xml";
/// Switches the PCIe ACS correction off (`false`).
pub const CONFIGURE_PCIE_ACS: &str = "CONFIGURE_PCIE_ACS";
/// `auto`, `true` or `false` for the IOMMU passthrough workaround.
pub const CONFIGURE_IOMMU_PASSTHROUGH: &str = "CONFIGURE_IOMMU_PASSTHROUGH";
/// Which RDMA devices are the rails of SPCX congestion control.
pub const RAIL_GLOB: &str = "RAIL_GLOB";
/// The default of [`RAIL_GLOB`]: the names mlx5_ib gives bonds under hardware LAG.
pub const DEFAULT_RAIL_GLOB: &str = "mlx5_bond_*";

/// Switches rke2's GRUB drop-in and its regeneration off (`false`), as upstream's
/// configure_bootloader step reads it.
pub const CONFIGURE_BOOTLOADER: &str = "CONFIGURE_BOOTLOADER";

/// The longest `TOPO_PATH` accepted (PATH_MAX).
const PATH_MAX: usize = 4096;

/// When the IOMMU passthrough workaround applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IommuPolicy {
    /// On kernels older than the fix (the default).
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// The host steps' switches, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Switches {
    /// The NCCL topology file's path.
    pub topo_path: PathBuf,
    /// Whether `TOPO_PATH` was set (otherwise the default is logged).
    pub topo_path_set: bool,
    /// Whether the PCIe ACS correction is wanted.
    pub pcie_acs: bool,
    /// The IOMMU passthrough policy.
    pub iommu: IommuPolicy,
    /// The rails' name pattern.
    pub rail_glob: String,
}

impl Switches {
    /// Reads the switches from the process environment.
    pub fn from_env() -> Result<Self> {
        Self::from_vars(|name| std::env::var_os(name))
    }

    /// Reads the switches through `var_os`; every bad value is listed (a value that
    /// is not UTF-8 among them).
    pub fn from_vars(var_os: impl Fn(&str) -> Option<OsString>) -> Result<Self> {
        let mut problems = Vec::new();
        let var = |name: &str| match var_os(name).map(OsString::into_string) {
            None => None,
            Some(Ok(v)) => Some(v),
            // Replaced by a value no switch accepts, so it is reported once below.
            Some(Err(raw)) => Some(format!("\0{}", raw.to_string_lossy())),
        };
        let topo = var(TOPO_PATH).filter(|v| !v.is_empty());
        let topo_path_set = topo.is_some();
        let topo_path = match topo_path(topo.as_deref().unwrap_or(DEFAULT_TOPO_PATH)) {
            Ok(p) => p,
            Err(why) => {
                problems.push(why);
                PathBuf::new()
            }
        };
        let pcie_acs = match var(CONFIGURE_PCIE_ACS).as_deref().map(flag) {
            None | Some(Flag::Empty) | Some(Flag::On) => true,
            Some(Flag::Off) => false,
            Some(_) => {
                problems.push(bad(
                    CONFIGURE_PCIE_ACS,
                    &var(CONFIGURE_PCIE_ACS).unwrap_or_default(),
                    "true or false",
                ));
                true
            }
        };
        let iommu = match var(CONFIGURE_IOMMU_PASSTHROUGH).as_deref().map(flag) {
            None | Some(Flag::Empty) | Some(Flag::Auto) => IommuPolicy::Auto,
            Some(Flag::On) => IommuPolicy::Always,
            Some(Flag::Off) => IommuPolicy::Never,
            Some(Flag::Other) => {
                problems.push(bad(
                    CONFIGURE_IOMMU_PASSTHROUGH,
                    &var(CONFIGURE_IOMMU_PASSTHROUGH).unwrap_or_default(),
                    "auto, true or false",
                ));
                IommuPolicy::Auto
            }
        };
        let rail_glob = var(RAIL_GLOB)
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| DEFAULT_RAIL_GLOB.to_string());
        let glob_chars = |c: char| c.is_ascii_alphanumeric() || "_.-*?".contains(c);
        if rail_glob.len() > 64 || !rail_glob.chars().all(glob_chars) {
            problems.push(format!(
                "environment variable {RAIL_GLOB} ({}): not an RDMA device name pattern (letters, digits, `_.-`, \
                 `*` and `?`, at most 64 bytes); the default is {DEFAULT_RAIL_GLOB}",
                excerpt(&rail_glob)
            ));
        }
        if !problems.is_empty() {
            return Err(Error::Input(problems));
        }
        Ok(Switches {
            topo_path,
            topo_path_set,
            pcie_acs,
            iommu,
            rail_glob,
        })
    }
}

/// Whether [`CONFIGURE_BOOTLOADER`] leaves rke2's GRUB drop-in on (the default, also
/// when blank), read through `var_os`; a value that is not a switch, or not UTF-8, is
/// bad input naming the variable (upstream read a typo as "on").
pub fn configure_bootloader(var_os: impl Fn(&str) -> Option<OsString>) -> Result<bool> {
    let Some(raw) = var_os(CONFIGURE_BOOTLOADER) else {
        return Ok(true);
    };
    let value = raw
        .to_str()
        .map_or_else(|| format!("\0{}", raw.to_string_lossy()), str::to_string);
    match flag(&value) {
        Flag::Empty | Flag::On => Ok(true),
        Flag::Off => Ok(false),
        Flag::Auto | Flag::Other => Err(Error::Input(vec![bad(CONFIGURE_BOOTLOADER, &value, "true or false")])),
    }
}

/// A switch's value, as [`flag`] reads it.
pub(crate) enum Flag {
    /// Blank.
    Empty,
    /// `true`, `1`, `yes`, `on`.
    On,
    /// `false`, `0`, `no`, `off`.
    Off,
    /// `auto`.
    Auto,
    /// Anything else.
    Other,
}

/// A switch's value as upstream spells it (any case, surrounding blanks ignored).
pub(crate) fn flag(value: &str) -> Flag {
    match value.trim().to_ascii_lowercase().as_str() {
        "" => Flag::Empty,
        "true" | "1" | "yes" | "on" => Flag::On,
        "false" | "0" | "no" | "off" => Flag::Off,
        "auto" => Flag::Auto,
        _ => Flag::Other,
    }
}

fn bad(name: &str, value: &str, wanted: &str) -> String {
    format!(
        "environment variable {name} ({}): not a switch (or not UTF-8); set it to {wanted} in the package's env",
        excerpt(value)
    )
}

/// `TOPO_PATH` checked: absolute, no `.` or `..` component, no NUL, at most PATH_MAX
/// bytes, and not the root itself.
fn topo_path(value: &str) -> std::result::Result<PathBuf, String> {
    let why = |reason: &str| {
        format!(
            "environment variable {TOPO_PATH} ({}): {reason}; set it to an absolute file path such as {DEFAULT_TOPO_PATH}",
            excerpt(value)
        )
    };
    if value.len() > PATH_MAX {
        return Err(why("longer than PATH_MAX (4096 bytes)"));
    }
    if value.contains('\0') || value.contains('\n') {
        return Err(why("holds a NUL or newline character, or is not UTF-8"));
    }
    let path = Path::new(value);
    if !path.is_absolute() {
        return Err(why("not an absolute path"));
    }
    if value.ends_with('/') || path.parent().is_none() {
        return Err(why("names a directory, not a file"));
    }
    if path
        .components()
        .any(|c| matches!(c, Component::ParentDir | Component::CurDir))
        || value.split('/').any(|c| c == ".")
    {
        return Err(why("has a `.` or `..` component"));
    }
    Ok(path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(vars: &[(&str, &str)]) -> Result<Switches> {
        let vars: Vec<(String, String)> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Switches::from_vars(|n| vars.iter().find(|(k, _)| k == n).map(|(_, v)| v.into()))
    }

    #[test]
    fn defaults_are_upstreams() {
        let s = read(&[]).unwrap();
        assert_eq!(s.topo_path, Path::new(DEFAULT_TOPO_PATH));
        assert!(!s.topo_path_set);
        assert!(s.pcie_acs);
        assert_eq!(s.iommu, IommuPolicy::Auto);
        let s = read(&[(CONFIGURE_PCIE_ACS, " OFF "), (CONFIGURE_IOMMU_PASSTHROUGH, "Yes")]).unwrap();
        assert!(!s.pcie_acs);
        assert_eq!(s.iommu, IommuPolicy::Always);
        assert_eq!(
            read(&[(CONFIGURE_IOMMU_PASSTHROUGH, "0")]).unwrap().iommu,
            IommuPolicy::Never
        );
    }

    #[test]
    fn configure_bootloader_is_on_unless_switched_off_and_refuses_anything_else() {
        let read = |v: Option<&str>| configure_bootloader(|_| v.map(OsString::from));
        for (value, on) in [
            (None, true),
            (Some(""), true),
            (Some(" TRUE "), true),
            (Some("off"), false),
            (Some("0"), false),
        ] {
            assert_eq!(read(value).unwrap(), on, "{value:?}");
        }
        for value in ["flase", "auto", "yes please"] {
            let e = read(Some(value)).unwrap_err();
            assert_eq!(e.exit_code(), 2);
            let msg = e.to_string();
            assert!(
                msg.contains(CONFIGURE_BOOTLOADER) && msg.contains(value) && msg.contains("true or false"),
                "{msg}"
            );
        }
        use std::os::unix::ffi::OsStringExt;
        let e = configure_bootloader(|_| Some(OsString::from_vec(b"of\xff".to_vec()))).unwrap_err();
        assert!(e.to_string().contains("not UTF-8"), "{e}");
    }

    #[test]
    fn bad_values_are_refused_naming_the_variable_and_the_reason() {
        let cases = [
            (TOPO_PATH, "etc/nccl/topo.xml", "not an absolute path"),
            (TOPO_PATH, "/etc/nccl/../shadow", "`..` component"),
            (TOPO_PATH, "/etc/./topo.xml", "`..` component"),
            (TOPO_PATH, "/etc/nccl/", "names a directory"),
            (TOPO_PATH, "/", "names a directory"),
            (CONFIGURE_PCIE_ACS, "flase", "set it to true or false"),
            (CONFIGURE_IOMMU_PASSTHROUGH, "sometimes", "auto, true or false"),
            (RAIL_GLOB, "mlx5_bond_*/../x", "not an RDMA device name pattern"),
        ];
        for (name, value, reason) in cases {
            let err = read(&[(name, value)]).unwrap_err().to_string();
            assert!(err.contains(name) && err.contains(reason), "{name}={value}: {err}");
        }
        let long = format!("/{}", "a".repeat(5000));
        let err = read(&[(TOPO_PATH, &long)]).unwrap_err().to_string();
        assert!(err.contains("PATH_MAX") && err.len() < 600, "{err}");
        use std::os::unix::ffi::OsStringExt;
        let raw = OsString::from_vec(b"/etc/nccl/t\xffpo.xml".to_vec());
        let err = Switches::from_vars(|n| (n == TOPO_PATH).then(|| raw.clone()))
            .unwrap_err()
            .to_string();
        assert!(err.contains("TOPO_PATH") && err.contains("not UTF-8"), "{err}");
    }
}
