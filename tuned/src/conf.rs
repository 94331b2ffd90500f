// SPDX-License-Identifier: Apache-2.0
//! tuned's profile format (`tuned.conf`), read the way tuned reads it: Python's
//! `configparser` with `=` as the only delimiter, `#` inline comments (after
//! whitespace), `#` and `;` full-line comments, indented continuation lines, no
//! options before the first `[section]`, and duplicate sections or options allowed
//! (tuned passes `strict=False`). A line tuned would refuse is reported with its
//! number and the reason, so a bad profile is caught before anything is deployed.
//!
//! Also the few facts about a profile this package needs: `[main] include=`, the
//! `script=` options, and the options of `[bootloader]` units.

use std::path::{Component, Path, PathBuf};

/// One `option=value` line (with its continuation lines).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opt {
    /// The option name as written (tuned keeps the case).
    pub name: String,
    /// The value, continuation lines joined with `\n`.
    pub value: String,
    /// The 1-based line of the option.
    pub line: usize,
}

/// One `[section]` and its options (a repeated section header adds to the first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// The name between the brackets.
    pub name: String,
    /// The 1-based line of its first header.
    pub line: usize,
    /// Its options in file order.
    pub options: Vec<Opt>,
}

impl Section {
    /// The value of the last `name=` option (a later duplicate wins, as in tuned).
    pub fn get(&self, name: &str) -> Option<&Opt> {
        self.options.iter().rev().find(|o| o.name == name)
    }

    /// The plugin type of this unit: its `type=` option, else its name.
    pub fn unit_type(&self) -> &str {
        self.get("type").map(|o| o.value.trim()).unwrap_or(&self.name)
    }

    /// Whether `enabled=` turns this unit off.
    pub fn disabled(&self) -> bool {
        self.get("enabled").is_some_and(|o| {
            matches!(
                o.value.trim().to_ascii_lowercase().as_str(),
                "0" | "false" | "no" | "off"
            )
        })
    }
}

/// A parsed profile.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Conf {
    /// The sections in file order.
    pub sections: Vec<Section>,
}

/// A line tuned would refuse to load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line number.
    pub line: usize,
    /// The line as written.
    pub text: String,
    /// Why tuned refuses it.
    pub reason: String,
}

/// Where an inline `#` comment starts (at the start of the line or after whitespace).
fn inline_comment(line: &str) -> Option<usize> {
    line.char_indices()
        .find(|&(i, c)| c == '#' && (i == 0 || line[..i].ends_with(char::is_whitespace)))
        .map(|(i, _)| i)
}

/// The error for line `line` when it holds a control character other than a tab
/// (NUL, ESC, a lone CR, …): tuned's configparser would stop at it or misread the line.
fn control_character(line: usize, raw: &str) -> Option<ParseError> {
    let c = raw.chars().find(|&c| c.is_control() && c != '\t')?;
    Some(ParseError {
        line,
        text: raw.to_string(),
        reason: format!(
            "contains the control character {c:?} (U+{:04X}); tuned's configparser would stop at it \
             or misread the line: remove it",
            c as u32
        ),
    })
}

impl Conf {
    /// Parses profile text; every line tuned would refuse is reported.
    pub fn parse(text: &str) -> Result<Conf, Vec<ParseError>> {
        let mut conf = Conf::default();
        let mut errors = Vec::new();
        let mut section: Option<usize> = None;
        let mut option: Option<usize> = None;
        let mut indent_level = usize::MAX;
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            if let Some(e) = control_character(line, raw) {
                errors.push(e);
                continue;
            }
            let full_comment = {
                let t = raw.trim();
                t.starts_with('#') || t.starts_with(';')
            };
            let content = if full_comment {
                ""
            } else {
                &raw[..inline_comment(raw).unwrap_or(raw.len())]
            };
            let value = content.trim();
            if value.is_empty() {
                continue;
            }
            let indent = raw.len() - raw.trim_start().len();
            if let (Some(s), Some(o)) = (section, option)
                && indent > indent_level
            {
                let opt = &mut conf.sections[s].options[o];
                opt.value.push('\n');
                opt.value.push_str(value);
                continue;
            }
            indent_level = indent;
            if let Some(name) = value
                .strip_prefix('[')
                .and_then(|r| r.rfind(']').map(|end| &r[..end]))
                .filter(|n| !n.is_empty())
            {
                section = Some(conf.open_section(name, line));
                option = None;
                continue;
            }
            let bad = |reason: &str| ParseError {
                line,
                text: raw.to_string(),
                reason: reason.to_string(),
            };
            let Some(s) = section else {
                errors.push(bad(
                    "this line comes before any [section] header; tuned refuses such a profile \
                     (start it with a section, e.g. [main])",
                ));
                continue;
            };
            match value.split_once('=') {
                Some((name, v)) if !name.trim().is_empty() => {
                    let options = &mut conf.sections[s].options;
                    options.push(Opt {
                        name: name.trim().to_string(),
                        value: v.trim().to_string(),
                        line,
                    });
                    option = Some(options.len() - 1);
                }
                Some(_) => errors.push(bad("there is no option name before '='")),
                None => errors.push(bad(
                    "this is neither a [section] header nor an option=value line (tuned's only delimiter is '=')",
                )),
            }
        }
        if errors.is_empty() { Ok(conf) } else { Err(errors) }
    }

    /// The index of the section `name`, added (first seen on `line`) when new.
    fn open_section(&mut self, name: &str, line: usize) -> usize {
        if let Some(existing) = self.sections.iter().position(|s| s.name == name) {
            return existing;
        }
        self.sections.push(Section {
            name: name.to_string(),
            line,
            options: Vec::new(),
        });
        self.sections.len() - 1
    }

    /// The section named `name`.
    pub fn section(&self, name: &str) -> Option<&Section> {
        self.sections.iter().find(|s| s.name == name)
    }

    /// The `[main] include=` option.
    pub fn include(&self) -> Option<&Opt> {
        self.section("main").and_then(|s| s.get("include"))
    }

    /// Every `script=` option (tuned resolves any section's `script` against the profile directory).
    pub fn scripts(&self) -> impl Iterator<Item = (&Section, &Opt)> {
        self.sections
            .iter()
            .filter(|s| s.name != "main")
            .flat_map(|s| s.options.iter().filter(|o| o.name == "script").map(move |o| (s, o)))
    }

    /// Every option of the bootloader units (enabled or not) that reaches the boot line.
    pub fn boot_line_options(&self) -> impl Iterator<Item = &Opt> {
        self.sections
            .iter()
            .filter(|s| s.name != "main" && s.unit_type() == "bootloader")
            .flat_map(|s| s.options.iter().filter(|o| reaches_boot_line(&o.name)))
    }

    /// The options of the enabled bootloader units, as `[section] name=value` lines.
    pub fn bootloader(&self) -> Vec<String> {
        self.sections
            .iter()
            .filter(|s| s.name != "main" && s.unit_type() == "bootloader" && !s.disabled())
            .flat_map(|s| {
                s.options
                    .iter()
                    .filter(|o| o.name != "type")
                    .map(move |o| format!("[{}] {}={}", s.name, o.name, o.value))
            })
            .collect()
    }
}

/// Whether the option `name` of a bootloader unit ends up on the boot line: `cmdline`
/// and `cmdline_<suffix>` become kernel arguments, `initrd_add_img` and `initrd_dst_img`
/// name the image on GRUB's `initrd` line (tuned's grub2 template expands both).
pub fn reaches_boot_line(name: &str) -> bool {
    name == "cmdline" || name.starts_with("cmdline_") || name == "initrd_add_img" || name == "initrd_dst_img"
}

/// Why the bootloader option value `value` may not reach the boot line, if it may not.
///
/// tuned expands its variables and functions (`${isolated_cores}`,
/// `${f:cpulist_invert:${isolated_cores}}`) before it writes the line, so each
/// `${…}` is taken as one opaque placeholder; `$(`, a backquote and `;` are refused
/// anywhere (also inside `${…}`, where no tuned function needs them), and every
/// literal token left must pass the shared kernel-argument rule
/// ([`skyhook_core::boot::cmdline::check_arg`]). A leading `-` or `+` (tuned's
/// remove/append markers) passes that rule as is. A literal `hugepagesz=` or
/// `default_hugepagesz=` must name a size (core's `boot::hugepages::not_a_size`).
pub fn boot_line_problem(value: &str) -> Option<String> {
    for bad in ["$(", "`", ";"] {
        if value.contains(bad) {
            return Some(format!(
                "contains {bad:?}, which GRUB's script parser or the shell reading GRUB's defaults would act on; \
                 it is refused anywhere on a bootloader line, also inside ${{…}}"
            ));
        }
    }
    let literal = match without_expansions(value) {
        Ok(l) => l,
        Err(why) => return Some(why),
    };
    literal
        .split_whitespace()
        .find_map(|token| {
            skyhook_core::boot::cmdline::check_arg(token)
                .err()
                .map(|why| format!("the kernel argument {token:?} {why}"))
        })
        .or_else(|| {
            value
                .split_whitespace()
                .filter(|t| !t.contains("${"))
                .find_map(|t| skyhook_core::boot::hugepages::not_a_size(t.strip_prefix('+').unwrap_or(t)))
        })
}

/// `value` with each tuned `${…}` expansion (nesting allowed) replaced by `x`.
fn without_expansions(value: &str) -> std::result::Result<String, String> {
    let mut out = String::with_capacity(value.len());
    let mut depth = 0usize;
    let mut chars = value.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '$' && chars.peek() == Some(&'{') {
            chars.next();
            if depth == 0 {
                out.push('x');
            }
            depth += 1;
        } else if c == '}' && depth > 0 {
            depth -= 1;
        } else if depth == 0 {
            out.push(c);
        }
    }
    if depth > 0 {
        return Err("has a '${' without its closing '}'; tuned could not expand it".into());
    }
    Ok(out)
}

/// One name listed by `include=`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Include {
    /// A profile that must exist.
    Required(String),
    /// `-name`: included when it exists, ignored otherwise (tuned ≥ 2.20).
    Optional(String),
    /// A name built from tuned variables or functions (`${...}`): resolved by tuned at load time.
    Dynamic(String),
}

/// The names an `include=` value lists (separated by `,` or `;`, as tuned splits them).
pub fn include_names(value: &str) -> Vec<Include> {
    value
        .split([',', ';'])
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(|n| {
            if n.contains("${") {
                Include::Dynamic(n.to_string())
            } else if let Some(rest) = n.strip_prefix('-') {
                Include::Optional(rest.to_string())
            } else {
                Include::Required(n.to_string())
            }
        })
        .collect()
}

/// Where a `script=` value points, for a profile deployed in `profile_dir`: `None`
/// when it uses variables or functions tuned expands at load time.
pub fn script_path(value: &str, profile_dir: &Path) -> Option<PathBuf> {
    let dir = profile_dir.to_string_lossy();
    let expanded = value.trim().replace("${i:PROFILE_DIR}", &dir);
    if expanded.contains("${") || expanded.is_empty() {
        return None;
    }
    Some(normalize(&profile_dir.join(expanded)))
}

/// `path` with `.` and `..` resolved lexically (as Python's `os.path.normpath`).
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in path.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::ParentDir => {
                out.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

/// tuned's rule for a usable profile name (`Loader.safe_name`): letters, digits, `_`, `.`, `-`.
pub fn is_safe_profile_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b))
}

/// `profile_dirs` of tuned-main.conf (headerless `key = value` lines), split on `,`/`;`.
pub fn main_conf_profile_dirs(text: &str) -> Option<Vec<PathBuf>> {
    let value = text.lines().rev().find_map(|l| {
        let l = &l[..inline_comment(l).unwrap_or(l.len())];
        let (k, v) = l.split_once('=')?;
        (k.trim() == "profile_dirs").then(|| v.trim().to_string())
    })?;
    split_dirs(&value)
}

/// The directories of the commented `# profile_dirs = …` line of `tuned-main.conf`:
/// the default tuned's build wrote there at install (its Makefile rewrites it).
pub fn main_conf_default_profile_dirs(text: &str) -> Option<Vec<PathBuf>> {
    let value = text.lines().find_map(|l| {
        let (k, v) = l.trim().strip_prefix('#')?.split_once('=')?;
        (k.trim() == "profile_dirs").then(|| v.trim().to_string())
    })?;
    split_dirs(&value)
}

fn split_dirs(value: &str) -> Option<Vec<PathBuf>> {
    let dirs: Vec<PathBuf> = value
        .split([',', ';'])
        .map(str::trim)
        .filter(|d| d.starts_with('/'))
        .map(|d| normalize(Path::new(d)))
        .collect();
    (!dirs.is_empty()).then_some(dirs)
}

#[cfg(test)]
mod tests {
    use super::*;

    const README_PROFILE: &str = "[main]\nsummary=AI/ML kernel settings\ninclude=custom_profile_1\n\n[sysctl]\nkernel.numa_balancing=1                  # avoid NUMA page bouncing\nkernel.panic=10\n\n[bootloader]\ncmdline_myprofile=-kernel.panic +kernel.panic=20\n\n[script]\nscript=/etc/tuned/scripts/ai_init";

    #[test]
    fn parses_the_readme_profile() {
        let c = Conf::parse(README_PROFILE).unwrap();
        let names: Vec<&str> = c.sections.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["main", "sysctl", "bootloader", "script"]);
        assert_eq!(c.include().unwrap().value, "custom_profile_1");
        assert_eq!(c.include().unwrap().line, 3);
        assert_eq!(
            c.section("sysctl").unwrap().get("kernel.numa_balancing").unwrap().value,
            "1",
            "inline comment stripped"
        );
        assert_eq!(
            c.bootloader(),
            ["[bootloader] cmdline_myprofile=-kernel.panic +kernel.panic=20"]
        );
        let scripts: Vec<_> = c.scripts().map(|(s, o)| (s.name.as_str(), o.value.as_str())).collect();
        assert_eq!(scripts, [("script", "/etc/tuned/scripts/ai_init")]);
    }

    #[test]
    fn follows_configparser_comment_and_continuation_rules() {
        let c = Conf::parse(
            "# comment\n; also a comment\n[cpu]\ngovernor=performance#not a comment\nlist = a,\n   b\n[cpu]\nx=1\n  # indented comment\n[vm]\n",
        )
        .unwrap();
        let cpu = c.section("cpu").unwrap();
        assert_eq!(cpu.get("governor").unwrap().value, "performance#not a comment");
        assert_eq!(cpu.get("list").unwrap().value, "a,\nb");
        assert_eq!(cpu.get("x").unwrap().value, "1", "a repeated section adds to the first");
        assert_eq!(c.sections.len(), 2);
    }

    #[test]
    fn reports_every_line_tuned_refuses_with_its_number() {
        let e = Conf::parse("governor=performance\n[cpu]\njust words\n=1\nok=1\n").unwrap_err();
        let lines: Vec<usize> = e.iter().map(|e| e.line).collect();
        assert_eq!(lines, [1, 3, 4]);
        assert!(e[0].reason.contains("before any [section]"), "{}", e[0].reason);
        assert!(e[1].reason.contains("neither a [section] header"), "{}", e[1].reason);
        assert!(e[2].reason.contains("no option name"), "{}", e[2].reason);
        assert_eq!(e[1].text, "just words");
    }

    #[test]
    fn refuses_control_characters_with_the_line() {
        let e = Conf::parse("[main]\nsummary=a\0b\n# c\x1b\nx=1\tok\n").unwrap_err();
        let lines: Vec<usize> = e.iter().map(|e| e.line).collect();
        assert_eq!(lines, [2, 3], "a tab is fine, a control character in a comment is not");
        assert!(
            e[0].reason.contains("'\\0'") && e[0].reason.contains("U+0000"),
            "{}",
            e[0].reason
        );
        assert!(e[1].reason.contains("U+001B"), "{}", e[1].reason);
    }

    #[test]
    fn boot_line_values_follow_the_kernel_argument_rule_around_tuned_expansions() {
        for good in [
            "isolcpus=${isolated_cores} nohz_full=${f:cpulist_invert:${isolated_cores}}",
            "-kernel.panic +kernel.panic=20",
            "quiet\nsplash",
            "${f:regex_search_ternary:${f:exec:uname:-r}:rt:a:b}",
            "hugepagesz=${hp_size} hugepages=4",
        ] {
            assert_eq!(boot_line_problem(good), None, "{good}");
        }
        let cases: &[(&str, &str)] = &[
            ("quiet;reboot", "\";\""),
            ("$(reboot)", "\"$(\""),
            ("`id`", "\"`\""),
            ("x=${f:exec:`id`}", "\"`\""),
            ("a#b", "'#'"),
            ("a|b", "'|'"),
            ("a='b'", "'\\''"),
            ("a=$b", "'$'"),
            ("a=${b", "without its closing"),
            ("=1", "starts with '='"),
            ("hugepagesz=huge hugepages=2", "hugepagesz=huge is not a huge page size"),
            (
                "+default_hugepagesz=2Mb",
                "default_hugepagesz=2Mb is not a huge page size",
            ),
        ];
        for (bad, named) in cases {
            let why = boot_line_problem(bad).expect(bad);
            assert!(why.contains(named), "{bad:?}: {why}");
        }
        assert!(reaches_boot_line("cmdline") && reaches_boot_line("cmdline_x") && reaches_boot_line("initrd_dst_img"));
        assert!(!reaches_boot_line("initrd_add_dir") && !reaches_boot_line("skip_grub_config"));
    }

    #[test]
    fn bootloader_units_are_found_by_type_and_can_be_disabled() {
        let c = Conf::parse("[kargs]\ntype=bootloader\ncmdline=a=1\n[bootloader]\nenabled=false\ncmdline=b\n").unwrap();
        assert_eq!(c.bootloader(), ["[kargs] cmdline=a=1"]);
        assert!(Conf::parse("[sysctl]\nx=1\n").unwrap().bootloader().is_empty());
    }

    #[test]
    fn splits_includes_like_tuned() {
        assert_eq!(
            include_names(" a , b;-c ;${f:virt_check:x:y}"),
            [
                Include::Required("a".into()),
                Include::Required("b".into()),
                Include::Optional("c".into()),
                Include::Dynamic("${f:virt_check:x:y}".into())
            ]
        );
    }

    #[test]
    fn resolves_script_paths_against_the_profile_directory() {
        let dir = Path::new("/etc/tuned/p");
        assert_eq!(
            script_path("script.sh", dir).unwrap(),
            Path::new("/etc/tuned/p/script.sh")
        );
        assert_eq!(
            script_path("${i:PROFILE_DIR}/../scripts/x", dir).unwrap(),
            Path::new("/etc/tuned/scripts/x")
        );
        assert_eq!(script_path("/usr/bin/x", dir).unwrap(), Path::new("/usr/bin/x"));
        assert_eq!(script_path("${f:exec:foo}", dir), None);
    }

    #[test]
    fn reads_profile_dirs_from_tuned_main_conf() {
        let text = "# Global tuned configuration file.\ndaemon = 1\n#profile_dirs = /x\nprofile_dirs = /usr/lib/tuned/profiles, /etc/tuned/profiles;/var/lib/ocp-tuned/profiles # mine\n";
        assert_eq!(
            main_conf_profile_dirs(text).unwrap(),
            [
                PathBuf::from("/usr/lib/tuned/profiles"),
                PathBuf::from("/etc/tuned/profiles"),
                PathBuf::from("/var/lib/ocp-tuned/profiles")
            ]
        );
        assert_eq!(main_conf_profile_dirs("daemon = 1\n"), None);
    }

    #[test]
    fn safe_names_follow_tuned() {
        assert!(is_safe_profile_name("throughput-performance"));
        assert!(is_safe_profile_name("custom_profile.v2"));
        assert!(!is_safe_profile_name("a/b"));
        assert!(!is_safe_profile_name(""));
        assert!(!is_safe_profile_name("a b"));
    }
}
