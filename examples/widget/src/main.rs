//! widget-operator: `serve`, `serve --drive`, `drive`, `render`, `crds`, `chart`
//! and `manifests`, for the Widget controller.
#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    metahook::main([widget_operator::controller()])
}
