//! Journal text -> Journal.
use crate::amount::Amount;
use crate::date::Date;
use crate::journal::{BalanceError, Journal, Posting, Transaction};

#[derive(Debug, PartialEq)]
pub struct ParseError {
    pub line: usize,
    pub message: String,
}

fn err(line: usize, message: impl Into<String>) -> ParseError {
    ParseError { line, message: message.into() }
}

/// Split a posting line into account and amount text at the first run of two or more spaces or a tab.
fn split_posting(text: &str) -> (&str, &str) {
    let bytes = text.as_bytes();
    for i in 0..bytes.len() {
        if bytes[i] == b'\t' || (bytes[i] == b' ' && bytes.get(i + 1) == Some(&b' ')) {
            return (text[..i].trim(), text[i..].trim());
        }
    }
    (text.trim(), "")
}

fn parse_header(text: &str, line: usize) -> Result<Transaction, ParseError> {
    let (date_text, rest) = text.split_once(' ').unwrap_or((text, ""));
    let date = Date::parse(date_text).ok_or_else(|| err(line, format!("invalid date {}", date_text)))?;
    let rest = rest.trim();
    let (cleared, payee) = match rest.strip_prefix('*') {
        Some(p) => (true, p.trim()),
        None => (false, rest),
    };
    let payee = payee.split(';').next().unwrap_or("").trim().to_string();
    Ok(Transaction { date, payee, cleared, postings: Vec::new(), line })
}

fn finish(journal: &mut Journal, mut txn: Transaction) -> Result<(), ParseError> {
    if txn.postings.len() < 2 {
        return Err(err(txn.line, "a transaction needs at least two postings"));
    }
    txn.balance().map_err(|e| match e {
        BalanceError::TwoElided { line } => err(line, "only one posting may omit its amount"),
        BalanceError::Unbalanced { line, residual } => err(line, format!("transaction does not balance ({})", residual)),
    })?;
    journal.transactions.push(txn);
    Ok(())
}

/// Parse a whole journal. Line numbers in errors are 1-based.
pub fn parse_journal(text: &str, default_commodity: &str) -> Result<Journal, ParseError> {
    let mut journal = Journal { transactions: Vec::new(), default_commodity: default_commodity.to_string() };
    let mut current: Option<Transaction> = None;
    for (index, raw) in text.lines().enumerate() {
        let line = index;
        let content = raw.split(';').next().unwrap_or("");
        if content.trim().is_empty() {
            continue;
        }
        if raw.starts_with(' ') || raw.starts_with('\t') {
            let txn = current.as_mut().ok_or_else(|| err(line, "posting outside a transaction"))?;
            let (account, amount_text) = split_posting(content.trim_start());
            let amount = if amount_text.is_empty() {
                None
            } else {
                Some(Amount::parse(amount_text, default_commodity).map_err(|e| err(line, format!("{:?}", e)))?)
            };
            txn.postings.push(Posting { account: account.to_string(), amount, line });
        } else {
            if let Some(txn) = current.take() {
                finish(&mut journal, txn)?;
            }
            current = Some(parse_header(content.trim(), line)?);
        }
    }
    if let Some(txn) = current.take() {
        finish(&mut journal, txn)?;
    }
    Ok(journal)
}
