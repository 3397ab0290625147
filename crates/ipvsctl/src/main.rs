//! The `ipvsctl` binary. Invoked as `ipvsadm` (symlink) it is ipvsadm; as
//! `ipvsctl` with ipvsadm-style options (`ipvsctl -Ln`) too; otherwise the
//! modern subcommands.

fn main() {
    // Die quietly on a closed pipe (`ipvsctl list | head`), like C tools,
    // instead of panicking in print!.
    // SAFETY: restoring the default disposition of SIGPIPE at start-up,
    // before any other thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let argv: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let code = ipvsctl::cli::main(argv);
    std::process::exit(code);
}
