//! Kubernetes `resource.Quantity` strings: parsing to exact integers and canonical formatting.
//!
//! Implements the unit conversions that framework.md §5.4.1 relies on (`MilliValue()` for cpu and
//! scalars, `Value()` for memory and `pods`) and the canonical serialisation used when a
//! `Resource` is written back to the API server (Volcano's `ConvertRes2ResList`, §2.7.4).
//!
//! The grammar and its quirks follow apimachinery's `ParseQuantity`:
//!
//! ```text
//! quantity      ::= [sign] number suffix
//! number        ::= digits | digits "." [digits] | "." digits
//! suffix        ::= "" | n | u | m | k | M | G | T | P | E          (decimal SI)
//!                 | Ki | Mi | Gi | Ti | Pi | Ei                     (binary SI)
//!                 | ("e" | "E") [sign] digits                       (decimal exponent)
//! ```
//!
//! Accepted oddities kept for compatibility: a lone sign (`"-"`, `"+"`) or a lone `"."` is zero,
//! `"1.G"` is one giga, and `"1E"` is 10^18 (an `E` without digits is the exa suffix).
//!
//! Rounding: values are rounded *away from zero* to the requested scale, which is what
//! Kubernetes' `MilliValue()`/`Value()` do ("ceil" for the non-negative quantities that
//! resources are). Magnitudes above `i64::MAX` (in value units) saturate there, like
//! Kubernetes' cap on parsed amounts; Go would instead overflow `int64` in `MilliValue()` for
//! values beyond about 9.2·10^15, which we deliberately do not reproduce.

/// A quantity string that Kubernetes would reject.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid quantity {input:?}: {reason}")]
pub struct QuantityError {
    /// The offending text, as given.
    pub input: String,
    /// Why it was rejected.
    pub reason: &'static str,
}

/// Parses a Kubernetes quantity into its milli-value (value × 1000), rounded away from zero
/// like Kubernetes' `MilliValue()`.
///
/// `"100m"` → 100, `"1"` → 1000, `"0.5Ki"` → 512000, `"1e3"` → 1000000.
pub fn parse_milli(s: &str) -> Result<i128, QuantityError> {
    parse_scaled(s, 3)
}

/// Parses a Kubernetes quantity into its value, rounded away from zero like Kubernetes'
/// `Value()` (`"100m"` → 1, `"2Gi"` → 2147483648).
pub fn parse_value(s: &str) -> Result<i128, QuantityError> {
    parse_scaled(s, 0)
}

/// Parses a Kubernetes quantity into its nano-value (value × 10⁹), rounded away from zero.
/// Kubernetes keeps parsed quantities at nano precision, so this is the exact amount its
/// `Quantity.Cmp` and `Add` work on (`"1"` → 10⁹, `"100m"` → 10⁸, `"1Ki"` → 1024·10⁹).
pub fn parse_nano(s: &str) -> Result<i128, QuantityError> {
    parse_scaled(s, 9)
}

/// Whether two quantity strings denote the same amount, as Kubernetes' semantic equality of
/// `Quantity` values decides (exact comparison; parsed amounts have nano precision). Text that
/// does not parse is only equal to identical text.
pub fn semantic_eq(a: &str, b: &str) -> bool {
    match (parse_scaled(a, 9), parse_scaled(b, 9)) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

/// Canonical text of a milli-value quantity (cpu, and every scalar except `pods` when written
/// back): `1500` → `"1500m"`, `2000` → `"2"`, `3000000` → `"3k"`.
///
/// The float is truncated to an integer first, as Go's `int64(f)` does.
pub fn format_milli_cpu(milli: f64) -> String {
    format_milli(milli)
}

/// Canonical text of any milli-value quantity; see [`format_milli_cpu`].
pub fn format_milli(milli: f64) -> String {
    canonical_decimal(i128::from(truncate(milli)), -3)
}

/// Canonical text of a byte count written with binary-SI format: whole multiples of 1024 use
/// the largest binary suffix (`"1Gi"`, `"512Mi"`, `"1536Mi"`); other values at or above 1024
/// are plain (`"1500000"`); values below 1024 in magnitude use decimal SI (`"512"`, `"1k"`),
/// exactly like Kubernetes' canonical form.
pub fn format_bytes(b: f64) -> String {
    let v = i128::from(truncate(b));
    if v.abs() < 1024 {
        return canonical_decimal(v, 0);
    }
    let (mut mantissa, mut power) = (v, 0usize);
    while mantissa % 1024 == 0 && power < BINARY_SUFFIXES.len() - 1 {
        mantissa /= 1024;
        power += 1;
    }
    format!("{mantissa}{}", BINARY_SUFFIXES[power])
}

/// Canonical text of a plain count written with decimal-SI format (`pods`): `3` → `"3"`,
/// `3000` → `"3k"`.
pub fn format_count(v: f64) -> String {
    canonical_decimal(i128::from(truncate(v)), 0)
}

const BINARY_SUFFIXES: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];

/// Go's `int64(f)`: truncation toward zero. Rust's `as` additionally saturates out-of-range
/// values and maps NaN to 0, where Go's result would be unspecified.
fn truncate(f: f64) -> i64 {
    f as i64
}

/// Kubernetes' canonical decimal-SI text of `value × 10^exponent`: strip trailing zeros, then
/// lower the exponent to a multiple of three and pick its suffix.
fn canonical_decimal(value: i128, exponent: i32) -> String {
    if value == 0 {
        return "0".to_owned();
    }
    let (mut mantissa, mut exp) = (value, exponent);
    while mantissa % 10 == 0 {
        mantissa /= 10;
        exp += 1;
    }
    let down = exp.rem_euclid(3);
    mantissa *= 10i128.pow(down.unsigned_abs());
    exp -= down;
    // Inputs come from i64 values at scale 0 or -3, so exp stays within [-3, 18]; anything larger
    // is folded into the exa suffix rather than printed without a unit.
    if exp > 18 {
        mantissa = mantissa.saturating_mul(10i128.saturating_pow((exp - 18).unsigned_abs()));
        exp = 18;
    }
    let suffix = match exp {
        -9 => "n",
        -6 => "u",
        -3 => "m",
        3 => "k",
        6 => "M",
        9 => "G",
        12 => "T",
        15 => "P",
        18 => "E",
        _ => "",
    };
    format!("{mantissa}{suffix}")
}

/// How the suffix scales the number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Multiplier {
    /// × 10^n (decimal SI or exponent notation).
    Decimal(i32),
    /// × 2^n (binary SI).
    Binary(u32),
}

/// The pieces of a quantity string, as apimachinery's `parseQuantityString` splits them.
struct Parts<'a> {
    negative: bool,
    /// Integer digits with leading zeros removed (may be empty).
    integer: &'a str,
    /// Fraction digits (may be empty).
    fraction: &'a str,
    suffix: &'a str,
}

fn error(input: &str, reason: &'static str) -> QuantityError {
    QuantityError {
        input: input.to_owned(),
        reason,
    }
}

const SUFFIX_CHARS: &[u8] = b"eEinumkKMGTP";

fn split(s: &str) -> Result<Parts<'_>, &'static str> {
    let bytes = s.as_bytes();
    let end = bytes.len();
    let mut pos = 0;
    let mut negative = false;
    match bytes.first() {
        Some(b'-') => {
            negative = true;
            pos = 1;
        }
        Some(b'+') => pos = 1,
        _ => {}
    }
    while pos < end && bytes[pos] == b'0' {
        pos += 1;
    }
    let digits_from = |start: usize| {
        bytes[start..]
            .iter()
            .position(|b| !b.is_ascii_digit())
            .map_or(end, |n| start + n)
    };
    let int_end = digits_from(pos);
    let integer = &s[pos..int_end];
    pos = int_end;
    let mut fraction = "";
    if pos < end && bytes[pos] == b'.' {
        let frac_end = digits_from(pos + 1);
        fraction = &s[pos + 1..frac_end];
        pos = frac_end;
    }
    let suffix_start = pos;
    while pos < end && SUFFIX_CHARS.contains(&bytes[pos]) {
        pos += 1;
    }
    if pos < end && matches!(bytes[pos], b'+' | b'-') {
        pos += 1;
    }
    if digits_from(pos) != end {
        return Err("quantities must match [+-]number[suffix]");
    }
    Ok(Parts {
        negative,
        integer,
        fraction,
        suffix: &s[suffix_start..],
    })
}

fn interpret(suffix: &str) -> Option<Multiplier> {
    let m = match suffix {
        "" => Multiplier::Decimal(0),
        "n" => Multiplier::Decimal(-9),
        "u" => Multiplier::Decimal(-6),
        "m" => Multiplier::Decimal(-3),
        "k" => Multiplier::Decimal(3),
        "M" => Multiplier::Decimal(6),
        "G" => Multiplier::Decimal(9),
        "T" => Multiplier::Decimal(12),
        "P" => Multiplier::Decimal(15),
        "E" => Multiplier::Decimal(18),
        "Ki" => Multiplier::Binary(10),
        "Mi" => Multiplier::Binary(20),
        "Gi" => Multiplier::Binary(30),
        "Ti" => Multiplier::Binary(40),
        "Pi" => Multiplier::Binary(50),
        "Ei" => Multiplier::Binary(60),
        _ => {
            let rest = suffix.strip_prefix(['e', 'E']).filter(|r| !r.is_empty())?;
            // Go parses a 64-bit exponent and then narrows it with int32(); keep that wrap.
            let parsed: i64 = rest.parse().ok()?;
            Multiplier::Decimal(parsed as i32)
        }
    };
    Some(m)
}

/// Parses `s` and returns `round_away_from_zero(value × 10^scale)`, saturated at
/// `i64::MAX × 10^scale` in magnitude.
fn parse_scaled(s: &str, scale: u32) -> Result<i128, QuantityError> {
    // Every JSON/YAML path into a Go Quantity trims surrounding whitespace first.
    let text = s.trim();
    if text.is_empty() {
        return Err(error(s, "empty quantity"));
    }
    let parts = split(text).map_err(|reason| error(s, reason))?;
    let multiplier = interpret(parts.suffix).ok_or_else(|| error(s, "unknown quantity suffix"))?;

    // Significant digits of integer and fraction together, most significant first.
    let mut digits: Vec<u8> = parts
        .integer
        .bytes()
        .chain(parts.fraction.bytes())
        .map(|b| b - b'0')
        .skip_while(|&d| d == 0)
        .collect();
    if digits.is_empty() {
        return Ok(0);
    }
    let mut exp10 = i64::from(scale) - parts.fraction.len() as i64;
    match multiplier {
        Multiplier::Decimal(e) => exp10 += i64::from(e),
        Multiplier::Binary(bits) => multiply_by_pow2(&mut digits, bits),
    }

    let cap = u128::from(i64::MAX.unsigned_abs()) * 10u128.pow(scale);
    let len = digits.len() as i64;
    let int_len = len + exp10;
    let magnitude = if int_len > 20 + i64::from(scale) {
        // At least 10^(20 + scale): beyond the cap, and too long for u128 arithmetic.
        cap
    } else if int_len <= 0 {
        // Entirely fractional and non-zero: rounds up to one unit.
        1
    } else {
        let kept = usize::try_from(int_len.min(len)).unwrap_or(0);
        let mut int_part = digits[..kept]
            .iter()
            .fold(0u128, |acc, &d| acc * 10 + u128::from(d));
        for _ in len..int_len {
            int_part *= 10;
        }
        let has_fraction = digits[kept..].iter().any(|&d| d != 0);
        (int_part + u128::from(has_fraction)).min(cap)
    };
    // magnitude ≤ cap < 10^28 for the scales used here, so it always fits in i128.
    let magnitude = i128::try_from(magnitude).unwrap_or(i128::MAX);
    Ok(if parts.negative {
        -magnitude
    } else {
        magnitude
    })
}

/// Multiplies a big-endian decimal digit string by 2^bits in place.
fn multiply_by_pow2(digits: &mut Vec<u8>, bits: u32) {
    let mut remaining = bits;
    while remaining > 0 {
        let step = remaining.min(16);
        remaining -= step;
        let factor = 1u32 << step;
        let mut carry = 0u32;
        for d in digits.iter_mut().rev() {
            let v = u32::from(*d) * factor + carry;
            *d = (v % 10) as u8;
            carry = v / 10;
        }
        while carry > 0 {
            digits.insert(0, (carry % 10) as u8);
            carry /= 10;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn milli(s: &str) -> i128 {
        match parse_milli(s) {
            Ok(v) => v,
            Err(e) => panic!("{s:?} should parse: {e}"),
        }
    }

    fn value(s: &str) -> i128 {
        match parse_value(s) {
            Ok(v) => v,
            Err(e) => panic!("{s:?} should parse: {e}"),
        }
    }

    #[test]
    fn decimal_si_and_plain_numbers() {
        assert_eq!(milli("100m"), 100);
        assert_eq!(milli("1"), 1000);
        assert_eq!(milli("1.5"), 1500);
        assert_eq!(milli("0.5"), 500);
        assert_eq!(milli(".5"), 500);
        assert_eq!(milli("5."), 5000);
        assert_eq!(milli("1k"), 1_000_000);
        assert_eq!(value("1k"), 1000);
        assert_eq!(value("2M"), 2_000_000);
        assert_eq!(value("3G"), 3_000_000_000);
        assert_eq!(value("1T"), 1_000_000_000_000);
        assert_eq!(value("1P"), 1_000_000_000_000_000);
        assert_eq!(value("1E"), 1_000_000_000_000_000_000);
        assert_eq!(milli("1E"), 1_000_000_000_000_000_000_000);
        assert_eq!(milli("1.G"), 1_000_000_000_000);
        assert_eq!(milli("007"), 7000);
    }

    #[test]
    fn binary_si() {
        assert_eq!(value("1Ki"), 1024);
        assert_eq!(value("512Mi"), 536_870_912);
        assert_eq!(value("2Gi"), 2_147_483_648);
        assert_eq!(value("1Ti"), 1 << 40);
        assert_eq!(value("1Pi"), 1 << 50);
        assert_eq!(value("1Ei"), 1 << 60);
        assert_eq!(value("1.5Ki"), 1536);
        assert_eq!(milli("0.5Ki"), 512_000);
        assert_eq!(milli("2Mi"), 2_097_152_000);
        assert_eq!(value("1.5Gi"), 1_610_612_736);
    }

    #[test]
    fn exponent_notation() {
        assert_eq!(value("1e3"), 1000);
        assert_eq!(value("1E3"), 1000);
        assert_eq!(value("1e+3"), 1000);
        assert_eq!(milli("1e-3"), 1);
        assert_eq!(milli("1.5e1"), 15_000);
        assert_eq!(milli("2e0"), 2000);
    }

    #[test]
    fn signs() {
        assert_eq!(milli("+1"), 1000);
        assert_eq!(milli("-2"), -2000);
        assert_eq!(value("-1Ki"), -1024);
        assert_eq!(milli("-0"), 0);
    }

    #[test]
    fn rounding_is_away_from_zero() {
        assert_eq!(value("100m"), 1);
        assert_eq!(value("1001m"), 2);
        assert_eq!(value("1000m"), 1);
        assert_eq!(milli("0.0001"), 1);
        assert_eq!(milli("1n"), 1);
        assert_eq!(milli("1u"), 1);
        assert_eq!(milli("1500u"), 2);
        assert_eq!(milli("1e-100"), 1);
        assert_eq!(value("-100m"), -1);
        assert_eq!(value("0.1Ki"), 103);
        // Digits far below the milli scale still count.
        assert_eq!(milli("1.0000000000000000000000000000000000001"), 1001);
    }

    #[test]
    fn kubernetes_lenient_forms_are_zero() {
        assert_eq!(milli("0"), 0);
        assert_eq!(milli("-"), 0);
        assert_eq!(milli("+"), 0);
        assert_eq!(milli("."), 0);
        assert_eq!(milli("000"), 0);
        assert_eq!(milli("0Gi"), 0);
        assert_eq!(milli("0.000"), 0);
    }

    #[test]
    fn surrounding_whitespace_is_trimmed() {
        assert_eq!(milli(" 2 "), 2000);
    }

    #[test]
    fn huge_values_saturate() {
        let cap = i128::from(i64::MAX);
        assert_eq!(value("100E"), 100_000_000_000_000_000_000_i128.min(cap));
        assert_eq!(value("1e40"), cap);
        assert_eq!(milli("1e40"), cap * 1000);
        assert_eq!(milli("-1e40"), -cap * 1000);
        assert_eq!(value("16Ei"), cap);
        assert_eq!(value("99999999999999999999999999999999999999999"), cap);
    }

    #[test]
    fn malformed_input_is_an_error() {
        for bad in [
            "",
            "   ",
            "abc",
            "1K",
            "1ki",
            "1KiB",
            "1Gix",
            "1 Gi",
            "1.2.3",
            "--1",
            "1e",
            "1e3Gi",
            "1Ee3",
            "1mi",
            "1m5",
            "Gi1",
            "1e99999999999999999999",
            "½",
            "1,5",
        ] {
            let err = parse_milli(bad);
            assert!(err.is_err(), "{bad:?} should be rejected, got {err:?}");
        }
        let err = parse_milli("garbage").err();
        assert_eq!(err.map(|e| e.input), Some("garbage".to_owned()));
    }

    #[test]
    fn semantic_equality() {
        assert!(semantic_eq("1", "1000m"));
        assert!(semantic_eq("1Gi", "1073741824"));
        assert!(semantic_eq("1k", "1e3"));
        assert!(semantic_eq("0", "0m"));
        assert!(!semantic_eq("1", "1001m"));
        assert!(!semantic_eq("1n", "2n"));
        assert!(semantic_eq("bad", "bad"));
        assert!(!semantic_eq("bad", "1"));
        assert_eq!(
            parse_scaled("1e40", 9),
            Ok(i128::from(i64::MAX) * 1_000_000_000)
        );
        assert_eq!(parse_scaled("9e18", 9), Ok(9 * 10i128.pow(27)));
    }

    #[test]
    fn exponent_wraps_like_go_int32() {
        // 2^32 narrows to 0 in Go's int32(parsed).
        assert_eq!(value("1e4294967296"), 1);
    }

    #[test]
    fn format_milli_cpu_canonical() {
        assert_eq!(format_milli_cpu(1500.0), "1500m");
        assert_eq!(format_milli_cpu(2000.0), "2");
        assert_eq!(format_milli_cpu(100.0), "100m");
        assert_eq!(format_milli_cpu(0.0), "0");
        assert_eq!(format_milli_cpu(0.9), "0");
        assert_eq!(format_milli_cpu(1.0), "1m");
        assert_eq!(format_milli_cpu(10.0), "10m");
        assert_eq!(format_milli_cpu(2500.7), "2500m");
        assert_eq!(format_milli_cpu(3_000_000.0), "3k");
        assert_eq!(format_milli_cpu(-1500.0), "-1500m");
    }

    #[test]
    fn format_bytes_canonical() {
        assert_eq!(format_bytes(1_073_741_824.0), "1Gi");
        assert_eq!(format_bytes(536_870_912.0), "512Mi");
        assert_eq!(format_bytes(1_610_612_736.0), "1536Mi");
        assert_eq!(format_bytes(1024.0), "1Ki");
        assert_eq!(format_bytes(1_500_000.0), "1500000");
        assert_eq!(format_bytes(1025.0), "1025");
        assert_eq!(format_bytes(512.0), "512");
        assert_eq!(format_bytes(1000.0), "1k");
        assert_eq!(format_bytes(0.0), "0");
        assert_eq!(format_bytes(-2048.0), "-2Ki");
        assert_eq!(format_bytes((1u64 << 60) as f64), "1Ei");
    }

    #[test]
    fn format_count_canonical() {
        assert_eq!(format_count(3.0), "3");
        assert_eq!(format_count(110.0), "110");
        assert_eq!(format_count(3000.0), "3k");
        assert_eq!(format_count(0.0), "0");
    }

    #[test]
    fn formatted_values_parse_back() {
        for v in [0.0, 1.0, 999.0, 1500.0, 2000.0, 123_456_789.0] {
            assert_eq!(milli(&format_milli_cpu(v)) as f64, v);
            assert_eq!(value(&format_count(v)) as f64, v);
            assert_eq!(value(&format_bytes(v)) as f64, v);
        }
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        const SUFFIXES: [(&str, i128); 8] = [
            ("", 1),
            ("k", 1_000),
            ("M", 1_000_000),
            ("G", 1_000_000_000),
            ("Ki", 1 << 10),
            ("Mi", 1 << 20),
            ("Gi", 1 << 30),
            ("Ti", 1 << 40),
        ];

        proptest! {
            #[test]
            fn integers_with_suffixes(v in 0i64..8_000_000, idx in 0usize..SUFFIXES.len()) {
                let (suffix, mult) = SUFFIXES[idx];
                let text = format!("{v}{suffix}");
                prop_assert_eq!(parse_value(&text), Ok(i128::from(v) * mult));
                prop_assert_eq!(parse_milli(&text), Ok(i128::from(v) * mult * 1000));
                prop_assert_eq!(parse_milli(&format!("-{text}")), Ok(-i128::from(v) * mult * 1000));
            }

            #[test]
            fn decimal_fractions_round_up(int in 0u32..100_000, frac in "[0-9]{1,12}") {
                let den = 10i128.pow(frac.len() as u32);
                let frac_value: i128 = frac.parse().unwrap_or(0);
                let num = (i128::from(int) * den + frac_value) * 1000;
                let expected = (num + den - 1) / den;
                prop_assert_eq!(parse_milli(&format!("{int}.{frac}")), Ok(expected));
            }

            #[test]
            fn milli_strings(v in 0i64..10_000_000_000) {
                let text = format!("{v}m");
                prop_assert_eq!(parse_milli(&text), Ok(i128::from(v)));
                prop_assert_eq!(parse_value(&text), Ok((i128::from(v) + 999) / 1000));
            }

            #[test]
            fn formatting_round_trips(v in -(1i64 << 52)..(1i64 << 52)) {
                let f = v as f64;
                prop_assert_eq!(parse_milli(&format_milli_cpu(f)), Ok(i128::from(v)));
                prop_assert_eq!(parse_value(&format_bytes(f)), Ok(i128::from(v)));
                prop_assert_eq!(parse_value(&format_count(f)), Ok(i128::from(v)));
            }

            #[test]
            fn arbitrary_text_never_panics(s in "\\PC{0,24}", t in "[-+.0-9eEinumkKMGTP]{0,12}") {
                let _ = parse_milli(&s);
                let _ = parse_value(&t);
            }
        }
    }
}
