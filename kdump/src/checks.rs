// SPDX-License-Identifier: Apache-2.0
//! apply-check, config-check and post-interrupt-check. They verify, they never repair, and list
//! every unmet expectation with what to look at.

use skyhook_core::boot::with_key;
use skyhook_core::boot::{BootConfig, running_cmdline};
use skyhook_core::host::systemd::Systemd;
use skyhook_core::os::distro::Family;
use skyhook_core::os::pkgmgr::{PackageManager, Retry};
use skyhook_core::records::state::StateStore;
use skyhook_core::{Checklist, Host, Outcome, Result, Step};

use crate::autoreset;
use crate::boot::{Boot, KEY};
use crate::crashkernel::{CrashKernel, human};
use crate::input::{Input, use_kdump};
use crate::platform::Platform;
use crate::service::{self, first_difference};
use crate::state::State;

/// The size of the memory reserved for a crash kernel, in bytes (deprecated since the
/// kexec sysfs files moved to `/sys/kernel/kexec/`, November 2025 series; older
/// kernels have only this one).
pub const KEXEC_CRASH_SIZE: &str = "/sys/kernel/kexec_crash_size";
/// `1` when a crash kernel is loaded (deprecated, as [`KEXEC_CRASH_SIZE`]).
pub const KEXEC_CRASH_LOADED: &str = "/sys/kernel/kexec_crash_loaded";
/// The size file under its current name (ABI `sysfs-kernel-kexec-kdump`).
pub const KEXEC_CRASH_SIZE_NEW: &str = "/sys/kernel/kexec/crash_size";
/// The loaded file under its current name.
pub const KEXEC_CRASH_LOADED_NEW: &str = "/sys/kernel/kexec/crash_loaded";

/// The file to read: the current name where the kernel has it, else the deprecated one.
pub fn sysfs_file(host: &Host, current: &'static str, deprecated: &'static str) -> &'static str {
    if host.exists(current) { current } else { deprecated }
}

/// config-check: the boot configuration holds exactly our `crashkernel=`, the service
/// configuration is the configMap's, the service is enabled.
pub fn config_check(step: &Step) -> Result<Outcome> {
    let platform = Platform::detect(step)?;
    let input = Input::parse(&step.configmaps)?;
    let store = step.state();
    let state: State = store.load()?;
    let mut c = Checklist::new();
    check_boot(
        &step.host,
        &platform,
        &store,
        &state,
        input.crashkernel.as_ref(),
        &mut c,
    )?;
    check_kdump_conf(&step.host, &platform, &state, &input, &mut c)?;
    let unit = platform.service();
    c.expect(Systemd::new(&step.host).is_enabled(unit)?, || {
        format!("the {unit} service is not enabled: run apply again, or `systemctl enable {unit}`")
    });
    c.finish()?;
    Ok(Outcome::done())
}

/// Why `found` (the node's kdump.conf) is not what config writes there, as each
/// kdumpctl reads it: a quoted `"no"` is `no` only for kdump-utils v1.0.59+.
fn not_pinned(path: &str, found: &str) -> String {
    let quoted = autoreset::setting(found.as_bytes())
        .filter(|(_, v)| !autoreset::reads_no(v, false) && autoreset::reads_no(v, true))
        .map(|(line, v)| {
            format!(
                " (line {line} says {v}: kdumpctl of kexec-tools and of kdump-utils before v1.0.59 reads the quotes \
                 too, so that is not `no`)"
            )
        })
        .unwrap_or_default();
    format!(
        "{path} does not say `{}`{quoted}: kdumpctl resets crashkernel= to the distribution's default at the next \
         kernel install; run config again",
        autoreset::PINNED_LINE
    )
}

/// The service configuration is what config makes it: the configMap's, with
/// `auto_reset_crashkernel no` where the package sets crashkernel on RHEL-like hosts
/// whose kdumpctl knows the option, and without it where kdumpctl does not.
fn check_kdump_conf(host: &Host, platform: &Platform, state: &State, input: &Input, c: &mut Checklist) -> Result<()> {
    let path = platform.kdump_conf();
    let sets_crashkernel = input.crashkernel.is_some();
    let desired = service::desired(host, platform, state, input.kdump_conf.as_deref(), sets_crashkernel)?;
    match (desired.text, &state.kdump_conf) {
        (Some(expected), _) => match host.read_to_string(path)? {
            None => c.fail(format!("{path} does not exist; run config again")),
            Some(found) if input.kdump_conf.is_none() => {
                c.expect(found == expected, || not_pinned(path, &found));
            }
            Some(found) => {
                c.expect(found == expected, || {
                    format!(
                        "{path} is not the configMap's kdump.conf ({}); run config again",
                        first_difference(&expected, &found)
                    )
                });
            }
        },
        (None, Some(_)) => c.fail(format!(
            "the configMap has no kdump.conf key, but the package's {path} is still recorded as deployed; run config again"
        )),
        (None, None) => {}
    }
    Ok(())
}

fn check_boot(
    host: &Host,
    platform: &Platform,
    store: &StateStore,
    state: &State,
    crashkernel: Option<&CrashKernel>,
    c: &mut Checklist,
) -> Result<()> {
    match (crashkernel, &state.boot) {
        (Some(ck), _) => {
            let boot = Boot::new(host, BootConfig::detect(host, platform.family)?, store);
            c.expect_none(boot.check(&ck.tokens())?);
        }
        (None, Some(rec)) => c.fail(format!(
            "the configMap has no crashkernel key, but {} set by an earlier config is still recorded; run config again",
            rec.tokens().join(" ")
        )),
        (None, None) => log::info!("no crashkernel key: the boot configuration is the distribution's, not checked"),
    }
    Ok(())
}

/// post-interrupt-check: the running kernel was booted with our value, reserved the
/// memory, has a crash kernel loaded, and the service is active.
pub fn post_interrupt_check(step: &Step) -> Result<Outcome> {
    let platform = Platform::detect(step)?;
    let input = Input::parse(&step.configmaps)?;
    let host = &step.host;
    let mut c = Checklist::new();

    let cmdline = running_cmdline(host)?;
    let found = with_key(&cmdline, KEY);
    let booted_with_ours = match &input.crashkernel {
        Some(ck) => {
            let token = ck.tokens().join(" ");
            let overridden = crate::crashkernel::not_in_effect(&found, &ck.tokens());
            let ok = overridden.is_none();
            c.expect(ok, || {
                let what = overridden.unwrap_or_default();
                format!(
                    "the running kernel was not booted with {token}: /proc/cmdline {what}. Has the node rebooted since \
                     config? Check that the default boot entry carries it ({}) and that the node boots that entry",
                    match platform.family {
                        Family::Debian => "/boot/grub/grub.cfg",
                        Family::Rhel => "`grubby --info=DEFAULT`",
                    }
                )
            });
            ok
        }
        None => {
            c.expect(!found.is_empty(), || {
                "the running kernel was booted without crashkernel= (/proc/cmdline) and the configMap has no \
                 crashkernel key: nothing asks the kernel to reserve memory for a crash kernel; set the crashkernel key"
                    .to_string()
            });
            !found.is_empty()
        }
    };

    if let Some(ck) = &input.crashkernel {
        check_next_boot(host, &platform, &step.state(), ck, &mut c)?;
    }

    let size_file = sysfs_file(host, KEXEC_CRASH_SIZE_NEW, KEXEC_CRASH_SIZE);
    let size = read_number(host, size_file)?;
    match size {
        None => c.fail(format!(
            "{size_file} does not exist: this kernel was built without crash dump support \
             (CONFIG_KEXEC_CORE / CONFIG_CRASH_DUMP), or /sys is not mounted"
        )),
        Some(0) => c.fail(reservation_failed(
            host,
            size_file,
            input.crashkernel.as_ref(),
            booted_with_ours,
        )),
        Some(n) => match input.crashkernel.as_ref().filter(|_| booted_with_ours) {
            Some(ck) => check_reserved_size(host, size_file, ck, n, &mut c),
            None => log::info!("{} reserved for the crash kernel", human(n)),
        },
    }

    let loaded_file = sysfs_file(host, KEXEC_CRASH_LOADED_NEW, KEXEC_CRASH_LOADED);
    let loaded = host.read_to_string(loaded_file)?.map(|s| s.trim().to_string());
    c.expect(loaded.as_deref() == Some("1"), || {
        not_loaded(host, &platform, loaded_file, loaded.as_deref(), size == Some(0))
    });

    let unit = platform.service();
    match Systemd::new(host).is_active(unit)? {
        Some(active) => {
            c.expect(active, || {
                format!("the {unit} service is not active: see {}", platform.status_hint())
            });
        }
        None => c.skip(format!("whether {unit} is active: systemd is not running on this host")),
    }
    c.finish()?;
    Ok(Outcome::done())
}

/// On grubby hosts, the boot entries still carry `ck` as `grubby --info=ALL` reports
/// them: the running kernel may have it while kdumpctl reset the entries since (a
/// kernel installed after the reboot), and the next boot would lose it.
fn check_next_boot(
    host: &Host,
    platform: &Platform,
    store: &StateStore,
    ck: &CrashKernel,
    c: &mut Checklist,
) -> Result<()> {
    if !platform.has_kdumpctl() {
        return Ok(());
    }
    // Only grubby hosts: elsewhere kdumpctl does not reset (and a host without a
    // boot tool is no reason to fail this check).
    if !matches!(BootConfig::detect(host, platform.family), Ok(BootConfig::Grubby)) {
        return Ok(());
    }
    for unmet in Boot::new(host, BootConfig::Grubby, store).check(&ck.tokens())? {
        c.fail(format!(
            "{unmet}: the next boot loses it (kdumpctl resets crashkernel= at a kernel install unless /etc/kdump.conf \
             says `{}`); run config again",
            autoreset::PINNED_LINE
        ));
    }
    Ok(())
}

/// The reservation the kernel reports (`reported` bytes in `file`, [`KEXEC_CRASH_SIZE`] or its current name) is
/// at least the main region `ck` asks for. Older kernels count only the main region
/// (`crashk_res`) in that file; current ones add the low region (`crashk_low_res`:
/// `,low`, or the default one that `,high`, or a fallback above 4 GiB, brings). So
/// the file may say more than the main region, never less unless memory was
/// released since boot (a write to the file shrinks the reservation). The range is chosen from `MemTotal`, which is below
/// the memory the kernel chose from, so the expected size is never too high.
fn check_reserved_size(host: &Host, file: &str, ck: &CrashKernel, reported: u64, c: &mut Checklist) {
    let Some(expected) = host.total_memory().ok().and_then(|total| ck.reservation(total)) else {
        log::info!("{} reserved for the crash kernel", human(reported));
        return;
    };
    c.expect(reported >= expected, || {
        format!(
            "{file} says {} ({reported} bytes) are reserved for the crash kernel, less than the {} \
             ({expected} bytes) that crashkernel={ck} asks for: memory was released by a write to \
             {file} since boot. Reboot the node to reserve it again",
            human(reported),
            human(expected)
        )
    });
    if reported >= expected {
        let low = match ck.low() {
            Some(low) => format!(", {} of it below 4 GiB (,low)", human(low)),
            None => String::new(),
        };
        log::info!(
            "{} reserved for the crash kernel (crashkernel={ck} asks {}{low}; newer kernels count the low \
             region in {file} too)",
            human(reported),
            human(expected)
        );
    }
}

/// Why no memory is reserved, as precisely as the node tells.
fn reservation_failed(host: &Host, file: &str, ck: Option<&CrashKernel>, booted_with_ours: bool) -> String {
    let mut text = format!("no memory is reserved for a crash kernel ({file} is 0): ");
    if !booted_with_ours {
        text.push_str("the running kernel was not booted with the crashkernel value (see above)");
        return text;
    }
    let total = host.total_memory().ok();
    match (ck, total) {
        (Some(ck), Some(total)) if ck.reservation(total) == Some(0) => text.push_str(&format!(
            "no range of crashkernel={ck} covers this node's memory ({}); add a range for it",
            human(total)
        )),
        (Some(ck), _) if matches!(ck.form(), crate::crashkernel::Form::Auto) => text.push_str(
            "this kernel does not understand crashkernel=auto (only RHEL 8 and older do); give a size or a range list",
        ),
        _ => text.push_str(
            "the kernel could not reserve it: too little free memory in the range it must come from \
             (below 4 GiB unless ,high is given), the @offset region is in use, or the size is too large for \
             this node; see `dmesg | grep -i crashkernel`",
        ),
    }
    text
}

/// Why no crash kernel is loaded, with the likely causes this node shows.
fn not_loaded(host: &Host, platform: &Platform, file: &str, loaded: Option<&str>, nothing_reserved: bool) -> String {
    let mut text = match loaded {
        None => format!("{file} does not exist: this kernel has no crash dump support"),
        Some(v) => format!(
            "no crash kernel is loaded ({file} is {v:?}): the {} service did not load one; see {}",
            platform.service(),
            platform.status_hint()
        ),
    };
    if nothing_reserved {
        text.push_str("; nothing can be loaded while no memory is reserved");
    }
    if secure_boot(host) {
        text.push_str(
            "; Secure Boot is enabled: the kernel only accepts a signed crash kernel loaded with kexec_file_load \
             (kexec -s), so check the crash kernel's signature and the kexec arguments",
        );
    }
    if let Some(mode) = lockdown(host) {
        text.push_str(&format!(
            "; kernel lockdown is {mode:?}, which refuses unsigned kexec images"
        ));
    }
    if platform.has_use_kdump() {
        let conf = host
            .read_to_string(platform.kdump_conf())
            .ok()
            .flatten()
            .unwrap_or_default();
        if use_kdump(&conf).as_deref() != Some("1") {
            text.push_str(&format!(
                "; USE_KDUMP is not 1 in {}, so kdump-tools does not load a crash kernel",
                platform.kdump_conf()
            ));
        }
    }
    text
}

/// Whether the firmware reports Secure Boot enabled (the `SecureBoot-…` EFI variable's value is 1).
fn secure_boot(host: &Host) -> bool {
    const VARS: &str = "/sys/firmware/efi/efivars";
    host.list_dir(VARS)
        .unwrap_or_default()
        .iter()
        .find(|n| n.starts_with("SecureBoot-"))
        .and_then(|n| host.read(format!("{VARS}/{n}")).ok().flatten())
        .is_some_and(|bytes| bytes.last() == Some(&1))
}

/// The kernel lockdown mode, when one is in force (`integrity`, `confidentiality`).
fn lockdown(host: &Host) -> Option<String> {
    let text = host.read_to_string("/sys/kernel/security/lockdown").ok()??;
    let start = text.find('[')? + 1;
    let end = start + text[start..].find(']')?;
    let mode = &text[start..end];
    (mode != "none").then(|| mode.to_string())
}

/// A number in a sysfs file; `None` when the file does not exist.
fn read_number(host: &Host, path: &str) -> Result<Option<u64>> {
    Ok(host.read_to_string(path)?.map(|t| t.trim().parse::<u64>().unwrap_or(0)))
}
/// apply-check: the package and `kexec` are installed, the service is enabled.
pub fn apply_check(step: &Step) -> Result<Outcome> {
    let platform = Platform::detect(step)?;
    let pm = PackageManager::detect(&step.host, platform.family, Retry::default())?;
    let (package, unit) = (platform.package(), platform.service());
    let mut c = Checklist::new();
    c.expect(pm.is_installed(package)?, || {
        format!("{package} is not installed: see the apply step's log for the package manager's error")
    });
    c.expect(step.host.which("kexec").is_some(), || {
        format!("kexec is not on this host (it comes with {package}): see the apply step's log")
    });
    c.expect(Systemd::new(&step.host).is_enabled(unit)?, || {
        format!("the {unit} service is not enabled (`systemctl is-enabled {unit}`): run apply again, or `systemctl enable {unit}`")
    });
    c.finish()?;
    Ok(Outcome::done())
}
