// SPDX-License-Identifier: Apache-2.0
//! Building: the static step binaries and dist trees, the tool itself, the toolchains and platforms, the Dockerfiles and the package images.

pub mod dist;
pub mod dist_self;
pub mod dockerfiles;
pub mod elf;
pub mod image;
pub mod platform;
pub mod toolchain;
