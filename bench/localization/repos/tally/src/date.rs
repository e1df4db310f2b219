//! Calendar dates without time zones.
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Date {
    pub year: i32,
    pub month: u32,
    pub day: u32,
}

pub fn is_leap_year(year: i32) -> bool {
    year % 4 == 0 && year % 100 != 0
}

pub fn days_in_month(year: i32, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if is_leap_year(year) => 29,
        2 => 28,
        _ => 0,
    }
}

impl Date {
    /// Parse `YYYY-MM-DD` or `YYYY/MM/DD`, validating the day of month.
    pub fn parse(text: &str) -> Option<Date> {
        let parts: Vec<&str> = text.split(['-', '/']).collect();
        if parts.len() != 3 {
            return None;
        }
        let year = parts[0].parse().ok()?;
        let month = parts[1].parse().ok()?;
        let day = parts[2].parse().ok()?;
        if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
            return None;
        }
        Some(Date { year, month, day })
    }

    /// True when this date falls in the period written as `2024`, `2024-03` or `2024-03-01`.
    pub fn in_period(&self, period: &str) -> bool {
        let parts: Vec<&str> = period.split('-').collect();
        match parts.as_slice() {
            [y] => y.parse() == Ok(self.year),
            [y, m] => y.parse() == Ok(self.year) && m.parse() == Ok(self.month),
            [y, m, d] => y.parse() == Ok(self.year) && m.parse() == Ok(self.month) && d.parse() == Ok(self.day),
            _ => false,
        }
    }
}

impl fmt::Display for Date {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04}-{:02}-{:02}", self.year, self.month, self.day)
    }
}
