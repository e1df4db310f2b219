//! Fixed-point amounts with a commodity.
use std::fmt;
use std::ops::{Add, Neg, Sub};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Amount {
    /// Value in units of 10^-scale.
    pub units: i64,
    pub scale: u32,
    pub commodity: String,
}

#[derive(Debug, PartialEq, Eq)]
pub enum AmountError {
    Empty,
    Invalid(String),
    Overflow,
}

impl Amount {
    pub fn zero(commodity: &str) -> Amount {
        Amount { units: 0, scale: 0, commodity: commodity.to_string() }
    }

    pub fn is_zero(&self) -> bool {
        self.units == 0
    }

    /// Re-express with a larger scale (more decimal places).
    pub fn rescale(&self, scale: u32) -> Amount {
        assert!(scale >= self.scale, "cannot rescale {} to fewer decimals", self);
        let factor = 10i64.pow(scale - self.scale);
        Amount { units: self.units * factor, scale, commodity: self.commodity.clone() }
    }

    fn aligned(&self, other: &Amount) -> (i64, i64, u32) {
        assert_eq!(self.commodity, other.commodity, "commodity mismatch");
        let scale = self.scale.max(other.scale);
        (self.rescale(scale).units, other.rescale(scale).units, scale)
    }

    /// Parse "1,234.50 EUR", "-3", "0.5 BTC" using `default` when no commodity is written.
    pub fn parse(text: &str, default: &str) -> Result<Amount, AmountError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(AmountError::Empty);
        }
        let (number, commodity) = match text.split_once(char::is_whitespace) {
            Some((n, c)) => (n, c.trim()),
            None => (text, default),
        };
        let negative = number.starts_with('-');
        let digits: String = number.trim_start_matches(['-', '+']).chars().filter(|c| *c != ',').collect();
        let (int_part, frac_part) = digits.split_once('.').unwrap_or((&digits, ""));
        if int_part.is_empty() && frac_part.is_empty() {
            return Err(AmountError::Invalid(text.to_string()));
        }
        if !int_part.chars().chain(frac_part.chars()).all(|c| c.is_ascii_digit()) {
            return Err(AmountError::Invalid(text.to_string()));
        }
        let scale = frac_part.len() as u32;
        let joined = format!("{}{}", int_part, frac_part);
        let mut units: i64 = joined.parse().map_err(|_| AmountError::Overflow)?;
        if negative {
            units = -units;
        }
        Ok(Amount { units, scale, commodity: commodity.to_string() })
    }
}

impl Add for &Amount {
    type Output = Amount;
    fn add(self, other: &Amount) -> Amount {
        let (a, b, scale) = self.aligned(other);
        Amount { units: a + b, scale, commodity: self.commodity.clone() }
    }
}

impl Sub for &Amount {
    type Output = Amount;
    fn sub(self, other: &Amount) -> Amount {
        let (a, b, scale) = self.aligned(other);
        Amount { units: a - b, scale, commodity: self.commodity.clone() }
    }
}

impl Neg for &Amount {
    type Output = Amount;
    fn neg(self) -> Amount {
        Amount { units: -self.units, scale: self.scale, commodity: self.commodity.clone() }
    }
}

impl fmt::Display for Amount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let divisor = 10i64.pow(self.scale);
        let sign = if self.units < 0 { "-" } else { "" };
        let abs = self.units.abs();
        if self.scale == 0 {
            write!(f, "{}{} {}", sign, abs, self.commodity)
        } else {
            write!(f, "{}{}.{:0width$} {}", sign, abs / divisor, abs % divisor, self.commodity, width = self.scale as usize)
        }
    }
}
