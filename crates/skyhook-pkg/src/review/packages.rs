// SPDX-License-Identifier: Apache-2.0
//! The packages this tool was built with: the one list `lint` and `profiles` loop
//! over. What each package says of an SCR entry (validation, interrupts, catalog) is
//! the package's own, through [`Review`].

use skyhook_core::review::Review;

/// Every package of the workspace.
pub fn all() -> [&'static dyn Review; 9] {
    [
        &bind_mount::BindMount,
        &copy_fail::CopyFail,
        &kdump::Kdump,
        &nvidia_setup::NvidiaSetup,
        &nvidia_tuned::NvidiaTuned,
        &nvidia_tuning_gke::NvidiaTuningGke,
        &shellscript::Shellscript,
        &tuned::Tuned,
        &tuning::Tuning,
    ]
}

/// The package named `name`: its workspace folder, the last part of its image name.
pub fn named(name: &str) -> Option<&'static dyn Review> {
    all().into_iter().find(|p| p.name() == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_workspace_package_is_listed_once_by_its_folder_with_its_config_json_version() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut on_disk: Vec<(String, String)> = std::fs::read_dir(&root)
            .unwrap()
            .flatten()
            .filter_map(|e| {
                let text = std::fs::read_to_string(e.path().join("config.json")).ok()?;
                let config: serde_json::Value = serde_json::from_str(&text).unwrap();
                Some((
                    e.file_name().to_string_lossy().into_owned(),
                    config["package_version"].as_str().unwrap().to_string(),
                ))
            })
            .collect();
        on_disk.sort();
        let listed: Vec<(String, String)> = all()
            .iter()
            .map(|p| (p.name().to_string(), p.version().to_string()))
            .collect();
        assert_eq!(listed, on_disk);
    }
}
