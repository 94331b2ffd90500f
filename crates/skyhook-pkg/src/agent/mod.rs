// SPDX-License-Identifier: Apache-2.0
//! The local agent: a package run on this machine as the Skyhook agent and operator run it on a node (`skyhook-pkg run`).

pub mod node;
pub mod run;
pub mod scr;
pub mod stages;
