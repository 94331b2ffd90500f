// SPDX-License-Identifier: Apache-2.0
//! Resource limits of processes: systemd's `Limit*=` directives (with its units and
//! `soft:hard` form, systemd.exec(5); systemd's parser is `rlimit_parse` in
//! `src/basic/rlimit-util.c`), what a running process actually has
//! (`/proc/<pid>/limits`, read through the host) and what a systemd unit's main
//! process runs with ([`MainProcess`]).
//!
//! A limit is a number or unlimited; systemd's `infinity` and the kernel's
//! `unlimited` are the same thing.

use std::collections::BTreeMap;
use std::fmt;

use crate::error::{Error, Result};
use crate::formats::sysctl::{self, Key};
use crate::host::Host;
use crate::host::systemd::Systemd;

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
    /// Parses `/proc/<pid>/limits` as the kernel writes it (`proc_pid_limits` in
    /// `fs/proc/base.c`: a header line, then one row per resource, its name padded to
    /// 25 columns, the soft and the hard limit each `unlimited` or a decimal number
    /// padded to 20, then the unit). A row that is missing or does not hold two
    /// limits is left out ([`ProcessLimits::get`] answers `None`): the caller says so.
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

/// Whether a process running with `got` (`(soft, hard)`) has what `Limit*=` of
/// `resource` set to `want` gives it. systemd turns `LimitNOFILE=infinity` into the
/// kernel's ceiling for open files, `fs.nr_open` (given as `nr_open`), so that one is
/// in effect as either.
pub fn in_effect(resource: &Resource, want: (Rlim, Rlim), got: (Rlim, Rlim), nr_open: Rlim) -> bool {
    let same = |want: Rlim, got: Rlim| {
        want == got || (resource.directive == "LimitNOFILE" && want.is_none() && got.is_some() && got == nr_open)
    };
    same(want.0, got.0) && same(want.1, got.1)
}

/// The kernel's ceiling for open files (`fs.nr_open`), when it can be read.
pub fn nr_open(host: &Host) -> Rlim {
    Key::parse("fs.nr_open")
        .ok()
        .and_then(|k| sysctl::read(host, &k).ok().flatten())
        .and_then(|v| v.trim().parse().ok())
}

/// A systemd unit's main process, as systemd reports it (`systemctl show
/// --property=MainPID --value <unit>`), with the limits it runs with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MainProcess {
    /// systemd is not running on this host (a chroot, an image build): nothing runs.
    NoSystemd,
    /// `MainPID` is 0: the unit is stopped, failed, or not loaded.
    NotRunning,
    /// The unit's main process and its `/proc/<pid>/limits`.
    Running {
        /// The process id.
        pid: u32,
        /// Its limits.
        limits: ProcessLimits,
    },
}

impl MainProcess {
    /// Asks systemd for `unit`'s main process and reads its limits. A process that
    /// exits between the two is an error naming its `/proc` file.
    pub fn of_unit(host: &Host, unit: &str) -> Result<Self> {
        let systemd = Systemd::new(host);
        if !systemd.is_running() {
            return Ok(MainProcess::NoSystemd);
        }
        match systemd.main_pid(unit)? {
            None => Ok(MainProcess::NotRunning),
            Some(pid) => Ok(MainProcess::Running {
                pid,
                limits: ProcessLimits::read(host, pid)?,
            }),
        }
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

    /// `/proc/<pid>/limits` laid out as the kernel prints it (`fs/proc/base.c`
    /// `proc_pid_limits`: `"%-25s %-20s %-20s %-10s\n"` for the header, each row's name
    /// `%-25s `, each limit `unlimited` or a number `%-20s `, then the unit `%-10s\n`,
    /// or only `\n` for the nice and real-time priorities, which have none).
    fn kernel_layout(rows: &[(&str, &str, &str, &str)]) -> String {
        let mut text = format!(
            "{:<25} {:<20} {:<20} {:<10}\n",
            "Limit", "Soft Limit", "Hard Limit", "Units"
        );
        for (name, soft, hard, unit) in rows {
            text.push_str(&format!("{name:<25} {soft:<20} {hard:<20} "));
            match unit.is_empty() {
                true => text.push('\n'),
                false => text.push_str(&format!("{unit:<10}\n")),
            }
        }
        text
    }

    /// A containerd process of a stock node: every row the kernel prints, in its order.
    fn containerd_rows(
        stack_soft: &'static str,
        stack_hard: &'static str,
    ) -> Vec<(&'static str, &'static str, &'static str, &'static str)> {
        vec![
            ("Max cpu time", "unlimited", "unlimited", "seconds"),
            ("Max file size", "unlimited", "unlimited", "bytes"),
            ("Max data size", "unlimited", "unlimited", "bytes"),
            ("Max stack size", stack_soft, stack_hard, "bytes"),
            ("Max core file size", "unlimited", "unlimited", "bytes"),
            ("Max resident set", "unlimited", "unlimited", "bytes"),
            ("Max processes", "unlimited", "unlimited", "processes"),
            ("Max open files", "1048576", "1048576", "files"),
            ("Max locked memory", "8388608", "8388608", "bytes"),
            ("Max address space", "unlimited", "unlimited", "bytes"),
            ("Max file locks", "unlimited", "unlimited", "locks"),
            ("Max pending signals", "1030527", "1030527", "signals"),
            ("Max msgqueue size", "819200", "819200", "bytes"),
            ("Max nice priority", "0", "0", ""),
            ("Max realtime priority", "0", "0", ""),
            ("Max realtime timeout", "unlimited", "unlimited", "us"),
        ]
    }

    #[test]
    fn reads_the_stack_limit_from_the_kernels_own_layout() {
        let stack = res("LimitSTACK");
        let l = ProcessLimits::parse(&kernel_layout(&containerd_rows("67108864", "67108864")));
        assert_eq!(l.get(&stack), Some((Some(64 << 20), Some(64 << 20))));
        assert_eq!(l.0.len(), RESOURCES.len(), "every row the kernel prints: {l:?}");
        assert_eq!(
            l.get(&res("LimitNICE")),
            Some((Some(0), Some(0))),
            "a row without a unit"
        );
        assert_eq!(l.get(&res("LimitRTPRIO")), Some((Some(0), Some(0))));
        let l = ProcessLimits::parse(&kernel_layout(&containerd_rows("8388608", "unlimited")));
        assert_eq!(
            l.get(&stack),
            Some((Some(8 << 20), None)),
            "the kernel's default soft, unlimited hard"
        );
        let l = ProcessLimits::parse(&kernel_layout(&containerd_rows("unlimited", "unlimited")));
        assert_eq!(l.get(&stack), Some((None, None)));
        let (want_soft, want_hard) = stack.parse("64M").unwrap();
        assert!(in_effect(
            &stack,
            (want_soft, want_hard),
            (Some(67108864), Some(67108864)),
            None
        ));
        assert!(!in_effect(&stack, (want_soft, want_hard), (Some(8388608), None), None));
        assert!(in_effect(
            &stack,
            stack.parse("8M:infinity").unwrap(),
            (Some(8388608), None),
            None
        ));
        assert!(!in_effect(
            &stack,
            stack.parse("infinity").unwrap(),
            (Some(8388608), None),
            None
        ));
    }

    #[test]
    fn a_hostile_limits_file_lists_nothing_it_cannot_read() {
        let stack = res("LimitSTACK");
        let missing: Vec<_> = containerd_rows("67108864", "67108864")
            .into_iter()
            .filter(|r| r.0 != "Max stack size")
            .collect();
        for (what, text) in [
            ("the stack row missing", kernel_layout(&missing)),
            (
                "garbage",
                "\u{0}\u{1}binary\u{ff} garbage\nMax stack\n:::\n".to_string(),
            ),
            ("an empty file", String::new()),
            (
                "a number the kernel never prints",
                kernel_layout(&[("Max stack size", "-1", "unlimited", "bytes")]),
            ),
            (
                "beyond 64 bits",
                kernel_layout(&[("Max stack size", "18446744073709551616", "unlimited", "bytes")]),
            ),
            ("one limit only", "Max stack size            8388608\n".to_string()),
            (
                "a unit for a limit",
                kernel_layout(&[("Max stack size", "8M", "8M", "bytes")]),
            ),
            (
                "a longer name",
                kernel_layout(&[("Max stack sizes", "8388608", "8388608", "bytes")]),
            ),
        ] {
            assert_eq!(ProcessLimits::parse(&text).get(&stack), None, "{what}: {text:?}");
        }
        let long = format!("Max stack size {}\n", "9".repeat(100_000));
        assert_eq!(ProcessLimits::parse(&long).get(&stack), None, "a huge row");
    }

    #[test]
    fn nofile_infinity_is_in_effect_as_the_kernels_ceiling() {
        let nofile = res("LimitNOFILE");
        let want = nofile.parse("infinity").unwrap();
        assert!(in_effect(&nofile, want, (Some(1 << 20), Some(1 << 20)), Some(1 << 20)));
        assert!(!in_effect(&nofile, want, (Some(1024), Some(1 << 20)), Some(1 << 20)));
        assert!(!in_effect(
            &res("LimitSTACK"),
            want,
            (Some(1 << 20), Some(1 << 20)),
            Some(1 << 20)
        ));
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
