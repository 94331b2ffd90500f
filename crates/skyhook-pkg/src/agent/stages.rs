// SPDX-License-Identifier: Apache-2.0
//! The operator's stage graph: which modes run, in which order, with which
//! interrupt in between, for one package on one node — on current operators
//! (NodeWright: explicit uninstall, then `uninstall-interrupt`) and on older ones
//! (uninstall from a stub package: no configMap, no env, no interrupt).
//!
//! - new install / upgrade: apply (or upgrade) → config → interrupt (the package's
//!   `interrupt`) → post-interrupt, each action followed by its check;
//! - a configMap change on an installed version: config; then interrupt and
//!   post-interrupt only when a changed (added or edited, never removed) key has a
//!   configInterrupt;
//! - explicit uninstall: uninstall → uninstall-interrupt (current operators);
//! - downgrade: refused until an uninstall completed (current); uninstall from the
//!   stub, then apply (older).

use std::collections::BTreeMap;

use skyhook_core::Mode;
use skyhook_core::config::PackageConfig;
use skyhook_core::runtime::interrupt::Interrupt;
use skyhook_core::runtime::semver::Version;

use crate::agent::scr::key_matches;
use crate::error::ToolError;

/// Which operator drives the package.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Operator {
    /// NodeWright (agent 6.4.x): explicit uninstall, uninstall-interrupt, node metadata.
    #[default]
    Current,
    /// Skyhook before explicit uninstall.
    Older,
}

/// One stage of the graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stage {
    /// A mode runs; `stub`: from the older operators' uninstall stub (no configMap, no env).
    Run {
        /// The mode.
        mode: Mode,
        /// Whether the step sees neither configMap nor env.
        stub: bool,
    },
    /// The agent carries out `interrupt` (`None`: the SCR declares none for it).
    Interrupt {
        /// The interrupt the SCR declares for this stage.
        interrupt: Option<Interrupt>,
        /// Whether it is the `uninstall-interrupt` stage.
        after_uninstall: bool,
    },
}

/// What the SCR declares for the package.
#[derive(Debug, Clone, Default)]
pub struct Declared {
    /// The package-level `interrupt`.
    pub interrupt: Option<Interrupt>,
    /// `configInterrupts`, by key or glob.
    pub config_interrupts: BTreeMap<String, Interrupt>,
}

/// How the configMap differs from the one config last ran with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConfigChange {
    /// Keys added or whose value changed.
    pub changed: Vec<String>,
    /// Keys no longer in the configMap.
    pub removed: Vec<String>,
}

impl ConfigChange {
    /// The change from `before` to `now` (key → a digest of the value).
    pub fn between(before: &BTreeMap<String, String>, now: &BTreeMap<String, String>) -> Self {
        ConfigChange {
            changed: now
                .iter()
                .filter(|(k, v)| before.get(*k) != Some(v))
                .map(|(k, _)| k.clone())
                .collect(),
            removed: before.keys().filter(|k| !now.contains_key(*k)).cloned().collect(),
        }
    }

    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.changed.is_empty() && self.removed.is_empty()
    }
}

/// What brings the operator to the node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// The SCR applies `version` (install, upgrade, downgrade or a config change).
    Apply {
        /// The version installed now, if any.
        installed: Option<String>,
        /// The SCR's version.
        version: String,
        /// How the configMap changed since config last ran.
        change: ConfigChange,
    },
    /// The package is uninstalled (current: `uninstall.apply: true`; older: the entry removed).
    Uninstall,
}

/// The stages the operator runs for `request`.
pub fn plan(
    config: &PackageConfig,
    request: &Request,
    declared: &Declared,
    operator: Operator,
) -> Result<Vec<Stage>, ToolError> {
    let runs = |mode: Mode, stub: bool| -> Vec<Stage> {
        with_check(config, mode)
            .into_iter()
            .map(|mode| Stage::Run { mode, stub })
            .collect()
    };
    let (installed, version, change) = match request {
        Request::Uninstall => {
            let stub = operator == Operator::Older;
            let mut stages = runs(Mode::Uninstall, stub);
            if operator == Operator::Current && declared.interrupt.is_some() {
                stages.push(Stage::Interrupt {
                    interrupt: declared.interrupt.clone(),
                    after_uninstall: true,
                });
            }
            return Ok(stages);
        }
        Request::Apply {
            installed,
            version,
            change,
        } => (installed, version, change),
    };
    let current: Version = version
        .parse()
        .map_err(|e| ToolError::usage(format!("version {version:?}: {e}")))?;
    let installed: Option<Version> = match installed {
        Some(v) => Some(v.parse().map_err(|source| ToolError::BadHistory {
            dir: std::path::Path::new(crate::agent::node::AGENT_DIR).join("history"),
            source,
        })?),
        None => None,
    };
    let mut stages = match installed {
        Some(v) if v == current => return Ok(config_change(config, change, declared)),
        Some(v) if v < current => runs(Mode::Upgrade, false),
        Some(v) if operator == Operator::Current => {
            return Err(ToolError::usage(format!(
                "{v} is installed and the SCR asks for {current}: current operators refuse a downgrade until an \
                 uninstall completed (set uninstall: {{enabled: true, apply: true}} and run with --uninstall first)"
            )));
        }
        Some(_) => [runs(Mode::Uninstall, true), runs(Mode::Apply, false)].concat(),
        None => runs(Mode::Apply, false),
    };
    stages.extend(runs(Mode::Config, false));
    stages.push(Stage::Interrupt {
        interrupt: declared.interrupt.clone(),
        after_uninstall: false,
    });
    stages.extend(runs(Mode::PostInterrupt, false));
    Ok(stages)
}

/// A config change on the installed version: config, then the interrupt of the
/// changed keys that have a configInterrupt and post-interrupt, if any has one.
fn config_change(config: &PackageConfig, change: &ConfigChange, declared: &Declared) -> Vec<Stage> {
    if change.is_empty() {
        return Vec::new();
    }
    let run = |mode| {
        with_check(config, mode)
            .into_iter()
            .map(|mode| Stage::Run { mode, stub: false })
    };
    let mut stages: Vec<Stage> = run(Mode::Config).collect();
    let needed: Vec<Interrupt> = change
        .changed
        .iter()
        .flat_map(|key| {
            declared
                .config_interrupts
                .iter()
                .filter(move |(pattern, _)| key_matches(pattern, key))
                .map(|(_, i)| i.clone())
        })
        .collect();
    if !needed.is_empty() {
        stages.push(Stage::Interrupt {
            interrupt: Some(Interrupt::covering(needed)),
            after_uninstall: false,
        });
        stages.extend(run(Mode::PostInterrupt));
    }
    stages
}

/// `action` and its check, each only when config.json gives it steps.
pub fn with_check(config: &PackageConfig, action: Mode) -> Vec<Mode> {
    [Some(action), action.check()]
        .into_iter()
        .flatten()
        .filter(|m| !config.steps(*m).is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use Mode::*;
    use skyhook_core::config::StepConfig;

    fn config(modes: &[Mode]) -> PackageConfig {
        let step = |m: &Mode| StepConfig {
            name: m.as_str().into(),
            path: "x".into(),
            arguments: vec![],
            returncodes: vec![0],
            on_host: true,
            idempotence: false,
            upgrade_step: false,
            env: None,
        };
        PackageConfig {
            schema_version: "v1".into(),
            package_name: "demo".into(),
            package_version: "2.0.0".into(),
            expected_config_files: vec![],
            modes: modes.iter().map(|m| (m.as_str().to_string(), vec![step(m)])).collect(),
        }
    }

    fn run(mode: Mode) -> Stage {
        Stage::Run { mode, stub: false }
    }

    fn stub(mode: Mode) -> Stage {
        Stage::Run { mode, stub: true }
    }

    fn interrupt(i: Option<Interrupt>, after_uninstall: bool) -> Stage {
        Stage::Interrupt {
            interrupt: i,
            after_uninstall,
        }
    }

    fn apply(installed: Option<&str>, change: ConfigChange) -> Request {
        Request::Apply {
            installed: installed.map(str::to_string),
            version: "2.0.0".into(),
            change,
        }
    }

    fn reboot() -> Declared {
        Declared {
            interrupt: Some(Interrupt::Reboot),
            config_interrupts: BTreeMap::from([
                ("grub.conf".to_string(), Interrupt::Reboot),
                ("service_*.conf".to_string(), Interrupt::service(["containerd"])),
            ]),
        }
    }

    #[test]
    fn a_new_install_runs_apply_config_interrupt_post_interrupt() {
        for operator in [Operator::Current, Operator::Older] {
            let stages = plan(
                &config(&Mode::ALL),
                &apply(None, ConfigChange::default()),
                &reboot(),
                operator,
            )
            .unwrap();
            assert_eq!(
                stages,
                [
                    run(Apply),
                    run(ApplyCheck),
                    run(Config),
                    run(ConfigCheck),
                    interrupt(Some(Interrupt::Reboot), false),
                    run(PostInterrupt),
                    run(PostInterruptCheck)
                ]
            );
        }
    }

    #[test]
    fn an_upgrade_starts_with_upgrade() {
        let stages = plan(
            &config(&Mode::ALL),
            &apply(Some("1.9.0"), ConfigChange::default()),
            &reboot(),
            Operator::Current,
        )
        .unwrap();
        assert_eq!(stages[..3], [run(Upgrade), run(UpgradeCheck), run(Config)]);
    }

    #[test]
    fn a_downgrade_is_refused_on_current_operators_and_uninstalls_from_the_stub_on_older_ones() {
        let request = apply(Some("3.0.0"), ConfigChange::default());
        let e = plan(&config(&Mode::ALL), &request, &reboot(), Operator::Current).unwrap_err();
        assert!(
            e.to_string()
                .contains("refuse a downgrade until an uninstall completed"),
            "{e}"
        );
        let stages = plan(&config(&Mode::ALL), &request, &reboot(), Operator::Older).unwrap();
        assert_eq!(
            stages[..4],
            [stub(Uninstall), stub(UninstallCheck), run(Apply), run(ApplyCheck)]
        );
    }

    #[test]
    fn explicit_uninstall_is_followed_by_uninstall_interrupt_on_current_operators_only() {
        let all = config(&Mode::ALL);
        assert_eq!(
            plan(&all, &Request::Uninstall, &reboot(), Operator::Current).unwrap(),
            [
                run(Uninstall),
                run(UninstallCheck),
                interrupt(Some(Interrupt::Reboot), true)
            ]
        );
        assert_eq!(
            plan(&all, &Request::Uninstall, &Declared::default(), Operator::Current).unwrap(),
            [run(Uninstall), run(UninstallCheck)],
            "no interrupt declared: no uninstall-interrupt"
        );
        assert_eq!(
            plan(&all, &Request::Uninstall, &reboot(), Operator::Older).unwrap(),
            [stub(Uninstall), stub(UninstallCheck)]
        );
    }

    #[test]
    fn a_config_change_interrupts_only_for_a_changed_key_with_a_config_interrupt() {
        let all = config(&Mode::ALL);
        let change = |changed: &[&str], removed: &[&str]| ConfigChange {
            changed: changed.iter().map(|s| s.to_string()).collect(),
            removed: removed.iter().map(|s| s.to_string()).collect(),
        };
        let plan_for = |c| plan(&all, &apply(Some("2.0.0"), c), &reboot(), Operator::Current).unwrap();
        assert_eq!(plan_for(change(&[], &[])), [], "nothing changed: nothing runs");
        assert_eq!(plan_for(change(&["sysctl.conf"], &[])), [run(Config), run(ConfigCheck)]);
        assert_eq!(
            plan_for(change(&[], &["grub.conf"])),
            [run(Config), run(ConfigCheck)],
            "a removed key never interrupts"
        );
        assert_eq!(
            plan_for(change(&["service_containerd.conf"], &[])),
            [
                run(Config),
                run(ConfigCheck),
                interrupt(Some(Interrupt::service(["containerd"])), false),
                run(PostInterrupt),
                run(PostInterruptCheck)
            ]
        );
        assert_eq!(
            plan_for(change(&["grub.conf", "service_kubelet.conf"], &[]))[2],
            interrupt(Some(Interrupt::Reboot), false),
            "the most expensive wins"
        );
    }

    #[test]
    fn a_recorded_version_that_is_not_one_is_refused_naming_it() {
        let e = plan(
            &config(&Mode::ALL),
            &apply(Some("2.0"), ConfigChange::default()),
            &Declared::default(),
            Operator::Current,
        )
        .unwrap_err();
        assert!(
            matches!(&e, ToolError::BadHistory { source, .. } if source.value == "2.0"),
            "{e}"
        );
        assert!(e.to_string().contains("remove the package's history file"), "{e}");
    }

    #[test]
    fn stages_without_steps_are_left_out() {
        let tuning_like = config(&[Config, ConfigCheck, PostInterruptCheck, Uninstall, UninstallCheck]);
        assert_eq!(
            plan(
                &tuning_like,
                &apply(None, ConfigChange::default()),
                &Declared::default(),
                Operator::Current
            )
            .unwrap(),
            [
                run(Config),
                run(ConfigCheck),
                interrupt(None, false),
                run(PostInterruptCheck)
            ]
        );
    }

    #[test]
    fn config_change_compares_values() {
        let before = BTreeMap::from([("a".to_string(), "1".to_string()), ("b".to_string(), "1".to_string())]);
        let now = BTreeMap::from([("a".to_string(), "2".to_string()), ("c".to_string(), "1".to_string())]);
        assert_eq!(
            ConfigChange::between(&before, &now),
            ConfigChange {
                changed: vec!["a".into(), "c".into()],
                removed: vec!["b".into()]
            }
        );
    }
}
