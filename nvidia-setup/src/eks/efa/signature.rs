// SPDX-License-Identifier: Apache-2.0
//! The EFA installer's signature, checked before the installer runs. AWS signs each
//! tarball with a detached OpenPGP signature (`<tarball>.sig`) by its EFA key
//! (`aws-efa-installer.key`, armored), and publishes that key's fingerprint in its
//! EFA guide ([`AWS_KEY`]). Both files are fetched with the tarball; the key is taken
//! out of its armor ([`armor`]) into a keyring of the run's own in the scratch
//! directory (no keyring of the node's is read or changed, no gpg-agent starts) and
//! `gpgv` checks the signature against it. The tarball is trusted only when gpgv
//! exits 0 and reports a valid signature (`VALIDSIG`) whose primary key has the
//! trusted fingerprint: a key file serving another key, a damaged or missing
//! signature, a changed tarball all stop the step before the installer runs.

use std::path::Path;

use skyhook_core::error::excerpt;
use skyhook_core::host::command::Cmd;
use skyhook_core::{Error, Host, Result};

use super::armor;

/// The fingerprint of AWS's EFA installer signing key, as AWS's EFA guide publishes
/// it (`4E90 91BC BB97 A96B 26B1  5E59 A054 80B1 DD2D 3CCC`).
pub const AWS_KEY: &str = "4E9091BCBB97A96B26B15E59A05480B1DD2D3CCC";

/// A key fingerprint as written (hex digits, spaces between groups allowed) in
/// gpg's form: 40 upper-case hex digits; `None` when it is not one.
pub fn fingerprint(text: &str) -> Option<String> {
    let hex: String = text.chars().filter(|c| *c != ' ').collect();
    (hex.len() == 40 && hex.chars().all(|c| c.is_ascii_hexdigit())).then(|| hex.to_ascii_uppercase())
}

/// Checks that `signature` (a file in `work`) is a valid signature of `tarball` by the
/// key with fingerprint `trusted`, using the armored `key` (a file in `work`).
pub fn verify(host: &Host, work: &Path, tarball: &str, signature: &str, key: &str, trusted: &str) -> Result<()> {
    let armored = host.read_to_string(key)?.unwrap_or_default();
    let packets = armor::dearmor(&armored).map_err(|why| {
        Error::action(format!(
            "EFA: the signing key fetched as {key} is not an OpenPGP public key block: {why}; the installer was \
             not run"
        ))
    })?;
    let keyring = work.join("efa-key.gpg").display().to_string();
    host.write(&keyring, &packets, 0o600)?;
    let gpgv = Cmd::new("gpgv")
        .args(["--status-fd", "1", "--keyring"])
        .arg(&keyring)
        .arg(signature)
        .arg(tarball);
    let out = host.run(&gpgv).map_err(|e| {
        Error::action(format!(
            "EFA: gpgv, which checks the installer's signature, cannot be run ({e}); install the package gpgv \
             (apt's own verifier), then run apply again; the installer was not run"
        ))
    })?;
    let signers = signers(&out.stdout);
    if out.success() && signers.iter().any(|s| s == trusted) {
        log::info!("EFA: {tarball} carries a valid signature by the trusted key {trusted}");
        return Ok(());
    }
    let why = if signers.is_empty() {
        let said = out.stderr.lines().last().unwrap_or("").trim();
        let code = out.code.map_or_else(|| "killed".to_string(), |c| format!("exit {c}"));
        format!("gpgv found no valid signature ({code}: {})", excerpt(said))
    } else {
        format!(
            "it is signed by {}, not by the trusted key {trusted}",
            signers.join(", ")
        )
    };
    Err(Error::action(format!(
        "EFA: the installer {tarball} failed its signature check: {why}; the installer was not run. A tarball or \
         signature damaged on the way fails the same: run apply again; if it fails again, do not install this \
         tarball by hand, and report it to AWS"
    )))
}

/// The primary-key fingerprints of the valid signatures in gpgv's status output
/// (`[GNUPG:] VALIDSIG <key> <date> … <primary key>`; the primary's field is absent
/// when the signing key is itself primary).
fn signers(status: &str) -> Vec<String> {
    status
        .lines()
        .filter_map(|l| l.strip_prefix("[GNUPG:] VALIDSIG "))
        .filter_map(|rest| {
            let fields: Vec<&str> = rest.split_whitespace().collect();
            fields.get(9).or(fields.first()).map(|f| f.to_ascii_uppercase())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_are_read_as_aws_prints_them() {
        assert_eq!(
            fingerprint("4E90 91BC BB97 A96B 26B1  5E59 A054 80B1 DD2D 3CCC").as_deref(),
            Some(AWS_KEY)
        );
        assert_eq!(fingerprint(&AWS_KEY.to_lowercase()).as_deref(), Some(AWS_KEY));
        for bad in [
            "",
            "DD2D3CCC",
            "4E9091BCBB97A96B26B15E59A05480B1DD2D3CCG",
            &format!("{AWS_KEY}00"),
        ] {
            assert_eq!(fingerprint(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_signer_is_the_primary_key_of_each_valid_signature() {
        let status = "[GNUPG:] NEWSIG\n\
            [GNUPG:] GOODSIG A05480B1DD2D3CCC Amazon EC2 EFA <ec2-efa-maintainers@amazon.com>\n\
            [GNUPG:] VALIDSIG 1111111111111111111111111111111111111111 2020-07-29 1595983813 0 4 0 1 8 00 \
            4E9091BCBB97A96B26B15E59A05480B1DD2D3CCC\n";
        assert_eq!(signers(status), [AWS_KEY]);
        let own = "[GNUPG:] VALIDSIG 795c539e7f053ff9f8a05462d4e3ae0ffef323b7 2026-12-07 1796677429 0 4 0 22 8 00\n";
        assert_eq!(signers(own), ["795C539E7F053FF9F8A05462D4E3AE0FFEF323B7"]);
        let bad = "[GNUPG:] NEWSIG\n[GNUPG:] BADSIG D4E3AE0FFEF323B7 someone\n";
        assert!(signers(bad).is_empty());
    }
}
