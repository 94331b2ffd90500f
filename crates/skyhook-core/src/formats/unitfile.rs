// SPDX-License-Identifier: Apache-2.0
//! systemd unit names and unit-file syntax (systemd.syntax(7), systemd.unit(5)):
//! what a package checks before it writes a unit or a drop-in, so that systemd never
//! silently ignores a line of it.

/// The unit types systemd knows, as name suffixes.
pub const UNIT_TYPES: [&str; 11] = [
    "service",
    "socket",
    "device",
    "mount",
    "automount",
    "swap",
    "target",
    "path",
    "timer",
    "slice",
    "scope",
];

/// Checks a full unit name (`containerd.service`, `getty@tty1.service`,
/// `nvidia-persistenced.service`): systemd's characters only (letters, digits,
/// `:-_.\`, one `@` for templates), never `/`, a known type suffix, at most 255
/// bytes. Returns why it is refused.
pub fn check_unit_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("the unit name is empty".into());
    }
    if name.len() > 255 {
        return Err(format!(
            "the unit name is {} bytes long; systemd allows 255",
            name.len()
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|&c| !(c.is_ascii_alphanumeric() || matches!(c, ':' | '-' | '_' | '.' | '\\' | '@')))
    {
        return Err(format!(
            "the unit name {name:?} contains {c:?}; systemd unit names hold only letters, digits and :-_.\\@"
        ));
    }
    let Some((prefix, suffix)) = name.rsplit_once('.') else {
        return Err(format!("the unit name {name:?} has no type suffix such as .service"));
    };
    if !UNIT_TYPES.contains(&suffix) {
        return Err(format!(
            "the unit name {name:?} ends in .{suffix}, which is not a unit type"
        ));
    }
    if prefix.is_empty() || prefix.starts_with('.') || prefix.starts_with('@') {
        return Err(format!(
            "the unit name {name:?} must start with a letter, digit or one of :-_\\"
        ));
    }
    if prefix.matches('@').count() > 1 {
        return Err(format!("the unit name {name:?} has more than one '@'"));
    }
    Ok(())
}

/// One `Key=Value` line of a unit file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    /// The line it starts on, 1-based.
    pub line: usize,
    /// The section it is in (`Service`).
    pub section: String,
    /// The key (`LimitNOFILE`).
    pub key: String,
    /// The value, continuation lines joined with a space.
    pub value: String,
}

/// A line that systemd would not accept, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    /// Line number, 1-based.
    pub line: usize,
    /// The line's text.
    pub text: String,
    /// Why it is refused.
    pub reason: String,
}

/// The assignments of a parsed unit file, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UnitFile {
    /// Every assignment, in file order.
    pub assignments: Vec<Assignment>,
    /// Every section header seen, in order, with its line.
    pub sections: Vec<(usize, String)>,
}

impl UnitFile {
    /// The last value assigned to `key` in `section` (the one systemd uses for
    /// single-valued settings), `None` when never assigned.
    pub fn last(&self, section: &str, key: &str) -> Option<&Assignment> {
        self.assignments
            .iter()
            .rev()
            .find(|a| a.section == section && a.key == key)
    }
}

/// Parses unit-file text: `[Section]` headers, `Key=Value` assignments inside a
/// section, `#`/`;` comments, blank lines, lines continued with a trailing `\`.
/// `sections` lists the section names allowed (names starting with `X-` are always
/// allowed, as systemd ignores them on purpose). Every line is examined; all errors
/// are returned.
pub fn parse(text: &str, sections: &[&str]) -> Result<UnitFile, Vec<LineError>> {
    let mut file = UnitFile::default();
    let mut errors = Vec::new();
    let mut section: Option<String> = None;
    let mut lines = text.lines().enumerate();
    while let Some((i, raw)) = lines.next() {
        let err = |reason: String| LineError {
            line: i + 1,
            text: raw.to_string(),
            reason,
        };
        if let Some(c) = raw.chars().find(|&c| c.is_control() && c != '\t' && c != '\r') {
            errors.push(err(format!("the line contains the control character {c:?}")));
            continue;
        }
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if line.starts_with('[') {
            match line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                Some(name) if !name.is_empty() && !name.contains(['[', ']']) => {
                    if !(sections.contains(&name) || name.starts_with("X-")) {
                        errors.push(err(format!(
                            "section [{name}] is not one systemd reads here (expected one of: {}; names are case-sensitive)",
                            sections.iter().map(|s| format!("[{s}]")).collect::<Vec<_>>().join(", ")
                        )));
                    }
                    file.sections.push((i + 1, name.to_string()));
                    section = Some(name.to_string());
                }
                _ => errors.push(err("a malformed section header; expected [Name]".into())),
            }
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            errors.push(err(
                "not a `Key=Value` assignment, a [Section] header or a comment".into()
            ));
            continue;
        };
        let key = key.trim();
        if key.is_empty() || key.contains(char::is_whitespace) {
            errors.push(err(format!("{key:?} is not a valid key name")));
            continue;
        }
        let Some(current) = &section else {
            errors.push(err("an assignment before any [Section] header".into()));
            continue;
        };
        let mut value = value.trim().to_string();
        while let Some(stripped) = value.strip_suffix('\\') {
            value = stripped.trim_end().to_string();
            match lines.next() {
                Some((_, next)) => {
                    let next = next.trim();
                    if next.starts_with('#') || next.starts_with(';') {
                        value.push('\\');
                        continue;
                    }
                    value.push(' ');
                    value.push_str(next);
                }
                None => break,
            }
        }
        file.assignments.push(Assignment {
            line: i + 1,
            section: current.clone(),
            key: key.to_string(),
            value: value.trim().to_string(),
        });
    }
    if errors.is_empty() { Ok(file) } else { Err(errors) }
}

/// The sections systemd reads in a `.service` unit or drop-in.
pub const SERVICE_SECTIONS: [&str; 3] = ["Unit", "Service", "Install"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_names_follow_systemd_rules() {
        for good in [
            "containerd.service",
            "getty@tty1.service",
            "foo@.service",
            "nvidia-persistenced.service",
            "sys-kernel-debug.mount",
            "a_b:c\\x2d.service",
        ] {
            assert!(check_unit_name(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "../x.service",
            "a/b.service",
            "containerd",
            "x.conf",
            ".service",
            "a b.service",
            "a@b@c.service",
            "é.service",
            "x\0.service",
        ] {
            assert!(check_unit_name(bad).is_err(), "{bad:?}");
        }
        assert!(check_unit_name(&format!("{}.service", "a".repeat(250))).is_err());
    }

    #[test]
    fn parses_sections_assignments_and_continuations() {
        let text = "# drop-in\n[Unit]\nDescription=x\n\n[Service]\nLimitNOFILE=1024\n; c\nEnvironment=A=1 \\\n  B=2\nLimitNOFILE = 4096\n[X-Custom]\nAnything=goes\n";
        let f = parse(text, &SERVICE_SECTIONS).unwrap();
        assert_eq!(f.assignments.len(), 5);
        assert_eq!(f.last("Service", "LimitNOFILE").unwrap().value, "4096");
        assert_eq!(f.last("Service", "LimitNOFILE").unwrap().line, 10);
        assert_eq!(f.last("Service", "Environment").unwrap().value, "A=1 B=2");
        assert_eq!(f.last("X-Custom", "Anything").unwrap().value, "goes");
        assert!(f.last("Unit", "LimitNOFILE").is_none());
    }

    #[test]
    fn reports_every_line_systemd_would_ignore() {
        let text = "LimitNOFILE=1\n[service]\n[Service\nnot an assignment\n=1\nLimit\0X=1\n[Service]\nOk=1\n";
        let errors = parse(text, &SERVICE_SECTIONS).unwrap_err();
        let lines: Vec<usize> = errors.iter().map(|e| e.line).collect();
        assert_eq!(lines, [1, 2, 3, 4, 5, 6]);
        assert!(errors[0].reason.contains("before any [Section]"), "{:?}", errors[0]);
        assert!(errors[1].reason.contains("case-sensitive"), "{:?}", errors[1]);
        assert!(errors[5].reason.contains("control character"), "{:?}", errors[5]);
    }
}
