// SPDX-License-Identifier: Apache-2.0
//! The combinations upstream ships (`defaults/<service>-<accelerator>.conf` of
//! nodewright-packages' nvidia-setup 0.8.x, see UPSTREAM.md §3.2), each with its
//! defaults and the steps its apply runs. The values are upstream's exactly; the
//! page-size suffix of arm64 kernels is derived ([`crate::kernel::Target`]), as
//! upstream's 0.4.0+ derives it.

use skyhook_core::Error;
use skyhook_core::error::excerpt;

/// What a combination's full apply does after the kernel check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Steps {
    /// EKS: apt (upgrade opt-in), EFA, OFI, chrony, RAID0 over NVMe instance storage.
    Eks,
    /// AKS: the InfiniBand modules and unlimited memlock.
    Aks,
    /// BCM: the running kernel's headers link, and nothing else.
    Bcm,
}

/// One shipped combination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Combination {
    /// The `service` value.
    pub service: &'static str,
    /// The `accelerator` value.
    pub accelerator: &'static str,
    /// The kernel release, without the page-size suffix; `None`: the platform's own.
    pub kernel: Option<&'static str>,
    /// The EFA installer version.
    pub efa: Option<&'static str>,
    /// The Lustre source.
    pub lustre: Option<&'static str>,
    /// What apply does beyond the kernel.
    pub steps: Steps,
}

impl Combination {
    /// `<service>-<accelerator>`, upstream's name of the defaults file.
    pub fn name(&self) -> String {
        format!("{}-{}", self.service, self.accelerator)
    }
}

/// The EKS defaults of 0.4.0–0.8.1 (`eks-gb300` a copy of `eks-gb200` since 0.8.0).
const fn eks(accelerator: &'static str) -> Combination {
    Combination {
        service: "eks",
        accelerator,
        kernel: Some("6.17.0-1019-aws"),
        efa: Some("1.48.0"),
        lustre: Some("aws"),
        steps: Steps::Eks,
    }
}

/// A combination whose kernel the platform manages (no defaults).
const fn managed(service: &'static str, accelerator: &'static str, steps: Steps) -> Combination {
    Combination {
        service,
        accelerator,
        kernel: None,
        efa: None,
        lustre: None,
        steps,
    }
}

/// Every combination, in upstream's order of arrival.
pub const ALL: [Combination; 7] = [
    eks("h100"),
    eks("gb200"),
    eks("gb300"),
    managed("aks", "h100", Steps::Aks),
    managed("bcm", "h100", Steps::Bcm),
    managed("bcm", "gb200", Steps::Bcm),
    managed("bcm", "vr200", Steps::Bcm),
];

/// The services, sorted.
pub fn services() -> Vec<&'static str> {
    let mut s: Vec<&str> = ALL.iter().map(|c| c.service).collect();
    s.sort_unstable();
    s.dedup();
    s
}

/// The accelerators `service` ships, in the table's order.
pub fn accelerators_of(service: &str) -> Vec<&'static str> {
    ALL.iter()
        .filter(|c| c.service == service)
        .map(|c| c.accelerator)
        .collect()
}

/// The service as shipped, or bad input listing the services.
pub fn service(service: &str) -> Result<&'static str, Error> {
    services().into_iter().find(|s| *s == service).ok_or_else(|| {
        Error::input(format!(
            "configMap key \"service\" is {}; supported: {} (values are lower case, as upstream's)",
            excerpt(service),
            services().join(", ")
        ))
    })
}

/// The combination of `service` and `accelerator`, or bad input listing what ships.
pub fn find(service: &str, accelerator: &str) -> Result<&'static Combination, Error> {
    ALL.iter()
        .find(|c| c.service == service && c.accelerator == accelerator)
        .ok_or_else(|| {
            Error::input(format!(
                "unsupported combination: service={} accelerator={}; supported: {}",
                excerpt(service),
                excerpt(accelerator),
                ALL.iter().map(Combination::name).collect::<Vec<_>>().join(" ")
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstreams_combinations_and_defaults() {
        let names: Vec<String> = ALL.iter().map(Combination::name).collect();
        assert_eq!(
            names,
            [
                "eks-h100",
                "eks-gb200",
                "eks-gb300",
                "aks-h100",
                "bcm-h100",
                "bcm-gb200",
                "bcm-vr200"
            ]
        );
        let gb300 = find("eks", "gb300").unwrap();
        assert_eq!(
            (gb300.kernel, gb300.efa, gb300.lustre),
            (Some("6.17.0-1019-aws"), Some("1.48.0"), Some("aws"))
        );
        assert_eq!(find("aks", "h100").unwrap().kernel, None);
        assert_eq!(accelerators_of("bcm"), ["h100", "gb200", "vr200"]);
    }

    #[test]
    fn an_unknown_combination_lists_what_ships() {
        let e = find("eks", "vr200").unwrap_err().to_string();
        assert!(e.contains("service=\"eks\" accelerator=\"vr200\""), "{e}");
        assert!(
            e.contains("eks-h100 eks-gb200 eks-gb300 aks-h100 bcm-h100 bcm-gb200 bcm-vr200"),
            "{e}"
        );
        let e = service("EKS").unwrap_err().to_string();
        assert!(e.contains("supported: aks, bcm, eks"), "{e}");
    }
}
