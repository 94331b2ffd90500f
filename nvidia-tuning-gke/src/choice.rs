// SPDX-License-Identifier: Apache-2.0
//! The accelerator of this node: the configMap's name, or for `auto` the one the
//! node shows (its GPU Feature Discovery label `nvidia.com/gpu.product` in the node
//! metadata, else its NVIDIA PCI devices), checked against the catalog by
//! [`skyhook_core::platform::accelerator::resolve`].

use skyhook_core::platform::accelerator::{self, Choice};
use skyhook_core::{Result, Step};

/// The accelerator for `requested` (a name or `auto`) on the step's node, among
/// `supported`; an unknown, unsupported, undetectable or mixed one is bad input
/// listing what is supported.
pub fn choose(step: &Step, requested: &str, supported: &[&str]) -> Result<Choice> {
    let metadata = step.node_metadata();
    Ok(accelerator::resolve(requested, &metadata, &step.host, supported)?)
}
