//! Table 4 of seed 002 (fileserver MB/s by medium and copy scheme) for given
//! host costs, to fit `zonelab_fs::HostCosts` against the paper's numbers:
//! `cargo run --release --example znsplus_host_fit -- [--quick] REQUEST_NS PAGE_NS SYSCALL_NS GC_BLOCK_NS`:
//! at the paper's scale (16 GiB, as `reproduce znsplus` runs), or with
//! `--quick` at the smaller one.

use zonelab_device::Device;
use zonelab_experiments::znsplus::{device_config, fs_config, RunSpec, Scale};
use zonelab_fs::{Fs, Recycling};
use zonelab_workload::fsbench::{self, FsBenchConfig, FsWorkload};

/// Seed 002 Table 4 (MB/s): rows TLC, MLC, ZNAND; columns ZNS, IZC-H, IZC-D.
const PAPER: [[f64; 3]; 3] = [[79.5, 113.4, 96.5], [84.5, 154.6, 148.0], [104.0, 218.9, 242.4]];

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let scale = if args.first().is_some_and(|a| a == "--quick") {
        args.remove(0);
        Scale::QUICK
    } else {
        Scale::FULL
    };
    let args: Vec<u64> = args.iter().map(|a| a.parse().expect("nanoseconds")).collect();
    assert!(args.len() >= 4, "usage: [--quick] REQUEST_NS PAGE_NS SYSCALL_NS GC_BLOCK_NS");
    let schemes = [Recycling::Zns, Recycling::IzcH, Recycling::IzcD];
    let cells: Vec<(usize, usize)> = (0..3).flat_map(|m| (0..3).map(move |s| (m, s))).collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let out = std::sync::Mutex::new(vec![0.0; 9]);
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(&(m, s)) = cells.get(i) else { break };
                let mut spec = RunSpec::new(FsWorkload::Fileserver, schemes[s], scale);
                spec.medium = ["tlc", "mlc", "znand"][m];
                let mut cfg = fs_config(&spec);
                (cfg.host.request_ns, cfg.host.page_ns, cfg.host.syscall_ns, cfg.host.gc_block_ns) =
                    (args[0], args[1], args[2], args[3]);
                let dev = Device::new(device_config(&spec).unwrap()).unwrap();
                let mut fs = Fs::mkfs(dev, cfg).unwrap();
                let mut b = FsBenchConfig::new(spec.workload);
                b.write_bytes = spec.write_bytes;
                let r = fsbench::run(&mut fs, &b).unwrap();
                out.lock().unwrap()[i] = r.throughput_mb_s();
            });
        }
    });
    let out = out.into_inner().unwrap();
    let mut errs = Vec::new();
    for m in 0..3 {
        let row: Vec<String> = (0..3)
            .map(|s| {
                let (v, p) = (out[m * 3 + s], PAPER[m][s]);
                errs.push((v / p - 1.0).abs());
                format!("{v:7.1} ({:+4.0}%)", (v / p - 1.0) * 100.0)
            })
            .collect();
        println!("{}: {}", ["tlc  ", "mlc  ", "znand"][m], row.join("  "));
    }
    errs.sort_by(f64::total_cmp);
    println!("worst {:.0}%, within 25%: {}", errs[8] * 100.0, errs.iter().filter(|&&e| e <= 0.25).count());
}
