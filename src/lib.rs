//! The `metahook` binary's library: everything that touches the world. The
//! decisions live in the `metahook-hooks` crate; this crate moves bytes.
#![forbid(unsafe_code)]

pub mod cli;
pub mod crds;
pub mod drive;
pub mod driver;
pub mod render;
pub mod server;
pub mod telemetry;

use cli::{Cli, Command};

/// What failed, by command.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("serving failed")]
    Serve(#[from] server::ServeError),
    #[error("rendering failed")]
    Render(#[from] render::RenderError),
    #[error("writing the CRDs failed")]
    Crds(#[from] crds::CrdsError),
    #[error("setting up logging failed")]
    Telemetry(#[from] telemetry::TelemetryError),
    #[error("driving failed")]
    Drive(#[from] drive::DrivingError),
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
    telemetry::init(args.log_format)?;
    if args.drive {
        let driver = args.driver.clone();
        return Ok(drive::serve_and_drive(
            args.into(),
            metahook_hooks::CONTROLLERS,
            &driver,
            driver::run::HookMode::InProcess,
        )?);
    }
    Ok(server::run_blocking(args.into())?)
}

/// `drive`: hooks over HTTP; the local server answers health and metrics
/// only (an empty controller table).
fn drive_only(args: cli::DriveArgs) -> Result<(), Error> {
    telemetry::init(args.log_format)?;
    let mut settings = server::Settings::new(args.listen);
    settings.shutdown_timeout = std::time::Duration::from_secs(args.shutdown_timeout_seconds);
    settings.workers = Some(1);
    Ok(drive::serve_and_drive(
        settings,
        &[],
        &args.driver,
        driver::run::HookMode::Http,
    )?)
}

/// An error and its sources, one after another: "a: b: c".
pub fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = describe(err);
    let mut source = if is_api_error(err) {
        None
    } else {
        err.source()
    };
    while let Some(cause) = source {
        // Some errors (kube's among them) already print their source; say
        // each thing once.
        let message = describe(cause);
        if !text.contains(&message) {
            text.push_str(": ");
            text.push_str(&message);
        }
        source = if is_api_error(cause) {
            None
        } else {
            cause.source()
        };
    }
    text
}

/// One error, without its sources. An API server's refusal is said as the
/// server said it ("403 Forbidden: ..."): kube's own text appends the whole
/// `Status` in debug form, which buries the message in logs and fills an
/// Event's 1 kB note.
fn describe(err: &(dyn std::error::Error + 'static)) -> String {
    match err.downcast_ref::<kube::Error>() {
        Some(kube::Error::Api(status)) => {
            format!("{} {}: {}", status.code, status.reason, status.message)
        }
        _ => err.to_string(),
    }
}

fn is_api_error(err: &(dyn std::error::Error + 'static)) -> bool {
    matches!(err.downcast_ref::<kube::Error>(), Some(kube::Error::Api(_)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("applying Deployment web failed")]
    struct Apply(#[source] kube::Error);

    #[test]
    fn api_errors_read_as_the_server_said_them() {
        let status = kube::core::Status::failure(
            "deployments.apps \"web\" is forbidden: namespace shop is being terminated",
            "Forbidden",
        )
        .with_code(403);
        let err = Apply(kube::Error::Api(Box::new(status)));
        assert_eq!(
            error_chain(&err),
            "applying Deployment web failed: 403 Forbidden: deployments.apps \"web\" is forbidden: namespace shop is being terminated"
        );
    }
}
