// SPDX-License-Identifier: Apache-2.0
//! `skyhook-pkg profiles list | show`: the profile catalogs of the NVIDIA packages,
//! reviewable before a rollout. `list` prints every combination each catalog ships,
//! one line each; `show` prints the effective settings of one combination, grouped by
//! kind, each with its value and the profile it comes from, optional keys marked, and
//! whether the combination needs a reboot. Both read the packages' catalogs through
//! [`Catalog`] only.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use skyhook_core::profile::{Catalog, CatalogError, Effective, OsVersion, Selection, SettingKind};

use crate::error::ToolError;

/// The catalogs of the packages this tool was built with (the packages that have one).
pub fn catalogs() -> Vec<Box<dyn Catalog>> {
    crate::review::packages::all()
        .iter()
        .filter_map(|p| p.catalog().map(|(catalog, _)| catalog))
        .collect()
}

/// The subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum ProfilesCommand {
    /// Every combination of every catalog: package, accelerator, intent, service, os, profile, reboot.
    List,
    /// The effective settings of one combination (of every catalog that ships it, without --package).
    Show(ShowArgs),
}

/// What `profiles show` selects.
#[derive(Debug, Clone, clap::Args)]
pub struct ShowArgs {
    /// The package (`nvidia-tuned`, `nvidia-tuning-gke`); default: every catalog shipping the combination.
    #[arg(long)]
    pub package: Option<String>,
    /// The accelerator (`h100`, `gb200`, …).
    #[arg(long)]
    pub accelerator: String,
    /// The workload intent (`performance`, `inference`, `multiNodeTraining`); none for
    /// a catalog without intents (nvidia-setup).
    #[arg(long)]
    pub intent: Option<String>,
    /// The cloud service whose profile wraps the workload profile (`eks`).
    #[arg(long)]
    pub service: Option<String>,
    /// The node's OS as ID:VERSION (`ubuntu:24.04`); default: the common profiles.
    #[arg(long)]
    pub os: Option<String>,
}

/// `skyhook-pkg profiles …` over the packages' catalogs.
pub fn run(command: &ProfilesCommand) -> Result<bool, ToolError> {
    let owned = catalogs();
    let catalogs: Vec<&dyn Catalog> = owned.iter().map(Box::as_ref).collect();
    let text = match command {
        ProfilesCommand::List => list(&catalogs)?,
        ProfilesCommand::Show(args) => show(&catalogs, args)?,
    };
    out!("{text}");
    Ok(true)
}

/// One line per combination of every catalog, in columns under a header.
pub fn list(catalogs: &[&dyn Catalog]) -> Result<String, ToolError> {
    let mut rows = vec![["PACKAGE", "ACCELERATOR", "INTENT", "SERVICE", "OS", "PROFILE", "REBOOT"].map(String::from)];
    for catalog in catalogs {
        for selection in catalog.combinations() {
            let effective = catalog
                .effective(&selection)
                .map_err(|e| catalog_error(catalog.package(), e))?;
            rows.push([
                catalog.package().to_string(),
                selection.accelerator.clone(),
                match selection.intent.as_str() {
                    "" => "-".to_string(),
                    intent => intent.to_string(),
                },
                selection.service.clone().unwrap_or_else(|| "-".into()),
                selection
                    .os
                    .as_ref()
                    .map_or_else(|| "common".into(), OsVersion::to_string),
                effective.profile.clone(),
                yes_no(effective.needs_reboot()).to_string(),
            ]);
        }
    }
    let widths: Vec<usize> = (0..7)
        .map(|c| rows.iter().map(|r| r[c].len()).max().unwrap_or(0))
        .collect();
    let mut text = String::new();
    for row in &rows {
        let cells: Vec<String> = row.iter().zip(&widths).map(|(cell, w)| format!("{cell:w$}")).collect();
        writeln!(text, "{}", cells.join("  ").trim_end()).expect("writing to a String");
    }
    Ok(text)
}

/// The effective settings of the selected combination, of each catalog shipping it.
pub fn show(catalogs: &[&dyn Catalog], args: &ShowArgs) -> Result<String, ToolError> {
    let os = args
        .os
        .as_deref()
        .map(str::parse::<OsVersion>)
        .transpose()
        .map_err(|e| ToolError::usage(format!("--os: {e}")))?;
    let selection = Selection {
        accelerator: args.accelerator.clone(),
        intent: args.intent.clone().unwrap_or_default(),
        service: args.service.clone(),
        os,
    };
    let chosen: Vec<&dyn Catalog> = match &args.package {
        Some(name) => vec![*catalogs.iter().find(|c| c.package() == name).ok_or_else(|| {
            let known: Vec<&str> = catalogs.iter().map(|c| c.package()).collect();
            ToolError::usage(format!(
                "--package {name:?}: no such catalog; the catalogs: {}",
                known.join(", ")
            ))
        })?],
        None => catalogs.to_vec(),
    };
    let mut shown = Vec::new();
    let mut refusals = Vec::new();
    for catalog in chosen {
        match catalog.effective(&selection) {
            Ok(effective) => shown.push(render(catalog.package(), &selection, &effective)),
            Err(e) => refusals.push(catalog_error(catalog.package(), e).to_string()),
        }
    }
    if shown.is_empty() {
        return Err(ToolError::usage(if refusals.is_empty() {
            "no catalog is built into this tool".to_string()
        } else {
            refusals.join("\n")
        }));
    }
    Ok(shown.join("\n"))
}

/// One combination's settings, grouped by kind in a fixed order.
fn render(package: &str, selection: &Selection, effective: &Effective) -> String {
    let mut text = String::new();
    let mut line = |l: String| {
        text.push_str(&l);
        text.push('\n');
    };
    line(format!("{package}: {selection}"));
    line(format!("profile: {}", effective.profile));
    let rebooting: Vec<&str> = effective
        .settings
        .iter()
        .filter(|s| s.needs_reboot)
        .map(|s| s.key.as_str())
        .collect();
    line(match rebooting.len() {
        0 => "needs a reboot: no".into(),
        _ => format!("needs a reboot: yes ({})", rebooting.join(", ")),
    });
    let mut groups: BTreeMap<&SettingKind, Vec<_>> = BTreeMap::new();
    for setting in &effective.settings {
        groups.entry(&setting.kind).or_default().push(setting);
    }
    for (kind, settings) in groups {
        line(format!("{}:", kind.heading()));
        for s in settings {
            let optional = if s.optional {
                ", optional: skipped with a warning where the kernel lacks it"
            } else {
                ""
            };
            let mut value_lines = s.value.lines();
            let first = value_lines.next().unwrap_or("");
            line(format!("  {} = {first}  [{}{optional}]", s.key, s.source));
            for more in value_lines {
                line(format!("      {more}"));
            }
        }
    }
    text
}

fn catalog_error(package: &str, e: CatalogError) -> ToolError {
    ToolError::usage(format!("{package}: {e}"))
}

fn yes_no(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

#[cfg(test)]
mod tests {
    use skyhook_core::profile::{Request, RequestKey, Setting};

    use super::*;

    /// A catalog of two accelerators, one OS override and an eks service.
    struct Fake;

    fn sel(accelerator: &str, intent: &str, service: Option<&str>, os: Option<&str>) -> Selection {
        Selection {
            accelerator: accelerator.into(),
            intent: intent.into(),
            service: service.map(str::to_string),
            os: os.map(|o| o.parse().unwrap()),
        }
    }

    fn setting(kind: SettingKind, key: &str, value: &str, source: &str, needs_reboot: bool, optional: bool) -> Setting {
        Setting {
            kind,
            key: key.into(),
            value: value.into(),
            source: source.into(),
            needs_reboot,
            optional,
        }
    }

    impl Catalog for Fake {
        fn package(&self) -> &'static str {
            "fake-tuned"
        }

        fn combinations(&self) -> Vec<Selection> {
            vec![
                sel("h100", "inference", None, None),
                sel("h100", "inference", Some("eks"), Some("ubuntu:24.04")),
                sel("gb200", "performance", None, None),
            ]
        }

        fn effective(&self, s: &Selection) -> Result<Effective, CatalogError> {
            if !["h100", "gb200"].contains(&s.accelerator.as_str()) {
                return Err(CatalogError::unknown_accelerator(&s.accelerator, &["h100", "gb200"]));
            }
            if !self.combinations().contains(s) {
                return Err(CatalogError::unknown_combination(s, &self.combinations()));
            }
            let base = format!("nvidia-{}-{}", s.accelerator, s.intent);
            let mut settings = vec![
                setting(
                    SettingKind::Sysctl,
                    "net.core.rmem_max",
                    "16777216",
                    "nvidia-base",
                    false,
                    false,
                ),
                setting(
                    SettingKind::Sysctl,
                    "kernel.sched_latency_ns",
                    "24000000",
                    &base,
                    false,
                    true,
                ),
                setting(
                    SettingKind::DropIn,
                    "containerd.service.d/10-nvidia.conf",
                    "[Service]\nLimitNOFILE=1048576",
                    &base,
                    false,
                    false,
                ),
            ];
            if s.accelerator == "gb200" {
                settings.push(setting(
                    SettingKind::KernelArgument,
                    "init_on_alloc",
                    "0",
                    "nvidia-base",
                    true,
                    false,
                ));
            }
            let profile = match &s.service {
                Some(service) => format!("{service}-{base}"),
                None => base,
            };
            Ok(Effective { profile, settings })
        }
    }

    /// A second catalog shipping the same h100 inference combination.
    struct Gke;

    impl Catalog for Gke {
        fn package(&self) -> &'static str {
            "fake-gke"
        }
        fn combinations(&self) -> Vec<Selection> {
            vec![sel("h100", "inference", None, None)]
        }
        fn effective(&self, s: &Selection) -> Result<Effective, CatalogError> {
            if *s != self.combinations()[0] {
                return Err(CatalogError::unknown_combination(s, &self.combinations()));
            }
            Ok(Effective {
                profile: "fake-gke".into(),
                settings: vec![setting(
                    SettingKind::Sysctl,
                    "net.ipv4.tcp_mtu_probing",
                    "1",
                    "h100/inference/sysctl.conf",
                    false,
                    false,
                )],
            })
        }
    }

    fn args(
        package: Option<&str>,
        accelerator: &str,
        intent: &str,
        service: Option<&str>,
        os: Option<&str>,
    ) -> ShowArgs {
        ShowArgs {
            package: package.map(str::to_string),
            accelerator: accelerator.into(),
            intent: Some(intent.into()),
            service: service.map(str::to_string),
            os: os.map(str::to_string),
        }
    }

    #[test]
    fn a_request_selects_its_combinations_and_tells_whether_they_may_reboot() {
        let request = |accelerator, intent, service| Request {
            accelerator,
            intent,
            service,
        };
        assert_eq!(
            request("h100", "inference", None).selections(&Fake),
            [sel("h100", "inference", None, None)]
        );
        assert_eq!(
            request("auto", "inference", Some("eks")).selections(&Fake),
            [sel("h100", "inference", Some("eks"), Some("ubuntu:24.04"))]
        );
        assert!(request("h100", "performance", None).selections(&Fake).is_empty());
        assert!(!request("h100", "inference", None).may_need_reboot(&Fake));
        assert!(request("gb200", "performance", None).may_need_reboot(&Fake));
        assert!(request("auto", "performance", None).may_need_reboot(&Fake));
    }

    #[test]
    fn a_key_change_may_reboot_only_when_the_reboot_settings_differ() {
        let request = |accelerator, intent, service| Request {
            accelerator,
            intent,
            service,
        };
        // Fake's h100 combinations differ only in sysctls and drop-ins: no reboot.
        assert!(!request("h100", "inference", None).change_may_reboot(&Fake, RequestKey::Service));
        assert!(!request("h100", "inference", None).change_may_reboot(&Fake, RequestKey::Intent));
        assert!(!request("gb200", "performance", None).change_may_reboot(&Fake, RequestKey::Intent));
        let real = nvidia_tuned::catalog();
        assert!(request("h100", "inference", None).change_may_reboot(&real, RequestKey::Intent));
    }

    #[test]
    fn list_prints_every_combination_of_every_catalog_one_line_each() {
        let text = list(&[&Fake, &Gke]).unwrap();
        let lines: Vec<Vec<&str>> = text.lines().map(|l| l.split_whitespace().collect()).collect();
        assert_eq!(
            lines,
            [
                vec!["PACKAGE", "ACCELERATOR", "INTENT", "SERVICE", "OS", "PROFILE", "REBOOT"],
                vec![
                    "fake-tuned",
                    "h100",
                    "inference",
                    "-",
                    "common",
                    "nvidia-h100-inference",
                    "no"
                ],
                vec![
                    "fake-tuned",
                    "h100",
                    "inference",
                    "eks",
                    "ubuntu:24.04",
                    "eks-nvidia-h100-inference",
                    "no"
                ],
                vec![
                    "fake-tuned",
                    "gb200",
                    "performance",
                    "-",
                    "common",
                    "nvidia-gb200-performance",
                    "yes"
                ],
                vec!["fake-gke", "h100", "inference", "-", "common", "fake-gke", "no"],
            ]
        );
        let starts: Vec<usize> = text
            .lines()
            .map(|l| l.find("ACCEL").or_else(|| l.find(" h100").map(|i| i + 1)).unwrap_or(0))
            .collect();
        assert!(
            starts.windows(2).take(2).all(|w| w[0] == w[1]),
            "columns aligned:\n{text}"
        );
    }

    #[test]
    fn show_groups_settings_by_kind_with_their_source_optional_marks_and_the_reboot() {
        let text = show(
            &[&Fake, &Gke],
            &args(Some("fake-tuned"), "gb200", "performance", None, None),
        )
        .unwrap();
        assert_eq!(
            text,
            "fake-tuned: accelerator gb200 intent performance (common profiles)\n\
             profile: nvidia-gb200-performance\n\
             needs a reboot: yes (init_on_alloc)\n\
             sysctls:\n\
             \x20 net.core.rmem_max = 16777216  [nvidia-base]\n\
             \x20 kernel.sched_latency_ns = 24000000  [nvidia-gb200-performance, optional: skipped with a warning where the kernel lacks it]\n\
             kernel arguments:\n\
             \x20 init_on_alloc = 0  [nvidia-base]\n\
             drop-ins:\n\
             \x20 containerd.service.d/10-nvidia.conf = [Service]  [nvidia-gb200-performance]\n\
             \x20     LimitNOFILE=1048576\n"
        );
    }

    #[test]
    fn show_without_a_package_shows_every_catalog_shipping_the_combination() {
        let text = show(&[&Fake, &Gke], &args(None, "h100", "inference", None, None)).unwrap();
        assert!(text.contains("fake-tuned: accelerator h100 intent inference (common profiles)\nprofile: nvidia-h100-inference\nneeds a reboot: no\n"), "{text}");
        assert!(
            text.contains("fake-gke: accelerator h100 intent inference (common profiles)\nprofile: fake-gke\n"),
            "{text}"
        );
        let only_tuned = show(&[&Fake, &Gke], &args(None, "gb200", "performance", None, None)).unwrap();
        assert!(!only_tuned.contains("fake-gke"), "{only_tuned}");
    }

    #[test]
    fn unknown_values_are_usage_errors_listing_what_is_supported() {
        let cases = [
            (
                args(Some("nvidia-x"), "h100", "inference", None, None),
                "--package \"nvidia-x\": no such catalog; the catalogs: fake-tuned, fake-gke",
            ),
            (
                args(Some("fake-tuned"), "a100", "inference", None, None),
                "fake-tuned: accelerator \"a100\" is not in the catalog; supported: h100, gb200",
            ),
            (
                args(Some("fake-tuned"), "h100", "inference", Some("aks"), None),
                "fake-tuned: the catalog has no profile for accelerator h100 intent inference service aks (common profiles); it ships: accelerator h100 intent inference (common profiles); ",
            ),
            (
                args(None, "h100", "inference", None, Some("ubuntu")),
                "--os: OS \"ubuntu\" is not ID:VERSION (e.g. ubuntu:24.04)",
            ),
        ];
        for (a, expected) in cases {
            let e = show(&[&Fake, &Gke], &a).unwrap_err();
            assert!(matches!(e, ToolError::Usage(_)), "{e}");
            assert!(e.to_string().starts_with(expected), "{a:?}:\n{e}");
        }
        let both = show(&[&Fake, &Gke], &args(None, "a100", "inference", None, None))
            .unwrap_err()
            .to_string();
        assert_eq!(both.lines().count(), 2, "every catalog's refusal: {both}");
        assert!(
            both.lines()
                .nth(1)
                .unwrap()
                .starts_with("fake-gke: the catalog has no profile"),
            "{both}"
        );
    }
}
