// SPDX-License-Identifier: Apache-2.0
//! kdumpctl's `auto_reset_crashkernel` option of `/etc/kdump.conf` (RHEL-like hosts).
//!
//! kexec-tools / kdump-utils reset `crashkernel=` on the boot entries to the
//! distribution's default at every kernel install (the `92-crashkernel.install`
//! kernel-install hook runs `kdumpctl _reset-crashkernel-for-installed_kernel`) and
//! at every update of the package (`kdumpctl _reset-crashkernel-after-update`),
//! unless the option reads `no` (the stock kdump.conf says `yes`; no option at all
//! also resets). kdumpctl reads the option as it reads every kdump.conf option: the
//! last line, not a comment, whose first word is the option; its value without a
//! trailing `#` comment and without surrounding double quotes. While the package
//! owns crashkernel, the file says `no`; only that one line is written (or appended),
//! every other byte kept.

/// The kdump.conf option that stops kdumpctl resetting crashkernel.
pub const OPTION: &str = "auto_reset_crashkernel";
/// The line the package puts in kdump.conf while it owns crashkernel.
pub const PINNED_LINE: &str = "auto_reset_crashkernel no";

/// The option's value in `text` as kdumpctl reads it, and the 1-based line it is on.
pub fn setting(text: &[u8]) -> Option<(usize, String)> {
    text.split(|b| *b == b'\n')
        .enumerate()
        .filter_map(|(i, line)| value_of(line).map(|v| (i + 1, v)))
        .last()
}

/// The option's value when `line` sets it (shell `read -r opt val` splitting on
/// blanks, then kdumpctl's removal of a trailing comment and of double quotes).
fn value_of(line: &[u8]) -> Option<String> {
    let line = String::from_utf8_lossy(line);
    let line = line.trim_start_matches([' ', '\t']);
    if line.starts_with('#') {
        return None;
    }
    let (opt, rest) = line.split_once([' ', '\t']).unwrap_or((line, ""));
    if opt != OPTION {
        return None;
    }
    let mut value = rest.trim_matches([' ', '\t']);
    if let Some(i) = value.find('#') {
        value = value[..i].trim_end();
    }
    if value.len() >= 2 && value.starts_with('"') && value.ends_with('"') {
        value = &value[1..value.len() - 1];
    }
    Some(value.to_string())
}

/// What [`pin`] replaced: the line and the value kdumpctl read there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overridden {
    /// The 1-based line number.
    pub line: usize,
    /// The value it had (`yes`, or anything but `no`).
    pub value: String,
}

/// `text` with the option reading `no`, and what it read before when that was
/// something else. Already `no`: `text` unchanged. Otherwise the line kdumpctl
/// reads becomes [`PINNED_LINE`], or, without one, the line is appended (after a
/// newline when the file lacks its final one); no other byte changes.
pub fn pin(text: &[u8]) -> (Vec<u8>, Option<Overridden>) {
    match setting(text) {
        Some((_, value)) if value == "no" => (text.to_vec(), None),
        Some((line, value)) => {
            let mut out = Vec::with_capacity(text.len() + PINNED_LINE.len());
            for (i, part) in text.split(|b| *b == b'\n').enumerate() {
                if i > 0 {
                    out.push(b'\n');
                }
                if i + 1 == line {
                    out.extend_from_slice(PINNED_LINE.as_bytes());
                } else {
                    out.extend_from_slice(part);
                }
            }
            (out, Some(Overridden { line, value }))
        }
        None => {
            let mut out = text.to_vec();
            if !out.is_empty() && !out.ends_with(b"\n") {
                out.push(b'\n');
            }
            out.extend_from_slice(PINNED_LINE.as_bytes());
            out.push(b'\n');
            (out, None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_option_as_kdumpctl_does() {
        let cases: &[(&str, Option<(usize, &str)>)] = &[
            ("auto_reset_crashkernel yes\n", Some((1, "yes"))),
            (
                "path /var/crash\n\tauto_reset_crashkernel   no  # keep ours\n",
                Some((2, "no")),
            ),
            ("auto_reset_crashkernel \"no\"\n", Some((1, "no"))),
            (
                "auto_reset_crashkernel no\nauto_reset_crashkernel yes\n",
                Some((2, "yes")),
            ),
            ("#auto_reset_crashkernel no\n", None),
            ("auto_reset_crashkernelx no\n", None),
            ("auto_reset_crashkernel\n", Some((1, ""))),
            ("", None),
        ];
        for (text, want) in cases {
            let got = setting(text.as_bytes());
            assert_eq!(got.as_ref().map(|(l, v)| (*l, v.as_str())), *want, "for {text:?}");
        }
    }

    #[test]
    fn pins_by_changing_only_the_line_kdumpctl_reads() {
        let stock = b"# kdump.conf\r\nauto_reset_crashkernel yes\npath /var/crash\n\xff\n";
        let (out, was) = pin(stock);
        assert_eq!(
            out,
            b"# kdump.conf\r\nauto_reset_crashkernel no\npath /var/crash\n\xff\n"
        );
        assert_eq!(
            was,
            Some(Overridden {
                line: 2,
                value: "yes".to_string()
            })
        );
        assert_eq!(pin(&out), (out.clone(), None), "pinning twice changes nothing");
    }

    #[test]
    fn appends_the_line_when_the_file_has_none() {
        assert_eq!(
            pin(b"path /var/crash").0,
            b"path /var/crash\nauto_reset_crashkernel no\n"
        );
        assert_eq!(pin(b"").0, b"auto_reset_crashkernel no\n");
        let (out, was) = pin(b"#auto_reset_crashkernel yes\n");
        assert_eq!(out, b"#auto_reset_crashkernel yes\nauto_reset_crashkernel no\n");
        assert_eq!(was, None, "a comment is nothing to override");
    }
}
