//! The command line: `serve` (the default), `crds`, `render`.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "metahook",
    version,
    about = "Kubernetes operators as pure functions: Metacontroller hooks for Hello, Hikawa and Foo",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// With no subcommand, metahook serves.
    #[command(flatten)]
    pub serve: ServeArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the hooks over HTTP (the default).
    Serve(ServeArgs),
    /// Print every CRD as YAML, or write one file per CRD.
    Crds(CrdsArgs),
    /// Run one hook on a request file and print the response: what one
    /// reconcile would do, offline.
    Render(RenderArgs),
}

#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "METAHOOK_LISTEN", default_value = "0.0.0.0:8080")]
    pub listen: SocketAddr,
    /// Largest request body accepted; Metacontroller sends every child whole.
    #[arg(long, env = "METAHOOK_MAX_BODY_BYTES", default_value_t = 32 * 1024 * 1024)]
    pub max_body_bytes: usize,
    /// Hook requests handled at once; past it, 429 with Retry-After.
    #[arg(long, env = "METAHOOK_MAX_IN_FLIGHT", default_value_t = 1024)]
    pub max_in_flight: usize,
    /// Seconds a client may take to send a request's head and body.
    #[arg(long, env = "METAHOOK_REQUEST_TIMEOUT_SECONDS", default_value_t = 10)]
    pub request_timeout_seconds: u64,
    /// Seconds to finish requests in flight after SIGTERM.
    #[arg(long, env = "METAHOOK_SHUTDOWN_TIMEOUT_SECONDS", default_value_t = 25)]
    pub shutdown_timeout_seconds: u64,
    /// Worker threads (default: one per CPU).
    #[arg(long, env = "METAHOOK_WORKERS")]
    pub workers: Option<usize>,
    /// Log format.
    #[arg(long, env = "METAHOOK_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Clone, Args)]
pub struct CrdsArgs {
    /// Write one `<name>.yaml` per CRD into this directory instead of
    /// printing them all.
    #[arg(long)]
    pub out_dir: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct RenderArgs {
    /// Controller name, e.g. `hello`.
    pub controller: String,
    /// Hook: `sync`, `finalize` or `customize`.
    pub hook: String,
    /// Request file, JSON or YAML, in Metacontroller's wire format; `-` or
    /// nothing reads standard input.
    pub file: Option<PathBuf>,
    /// The time the hook sees (RFC 3339), instead of now: pins condition
    /// times and Hikawa's pacing.
    #[arg(long)]
    pub now: Option<jiff::Timestamp>,
    /// Print the response exactly as the service sends it (one line)
    /// instead of indented.
    #[arg(long)]
    pub compact: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn no_subcommand_means_serve_with_flags() {
        let cli = Cli::try_parse_from(["metahook", "--listen", "127.0.0.1:9000"]).unwrap();
        assert!(cli.command.is_none());
        assert_eq!(cli.serve.listen.port(), 9000);
    }

    #[test]
    fn render_takes_a_pinned_clock() {
        let cli = Cli::try_parse_from([
            "metahook",
            "render",
            "hello",
            "sync",
            "x.json",
            "--now",
            "2026-11-22T03:00:00Z",
        ])
        .unwrap();
        match cli.command {
            Some(Command::Render(args)) => {
                assert_eq!(args.controller, "hello");
                assert_eq!(args.now.unwrap().to_string(), "2026-11-22T03:00:00Z");
            }
            other => panic!("expected render, got {other:?}"),
        }
    }
}
