//! The globalconfigmap example's binary: metahook's command line (`serve`,
//! `drive`, `render`, `crds`) for its one controller.
#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    metahook::main([metahook_example_globalconfigmap::controller()])
}
