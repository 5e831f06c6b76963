//! The `metahook` binary: it parses the command line and wires the crates
//! together, and decides and serves nothing itself.
//!
//! What decides (the hooks) is kept apart from what does I/O (everything
//! else), so each crate below can be tested alone; this crate only turns
//! arguments into their settings and runs them side by side. Each arrow is
//! a `[dependencies]` edge of the crates' Cargo.toml:
//!
//! ```text
//! metahook (this crate) ──→ service, driver, apiserver, hooks
//! metahook-service   (actix-web: the hook webhooks)           ──→ hooks, tls
//! metahook-driver    (kube-rs: a small Metacontroller)        ──→ hooks
//! metahook-apiserver (the aggregated API: reconciles)         ──→ driver, hooks, tls
//! metahook-tls       (rustls: certificates, re-read; the client's, kept)
//! metahook-hooks     (pure: the controllers)
//!
//! for tests only:
//! metahook-testkit   (fixtures, requests, the service on a socket) ──→ hooks, service
//! metahook-fuzz-harness (what every fuzz input goes through)      ──→ hooks
//! ```
//!
//! - [`cli`]: the command line (`serve`, `drive`, `crds`, `render`);
//!   [`args`]: the one place it becomes each crate's settings;
//! - [`side_by_side`]: the hook server, the driver and the aggregated API
//!   in one process; [`debug`]: `/debug/driver`; [`telemetry`]: logging;
//! - [`crds`]: `metahook crds`, the CRD YAML from the Rust types;
//!   [`render`]: `metahook render`, one hook on a request file, offline.
//!
//! ## Example
//!
//! `metahook crds --out-dir DIR`, as the command line runs it:
//!
//! ```
//! use clap::Parser;
//! use metahook::cli::Cli;
//! use std::ffi::OsStr;
//!
//! let dir = std::env::temp_dir().join(format!("metahook-doc-crds-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let args = ["metahook", "crds", "--out-dir"].map(OsStr::new);
//! let cli = Cli::try_parse_from(args.into_iter().chain([dir.as_os_str()]))?;
//! metahook::run(cli)?;
//! let hello = std::fs::read_to_string(dir.join("helloes.fraim.co.jp.yaml"))?;
//! assert!(hello.contains("kind: CustomResourceDefinition"));
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]

pub mod args;
pub mod cli;
pub mod crds;
pub mod debug;
pub mod render;
pub mod side_by_side;
pub mod telemetry;

use cli::{Cli, Command};
use metahook_driver::prepare::HookMode;
use std::time::Duration;

/// What failed, by command.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("serving failed")]
    Serve(#[from] metahook_service::ServeError),
    #[error("rendering failed")]
    Render(#[from] render::RenderError),
    #[error("writing the CRDs failed")]
    Crds(#[from] crds::CrdsError),
    #[error("setting up logging failed")]
    Telemetry(#[from] telemetry::TelemetryError),
    #[error("the driver's settings are invalid")]
    DriverSettings(#[from] args::DriverSettingsError),
    #[error("driving failed")]
    Drive(#[from] side_by_side::SideBySideError),
    #[error("--api-listen serves the driver's records: it needs --drive (or `metahook drive`)")]
    ApiWithoutDriver,
    #[error(
        "--debug-driver-listen serves the driver's view: it needs --drive (or `metahook drive`)"
    )]
    DebugWithoutDriver,
}

/// Runs the command line.
pub fn run(cli: Cli) -> Result<(), Error> {
    match cli.command {
        None => serve(cli.serve),
        Some(Command::Serve(args)) => serve(args),
        Some(Command::Drive(args)) => drive_only(args),
        Some(Command::Crds(args)) => Ok(crds::run(&args)?),
        Some(Command::Render(args)) => Ok(render::run(&args)?),
    }
}

fn serve(args: cli::ServeArgs) -> Result<(), Error> {
    telemetry::init(args.process.log_format)?;
    let settings = args::service(&args);
    if args.drive {
        let driver = args::driver(&args.driver, HookMode::InProcess, settings.shutdown_timeout)?;
        return Ok(side_by_side::serve_and_drive(
            settings,
            metahook_hooks::controllers(),
            driver,
            args::api(&args.driver),
            args.driver.debug_driver_listen,
            Duration::from_secs(args.driver.shutdown_delay_seconds),
        )?);
    }
    if args.driver.api_listen.is_some() {
        return Err(Error::ApiWithoutDriver);
    }
    if args.driver.debug_driver_listen.is_some() {
        return Err(Error::DebugWithoutDriver);
    }
    Ok(metahook_service::run_blocking(settings)?)
}

/// `drive`: hooks over HTTP; the local server answers health and metrics
/// only (an empty controller table).
fn drive_only(args: cli::DriveArgs) -> Result<(), Error> {
    telemetry::init(args.process.log_format)?;
    let settings = args::health_only(&args);
    let driver = args::driver(&args.driver, HookMode::Http, settings.shutdown_timeout)?;
    let api = args::api(&args.driver);
    let debug = args.driver.debug_driver_listen;
    let delay = Duration::from_secs(args.driver.shutdown_delay_seconds);
    Ok(side_by_side::serve_and_drive(
        settings,
        &[],
        driver,
        api,
        debug,
        delay,
    )?)
}

/// An error and its sources, one after another: "a: b: c".
pub use metahook_driver::error_chain;
