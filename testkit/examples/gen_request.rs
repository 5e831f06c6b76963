//! Prints a generated Metacontroller-shaped request, compact, for the load
//! script: `cargo run --release -p metahook-testkit --example gen_request -- hikawa 1000`.
//! Kinds: `hello N`, `hikawa N`, `foo-customize`, `foo-sync`, and
//! `hostile HOOK PLACE SHAPE BYTES` (`metahook_testkit::hostile`: HOOK as
//! `Hook::name`, PLACE as `Place::name`, SHAPE as `Shape::name`).

use metahook_testkit::hostile::{Hook, Place, Shape};
use metahook_testkit::requests;
use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n = || args.get(1).and_then(|n| n.parse().ok()).unwrap_or(1);
    if args.first().map(String::as_str) == Some("hostile") {
        let arg = |i: usize| args.get(i).map(String::as_str).unwrap_or_default();
        let (Some(hook), Some(place), Some(shape), Ok(bytes)) = (
            Hook::find(arg(1)),
            Place::parse(arg(2)),
            Shape::parse(arg(3)),
            arg(4).parse::<usize>(),
        ) else {
            eprintln!("usage: gen_request hostile HOOK PLACE SHAPE BYTES");
            return ExitCode::FAILURE;
        };
        return write(&hook.body(shape, place, bytes));
    }
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
    write(&requests::bytes(&value))
}

fn write(bytes: &[u8]) -> ExitCode {
    match std::io::stdout().write_all(bytes) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
