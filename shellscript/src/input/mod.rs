// SPDX-License-Identifier: Apache-2.0
//! What the SCR gives the package: the stage's script from the configMap
//! ([`script`]) and the time limit and grace period from its environment
//! ([`settings`]).

pub mod script;
pub mod settings;
