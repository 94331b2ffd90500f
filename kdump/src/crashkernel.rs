// SPDX-License-Identifier: Apache-2.0
//! The `crashkernel=` value: the kernel's own syntax (Documentation/admin-guide/kdump),
//! parsed strictly, and the memory it reserves on a node of a given size.
//!
//! Accepted forms:
//! - `size[@offset]`: `256M`, `1G`, `512M@16M`;
//! - `range:size[,range:size…][@offset]`, a range being `start-[end]`:
//!   `1G-4G:192M,4G-64G:256M,64G-:512M`; the first range holding the memory applies;
//! - `size,high`: above 4 GiB where the node has memory there (arm64 and x86_64),
//!   with the kernel's default low region beside it (arm64: 128 MiB; x86_64: at
//!   least 256 MiB), or with the low region given: `size,high size,low`, two
//!   values, which become two arguments (`crashkernel=1G,high crashkernel=128M,low`);
//!   `0,low` reserves no low region. `,low` alone is refused: the kernel ignores it
//!   without `,high` (Documentation/admin-guide/kernel-parameters.txt);
//! - `auto` (older RHEL kernels only).
//!
//! The kernel takes `,high` and `,low` as a size alone: no `@offset`, no range list.
//! Sizes are what the kernel's `memparse` reads: a decimal or `0x` hexadecimal number
//! with an optional `K`, `M`, `G`, `T`, `P` or `E` suffix (either case). A decimal with
//! a leading zero is refused: the kernel would read it as octal.

use std::fmt;

/// A parsed `crashkernel=` value, kept with the text it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrashKernel {
    text: String,
    form: Form,
}

/// The forms of the value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Form {
    /// `auto`: the kernel chooses (RHEL 8 and older kernels only).
    Auto,
    /// `size[@offset]`.
    Fixed {
        /// Bytes reserved.
        size: u64,
        /// Physical start address, when given.
        offset: Option<u64>,
    },
    /// `range:size,…[@offset]`.
    Ranges {
        /// The ranges, in the order given.
        ranges: Vec<Range>,
        /// Physical start address, when given.
        offset: Option<u64>,
    },
    /// `size,high`: above 4 GiB, with the low region below 4 GiB the crash kernel's
    /// devices need: `low` as given (`size,low`), or the kernel's default (`None`).
    High {
        /// Bytes reserved by `,high`.
        size: u64,
        /// Bytes reserved by `,low`, when given.
        low: Option<u64>,
    },
}

/// One `start-[end]:size` entry of a range list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Range {
    /// Lowest memory size the entry applies to (inclusive).
    pub start: u64,
    /// Memory size from which it no longer applies (`None`: no end).
    pub end: Option<u64>,
    /// Bytes reserved on a node whose memory is in the range.
    pub size: u64,
}

impl CrashKernel {
    /// Parses a `crashkernel=` value (without `crashkernel=`); the error says why it
    /// is refused.
    pub fn parse(text: &str) -> Result<Self, String> {
        let form = match values(text).as_slice() {
            [] => return Err("the value is empty".into()),
            [one] => parse_value(one)?,
            [a, b] => parse_pair(a, b)?,
            more => {
                return Err(format!(
                    "{} values separated by ' ': only a ,high reservation and its ,low one go together \
                     (\"1G,high 128M,low\")",
                    more.len()
                ));
            }
        };
        // The one rule for every argument written to the boot configuration.
        for token in tokens_of(text) {
            skyhook_core::boot::check_arg(&token)?;
        }
        Ok(CrashKernel {
            text: text.to_string(),
            form,
        })
    }

    /// The value as given.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The kernel arguments: `crashkernel=<value>`, one per value
    /// (`crashkernel=1G,high crashkernel=128M,low`).
    pub fn tokens(&self) -> Vec<String> {
        tokens_of(&self.text)
    }

    /// The parsed form.
    pub fn form(&self) -> &Form {
        &self.form
    }

    /// The bytes of the main crash region on a node with `total` bytes of memory
    /// (for `,high`, its size; a `,low` region comes beside it, see
    /// [`CrashKernel::low`]); `None` for `auto`, which the kernel decides.
    pub fn reservation(&self, total: u64) -> Option<u64> {
        match &self.form {
            Form::Auto => None,
            Form::Fixed { size, .. } | Form::High { size, .. } => Some(*size),
            Form::Ranges { ranges, .. } => Some(
                ranges
                    .iter()
                    .find(|r| total >= r.start && r.end.is_none_or(|end| total < end))
                    .map_or(0, |r| r.size),
            ),
        }
    }
}

impl CrashKernel {
    /// The bytes of the `,low` region when the value gives one (`0` for `0,low`).
    pub fn low(&self) -> Option<u64> {
        match &self.form {
            Form::High { low, .. } => *low,
            _ => None,
        }
    }
}

/// Which `crashkernel=` the kernel reads an argument as: each kind is taken from
/// the last argument of that kind, and `,high` (with its `,low`) is ignored when a
/// plain `crashkernel=X` is given (kernel-parameters.txt).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Plain,
    High,
    Low,
}

fn kind(token: &str) -> Kind {
    if token.ends_with(",high") {
        Kind::High
    } else if token.ends_with(",low") {
        Kind::Low
    } else {
        Kind::Plain
    }
}

/// Why the kernel booted with the `crashkernel=` arguments `found` (in command-line
/// order) does not use `ours`, if it does not: missing, a later argument of the same
/// kind overriding one, or a plain `crashkernel=X` that makes it ignore `,high`.
pub fn not_in_effect(found: &[&str], ours: &[String]) -> Option<String> {
    if found.is_empty() {
        return Some("has no crashkernel=".to_string());
    }
    if !ours.iter().any(|o| found.contains(&o.as_str())) {
        return Some(format!("has {} instead", found.join(" ")));
    }
    for o in ours {
        let last = found.iter().rev().find(|f| kind(f) == kind(o));
        match last {
            None => return Some(format!("has {} but not {o}", found.join(" "))),
            Some(l) if *l != o => {
                return Some(format!(
                    "has {o}, but a later {l} overrides it (the kernel uses the last one); remove the other \
                     crashkernel= from the boot configuration"
                ));
            }
            Some(_) => {}
        }
    }
    let high = ours.iter().any(|o| kind(o) == Kind::High);
    match found.iter().find(|f| kind(f) == Kind::Plain) {
        Some(plain) if high => Some(format!(
            "has {}, but also {plain}, and the kernel ignores ,high (and ,low) when crashkernel=X is given; \
             remove {plain} from the boot configuration",
            ours.join(" ")
        )),
        _ => None,
    }
}

/// The values of a configMap `crashkernel` text, separated by spaces.
fn values(text: &str) -> Vec<&str> {
    text.split(' ').filter(|v| !v.is_empty()).collect()
}

/// The kernel arguments of a `crashkernel` text (as a record keeps it): one
/// `crashkernel=<value>` per value.
pub fn tokens_of(text: &str) -> Vec<String> {
    values(text).into_iter().map(|v| format!("crashkernel={v}")).collect()
}

impl fmt::Display for CrashKernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// One value; `,low` alone is refused, it only goes with `,high` ([`parse_pair`]).
fn parse_value(text: &str) -> Result<Form, String> {
    match parse_form(text)? {
        Parsed::Form(form) => Ok(form),
        Parsed::Low(_) => Err(format!(
            "{text:?} alone reserves nothing: the kernel reads crashkernel=Y,low only beside crashkernel=X,high; \
             give both (\"1G,high {text}\"), or one size (\"512M\")"
        )),
    }
}

/// Two values: a `,high` reservation and its `,low` one, in either order.
fn parse_pair(a: &str, b: &str) -> Result<Form, String> {
    match (parse_form(a), parse_form(b)) {
        (Ok(Parsed::Form(Form::High { size, .. })), Ok(Parsed::Low(low)))
        | (Ok(Parsed::Low(low)), Ok(Parsed::Form(Form::High { size, .. }))) => Ok(Form::High { size, low: Some(low) }),
        (first, second) => {
            let why = [first.err(), second.err()].into_iter().flatten().next();
            Err(format!(
                "{a:?} and {b:?}: values separated by ' ' go together only as a ,high reservation and its ,low one \
                 (\"1G,high 128M,low\"){}",
                why.map(|w| format!("; {w}")).unwrap_or_default()
            ))
        }
    }
}

/// One value parsed: a form of its own, or a `,low` size (which needs a `,high`).
enum Parsed {
    Form(Form),
    Low(u64),
}

fn parse_form(text: &str) -> Result<Parsed, String> {
    if text.is_empty() {
        return Err("the value is empty".into());
    }
    if let Some(rest) = text.strip_prefix("crashkernel=") {
        return Err(format!(
            "give the value without \"crashkernel=\" (for example {rest:?}): the package adds the key itself"
        ));
    }
    if let Some(c) = text
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | ':' | ',' | '@')))
    {
        return Err(format!(
            "{c:?} is not part of the kernel's crashkernel syntax (digits, K/M/G suffixes, '-', ':', ',', '@', \
             \"high\", \"low\", \"auto\")"
        ));
    }
    if text == "auto" {
        return Ok(Parsed::Form(Form::Auto));
    }
    if let Some(size) = text.strip_suffix(",high") {
        let size = whole_size(size, "the size before \",high\"")?;
        if size == 0 {
            return Err("0,high reserves nothing".into());
        }
        return Ok(Parsed::Form(Form::High { size, low: None }));
    }
    if let Some(size) = text.strip_suffix(",low") {
        return Ok(Parsed::Low(whole_size(size, "the size before \",low\"")?));
    }
    let (main, offset) = match text.split_once('@') {
        None => (text, None),
        Some((main, offset)) => (main, Some(whole_size(offset, "the offset after '@'")?)),
    };
    if main.contains(':') {
        let mut ranges = Vec::new();
        for (i, entry) in main.split(',').enumerate() {
            ranges.push(parse_range(entry).map_err(|e| format!("range {} ({entry:?}): {e}", i + 1))?);
        }
        return Ok(Parsed::Form(Form::Ranges { ranges, offset }));
    }
    if main.contains(',') {
        return Err(
            "a ',' belongs either to a range list (1G-4G:192M,4G-:256M) or to the ,high / ,low forms (512M,high)"
                .into(),
        );
    }
    let size = whole_size(main, "the size")?;
    if size == 0 {
        return Err("0 reserves nothing; remove the key to keep the distribution's setting".into());
    }
    Ok(Parsed::Form(Form::Fixed { size, offset }))
}

fn parse_range(entry: &str) -> Result<Range, String> {
    let (range, size) = entry
        .split_once(':')
        .ok_or("expected start-[end]:size (each entry of a range list needs its ':')")?;
    let (start, end) = range.split_once('-').ok_or("expected start-[end] before ':'")?;
    let start = whole_size(start, "the start of the range")?;
    let end = if end.is_empty() {
        None
    } else {
        Some(whole_size(end, "the end of the range")?)
    };
    if let Some(e) = end
        && e <= start
    {
        return Err("the end of the range must be above its start".into());
    }
    let size = whole_size(size, "the size after ':'")?;
    Ok(Range { start, end, size })
}

/// The whole of `text` as one size, or why not (`what` names it in the message).
fn whole_size(text: &str, what: &str) -> Result<u64, String> {
    let (value, rest) = memparse(text).map_err(|e| format!("{what} {text:?}: {e}"))?;
    if !rest.is_empty() {
        return Err(format!("{what} {text:?}: unexpected {rest:?} after {value} bytes"));
    }
    Ok(value)
}

/// Reads a size at the start of `text` the way the kernel's `memparse` does (decimal or
/// `0x` hexadecimal, optional K/M/G/T/P/E suffix); returns it and the rest of `text`.
fn memparse(text: &str) -> Result<(u64, &str), String> {
    let (digits, radix, body) = if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        let n = hex.find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(hex.len());
        (&hex[..n], 16, hex)
    } else {
        let n = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
        (&text[..n], 10, text)
    };
    if digits.is_empty() {
        return Err("a number is expected".into());
    }
    if radix == 10 && digits.len() > 1 && digits.starts_with('0') {
        return Err("a leading zero makes the kernel read the number as octal; write it without".into());
    }
    let number = u64::from_str_radix(digits, radix).map_err(|_| "the number is too large".to_string())?;
    let rest = &body[digits.len()..];
    let shift = match rest.chars().next() {
        Some('K' | 'k') => 10,
        Some('M' | 'm') => 20,
        Some('G' | 'g') => 30,
        Some('T' | 't') => 40,
        Some('P' | 'p') => 50,
        Some('E' | 'e') => 60,
        _ => return Ok((number, rest)),
    };
    let value = number
        .checked_mul(1u64 << shift)
        .ok_or_else(|| "the size is too large".to_string())?;
    Ok((value, &rest[1..]))
}

/// A byte count for people (the project's one printer): `256 MiB`, `1.5 GiB`.
pub use skyhook_core::formats::human::size as human;

#[cfg(test)]
mod tests {
    use super::*;

    const K: u64 = 1 << 10;
    const M: u64 = 1 << 20;
    const G: u64 = 1 << 30;

    fn form(text: &str) -> Form {
        CrashKernel::parse(text)
            .unwrap_or_else(|e| panic!("{text:?} refused: {e}"))
            .form
    }

    #[test]
    fn accepts_every_form_of_the_kernel_syntax() {
        assert_eq!(
            form("256M"),
            Form::Fixed {
                size: 256 * M,
                offset: None
            }
        );
        assert_eq!(form("1G"), Form::Fixed { size: G, offset: None });
        assert_eq!(
            form("131072K"),
            Form::Fixed {
                size: 128 * M,
                offset: None
            }
        );
        assert_eq!(
            form("268435456"),
            Form::Fixed {
                size: 256 * M,
                offset: None
            }
        );
        assert_eq!(
            form("512m"),
            Form::Fixed {
                size: 512 * M,
                offset: None
            }
        );
        assert_eq!(
            form("0x10000000"),
            Form::Fixed {
                size: 256 * M,
                offset: None
            }
        );
        assert_eq!(
            form("512M@16M"),
            Form::Fixed {
                size: 512 * M,
                offset: Some(16 * M)
            }
        );
        assert_eq!(
            form("256M@0x1000000"),
            Form::Fixed {
                size: 256 * M,
                offset: Some(16 * M)
            }
        );
        assert_eq!(
            form("1G-4G:192M,4G-64G:256M,64G-:512M"),
            Form::Ranges {
                ranges: vec![
                    Range {
                        start: G,
                        end: Some(4 * G),
                        size: 192 * M
                    },
                    Range {
                        start: 4 * G,
                        end: Some(64 * G),
                        size: 256 * M
                    },
                    Range {
                        start: 64 * G,
                        end: None,
                        size: 512 * M
                    },
                ],
                offset: None
            }
        );
        assert_eq!(
            form("384M-:128M"),
            Form::Ranges {
                ranges: vec![Range {
                    start: 384 * M,
                    end: None,
                    size: 128 * M
                }],
                offset: None
            }
        );
        assert_eq!(
            form("0-2G:0,2G-:256M@64M"),
            Form::Ranges {
                ranges: vec![
                    Range {
                        start: 0,
                        end: Some(2 * G),
                        size: 0
                    },
                    Range {
                        start: 2 * G,
                        end: None,
                        size: 256 * M
                    }
                ],
                offset: Some(64 * M)
            }
        );
        assert_eq!(
            form("512M,high"),
            Form::High {
                size: 512 * M,
                low: None
            }
        );
        assert_eq!(
            form("1T,high"),
            Form::High {
                size: 1 << 40,
                low: None
            }
        );
        assert_eq!(form("auto"), Form::Auto);
        assert_eq!(CrashKernel::parse("2G-:1G").unwrap().tokens(), ["crashkernel=2G-:1G"]);
        assert_eq!(
            form("64K"),
            Form::Fixed {
                size: 64 * K,
                offset: None
            }
        );
    }

    /// The forms an arm64 kernel accepts (kernel-parameters.txt: `,high` and `,low`
    /// on ARM64 too), each carried as the arguments the boot configuration gets.
    #[test]
    fn arm64_forms_and_the_arguments_they_become() {
        for (text, expected, tokens) in [
            (
                "512M,high",
                Form::High {
                    size: 512 * M,
                    low: None,
                },
                &["crashkernel=512M,high"][..],
            ),
            (
                "1G,high 128M,low",
                Form::High {
                    size: G,
                    low: Some(128 * M),
                },
                &["crashkernel=1G,high", "crashkernel=128M,low"][..],
            ),
            (
                "128M,low 1G,high",
                Form::High {
                    size: G,
                    low: Some(128 * M),
                },
                &["crashkernel=128M,low", "crashkernel=1G,high"][..],
            ),
            (
                "2G,high 0,low",
                Form::High {
                    size: 2 * G,
                    low: Some(0),
                },
                &["crashkernel=2G,high", "crashkernel=0,low"][..],
            ),
            (
                "1G-4G:256M,4G-64G:512M,64G-:1G",
                Form::Ranges {
                    ranges: vec![
                        Range {
                            start: G,
                            end: Some(4 * G),
                            size: 256 * M,
                        },
                        Range {
                            start: 4 * G,
                            end: Some(64 * G),
                            size: 512 * M,
                        },
                        Range {
                            start: 64 * G,
                            end: None,
                            size: G,
                        },
                    ],
                    offset: None,
                },
                &["crashkernel=1G-4G:256M,4G-64G:512M,64G-:1G"][..],
            ),
            (
                "512M@0x80000000",
                Form::Fixed {
                    size: 512 * M,
                    offset: Some(2 * G),
                },
                &["crashkernel=512M@0x80000000"][..],
            ),
        ] {
            let ck = CrashKernel::parse(text).unwrap_or_else(|e| panic!("{text:?} refused: {e}"));
            assert_eq!(ck.form(), &expected, "{text}");
            assert_eq!(ck.tokens(), tokens, "{text}");
        }
        let pair = CrashKernel::parse("1G,high 128M,low").unwrap();
        assert_eq!((pair.reservation(64 * G), pair.low()), (Some(G), Some(128 * M)));
        assert_eq!(
            CrashKernel::parse("512M,high").unwrap().low(),
            None,
            "the kernel's default low region"
        );
    }

    #[test]
    fn tells_which_crashkernel_arguments_the_kernel_uses() {
        let ours = |t: &str| tokens_of(t);
        for (found, value, why) in [
            (&["crashkernel=256M"][..], "256M", None),
            (
                &["crashkernel=1G,high", "crashkernel=128M,low"][..],
                "1G,high 128M,low",
                None,
            ),
            (
                &["crashkernel=128M,low", "crashkernel=1G,high"][..],
                "1G,high 128M,low",
                None,
            ),
            (
                &["crashkernel=512M,high", "crashkernel=256M,low"][..],
                "512M,high",
                None,
            ),
            (&["crashkernel=256M", "crashkernel=512M,high"][..], "256M", None),
            (&[][..], "256M", Some("has no crashkernel=")),
            (&["crashkernel=512M"][..], "256M", Some("has crashkernel=512M instead")),
            (
                &["crashkernel=256M", "crashkernel=1G"][..],
                "256M",
                Some("a later crashkernel=1G overrides"),
            ),
            (
                &["crashkernel=1G,high", "crashkernel=128M,low", "crashkernel=64M,low"][..],
                "1G,high 128M,low",
                Some("a later crashkernel=64M,low overrides"),
            ),
            (
                &["crashkernel=1G,high"][..],
                "1G,high 128M,low",
                Some("not crashkernel=128M,low"),
            ),
            (
                &["crashkernel=384M-:128M", "crashkernel=1G,high"][..],
                "1G,high",
                Some("ignores ,high (and ,low) when crashkernel=X is given; remove crashkernel=384M-:128M"),
            ),
        ] {
            let got = not_in_effect(found, &ours(value));
            match why {
                None => assert_eq!(got, None, "{found:?} {value}"),
                Some(why) => assert!(
                    got.as_deref().is_some_and(|g| g.contains(why)),
                    "{found:?} {value}: {got:?} lacks {why:?}"
                ),
            }
        }
    }

    #[test]
    fn refuses_what_the_kernel_ignores_or_refuses_on_arm64() {
        for (text, why) in [
            ("128M,low", "alone reserves nothing"),
            ("0,low", "alone reserves nothing"),
            (
                "1G,high 512M",
                "go together only as a ,high reservation and its ,low one",
            ),
            ("512M 128M,low", "go together only"),
            ("1G,high 2G,high", "go together only"),
            ("128M,low 64M,low", "go together only"),
            ("1G,high 128M,low 64M,low", "3 values"),
            ("1G,high@4G", "or to the ,high / ,low forms"),
            ("1G-4G:256M,high", "the size before \",high\""),
            ("1G,high 128M@16M,low", "the size before \",low\""),
            ("1G,high\t128M,low", "'\\t'"),
        ] {
            let e = CrashKernel::parse(text).expect_err(text);
            assert!(e.contains(why), "{text:?}: {e:?} lacks {why:?}");
        }
    }

    #[test]
    fn refuses_everything_else_saying_why() {
        for (text, why) in [
            ("", "empty"),
            ("crashkernel=256M", "without \"crashkernel=\""),
            ("256 M", "' '"),
            ("256M\n", "'\\n'"),
            ("256M;reboot", "';'"),
            ("$(reboot)", "'$'"),
            ("`id`", "'`'"),
            ("256M\"", "'\"'"),
            ("256X", "unexpected \"X\""),
            ("256MB", "unexpected \"B\""),
            ("M", "a number is expected"),
            ("-256M", "a number is expected"),
            ("0", "reserves nothing"),
            ("0M", "reserves nothing"),
            ("0,high", "reserves nothing"),
            ("0256M", "octal"),
            ("256M@", "the offset"),
            ("256M@x", "the offset"),
            ("256M@16M@32M", "unexpected \"@32M\""),
            ("256M,128M", "range list"),
            ("256M,middle", "range list"),
            ("256M,high,low", "the size before \",low\""),
            ("256M@16M,high", "unexpected \"@16M\""),
            ("1G-4G:192M,4G-64G", "range 2"),
            ("1G-4G", "unexpected \"-4G\""),
            ("1G:256M", "start-[end] before ':'"),
            ("4G-1G:256M", "above its start"),
            ("4G-4G:256M", "above its start"),
            ("1G-4G:", "the size after ':'"),
            ("-4G:256M", "the start of the range"),
            ("1G-4G:192M,", "range 2"),
            ("auto,high", "the size before"),
            ("AUTO", "a number is expected"),
            ("99999999999999999999", "too large"),
            ("17179869184G", "too large"),
            ("1G-4G:192M,high", "the size before \",high\""),
        ] {
            let e = CrashKernel::parse(text).expect_err(text);
            assert!(e.contains(why), "{text:?}: {e:?} lacks {why:?}");
        }
    }

    #[test]
    fn reservation_follows_the_range_holding_the_memory() {
        let ck = CrashKernel::parse("1G-4G:192M,4G-64G:256M,64G-:512M").unwrap();
        assert_eq!(ck.reservation(512 * M), Some(0), "below every range");
        assert_eq!(ck.reservation(G), Some(192 * M), "start is inclusive");
        assert_eq!(ck.reservation(4 * G - 1), Some(192 * M));
        assert_eq!(ck.reservation(4 * G), Some(256 * M), "end is exclusive");
        assert_eq!(ck.reservation(2048 * G), Some(512 * M), "open end");
        let first_wins = CrashKernel::parse("0-:1G,0-:2G").unwrap();
        assert_eq!(first_wins.reservation(8 * G), Some(G));
        assert_eq!(CrashKernel::parse("256M@16M").unwrap().reservation(G), Some(256 * M));
        assert_eq!(CrashKernel::parse("2G,high").unwrap().reservation(G), Some(2 * G));
        assert_eq!(CrashKernel::parse("auto").unwrap().reservation(G), None);
    }
}
