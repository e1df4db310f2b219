use std::process::ExitCode;

use tally::parse::parse_journal;
use tally::query::parse_query;
use tally::report::{balance_report, register_report};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (command, rest) = match args.split_first() {
        Some((c, r)) => (c.as_str(), r),
        None => {
            eprintln!("usage: tally (balance|register) [-f FILE] [QUERY...]");
            return ExitCode::from(2);
        }
    };
    let (file, query_args) = match rest {
        [flag, path, q @ ..] if flag == "-f" => (path.clone(), q.to_vec()),
        q => (std::env::var("TALLY_FILE").unwrap_or_else(|_| "journal.ledger".into()), q.to_vec()),
    };
    let text = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("tally: {}: {}", file, e);
            return ExitCode::from(1);
        }
    };
    let journal = match parse_journal(&text, "USD") {
        Ok(j) => j,
        Err(e) => {
            eprintln!("tally: {}: line {}: {}", file, e.line, e.message);
            return ExitCode::from(1);
        }
    };
    let terms = match parse_query(&query_args, &journal.default_commodity) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("tally: bad query {}", e);
            return ExitCode::from(2);
        }
    };
    let lines = match command {
        "balance" | "bal" => balance_report(&journal, &terms),
        "register" | "reg" => register_report(&journal, &terms),
        other => {
            eprintln!("tally: unknown command {}", other);
            return ExitCode::from(2);
        }
    };
    for line in lines {
        println!("{}", line);
    }
    ExitCode::SUCCESS
}
