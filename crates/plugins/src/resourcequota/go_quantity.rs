//! The text Go's `%v` gives for a Kubernetes `ResourceList`, which is what Volcano's quota
//! rejection message contains, e.g. `map[cpu:{{3 0} {<nil>} 3 DecimalSI}]`.
//!
//! `Quantity.String()` has a pointer receiver, so a quantity stored in a map prints as its raw
//! struct: `{{<int64 value> <scale>} {<inf.Dec pointer>} <cached text> <format>}`. These fields
//! are what apimachinery's `ParseQuantity` leaves behind when it decodes the quantity's text:
//!
//! * the fast path (at most 18 significant digits, no finer than nano, binary suffixes without
//!   a fraction) keeps an integer and a decimal scale; it caches the text only when the text is
//!   already canonical;
//! * everything else is held as an arbitrary-precision decimal, printed by Go as a pointer
//!   address. We print the text in that slot instead: an address is meaningless outside the
//!   process (a deliberate difference).
//!
//! Map keys are printed in byte order, as Go's `fmt` sorts them.

use engine::model::quantity;

/// `%v` of a resource list whose entries come in key order: `map[k1:{..} k2:{..}]`.
pub(super) fn format_list<'a>(entries: impl Iterator<Item = (&'a str, &'a str)>) -> String {
    let items: Vec<String> = entries
        .map(|(name, text)| format!("{name}:{}", format_quantity(text)))
        .collect();
    format!("map[{}]", items.join(" "))
}

/// How a quantity's suffix scales its number, and the format it keeps.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Format {
    DecimalSI,
    BinarySI,
    DecimalExponent,
}

impl Format {
    fn name(self) -> &'static str {
        match self {
            Format::DecimalSI => "DecimalSI",
            Format::BinarySI => "BinarySI",
            Format::DecimalExponent => "DecimalExponent",
        }
    }
}

/// The pieces apimachinery's scanner splits a quantity into; `num` has its leading zeros
/// removed and is `"0"` when nothing is left.
struct Pieces<'a> {
    positive: bool,
    num: &'a str,
    denom: &'a str,
    suffix: &'a str,
}

fn pieces(s: &str) -> Option<Pieces<'_>> {
    let b = s.as_bytes();
    let end = b.len();
    let digits_end =
        |from: usize| from + b[from..].iter().take_while(|c| c.is_ascii_digit()).count();
    let mut pos = 0;
    let mut positive = true;
    match b.first() {
        Some(b'-') => {
            positive = false;
            pos = 1;
        }
        Some(b'+') => pos = 1,
        _ => {}
    }
    while pos < end && b[pos] == b'0' {
        pos += 1;
    }
    let mut p = Pieces {
        positive,
        num: "0",
        denom: "",
        suffix: "",
    };
    if pos >= end {
        return Some(p);
    }
    let num_end = digits_end(pos);
    if num_end > pos {
        p.num = &s[pos..num_end];
    }
    pos = num_end;
    if pos < end && b[pos] == b'.' {
        let denom_end = digits_end(pos + 1);
        p.denom = &s[pos + 1..denom_end];
        pos = denom_end;
    }
    let suffix_start = pos;
    while pos < end && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if pos < end && matches!(b[pos], b'-' | b'+') {
        pos += 1;
    }
    if digits_end(pos) != end {
        return None;
    }
    p.suffix = &s[suffix_start..];
    Some(p)
}

/// `(binary, exponent, format)` of a suffix; `None` for an unknown one.
fn interpret(suffix: &str) -> Option<(bool, i32, Format)> {
    let decimal = |e| Some((false, e, Format::DecimalSI));
    let binary = |e| Some((true, e, Format::BinarySI));
    match suffix {
        "" => decimal(0),
        "n" => decimal(-9),
        "u" => decimal(-6),
        "m" => decimal(-3),
        "k" => decimal(3),
        "M" => decimal(6),
        "G" => decimal(9),
        "T" => decimal(12),
        "P" => decimal(15),
        "E" => decimal(18),
        "Ki" => binary(10),
        "Mi" => binary(20),
        "Gi" => binary(30),
        "Ti" => binary(40),
        "Pi" => binary(50),
        "Ei" => binary(60),
        _ => {
            let rest = suffix.strip_prefix(['e', 'E']).filter(|r| !r.is_empty())?;
            // Go parses 64 bits and narrows to int32, wrapping.
            let e: i64 = rest.parse().ok()?;
            Some((false, e as i32, Format::DecimalExponent))
        }
    }
}

/// Go's `%v` of the quantity `ParseQuantity(text)` returns.
pub(super) fn format_quantity(text: &str) -> String {
    let s = text.trim();
    if s == "0" {
        return "{{0 0} {<nil>} 0 DecimalSI}".to_string();
    }
    let Some(p) = pieces(s) else {
        return s.to_string();
    };
    let Some((binary, exponent, format)) = interpret(p.suffix) else {
        return s.to_string();
    };
    let digits = (p.num.len() + p.denom.len()) as i32;
    let (mut scale, mantissa, precision) = if !binary {
        (exponent, 1i64, 18 - digits)
    } else if exponent >= 0 && p.denom.is_empty() {
        // Go estimates the decimal digits a binary suffix adds in float32.
        let suffix_digits = (exponent as f32 * 3.0 / 10.0) as i32;
        (
            0,
            1i64 << exponent,
            15 - p.num.len() as i32 - suffix_digits - 1,
        )
    } else {
        (0, 1, -1)
    };
    if precision >= 0 {
        scale = scale.wrapping_sub(p.denom.len() as i32);
        if scale >= -9 {
            let shifted = format!("{}{}", p.num, p.denom);
            if let Some((value, result)) = shifted
                .parse::<i64>()
                .ok()
                .and_then(|v| v.checked_mul(mantissa).map(|r| (v, r)))
            {
                let result = if p.positive { result } else { -result };
                // The text is cached only when it is already the canonical form.
                let canonical = match format {
                    Format::BinarySI => exponent % 10 == 0 && value & 0x07 != 0,
                    _ => scale % 3 == 0 && !shifted.ends_with("000") && !shifted.starts_with('0'),
                };
                let cached = if canonical { s } else { "" };
                return format!(
                    "{{{{{result} {scale}}} {{<nil>}} {cached} {}}}",
                    format.name()
                );
            }
        }
    }
    // Held as a big decimal. A binary amount strictly between -1 and 1 switches to DecimalSI.
    let format = match (format, quantity::parse_nano(s)) {
        (Format::BinarySI, Ok(nano)) if nano != 0 && nano.abs() < 1_000_000_000 => {
            Format::DecimalSI
        }
        (f, _) => f,
    };
    format!("{{{{0 0}} {{{s}}}  {}}}", format.name())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_text_is_cached() {
        // As Volcano logs it (volcano-sh/volcano#2831).
        assert_eq!(format_quantity("3"), "{{3 0} {<nil>} 3 DecimalSI}");
        assert_eq!(format_quantity("20G"), "{{20 9} {<nil>} 20G DecimalSI}");
        assert_eq!(format_quantity("500m"), "{{500 -3} {<nil>} 500m DecimalSI}");
        assert_eq!(
            format_quantity("2Gi"),
            "{{2147483648 0} {<nil>} 2Gi BinarySI}"
        );
        assert_eq!(
            format_quantity("1e3"),
            "{{1 3} {<nil>} 1e3 DecimalExponent}"
        );
        assert_eq!(format_quantity("0"), "{{0 0} {<nil>} 0 DecimalSI}");
        assert_eq!(format_quantity("-2"), "{{-2 0} {<nil>} -2 DecimalSI}");
        // apimachinery's shortcut looks at the digits without their leading zeros.
        assert_eq!(format_quantity("007"), "{{7 0} {<nil>} 007 DecimalSI}");
    }

    #[test]
    fn non_canonical_text_is_not_cached() {
        assert_eq!(format_quantity("2000m"), "{{2000 -3} {<nil>}  DecimalSI}");
        assert_eq!(format_quantity("20000m"), "{{20000 -3} {<nil>}  DecimalSI}");
        assert_eq!(format_quantity("1.5"), "{{15 -1} {<nil>}  DecimalSI}");
        assert_eq!(format_quantity("0.5"), "{{5 -1} {<nil>}  DecimalSI}");
        // A multiple of 8 Gi is not taken as canonical by apimachinery's shortcut.
        assert_eq!(format_quantity("8Gi"), "{{8589934592 0} {<nil>}  BinarySI}");
        assert_eq!(
            format_quantity("1024Mi"),
            "{{1073741824 0} {<nil>}  BinarySI}"
        );
        assert_eq!(format_quantity("00"), "{{0 0} {<nil>}  DecimalSI}");
        assert_eq!(format_quantity(" 4 "), "{{4 0} {<nil>} 4 DecimalSI}");
    }

    #[test]
    fn big_decimals_show_their_text() {
        assert_eq!(format_quantity("1.5Gi"), "{{0 0} {1.5Gi}  BinarySI}");
        assert_eq!(format_quantity("0.5Ki"), "{{0 0} {0.5Ki}  BinarySI}");
        assert_eq!(format_quantity("0.0001Ki"), "{{0 0} {0.0001Ki}  DecimalSI}");
        assert_eq!(format_quantity("1.5n"), "{{0 0} {1.5n}  DecimalSI}");
        assert_eq!(
            format_quantity("1234567890123456789"),
            "{{0 0} {1234567890123456789}  DecimalSI}"
        );
    }

    #[test]
    fn lists_are_printed_in_key_order() {
        assert_eq!(format_list(std::iter::empty()), "map[]");
        assert_eq!(
            format_list([("limits.cpu", "3"), ("requests.cpu", "3")].into_iter()),
            "map[limits.cpu:{{3 0} {<nil>} 3 DecimalSI} requests.cpu:{{3 0} {<nil>} 3 DecimalSI}]"
        );
    }
}
