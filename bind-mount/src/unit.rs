// SPDX-License-Identifier: Apache-2.0
//! The mount unit: its text, its owner marker and the units an instance owns.
//! The first line marks the owner (`# Managed by skyhook package bind-mount;
//! instance=<scope>/<key>`); the marker of the upstream bash package
//! (`# Managed by NodeWright package bind-mount; instance=…`) for the same instance
//! is recognised as ours too, so a node it prepared upgrades in place.

use skyhook_core::formats::unitfile;
use skyhook_core::{Error, Host, Result};

use crate::identity::Instance;
use crate::input::Input;

/// Where the package writes its units.
pub const UNIT_DIR: &str = "/etc/systemd/system";

/// The unit's target: enabling links it into `local-fs.target.wants`.
pub const WANTED_BY: &str = "local-fs.target";

/// The path of unit `name`.
pub fn path(name: &str) -> String {
    format!("{UNIT_DIR}/{name}")
}

/// The owner marker line of `instance`.
pub fn marker(instance: &Instance) -> String {
    format!("# Managed by skyhook package bind-mount; instance={}", instance.id())
}

/// Whether unit text `text` carries `instance`'s marker (ours or upstream's) as a
/// whole line.
pub fn is_owned_by(text: &str, instance: &Instance) -> bool {
    let ours = marker(instance);
    let upstream = format!("# Managed by NodeWright package bind-mount; instance={}", instance.id());
    text.lines().any(|l| l == ours || l == upstream)
}

/// The unit text for `input`. `AssertDirectoryNotEmpty=!` makes systemd itself
/// refuse to mount over a target that filled up since the package checked it;
/// `Before=` the kubelet units is ordering on reboot, not a gate.
pub fn render(instance: &Instance, input: &Input) -> Result<String> {
    let (s, t) = (&input.source, &input.target);
    let text = format!(
        "{marker}\n\
         [Unit]\n\
         Description=Bind {s} at {t} (skyhook package bind-mount)\n\
         RequiresMountsFor={s}\n\
         AssertDirectoryNotEmpty=!{t}\n\
         Before={WANTED_BY} kubelet.service snap.kubelet-eks.daemon.service\n\
         \n\
         [Mount]\n\
         What={s}\n\
         Where={t}\n\
         Type=none\n\
         Options=bind\n\
         \n\
         [Install]\n\
         WantedBy={WANTED_BY}\n",
        marker = marker(instance)
    );
    unitfile::parse(&text, &["Unit", "Mount", "Install"]).map_err(|errors| {
        Error::action(format!(
            "the rendered unit {} is not valid unit syntax (line {}: {}); this is a bug of the package",
            input.unit, errors[0].line, errors[0].reason
        ))
    })?;
    Ok(text)
}

/// The unit file `name` as it is: `None` when absent; a symbolic link or anything
/// but a regular file is refused (exit 1).
pub fn read(host: &Host, name: &str) -> Result<Option<String>> {
    let p = path(name);
    if host.read_link(&p)?.is_some() {
        return Err(Error::action(format!(
            "{p} is a symbolic link: the package never writes through or removes a link it did not make; \
             remove it or choose another target"
        )));
    }
    match host.read_no_follow(&p, "read the unit")? {
        None => Ok(None),
        Some((raw, _)) => Ok(Some(String::from_utf8_lossy(&raw).into_owned())),
    }
}

/// The `.mount` units in [`UNIT_DIR`] carrying `instance`'s marker (regular files
/// only), sorted.
pub fn owned(host: &Host, instance: &Instance) -> Result<Vec<String>> {
    let mut names = Vec::new();
    for name in host.list_dir(UNIT_DIR)? {
        if !name.ends_with(".mount") || host.read_link(path(&name))?.is_some() {
            continue;
        }
        if let Some((raw, _)) = host.read_no_follow(path(&name), "read the unit")?
            && is_owned_by(&String::from_utf8_lossy(&raw), instance)
        {
            names.push(name);
        }
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn instance(key: &str) -> Instance {
        Instance::from_parts("scr-uid-3", key).unwrap()
    }

    #[test]
    fn the_marker_is_a_whole_line_of_this_instance() {
        let i = Input {
            source: "/mnt/s".into(),
            target: "/mnt/t".into(),
            fstype: None,
            device_prefix: None,
            unit: "mnt-t.mount".into(),
        };
        let text = render(&instance("a"), &i).unwrap();
        assert!(text.starts_with("# Managed by skyhook package bind-mount; instance=scr-uid/a\n"));
        assert!(text.contains("\nAssertDirectoryNotEmpty=!/mnt/t\n") && text.contains("\nWhere=/mnt/t\n"));
        assert!(is_owned_by(&text, &instance("a")));
        assert!(!is_owned_by(&text, &instance("ab")));
        assert!(!is_owned_by(
            &text.replace("instance=scr-uid/a", "instance=scr-uid/ab"),
            &instance("a")
        ));
        assert!(is_owned_by(
            "# Managed by NodeWright package bind-mount; instance=scr-uid/a\n",
            &instance("a")
        ));
    }
}
