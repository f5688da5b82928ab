//! `zonelab reproduce znsplus`: seed 002's figures and tables on the simulated file system.

use crate::UserError;
use clap::Args;
use std::path::PathBuf;
use zonelab_experiments::znsplus::{reproduce, Scale};

#[derive(Args)]
pub struct ZnsplusArgs {
    /// Directory for the CSV files, SVG plots and the paper-vs-zonelab tables (README.md).
    #[arg(long, default_value = "znsplus-results")]
    out: PathBuf,
    /// A smaller file system and shorter runs (under 3 minutes).
    #[arg(long)]
    quick: bool,
    /// Runs at once (default: the machine's cores).
    #[arg(long)]
    jobs: Option<usize>,
}

pub fn run(a: &ZnsplusArgs) -> Result<(), UserError> {
    let scale = if a.quick { Scale::QUICK } else { Scale::FULL };
    let jobs = a.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    if jobs == 0 || jobs > 256 {
        return Err(UserError(format!("--jobs {jobs} must be within 1 ..= 256")));
    }
    std::fs::create_dir_all(&a.out).map_err(|e| UserError(format!("{}: {e}", a.out.display())))?;
    let progress = |i: usize, n: usize| eprint!("\rzonelab: run {}/{n}", i + 1);
    let outputs = reproduce(scale, jobs, &progress).map_err(UserError)?;
    eprintln!();
    let mut readme = format!(
        "# ZNS+ (seed 002) on zonelab\n\nFile system {} MiB, {} MiB written per run after filling.\n",
        scale.fs_bytes >> 20,
        (scale.fs_bytes as f64 * scale.write_per_fs) as u64 >> 20
    );
    for o in &outputs {
        let write = |ext: &str, text: &str| {
            let path = a.out.join(format!("{}.{ext}", o.name));
            std::fs::write(&path, text).map_err(|e| UserError(format!("{}: {e}", path.display())))
        };
        write("csv", &o.csv)?;
        write("svg", &o.svg)?;
        readme.push_str(&format!("\n## {}\n\n![{0}]({0}.svg)\n\n{}", o.name, o.table));
        println!("## {}\n\n{}", o.name, o.table);
    }
    let path = a.out.join("README.md");
    std::fs::write(&path, readme).map_err(|e| UserError(format!("{}: {e}", path.display())))?;
    println!("Wrote {} figures and tables to {}", outputs.len(), a.out.display());
    Ok(())
}
