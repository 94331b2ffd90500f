// SPDX-License-Identifier: Apache-2.0
//! The package's own settings, read from the step's environment (the SCR's `env`
//! entries): the script's time limit and the grace period between the polite stop
//! (SIGTERM) and the forced one (SIGKILL). Both are validated before the script
//! starts; a malformed value is bad input (exit 2) that names the variable and value.

use std::time::Duration;

use skyhook_core::{Error, Result};

/// The time limit variable: the script is stopped after this long (exit 124).
pub const TIMEOUT_VAR: &str = "SHELLSCRIPT_TIMEOUT";
/// The grace period variable: how long a stopped script may take before it is killed.
pub const GRACE_VAR: &str = "SHELLSCRIPT_GRACE_PERIOD";
/// The grace period when `SHELLSCRIPT_GRACE_PERIOD` is not set: well inside the
/// 30 s Kubernetes gives a terminating pod, so the agent is not killed first.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(10);

/// A duration as the operator wrote it and as understood.
#[derive(Debug, Clone, PartialEq)]
pub struct Setting {
    /// The variable's name.
    pub var: &'static str,
    /// The value as written (`30m`).
    pub raw: String,
    /// The value understood.
    pub duration: Duration,
}

impl std::fmt::Display for Setting {
    /// `SHELLSCRIPT_TIMEOUT=30m (1800 s)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}={} ({})", self.var, self.raw, seconds(self.duration))
    }
}

/// The settings of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// The time limit; `None` when unset, empty or 0.
    pub timeout: Option<Setting>,
    /// The grace period (default [`DEFAULT_GRACE`]).
    pub grace: Setting,
}

impl Settings {
    /// The settings of the process environment.
    pub fn from_env() -> Result<Self> {
        Self::from_vars(|name| std::env::var_os(name).map(|v| v.to_string_lossy().into_owned()))
    }

    /// The settings read through `var` (the environment, or a map in tests). Every
    /// malformed value is reported, not only the first.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let mut problems = Vec::new();
        let mut read = |name: &'static str| -> Option<Setting> {
            let raw = var(name).filter(|v| !v.trim().is_empty())?;
            match parse_duration(&raw) {
                Ok(duration) => Some(Setting {
                    var: name,
                    raw: raw.trim().to_string(),
                    duration,
                }),
                Err(why) => {
                    problems.push(format!(
                        "environment variable {name}={raw:?} (from the SCR's env) is not a duration: {why}. \
                         Write seconds (300, 1.5) or a number with a unit s, m or h (90s, 30m, 2h)"
                    ));
                    None
                }
            }
        };
        let timeout = read(TIMEOUT_VAR).filter(|t| !t.duration.is_zero());
        let grace = read(GRACE_VAR);
        if !problems.is_empty() {
            return Err(Error::Input(problems));
        }
        Ok(Settings {
            timeout,
            grace: grace.unwrap_or(Setting {
                var: GRACE_VAR,
                raw: DEFAULT_GRACE.as_secs().to_string(),
                duration: DEFAULT_GRACE,
            }),
        })
    }
}

/// Parses `300`, `1.5`, `90s`, `30m`, `2h` (a non-negative decimal number of seconds,
/// minutes or hours).
pub fn parse_duration(text: &str) -> std::result::Result<Duration, String> {
    let text = text.trim();
    let (number, unit) = match text.char_indices().last() {
        Some((i, c @ ('s' | 'm' | 'h'))) => (&text[..i], c),
        _ => (text, 's'),
    };
    let well_formed = !number.is_empty()
        && !number.starts_with('.')
        && !number.ends_with('.')
        && number.bytes().filter(|&b| b == b'.').count() <= 1
        && number.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    if !well_formed {
        return Err("expected a non-negative number".into());
    }
    let value: f64 = number.parse().map_err(|e| format!("{e}"))?;
    let factor = match unit {
        'm' => 60.0,
        'h' => 3600.0,
        _ => 1.0,
    };
    Duration::try_from_secs_f64(value * factor).map_err(|_| "the value is too large".to_string())
}

/// `1.5 s`, `30 s`, `0.25 s`: a duration for messages.
pub fn seconds(d: Duration) -> String {
    let s = format!("{:.3}", d.as_secs_f64());
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s} s")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An environment holding exactly `pairs`.
    fn vars<'a>(pairs: &'a [(&str, &str)]) -> impl Fn(&str) -> Option<String> + 'a {
        |name| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
    }

    #[test]
    fn parses_seconds_and_units() {
        for (text, secs) in [
            ("300", 300.0),
            ("1.5", 1.5),
            (" 90s ", 90.0),
            ("30m", 1800.0),
            ("2h", 7200.0),
            ("0", 0.0),
            ("0.25s", 0.25),
        ] {
            assert_eq!(parse_duration(text), Ok(Duration::from_secs_f64(secs)), "{text}");
        }
        for bad in [
            "", "abc", "-5", "5x", "1.2.3", ".5", "5.", "m", "1e3", "5 m", "inf", "NaN",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad:?}");
        }
        assert!(parse_duration(&"9".repeat(40)).unwrap_err().contains("too large"));
    }

    #[test]
    fn defaults_no_time_limit_and_ten_seconds_grace() {
        let s = Settings::from_vars(vars(&[])).unwrap();
        assert_eq!(s.timeout, None);
        assert_eq!(s.grace.duration, DEFAULT_GRACE);
        let s = Settings::from_vars(vars(&[(TIMEOUT_VAR, "0"), (GRACE_VAR, " ")])).unwrap();
        assert_eq!(s.timeout, None, "0 means no limit");
        assert_eq!(s.grace.duration, DEFAULT_GRACE, "blank means default");
        let s = Settings::from_vars(vars(&[(TIMEOUT_VAR, "30m"), (GRACE_VAR, "0")])).unwrap();
        assert_eq!(
            s.timeout.as_ref().unwrap().to_string(),
            "SHELLSCRIPT_TIMEOUT=30m (1800 s)"
        );
        assert_eq!(s.grace.duration, Duration::ZERO);
    }

    #[test]
    fn malformed_values_name_variable_and_value() {
        let e = Settings::from_vars(vars(&[(TIMEOUT_VAR, "ten"), (GRACE_VAR, "-1")])).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let msg = e.to_string();
        assert!(msg.contains("SHELLSCRIPT_TIMEOUT=\"ten\""), "{msg}");
        assert!(msg.contains("SHELLSCRIPT_GRACE_PERIOD=\"-1\""), "{msg}");
    }

    #[test]
    fn formats_seconds_briefly() {
        assert_eq!(seconds(Duration::from_millis(1500)), "1.5 s");
        assert_eq!(seconds(Duration::from_secs(30)), "30 s");
        assert_eq!(seconds(Duration::ZERO), "0 s");
        assert_eq!(seconds(Duration::from_micros(12_345)), "0.012 s");
    }
}
