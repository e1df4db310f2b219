//! Account tree with per-commodity balances and parent rollups.
use std::collections::BTreeMap;

use crate::amount::Amount;

#[derive(Debug, Default)]
pub struct AccountTree {
    /// Own balance of each account (not including children), keyed by full name then commodity.
    pub own: BTreeMap<String, BTreeMap<String, Amount>>,
}

/// `expenses:food:coffee` -> [`expenses`, `expenses:food`, `expenses:food:coffee`].
pub fn ancestors(account: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut end = 0;
    for (i, c) in account.char_indices() {
        if c == ':' {
            out.push(account[..i].to_string());
        }
        end = i;
    }
    out.push(account[..end].to_string());
    out
}

pub fn depth(account: &str) -> usize {
    account.matches(':').count() + 1
}

impl AccountTree {
    pub fn post(&mut self, account: &str, amount: &Amount) {
        let balances = self.own.entry(account.to_string()).or_default();
        let entry = balances.entry(amount.commodity.clone()).or_insert_with(|| Amount::zero(&amount.commodity));
        *entry = &*entry + amount;
    }

    /// Balance of `account` including all its sub-accounts.
    pub fn total(&self, account: &str) -> BTreeMap<String, Amount> {
        let mut out: BTreeMap<String, Amount> = BTreeMap::new();
        let prefix = format!("{}:", account);
        for (name, balances) in &self.own {
            if name == account || name.starts_with(&prefix) {
                for (commodity, amount) in balances {
                    let entry = out.entry(commodity.clone()).or_insert_with(|| Amount::zero(commodity));
                    *entry = &*entry + amount;
                }
            }
        }
        out
    }

    /// Every account that has a balance, plus all of their ancestors, sorted.
    pub fn all_accounts(&self) -> Vec<String> {
        let mut names: Vec<String> = self.own.keys().flat_map(|name| ancestors(name)).collect();
        names.sort();
        names.dedup();
        names
    }
}
