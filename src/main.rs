//! `metahook`: parse the command line, run it.
#![forbid(unsafe_code)]

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = metahook::cli::Cli::parse();
    match metahook::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {}", metahook::error_chain(&err));
            ExitCode::FAILURE
        }
    }
}
