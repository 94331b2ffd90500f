// SPDX-License-Identifier: Apache-2.0
//! Interrupts: what the node must go through after a change before it takes effect.
//! Declared in the SCR, never by the package; a package only says which one its
//! change needs. Two spellings exist: the SCR's (`reboot`, `service`,
//! `restartAllServices`, `noop`) and the agent's wire form, base64-encoded JSON
//! (`node_restart`, `service_restart`, `restart_all_services`, `no_op`).
//! Interrupts are ordered by cost, so that the needs of several changes combine
//! into the cheapest interrupt that covers them all.

use std::fmt;

use base64::Engine as _;
use serde_json::{Value, json};

use crate::error::{Error, Result};

/// The tag of the machine-readable interrupt report line (see [`Interrupt::report_line`]).
pub const REPORT_TAG: &str = "skyhook-interrupt-needed: ";

/// An interrupt, cheapest first.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Interrupt {
    /// Nothing to do.
    NoOp,
    /// `systemctl daemon-reload`, then restart each service.
    Service {
        /// Units to restart, sorted, without duplicates.
        services: Vec<String>,
    },
    /// `service procps force-reload`: reloads the sysctl settings through the procps
    /// init script (that is all the agent does for it; it restarts no service).
    RestartAllServices,
    /// Reboot the node: the most expensive interrupt on a fleet.
    Reboot,
}

impl Interrupt {
    /// A service restart of `services` (sorted, deduplicated).
    pub fn service<S: Into<String>>(services: impl IntoIterator<Item = S>) -> Self {
        let mut services: Vec<String> = services.into_iter().map(Into::into).collect();
        services.sort();
        services.dedup();
        Interrupt::Service { services }
    }

    /// The cheapest interrupt that covers both `self` and `other`.
    pub fn combine(self, other: Interrupt) -> Interrupt {
        match (self, other) {
            (Interrupt::Service { services: a }, Interrupt::Service { services: b }) => {
                Interrupt::service(a.into_iter().chain(b))
            }
            (a, b) => a.max(b),
        }
    }

    /// The cheapest interrupt covering every one of `needs` (`NoOp` when empty).
    pub fn covering(needs: impl IntoIterator<Item = Interrupt>) -> Interrupt {
        needs.into_iter().fold(Interrupt::NoOp, Interrupt::combine)
    }

    /// The SCR spelling as JSON: `{"type":"service","services":["containerd"]}`.
    pub fn to_scr(&self) -> Value {
        match self {
            Interrupt::NoOp => json!({"type": "noop"}),
            Interrupt::Service { services } => json!({"type": "service", "services": services}),
            Interrupt::RestartAllServices => json!({"type": "restartAllServices"}),
            Interrupt::Reboot => json!({"type": "reboot"}),
        }
    }

    /// The agent's wire form as JSON: `{"type":"service_restart","services":[…]}`.
    pub fn to_wire(&self) -> Value {
        match self {
            Interrupt::NoOp => json!({"type": "no_op"}),
            Interrupt::Service { services } => json!({"type": "service_restart", "services": services}),
            Interrupt::RestartAllServices => json!({"type": "restart_all_services"}),
            Interrupt::Reboot => json!({"type": "node_restart"}),
        }
    }

    /// The wire form, base64-encoded as the agent receives it.
    pub fn to_wire_base64(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(self.to_wire().to_string())
    }

    /// Parses either spelling from JSON.
    pub fn from_json(value: &Value) -> Result<Self> {
        let bad = |why: &str| Error::input(format!("interrupt {value}: {why}"));
        let kind = value
            .get("type")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("no \"type\" string"))?;
        let services = || -> Result<Vec<String>> {
            let list = value
                .get("services")
                .and_then(Value::as_array)
                .ok_or_else(|| bad("a service interrupt needs a \"services\" list"))?;
            let names: Option<Vec<String>> = list.iter().map(|s| s.as_str().map(str::to_string)).collect();
            names
                .filter(|n| !n.is_empty())
                .ok_or_else(|| bad("\"services\" must be a non-empty list of unit names"))
        };
        Ok(match kind {
            "noop" | "no_op" => Interrupt::NoOp,
            "service" | "service_restart" => Interrupt::service(services()?),
            "restartAllServices" | "restart_all_services" => Interrupt::RestartAllServices,
            "reboot" | "node_restart" => Interrupt::Reboot,
            other => return Err(bad(&format!("unknown type {other:?}"))),
        })
    }

    /// The machine-readable line a step prints once, at its end, to say which
    /// interrupt its change needs: [`REPORT_TAG`] then the SCR spelling as JSON.
    /// [`Interrupt::from_report_line`] reads it back.
    pub fn report_line(&self) -> String {
        format!("{REPORT_TAG}{}", self.to_scr())
    }

    /// The interrupt reported by `line`, if it carries [`REPORT_TAG`] (anywhere: log
    /// and relay prefixes come before it); `None` for any other line and for a
    /// tagged line whose JSON does not parse.
    pub fn from_report_line(line: &str) -> Option<Self> {
        let (_, json) = line.split_once(REPORT_TAG)?;
        let value: Value = serde_json::from_str(json.trim()).ok()?;
        Self::from_json(&value).ok()
    }

    /// Parses the agent's base64-encoded wire form.
    pub fn from_wire_base64(text: &str) -> Result<Self> {
        let raw = base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .map_err(|e| Error::input(format!("interrupt {text:?} is not base64: {e}")))?;
        let value: Value = serde_json::from_slice(&raw)
            .map_err(|e| Error::input(format!("interrupt {text:?} is not base64-encoded JSON: {e}")))?;
        Self::from_json(&value)
    }
}

impl fmt::Display for Interrupt {
    /// The SCR spelling in YAML flow style, ready to paste into an SCR:
    /// `{type: service, services: [containerd]}`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Interrupt::NoOp => f.write_str("{type: noop}"),
            Interrupt::Service { services } => write!(f, "{{type: service, services: [{}]}}", services.join(", ")),
            Interrupt::RestartAllServices => f.write_str("{type: restartAllServices}"),
            Interrupt::Reboot => f.write_str("{type: reboot}"),
        }
    }
}

/// What config says when the SCR dropped a key whose change needs a reboot (tuning's
/// `grub.conf`, kdump's `crashkernel`): the boot configuration changed, but the
/// operator never interrupts for a removed key, so the running kernel keeps `what`
/// until the node's next reboot.
pub fn removed_key_keeps_until_reboot(key: &str, what: &str) -> String {
    format!(
        "configMap key {key:?} was removed: the boot configuration no longer has {what}, but the operator never \
         interrupts for a removed key, so this node keeps running with them until its next reboot. To drop them \
         now, reboot the node (drain it first), or change a key whose configInterrupt is {{type: reboot}}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all() -> Vec<Interrupt> {
        vec![
            Interrupt::NoOp,
            Interrupt::service(["containerd", "kubelet"]),
            Interrupt::RestartAllServices,
            Interrupt::Reboot,
        ]
    }

    #[test]
    fn round_trips_in_both_spellings() {
        for i in all() {
            assert_eq!(Interrupt::from_json(&i.to_scr()).unwrap(), i);
            assert_eq!(Interrupt::from_json(&i.to_wire()).unwrap(), i);
            assert_eq!(Interrupt::from_wire_base64(&i.to_wire_base64()).unwrap(), i);
        }
    }

    #[test]
    fn uses_the_agents_wire_names() {
        let names: Vec<String> = all()
            .iter()
            .map(|i| i.to_wire()["type"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(
            names,
            ["no_op", "service_restart", "restart_all_services", "node_restart"]
        );
        let scr: Vec<String> = all()
            .iter()
            .map(|i| i.to_scr()["type"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(scr, ["noop", "service", "restartAllServices", "reboot"]);
        assert_eq!(
            Interrupt::from_wire_base64("eyJ0eXBlIjogIm5vZGVfcmVzdGFydCJ9").unwrap(),
            Interrupt::Reboot,
            "{{\"type\": \"node_restart\"}} as the agent encodes it"
        );
    }

    #[test]
    fn combines_to_the_cheapest_covering_interrupt() {
        assert_eq!(Interrupt::covering([]), Interrupt::NoOp);
        assert_eq!(
            Interrupt::covering([
                Interrupt::service(["b"]),
                Interrupt::NoOp,
                Interrupt::service(["a", "b"])
            ]),
            Interrupt::service(["a", "b"])
        );
        assert_eq!(
            Interrupt::covering([Interrupt::service(["a"]), Interrupt::Reboot]),
            Interrupt::Reboot
        );
        assert!(Interrupt::NoOp < Interrupt::service(["x"]));
        assert!(Interrupt::service(["x"]) < Interrupt::RestartAllServices);
        assert!(Interrupt::RestartAllServices < Interrupt::Reboot);
    }

    #[test]
    fn displays_the_scr_spelling() {
        assert_eq!(
            Interrupt::service(["containerd"]).to_string(),
            "{type: service, services: [containerd]}"
        );
        assert_eq!(Interrupt::Reboot.to_string(), "{type: reboot}");
    }

    #[test]
    fn the_report_line_is_read_back_by_the_same_type() {
        for i in all() {
            let line = format!("[config/tuning] info: {}", i.report_line());
            assert_eq!(Interrupt::from_report_line(&line), Some(i));
        }
        assert_eq!(
            Interrupt::Reboot.report_line(),
            "skyhook-interrupt-needed: {\"type\":\"reboot\"}"
        );
        assert_eq!(Interrupt::from_report_line("interrupt needed: {type: reboot}"), None);
        assert_eq!(
            Interrupt::from_report_line("skyhook-interrupt-needed: {\"type\":\"shutdown\"}"),
            None
        );
    }

    #[test]
    fn rejects_malformed_interrupts() {
        for bad in [
            json!({}),
            json!({"type": "shutdown"}),
            json!({"type": "service"}),
            json!({"type": "service", "services": []}),
        ] {
            assert!(Interrupt::from_json(&bad).is_err(), "{bad}");
        }
        assert!(Interrupt::from_wire_base64("!!!").is_err());
    }
}
