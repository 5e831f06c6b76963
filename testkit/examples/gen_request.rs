//! Prints a generated Metacontroller-shaped request, compact, for the load
//! script: `cargo run --release -p metahook-testkit --example gen_request -- hikawa 1000`.
//! Kinds: `hello N`, `hikawa N`, `foo-customize`, `foo-sync`.

use metahook_testkit::requests;
use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n = || args.get(1).and_then(|n| n.parse().ok()).unwrap_or(1);
    let value = match args.first().map(String::as_str) {
        Some("hello") => requests::hello(n()),
        Some("hikawa") => requests::hikawa(n()),
        Some("foo-customize") => requests::foo_customize(),
        Some("foo-sync") => requests::foo_sync(),
        _ => {
            eprintln!("usage: gen_request hello|hikawa N | foo-customize | foo-sync");
            return ExitCode::FAILURE;
        }
    };
    match std::io::stdout().write_all(&requests::bytes(&value)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
