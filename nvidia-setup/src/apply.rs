// SPDX-License-Identifier: Apache-2.0
//! apply: carries out the plan. The headers link on bcm; the kernel install in the
//! kernel entry; otherwise the running kernel is checked, then the combination's
//! steps run.
//!
//! aks-h100's steps are [`crate::ib_modules`] and [`crate::aks`]. The EKS steps
//! after the kernel (apt, EFA, OFI, chrony, RAID0) are not in this version: apply
//! refuses them
//! (exit 1, after the kernel check, before any change) instead of reporting a node
//! ready that is not. Run the kernel entry with this image and those steps with
//! upstream's until they are here (README).

use skyhook_core::{Error, Mode, Outcome, Result, Step};

use crate::combos::Steps;
use crate::kernel::{self, install};
use crate::plan::{self, Plan};
use crate::{aks, headers, ib_modules};

/// apply.
pub fn apply(step: &Step) -> Result<Outcome> {
    let (plan, combination) = plan::plan(step)?;
    match plan {
        Plan::Headers => headers::apply(step).map(|()| Outcome::done()),
        Plan::InstallKernel { target, pin } => install::install(step, &target, pin),
        Plan::Steps { kernel, steps } => {
            if let Some(target) = &kernel {
                kernel::verify(&step.host, target)?;
            }
            match steps {
                Steps::Aks => {
                    ib_modules::apply(step)?;
                    aks::take_over_upstream(step)?;
                    aks::engine(step, Mode::Config)
                }
                Steps::Eks | Steps::Bcm => Err(not_built(&combination.name(), steps)),
            }
        }
    }
}

/// The refusal of steps this version does not carry.
pub fn not_built(combination: &str, steps: Steps) -> Error {
    let what = match steps {
        Steps::Eks => "apt (upgrade opt-in), EFA, OFI, chrony and RAID0 over the NVMe instance storage",
        Steps::Aks | Steps::Bcm => "none",
    };
    Error::action(format!(
        "{combination}: this version of nvidia-setup runs the kernel step (NVIDIA_SETUP_INSTALL_KERNEL=true), \
         aks-h100 and bcm's headers link; the {combination} steps after the kernel ({what}) are not in it yet, and nothing was \
         changed. Run that entry with the bash package's image until a release of this package lists them"
    ))
}
