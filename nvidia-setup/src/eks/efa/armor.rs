// SPDX-License-Identifier: Apache-2.0
//! OpenPGP ASCII armor (RFC 4880 §6.2) taken off a public key block, so that
//! `gpgv`, which reads binary keyrings only, can use a key published armored (AWS's
//! `aws-efa-installer.key`). The armor's CRC-24 checksum, when present, must match.

use base64::Engine as _;

/// The armor lines around a public key block.
const BEGIN: &str = "-----BEGIN PGP PUBLIC KEY BLOCK-----";
const END: &str = "-----END PGP PUBLIC KEY BLOCK-----";

/// The binary packets of the first public key block in `text`, or why there are none.
pub fn dearmor(text: &str) -> Result<Vec<u8>, String> {
    let mut lines = text.lines().map(str::trim_end);
    if !lines.any(|l| l == BEGIN) {
        return Err(format!("no {BEGIN:?} line"));
    }
    // Armor headers (`Version: …`, `Comment: …`) end at the first blank line.
    let mut lines = lines.skip_while(|l| !l.is_empty()).skip(1).peekable();
    let mut body = String::new();
    let mut checksum = None;
    for line in lines.by_ref() {
        if line == END {
            let data = base64::engine::general_purpose::STANDARD
                .decode(&body)
                .map_err(|e| format!("its base64 is damaged ({e})"))?;
            if data.is_empty() {
                return Err("the key block is empty".to_string());
            }
            if let Some(sum) = checksum {
                if crc24(&data) != sum {
                    return Err("its CRC-24 checksum does not match its content".to_string());
                }
            }
            return Ok(data);
        }
        if let Some(sum) = line.strip_prefix('=') {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(sum)
                .ok()
                .filter(|b| b.len() == 3)
                .ok_or_else(|| format!("its checksum line {line:?} is not 4 base64 characters"))?;
            checksum = Some(u32::from_be_bytes([0, bytes[0], bytes[1], bytes[2]]));
        } else {
            body.push_str(line.trim());
        }
    }
    Err(format!("no {END:?} line"))
}

/// RFC 4880 §6.1's CRC-24.
fn crc24(data: &[u8]) -> u32 {
    let mut crc: u32 = 0x00B7_04CE;
    for &byte in data {
        crc ^= u32::from(byte) << 16;
        for _ in 0..8 {
            crc <<= 1;
            if crc & 0x0100_0000 != 0 {
                crc ^= 0x0186_4CFB;
            }
        }
    }
    crc & 0x00FF_FFFF
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `body` and the checksum line `sum` in the armor gpg writes (an armor header,
    /// a blank line); the bytes need not be a key: the armor is what is read here.
    fn armored(body: &str, sum: &str) -> String {
        format!("{BEGIN}\nComment: test\n\n{body}\n{sum}\n{END}\n")
    }

    #[test]
    fn the_body_comes_back_and_its_checksum_is_checked() {
        let data = [0x01, 0x02, 0x03];
        let body = base64::engine::general_purpose::STANDARD.encode(data);
        let sum = base64::engine::general_purpose::STANDARD.encode(&crc24(&data).to_be_bytes()[1..]);
        assert_eq!(dearmor(&armored(&body, &format!("={sum}"))).unwrap(), data);
        // Without a checksum line it is still read (the line is optional).
        assert_eq!(dearmor(&format!("{BEGIN}\n\n{body}\n{END}\n")).unwrap(), data);
        let wrong = dearmor(&armored(&body, "=AAAA")).unwrap_err();
        assert!(wrong.contains("CRC-24"), "{wrong}");
    }

    #[test]
    fn crc24_is_rfc_4880s() {
        // The CRC of no data is the initial value; "123456789" is the standard check value of CRC-24/OPENPGP.
        assert_eq!(crc24(b""), 0x00B7_04CE);
        assert_eq!(crc24(b"123456789"), 0x0021_CF02);
    }

    #[test]
    fn what_is_not_a_key_block_is_named() {
        assert!(
            dearmor("<html>404</html>")
                .unwrap_err()
                .contains("BEGIN PGP PUBLIC KEY BLOCK")
        );
        assert!(dearmor(&format!("{BEGIN}\n\nAAEC\n")).unwrap_err().contains("END PGP"));
        assert!(dearmor(&armored("!!!", "")).unwrap_err().contains("base64"));
        assert!(dearmor(&armored("", "")).unwrap_err().contains("empty"));
    }
}
