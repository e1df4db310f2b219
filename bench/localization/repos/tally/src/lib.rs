//! tally: a plain-text double-entry ledger.
pub mod account;
pub mod amount;
pub mod date;
pub mod journal;
pub mod parse;
pub mod query;
pub mod report;
