// SPDX-License-Identifier: Apache-2.0
//! The SCR examples of a package README, read back from the README itself, so the
//! chroot tier runs exactly what the documentation tells administrators to write.
//!
//! Reads the `packages:` entries of the ```yaml blocks: the package name, `version`,
//! `env` (`- name:` / `value:` pairs) and `configMap` (plain and `|` / `|-` block
//! values) — the subset of YAML the examples use.

use std::collections::BTreeMap;

/// One package entry of an SCR example.
#[derive(Debug, Clone, Default)]
pub struct Example {
    /// The package's name in the SCR.
    pub name: String,
    /// Its `version`.
    pub version: String,
    /// Its `env` entries.
    pub env: Vec<(String, String)>,
    /// Its `configMap`.
    pub configmap: BTreeMap<String, String>,
}

impl Example {
    /// `--configmap K=V`, `--env N=V`, `--name` arguments for `skyhook-pkg run`.
    pub fn args(&self) -> Vec<String> {
        let mut args = vec!["--name".to_string(), self.name.clone()];
        for (k, v) in &self.configmap {
            args.push("--configmap".into());
            args.push(format!("{k}={v}"));
        }
        for (k, v) in &self.env {
            args.push("--env".into());
            args.push(format!("{k}={v}"));
        }
        args
    }
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

fn unquote(v: &str) -> String {
    let v = v.trim();
    let v = v.split(" #").next().unwrap_or(v).trim();
    v.strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(v)
        .to_string()
}

/// Every package entry of every yaml block of `readme`.
pub fn examples(readme: &str) -> Vec<Example> {
    let mut out = Vec::new();
    let mut in_yaml = false;
    let mut block = Vec::new();
    for line in readme.lines() {
        if line.trim_start().starts_with("```") {
            if in_yaml {
                out.extend(parse_block(&block));
                block.clear();
            }
            in_yaml = !in_yaml && line.trim_start().starts_with("```yaml");
            continue;
        }
        if in_yaml {
            block.push(line.to_string());
        }
    }
    out
}

fn parse_block(lines: &[String]) -> Vec<Example> {
    let mut out = Vec::new();
    let Some(start) = lines.iter().position(|l| l.trim() == "packages:") else {
        return out;
    };
    let base = indent(&lines[start]);
    let mut i = start + 1;
    let mut pkg_indent = None;
    while i < lines.len() {
        let l = &lines[i];
        if l.trim().is_empty() || l.trim_start().starts_with('#') {
            i += 1;
            continue;
        }
        if indent(l) <= base {
            break;
        }
        let pi = *pkg_indent.get_or_insert(indent(l));
        if indent(l) == pi && l.trim_end().ends_with(':') {
            let mut ex = Example {
                name: l.trim().trim_end_matches(':').to_string(),
                ..Example::default()
            };
            i += 1;
            i = parse_package(lines, i, pi, &mut ex);
            out.push(ex);
        } else {
            i += 1;
        }
    }
    out
}

fn parse_package(lines: &[String], mut i: usize, pi: usize, ex: &mut Example) -> usize {
    while i < lines.len() {
        let l = &lines[i];
        if l.trim().is_empty() {
            i += 1;
            continue;
        }
        if indent(l) <= pi {
            return i;
        }
        let t = l.trim();
        if let Some(v) = t.strip_prefix("version:") {
            ex.version = unquote(v);
        } else if t == "env:" {
            let ei = indent(l);
            i += 1;
            let mut name = None;
            while i < lines.len() && (lines[i].trim().is_empty() || indent(&lines[i]) > ei) {
                let t = lines[i].trim().trim_start_matches("- ");
                if let Some(n) = t.strip_prefix("name:") {
                    name = Some(unquote(n));
                } else if let (Some(v), Some(n)) = (t.strip_prefix("value:"), name.take()) {
                    ex.env.push((n, unquote(v)));
                }
                i += 1;
            }
            continue;
        } else if t == "configMap:" {
            let ci = indent(l);
            i += 1;
            while i < lines.len() && (lines[i].trim().is_empty() || indent(&lines[i]) > ci) {
                let kl = &lines[i];
                if kl.trim().is_empty() {
                    i += 1;
                    continue;
                }
                let ki = indent(kl);
                let (key, rest) = kl.trim().split_once(':').expect("configMap entry is key: value");
                let rest = rest.trim();
                i += 1;
                if rest == "|" || rest == "|-" {
                    let mut value = Vec::new();
                    while i < lines.len() && (lines[i].trim().is_empty() || indent(&lines[i]) > ki) {
                        value.push(lines[i].get(ki + 2..).unwrap_or("").to_string());
                        i += 1;
                    }
                    while value.last().is_some_and(|v| v.is_empty()) {
                        value.pop();
                    }
                    let mut text = value.join("\n");
                    if rest == "|" {
                        text.push('\n');
                    }
                    ex.configmap.insert(key.to_string(), text);
                } else {
                    ex.configmap.insert(key.to_string(), unquote(rest));
                }
            }
            continue;
        }
        i += 1;
    }
    i
}

/// The package entries of `<package>/README.md`.
pub fn of(package: &str) -> Vec<Example> {
    let path = format!("{}/../../{package}/README.md", env!("CARGO_MANIFEST_DIR"));
    examples(&std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}")))
}

#[test]
fn reads_an_scr_example() {
    let text = "x\n```yaml\nspec:\n  packages:\n    demo:\n      version: 2.0.0\n      env:\n        - name: A\n          value: \"1\"   # comment\n      configMap:\n        plain: 256M\n        block.sh: |\n          #!/bin/sh\n            indented\n\n          end\n        stripped: |-\n          no newline\n    other:\n      version: 1.0.0\n```\n";
    let ex = examples(text);
    assert_eq!(ex.len(), 2);
    assert_eq!((ex[0].name.as_str(), ex[0].version.as_str()), ("demo", "2.0.0"));
    assert_eq!(ex[0].env, [("A".to_string(), "1".to_string())]);
    assert_eq!(ex[0].configmap["plain"], "256M");
    assert_eq!(ex[0].configmap["block.sh"], "#!/bin/sh\n  indented\n\nend\n");
    assert_eq!(ex[0].configmap["stripped"], "no newline");
    assert_eq!(ex[1].name, "other");
}
