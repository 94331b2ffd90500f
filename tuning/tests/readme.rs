// SPDX-License-Identifier: Apache-2.0
//! The SCR examples of the package README work as written: each package entry's
//! configMap, read from README.md itself, goes through config, config-check, a
//! simulated interrupt and post-interrupt-check on a simulated node, and the
//! entry's declared `interrupt` covers what config says it needs.

mod common;

use common::*;
use skyhook_testkit::skyhook_core::Interrupt;
use skyhook_testkit::skyhook_core::formats::limits::show;

/// One package entry of an SCR example.
#[derive(Debug)]
struct Entry {
    name: String,
    interrupt: Interrupt,
    configmap: Vec<(String, String)>,
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// The value of a YAML block scalar (`|` or `|-`) starting after line `start`.
fn block(lines: &[&str], start: usize, parent: usize, keep_newline: bool) -> (String, usize) {
    let mut i = start;
    let mut body: Vec<&str> = Vec::new();
    let mut inner = None;
    while i < lines.len() {
        let l = lines[i];
        if !l.trim().is_empty() && indent(l) <= parent {
            break;
        }
        let ind = *inner.get_or_insert_with(|| indent(l));
        body.push(if l.len() >= ind { &l[ind..] } else { "" });
        i += 1;
    }
    while body.last().is_some_and(|l| l.is_empty()) {
        body.pop();
    }
    let mut text = body.join("\n");
    if keep_newline {
        text.push('\n');
    }
    (text, i)
}

/// Every package entry with a configMap in the README's YAML examples.
fn examples(readme: &str) -> Vec<Entry> {
    let mut entries = Vec::new();
    let mut in_yaml = false;
    let mut yaml: Vec<Vec<&str>> = Vec::new();
    for l in readme.lines() {
        match (in_yaml, l.trim()) {
            (false, "```yaml") => {
                in_yaml = true;
                yaml.push(Vec::new());
            }
            (true, "```") => in_yaml = false,
            (true, _) => yaml.last_mut().unwrap().push(l),
            _ => {}
        }
    }
    for lines in yaml {
        let Some(packages) = lines.iter().position(|l| l.trim() == "packages:") else {
            continue;
        };
        let pkg_indent = indent(lines[packages]) + 2;
        let mut i = packages + 1;
        while i < lines.len() {
            let l = lines[i];
            if l.trim().is_empty() || indent(l) != pkg_indent || l.trim().starts_with('#') {
                i += 1;
                continue;
            }
            let name = l.trim().trim_end_matches(':').to_string();
            let mut entry = Entry {
                name,
                interrupt: Interrupt::NoOp,
                configmap: Vec::new(),
            };
            let body = pkg_indent + 2;
            i += 1;
            while i < lines.len() && (lines[i].trim().is_empty() || indent(lines[i]) >= body) {
                let l = lines[i];
                if indent(l) == body && l.trim() == "interrupt:" {
                    let kind = lines[i + 1].trim().trim_start_matches("type:").trim();
                    entry.interrupt = match kind {
                        "reboot" => Interrupt::Reboot,
                        "restartAllServices" => Interrupt::RestartAllServices,
                        "noop" => Interrupt::NoOp,
                        "service" => {
                            let list = lines[i + 2].trim().trim_start_matches("services:").trim();
                            Interrupt::service(list.trim_matches(['[', ']']).split(',').map(str::trim))
                        }
                        other => panic!("unknown interrupt type {other}"),
                    };
                }
                if indent(l) == body && l.trim() == "configMap:" {
                    i += 1;
                    while i < lines.len() && (lines[i].trim().is_empty() || indent(lines[i]) > body) {
                        let kl = lines[i];
                        let (key, value) = kl.trim().split_once(':').unwrap();
                        let value = value.trim();
                        if value == "|" || value == "|-" {
                            let (text, next) = block(&lines, i + 1, indent(kl), value == "|");
                            entry.configmap.push((key.to_string(), text));
                            i = next;
                        } else {
                            entry
                                .configmap
                                .push((key.to_string(), value.trim_matches('"').to_string()));
                            i += 1;
                        }
                    }
                    continue;
                }
                i += 1;
            }
            entries.push(entry);
        }
    }
    entries
}

/// Whether `declared` does at least what `needed` asks for.
fn covers(declared: &Interrupt, needed: &Interrupt) -> bool {
    match (declared, needed) {
        (_, Interrupt::NoOp) | (Interrupt::Reboot, _) => true,
        (Interrupt::RestartAllServices, Interrupt::Service { .. } | Interrupt::RestartAllServices) => true,
        (Interrupt::Service { services: d }, Interrupt::Service { services: n }) => n.iter().all(|s| d.contains(s)),
        _ => false,
    }
}

fn needed(output: &str) -> Interrupt {
    let line = output
        .lines()
        .find_map(|l| l.strip_prefix("info: interrupt needed: "))
        .expect("config says which interrupt it needs");
    if line.starts_with("none") {
        return Interrupt::NoOp;
    }
    let spec = line.split(" (declare").next().unwrap();
    match spec {
        "{type: reboot}" => Interrupt::Reboot,
        "{type: restartAllServices}" => Interrupt::RestartAllServices,
        s => {
            let list = s.split("services: [").nth(1).unwrap().trim_end_matches("]}");
            Interrupt::service(list.split(',').map(str::trim))
        }
    }
}

#[test]
fn the_readme_examples_work_as_written() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let entries = examples(&readme);
    let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["tuning", "tuning", "containerd-limits", "kubelet-limits"]);
    for entry in &entries {
        let n = node();
        for (key, value) in &entry.configmap {
            n.configmap(key, value);
            if key == "sysctl.conf" {
                // The kernel of the node has every key the example sets, except '-' ones.
                let conf = tuning::sysctl::SysctlConf::parse(value).unwrap();
                for e in conf.entries.iter().filter(|e| !e.a.ignore_failure) {
                    let path = e.a.key.proc_path();
                    if !n.exists(path.to_str().unwrap()) {
                        n.file(path.to_str().unwrap(), "0\n");
                    }
                }
            }
        }
        let r = run(&n, "config", 0);
        let need = needed(&r.output());
        assert!(
            covers(&entry.interrupt, &need),
            "{}: declares {} but config needs {need}",
            entry.name,
            entry.interrupt
        );
        run(&n, "config-check", 0);
        // The interrupt: a reboot, and each service restarted with its drop-in's limits.
        reboot(&n);
        let services = entry.configmap.iter().filter(|(k, _)| k.starts_with("service_"));
        for (pid, (key, value)) in (100..).zip(services) {
            let d = tuning::dropin::DropIn::parse(key, value).unwrap();
            let rows: Vec<(String, String, String)> = d
                .limits
                .iter()
                .map(|l| (l.resource.proc_name.to_string(), show(l.soft), show(l.hard)))
                .collect();
            let rows: Vec<(&str, &str, &str)> = rows
                .iter()
                .map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str()))
                .collect();
            service(&n, &format!("{}.service", d.unit), pid, &rows);
        }
        run(&n, "post-interrupt-check", 0);
    }
}

#[test]
fn the_extractor_reads_block_scalars_exactly() {
    let md = "```yaml\nspec:\n  packages:\n    t:\n      version: 2.0.0\n      interrupt:\n        type: service\n        services: [a, b]\n      configMap:\n        a.conf: |\n          x=1\n\n          y=2\n        b.conf: |-\n          z\n        c: \"v\"\n```\n";
    let e = examples(md);
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].interrupt, Interrupt::service(["a", "b"]));
    assert_eq!(
        e[0].configmap,
        [
            ("a.conf".to_string(), "x=1\n\ny=2\n".to_string()),
            ("b.conf".to_string(), "z".to_string()),
            ("c".to_string(), "v".to_string())
        ]
    );
}
