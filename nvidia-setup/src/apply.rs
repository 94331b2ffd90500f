// SPDX-License-Identifier: Apache-2.0
//! apply: carries out the plan. The headers link on bcm; the kernel install in the
//! kernel entry; otherwise the running kernel is checked, then the combination's
//! steps run: aks-h100's are [`crate::ib_modules`] and [`crate::aks`], the EKS
//! ones [`crate::eks`].

use skyhook_core::{Mode, Outcome, Result, Step};

use crate::combos::Steps;
use crate::kernel::{self, install};
use crate::plan::{self, Plan};
use crate::{aks, eks, headers, ib_modules};

/// apply.
pub fn apply(step: &Step) -> Result<Outcome> {
    let (plan, combination) = plan::plan(step)?;
    match plan {
        Plan::InstallKernel { target, pin } => install::install(step, &target, pin),
        Plan::Steps {
            kernel,
            steps,
            efa,
            apt_upgrade,
        } => {
            if let Some(target) = &kernel {
                kernel::verify(&step.host, target)?;
            }
            match steps {
                Steps::Aks => {
                    ib_modules::apply(step)?;
                    aks::take_over_upstream(step)?;
                    aks::engine().run(step, Mode::Config)
                }
                Steps::Eks => eks::apply(step, combination, &efa, apt_upgrade),
                Steps::Bcm => headers::apply(step).map(|()| Outcome::done()),
            }
        }
    }
}
