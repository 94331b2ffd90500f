// SPDX-License-Identifier: Apache-2.0
//! Stateful stand-ins for the distributions' package managers: `apt-get` with
//! `dpkg-query`, and `dnf` or `yum` with `rpm`, over one simulated package database
//! kept in the node's commands directory. Packages come from a catalog (the
//! "repositories"): each with a version, dependencies, and the shell that puts its
//! files on the host root at install, and takes them away at removal (and its
//! configuration files at `apt-get purge`). The stand-ins behave as the real tools do
//! where the packages rely on it: dependencies pulled in and marked automatic,
//! `--auto-remove` and dnf's removal of unneeded dependencies, `apt-get -s purge`
//! listing what a purge would take (reverse dependencies included), the dpkg lock and
//! the two apt locks apt-get does not wait for, a repository whose key rotated, and
//! dnf on a host without enabled repositories.
//!
//! Models, of `apt-get` with `dpkg-query` (upstream read: Debian's apt 3.1.12,
//! `apt-pkg/contrib/fileutl.cc` `GetLock`, `apt-pkg/acquire.cc` `pkgAcquire::GetLock`,
//! `apt-pkg/deb/debsystem.cc` (`DPkg::Lock::Timeout`), `apt-private/private-install.cc`
//! `InstallPackages`, `apt-pkg/algorithms.cc` (simulation lines); dpkg 1.23.8
//! `src/query/main.c`):
//!
//! - `update` takes the lists lock, `install`, `remove` and `purge` (not `-s`) the
//!   download directory's lock (`/var/cache/apt/archives/lock`), each for the rest of
//!   its run; neither is waited for (`DPkg::Lock::Timeout` covers the dpkg locks only):
//!   held by another process ([`Node::hold_apt_lock`]), the command fails at once, exit
//!   100, with `E: Could not get lock <file>. It is held by process <pid> (<name>)`,
//!   the `N: Be aware…` notice and `E: Unable to lock directory <dir>/`.
//!   [`Node::hold_apt_lists_lock`] makes the next updates fail so, by count.
//! - The dpkg lock as after `DPkg::Lock::Timeout` ran out ([`Node::hold_dpkg_lock`]):
//!   `E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process …`, exit 100.
//! - `install` of a package no repository offers: `E: Unable to locate package <name>`,
//!   exit 100, nothing installed.
//! - `install` pulls in the dependencies not installed, marked automatic;
//!   `--auto-remove` (and `autoremove`) removes the automatic ones nothing installed
//!   needs any more; `purge` also runs the package's configuration removal.
//! - `-s purge|remove` changes nothing and prints `Purg <name> [<version>]` for each
//!   installed package named and each installed package depending on it.
//! - `upgrade` puts in every installed package whose offered version differs (its
//!   install shell again, then the new version); `-s upgrade` changes nothing and
//!   prints `Inst <name> [<old>] (<new> <release> [<arch>])` for each.
//! - `update` with a repository whose key rotated: `W: GPG error: … NO_PUBKEY …` and
//!   `E: The repository '<url> InRelease' is not signed.`, exit 100.
//! - `dpkg-query -W -f='${Status}\t${Version}' <name>`: `install ok installed<TAB><version>`;
//!   not installed, `dpkg-query: no packages found matching <name>` on stderr, exit 1;
//!   `-f='${Package}\t${Status}\n'` with no name lists every installed package.
//!
//! Not modelled: the real locks are `fcntl` record locks (here `flock`, between the
//! stand-in and the test only), the `config-files` state a `remove` leaves, `Depends`
//! alternatives and versions, `Recommends`, downloads, `apt-get` asking questions.
//!
//! Models, of `dnf`/`yum` with `rpm` (upstream read: rpm-software-management/rpm
//! `tests/rpmscript.at`, the scriptlet order of an install):
//!
//! - An install runs each added package's install shell (its files and `%post`),
//!   then, once every package of the transaction is in, each added package's
//!   `%posttrans` ([`DistPackage::on_posttrans`]); a failing `%posttrans` is reported
//!   and does not fail the install (rpm only warns).
//! - `rpm -q --qf …` answers an installed package's version, `rpm -qa` every
//!   installed package.
//!
//! Not modelled: `%pretrans`, `%pre`/`%post` apart from the install shell, the
//! scriptlets' `$1` (install or upgrade count), upgrades in place (a new version is
//! offered, installed again by the test), triggers, file conflicts, GPG checks.

use std::fs;
use std::process::Command;

use crate::Node;

/// A distribution package (a `.deb` or an RPM) the simulated repositories offer; not
/// to be confused with skyhook-core's `Package`, the trait of a Skyhook package.
#[derive(Debug, Clone)]
pub struct DistPackage {
    name: String,
    version: String,
    depends: Vec<String>,
    install: String,
    remove: String,
    purge: String,
    posttrans: String,
}

impl DistPackage {
    /// A package `name` at `version`, with no files and no dependencies.
    pub fn new(name: &str, version: &str) -> Self {
        DistPackage {
            name: name.into(),
            version: version.into(),
            depends: Vec::new(),
            install: String::new(),
            remove: String::new(),
            purge: String::new(),
            posttrans: String::new(),
        }
    }

    /// The packages it depends on (installed with it, marked automatic).
    pub fn depends(mut self, packages: &[&str]) -> Self {
        self.depends = packages.iter().map(|p| p.to_string()).collect();
        self
    }

    /// Shell run at install: `$R` is the host root, `$D` the commands directory.
    pub fn on_install(mut self, sh: &str) -> Self {
        self.install = sh.into();
        self
    }

    /// Shell run at removal (apt `remove` and `purge`, dnf/yum `remove`).
    pub fn on_remove(mut self, sh: &str) -> Self {
        self.remove = sh.into();
        self
    }

    /// Shell run at `apt-get purge` after the removal: the configuration files go.
    pub fn on_purge(mut self, sh: &str) -> Self {
        self.purge = sh.into();
        self
    }

    /// Shell run as the rpm `%posttrans` scriptlet: by `dnf`/`yum install` once every
    /// package of the transaction is installed, for each package it added; its
    /// failure does not fail the install. Not run by [`Node::preinstall_package`].
    pub fn on_posttrans(mut self, sh: &str) -> Self {
        self.posttrans = sh.into();
        self
    }
}

/// An apt lock that apt-get fails on at once (it waits for the dpkg locks only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AptLock {
    /// `/var/lib/apt/lists/lock`, taken by `apt-get update`.
    Lists,
    /// `/var/cache/apt/archives/lock`, taken by `apt-get install`, `remove` and `purge`.
    Archives,
}

impl AptLock {
    /// The lock file's host path.
    pub fn path(self) -> &'static str {
        match self {
            AptLock::Lists => "/var/lib/apt/lists/lock",
            AptLock::Archives => "/var/cache/apt/archives/lock",
        }
    }
}

/// An apt lock a test holds ([`Node::hold_apt_lock`]), released when dropped.
#[derive(Debug)]
pub struct HeldLock {
    _lock: nix::fcntl::Flock<fs::File>,
}

/// Which package manager the node has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Manager {
    /// apt-get, dpkg-query.
    Apt,
    /// dnf, rpm.
    Dnf,
    /// yum only (Amazon Linux 2), rpm.
    Yum,
}

/// The database and helpers every stand-in sources.
const LIB: &str = r#"D=$(dirname "$0"); R="$SKYHOOK_HOST_ROOT"; C="$D/catalog"; P="$D/pkgs"; A="$D/auto"
mkdir -p "$P" "$A"
installed() { [ -f "$P/$1" ]; }
known() { [ -f "$C/$1/version" ]; }
deps() { cat "$C/$1/depends" 2>/dev/null; }
# The packages an install of $1 adds, dependencies first.
closure() { for d in $(deps "$1"); do installed "$d" || closure "$d"; done; installed "$1" || echo "$1"; }
add() { ( . "$C/$1/install.sh" ) || exit 1; cat "$C/$1/version" > "$P/$1"; if [ -n "$TXN" ]; then echo "$1" >> "$TXN"; fi; }
# Installs the packages named, as asked (not automatic), and what they pull in.
install_all() {
  for p; do known "$p" || { not_found "$p"; exit 100; }; done
  for p; do for q in $(closure "$p" | awk '!s[$0]++'); do
    installed "$q" && continue; add "$q"; if [ "$q" != "$p" ]; then touch "$A/$q"; fi
  done; rm -f "$A/$p"; done
}
rdeps() { for q in $(ls "$P"); do if deps "$q" | grep -qx "$1"; then echo "$q"; fi; done; }
drop() {
  ( . "$C/$1/remove.sh" ) || exit 1
  if [ "$2" = purge ]; then ( . "$C/$1/purge.sh" ) || exit 1; fi
  rm -f "$P/$1" "$A/$1"
}
# Removes the automatic packages nothing installed depends on any more.
autoremove() {
  again=1; while [ $again = 1 ]; do again=0
    for a in $(ls "$A"); do
      if installed "$a" && [ -z "$(rdeps "$a")" ]; then drop "$a" "$1"; again=1; fi
    done
  done
  return 0
}
# Fails while the counter file $1 holds a number above 0, with message $2.
held() { [ -f "$D/$1" ] || return 1; n=$(cat "$D/$1"); [ "$n" -gt 0 ] || return 1; echo $((n-1)) > "$D/$1"; echo "$2" >&2; return 0; }
# Takes the apt lock $1 (a host path: the file is $R$1, when it exists) on fd 9 for the rest
# of the run; when another process holds it, fails as apt does (exit 100), naming the holder
# the test recorded in $D/<the lock's directory name>.holder.
apt_lock() {
  [ -e "$R$1" ] || return 0
  exec 9<"$R$1"
  flock -n 9 && return 0
  dir=${1%/lock}
  echo "E: Could not get lock $1. It is held by process $(cat "$D/${dir##*/}.holder" 2>/dev/null || echo 1)" >&2
  echo "N: Be aware that removing the lock file is not a solution and may break your system." >&2
  echo "E: Unable to lock directory $dir/" >&2
  exit 100
}
"#;

const APT_GET: &str = r#"not_found() { echo "E: Unable to locate package $1" >&2; }
if held apt-lock "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (unattended-upgr)"; then exit 100; fi
sim=0; action=""; pkgs=""; auto=0; skip=0
for a; do
  if [ $skip = 1 ]; then skip=0; continue; fi
  case "$a" in
    -o) skip=1 ;; -s) sim=1 ;; --auto-remove) auto=1 ;; -*) ;;
    update|install|purge|remove|autoremove|upgrade) action="$a" ;;
    *) pkgs="$pkgs $a" ;;
  esac
done
case "$action" in
  update)
    apt_lock /var/lib/apt/lists/lock
    holder=$(cat "$D/apt-lists-lock.holder" 2>/dev/null || echo "apt-get")
    if held apt-lists-lock "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 1234 ($holder)"; then
      echo "E: Unable to lock directory /var/lib/apt/lists/" >&2; exit 100; fi
    echo "Hit:1 http://archive.ubuntu.com/ubuntu noble InRelease"
    if [ -f "$D/apt-bad-repo" ]; then url=$(cat "$D/apt-bad-repo")
      echo "W: GPG error: $url InRelease: The following signatures couldn't be verified because the public key is not available: NO_PUBKEY A4B469963BF863CC" >&2
      echo "E: The repository '$url InRelease' is not signed." >&2; exit 100; fi
    echo "Reading package lists... Done" ;;
  install) apt_lock /var/cache/apt/archives/lock; install_all $pkgs ;;
  purge|remove)
    if [ $sim = 0 ]; then apt_lock /var/cache/apt/archives/lock; fi
    if [ $sim = 1 ]; then
      for p in $pkgs; do if installed "$p"; then echo "Purg $p [$(cat "$P/$p")]"; fi
        for r in $(rdeps "$p"); do echo " $pkgs " | grep -q " $r " || echo "Purg $r [$(cat "$P/$r")]"; done; done
      exit 0; fi
    for p in $pkgs; do for r in $(rdeps "$p"); do drop "$r" "$action"; done
      if installed "$p"; then drop "$p" "$action"; fi; done
    if [ $auto = 1 ]; then autoremove "$action"; fi ;;
  autoremove) autoremove remove ;;
  upgrade)
    if [ $sim = 0 ]; then apt_lock /var/cache/apt/archives/lock; fi
    for p in $(ls "$P"); do
      known "$p" || continue; new=$(cat "$C/$p/version"); old=$(cat "$P/$p")
      [ "$new" = "$old" ] && continue
      if [ $sim = 1 ]; then echo "Inst $p [$old] ($new Ubuntu:24.04/noble-updates [all])"
      else ( . "$C/$p/install.sh" ) || exit 1; echo "$new" > "$P/$p"; fi
    done ;;
  *) echo "unexpected: apt-get $*" >&2; exit 1 ;;
esac"#;

const DPKG_QUERY: &str = r#"pkg=""; list=0
for a; do case "$a" in *'${Package}'*) list=1 ;; -*) ;; *) pkg="$a" ;; esac; done
if [ $list = 1 ]; then for q in $(ls "$P"); do printf '%s\tinstall ok installed\n' "$q"; done; exit 0; fi
if installed "$pkg"; then printf 'install ok installed\t%s' "$(cat "$P/$pkg")"
else echo "dpkg-query: no packages found matching $pkg" >&2; exit 1; fi"#;

const DNF: &str = r#"not_found() { echo "No match for argument: $1" >&2; echo "Error: Unable to find a match: $1" >&2; }
action=""; pkgs=""
for a; do case "$a" in -*) ;; install|remove|info) action="$a" ;; *) pkgs="$pkgs $a" ;; esac; done
case "$action" in
  info)
    for p in $pkgs; do
      if installed "$p" || { known "$p" && [ ! -f "$D/dnf-no-repos" ]; }; then echo "Name         : $p"
      else echo "Error: No matching Packages to list" >&2; exit 1; fi
    done ;;
  install)
    if [ -f "$D/dnf-no-repos" ]; then
      echo 'Error: There are no enabled repositories in "/etc/yum.repos.d", "/etc/yum/repos.d", "/etc/distro.repos.d".' >&2; exit 1; fi
    TXN="$D/.transaction"; : > "$TXN"; install_all $pkgs
    for q in $(cat "$TXN"); do ( . "$C/$q/posttrans.sh" ) || echo "warning: %posttrans($q) scriptlet failed" >&2; done
    rm -f "$TXN" ;;
  remove)
    for p in $pkgs; do for r in $(rdeps "$p"); do drop "$r"; done; if installed "$p"; then drop "$p"; fi; done
    autoremove ;;
  *) echo "unexpected: $(basename "$0") $*" >&2; exit 1 ;;
esac"#;

const RPM: &str = r#"pkg=""; all=0
for a; do case "$a" in -qa) all=1 ;; -*|%*) ;; *) pkg="$a" ;; esac; done
if [ $all = 1 ]; then ls "$P"; exit 0; fi
if installed "$pkg"; then printf '%s' "$(cat "$P/$pkg")"; else echo "package $pkg is not installed"; exit 1; fi"#;

impl Node {
    /// Gives the node `manager` (with its query tool) over a package database, the
    /// repositories offering `catalog`.
    pub fn package_manager(&self, manager: Manager, catalog: &[DistPackage]) -> &Self {
        let programs: &[(&str, &str)] = match manager {
            Manager::Apt => &[("apt-get", APT_GET), ("dpkg-query", DPKG_QUERY)],
            Manager::Dnf => &[("dnf", DNF), ("rpm", RPM)],
            Manager::Yum => &[("yum", DNF), ("rpm", RPM)],
        };
        for (program, body) in programs {
            self.stand_in(program, &format!("{LIB}{body}"));
        }
        for p in catalog {
            self.offer_package(p);
        }
        self
    }

    /// Puts `package` into the repositories (replacing the same name: a new version).
    pub fn offer_package(&self, package: &DistPackage) -> &Self {
        let dir = self.commands_dir().join("catalog").join(&package.name);
        fs::create_dir_all(&dir).expect("catalog directory");
        for (file, text) in [
            ("version", &package.version),
            ("depends", &package.depends.join("\n")),
            ("install.sh", &package.install),
            ("remove.sh", &package.remove),
            ("purge.sh", &package.purge),
            ("posttrans.sh", &package.posttrans),
        ] {
            fs::write(dir.join(file), format!("{text}\n")).expect("write catalog entry");
        }
        self
    }

    /// Installs (or upgrades to the offered version) `name` as the distribution
    /// would have, before the test: its install shell runs, no call is logged.
    pub fn preinstall_package(&self, name: &str) -> &Self {
        let script = format!("{LIB}add {name}; rm -f \"$A/{name}\"\n");
        let path = self.commands_dir().join(".preinstall.sh");
        fs::write(&path, script).expect("write preinstall script");
        let status = crate::status_gated(Command::new("sh").arg(&path).env("SKYHOOK_HOST_ROOT", self.root()))
            .expect("run preinstall script");
        let _ = fs::remove_file(&path);
        assert!(status.success(), "preinstalling {name} failed");
        self
    }

    /// The installed version of `name`, `None` when not installed.
    pub fn package_version(&self, name: &str) -> Option<String> {
        fs::read_to_string(self.commands_dir().join("pkgs").join(name))
            .ok()
            .map(|v| v.trim().to_string())
    }

    /// The next `calls` calls of apt-get fail on the dpkg lock (as after
    /// `DPkg::Lock::Timeout` ran out).
    pub fn hold_dpkg_lock(&self, calls: u32) -> &Self {
        self.counter("apt-lock", calls)
    }

    /// The next `calls` `apt-get update`s fail at once on the lists lock, held by
    /// `holder` (the process name apt reports, e.g. `unattended-upgr`).
    pub fn hold_apt_lists_lock(&self, calls: u32, holder: &str) -> &Self {
        fs::write(self.commands_dir().join("apt-lists-lock.holder"), holder).expect("write holder");
        self.counter("apt-lists-lock", calls)
    }

    /// Holds `lock` (its file created on the host root, as apt leaves it) until the
    /// guard is dropped: meanwhile the apt-get commands that take it fail at once with
    /// apt's message naming this test process and `holder` (the process name apt
    /// reports, e.g. `unattended-upgr`), as on a node where apt-daily runs.
    pub fn hold_apt_lock(&self, lock: AptLock, holder: &str) -> HeldLock {
        let path = self.path(lock.path());
        fs::create_dir_all(path.parent().expect("a directory")).expect("lock directory");
        let dir = lock
            .path()
            .trim_end_matches("/lock")
            .rsplit('/')
            .next()
            .expect("a name");
        fs::write(
            self.commands_dir().join(format!("{dir}.holder")),
            format!("{} ({holder})", std::process::id()),
        )
        .expect("write holder");
        let file = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .expect("open the lock file");
        let lock = nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock)
            .map_err(|(_, e)| e)
            .expect("take the lock");
        HeldLock { _lock: lock }
    }

    /// `apt-get update` fails on the third-party repository `url` (its signing key
    /// rotated); every other repository refreshes.
    pub fn break_apt_repository(&self, url: &str) -> &Self {
        fs::write(self.commands_dir().join("apt-bad-repo"), url).expect("write bad repository");
        self
    }

    /// dnf/yum find no enabled repository (RHEL without a subscription).
    pub fn disable_repositories(&self) -> &Self {
        fs::write(self.commands_dir().join("dnf-no-repos"), "").expect("write marker");
        self
    }

    fn counter(&self, name: &str, calls: u32) -> &Self {
        fs::write(self.commands_dir().join(name), calls.to_string()).expect("write counter");
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(node: &Node, program: &str, args: &[&str]) -> (bool, String, String) {
        let out = crate::output_gated(
            Command::new(node.commands_dir().join(program))
                .args(args)
                .env("SKYHOOK_HOST_ROOT", node.root()),
        )
        .expect("run stand-in");
        let text = |b: Vec<u8>| String::from_utf8(b).unwrap();
        (out.status.success(), text(out.stdout), text(out.stderr))
    }

    fn node(manager: Manager) -> Node {
        let node = Node::new("/bin/true");
        node.package_manager(
            manager,
            &[
                DistPackage::new("tuned", "2.21.0-1")
                    .depends(&["python3-dbus"])
                    .on_install("mkdir -p \"$R/etc/tuned\"; echo conf > \"$R/etc/tuned/tuned-main.conf\"")
                    .on_purge("rm -rf \"$R/etc/tuned\""),
                DistPackage::new("python3-dbus", "1.3.2-5"),
                DistPackage::new("my-app", "1.0").depends(&["python3-dbus"]),
            ],
        );
        node
    }

    #[test]
    fn apt_installs_with_dependencies_and_purges_exactly_what_came_with_it() {
        let node = node(Manager::Apt);
        assert!(
            run(
                &node,
                "apt-get",
                &["-o", "DPkg::Lock::Timeout=600", "install", "-y", "tuned"]
            )
            .0
        );
        assert_eq!(node.package_version("python3-dbus").as_deref(), Some("1.3.2-5"));
        let (ok, listing, _) = run(&node, "dpkg-query", &["-W", "-f=${Package}\\t${Status}\\n"]);
        assert!(ok && listing.contains("tuned\tinstall ok installed\n"), "{listing}");
        let (ok, status, _) = run(&node, "dpkg-query", &["-W", "-f=${Status}\t${Version}", "tuned"]);
        assert!(ok);
        assert_eq!(status, "install ok installed\t2.21.0-1");
        let (_, sim, _) = run(&node, "apt-get", &["-s", "purge", "python3-dbus"]);
        assert_eq!(
            sim, "Purg python3-dbus [1.3.2-5]\nPurg tuned [2.21.0-1]\n",
            "reverse dependencies go too"
        );
        assert!(run(&node, "apt-get", &["purge", "-y", "--auto-remove", "tuned"]).0);
        assert_eq!(node.package_version("tuned"), None);
        assert_eq!(
            node.package_version("python3-dbus"),
            None,
            "automatic, no longer needed"
        );
        assert!(!node.exists("/etc/tuned"), "purged with its configuration");
        let (ok, _, err) = run(&node, "dpkg-query", &["-W", "-f=${Status}\t${Version}", "tuned"]);
        assert!(!ok && err.contains("no packages found matching tuned"), "{err}");
    }

    #[test]
    fn apt_update_fails_at_once_on_the_lists_lock_and_on_a_broken_repository() {
        let node = node(Manager::Apt);
        node.hold_apt_lists_lock(1, "unattended-upgr");
        let (ok, _, err) = run(&node, "apt-get", &["update"]);
        assert!(
            !ok && err.contains("/var/lib/apt/lists/lock. It is held by process 1234 (unattended-upgr)"),
            "{err}"
        );
        assert!(run(&node, "apt-get", &["update"]).0, "released");
        node.break_apt_repository("https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/x86_64");
        let (ok, _, err) = run(&node, "apt-get", &["update"]);
        assert!(!ok && err.contains("is not signed"), "{err}");
        assert!(
            run(&node, "apt-get", &["install", "-y", "tuned"]).0,
            "installs from the other repositories"
        );
    }

    #[test]
    fn apt_fails_at_once_on_the_download_directory_lock_and_names_its_holder() {
        let node = node(Manager::Apt);
        let held = node.hold_apt_lock(AptLock::Archives, "unattended-upgr");
        let me = std::process::id();
        for args in [&["install", "-y", "tuned"][..], &["purge", "-y", "tuned"]] {
            let (ok, _, err) = run(&node, "apt-get", args);
            assert!(!ok, "{args:?}");
            assert!(
                err.contains(&format!(
                    "E: Could not get lock /var/cache/apt/archives/lock. It is held by process {me} (unattended-upgr)"
                )) && err.contains("E: Unable to lock directory /var/cache/apt/archives/"),
                "{args:?}: {err}"
            );
        }
        assert_eq!(node.package_version("tuned"), None, "nothing installed");
        assert!(run(&node, "apt-get", &["update"]).0, "update takes the lists lock only");
        assert!(
            run(&node, "apt-get", &["-s", "purge", "tuned"]).0,
            "a simulation takes no lock"
        );
        drop(held);
        assert!(run(&node, "apt-get", &["install", "-y", "tuned"]).0, "released");
        assert_eq!(node.package_version("tuned").as_deref(), Some("2.21.0-1"));
    }

    #[test]
    fn apt_holds_its_lock_while_it_runs() {
        let node = node(Manager::Apt);
        drop(node.hold_apt_lock(AptLock::Archives, "apt-get"));
        // The first install says when it runs and holds the lock until the test lets
        // it go (at most a minute): no race with the clock on a loaded machine.
        node.offer_package(&DistPackage::new("slow", "1").on_install(
            r#"touch "$R/installing"; n=0; while [ ! -e "$R/release" ] && [ $n -lt 1200 ]; do sleep 0.05; n=$((n + 1)); done"#,
        ));
        let mut first = crate::spawn_gated(
            Command::new(node.commands_dir().join("apt-get"))
                .args(["install", "-y", "slow"])
                .env("SKYHOOK_HOST_ROOT", node.root()),
        )
        .unwrap();
        let started = std::time::Instant::now();
        while !node.root().join("installing").exists() {
            assert!(started.elapsed().as_secs() < 60, "the first install never started");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let (ok, _, err) = run(&node, "apt-get", &["install", "-y", "tuned"]);
        std::fs::write(node.root().join("release"), "").unwrap();
        assert!(first.wait().unwrap().success());
        assert!(
            !ok && err.contains("Could not get lock /var/cache/apt/archives/lock"),
            "{err}"
        );
    }

    #[test]
    fn apt_update_fails_at_once_on_the_held_lists_lock_file() {
        let node = node(Manager::Apt);
        let held = node.hold_apt_lock(AptLock::Lists, "apt-get");
        let (ok, _, err) = run(&node, "apt-get", &["update"]);
        assert!(
            !ok && err.contains("Could not get lock /var/lib/apt/lists/lock. It is held by process")
                && err.contains("E: Unable to lock directory /var/lib/apt/lists/"),
            "{err}"
        );
        assert!(
            run(&node, "apt-get", &["install", "-y", "tuned"]).0,
            "install takes the other lock"
        );
        drop(held);
        assert!(run(&node, "apt-get", &["update"]).0);
    }

    #[test]
    fn apt_fails_on_the_dpkg_lock_and_on_an_unknown_package() {
        let node = node(Manager::Apt);
        node.hold_dpkg_lock(1);
        let (ok, _, err) = run(&node, "apt-get", &["install", "-y", "tuned"]);
        assert!(
            !ok && err.contains("Could not get lock /var/lib/dpkg/lock-frontend"),
            "{err}"
        );
        assert_eq!(node.package_version("tuned"), None);
        let (ok, _, err) = run(&node, "apt-get", &["install", "-y", "tuned", "tunedx"]);
        assert!(!ok && err.contains("E: Unable to locate package tunedx"), "{err}");
        assert_eq!(node.package_version("tuned"), None, "nothing of the transaction");
    }

    #[test]
    fn dnf_runs_posttrans_after_the_whole_transaction_and_survives_its_failure() {
        let node = Node::new("/bin/true");
        node.package_manager(
            Manager::Dnf,
            &[
                DistPackage::new("kexec-tools", "2.0.27-8.el9")
                    .depends(&["dracut"])
                    .on_posttrans("ls \"$P\" > \"$R/seen-by-posttrans\"; exit 1"),
                DistPackage::new("dracut", "057-70.el9").on_posttrans("echo dracut >> \"$R/posttrans-order\""),
            ],
        );
        let (ok, _, err) = run(&node, "dnf", &["-y", "install", "kexec-tools"]);
        assert!(ok, "a failing %posttrans does not fail the install: {err}");
        assert!(err.contains("%posttrans(kexec-tools) scriptlet failed"), "{err}");
        assert_eq!(
            node.read("/seen-by-posttrans").as_deref(),
            Some("dracut\nkexec-tools\n"),
            "run once every package is in"
        );
        assert_eq!(node.read("/posttrans-order").as_deref(), Some("dracut\n"));
        assert!(run(&node, "dnf", &["-y", "install", "kexec-tools"]).0);
        assert_eq!(
            node.read("/posttrans-order").as_deref(),
            Some("dracut\n"),
            "not run again for what is installed"
        );
        let other = Node::new("/bin/true");
        other.package_manager(
            Manager::Dnf,
            &[DistPackage::new("dracut", "057").on_posttrans("touch \"$R/ran\"")],
        );
        other.preinstall_package("dracut");
        assert!(!other.exists("/ran"), "preinstalled: no scriptlet");
    }

    #[test]
    fn dnf_removes_unneeded_dependencies_and_knows_no_repositories() {
        let node = node(Manager::Dnf);
        node.preinstall_package("python3-dbus");
        assert!(run(&node, "dnf", &["-y", "install", "tuned"]).0);
        assert!(run(&node, "dnf", &["-y", "remove", "tuned"]).0);
        assert_eq!(
            node.package_version("python3-dbus").as_deref(),
            Some("1.3.2-5"),
            "installed before, by hand: stays"
        );
        let (ok, _, err) = run(&node, "rpm", &["-q", "--qf", "%{VERSION}-%{RELEASE}", "tuned"]);
        assert!(!ok, "{err}");
        node.disable_repositories();
        let (ok, _, err) = run(&node, "dnf", &["-y", "install", "tuned"]);
        assert!(!ok && err.contains("There are no enabled repositories"), "{err}");
        let (ok, _, err) = run(&node, "dnf", &["-y", "install", "nope"]);
        assert!(!ok && err.contains("There are no enabled repositories"), "{err}");
    }
}
