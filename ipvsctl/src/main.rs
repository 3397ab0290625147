//! The `ipvsctl` binary. Invoked as `ipvsadm` (symlink) it is ipvsadm; as
//! `ipvsctl` with ipvsadm-style options (`ipvsctl -Ln`) too; otherwise the
//! modern subcommands.

fn main() {
    let argv: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let code = ipvsctl::cli::main(argv);
    std::process::exit(code);
}
