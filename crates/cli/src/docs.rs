//! `zonelab completions SHELL` and `zonelab man`: generated from the clap
//! parser itself, so they cannot drift from the options the binary takes.

use crate::{Cli, UserError};
use clap::{Args, CommandFactory};
use std::io::Write;
use std::path::PathBuf;

#[derive(Args)]
pub struct ManArgs {
    /// Write zonelab.1 and one page per subcommand (zonelab-run.1, ...) into DIR instead of printing zonelab.1.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

pub fn completions(shell: clap_complete::Shell) -> Result<(), UserError> {
    // Into memory first: clap_complete panics when its writer fails, and
    // `zonelab completions bash | head` closes stdout early.
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "zonelab", &mut script);
    print_all(&script)
}

/// Writes to stdout; a reader that stopped early (broken pipe) is no error.
fn print_all(bytes: &[u8]) -> Result<(), UserError> {
    match std::io::stdout().lock().write_all(bytes) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(UserError(format!("stdout: {e}"))),
        _ => Ok(()),
    }
}

pub fn man(args: &ManArgs) -> Result<(), UserError> {
    let command = Cli::command();
    match &args.out {
        Some(dir) => {
            let io = |e: std::io::Error| UserError(format!("{}: {e}", dir.display()));
            std::fs::create_dir_all(dir).map_err(io)?;
            clap_mangen::generate_to(command, dir).map_err(io)
        }
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(command).render(&mut page).map_err(|e| UserError(format!("man page: {e}")))?;
            print_all(&page)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// clap's own consistency checks (conflicts name real arguments, ...).
    #[test]
    fn the_parser_is_consistent() {
        Cli::command().debug_assert();
    }
}
