// SPDX-License-Identifier: Apache-2.0
//! Kernel arguments, one model for every package: command-line tokens and the rule
//! for what may be written ([`cmdline`]), grubby ([`grubby`]), the one byte-preserving
//! editor of GRUB's defaults, what grubby-bls changes beside the entries ([`bls`]), ([`defaults`]), files edited but not owned ([`edited`]),
//! the boot configuration kinds and their regeneration ([`config`]), "a package
//! owns these arguments" with per-entry originals and a pending flag ([`owned`]),
//! GRUB's menu and saved entry ([`menu`]), the huge page sizes a kernel registers and reserves ([`hugepages`]), and what a
//! review warns of them ([`hugepage_warnings`]).

pub mod bls;
pub mod cmdline;
pub mod config;
pub mod defaults;
pub mod edited;
pub mod grubby;
pub mod hugepage_warnings;
pub mod hugepages;
pub mod menu;
pub mod owned;

pub use cmdline::{check_arg, contains_in_order, key_of, running_cmdline, split_cmdline, with_key};
pub use config::{BootConfig, Method};
pub use owned::{ArgsRecord, OwnArgs};
