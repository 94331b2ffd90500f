// SPDX-License-Identifier: Apache-2.0
//! The release process: tag checks, release notes, the images a change affects, and the recorded figures.

pub mod changed;
pub mod figures;
pub mod notes;
pub mod tag;
