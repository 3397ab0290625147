//! `process_options`, ipvsadm's option processing as three passes: scan
//! the options into [`LowArgs`] (`scan.rs`), check them (`checks.rs`), and
//! make the [`Action`] (`action_from.rs`).

use super::*;

/// `parse_options` + `process_options` up to the point of acting: returns
/// the action or a terminal exit (usage, version, any error). Errors are
/// ipvsadm's, in its order: the first one met.
pub fn process_options(argv: &[String], reading_stdin: bool) -> Result<Action, Exit> {
    let program = argv.first().map(String::as_str).unwrap_or("ipvsadm");
    let low = LowArgs::scan(argv, program)?;
    check(&low)?;
    low.into_action(program, reading_stdin)
}
