//! `metahook`: metahook's runtime with the controllers it ships — Hello,
//! Hikawa and Foo — served, driven, rendered and their CRDs printed. A
//! binary of your own is the same line with your controllers.
#![forbid(unsafe_code)]

// The global allocator: glibc's by default; `--features jemalloc` or
// `--features mimalloc` for another (bench/driver-memory.sh compares them).
#[cfg(all(feature = "jemalloc", feature = "mimalloc"))]
compile_error!("the features jemalloc and mimalloc each choose the global allocator: enable one");

#[cfg(all(feature = "jemalloc", not(feature = "mimalloc")))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[cfg(all(feature = "mimalloc", not(feature = "jemalloc")))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    metahook::main(metahook_seeds::controllers().iter().cloned())
}
