// SPDX-License-Identifier: Apache-2.0
//! The catalog: every combination renders, passes tuned's own validation (INI rules,
//! names, kernel-argument characters), has a closed include chain, and gives the
//! effective settings of the reviewed fixture `tests/fixtures/effective.txt`.
//!
//! The fixture was generated once (`cargo test -p nvidia-tuned --test catalog --
//! --ignored write_fixture`) and reviewed against the original package's files; the
//! comparing test never writes it.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use nvidia_tuned::catalog::Catalog as Embedded;
use skyhook_core::profile::{Catalog, OsVersion, Selection};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/effective.txt");

/// What the catalog ships: one row per accelerator, intent, service and OS version.
const ACCELERATORS: &[&str] = &["h100", "gb200", "gb300", "vr200"];
const INTENTS: &[&str] = &["performance", "inference", "multiNodeTraining"];
/// Each service with the accelerators it has profiles for.
const SERVICES: &[(&str, &[&str])] = &[
    ("aks", &["h100", "gb200", "gb300", "vr200"]),
    ("bcm", &["h100", "gb200", "gb300", "vr200"]),
    ("eks", &["h100", "gb200", "gb300", "vr200"]),
    ("oci", &["h100", "gb200", "gb300", "vr200"]),
    ("rke2", &["h100", "gb200", "gb300", "vr200"]),
];
const OS_VERSIONS: &[(&str, &str)] = &[
    ("ubuntu", "22.04"),
    ("ubuntu", "24.04"),
    ("debian", "11"),
    ("debian", "12"),
    ("rhel", "9"),
    ("ubuntu", "26.04"),
];
/// Accelerators that exist only on some OS versions.
const ACCELERATOR_OS: &[(&str, &[(&str, &str)])] = &[("vr200", &[("ubuntu", "26.04")])];
/// Accelerators with one self-contained profile (intent and service ignored).
const SELF_CONTAINED: &[(&str, &str)] = &[("generic", "nvidia-generic")];
/// The profiles an include chain may end at.
const BASES: &[&str] = &[
    "nvidia-base",
    "nvidia-vr200-noreboot-base",
    "nvidia-gb300-noreboot-base",
    "nvidia-generic",
];

/// How many combinations the table above gives: each accelerator on the OS options it
/// exists on (the common profiles count only for an accelerator on every OS), with no
/// service or each service that supports it; each self-contained one once per OS option.
fn expected_count() -> usize {
    let os_options = |a: &str| match ACCELERATOR_OS.iter().find(|(name, _)| *name == a) {
        Some((_, only)) => only.len(),
        None => 1 + OS_VERSIONS.len(),
    };
    let services = |a: &str| 1 + SERVICES.iter().filter(|(_, accs)| accs.contains(&a)).count();
    let workload: usize = ACCELERATORS
        .iter()
        .map(|a| os_options(a) * services(a) * INTENTS.len())
        .sum();
    workload + SELF_CONTAINED.len() * (1 + OS_VERSIONS.len())
}

#[test]
fn the_manifest_ships_the_rows_of_this_table() {
    let m = Embedded::embedded().manifest;
    assert_eq!(m.accelerators, ACCELERATORS);
    assert_eq!(m.intents, INTENTS);
    let services: Vec<(&str, Vec<&str>)> = m
        .services
        .iter()
        .map(|(name, s)| {
            let accs = s.accelerators.iter().flatten().map(String::as_str).collect();
            (name.as_str(), accs)
        })
        .collect();
    let table: Vec<(&str, Vec<&str>)> = SERVICES.iter().map(|(n, a)| (*n, a.to_vec())).collect();
    assert_eq!(services, table);
    let oses: Vec<(&str, &str)> = m
        .os_versions
        .iter()
        .map(|o| (o.id.as_str(), o.version.as_str()))
        .collect();
    assert_eq!(oses, OS_VERSIONS);
    let only: Vec<(&str, Vec<(&str, &str)>)> = m
        .accelerator_os
        .iter()
        .map(|(a, l)| {
            (
                a.as_str(),
                l.iter().map(|o| (o.id.as_str(), o.version.as_str())).collect(),
            )
        })
        .collect();
    let table: Vec<(&str, Vec<(&str, &str)>)> = ACCELERATOR_OS.iter().map(|(a, l)| (*a, l.to_vec())).collect();
    assert_eq!(only, table);
    let contained: Vec<(&str, &str)> = m.self_contained.iter().map(|(a, p)| (a.as_str(), p.as_str())).collect();
    assert_eq!(contained, SELF_CONTAINED);
    assert_eq!(nvidia_tuned::catalog().combinations().len(), expected_count());
}

#[test]
fn every_combination_renders_validates_with_tuned_and_has_a_closed_include_chain() {
    let catalog = Embedded::embedded();
    let mut used = BTreeSet::new();
    let mut rendered_profiles = BTreeSet::new();
    for choice in catalog.combinations() {
        let r = catalog.render(&choice).unwrap_or_else(|e| panic!("{choice:?}: {e}"));
        let names: Vec<&str> = r.profiles.iter().map(|p| p.name.as_str()).collect();
        rendered_profiles.extend(names.iter().map(|n| n.to_string()));
        assert_eq!(names[0], r.active, "{choice:?}: the chain starts at the active profile");
        assert!(
            names.last().is_some_and(|base| BASES.contains(base)),
            "{choice:?}: the chain ends at a base: {names:?}"
        );
        for p in &r.profiles {
            let conf = tuned::conf::Conf::parse(&p.text).unwrap_or_else(|e| panic!("{}: {e:?}", p.source));
            if let Some(inc) = conf.include() {
                assert!(
                    names.contains(&inc.value.trim()),
                    "{}: include {} not in the chain",
                    p.source,
                    inc.value
                );
            }
            used.insert(format!("profiles/{}", p.source));
        }
        for (f, _) in &r.files {
            used.insert(format!("files/{}", f.source));
        }
        let host = &r.host;
        let assets = host
            .nccl_topo
            .iter()
            .chain(host.rdma_vfs_ready.iter().flat_map(|(u, h)| [u, h]))
            .chain(host.spcx_cc.iter().flat_map(|(u, r)| [u, r]));
        for a in assets {
            used.insert(format!("files/{}", a.source));
        }
        let request = skyhook_core::ConfigMaps::from_entries(
            r.profiles
                .iter()
                .map(|p| (p.name.clone(), p.text.clone().into_bytes()))
                .chain([("tuned_profile".to_string(), r.active.clone().into_bytes())]),
        );
        if let Err(e) = tuned::input::validate(&request) {
            panic!("{choice:?}: tuned refuses the rendered profiles: {e}");
        }
    }
    let shipped: BTreeSet<String> = catalog
        .paths()
        .filter(|p| *p != "manifest.json")
        .map(String::from)
        .collect();
    let unused: Vec<&String> = shipped.difference(&used).collect();
    assert!(unused.is_empty(), "catalog files no combination uses: {unused:?}");

    let m = &catalog.manifest;
    let unrendered: Vec<&String> = m
        .profile_files
        .keys()
        .filter(|p| !rendered_profiles.contains(*p))
        .collect();
    assert!(
        unrendered.is_empty(),
        "profile_files of profiles no chain has: {unrendered:?}"
    );
    let named: BTreeSet<&String> = m.profile_files.values().flatten().collect();
    let unnamed: Vec<&String> = m.named_files.keys().filter(|n| !named.contains(n)).collect();
    assert!(unnamed.is_empty(), "named_files no profile names: {unnamed:?}");
}

#[test]
fn a_profile_file_name_the_catalog_lacks_is_a_catalog_defect_naming_both() {
    let mut catalog = Embedded::embedded();
    catalog
        .manifest
        .profile_files
        .insert("nvidia-gb200-performance".into(), vec!["containerd-limitstak".into()]);
    let choice = nvidia_tuned::catalog::Choice {
        accelerator: "gb200".into(),
        intent: "performance".into(),
        service: None,
        os: None,
    };
    let e = catalog.render(&choice).expect_err("a dangling file name");
    assert_eq!(
        e.to_string(),
        "the catalog has no file \"containerd-limitstak\" (named by \"nvidia-gb200-performance\")"
    );
}

/// The effective settings of every combination, one block each.
fn render_all() -> String {
    let catalog = nvidia_tuned::catalog();
    let mut out = String::new();
    for s in catalog.combinations() {
        let e = catalog.effective(&s).unwrap();
        writeln!(out, "## {s}: profile {}, needs reboot: {}", e.profile, e.needs_reboot()).unwrap();
        for st in &e.settings {
            let flags = match (st.needs_reboot, st.optional) {
                (true, _) => " [reboot]",
                (false, true) => " [optional]",
                _ => "",
            };
            writeln!(
                out,
                "{}: {} = {}  <- {}{flags}",
                st.kind.heading(),
                st.key,
                st.value,
                st.source
            )
            .unwrap();
        }
        out.push('\n');
    }
    out
}

#[test]
fn every_combination_gives_the_reviewed_effective_settings() {
    let expected = std::fs::read_to_string(FIXTURE).expect("the fixture is checked in");
    let actual = render_all();
    if actual != expected {
        let first = actual.lines().zip(expected.lines()).position(|(a, b)| a != b);
        panic!(
            "the effective settings differ from {FIXTURE} (first differing line {:?}); review the change \
             and regenerate with --ignored write_fixture",
            first.map(|i| i + 1)
        );
    }
}

#[test]
fn the_os_fallback_and_the_service_version_show_in_the_sources() {
    let catalog = nvidia_tuned::catalog();
    let sel = |service: Option<&str>, os: (&str, &str)| Selection {
        accelerator: "h100".into(),
        intent: "inference".into(),
        service: service.map(String::from),
        os: Some(OsVersion {
            id: os.0.into(),
            version: os.1.into(),
        }),
    };
    let source_of = |s: &Selection, key: &str| {
        let e = catalog.effective(s).unwrap();
        e.settings.iter().find(|x| x.key == key).map(|x| x.source.clone())
    };
    assert_eq!(
        source_of(&sel(None, ("ubuntu", "22.04")), "cmdline_hugepages").unwrap(),
        "nvidia-h100-inference (os/ubuntu/22.04/nvidia-h100-inference.conf)"
    );
    assert_eq!(
        source_of(&sel(None, ("ubuntu", "22.04")), "kernel.sched_latency_ns").unwrap(),
        "nvidia-h100-inference (os/ubuntu/22.04/nvidia-h100-inference.conf)"
    );
    assert_eq!(
        source_of(&sel(None, ("rhel", "9.4")), "cmdline_hugepages").unwrap(),
        "nvidia-h100-inference (os/common/nvidia-h100-inference.conf)"
    );
    assert_eq!(source_of(&sel(None, ("rhel", "9.4")), "kernel.sched_latency_ns"), None);
    assert_eq!(source_of(&sel(None, ("rhel", "9.4")), "cmdline_isolcpus"), None);
    assert_eq!(
        source_of(&sel(Some("eks"), ("ubuntu", "24.04")), "kernel.sched_latency_ns"),
        None
    );
    let unknown = catalog.effective(&Selection {
        accelerator: "a100".into(),
        ..sel(None, ("ubuntu", "24.04"))
    });
    assert!(
        unknown
            .unwrap_err()
            .to_string()
            .contains("supported: h100, gb200, gb300, vr200, generic")
    );
}

#[test]
#[ignore = "writes the fixture; run once, then review the diff"]
fn write_fixture() {
    std::fs::write(FIXTURE, render_all()).unwrap();
}
