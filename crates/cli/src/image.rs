//! `zonelab image check FILE` (verify a `--backing` image: header, geometry,
//! zone records, every written block's checksum) and `zonelab image upgrade
//! FILE` (convert a format 1 image, which has no checksums).

use crate::UserError;
use clap::{Args, Subcommand};
use std::io::Write;
use std::path::PathBuf;
use zonelab_serve::image::check::{check, upgrade, Upgrade};

#[derive(Debug, Args)]
pub struct ImageArgs {
    #[command(subcommand)]
    action: ImageCmd,
}

#[derive(Debug, Subcommand)]
enum ImageCmd {
    /// Verify an image (FILE and FILE.zones) without writing to it: prints what is wrong, with LBAs; exits 0 when
    /// it is clean, 1 when damage is found, 2 when FILE is no image (missing, not a regular file, not zonelab's).
    Check {
        /// The image's data file, as given to --backing.
        file: PathBuf,
    },
    /// Convert a format 1 image (written before images had checksums) to the current format: the data file is
    /// kept, FILE.zones is rewritten with a checksum for each written block, computed from the data as it is.
    Upgrade {
        /// The image's data file, as given to --backing.
        file: PathBuf,
    },
}

pub fn run(args: &ImageArgs) -> Result<(), UserError> {
    match &args.action {
        ImageCmd::Check { file } => {
            let report = check(file).map_err(|e| UserError(format!("image check: {e}")))?;
            let mut out = std::io::stdout().lock();
            let _ = write!(out, "{report}");
            let _ = out.flush();
            if !report.is_clean() {
                // Damage is not a usage error (2): fsck's convention, 1, so scripts can tell them apart. main()
                // maps only success and user errors, so the status is set here, after stdout is flushed.
                std::process::exit(1);
            }
            Ok(())
        }
        ImageCmd::Upgrade { file } => {
            match upgrade(file).map_err(|e| UserError(format!("image upgrade: {e}")))? {
                Upgrade::AlreadyCurrent => {
                    println!("{}: already of format {}; nothing written", file.display(), zonelab_serve::image::VERSION)
                }
                Upgrade::Upgraded { blocks } => println!(
                    "{}: upgraded to format {} ({blocks} written blocks checksummed from the data as it is)",
                    file.display(),
                    zonelab_serve::image::VERSION
                ),
            }
            Ok(())
        }
    }
}
