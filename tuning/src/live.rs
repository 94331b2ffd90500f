// SPDX-License-Identifier: Apache-2.0
//! Kernel parameters set live through `/proc/sys`, one room on config's way through
//! the node: [`read`] takes each entry's live value before the plan; [`apply`]
//! carries out the plan's part (who holds each key recorded in the shared ledger,
//! the values set all or nothing — a value the kernel refuses puts back what was set
//! before it —, then the parameters no key sets any more given back); uninstall
//! gives back all of them with [`give_back_all`].

use std::collections::BTreeMap;

use skyhook_core::error::bad_line;
use skyhook_core::formats::sysctl::{self as ksysctl, Key, Presence, WriteError};
use skyhook_core::{Error, Host, Result};

use crate::ledger::{self, Ledger};
use crate::owners::{self, Holders};
use crate::state::{LiveChange, State};
use crate::sysctl::{self, Entry, SysctlConf};

/// An entry with its live value, as config found it.
#[derive(Debug, Clone)]
pub struct Live {
    /// The entry.
    pub entry: Entry,
    /// The live value; `None` for a `-` key this kernel does not have.
    pub current: Option<String>,
}

/// Reads the live value of every entry. A key the kernel does not have (or a
/// directory of keys) is bad input unless prefixed with `-`; all are reported.
pub fn read(host: &Host, conf: Option<&SysctlConf>) -> Result<Vec<Live>> {
    let Some(conf) = conf else {
        return Ok(Vec::new());
    };
    let mut problems = Vec::new();
    let mut out = Vec::with_capacity(conf.entries.len());
    let keys: Vec<&Key> = conf.entries.iter().map(|e| &e.a.key).collect();
    let values = ksysctl::read_many(host, &keys)?;
    for (e, current) in conf.entries.iter().zip(values) {
        if current.is_none() {
            let what = match ksysctl::presence(host, &e.a.key)? {
                Presence::Directory => "is a directory of kernel parameters, not a parameter",
                _ => "does not exist in this kernel (is the module that provides it loaded?)",
            };
            if e.a.ignore_failure {
                log::info!(
                    "{} line {}: {} {what}; skipped as its '-' prefix asks",
                    sysctl::KEY,
                    e.a.line,
                    e.a.key
                );
                out.push(Live {
                    entry: e.clone(),
                    current: None,
                });
            } else {
                problems.push(bad_line(
                    sysctl::KEY,
                    e.a.line,
                    &e.text,
                    format!(
                        "{} {what}; prefix the key with '-' to ignore it where it is missing",
                        e.a.key
                    ),
                ));
            }
            continue;
        }
        out.push(Live {
            entry: e.clone(),
            current,
        });
    }
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(Error::Input(problems))
    }
}

/// A kernel parameter to set live, with the value it has now.
#[derive(Debug, Clone)]
pub struct Set<'a> {
    /// The entry and its live value.
    pub live: &'a Live,
    /// The live value before the change (put back when a later one is refused).
    pub current: String,
}

/// Lets `me` (`<kind>/<name>`) go of a kernel parameter it changed: the value goes
/// to the latest other entry still holding the key (see [`owners`]), else back to
/// the value it had before the first holder changed it, unless someone else changed
/// it since (then it is left alone, with a warning). `held` is the shared ledger's.
fn give_back(
    host: &Host,
    key: &str,
    change: &LiveChange,
    held: &mut BTreeMap<String, Holders>,
    me: &str,
) -> Result<()> {
    let holders = held.entry(key.to_string()).or_default();
    let target = match owners::release(holders, me) {
        Some(other) => {
            log::info!(
                "{key}: also set by {}: its value {:?} stays live",
                other.entry,
                other.set
            );
            other.set.clone()
        }
        None => change.original.clone(),
    };
    if holders.is_empty() {
        held.remove(key);
    }
    restore(
        host,
        key,
        &LiveChange {
            set: change.set.clone(),
            original: target,
        },
    )
}

/// Puts back the value a kernel parameter had before this package changed it,
/// unless someone else changed it since (then it is left alone, with a warning).
fn restore(host: &Host, key: &str, change: &LiveChange) -> Result<()> {
    let key = Key::parse(key).map_err(|why| Error::action(format!("state holds a bad sysctl key {key:?}: {why}")))?;
    match ksysctl::read(host, &key)? {
        Some(now) if ksysctl::same_value(&now, &change.original) => {
            log::debug!("{key}: already {:?}", change.original)
        }
        Some(now) if ksysctl::same_value(&now, &change.set) => match ksysctl::write(host, &key, &change.original) {
            Ok(()) => log::info!("{key}: restored {:?} (was {:?})", change.original, change.set),
            Err(e) => log::warn!("{key}: cannot restore {:?}: {e}", change.original),
        },
        Some(now) => log::warn!(
            "{key} is {now:?}, not the {:?} this package set: changed by something else since, left as it is",
            change.set
        ),
        None => log::info!("{key} no longer exists in this kernel: nothing to restore"),
    }
    Ok(())
}

/// The failure to set `live`, as the operator must read it: a value the kernel
/// refuses is bad input naming the line; anything else is the host's failure.
fn refusal(live: &Live, e: WriteError) -> Error {
    let a = &live.entry.a;
    match e {
        WriteError::Refused { .. } => Error::input(bad_line(
            sysctl::KEY,
            a.line,
            &live.entry.text,
            format!("{e}; nothing on the node was changed"),
        )),
        WriteError::Host(e) => Error::action(format!(
            "cannot set {} (configMap key {:?} line {}): {e}; the values set before it were put back and nothing \
             else was changed",
            a.key,
            sysctl::KEY,
            a.line
        )),
    }
}

/// Carries out config's part of the kernel parameters once `intent` (config's
/// plan recorded as the state) is saved: records `me` (`<kind>/<name>`) as a holder
/// of each key of `sets` in the shared ledger, sets them ([`set_all`]), then gives
/// back `restores` ([`give_back_all`]). On a refusal the values set are put back
/// and the error returned (the step's undo journal puts the ledger back). Returns
/// how many were set.
pub fn apply(
    host: &Host,
    sets: &[Set<'_>],
    restores: &BTreeMap<String, LiveChange>,
    intent: &mut State,
    before: &State,
    me: &str,
) -> Result<usize> {
    if !sets.is_empty() {
        // Who holds each key, recorded before the values change (see crate::owners).
        let store = ledger::store(host);
        let mut held: Ledger = store.load()?;
        for s in sets {
            let key = s.live.entry.a.key.as_path_str();
            owners::take(
                held.sysctl.entry(key.to_string()).or_default(),
                me,
                &s.live.entry.a.value,
                &intent.sysctl[key].original,
            );
        }
        store.save_or_clear(&held)?;
    }
    let applied = set_all(host, sets, intent, before)?;
    for k in restores.keys() {
        intent.sysctl.remove(k);
    }
    give_back_all(host, restores, me)?;
    Ok(applied)
}

/// Lets `me` go of every kernel parameter of `changes` ([`give_back`]), with one
/// read and one write of the shared ledger.
pub fn give_back_all(host: &Host, changes: &BTreeMap<String, LiveChange>, me: &str) -> Result<()> {
    if changes.is_empty() {
        return Ok(());
    }
    let store = ledger::store(host);
    let mut ledger: Ledger = store.load()?;
    for (key, change) in changes {
        give_back(host, key, change, &mut ledger.sysctl, me)?;
    }
    store.save_or_clear(&ledger)
}

/// Sets `sets` live; on a failure (of a key without `-`), puts back what was set
/// and fails. A `-` key that fails keeps the record `before` had. Returns how many
/// were set.
fn set_all(host: &Host, sets: &[Set<'_>], state: &mut State, before: &State) -> Result<usize> {
    let mut done: Vec<&Set<'_>> = Vec::new();
    for s in sets {
        let a = &s.live.entry.a;
        match ksysctl::write(host, &a.key, &a.value) {
            Ok(()) => done.push(s),
            Err(e) if a.ignore_failure => {
                log::warn!(
                    "{} line {}: cannot set {} = {}: {e}; ignored as its '-' prefix asks",
                    sysctl::KEY,
                    a.line,
                    a.key,
                    a.value
                );
                let k = a.key.as_path_str();
                match before.sysctl.get(k) {
                    Some(old) => state.sysctl.insert(k.to_string(), old.clone()),
                    None => state.sysctl.remove(k),
                };
            }
            Err(e) => {
                put_back(host, &done);
                return Err(refusal(s.live, e));
            }
        }
    }
    Ok(done.len())
}

/// Puts back the values of `done`, last first.
fn put_back(host: &Host, done: &[&Set<'_>]) {
    for d in done.iter().rev() {
        if let Err(e) = ksysctl::write(host, &d.live.entry.a.key, &d.current) {
            log::error!("{}: cannot put back {:?}: {e}", d.live.entry.a.key, d.current);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use skyhook_core::HostError;
    use skyhook_core::formats::sysctl::Refusal;

    fn live() -> Live {
        let conf = SysctlConf::parse("vm.swappiness = 10\nvm.dirty_ratio = lots\n").unwrap();
        Live {
            entry: conf.entries[1].clone(),
            current: Some("20".into()),
        }
    }

    #[test]
    fn a_value_the_kernel_refuses_is_bad_input_naming_the_line() {
        let l = live();
        let e = refusal(
            &l,
            WriteError::Refused {
                key: l.entry.a.key.clone(),
                value: "lots".into(),
                refusal: Refusal::Invalid,
            },
        );
        assert_eq!(e.exit_code(), 2);
        let m = e.to_string();
        assert!(
            m.contains("\"sysctl.conf\" line 2 (\"vm.dirty_ratio = lots\"): the kernel refused vm.dirty_ratio = lots"),
            "{m}"
        );
    }

    #[test]
    fn a_write_the_host_forbids_is_an_action_failure() {
        let e = refusal(
            &live(),
            WriteError::Host(HostError::io(
                "write",
                "/proc/sys/vm/dirty_ratio",
                std::io::Error::from_raw_os_error(1),
            )),
        );
        assert_eq!(e.exit_code(), 1);
        assert!(e.to_string().contains("values set before it were put back"), "{e}");
    }
}
