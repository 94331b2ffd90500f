// SPDX-License-Identifier: Apache-2.0
//! Which tuned profile is active, and making the configMap's profile(s) active:
//! `tuned-adm profile …` where systemd runs; where it does not (a chroot, an image
//! being built) the profile is recorded the way tuned itself records it
//! (`/etc/tuned/active_profile` and `/etc/tuned/profile_mode` = `manual`, tuned's
//! `commands.save_active_profile`), and the daemon applies it when it starts.
//! `tuned-adm profile` is not usable there: without the daemon it tries to restart
//! tuned through `service tuned restart`.

use skyhook_core::host::command::Cmd;
use skyhook_core::host::systemd::Systemd;
use skyhook_core::{Error, Host, Result};

use crate::layout::Tuned;

/// The file where tuned keeps the selected profile(s), space-separated.
pub const ACTIVE_PROFILE: &str = "/etc/tuned/active_profile";
/// The file where tuned keeps how the profile was selected (`manual` or `auto`).
pub const PROFILE_MODE: &str = "/etc/tuned/profile_mode";
/// tuned's record of the kernel command line its bootloader plugin set.
pub const BOOTCMDLINE: &str = "/etc/tuned/bootcmdline";
/// tuned's log.
pub const LOG_FILE: &str = "/var/log/tuned/tuned.log";

/// What `tuned-adm active` reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Active {
    /// The daemon runs these profile(s).
    Running(Vec<String>),
    /// The daemon is not running; these profile(s) are selected for its start.
    Preset(Vec<String>),
    /// No profile is selected.
    Nothing,
}

impl std::fmt::Display for Active {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Active::Running(n) => write!(f, "tuned runs {:?}", n.join(" ")),
            Active::Preset(n) => write!(
                f,
                "the tuned daemon is not running; {:?} is preset for its start",
                n.join(" ")
            ),
            Active::Nothing => f.write_str("no profile is active"),
        }
    }
}

impl Active {
    /// Parses `tuned-adm active` output; a post-loaded profile (tuned adds it to the
    /// list) is left out.
    pub fn parse(output: &str) -> Active {
        let field = |prefix: &str| {
            output.lines().find_map(|l| {
                l.trim()
                    .strip_prefix(prefix)
                    .map(|v| v.split_whitespace().map(str::to_string).collect())
            })
        };
        let post: Vec<String> = field("Current post-loaded profile:")
            .or_else(|| field("Preset post-loaded profile:"))
            .unwrap_or_default();
        let strip = |mut names: Vec<String>| {
            if !post.is_empty() && names.ends_with(&post) && names.len() > post.len() {
                names.truncate(names.len() - post.len());
            }
            names
        };
        match (field("Current active profile:"), field("Preset profile:")) {
            (Some(names), _) => Active::Running(strip(names)),
            (None, Some(names)) => Active::Preset(strip(names)),
            (None, None) => Active::Nothing,
        }
    }
}

/// Asks `tuned-adm active` (which exits 1 when no profile is active).
pub fn query(host: &Host) -> Result<Active> {
    let out = host.run(&Cmd::new("tuned-adm").arg("active"))?;
    let active = Active::parse(&out.stdout);
    if active == Active::Nothing && !out.success() && !out.stdout.contains("No current active profile") {
        return Err(Error::action(format!(
            "`tuned-adm active` failed ({}): {}",
            out.status_text(),
            out.diagnostics().trim()
        )));
    }
    Ok(active)
}

/// The profile(s) recorded in `/etc/tuned/active_profile`.
pub fn recorded(host: &Host) -> Result<Option<Vec<String>>> {
    Ok(host
        .read_to_string(ACTIVE_PROFILE)?
        .map(|t| t.split_whitespace().map(str::to_string).collect()))
}

/// How activation went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    /// `tuned-adm profile` applied the profile(s).
    Applied,
    /// They were already active and no deployed file changed: nothing to do.
    AlreadyActive,
    /// No running systemd: recorded for tuned's next start.
    Recorded,
}

/// The column `tuned-adm list` starts a profile's summary at: `- <name>` is padded
/// with spaces to it, and a longer one is followed by `- <summary>` directly (tuned's
/// `align_str`, since tuned 2.6): `- nvidia-h100-multiNodeTraining- NVIDIA …`.
const LIST_SUMMARY_COLUMN: usize = 30;

/// The profile names `tuned-adm list` prints (`- name   - summary` lines, a name of
/// 28 characters or more running into its `- summary`).
pub fn parse_list(output: &str) -> Vec<String> {
    output
        .lines()
        .filter_map(|l| l.strip_prefix("- "))
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let first = words.next()?;
            let has_summary = words.next().is_some();
            let name = match first.strip_suffix('-') {
                Some(name) if has_summary && 2 + first.len() > LIST_SUMMARY_COLUMN => name,
                _ => first,
            };
            Some(name.to_string())
        })
        .collect()
}

/// Fails unless the installed tuned lists every profile of `names` (`tuned-adm
/// list`): a profile deployed where tuned does not look would otherwise fail to
/// activate, or activate a stock profile of the same name.
pub fn ensure_listed(host: &Host, tuned: &Tuned, names: &[String]) -> Result<()> {
    let out = host.run_ok(&Cmd::new("tuned-adm").arg("list"))?;
    let listed = parse_list(&out.stdout);
    let missing: Vec<&String> = names.iter().filter(|n| !listed.contains(n)).collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(Error::action(format!(
        "tuned does not know the profile(s) {} (`tuned-adm list` lists {} profiles, not these): this package \
         reads tuned's profile directories as {} ({}), and tuned itself looks elsewhere. Check profile_dirs in \
         /etc/tuned/tuned-main.conf and where the installed tuned package keeps its profiles; nothing was activated",
        missing.iter().map(|n| format!("{n:?}")).collect::<Vec<_>>().join(", "),
        listed.len(),
        tuned.dirs_text(),
        tuned.dirs_source
    )))
}

/// Makes `names` the active profile(s), once tuned lists them. `files_changed`: a
/// deployed profile or script changed, so the profile is re-applied even when its
/// name is already active.
pub fn activate(host: &Host, tuned: &Tuned, names: &[String], files_changed: bool) -> Result<Activation> {
    let joined = names.join(" ");
    if !Systemd::new(host).is_running() {
        host.write(ACTIVE_PROFILE, format!("{joined}\n").as_bytes(), 0o644)?;
        host.write(PROFILE_MODE, b"manual\n", 0o644)?;
        log::warn!(
            "systemd is not running on this host (chroot or image build), so tuned is not running: \
             recorded profile {joined:?} in {ACTIVE_PROFILE} (profile mode manual in {PROFILE_MODE}); \
             tuned applies it when it starts"
        );
        return Ok(Activation::Recorded);
    }
    if !files_changed && query(host)? == Active::Running(names.to_vec()) {
        log::info!("tuned profile {joined:?} is already active and no deployed file changed; not re-applied");
        return Ok(Activation::AlreadyActive);
    }
    ensure_listed(host, tuned, names)?;
    log::info!("activating tuned profile {joined:?}");
    let cmd = Cmd::new("tuned-adm").arg("profile").args(names).echo();
    if let Err(e) = host.run_ok(&cmd) {
        show_log(host, "tuned-adm profile");
        return Err(Error::action(format!(
            "{e}\ntuned could not switch to {joined:?}; tuned's log ({LOG_FILE}) explains why (relevant lines above)"
        )));
    }
    Ok(Activation::Applied)
}

/// Logs the lines of tuned's log that explain the last failure (see [`excerpt`]).
pub fn show_log(host: &Host, what: &str) {
    // The log grows without bound: its last 256 KiB hold the last verification.
    match host.read_tail(LOG_FILE, 256 << 10) {
        Ok(Some(tail)) => {
            let text = String::from_utf8_lossy(&tail);
            let lines = excerpt(&text, 40);
            if lines.is_empty() {
                log::warn!("{LOG_FILE} is empty; nothing explains the {what} failure there");
            } else {
                log::warn!("{what}: the relevant recent lines of {LOG_FILE}:");
                for l in lines {
                    log::warn!("  tuned.log: {l}");
                }
            }
        }
        Ok(None) => log::warn!("{LOG_FILE} does not exist; tuned wrote no log to explain the {what} failure"),
        Err(e) => log::warn!("cannot read {LOG_FILE}: {e}"),
    }
}

fn is_problem(line: &str) -> bool {
    [" ERROR ", " WARNING ", "verify: failed", "Traceback", "Exception"]
        .iter()
        .any(|p| line.contains(p))
}

/// The part of tuned's log that explains a failure, at most `max` lines: from the
/// last `verifying profile(s):` line (tuned writes it when verification starts), that
/// line and the errors and warnings after it; without that line, the last errors and
/// warnings; without any, the last lines.
pub fn excerpt(log: &str, max: usize) -> Vec<&str> {
    fn tail(v: Vec<&str>, max: usize) -> Vec<&str> {
        v[v.len().saturating_sub(max)..].to_vec()
    }
    let lines: Vec<&str> = log.lines().filter(|l| !l.trim().is_empty()).collect();
    if let Some(start) = lines.iter().rposition(|l| l.contains("verifying profile(s):")) {
        let problems: Vec<&str> = lines[start + 1..].iter().copied().filter(|l| is_problem(l)).collect();
        let rest = if problems.is_empty() {
            lines[start + 1..].to_vec()
        } else {
            problems
        };
        let mut out = vec![lines[start]];
        out.extend(tail(rest, max.saturating_sub(1)));
        return out;
    }
    let problems: Vec<&str> = lines.iter().copied().filter(|l| is_problem(l)).collect();
    if problems.is_empty() {
        tail(lines, max)
    } else {
        tail(problems, max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_tuned_adm_list() {
        let out = "Available profiles:\n- balanced                    - General non-specialized TuneD profile\n\
                   - mine\nCurrent active profile: balanced\n";
        assert_eq!(parse_list(out), ["balanced", "mine"]);
    }

    #[test]
    fn a_long_name_runs_into_its_summary_and_is_still_read_whole() {
        // As tuned's align_str prints them: "- <name>" padded to column 30, nothing past it.
        let names = [
            "nvidia-h100-multiNodeTraining",
            "exactly-twenty-eight-chars-x",
            "twenty-seven-chars-ending--",
            "twenty-nine-characters-ending-",
            "short",
        ];
        assert_eq!(names.map(str::len)[1..4], [28, 27, 30]);
        let mut out = String::from("Available profiles:\n");
        for n in names {
            out.push_str(&format!("{:<30}- Summary of {n}\n", format!("- {n}")));
        }
        out.push_str("- nvidia-gb200-multiNodeTraining\nCurrent active profile: short\n");
        assert!(out.contains("- nvidia-h100-multiNodeTraining- Summary"), "{out}");
        let mut want = names.to_vec();
        want.push("nvidia-gb200-multiNodeTraining");
        assert_eq!(parse_list(&out), want);
    }

    #[test]
    fn parses_tuned_adm_active() {
        assert_eq!(
            Active::parse("Current active profile: throughput-performance\n"),
            Active::Running(vec!["throughput-performance".into()])
        );
        assert_eq!(
            Active::parse("Current active profile: a b post\nCurrent post-loaded profile: post\n"),
            Active::Running(vec!["a".into(), "b".into()])
        );
        assert_eq!(
            Active::parse(
                "It seems that tuned daemon is not running, preset profile is not activated.\nPreset profile: balanced\n"
            ),
            Active::Preset(vec!["balanced".into()])
        );
        assert_eq!(Active::parse("No current active profile.\n"), Active::Nothing);
    }

    const LOG: &str = "\
2024-05-01 10:00:00,001 INFO     tuned.daemon.daemon: starting tuning
2024-05-01 10:00:00,002 ERROR    tuned.plugins.plugin_cpu: old unrelated error
2024-05-01 11:00:00,000 INFO     tuned.daemon.daemon: verifying profile(s): custom_profile
2024-05-01 11:00:00,001 INFO     tuned.plugins.base: verify: passed: 'vm.swappiness' = '10'
2024-05-01 11:00:00,002 ERROR    tuned.plugins.base: verify: failed: 'kernel.panic' = '0', expected '10'
2024-05-01 11:00:00,003 ERROR    tuned.plugins.plugin_bootloader: verify: failed: cmdline arg 'kernel.panic', expected '20'
2024-05-01 11:00:00,004 INFO     tuned.plugins.base: verify: passed: 'x' = 'y'
";

    #[test]
    fn excerpt_shows_the_last_verification_failures_only() {
        let e = excerpt(LOG, 40);
        assert_eq!(e.len(), 3, "{e:#?}");
        assert!(e[0].contains("verifying profile(s): custom_profile"));
        assert!(e[1].contains("'kernel.panic' = '0'"));
        assert!(e[2].contains("cmdline arg"));
        assert!(!e.iter().any(|l| l.contains("old unrelated")));
        assert_eq!(excerpt(LOG, 2).len(), 2, "capped");
    }

    #[test]
    fn excerpt_without_a_verification_marker_shows_recent_problems_or_the_tail() {
        let log = "a INFO x\nb ERROR    y: broken\nc INFO z\n";
        assert_eq!(excerpt(log, 10), ["b ERROR    y: broken"]);
        assert_eq!(excerpt("one\ntwo\nthree\n", 2), ["two", "three"]);
        assert!(excerpt("", 5).is_empty());
    }
}
