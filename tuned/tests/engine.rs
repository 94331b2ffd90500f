// SPDX-License-Identifier: Apache-2.0
//! tuned's one engine entry point, in process as nvidia-tuned drives it: the
//! extension's preflight refusal leaves the node as it was, its finish runs after
//! activation (tuned restarted for tuned-main.conf on its request) and its interrupt
//! is combined with tuned's.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::*;
use skyhook_core::host::command::{Cmd, Output, Runner, StandInRunner};
use skyhook_core::{ConfigMaps, Context, Error, Host, Interrupt, Mode, Result, Step};
use skyhook_testkit::Node;
use tuned::engine::{self, Activated, EngineRequest, Extension};

const PROFILE: &str = "[main]\nsummary=engine test\n\n[sysctl]\nvm.swappiness=10\n";

/// The node's stand-ins, each given the environment the package's binary would
/// pass on (the stand-ins find the node's root by it).
struct StandIns {
    inner: StandInRunner,
    env: BTreeMap<String, String>,
}

impl Runner for StandIns {
    fn run(&self, cmd: &Cmd) -> std::io::Result<Output> {
        let cmd = self.env.iter().fold(cmd.clone(), |c, (k, v)| c.env(k, v));
        self.inner.run(&cmd)
    }

    fn find(&self, root: &Path, program: &str) -> Option<PathBuf> {
        self.inner.find(root, program)
    }
}

/// A step of another package's kind on `node`, in process as that package builds it.
fn step(node: &Node, mode: Mode) -> Step {
    let env = node.step_env();
    let ctx = Context::from_vars(mode, |n| env.get(n).cloned()).unwrap();
    let runner = StandIns {
        inner: StandInRunner::new(node.commands_dir()),
        env,
    };
    Step::new("other", ctx, Host::new(node.root(), runner), ConfigMaps::default())
}

fn request() -> EngineRequest {
    EngineRequest {
        configmaps: ConfigMaps::from_entries([("tuned_profile", "engine_test"), ("engine_test", PROFILE)]),
        files: [("/etc/engine-test.conf".into(), b"extra\n".to_vec())].into(),
    }
}

/// Records what its hooks saw; refuses in preflight when told to.
#[derive(Default)]
struct Probe {
    refuse: bool,
    calls: Vec<String>,
}

impl Extension for Probe {
    fn preflight(&mut self, step: &Step) -> Result<()> {
        self.calls.push(format!(
            "preflight: profile deployed {}",
            step.host.exists("/etc/tuned/engine_test/tuned.conf")
        ));
        if self.refuse {
            return Err(Error::input("the extension refuses this node"));
        }
        Ok(())
    }

    fn finish(&mut self, step: &Step, tuned: &Activated<'_>) -> Result<Interrupt> {
        let file = tuned.profile_file("engine_test");
        self.calls.push(format!(
            "finish: {} deployed {}, active {:?}",
            file.display(),
            step.host.exists(&file),
            step.host
                .read_to_string("/etc/tuned/active_profile")?
                .unwrap_or_default()
        ));
        tuned.restart_for_main_conf()?;
        Ok(Interrupt::service(["containerd".to_string()]))
    }
}

#[test]
fn a_preflight_refusal_leaves_the_node_unchanged() {
    let node = debian(Some("2.21.0"));
    node.clear_calls();
    let mut probe = Probe {
        refuse: true,
        ..Probe::default()
    };
    let e = engine::run(&step(&node, Mode::Config), &request(), &mut probe).unwrap_err();
    assert_eq!(e.to_string(), "the extension refuses this node");
    assert_eq!(probe.calls, ["preflight: profile deployed false"], "finish never ran");
    assert!(node.read("/etc/tuned/engine_test/tuned.conf").is_none());
    assert!(node.read("/etc/engine-test.conf").is_none());
    assert!(node.read("/etc/tuned/active_profile").is_none());
    assert!(
        !node.path("/var/lib/skyhook-packages/other").exists(),
        "no record written"
    );
    assert_eq!(calls_of(&node, "tuned-adm"), Vec::<String>::new(), "tuned not asked");
}

#[test]
fn the_finish_runs_after_activation_and_its_interrupt_is_combined() {
    let node = debian(Some("2.21.0"));
    node.clear_calls();
    let mut probe = Probe::default();
    let outcome = engine::run(&step(&node, Mode::Config), &request(), &mut probe).unwrap();
    assert_eq!(
        probe.calls,
        [
            "preflight: profile deployed false",
            "finish: /etc/tuned/engine_test/tuned.conf deployed true, active \"engine_test\\n\""
        ]
    );
    assert_eq!(node.read("/etc/engine-test.conf").as_deref(), Some("extra\n"));
    assert_eq!(
        outcome.interrupt,
        Some(Interrupt::service(["containerd".to_string()])),
        "tuned needs none (no bootloader option): the extension's interrupt is the step's"
    );
    assert!(
        calls_of(&node, "systemctl")
            .iter()
            .any(|c| c == "systemctl restart tuned"),
        "{:?}",
        calls_of(&node, "systemctl")
    );
}
