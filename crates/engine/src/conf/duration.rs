//! Go's duration syntax (`time.ParseDuration`), shared by the plugins that read durations from
//! annotations, labels or arguments (`cdp`, `sla`, `usage`) and by the metrics collector.

/// Go's `time.ParseDuration`, in nanoseconds: a possibly signed sequence of decimal numbers,
/// each with an optional fraction and a unit (`ns`, `us`/`µs`/`μs`, `ms`, `s`, `m`, `h`), such
/// as `300ms`, `-1.5h` or `2h45m`. `"0"` needs no unit. `None` where Go reports an error,
/// including any value outside ±2⁶³ ns.
pub fn parse_go_duration(text: &str) -> Option<i64> {
    const LIMIT: u64 = 1 << 63;
    let mut s = text.as_bytes();
    let mut negative = false;
    if let Some((&sign @ (b'-' | b'+'), rest)) = s.split_first() {
        negative = sign == b'-';
        s = rest;
    }
    if s == b"0" {
        return Some(0);
    }
    if s.is_empty() {
        return None;
    }
    let mut total: u64 = 0;
    while !s.is_empty() {
        if !(s[0] == b'.' || s[0].is_ascii_digit()) {
            return None;
        }
        let (whole, rest) = leading_int(s)?;
        let has_whole = rest.len() != s.len();
        s = rest;
        let (mut fraction, mut scale, mut has_fraction) = (0, 1.0, false);
        if let Some(rest) = s.strip_prefix(b".") {
            let (f, sc, after) = leading_fraction(rest);
            (fraction, scale, has_fraction) = (f, sc, after.len() != rest.len());
            s = after;
        }
        if !has_whole && !has_fraction {
            return None;
        }
        let unit_len = s
            .iter()
            .position(|c| *c == b'.' || c.is_ascii_digit())
            .unwrap_or(s.len());
        let (unit, rest) = s.split_at(unit_len);
        s = rest;
        let unit = unit_nanos(unit)?;
        if whole > LIMIT / unit {
            return None;
        }
        let mut value = whole * unit;
        if fraction > 0 {
            // Go computes the fractional part in floating point, truncating.
            value = value.checked_add((fraction as f64 * (unit as f64 / scale)) as u64)?;
            if value > LIMIT {
                return None;
            }
        }
        total = total.checked_add(value).filter(|t| *t <= LIMIT)?;
    }
    if negative {
        // -2⁶³ is representable; `total` never exceeds it here.
        Some(0i64.wrapping_sub_unsigned(total))
    } else {
        i64::try_from(total).ok()
    }
}

/// Nanoseconds per unit; the empty or unknown unit is an error.
fn unit_nanos(unit: &[u8]) -> Option<u64> {
    Some(match unit {
        b"ns" => 1,
        // "µs" (micro sign) and "μs" (Greek mu), UTF-8 encoded.
        b"us" | [0xC2, 0xB5, b's'] | [0xCE, 0xBC, b's'] => 1_000,
        b"ms" => 1_000_000,
        b"s" => 1_000_000_000,
        b"m" => 60_000_000_000,
        b"h" => 3_600_000_000_000,
        _ => return None,
    })
}

/// Leading decimal digits as an integer; `None` past 2⁶³.
fn leading_int(s: &[u8]) -> Option<(u64, &[u8])> {
    let digits = s.iter().take_while(|c| c.is_ascii_digit()).count();
    let mut x: u64 = 0;
    for &c in &s[..digits] {
        x = x
            .checked_mul(10)?
            .checked_add(u64::from(c - b'0'))
            .filter(|x| *x <= 1 << 63)?;
    }
    Some((x, &s[digits..]))
}

/// Leading decimal digits of a fraction: `(digits as an integer, 10^n for the n digits kept,
/// rest)`. Digits beyond integer precision are consumed but ignored, as in Go.
fn leading_fraction(s: &[u8]) -> (u64, f64, &[u8]) {
    let digits = s.iter().take_while(|c| c.is_ascii_digit()).count();
    let (mut x, mut scale) = (0u64, 1.0f64);
    for &c in &s[..digits] {
        if x > ((1 << 63) - 1) / 10 {
            break;
        }
        let y = x * 10 + u64::from(c - b'0');
        if y > 1 << 63 {
            break;
        }
        x = y;
        scale *= 10.0;
    }
    (x, scale, &s[digits..])
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEC: i64 = 1_000_000_000;
    const MIN: i64 = 60 * SEC;

    #[test]
    fn go_duration_syntax() {
        let ok = [
            ("0", 0),
            ("-0", 0),
            ("+0", 0),
            ("5s", 5 * SEC),
            ("10m", 10 * MIN),
            ("1h30m", 90 * MIN),
            ("1.5h", 90 * MIN),
            ("-1.5h", -90 * MIN),
            ("+2m", 2 * MIN),
            (".5s", SEC / 2),
            ("1.s", SEC),
            ("300ms", 300_000_000),
            ("2us", 2_000),
            ("2µs", 2_000),
            ("2μs", 2_000),
            ("7ns", 7),
            ("1h1m1s1ms1us1ns", 3_661_001_001_001),
            ("0.000000001s", 1),
            ("0.0000000019s", 1),
            ("1.0000000000000000000000001s", SEC),
            ("9223372036854775807ns", i64::MAX),
            ("-9223372036854775808ns", i64::MIN),
            ("2562047h47m16.854775807s", i64::MAX),
        ];
        for (text, want) in ok {
            assert_eq!(parse_go_duration(text), Some(want), "{text}");
        }
        let bad = [
            "",
            "-",
            "+",
            "10",
            "1.5",
            "abc",
            "s",
            ".s",
            "1d",
            "1 h",
            " 1h",
            "1h ",
            "1hh",
            "1H",
            "--1s",
            "1h-1m",
            "9223372036854775808ns",
            "9223372036854775809ns",
            "2562048h",
            "18446744073709551616ns",
        ];
        for text in bad {
            assert_eq!(parse_go_duration(text), None, "{text}");
        }
    }
}
