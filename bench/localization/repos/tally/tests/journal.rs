use tally::parse::parse_journal;
use tally::query::parse_query;
use tally::report::balance_report;

const BASIC: &str = "\
2024-03-01 * Grocer
    expenses:food        42.10 EUR
    assets:bank:checking

2024-03-02 Cafe
    expenses:food:coffee  3.5 EUR
    assets:cash
";

#[test]
fn parses_and_balances_elided_posting() {
    let journal = parse_journal(BASIC, "USD").unwrap();
    assert_eq!(journal.transactions.len(), 2);
    let elided = journal.transactions[0].postings[1].amount.as_ref().unwrap();
    assert_eq!(elided.to_string(), "-42.10 EUR");
}

#[test]
fn leap_day_2000_is_valid() {
    let journal = parse_journal("2000-02-29 Rent\n    expenses:rent  500\n    assets:bank\n", "USD").unwrap();
    assert_eq!(journal.transactions[0].date.day, 29);
}

#[test]
fn mixed_commodities_balance_separately() {
    let text = "2024-03-05 Exchange\n    assets:eur  100 EUR\n    assets:eur  -100 EUR\n    assets:usd  50 USD\n    assets:usd  -50 USD\n";
    let journal = parse_journal(text, "USD").unwrap();
    assert_eq!(journal.transactions[0].postings.len(), 4);
}

#[test]
fn error_line_numbers_are_one_based() {
    let err = parse_journal("2024-03-01 Broken\n    expenses:x  1\n    expenses:y\n    assets:z\n", "USD").unwrap_err();
    assert_eq!(err.line, 4, "{}", err.message);
}

#[test]
fn balance_report_rolls_up_parents() {
    let journal = parse_journal(BASIC, "USD").unwrap();
    let lines = balance_report(&journal, &parse_query(&["expenses".to_string()], "USD").unwrap());
    assert!(lines[0].contains("45.60 EUR") && lines[0].ends_with("expenses"), "{:?}", lines);
}

#[test]
fn balance_report_lists_leaf_accounts() {
    let journal = parse_journal(BASIC, "USD").unwrap();
    let lines = balance_report(&journal, &parse_query(&["assets".to_string()], "USD").unwrap());
    assert!(lines.iter().any(|l| l.ends_with("checking")), "no checking line in {:?}", lines);
}
