// SPDX-License-Identifier: Apache-2.0
//! Resource limits of processes: systemd's `Limit*=` directives (with its units and
//! `soft:hard` form, systemd.exec(5)) and what a running process actually has
//! (`/proc/<pid>/limits`, read through the host).
//!
//! A limit is a number or unlimited; systemd's `infinity` and the kernel's
//! `unlimited` are the same thing.

use std::collections::BTreeMap;
use std::fmt;

use crate::error::{Error, Result};
use crate::host::Host;

/// One limit value: `None` is unlimited.
pub type Rlim = Option<u64>;

/// How a resource's value is written in a `Limit*=` directive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    /// A plain count (files, processes, signals, locks, priority).
    Count,
    /// Bytes, with the 1024-based suffixes K, M, G, T, P, E.
    Bytes,
    /// CPU time: a time span, default unit seconds; the kernel counts whole seconds.
    Seconds,
    /// Real-time CPU time: a time span, default unit microseconds.
    Micros,
    /// Nice level: `-20`…`19` (or `+N`), or the raw limit `0`…`40`.
    Nice,
}

/// A process resource limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resource {
    /// The systemd directive (`LimitNOFILE`).
    pub directive: &'static str,
    /// The row name in `/proc/<pid>/limits` (`Max open files`).
    pub proc_name: &'static str,
    unit: Unit,
}

const fn r(directive: &'static str, proc_name: &'static str, unit: Unit) -> Resource {
    Resource {
        directive,
        proc_name,
        unit,
    }
}

/// Every resource systemd can limit, in `/proc/<pid>/limits` order.
pub const RESOURCES: [Resource; 16] = [
    r("LimitCPU", "Max cpu time", Unit::Seconds),
    r("LimitFSIZE", "Max file size", Unit::Bytes),
    r("LimitDATA", "Max data size", Unit::Bytes),
    r("LimitSTACK", "Max stack size", Unit::Bytes),
    r("LimitCORE", "Max core file size", Unit::Bytes),
    r("LimitRSS", "Max resident set", Unit::Bytes),
    r("LimitNPROC", "Max processes", Unit::Count),
    r("LimitNOFILE", "Max open files", Unit::Count),
    r("LimitMEMLOCK", "Max locked memory", Unit::Bytes),
    r("LimitAS", "Max address space", Unit::Bytes),
    r("LimitLOCKS", "Max file locks", Unit::Count),
    r("LimitSIGPENDING", "Max pending signals", Unit::Count),
    r("LimitMSGQUEUE", "Max msgqueue size", Unit::Bytes),
    r("LimitNICE", "Max nice priority", Unit::Nice),
    r("LimitRTPRIO", "Max realtime priority", Unit::Count),
    r("LimitRTTIME", "Max realtime timeout", Unit::Micros),
];

impl Resource {
    /// The resource of a `Limit*` directive name.
    pub fn by_directive(name: &str) -> Option<Resource> {
        RESOURCES.iter().copied().find(|r| r.directive == name)
    }

    /// Parses a directive's value: one value for both limits or `soft:hard`; each a
    /// number in the resource's unit or `infinity`. Returns `(soft, hard)`.
    pub fn parse(&self, value: &str) -> std::result::Result<(Rlim, Rlim), String> {
        let value = value.trim();
        let (soft, hard) = match value.split_once(':') {
            Some((s, h)) => (self.parse_one(s)?, self.parse_one(h)?),
            None => {
                let v = self.parse_one(value)?;
                (v, v)
            }
        };
        if let (Some(s), Some(h)) = (soft, hard)
            && s > h
        {
            return Err(format!("the soft limit {s} is above the hard limit {h}"));
        }
        if let (None, Some(h)) = (soft, hard) {
            return Err(format!("the soft limit infinity is above the hard limit {h}"));
        }
        Ok((soft, hard))
    }

    fn parse_one(&self, raw: &str) -> std::result::Result<Rlim, String> {
        let raw = raw.trim();
        if raw == "infinity" {
            return Ok(None);
        }
        let bad = |what: &str| format!("{raw:?} is not {what} or infinity");
        match self.unit {
            Unit::Count => raw.parse::<u64>().map(Some).map_err(|_| bad("a whole number")),
            Unit::Bytes => parse_bytes(raw)
                .map(Some)
                .ok_or_else(|| bad("a size (a number with an optional K, M, G, T, P or E suffix)")),
            Unit::Seconds => parse_span_us(raw, 1_000_000)
                .map(|us| Some(us.div_ceil(1_000_000)))
                .ok_or_else(|| bad("a time span (e.g. 30, 5min, 1h)")),
            Unit::Micros => parse_span_us(raw, 1)
                .map(Some)
                .ok_or_else(|| bad("a time span in microseconds (e.g. 500000, 2s)")),
            Unit::Nice => parse_nice(raw)
                .map(Some)
                .ok_or_else(|| bad("a nice level -20…19 or a limit 0…40")),
        }
    }
}

fn parse_bytes(raw: &str) -> Option<u64> {
    let split = raw.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(raw.len());
    let (num, suffix) = raw.split_at(split);
    let factor: u64 = match suffix {
        "" | "B" => 1,
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        "T" => 1 << 40,
        "P" => 1 << 50,
        "E" => 1 << 60,
        _ => return None,
    };
    let (whole, frac) = match num.split_once('.') {
        Some((w, f)) => (w, f),
        None => (num, ""),
    };
    if whole.is_empty() || !whole.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut total = whole.parse::<u64>().ok()?.checked_mul(factor)?;
    if !frac.is_empty() {
        let digits = frac.len().min(18) as u32;
        let f: u64 = frac[..digits as usize].parse().ok()?;
        let part = (f as u128 * factor as u128) / 10u128.pow(digits);
        total = total.checked_add(part as u64)?;
    }
    Some(total)
}

/// A systemd time span (`1h 30min`, `500ms`, `20`) in microseconds; a bare number is
/// in `default_us` units.
fn parse_span_us(raw: &str, default_us: u64) -> Option<u64> {
    let mut total: u64 = 0;
    let mut rest = raw.trim();
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let end = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        if end == 0 {
            return None;
        }
        let n: u64 = rest[..end].parse().ok()?;
        rest = rest[end..].trim_start();
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c.is_whitespace())
            .unwrap_or(rest.len());
        let unit = &rest[..unit_end];
        let factor = match unit {
            "" => default_us,
            "us" | "usec" | "µs" => 1,
            "ms" | "msec" => 1_000,
            "s" | "sec" | "second" | "seconds" => 1_000_000,
            "m" | "min" | "minute" | "minutes" => 60_000_000,
            "h" | "hr" | "hour" | "hours" => 3_600_000_000,
            "d" | "day" | "days" => 86_400_000_000,
            "w" | "week" | "weeks" => 604_800_000_000,
            _ => return None,
        };
        total = total.checked_add(n.checked_mul(factor)?)?;
        rest = rest[unit_end..].trim_start();
    }
    Some(total)
}

fn parse_nice(raw: &str) -> Option<u64> {
    if let Some(n) = raw.strip_prefix('-') {
        let n: u64 = n.parse().ok()?;
        return (n <= 20).then_some(20 + n);
    }
    if let Some(n) = raw.strip_prefix('+') {
        let n: u64 = n.parse().ok()?;
        return (n <= 19).then_some(20 - n);
    }
    let n: u64 = raw.parse().ok()?;
    (n <= 40).then_some(n)
}

/// Shows a limit as `/proc/<pid>/limits` does.
pub fn show(v: Rlim) -> String {
    v.map_or_else(|| "unlimited".to_string(), |n| n.to_string())
}

/// The limits of a process, by resource: `(soft, hard)`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcessLimits(pub BTreeMap<&'static str, (Rlim, Rlim)>);

impl ProcessLimits {
    /// Parses `/proc/<pid>/limits`.
    pub fn parse(text: &str) -> Self {
        let mut map = BTreeMap::new();
        for line in text.lines() {
            for res in RESOURCES {
                if let Some(rest) = line.strip_prefix(res.proc_name)
                    && rest.starts_with(char::is_whitespace)
                {
                    let mut words = rest.split_whitespace();
                    let parse = |w: Option<&str>| match w {
                        Some("unlimited") => Some(None),
                        Some(n) => n.parse::<u64>().ok().map(Some),
                        None => None,
                    };
                    if let (Some(s), Some(h)) = (parse(words.next()), parse(words.next())) {
                        map.insert(res.directive, (s, h));
                    }
                }
            }
        }
        ProcessLimits(map)
    }

    /// Reads `/proc/<pid>/limits` on the host.
    pub fn read(host: &Host, pid: u32) -> Result<Self> {
        let path = format!("/proc/{pid}/limits");
        let text = host.read_to_string(&path)?.ok_or_else(|| {
            Error::action(format!(
                "{path} does not exist: process {pid} has exited or /proc is not mounted"
            ))
        })?;
        Ok(Self::parse(&text))
    }

    /// The `(soft, hard)` limits of `resource`, when the file listed it.
    pub fn get(&self, resource: &Resource) -> Option<(Rlim, Rlim)> {
        self.0.get(resource.directive).copied()
    }
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.directive)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(d: &str) -> Resource {
        Resource::by_directive(d).unwrap()
    }

    #[test]
    fn parses_systemd_limit_values() {
        assert_eq!(res("LimitNOFILE").parse("1048576"), Ok((Some(1048576), Some(1048576))));
        assert_eq!(res("LimitNOFILE").parse("1024:524288"), Ok((Some(1024), Some(524288))));
        assert_eq!(res("LimitMEMLOCK").parse("infinity"), Ok((None, None)));
        assert_eq!(res("LimitSTACK").parse("64M"), Ok((Some(64 << 20), Some(64 << 20))));
        assert_eq!(res("LimitSTACK").parse("8M:infinity"), Ok((Some(8 << 20), None)));
        assert_eq!(res("LimitSTACK").parse("1.5K"), Ok((Some(1536), Some(1536))));
        assert_eq!(res("LimitCPU").parse("90"), Ok((Some(90), Some(90))));
        assert_eq!(res("LimitCPU").parse("1min 30s"), Ok((Some(90), Some(90))));
        assert_eq!(res("LimitCPU").parse("500ms"), Ok((Some(1), Some(1))), "rounded up");
        assert_eq!(res("LimitRTTIME").parse("2s"), Ok((Some(2_000_000), Some(2_000_000))));
        assert_eq!(res("LimitNICE").parse("-5"), Ok((Some(25), Some(25))));
        assert_eq!(res("LimitNICE").parse("+5"), Ok((Some(15), Some(15))));
        assert_eq!(res("LimitNICE").parse("40"), Ok((Some(40), Some(40))));
        for (d, bad) in [
            ("LimitNOFILE", "many"),
            ("LimitNOFILE", "1M"),
            ("LimitNOFILE", "2:1"),
            ("LimitNOFILE", "infinity:5"),
            ("LimitSTACK", "64Q"),
            ("LimitNICE", "-21"),
            ("LimitCPU", "5 parsecs"),
            ("LimitNOFILE", ""),
        ] {
            assert!(res(d).parse(bad).is_err(), "{d}={bad}");
        }
        assert!(Resource::by_directive("LimitFOO").is_none());
    }

    #[test]
    fn parses_proc_limits() {
        let text = "Limit                     Soft Limit           Hard Limit           Units     \n\
                    Max cpu time              unlimited            unlimited            seconds   \n\
                    Max stack size            8388608              unlimited            bytes     \n\
                    Max processes             127318               127318               processes \n\
                    Max open files            1024                 524288               files     \n\
                    Max locked memory         unlimited            unlimited            bytes     \n\
                    Max nice priority         0                    0                    \n\
                    Max realtime timeout      unlimited            unlimited            us        \n";
        let l = ProcessLimits::parse(text);
        assert_eq!(l.get(&res("LimitNOFILE")), Some((Some(1024), Some(524288))));
        assert_eq!(l.get(&res("LimitSTACK")), Some((Some(8388608), None)));
        assert_eq!(l.get(&res("LimitMEMLOCK")), Some((None, None)));
        assert_eq!(l.get(&res("LimitNICE")), Some((Some(0), Some(0))));
        assert_eq!(l.get(&res("LimitNPROC")), Some((Some(127318), Some(127318))));
        assert_eq!(l.get(&res("LimitCORE")), None, "not listed");
        assert_eq!(show(None), "unlimited");
        assert_eq!(show(Some(5)), "5");
    }
}
