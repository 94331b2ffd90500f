// SPDX-License-Identifier: Apache-2.0
//! The nvidia-tuning-gke step binary: `nvidia-tuning-gke <mode>`, as config.json runs it.

skyhook_core::package_main!(nvidia_tuning_gke::NvidiaTuningGke);
