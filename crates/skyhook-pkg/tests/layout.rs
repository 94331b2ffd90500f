// SPDX-License-Identifier: Apache-2.0
//! Every package keeps the one package layout of DESIGN.md ("One package layout"):
//! the same rooms by name (`input`, `apply`, `checks`, `uninstall`, `review`), and a
//! modes table in `lib.rs` whose handlers live in the room of their mode, so that a
//! change finds its place by name in any package.

use std::path::{Path, PathBuf};

use skyhook_core::Mode;

/// The rooms every package has; shellscript, which runs the SCR's script in every
/// mode, has `input`, `stage` and `review` instead.
const ROOMS: &[&str] = &["input", "apply", "checks", "uninstall", "review"];
const SHELLSCRIPT_ROOMS: &[&str] = &["input", "stage", "review"];

/// The workspace's packages: the folders holding a config.json.
fn packages() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("config.json").is_file() && p.join("src/lib.rs").is_file())
        .collect();
    found.sort();
    assert!(found.len() >= 8, "found only {found:?}");
    found
}

fn name(package: &Path) -> String {
    package.file_name().unwrap().to_string_lossy().into_owned()
}

/// Whether `src/` has the room `room`: a file, or a folder with its `mod.rs`.
fn has_room(package: &Path, room: &str) -> bool {
    let src = package.join("src");
    src.join(format!("{room}.rs")).is_file() || src.join(room).join("mod.rs").is_file()
}

/// The room a handler of `mode` belongs in.
fn room_of(mode: Mode) -> &'static str {
    match mode {
        Mode::Apply | Mode::Config | Mode::Upgrade | Mode::PostInterrupt => "apply",
        Mode::ApplyCheck | Mode::ConfigCheck | Mode::PostInterruptCheck | Mode::UpgradeCheck => "checks",
        Mode::Uninstall | Mode::UninstallCheck => "uninstall",
    }
}

/// Each `(Mode::<Name>, <handler>)` of a modes table in `lib_rs`: the mode's name and
/// the module its handler is in (`None`: a function of `lib.rs` itself, a dispatcher).
fn table_entries(lib_rs: &str) -> Vec<(String, Option<String>)> {
    let product = lib_rs.split("#[cfg(test)]").next().unwrap_or_default();
    product
        .split("(Mode::")
        .skip(1)
        .map(|rest| {
            let (mode, handler) = rest.split_once(',').expect("a mode table entry has a handler");
            let handler = handler.split("];").next().unwrap_or_default();
            let module = handler
                .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .find(|token| token.contains("::"))
                .and_then(|path| path.split("::").next())
                .map(str::to_string);
            (mode.trim().to_string(), module)
        })
        .collect()
}

#[test]
fn every_package_has_the_rooms_of_the_one_layout() {
    let mut missing = Vec::new();
    for package in packages() {
        let rooms = if name(&package) == "shellscript" {
            SHELLSCRIPT_ROOMS
        } else {
            ROOMS
        };
        for room in rooms {
            if !has_room(&package, room) {
                missing.push(format!("{}: src/{room}.rs (or src/{room}/mod.rs)", name(&package)));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "rooms missing (DESIGN.md, One package layout):\n{}",
        missing.join("\n")
    );
}

#[test]
fn every_modes_table_handler_lives_in_the_room_of_its_mode() {
    let mut misplaced = Vec::new();
    let mut entries_seen = 0;
    for package in packages() {
        let package_name = name(&package);
        let lib_rs = std::fs::read_to_string(package.join("src/lib.rs")).unwrap();
        for (mode_name, module) in table_entries(&lib_rs) {
            let mode = Mode::ALL
                .iter()
                .copied()
                .find(|m| format!("{m:?}") == mode_name)
                .unwrap_or_else(|| panic!("{package_name}: unknown mode {mode_name:?} in lib.rs"));
            entries_seen += 1;
            let Some(module) = module else { continue };
            let expected = match (package_name.as_str(), mode) {
                ("shellscript", _) => "stage",
                // The upgrade from the bash package is tuning's own job, in its own room.
                ("tuning", Mode::Upgrade | Mode::UpgradeCheck) => "legacy",
                _ => room_of(mode),
            };
            if module != expected {
                misplaced.push(format!(
                    "{package_name}: {mode_name} is handled in `{module}`, not in `{expected}`"
                ));
            }
        }
    }
    assert!(
        entries_seen >= 40,
        "only {entries_seen} modes-table entries read: the parser missed the tables"
    );
    assert!(
        misplaced.is_empty(),
        "handlers outside their room:\n{}",
        misplaced.join("\n")
    );
}

#[test]
fn the_table_reader_finds_the_module_of_each_handler() {
    let lib_rs = "const MODES = &[\n    (Mode::Apply, apply::install),\n    (Mode::ConfigCheck, |s| {\n        checks::config_check(s, checks::Verify::Required)\n    }),\n    (Mode::Config, own_files),\n];";
    assert_eq!(
        table_entries(lib_rs),
        [
            ("Apply".to_string(), Some("apply".to_string())),
            ("ConfigCheck".to_string(), Some("checks".to_string())),
            ("Config".to_string(), None),
        ]
    );
}
