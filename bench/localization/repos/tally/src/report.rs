//! Balance and register reports.
use crate::account::{depth, AccountTree};
use crate::amount::Amount;
use crate::journal::Journal;
use crate::query::{matches, Term};

pub fn build_tree(journal: &Journal, terms: &[Term]) -> AccountTree {
    let mut tree = AccountTree::default();
    for txn in &journal.transactions {
        for posting in &txn.postings {
            if let Some(amount) = &posting.amount {
                if matches(terms, txn, posting) {
                    tree.post(&posting.account, amount);
                }
            }
        }
    }
    tree
}

/// One line per account (indented by depth) with its total including sub-accounts.
pub fn balance_report(journal: &Journal, terms: &[Term]) -> Vec<String> {
    let tree = build_tree(journal, terms);
    let mut lines = Vec::new();
    for account in tree.all_accounts() {
        let totals = tree.total(&account);
        let amounts: Vec<String> = totals.values().filter(|a| !a.is_zero()).map(|a| a.to_string()).collect();
        if amounts.is_empty() {
            continue;
        }
        let name = account.rsplit(':').next().unwrap_or(&account);
        lines.push(format!("{:>20}  {}{}", amounts.join(", "), "  ".repeat(depth(&account) - 1), name));
    }
    lines
}

/// Postings matching the query with a running total per commodity.
pub fn register_report(journal: &Journal, terms: &[Term]) -> Vec<String> {
    let mut running: Vec<Amount> = Vec::new();
    let mut lines = Vec::new();
    for txn in &journal.transactions {
        for posting in &txn.postings {
            let Some(amount) = &posting.amount else { continue };
            if !matches(terms, txn, posting) {
                continue;
            }
            match running.iter_mut().find(|r| r.commodity == amount.commodity) {
                Some(r) => *r = &*r + amount,
                None => running.push(amount.clone()),
            }
            let total: Vec<String> = running.iter().map(|a| a.to_string()).collect();
            lines.push(format!("{} {:<20} {:<24} {:>14} {:>14}", txn.date, txn.payee, posting.account, amount.to_string(), total.join(", ")));
        }
    }
    lines
}
