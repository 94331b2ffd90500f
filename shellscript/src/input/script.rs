// SPDX-License-Identifier: Apache-2.0
//! The script of a stage as found in the configMap: which key holds it, whether it
//! can be run as it is, and its shebang line.
//!
//! The script's bytes are never changed: the interpreter reads the configMap file
//! itself. What this module decides instead:
//! - Windows line endings (CR LF) or a UTF-8 byte-order mark: refused, bad input
//!   (exit 2), before anything runs. Both break every interpreter in confusing ways
//!   (`$'\r': command not found`, a shebang naming `bash\r`).
//! - Empty or whitespace only: nothing to run; the stage succeeds with a warning.
//! - Not valid UTF-8: run byte for byte as it is, with a warning naming the line
//!   (shells do not care about encodings; an SCR cannot carry such a value, so the
//!   operator should know).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use skyhook_core::{Error, Mode, Result};

/// Validates the configMap offline (the entry point of `skyhook-pkg lint`): every
/// stage script is inspected as its stage would, and a key that looks like a
/// misspelt stage script is a problem (that stage would run nothing).
pub fn validate(configmaps: &skyhook_core::ConfigMaps) -> Result<()> {
    let mut problems = Vec::new();
    for mode in Mode::ALL {
        if let Some(raw) = configmaps.bytes(&key(mode)) {
            match inspect(&key(mode), raw) {
                Ok(_) => {}
                Err(Error::Input(p)) => problems.extend(p),
                Err(e) => return Err(e),
            }
        }
        for near in near_misses(mode, configmaps.keys()) {
            problems.push(format!(
                "configMap key {near:?} is not a stage script: the {mode} stage runs {:?} (rename the key)",
                key(mode)
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(Error::Input(problems))
    }
}

/// The configMap key holding the script of `mode`: `apply_check.sh`.
pub fn key(mode: Mode) -> String {
    format!("{}.sh", mode.underscored())
}

/// Keys that look like a misspelling of the key of `mode` (`apply-check.sh`,
/// `apply_check`, `apply_check.bash`, `Apply_Check.sh`), for the "nothing to run" message.
pub fn near_misses<'a>(mode: Mode, keys: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let wanted = key(mode);
    keys.filter(|k| {
        let stem = k.rsplit_once('.').map_or(*k, |(stem, _)| stem);
        *k != wanted && stem.replace('-', "_").eq_ignore_ascii_case(mode.underscored())
    })
    .collect()
}

/// A shebang line, split as the kernel splits it: the interpreter, then at most one
/// argument (everything after the interpreter, inner blanks included).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shebang<'a> {
    /// The interpreter path as written.
    pub interpreter: &'a OsStr,
    /// The single optional argument.
    pub arg: Option<&'a OsStr>,
}

/// What is in a script, once inspected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content<'a> {
    /// Zero bytes, or only blanks and newlines.
    Empty,
    /// Something to run, with its shebang when it has one.
    Runnable(Option<Shebang<'a>>),
}

/// Inspects the script `raw` held by configMap key `key`. Refuses (bad input) what
/// would be misread by any interpreter; warns about what will run unchanged.
pub fn inspect<'a>(key: &str, raw: &'a [u8]) -> Result<Content<'a>> {
    let mut problems = Vec::new();
    if raw.starts_with(b"\xEF\xBB\xBF") {
        problems.push(format!(
            "configMap key {key:?} starts with a UTF-8 byte-order mark (bytes EF BB BF), which hides \
             its first line from the interpreter (the shebang is not seen, the first command is not \
             found). Save the script as UTF-8 without BOM and update the SCR; the script was not run"
        ));
    }
    let crlf = crlf_lines(raw);
    if !crlf.is_empty() {
        let total = raw.split(|&b| b == b'\n').filter(|l| !l.is_empty()).count();
        let shown: Vec<String> = crlf.iter().take(5).map(usize::to_string).collect();
        problems.push(format!(
            "configMap key {key:?} has Windows line endings (CR LF) on {} of {total} lines (line{} {}{}): \
             an interpreter reads each CR as part of the line (bash: \"$'\\r': command not found\"). \
             The script was not run and is never rewritten silently: save it with Unix line endings \
             (LF), e.g. `sed -i 's/\\r$//' {key}` or `dos2unix {key}`, and update the SCR",
            crlf.len(),
            if crlf.len() == 1 { "" } else { "s" },
            shown.join(", "),
            if crlf.len() > shown.len() { ", …" } else { "" },
        ));
    }
    if !problems.is_empty() {
        return Err(Error::Input(problems));
    }
    if raw.iter().all(u8::is_ascii_whitespace) {
        return Ok(Content::Empty);
    }
    if let Err(e) = std::str::from_utf8(raw) {
        let at = e.valid_up_to();
        let line = raw[..at].iter().filter(|&&b| b == b'\n').count() + 1;
        log::warn!(
            "configMap key {key:?} is not valid UTF-8 (first invalid byte 0x{:02X} on line {line}, \
             byte offset {at}); it is passed to the interpreter byte for byte, unchanged. An SCR's \
             configMap values are UTF-8 text, so check how this file was produced",
            raw[at]
        );
    }
    Ok(Content::Runnable(shebang(raw)?))
}

/// The 1-based numbers of the lines that end in CR LF (or in a CR at the very end).
fn crlf_lines(raw: &[u8]) -> Vec<usize> {
    let mut lines = Vec::new();
    let mut number = 1;
    for (i, &b) in raw.iter().enumerate() {
        if b == b'\r' && (raw.get(i + 1) == Some(&b'\n') || i + 1 == raw.len()) {
            lines.push(number);
        }
        if b == b'\n' {
            number += 1;
        }
    }
    lines
}

/// The shebang of `raw`, split like the kernel does (binfmt_script): after `#!`,
/// blanks (space, tab) are skipped, the interpreter runs to the next blank, and the
/// rest of the line with outer blanks trimmed is the one optional argument. Unlike
/// the kernel, the line has no length limit. `#!` naming no interpreter, or a
/// relative interpreter path, is bad input.
fn shebang(raw: &[u8]) -> Result<Option<Shebang<'_>>> {
    let Some(rest) = raw.strip_prefix(b"#!") else {
        return Ok(None);
    };
    let line = rest.split(|&b| b == b'\n').next().unwrap_or_default();
    let blank = |b: &u8| *b == b' ' || *b == b'\t';
    let line = trim(line, blank);
    let end = line.iter().position(blank).unwrap_or(line.len());
    let (interpreter, arg) = line.split_at(end);
    let arg = trim(arg, blank);
    let text = String::from_utf8_lossy(line);
    if interpreter.is_empty() {
        return Err(Error::input(
            "the script's first line `#!` names no interpreter; write e.g. `#!/bin/bash` or remove the line",
        ));
    }
    if !interpreter.starts_with(b"/") {
        return Err(Error::input(format!(
            "the script's shebang `#!{text}` names the interpreter by a relative path; \
             use an absolute one (`#!/bin/bash`, `#!/usr/bin/env python3`)"
        )));
    }
    Ok(Some(Shebang {
        interpreter: OsStr::from_bytes(interpreter),
        arg: (!arg.is_empty()).then(|| OsStr::from_bytes(arg)),
    }))
}

fn trim(mut s: &[u8], blank: impl Fn(&u8) -> bool) -> &[u8] {
    while let [first, rest @ ..] = s
        && blank(first)
    {
        s = rest;
    }
    while let [rest @ .., last] = s
        && blank(last)
    {
        s = rest;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sb<'a>(interpreter: &'a str, arg: Option<&'a str>) -> Option<Shebang<'a>> {
        Some(Shebang {
            interpreter: OsStr::new(interpreter),
            arg: arg.map(OsStr::new),
        })
    }

    #[test]
    fn keys_use_the_underscore_spelling() {
        assert_eq!(key(Mode::Apply), "apply.sh");
        assert_eq!(key(Mode::PostInterruptCheck), "post_interrupt_check.sh");
        let keys = [
            "apply-check.sh",
            "apply_check",
            "Apply_Check.bash",
            "apply.sh",
            "apply_check.sh",
            "x",
        ];
        assert_eq!(
            near_misses(Mode::ApplyCheck, keys.into_iter()),
            ["apply-check.sh", "apply_check", "Apply_Check.bash"]
        );
        assert!(near_misses(Mode::Apply, ["apply_check.sh"].into_iter()).is_empty());
    }

    #[test]
    fn splits_shebangs_like_the_kernel() {
        let cases: [(&[u8], Option<Shebang>); 8] = [
            (b"#!/bin/bash\necho", sb("/bin/bash", None)),
            (b"#!/bin/sh -e\n", sb("/bin/sh", Some("-e"))),
            (
                b"#! /usr/bin/env  python3 \t\nprint(1)",
                sb("/usr/bin/env", Some("python3")),
            ),
            (
                b"#!/usr/bin/env -S python3 -u\n",
                sb("/usr/bin/env", Some("-S python3 -u")),
            ),
            (b"#!/bin/bash", sb("/bin/bash", None)),
            (b"#!\t/bin/sh\t-x\n", sb("/bin/sh", Some("-x"))),
            (b"echo no shebang\n", None),
            (b" #!/bin/sh\n", None),
        ];
        for (raw, want) in cases {
            assert_eq!(shebang(raw).unwrap(), want, "{:?}", String::from_utf8_lossy(raw));
        }
    }

    #[test]
    fn refuses_shebangs_without_an_absolute_interpreter() {
        for raw in [&b"#!\necho"[..], b"#!   \n", b"#!bash\n", b"#!python3 -u\n"] {
            let e = shebang(raw).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{raw:?}");
        }
        assert!(shebang(b"#!python3\n").unwrap_err().to_string().contains("relative"));
    }

    #[test]
    fn refuses_windows_line_endings_naming_the_lines() {
        let e = inspect("apply.sh", b"#!/bin/bash\r\necho a\r\necho b\n").unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let msg = e.to_string();
        assert!(
            msg.contains("\"apply.sh\" has Windows line endings (CR LF) on 2 of 3 lines (lines 1, 2)"),
            "{msg}"
        );
        assert!(msg.contains("was not run"), "{msg}");
        let msg = inspect("x.sh", b"echo a\necho b\r").unwrap_err().to_string();
        assert!(msg.contains("on 1 of 2 lines (line 2)"), "{msg}");
        assert_eq!(crlf_lines(&b"a\r\n".repeat(7)), [1, 2, 3, 4, 5, 6, 7]);
        let msg = inspect("x.sh", &b"a\r\n".repeat(7)).unwrap_err().to_string();
        assert!(msg.contains("(lines 1, 2, 3, 4, 5, …)"), "{msg}");
    }

    #[test]
    fn a_carriage_return_inside_a_line_is_content() {
        assert_eq!(inspect("x.sh", b"printf 'a\rb'\n").unwrap(), Content::Runnable(None));
    }

    #[test]
    fn refuses_a_byte_order_mark() {
        let msg = inspect("apply.sh", b"\xEF\xBB\xBF#!/bin/bash\necho\n")
            .unwrap_err()
            .to_string();
        assert!(msg.contains("byte-order mark"), "{msg}");
    }

    #[test]
    fn empty_and_blank_scripts_have_nothing_to_run() {
        for raw in [&b""[..], b"\n", b"  \n\t\n"] {
            assert_eq!(inspect("apply.sh", raw).unwrap(), Content::Empty, "{raw:?}");
        }
        assert_eq!(
            inspect("apply.sh", b"# only a comment\n").unwrap(),
            Content::Runnable(None)
        );
    }

    #[test]
    fn non_utf8_scripts_run_unchanged() {
        let raw = b"#!/bin/sh\necho caf\xe9\n";
        assert_eq!(
            inspect("apply.sh", raw).unwrap(),
            Content::Runnable(sb("/bin/sh", None))
        );
    }
}
