//! Query terms: acct:, payee:, date:, amt:; bare words match accounts.
use crate::amount::Amount;
use crate::journal::{Posting, Transaction};

#[derive(Debug, Clone, PartialEq)]
pub enum Term {
    Account(String),
    Payee(String),
    Period(String),
    AmountGreater(Amount),
    AmountLess(Amount),
}

pub fn parse_query(args: &[String], default_commodity: &str) -> Result<Vec<Term>, String> {
    let mut terms = Vec::new();
    for arg in args {
        let term = if let Some(v) = arg.strip_prefix("acct:") {
            Term::Account(v.to_lowercase())
        } else if let Some(v) = arg.strip_prefix("payee:") {
            Term::Payee(v.to_lowercase())
        } else if let Some(v) = arg.strip_prefix("date:") {
            Term::Period(v.to_string())
        } else if let Some(v) = arg.strip_prefix("amt:>") {
            Term::AmountGreater(Amount::parse(v, default_commodity).map_err(|e| format!("{}: {:?}", arg, e))?)
        } else if let Some(v) = arg.strip_prefix("amt:<") {
            Term::AmountLess(Amount::parse(v, default_commodity).map_err(|e| format!("{}: {:?}", arg, e))?)
        } else {
            Term::Account(arg.to_lowercase())
        };
        terms.push(term);
    }
    Ok(terms)
}

/// Whether a posting of `txn` matches every term.
pub fn matches(terms: &[Term], txn: &Transaction, posting: &Posting) -> bool {
    terms.iter().all(|term| match term {
        Term::Account(a) => posting.account.to_lowercase().contains(a.as_str()),
        Term::Payee(p) => txn.payee.to_lowercase().contains(p.as_str()),
        Term::Period(p) => txn.date.in_period(p),
        Term::AmountGreater(min) => posting.amount.as_ref().map_or(false, |a| (a - min).units > 0),
        Term::AmountLess(max) => posting.amount.as_ref().map_or(false, |a| (a - max).units < 0),
    })
}
