// SPDX-License-Identifier: Apache-2.0
//! Keyed kernel arguments (`crashkernel=…`, `hugepages=…`): one key's tokens on a
//! command line, the same key edited in a shell assignment of `/etc/default/grub`
//! (`GRUB_CMDLINE_LINUX="… crashkernel=256M …"`), and grubby's boot entries with the
//! kernel each belongs to, so a package can change one key on some kernels and put
//! back what was there before. Complements [`crate::bootloader`], which detects the
//! boot configuration and regenerates it.

use crate::bootloader::split_cmdline;
use crate::command::Cmd;
use crate::error::Result;
use crate::host::Host;

/// The GRUB defaults file, sourced by `grub-mkconfig` / `grub2-mkconfig`.
pub const GRUB_DEFAULTS: &str = "/etc/default/grub";

/// The key of a kernel argument: `crashkernel` for `crashkernel=256M`, the whole
/// argument when it has no `=`.
pub fn key_of(arg: &str) -> &str {
    arg.split_once('=').map_or(arg, |(k, _)| k)
}

/// The arguments of `args` whose key is `key`, in command-line order (whole tokens:
/// `crashkernel=1256M` is not `crashkernel=256M`).
pub fn with_key<'a>(args: &'a [String], key: &str) -> Vec<&'a str> {
    args.iter().map(String::as_str).filter(|a| key_of(a) == key).collect()
}

/// One boot entry as grubby reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrubbyEntry {
    /// The kernel image (`/boot/vmlinuz-5.14.0-427.el9.x86_64`), as `--update-kernel` takes it.
    pub kernel: String,
    /// The entry's kernel arguments.
    pub args: Vec<String>,
}

/// Parses `grubby --info=ALL` output into entries (an entry without `kernel=` is skipped).
pub fn parse_grubby_info(text: &str) -> Vec<GrubbyEntry> {
    let mut entries = Vec::new();
    let mut kernel: Option<String> = None;
    let mut args: Vec<String> = Vec::new();
    let mut flush = |kernel: &mut Option<String>, args: &mut Vec<String>| {
        if let Some(k) = kernel.take() {
            entries.push(GrubbyEntry {
                kernel: k,
                args: std::mem::take(args),
            });
        }
        args.clear();
    };
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with("index=") {
            flush(&mut kernel, &mut args);
        } else if let Some(k) = line.strip_prefix("kernel=") {
            kernel = Some(k.trim_matches('"').to_string());
        } else if let Some(a) = line.strip_prefix("args=") {
            args = split_cmdline(a.trim_matches('"'));
        }
    }
    flush(&mut kernel, &mut args);
    entries
}

/// Every boot entry grubby knows, with its kernel (`grubby --info=ALL`).
pub fn grubby_entries(host: &Host) -> Result<Vec<GrubbyEntry>> {
    let out = host.run_ok(&Cmd::new("grubby").arg("--info=ALL"))?;
    Ok(parse_grubby_info(&out.stdout))
}

/// `grubby --update-kernel=<kernel> --args=<add> --remove-args=<remove>`: `kernel` is
/// a kernel path or `ALL`. grubby replaces an argument whose key is already present,
/// and removes `key=value` only where the value matches (`key` alone: any value).
pub fn grubby_update(host: &Host, kernel: &str, add: &[String], remove: &[String]) -> Result<()> {
    let mut cmd = Cmd::new("grubby").arg(format!("--update-kernel={kernel}"));
    if !add.is_empty() {
        cmd = cmd.arg(format!("--args={}", add.join(" ")));
    }
    if !remove.is_empty() {
        cmd = cmd.arg(format!("--remove-args={}", remove.join(" ")));
    }
    log::info!("updating boot entries: {}", cmd.display());
    host.run_ok(&cmd)?;
    Ok(())
}

/// Where the value of the last `var=` assignment sits in `text`: the line index and
/// the byte range of the value inside that line (without its quotes).
fn find_assignment(text: &str, var: &str) -> Option<(usize, std::ops::Range<usize>)> {
    let prefix = format!("{var}=");
    let (index, line) = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.trim_start().starts_with(&prefix))
        .last()?;
    let start = line.len() - line.trim_start().len() + prefix.len();
    let rest = &line[start..];
    let range = match rest.chars().next() {
        Some(q @ ('"' | '\'')) => {
            let close = rest[1..].rfind(q).map_or(rest.len(), |i| i + 1);
            start + 1..start + close
        }
        _ => start..start + rest.find(char::is_whitespace).unwrap_or(rest.len()),
    };
    Some((index, range))
}

/// The arguments of the last `var=` assignment in `text` (`None` when there is none).
pub fn assignment_args(text: &str, var: &str) -> Option<Vec<String>> {
    let (index, range) = find_assignment(text, var)?;
    let line = text.lines().nth(index)?;
    Some(split_cmdline(&line[range]))
}

/// Sets the arguments with key `key` in the last `var=` assignment of `text` to
/// `token` (`None`: removes them). The first one is replaced in place, any further one
/// removed, so exactly one remains; without one, `token` is appended at the end of
/// the value; without an assignment, a line `var="token"` is added. Everything else
/// in `text` is kept byte for byte, so that setting the previous token back restores
/// the previous text.
pub fn set_assignment_key(text: &str, var: &str, key: &str, token: Option<&str>) -> String {
    let Some((index, range)) = find_assignment(text, var) else {
        return match token {
            None => text.to_string(),
            Some(t) => {
                let mut out = text.to_string();
                if !out.is_empty() && !out.ends_with('\n') {
                    out.push('\n');
                }
                out.push_str(&format!("{var}=\"{t}\"\n"));
                out
            }
        };
    };
    let mut out = String::with_capacity(text.len() + 32);
    for (i, line) in text.split_inclusive('\n').enumerate() {
        if i != index {
            out.push_str(line);
            continue;
        }
        let mut value = edit_value(&line[range.clone()], key, token);
        let quoted = range.start > 0 && matches!(line.as_bytes()[range.start - 1], b'"' | b'\'');
        if !quoted && value.contains(char::is_whitespace) {
            // An unquoted value that now holds several words needs quotes to stay one.
            value = format!("\"{value}\"");
        }
        out.push_str(&line[..range.start]);
        out.push_str(&value);
        out.push_str(&line[range.end..]);
    }
    out
}

/// Edits one key in a space-separated value, keeping the rest of it intact: the first
/// word with the key is replaced by `token` (or removed), further ones are removed, each
/// removed word taking the whitespace that separated it from the kept words before it.
fn edit_value(value: &str, key: &str, token: Option<&str>) -> String {
    let words = word_spans(value);
    let Some(first) = words.iter().position(|w| key_of(&value[w.clone()]) == key) else {
        return match token {
            None => value.to_string(),
            Some(t) if value.is_empty() || value.ends_with(char::is_whitespace) => format!("{value}{t}"),
            Some(t) => format!("{value} {t}"),
        };
    };
    // (range to replace, replacement) in order; an empty replacement is a cut.
    let mut edits: Vec<(std::ops::Range<usize>, &str)> = Vec::new();
    let mut kept_before = false;
    for (i, w) in words.iter().enumerate() {
        let matches = key_of(&value[w.clone()]) == key;
        if !matches {
            kept_before = true;
            continue;
        }
        if i == first
            && let Some(t) = token
        {
            edits.push((w.clone(), t));
            kept_before = true;
            continue;
        }
        if kept_before {
            let ws_start = value[..w.start].trim_end_matches(char::is_whitespace).len();
            edits.push((ws_start..w.end, ""));
        } else {
            let after = &value[w.end..];
            let ws_len = after.len() - after.trim_start_matches(char::is_whitespace).len();
            edits.push((w.start..w.end + ws_len, ""));
        }
    }
    let mut out = String::with_capacity(value.len() + 16);
    let mut pos = 0;
    for (range, replacement) in edits {
        out.push_str(&value[pos..range.start]);
        out.push_str(replacement);
        pos = range.end;
    }
    out.push_str(&value[pos..]);
    out
}

/// The byte ranges of the whitespace-separated words of `value`.
fn word_spans(value: &str) -> Vec<std::ops::Range<usize>> {
    let mut spans = Vec::new();
    let mut start = None;
    for (i, c) in value.char_indices() {
        match (c.is_whitespace(), start) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::{Output, RecordingRunner};

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn finds_whole_tokens_by_key() {
        let args = s(&[
            "ro",
            "crashkernel=1256M",
            "quiet",
            "crashkernel=256M,high",
            "crashkernelx=1",
        ]);
        assert_eq!(
            with_key(&args, "crashkernel"),
            ["crashkernel=1256M", "crashkernel=256M,high"]
        );
        assert_eq!(key_of("quiet"), "quiet");
    }

    #[test]
    fn parses_grubby_info_with_kernels() {
        let text = "index=0\nkernel=\"/boot/vmlinuz-5.14.0-427.el9.x86_64\"\nargs=\"ro crashkernel=1G-4G:192M,4G-64G:256M,64G-:512M rhgb quiet\"\nroot=\"/dev/mapper/rl-root\"\ninitrd=\"/boot/initramfs.img\"\ntitle=\"Rocky\"\nid=\"x\"\nindex=1\nkernel=\"/boot/vmlinuz-0-rescue-abc\"\nargs=\"ro\"\n";
        let e = parse_grubby_info(text);
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].kernel, "/boot/vmlinuz-5.14.0-427.el9.x86_64");
        assert_eq!(
            with_key(&e[0].args, "crashkernel"),
            ["crashkernel=1G-4G:192M,4G-64G:256M,64G-:512M"]
        );
        assert_eq!(e[1].args, ["ro"]);
    }

    #[test]
    fn grubby_update_passes_arguments_without_a_shell() {
        let d = tempfile::tempdir().unwrap();
        let r = std::sync::Arc::new(RecordingRunner::new(|_| Ok(Output::exited(0, ""))));
        let h = Host::new(d.path(), r.clone());
        grubby_update(&h, "ALL", &s(&["crashkernel=256M"]), &[]).unwrap();
        grubby_update(&h, "/boot/vmlinuz-1", &[], &s(&["crashkernel=256M"])).unwrap();
        assert_eq!(
            r.calls(),
            [
                "grubby --update-kernel=ALL --args=crashkernel=256M",
                "grubby --update-kernel=/boot/vmlinuz-1 --remove-args=crashkernel=256M"
            ]
        );
    }

    #[test]
    fn edits_one_key_and_round_trips_byte_for_byte() {
        let original = "GRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX=\"rd.lvm.lv=rl/root crashkernel=1G-4G:192M,4G-64G:256M,64G-:512M rhgb quiet\"\nGRUB_DISABLE_RECOVERY=\"true\"\n";
        let ours = set_assignment_key(original, "GRUB_CMDLINE_LINUX", "crashkernel", Some("crashkernel=256M"));
        assert_eq!(
            ours,
            "GRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX=\"rd.lvm.lv=rl/root crashkernel=256M rhgb quiet\"\nGRUB_DISABLE_RECOVERY=\"true\"\n"
        );
        assert_eq!(
            assignment_args(&ours, "GRUB_CMDLINE_LINUX").unwrap(),
            s(&["rd.lvm.lv=rl/root", "crashkernel=256M", "rhgb", "quiet"])
        );
        let back = set_assignment_key(
            &ours,
            "GRUB_CMDLINE_LINUX",
            "crashkernel",
            Some("crashkernel=1G-4G:192M,4G-64G:256M,64G-:512M"),
        );
        assert_eq!(back, original);
    }

    #[test]
    fn appends_and_removes_exactly_what_it_added() {
        for original in [
            "GRUB_CMDLINE_LINUX=\"rhgb quiet\"\n",
            "GRUB_CMDLINE_LINUX=\"\"\n",
            "GRUB_CMDLINE_LINUX='quiet'\n",
        ] {
            let ours = set_assignment_key(original, "GRUB_CMDLINE_LINUX", "crashkernel", Some("crashkernel=256M"));
            assert_eq!(
                assignment_args(&ours, "GRUB_CMDLINE_LINUX")
                    .unwrap()
                    .last()
                    .map(String::as_str),
                Some("crashkernel=256M"),
                "{ours}"
            );
            assert_eq!(
                set_assignment_key(&ours, "GRUB_CMDLINE_LINUX", "crashkernel", None),
                original
            );
        }
        assert_eq!(
            set_assignment_key(
                "X=1\nGRUB_CMDLINE_LINUX=quiet\n",
                "GRUB_CMDLINE_LINUX",
                "crashkernel",
                Some("crashkernel=256M")
            ),
            "X=1\nGRUB_CMDLINE_LINUX=\"quiet crashkernel=256M\"\n",
            "an unquoted value gains quotes when it gains a word"
        );
        let text = "GRUB_CMDLINE_LINUX=\"crashkernel=1G quiet crashkernel=2G\"\n";
        assert_eq!(
            set_assignment_key(text, "GRUB_CMDLINE_LINUX", "crashkernel", Some("crashkernel=256M")),
            "GRUB_CMDLINE_LINUX=\"crashkernel=256M quiet\"\n",
            "exactly one remains"
        );
        assert_eq!(
            set_assignment_key(text, "GRUB_CMDLINE_LINUX", "crashkernel", None),
            "GRUB_CMDLINE_LINUX=\"quiet\"\n"
        );
        assert_eq!(
            set_assignment_key(
                "GRUB_TIMEOUT=5",
                "GRUB_CMDLINE_LINUX",
                "crashkernel",
                Some("crashkernel=256M")
            ),
            "GRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX=\"crashkernel=256M\"\n"
        );
        assert_eq!(
            set_assignment_key("GRUB_TIMEOUT=5\n", "GRUB_CMDLINE_LINUX", "crashkernel", None),
            "GRUB_TIMEOUT=5\n"
        );
    }
}
