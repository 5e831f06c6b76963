//! @@CRATE@@: `serve`, `serve --drive`, `drive`, `render`, `crds`, `chart`
//! and `manifests`, for the @@KIND@@ controller.
#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    metahook::main([@@CRATE_IDENT@@::controller()])
}
