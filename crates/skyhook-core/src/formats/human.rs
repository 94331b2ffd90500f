// SPDX-License-Identifier: Apache-2.0
//! Sizes for people, the one printer the project uses in logs and release notes.

/// A byte count for people: `512 bytes`, `300 KiB`, `256 MiB`, `1.5 GiB`: the largest
/// binary unit that leaves at least 1, one decimal, none when it is `.0`.
pub fn size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    let text = format!("{value:.1}");
    let text = text.strip_suffix(".0").unwrap_or(&text);
    format!("{text} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    const K: u64 = 1 << 10;
    const M: u64 = 1 << 20;
    const G: u64 = 1 << 30;

    #[test]
    fn prints_sizes_for_people() {
        assert_eq!(size(0), "0 bytes");
        assert_eq!(size(512), "512 bytes");
        assert_eq!(size(512 * K), "512 KiB");
        assert_eq!(size(1536), "1.5 KiB");
        assert_eq!(size(256 * M), "256 MiB");
        assert_eq!(size(3 * M), "3 MiB");
        assert_eq!(size(3 * G / 2), "1.5 GiB");
        assert_eq!(size(64 * G), "64 GiB");
        assert_eq!(size(u64::MAX), "16384 PiB");
    }
}
