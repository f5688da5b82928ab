//! `zonelab reproduce znsplus`: seed 002's figures and tables on the simulated file system.

use crate::UserError;
use clap::Args;
use std::path::{Path, PathBuf};
use zonelab_experiments::plot;
use zonelab_experiments::znsplus::{Output, Scale};

#[derive(Args)]
pub struct ZnsplusArgs {
    /// Directory for the CSV files, plots (PNG and SVG) and the paper-vs-zonelab tables (README.md).
    #[arg(long, default_value = "znsplus-results")]
    out: PathBuf,
    /// Replace the results of an earlier run in --out (never a directory zonelab did not write).
    #[arg(long)]
    force: bool,
    /// A smaller file system and shorter runs (under 3 minutes).
    #[arg(long)]
    quick: bool,
    /// Runs at once (default: the machine's cores).
    #[arg(long)]
    jobs: Option<usize>,
    /// Tiny runs whose numbers mean nothing: for tests of the files written.
    #[arg(long, hide = true, conflicts_with = "quick")]
    smoke: bool,
    #[command(flatten)]
    plan: crate::plan::PlanArgs,
}

/// The smallest file system the default 16 chips allow (24 zones of 32 MiB), 1/128 of it written.
const SMOKE: Scale = Scale { fs_bytes: 768 << 20, write_per_fs: 1.0 / 128.0 };

pub fn run(a: &ZnsplusArgs) -> Result<(), UserError> {
    let scale = match (a.smoke, a.quick) {
        (true, _) => SMOKE,
        (false, true) => Scale::QUICK,
        (false, false) => Scale::FULL,
    };
    let jobs = a.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    if jobs == 0 || jobs > 256 {
        return Err(UserError(format!("--jobs {jobs} must be within 1 ..= 256")));
    }
    zonelab_experiments::out_dir::check(&a.out, a.force)?;
    let Some(outputs) = crate::plan::reproduce_znsplus(scale, jobs, &a.plan)? else {
        return Ok(());
    };
    zonelab_experiments::out_dir::claim(&a.out, a.force)?;
    write(&a.out, scale, &outputs)?;
    println!("Wrote {} figures and tables to {}", outputs.len(), a.out.display());
    Ok(())
}

/// Writes each output's CSV and plot (SVG and PNG) into `dir`, prints its
/// table and collects them all in `README.md`. Without a font the plots are
/// left out with a warning, as `reproduce characterization` does.
fn write(dir: &Path, scale: Scale, outputs: &[Output]) -> Result<(), UserError> {
    let at = |file: String| dir.join(file);
    let io = |path: &Path, e: std::io::Error| UserError(format!("{}: {e}", path.display()));
    let plots = match plot::register_font() {
        Ok(()) => true,
        Err(e) => {
            eprintln!("zonelab: no plots: {e}");
            false
        }
    };
    let mut readme = format!(
        "# ZNS+ (seed 002) on zonelab\n\nFile system {} MiB, {} MiB written per run after filling.\n",
        scale.fs_bytes >> 20,
        (scale.fs_bytes as f64 * scale.write_per_fs) as u64 >> 20
    );
    for o in outputs {
        let csv = at(format!("{}.csv", o.name));
        std::fs::write(&csv, &o.csv).map_err(|e| io(&csv, e))?;
        readme.push_str(&format!("\n## {}\n\n", o.name));
        if plots {
            plot::svg(&o.figure, &at(format!("{}.svg", o.name)))?;
            plot::png(&o.figure, &at(format!("{}.png", o.name)))?;
            readme.push_str(&format!("![{0}]({0}.svg)\n\n", o.name));
        }
        readme.push_str(&o.table);
        println!("## {}\n\n{}", o.name, o.table);
    }
    let path = at("README.md".into());
    std::fs::write(&path, readme).map_err(|e| io(&path, e))
}
