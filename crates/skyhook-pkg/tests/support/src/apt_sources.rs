// SPDX-License-Identifier: Apache-2.0
//! This machine's apt sources, so that the Debian roots of the chroot and VM tiers
//! come from wherever this machine gets its packages (a local mirror included) and no
//! mirror host is named here: the one serving a suite (for debootstrap; when this
//! machine has none, debootstrap's own default), and the `sources.list` lines of a
//! suite and its `-updates` and `-security` companions (for the VM guest's apt).

use std::path::Path;

/// One `deb` source: the repository URI and one suite it serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// The repository URI (`http://…/debian`).
    pub uri: String,
    /// The suite (`bookworm`, `bookworm-security`).
    pub suite: String,
}

/// The `deb` sources of one-line (`sources.list`) text.
pub fn parse_list(text: &str) -> Vec<Source> {
    text.lines()
        .filter_map(|line| {
            let mut words = line.split('#').next()?.split_whitespace();
            (words.next()? == "deb").then_some(())?;
            let mut word = words.next()?;
            if word.starts_with('[') {
                while !word.ends_with(']') {
                    word = words.next()?;
                }
                word = words.next()?;
            }
            Some(Source {
                uri: word.trim_end_matches('/').to_string(),
                suite: words.next()?.to_string(),
            })
        })
        .collect()
}

/// The `deb` sources of deb822 (`*.sources`) text.
pub fn parse_deb822(text: &str) -> Vec<Source> {
    let mut out = Vec::new();
    for stanza in text.split("\n\n") {
        let field = |name: &str| {
            stanza.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.trim()
                    .eq_ignore_ascii_case(name)
                    .then(|| v.split_whitespace().map(str::to_string).collect::<Vec<_>>())
            })
        };
        if !field("Types").unwrap_or_default().iter().any(|t| t == "deb")
            || field("Enabled").is_some_and(|v| v.first().is_some_and(|e| e == "no"))
        {
            continue;
        }
        for uri in field("URIs").unwrap_or_default() {
            for suite in field("Suites").unwrap_or_default() {
                out.push(Source {
                    uri: uri.trim_end_matches('/').to_string(),
                    suite,
                });
            }
        }
    }
    out
}

/// Every `deb` source of this machine (`/etc/apt/sources.list` and `sources.list.d`).
pub fn of_this_machine() -> Vec<Source> {
    let etc = Path::new("/etc/apt");
    let mut files = vec![etc.join("sources.list")];
    if let Ok(dir) = std::fs::read_dir(etc.join("sources.list.d")) {
        let mut more: Vec<_> = dir.flatten().map(|e| e.path()).collect();
        more.sort();
        files.extend(more);
    }
    files
        .iter()
        .filter_map(|f| Some((f, std::fs::read_to_string(f).ok()?)))
        .flat_map(|(f, text)| match f.extension().and_then(|e| e.to_str()) {
            Some("sources") => parse_deb822(&text),
            _ => parse_list(&text),
        })
        .collect()
}

/// The URI serving `suite` among `sources`.
pub fn mirror_of(sources: &[Source], suite: &str) -> Option<String> {
    sources.iter().find(|s| s.suite == suite).map(|s| s.uri.clone())
}

/// `sources.list` lines (component main) for `suite`, `suite-updates` and
/// `suite-security`, each from the source serving it; `main_mirror` replaces the
/// URI of the first two when given. Empty when `sources` serve none of them.
pub fn suite_lines(sources: &[Source], suite: &str, main_mirror: Option<&str>) -> String {
    [
        suite.to_string(),
        format!("{suite}-updates"),
        format!("{suite}-security"),
    ]
    .iter()
    .filter_map(|s| {
        let uri = match main_mirror {
            Some(m) if !s.ends_with("-security") => m.to_string(),
            _ => mirror_of(sources, s)?,
        };
        Some(format!("deb {uri} {s} main\n"))
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_formats_are_read() {
        let list = "# c\ndeb [arch=amd64 signed-by=/k.gpg] http://m.example/debian/ bookworm main\n\
                    deb-src http://m.example/debian bookworm main\ndeb http://m.example/sec bookworm-security main # x\n";
        assert_eq!(
            parse_list(list),
            [
                Source {
                    uri: "http://m.example/debian".into(),
                    suite: "bookworm".into()
                },
                Source {
                    uri: "http://m.example/sec".into(),
                    suite: "bookworm-security".into()
                },
            ]
        );
        let deb822 = "Types: deb\nURIs: http://m.example/debian\nSuites: bookworm bookworm-updates\nComponents: main\n\n\
                      Types: deb-src\nURIs: http://x.example/\nSuites: bookworm\n\n\
                      Types: deb\nURIs: http://off.example/\nSuites: sid\nEnabled: no\n";
        let s = parse_deb822(deb822);
        assert_eq!(s.len(), 2, "{s:?}");
        assert_eq!(
            mirror_of(&s, "bookworm-updates").as_deref(),
            Some("http://m.example/debian")
        );
        assert_eq!(mirror_of(&s, "sid"), None);
    }

    #[test]
    fn the_guests_lines_come_from_the_sources_serving_each_suite() {
        let s =
            parse_list("deb http://m.example/debian bookworm main\ndeb http://s.example/sec bookworm-security main\n");
        assert_eq!(
            suite_lines(&s, "bookworm", None),
            "deb http://m.example/debian bookworm main\ndeb http://s.example/sec bookworm-security main\n"
        );
        assert_eq!(
            suite_lines(&s, "bookworm", Some("http://local/debian")),
            "deb http://local/debian bookworm main\ndeb http://local/debian bookworm-updates main\n\
             deb http://s.example/sec bookworm-security main\n"
        );
        assert_eq!(suite_lines(&[], "bookworm", None), "");
    }
}
