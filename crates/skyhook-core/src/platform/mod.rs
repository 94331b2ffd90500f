// SPDX-License-Identifier: Apache-2.0
//! The hardware a node runs on, as packages need to know it: its PCI devices
//! ([`pci`]) and which NVIDIA accelerator it carries ([`accelerator`]), from the
//! node's GPU Feature Discovery label or, without it, from those devices.

pub mod accelerator;
pub mod pci;
