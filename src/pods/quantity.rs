//! Kubernetes quantities (`64Mi`, `1.5Gi`), checked as Go's `resource.ParseQuantity` checks
//! them: MultiContainerRun's shared volume size, a VolumeSnapshot's `restoreSize`, and the
//! validator's early check of both.

/// Why a text is not a Kubernetes quantity (Go's `resource.ParseQuantity` texts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    #[error(
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )]
    Format,
    #[error("unable to parse quantity's suffix")]
    Suffix,
}

/// Checks a Kubernetes resource quantity (`resource.ParseQuantity`'s
/// grammar: a signed decimal number, then a binary-SI suffix `Ki`…`Ei`, a
/// decimal-SI suffix `n u m k M G T P E` or an exponent `e<int>`/`E<int>`).
/// Returns whether the quantity is zero; the error reads like Go's.
pub fn parse_quantity(s: &str) -> Result<bool, QuantityError> {
    const FORMAT: QuantityError = QuantityError::Format;
    let b = s.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    let (mut digits, mut nonzero, mut dot) = (0, false, false);
    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
        if b[i] == b'.' {
            if dot {
                return Err(FORMAT);
            }
            dot = true;
        } else {
            digits += 1;
            nonzero |= b[i] != b'0';
        }
        i += 1;
    }
    if digits == 0 {
        return Err(FORMAT);
    }
    let suffix = &s[i..];
    let ok = match suffix {
        "" | "n" | "u" | "m" | "k" | "M" | "G" | "T" | "P" | "E" => true,
        "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei" => true,
        _ => {
            let exp = suffix.strip_prefix(['e', 'E']);
            match exp {
                Some(e) => {
                    let e = e.strip_prefix(['+', '-']).unwrap_or(e);
                    !e.is_empty() && e.bytes().all(|c| c.is_ascii_digit())
                }
                None => false,
            }
        }
    };
    if !ok {
        let shape = suffix
            .bytes()
            .all(|c| b"eEinumkKMGTP+-0123456789".contains(&c));
        return Err(if shape { QuantityError::Suffix } else { FORMAT });
    }
    Ok(!nonzero)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities() {
        for ok in [
            "1", "64Mi", "1.5Gi", "+2k", "100m", "1e3", "1E-2", ".5", "5.", "0",
        ] {
            assert!(parse_quantity(ok).is_ok(), "{ok}");
        }
        assert_eq!(parse_quantity("0Gi"), Ok(true));
        assert_eq!(parse_quantity("0.0"), Ok(true));
        assert_eq!(parse_quantity("1Gi"), Ok(false));
        for bad in ["", "Gi", "1..2", "1 Gi", "1GB", "1iG", "abc", "1e", "-"] {
            assert!(parse_quantity(bad).is_err(), "{bad}");
        }
        assert_eq!(
            parse_quantity("1Ki2").unwrap_err().to_string(),
            "unable to parse quantity's suffix"
        );
    }
}
