//! `metahook`: metahook's runtime with the controllers it ships — Hello,
//! Hikawa and Foo — served, driven, rendered and their CRDs printed. A
//! binary of your own is the same line with your controllers.
#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    metahook::main(metahook_seeds::controllers().iter().cloned())
}
