// SPDX-License-Identifier: Apache-2.0
//! File formats the packages write and read: sysctl.d, limits, systemd unit files, PAM stacks, the kernel's mount table, and sizes for people.

pub mod human;
pub mod limits;
pub mod mountinfo;
pub mod pam;
pub mod sysctl;
pub mod unitfile;
