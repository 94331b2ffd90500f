// SPDX-License-Identifier: Apache-2.0
//! The nvidia-tuned step binary: `nvidia-tuned <mode>`, as config.json runs it.

skyhook_core::package_main!(nvidia_tuned::NvidiaTuned);
