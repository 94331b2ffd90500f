// SPDX-License-Identifier: Apache-2.0
//! Image platforms and Rust targets: which target triple a Docker platform
//! (`linux/amd64`, `linux/arm64`) is built with, and which cross toolchain a build
//! machine of another architecture needs for it.
//!
//! `skyhook-pkg dist --target all` builds every published platform's tree on the
//! build machine with the `<arch>-unknown-linux-gnu` target, `+crt-static`, and
//! Debian's cross gcc as the linker for the other architecture (glibc's static
//! archives come from `libc6-dev-<debian-arch>-cross`; `ci/setup-toolchain` installs
//! them, [`crate::build::toolchain`] picks the compiler); the images copy those trees
//! ([`published`]: the Dockerfile's tree stages, one per platform). `skyhook-pkg
//! platform` prints the target and whether a cross toolchain is needed, for scripts
//! that build one platform.

use crate::error::{ToolError, UnsupportedPlatform};

/// The architectures the images are published for: (Docker arch, ELF/Rust arch, Debian arch).
const ARCHES: [(&str, &str, &str); 2] = [("amd64", "x86_64", "amd64"), ("arm64", "aarch64", "arm64")];

/// The Docker platforms the images are published for (`linux/amd64`, …).
pub fn supported() -> Vec<String> {
    ARCHES.iter().map(|(d, ..)| format!("linux/{d}")).collect()
}

/// The Rust/ELF architecture (`x86_64`, `aarch64`) of a Docker platform
/// (`linux/amd64`, `linux/arm64`, `linux/arm64/v8`).
pub fn arch_of_platform(platform: &str) -> Result<&'static str, UnsupportedPlatform> {
    let mut parts = platform.split('/');
    let (os, arch, variant) = (parts.next(), parts.next(), parts.next());
    let found = ARCHES
        .iter()
        .find(|(docker, ..)| Some(*docker) == arch)
        .filter(|_| os == Some("linux") && parts.next().is_none())
        .filter(|(docker, ..)| variant.is_none() || (*docker == "arm64" && variant == Some("v8")));
    match found {
        Some((_, rust, _)) => Ok(rust),
        None => Err(UnsupportedPlatform {
            platform: platform.to_string(),
            supported: supported(),
        }),
    }
}

/// The Docker platform (`linux/arm64`) of a Rust/ELF architecture (`aarch64`).
pub fn platform_of_arch(arch: &str) -> Option<String> {
    ARCHES
        .iter()
        .find(|(_, rust, _)| *rust == arch)
        .map(|(docker, ..)| format!("linux/{docker}"))
}

/// The published architectures, in publishing order: (Docker arch, target triple),
/// e.g. (`amd64`, `x86_64-unknown-linux-gnu`).
pub fn published() -> Vec<(&'static str, String)> {
    ARCHES.iter().map(|(docker, rust, _)| (*docker, triple(rust))).collect()
}

/// The target triples of every published platform, in publishing order.
pub fn published_triples() -> Vec<String> {
    ARCHES.iter().map(|(_, rust, _)| triple(rust)).collect()
}

/// The target triple the images use for an architecture.
pub fn triple(arch: &str) -> String {
    format!("{arch}-unknown-linux-gnu")
}

/// The architecture a target triple builds for (its first component).
pub fn triple_arch(triple: &str) -> &str {
    triple.split('-').next().unwrap_or(triple)
}

/// What a build machine needs to link binaries for another architecture (the
/// Debian packages that provide it are `ci/setup-toolchain`'s concern).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrossToolchain {
    /// The linker cargo must use (`aarch64-linux-gnu-gcc`).
    pub linker: String,
}

/// The cross toolchain for building `target` on a machine of architecture
/// `host_arch`; `None` when no cross toolchain is needed (same architecture) or
/// known (a target other than `<arch>-unknown-linux-gnu` of a published arch).
pub fn cross_toolchain(host_arch: &str, target: &str) -> Option<CrossToolchain> {
    let arch = triple_arch(target);
    if arch == host_arch || !target.ends_with("-linux-gnu") {
        return None;
    }
    let (_, rust, _) = ARCHES.iter().find(|(_, rust, _)| *rust == arch)?;
    Some(CrossToolchain {
        linker: format!("{rust}-linux-gnu-gcc"),
    })
}

/// The environment variable that names cargo's linker for a target
/// (`CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER`).
pub fn linker_env_var(target: &str) -> String {
    format!(
        "CARGO_TARGET_{}_LINKER",
        target.to_ascii_uppercase().replace(['-', '.'], "_")
    )
}

/// The shell assignments `skyhook-pkg platform` prints for the Dockerfile's build
/// stage: the target triple, and `CROSS='yes'` when the build needs the cross
/// toolchain (`ci/setup-toolchain`).
pub fn shell_assignments(target_platform: &str, build_platform: Option<&str>) -> Result<String, UnsupportedPlatform> {
    let arch = arch_of_platform(target_platform)?;
    let host_arch = match build_platform {
        Some(p) => arch_of_platform(p)?,
        None => arch,
    };
    let triple = triple(arch);
    let cross = cross_toolchain(host_arch, &triple);
    Ok(format!(
        "TRIPLE='{triple}'\nCROSS='{}'\n",
        if cross.is_some() { "yes" } else { "" }
    ))
}

/// `skyhook-pkg platform <target-platform> [--build <platform>]`.
pub fn run(target_platform: &str, build_platform: Option<&str>) -> Result<bool, ToolError> {
    out!("{}", shell_assignments(target_platform, build_platform)?);
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_platforms_map_to_the_gnu_targets() {
        assert_eq!(arch_of_platform("linux/amd64").unwrap(), "x86_64");
        assert_eq!(arch_of_platform("linux/arm64").unwrap(), "aarch64");
        assert_eq!(arch_of_platform("linux/arm64/v8").unwrap(), "aarch64");
        for bad in [
            "linux/arm/v7",
            "windows/amd64",
            "linux/amd64/v8",
            "amd64",
            "",
            "linux/arm64/v8/x",
        ] {
            let e = arch_of_platform(bad).unwrap_err();
            assert_eq!(e.platform, bad);
            assert!(e.to_string().contains("linux/amd64 and linux/arm64"), "{bad}: {e}");
        }
        assert_eq!(platform_of_arch("aarch64").as_deref(), Some("linux/arm64"));
        assert_eq!(platform_of_arch("x86_64").as_deref(), Some("linux/amd64"));
        assert_eq!(platform_of_arch("riscv64"), None);
        assert_eq!(triple_arch(&triple("aarch64")), "aarch64");
    }

    #[test]
    fn cross_builds_get_debians_cross_gcc_both_ways() {
        assert_eq!(
            cross_toolchain("x86_64", "aarch64-unknown-linux-gnu"),
            Some(CrossToolchain {
                linker: "aarch64-linux-gnu-gcc".into(),
            })
        );
        assert_eq!(
            cross_toolchain("aarch64", "x86_64-unknown-linux-gnu"),
            Some(CrossToolchain {
                linker: "x86_64-linux-gnu-gcc".into(),
            })
        );
        assert_eq!(cross_toolchain("x86_64", "x86_64-unknown-linux-gnu"), None);
        assert_eq!(cross_toolchain("x86_64", "aarch64-unknown-linux-musl"), None);
        assert_eq!(
            linker_env_var("aarch64-unknown-linux-gnu"),
            "CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER"
        );
    }

    #[test]
    fn prints_what_the_build_stage_installs() {
        assert_eq!(
            shell_assignments("linux/arm64", Some("linux/amd64")).unwrap(),
            "TRIPLE='aarch64-unknown-linux-gnu'\nCROSS='yes'\n"
        );
        assert_eq!(
            shell_assignments("linux/amd64", Some("linux/amd64")).unwrap(),
            "TRIPLE='x86_64-unknown-linux-gnu'\nCROSS=''\n"
        );
        assert_eq!(
            shell_assignments("linux/amd64", None).unwrap(),
            "TRIPLE='x86_64-unknown-linux-gnu'\nCROSS=''\n"
        );
        assert_eq!(
            shell_assignments("linux/s390x", Some("linux/amd64"))
                .unwrap_err()
                .platform,
            "linux/s390x"
        );
        assert_eq!(
            shell_assignments("linux/amd64", Some("linux/ppc64le"))
                .unwrap_err()
                .platform,
            "linux/ppc64le"
        );
    }
}
