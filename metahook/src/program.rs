//! A binary's `main`: the controllers checked into a table, the command
//! line parsed and run (`serve`, `drive`, `render`, `plan`, `crds`, `chart`,
//! `manifests`, and `new` in the metahook binary). The `runtime` feature.

use crate::cli::{self, Cli, Command, program_name};
use crate::plan::summary::Verdict;
use crate::{args, chart, crds, manifests, plan, render, side_by_side, telemetry};
use clap::{CommandFactory, FromArgMatches};
use metahook_core::{Controller, DeclarationError, HookKind};
use metahook_driver::api_error_chain;
use metahook_driver::start::prepare::HookMode;
use std::process::ExitCode;
use std::time::Duration;

/// What failed, by command.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `serve`: the hook server could not start (an address taken, TLS
    /// files unreadable) or failed.
    #[error("serving failed")]
    Serve(#[from] metahook_service::ServeError),
    /// `render` printed no answer.
    #[error("rendering failed")]
    Render(#[from] render::RenderError),
    /// `plan` made no plan, or not all of it.
    #[error("planning failed")]
    Plan(#[from] plan::PlanError),
    /// `plan --live`: the driver would change this many parents. Not a
    /// failure: [`main`] exits 2 for it, without a message, as `terraform
    /// plan -detailed-exitcode` does, so that a CI gate can tell it from
    /// an error (1).
    #[error("the plan changes {0} parents")]
    ChangesPlanned(usize),
    /// `plan --live`: this many parents could not be planned (their hook
    /// refused or failed, or its answer is not one the driver takes).
    #[error("{0} parents could not be planned: their reconcile would fail")]
    ParentsFailed(usize),
    /// `crds` could not write the CRDs.
    #[error("writing the CRDs failed")]
    Crds(#[from] crds::CrdsError),
    /// `chart` wrote no chart, or not all of it.
    #[error("writing the chart failed")]
    Chart(#[from] chart::ChartError),
    /// `manifests` printed nothing, or not everything.
    #[error("printing the manifests failed")]
    Manifests(#[from] manifests::ManifestsError),
    /// `new` wrote nothing.
    #[cfg(feature = "scaffold")]
    #[error("writing the new crate failed")]
    New(#[from] crate::scaffold::NewError),
    /// Logging or trace export could not be set up.
    #[error("setting up logging and traces failed")]
    Telemetry(#[from] telemetry::TelemetryError),
    /// The driver's flags make no settings that can work.
    #[error("the driver's settings are invalid")]
    DriverSettings(#[from] args::DriverSettingsError),
    /// `serve --drive` or `drive`: the driver, or a server beside it,
    /// stopped with an error.
    #[error("driving failed")]
    Drive(#[from] side_by_side::SideBySideError),
    /// `serve` was given `--api-listen` without `--drive`.
    #[error("--api-listen serves the driver's records: it needs --drive (or `metahook drive`)")]
    ApiWithoutDriver,
    /// `serve` was given `--debug-driver-listen` without `--drive`.
    #[error(
        "--debug-driver-listen serves the driver's view: it needs --drive (or `metahook drive`)"
    )]
    DebugWithoutDriver,
    /// A controller's declaration cannot work ([`Controller::check`]).
    #[error(transparent)]
    Declaration(#[from] DeclarationError),
    /// Two controllers have this name.
    #[error("two controllers are named {0:?}: a controller's name is its hooks' path")]
    DuplicateController(String),
}

/// Your binary's `main`: parses the command line and runs it for
/// `controllers`; says what failed, and how, on standard error.
pub fn main<C: Into<Controller>>(controllers: impl IntoIterator<Item = C>) -> ExitCode {
    let outcome = table(controllers).and_then(|table| run(parse(table), table));
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        // The plan and its summary are on standard output already.
        Err(Error::ChangesPlanned(_)) => ExitCode::from(2),
        Err(err) => {
            eprintln!("error: {}", api_error_chain(&err));
            ExitCode::FAILURE
        }
    }
}

/// The controllers, checked ([`Controller::check`], one name each) and
/// kept for the life of the process: every server and driver of it reads
/// them.
///
/// ```
/// use metahook::{Controller, Error};
/// # use kube::CustomResource;
/// # use schemars::JsonSchema;
/// # use serde::{Deserialize, Serialize};
/// # #[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
/// # #[kube(group = "example.com", version = "v1", kind = "Note", namespaced, status = "NoteStatus")]
/// # pub struct NoteSpec { text: String }
/// # #[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
/// # pub struct NoteStatus {}
/// # fn sync(_: &metahook::Request<Note>) -> metahook::Answer<NoteStatus> {
/// #     metahook::Answer::new(NoteStatus {})
/// # }
///
/// let note = || Controller::composite::<Note>("note").sync(sync);
/// let table = metahook::table([note()])?;
/// assert_eq!(table[0].name(), "note");
/// // One controller per name: a controller's name is its hooks' path.
/// let twice = metahook::table([note(), note()]);
/// assert!(matches!(twice, Err(Error::DuplicateController(name)) if name == "note"));
/// // A declaration that cannot work is refused before anything starts.
/// let no_sync = metahook::table([Controller::composite::<Note>("note")]);
/// assert!(matches!(no_sync, Err(Error::Declaration(_))));
/// # Ok::<(), Error>(())
/// ```
pub fn table<C: Into<Controller>>(
    controllers: impl IntoIterator<Item = C>,
) -> Result<&'static [Controller], Error> {
    let controllers: Vec<Controller> = controllers.into_iter().map(Into::into).collect();
    for (i, controller) in controllers.iter().enumerate() {
        controller.check()?;
        if controllers[..i]
            .iter()
            .any(|c| c.name() == controller.name())
        {
            return Err(Error::DuplicateController(controller.name().to_owned()));
        }
    }
    // Once per process, and needed until it ends: leaking is the lifetime.
    Ok(Box::leak(controllers.into_boxed_slice()))
}

/// The command line of this process, its help naming `controllers`.
fn parse(controllers: &[Controller]) -> Cli {
    let matches = Cli::command()
        .bin_name(program_name())
        .after_help(controllers_help(controllers))
        .get_matches();
    Cli::from_arg_matches(&matches).unwrap_or_else(|err| err.exit())
}

/// "Controllers: hello (sync, finalize), ...".
pub fn controllers_help(controllers: &[Controller]) -> String {
    let each: Vec<String> = controllers
        .iter()
        .map(|c| {
            let hooks: Vec<&str> = c.hook_kinds().map(HookKind::as_str).collect();
            format!("  {} ({})", c.name(), hooks.join(", "))
        })
        .collect();
    format!("Controllers:\n{}", each.join("\n"))
}

/// Runs the command line for `controllers`: what [`main`] does once it
/// has parsed it, for a `main` of your own.
///
/// `crds --out-dir DIR`, run as the command line runs it:
///
/// ```
/// use clap::Parser;
/// use metahook::Controller;
/// use metahook::cli::Cli;
/// use std::ffi::OsStr;
/// # use kube::CustomResource;
/// # use schemars::JsonSchema;
/// # use serde::{Deserialize, Serialize};
/// # #[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
/// # #[kube(group = "example.com", version = "v1", kind = "Note", namespaced, status = "NoteStatus")]
/// # pub struct NoteSpec { text: String }
/// # #[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
/// # pub struct NoteStatus {}
/// # fn sync(_: &metahook::Request<Note>) -> metahook::Answer<NoteStatus> {
/// #     metahook::Answer::new(NoteStatus {})
/// # }
///
/// let table = metahook::table([Controller::composite::<Note>("note").sync(sync)])?;
/// let dir = std::env::temp_dir().join(format!("metahook-doc-crds-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let args = ["metahook", "crds", "--out-dir"].map(OsStr::new);
/// let cli = Cli::try_parse_from(args.into_iter().chain([dir.as_os_str()]))?;
/// metahook::run(cli, table)?;
/// let note = std::fs::read_to_string(dir.join("notes.example.com.yaml"))?;
/// assert!(note.starts_with("# Generated by `metahook crds`"));
/// assert!(note.contains("kind: CustomResourceDefinition"));
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn run(cli: Cli, controllers: &'static [Controller]) -> Result<(), Error> {
    match cli.command {
        None => serve(cli.serve, controllers),
        Some(Command::Serve(args)) => serve(args, controllers),
        Some(Command::Drive(args)) => drive_only(args, controllers),
        Some(Command::Crds(args)) => Ok(crds::run(&args, controllers)?),
        Some(Command::Render(args)) => Ok(render::run(&args, controllers)?),
        Some(Command::Plan(args)) => match plan::run(&args, controllers)?.verdict() {
            Verdict::NoChanges => Ok(()),
            Verdict::Changes(parents) => Err(Error::ChangesPlanned(parents)),
            Verdict::Failures(parents) => Err(Error::ParentsFailed(parents)),
        },
        Some(Command::Chart(args)) => Ok(chart::run(&args, &program_name(), controllers)?),
        Some(Command::Manifests(args)) => Ok(manifests::run(&args, &program_name(), controllers)?),
        #[cfg(feature = "scaffold")]
        Some(Command::New(args)) => Ok(crate::scaffold::run(&args)?),
    }
}

fn serve(args: cli::ServeArgs, controllers: &'static [Controller]) -> Result<(), Error> {
    let _telemetry = telemetry::init(args.process.log_format)?;
    let settings = args::service(&args);
    if args.drive {
        let driver = args::driver(&args.driver, HookMode::InProcess, settings.shutdown_timeout)?;
        return Ok(side_by_side::serve_and_drive(
            settings,
            controllers,
            controllers,
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
    Ok(metahook_service::run_blocking(settings, controllers)?)
}

/// `drive`: hooks over HTTP; the local server answers health and metrics
/// only (an empty controller table).
fn drive_only(args: cli::DriveArgs, controllers: &'static [Controller]) -> Result<(), Error> {
    let _telemetry = telemetry::init(args.process.log_format)?;
    let settings = args::health_only(&args);
    let driver = args::driver(&args.driver, HookMode::Http, settings.shutdown_timeout)?;
    let api = args::api(&args.driver);
    let debug = args.driver.debug_driver_listen;
    let delay = Duration::from_secs(args.driver.shutdown_delay_seconds);
    Ok(side_by_side::serve_and_drive(
        settings,
        &[],
        controllers,
        driver,
        api,
        debug,
        delay,
    )?)
}
