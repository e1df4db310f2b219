//! Transactions and postings; balancing of elided amounts.
use crate::amount::Amount;
use crate::date::Date;

#[derive(Debug, Clone, PartialEq)]
pub struct Posting {
    pub account: String,
    pub amount: Option<Amount>,
    pub line: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Transaction {
    pub date: Date,
    pub payee: String,
    pub cleared: bool,
    pub postings: Vec<Posting>,
    pub line: usize,
}

#[derive(Debug, PartialEq)]
pub enum BalanceError {
    TwoElided { line: usize },
    Unbalanced { line: usize, residual: String },
}

impl Transaction {
    /// Fill in the one elided amount so that every commodity sums to zero; reject unbalanced
    /// transactions. Transactions may mix commodities (each must balance separately).
    pub fn balance(&mut self) -> Result<(), BalanceError> {
        let elided: Vec<usize> =
            self.postings.iter().enumerate().filter(|(_, p)| p.amount.is_none()).map(|(i, _)| i).collect();
        if elided.len() > 1 {
            return Err(BalanceError::TwoElided { line: self.postings[elided[1]].line });
        }
        let mut total: Option<Amount> = None;
        for posting in &self.postings {
            if let Some(amount) = &posting.amount {
                total = Some(match &total {
                    None => amount.clone(),
                    Some(t) => t + amount,
                });
            }
        }
        let total = match total {
            Some(t) => t,
            None => return Ok(()),
        };
        match elided.first() {
            Some(&i) => {
                self.postings[i].amount = Some(-&total);
                Ok(())
            }
            None if total.is_zero() => Ok(()),
            None => Err(BalanceError::Unbalanced { line: self.line, residual: total.to_string() }),
        }
    }

    pub fn amounts(&self) -> impl Iterator<Item = (&str, &Amount)> {
        self.postings.iter().filter_map(|p| p.amount.as_ref().map(|a| (p.account.as_str(), a)))
    }
}

#[derive(Debug, Default)]
pub struct Journal {
    pub transactions: Vec<Transaction>,
    pub default_commodity: String,
}
