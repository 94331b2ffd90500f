// SPDX-License-Identifier: Apache-2.0
//! GRUB's defaults, the shell assignments `grub-mkconfig` sources: the one editor of
//! a `GRUB_CMDLINE_LINUX=` value in `/etc/default/grub`, and the Debian-like drop-in a
//! package writes to `/etc/default/grub.d`.
//!
//! The editor works on bytes and changes only the words it means to: non-UTF-8
//! bytes, CRLF line ends, comments, other assignments and a missing final newline
//! are kept exactly, so that setting the previous value back restores the file.

use std::ops::Range;

use super::cmdline::{key_of, split_cmdline};

/// The GRUB defaults file, sourced by `grub-mkconfig` / `grub2-mkconfig`.
pub const GRUB_DEFAULTS: &str = "/etc/default/grub";

/// The variable of the GRUB defaults that every boot entry (recovery included) gets.
pub const CMDLINE_VAR: &str = "GRUB_CMDLINE_LINUX";

/// The Debian-like drop-in directory.
pub const DROP_IN_DIR: &str = "/etc/default/grub.d";

/// One change to the words of an assignment's value.
#[derive(Debug, Clone, Copy)]
pub enum Edit<'a> {
    /// The words with key `key` become exactly `token` (the first replaced in place,
    /// further ones removed; appended when there is none); `None` removes them all.
    SetKey {
        /// The argument key (`crashkernel`).
        key: &'a str,
        /// The whole argument (`crashkernel=256M`), or `None` to remove.
        token: Option<&'a str>,
    },
    /// The last word equal to `old` becomes `new` (`None`: is removed); nothing when
    /// there is no such word.
    Replace {
        /// The word to find.
        old: &'a str,
        /// Its replacement.
        new: Option<&'a str>,
    },
    /// `tokens` are appended at the end of the value.
    Append {
        /// The words to append.
        tokens: &'a [String],
    },
}

/// Where the value of the last `var=` assignment sits in `text`: the byte range of
/// the value (without its quotes), and its quote (`"`, `'`, or none).
fn find_assignment(text: &[u8], var: &str) -> Option<(Range<usize>, Option<u8>)> {
    let prefix = format!("{var}=");
    let mut found = None;
    let mut start = 0;
    for line in text.split_inclusive(|b| *b == b'\n') {
        let body = line.strip_suffix(b"\n").unwrap_or(line);
        let indent = body.iter().take_while(|b| matches!(b, b' ' | b'\t')).count();
        if body[indent..].starts_with(prefix.as_bytes()) {
            let value_start = start + indent + prefix.len();
            let rest = &text[value_start..start + body.len()];
            found = Some(match rest.first() {
                Some(q @ (b'"' | b'\'')) => {
                    let close = rest[1..].iter().rposition(|b| b == q).map_or(rest.len(), |i| i + 1);
                    (value_start + 1..value_start + close, Some(*q))
                }
                _ => {
                    let end = rest.iter().position(u8::is_ascii_whitespace).unwrap_or(rest.len());
                    (value_start..value_start + end, None)
                }
            });
        }
        start += line.len();
    }
    found
}

/// The arguments of the last `var=` assignment in `text` (`None` when there is none),
/// as sourcing the file yields them: in a double-quoted value `\"` is a `"`. Bytes
/// that are not UTF-8 are shown as U+FFFD (for comparison only; the editor never
/// writes this text back).
pub fn assignment_args(text: &[u8], var: &str) -> Option<Vec<String>> {
    let (range, quote) = find_assignment(text, var)?;
    let value = String::from_utf8_lossy(&text[range]);
    let value = if quote == Some(b'"') {
        value.replace("\\\"", "\"")
    } else {
        value.into_owned()
    };
    Some(split_cmdline(&value))
}

/// A word as it is written inside a double-quoted shell value, so that sourcing the
/// file yields `word` (`pci="config_acs=…;…"` becomes `pci=\"config_acs=…;…\"`).
/// Words we write hold no other character the shell acts on there
/// ([`check_arg`](super::cmdline::check_arg)).
pub fn in_double_quotes(word: &str) -> String {
    word.replace('"', "\\\"")
}

/// Applies `edit` to the last `var=` assignment of `text`; without an assignment, a
/// line `var="…"` is added when the edit adds words. Every byte outside the words
/// edited is kept.
pub fn edit_assignment(text: &[u8], var: &str, edit: &Edit) -> Vec<u8> {
    let Some((range, quote)) = find_assignment(text, var) else {
        return add_assignment(text, var, &escaped(edit).as_edit());
    };
    let words_quoted = edit_words(edit).iter().any(|w| w.contains('"'));
    let mut value = match quote {
        // A value that is or becomes double-quoted holds our quotes escaped.
        Some(b'"') => edit_value(&text[range.clone()], &escaped(edit).as_edit()),
        None if words_quoted => edit_value(&text[range.clone()], &escaped(edit).as_edit()),
        _ => edit_value(&text[range.clone()], edit),
    };
    if quote.is_none() && (words_quoted || value.iter().any(u8::is_ascii_whitespace)) {
        // An unquoted value that now holds several words needs quotes to stay one.
        value = [b"\"".as_slice(), &value, b"\""].concat();
    }
    [&text[..range.start], value.as_slice(), &text[range.end..]].concat()
}

/// Sets the whole value of the last `var=` assignment of `text` to `value` (written
/// single-quoted unless it is a plain word), quotes included; adds a line `var=value`
/// when there is none. `None` removes the line of that assignment. Every other byte
/// is kept. For one-value variables (`GRUB_DEFAULT`, `GRUB_TIMEOUT`).
pub fn set_assignment(text: &[u8], var: &str, value: Option<&str>) -> Vec<u8> {
    let plain = |v: &str| !v.is_empty() && v.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-+:,/".contains(&b));
    let written = value.map(|v| {
        if plain(v) {
            v.to_string()
        } else {
            format!("'{}'", v.replace('\'', "'\\''"))
        }
    });
    let Some((range, quote)) = find_assignment(text, var) else {
        let Some(written) = written else {
            return text.to_vec();
        };
        let sep: &[u8] = if text.is_empty() || text.ends_with(b"\n") {
            b""
        } else {
            b"\n"
        };
        return [text, sep, format!("{var}={written}\n").as_bytes()].concat();
    };
    let (start, end) = match quote {
        Some(_) => (range.start - 1, (range.end + 1).min(text.len())),
        None => (range.start, range.end),
    };
    match written {
        Some(w) => [&text[..start], w.as_bytes(), &text[end..]].concat(),
        None => {
            let line_start = text[..start].iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
            let line_end = text[end..]
                .iter()
                .position(|b| *b == b'\n')
                .map_or(text.len(), |i| end + i + 1);
            [&text[..line_start], &text[line_end..]].concat()
        }
    }
}

/// The words an edit writes or looks for.
fn edit_words<'a>(edit: &Edit<'a>) -> Vec<&'a str> {
    match *edit {
        Edit::SetKey { token, .. } => token.into_iter().collect(),
        Edit::Replace { old, new } => [Some(old), new].into_iter().flatten().collect(),
        Edit::Append { tokens } => tokens.iter().map(String::as_str).collect(),
    }
}

/// An edit's words as written inside double quotes ([`in_double_quotes`]).
enum Escaped<'a> {
    SetKey(&'a str, Option<String>),
    Replace(String, Option<String>),
    Append(Vec<String>),
}

impl Escaped<'_> {
    /// The edit of the escaped words.
    fn as_edit(&self) -> Edit<'_> {
        match self {
            Escaped::SetKey(key, token) => Edit::SetKey {
                key,
                token: token.as_deref(),
            },
            Escaped::Replace(old, new) => Edit::Replace {
                old,
                new: new.as_deref(),
            },
            Escaped::Append(tokens) => Edit::Append { tokens },
        }
    }
}

/// `edit` with its words as written inside double quotes.
fn escaped<'a>(edit: &Edit<'a>) -> Escaped<'a> {
    match *edit {
        Edit::SetKey { key, token } => Escaped::SetKey(key, token.map(in_double_quotes)),
        Edit::Replace { old, new } => Escaped::Replace(in_double_quotes(old), new.map(in_double_quotes)),
        Edit::Append { tokens } => Escaped::Append(tokens.iter().map(|t| in_double_quotes(t)).collect()),
    }
}

/// A new `var="…"` line at the end of `text` (with the file's line ending) holding
/// what `edit` adds; `text` unchanged when it adds nothing.
fn add_assignment(text: &[u8], var: &str, edit: &Edit) -> Vec<u8> {
    let value = edit_value(b"", edit);
    if value.is_empty() {
        return text.to_vec();
    }
    let eol: &[u8] = if text.ends_with(b"\r\n") { b"\r\n" } else { b"\n" };
    let mut out = text.to_vec();
    if !out.is_empty() && !out.ends_with(b"\n") {
        out.extend_from_slice(eol);
    }
    out.extend_from_slice(format!("{var}=\"").as_bytes());
    out.extend_from_slice(&value);
    out.push(b'"');
    out.extend_from_slice(eol);
    out
}

/// What becomes of one word of a value.
enum Fate<'a> {
    Keep,
    Replace(&'a str),
    Cut,
}

/// Edits the words of one value, keeping the bytes between kept words intact: a
/// removed word takes the whitespace that separated it from the kept words before
/// it (or, first, after it).
fn edit_value(value: &[u8], edit: &Edit) -> Vec<u8> {
    let words = word_spans(value);
    let word = |i: usize| &value[words[i].clone()];
    let mut fates: Vec<Fate> = words.iter().map(|_| Fate::Keep).collect();
    let mut append: Vec<&str> = Vec::new();
    match *edit {
        Edit::SetKey { key, token } => {
            let same = |i: &usize| key_of(&String::from_utf8_lossy(word(*i))) == key;
            let matching: Vec<usize> = (0..words.len()).filter(same).collect();
            for &i in &matching {
                fates[i] = Fate::Cut;
            }
            match (matching.first(), token) {
                (Some(&i), Some(t)) => fates[i] = Fate::Replace(t),
                (None, Some(t)) => append.push(t),
                _ => {}
            }
        }
        Edit::Replace { old, new } => {
            if let Some(i) = (0..words.len()).rev().find(|i| word(*i) == old.as_bytes()) {
                fates[i] = new.map_or(Fate::Cut, Fate::Replace);
            }
        }
        Edit::Append { tokens } => append.extend(tokens.iter().map(String::as_str)),
    }
    let mut out = Vec::with_capacity(value.len() + 32);
    let mut pos = 0;
    let mut kept_before = false;
    for (i, fate) in fates.iter().enumerate() {
        let w = words[i].clone();
        let cut = match fate {
            Fate::Keep | Fate::Replace(_) => {
                out.extend_from_slice(&value[pos..w.start]);
                match fate {
                    Fate::Replace(t) => out.extend_from_slice(t.as_bytes()),
                    _ => out.extend_from_slice(&value[w.clone()]),
                }
                kept_before = true;
                pos = w.end;
                continue;
            }
            Fate::Cut if kept_before => w.end,
            Fate::Cut => {
                let ws = value[w.end..].iter().take_while(|b| b.is_ascii_whitespace()).count();
                out.extend_from_slice(&value[pos..w.start]);
                w.end + ws
            }
        };
        pos = cut;
    }
    out.extend_from_slice(&value[pos..]);
    for t in append {
        if !out.is_empty() && !out.last().is_some_and(u8::is_ascii_whitespace) {
            out.push(b' ');
        }
        out.extend_from_slice(t.as_bytes());
    }
    out
}

/// The byte ranges of the whitespace-separated words of `value`.
fn word_spans(value: &[u8]) -> Vec<Range<usize>> {
    let mut spans = Vec::new();
    let mut start = None;
    for (i, b) in value.iter().enumerate() {
        match (b.is_ascii_whitespace(), start) {
            (false, None) => start = Some(i),
            (true, Some(s)) => {
                spans.push(s..i);
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        spans.push(s..value.len());
    }
    spans
}

/// The text of a Debian-like drop-in appending `args` to the distribution's
/// `GRUB_CMDLINE_LINUX_DEFAULT`. `args` must have passed
/// [`check_arg`](super::cmdline::check_arg).
pub fn render_drop_in(header: &str, args: &[String]) -> String {
    let mut text = String::new();
    for line in header.lines() {
        text.push_str("# ");
        text.push_str(line);
        text.push('\n');
    }
    text.push_str(&format!(
        "GRUB_CMDLINE_LINUX_DEFAULT=\"${{GRUB_CMDLINE_LINUX_DEFAULT}} {}\"\n",
        args.iter().map(|a| in_double_quotes(a)).collect::<Vec<_>>().join(" ")
    ));
    text
}

/// The arguments a drop-in written by [`render_drop_in`] appends (empty for any other text).
pub fn parse_drop_in(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("GRUB_CMDLINE_LINUX_DEFAULT=\"${GRUB_CMDLINE_LINUX_DEFAULT}"))
        .flat_map(|rest| split_cmdline(&rest.strip_suffix('"').unwrap_or(rest).replace("\\\"", "\"")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_value_is_set_added_and_removed_keeping_every_other_byte() {
        let text = b"# c\r\nGRUB_DEFAULT=0\nGRUB_TIMEOUT=5\n\xff";
        let saved = set_assignment(text, "GRUB_DEFAULT", Some("saved"));
        assert_eq!(saved, b"# c\r\nGRUB_DEFAULT=saved\nGRUB_TIMEOUT=5\n\xff");
        assert_eq!(set_assignment(&saved, "GRUB_DEFAULT", Some("0")), text);
        let quoted = b"GRUB_DEFAULT=\"Advanced options>Ubuntu, with Linux 6.8\"\nX=1\n";
        let s = set_assignment(quoted, "GRUB_DEFAULT", Some("saved"));
        assert_eq!(s, b"GRUB_DEFAULT=saved\nX=1\n");
        assert_eq!(
            set_assignment(&s, "GRUB_DEFAULT", Some("Advanced options>it's")),
            b"GRUB_DEFAULT='Advanced options>it'\\''s'\nX=1\n"
        );
        let added = set_assignment(b"X=1", "GRUB_DEFAULT", Some("saved"));
        assert_eq!(added, b"X=1\nGRUB_DEFAULT=saved\n");
        assert_eq!(set_assignment(&added, "GRUB_DEFAULT", None), b"X=1\n");
        assert_eq!(set_assignment(b"X=1\n", "GRUB_DEFAULT", None), b"X=1\n");
    }

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn a_quoted_value_is_escaped_so_that_sourcing_yields_the_argument() {
        let acs = "pci=\"config_acs=1@0:1.0;1@0:2.0\"";
        let before = b"A=1\nGRUB_CMDLINE_LINUX=\"ro quiet\"\n";
        let after = edit_assignment(before, CMDLINE_VAR, &Edit::Append { tokens: &s(&[acs]) });
        assert_eq!(
            after,
            b"A=1\nGRUB_CMDLINE_LINUX=\"ro quiet pci=\\\"config_acs=1@0:1.0;1@0:2.0\\\"\"\n"
        );
        assert_eq!(assignment_args(&after, CMDLINE_VAR).unwrap(), s(&["ro", "quiet", acs]));
        let back = edit_assignment(&after, CMDLINE_VAR, &Edit::Replace { old: acs, new: None });
        assert_eq!(back, before, "taken back byte for byte");
        let bare = edit_assignment(
            b"GRUB_CMDLINE_LINUX=ro\n",
            CMDLINE_VAR,
            &Edit::Append { tokens: &s(&[acs]) },
        );
        assert_eq!(assignment_args(&bare, CMDLINE_VAR).unwrap(), s(&["ro", acs]));
        let added = edit_assignment(b"", CMDLINE_VAR, &Edit::Append { tokens: &s(&[acs]) });
        assert_eq!(assignment_args(&added, CMDLINE_VAR).unwrap(), s(&[acs]));
        let drop_in = render_drop_in("x", &s(&["quiet", acs]));
        assert!(
            drop_in.contains("quiet pci=\\\"config_acs=1@0:1.0;1@0:2.0\\\"\"\n"),
            "{drop_in}"
        );
        assert_eq!(parse_drop_in(&drop_in), s(&["quiet", acs]));
    }

    fn set(text: &[u8], token: Option<&str>) -> Vec<u8> {
        edit_assignment(
            text,
            CMDLINE_VAR,
            &Edit::SetKey {
                key: "crashkernel",
                token,
            },
        )
    }

    /// Each foreign byte pattern survives setting a value and setting it back.
    #[test]
    fn keeps_every_byte_it_does_not_mean_to_change() {
        let cases: &[(&str, &[u8])] = &[
            (
                "non-UTF-8 comment and value",
                b"# caf\xe9\nGRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX=\"rd.lvm=\xff crashkernel=auto quiet\"\n",
            ),
            (
                "CRLF",
                b"GRUB_TIMEOUT=5\r\nGRUB_CMDLINE_LINUX=\"crashkernel=auto rhgb\"\r\nGRUB_X=1\r\n",
            ),
            (
                "comments and an earlier assignment",
                b"# keep me\nGRUB_CMDLINE_LINUX=\"old\"\n  # indented\nGRUB_CMDLINE_LINUX=\"crashkernel=auto  quiet\" # tail\n",
            ),
            (
                "no final newline",
                b"GRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX=\"crashkernel=auto\"",
            ),
            ("single quotes", b"GRUB_CMDLINE_LINUX='crashkernel=auto quiet'\n"),
        ];
        for (name, original) in cases {
            let ours = set(original, Some("crashkernel=256M"));
            assert_eq!(
                ours.len(),
                original.len() + "256M".len() - "auto".len(),
                "{name}: only the value changed"
            );
            assert_eq!(
                with_crash(&ours),
                ["crashkernel=256M"],
                "{name}: {}",
                String::from_utf8_lossy(&ours)
            );
            assert_eq!(&set(&ours, Some("crashkernel=auto")), original, "{name}: set back");
        }
    }

    fn with_crash(text: &[u8]) -> Vec<String> {
        assignment_args(text, CMDLINE_VAR)
            .unwrap()
            .into_iter()
            .filter(|a| key_of(a) == "crashkernel")
            .collect()
    }

    #[test]
    fn appended_arguments_come_off_exactly() {
        for original in [
            &b"GRUB_CMDLINE_LINUX=\"rhgb quiet\"\n"[..],
            b"GRUB_CMDLINE_LINUX=\"\"\n",
            b"GRUB_CMDLINE_LINUX='quiet'\r\n",
            b"X=\xfe\nGRUB_CMDLINE_LINUX=\"quiet\"",
        ] {
            let ours = s(&["quiet", "iommu=pt"]);
            let mut text = edit_assignment(original, CMDLINE_VAR, &Edit::Append { tokens: &ours });
            assert!(
                assignment_args(&text, CMDLINE_VAR).unwrap().ends_with(&ours),
                "{}",
                String::from_utf8_lossy(&text)
            );
            for o in &ours {
                text = edit_assignment(&text, CMDLINE_VAR, &Edit::Replace { old: o, new: None });
            }
            assert_eq!(text, original, "the distribution's quiet stays");
        }
    }

    #[test]
    fn sets_exactly_one_and_adds_what_is_missing() {
        assert_eq!(
            set(b"X=1\nGRUB_CMDLINE_LINUX=quiet\n", Some("crashkernel=256M")),
            b"X=1\nGRUB_CMDLINE_LINUX=\"quiet crashkernel=256M\"\n",
            "an unquoted value gains quotes when it gains a word"
        );
        let text = b"GRUB_CMDLINE_LINUX=\"crashkernel=1G quiet crashkernel=2G\"\n";
        assert_eq!(
            set(text, Some("crashkernel=256M")),
            b"GRUB_CMDLINE_LINUX=\"crashkernel=256M quiet\"\n",
            "exactly one remains"
        );
        assert_eq!(set(text, None), b"GRUB_CMDLINE_LINUX=\"quiet\"\n");
        assert_eq!(
            set(b"GRUB_TIMEOUT=5", Some("crashkernel=256M")),
            b"GRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX=\"crashkernel=256M\"\n"
        );
        assert_eq!(
            set(b"GRUB_TIMEOUT=5\r\n", Some("crashkernel=256M")),
            b"GRUB_TIMEOUT=5\r\nGRUB_CMDLINE_LINUX=\"crashkernel=256M\"\r\n"
        );
        assert_eq!(set(b"GRUB_TIMEOUT=5\n", None), b"GRUB_TIMEOUT=5\n");
        assert_eq!(
            assignment_args(b"GRUB_CMDLINE_LINUX_DEFAULT=\"a\"\n", CMDLINE_VAR),
            None,
            "another variable with the same prefix is not ours"
        );
    }

    #[test]
    fn drop_in_appends_to_the_distribution_default_and_parses_back() {
        let args = s(&["hugepagesz=1G", "hugepages=4", "iommu=pt"]);
        let text = render_drop_in("written by tuning\nline two", &args);
        assert_eq!(
            text,
            "# written by tuning\n# line two\nGRUB_CMDLINE_LINUX_DEFAULT=\"${GRUB_CMDLINE_LINUX_DEFAULT} hugepagesz=1G hugepages=4 iommu=pt\"\n"
        );
        assert_eq!(parse_drop_in(&text), args);
        assert!(parse_drop_in("GRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\n").is_empty());
    }
}
