//! `cargo bench -p zonelab-workload`: simulated commands per wall-clock second
//! for the scenarios of `zonelab bench` (each also runs alone under callgrind:
//! `zonelab bench --only NAME`, `scripts/callgrind-bench`).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use zonelab_device::{preset, Device, Tracking};
use zonelab_workload::bench::{run, Scenario};
use zonelab_workload::fio::{parse::parse_run, run::Engine, run::RunOptions};

const COMMANDS: u64 = 200_000;

fn device() -> Device {
    Device::with_tracking(preset("zn540").expect("preset"), Tracking::NONE).expect("valid preset")
}

fn simulator(c: &mut Criterion) {
    let mut group = c.benchmark_group("simulator");
    group.throughput(Throughput::Elements(COMMANDS));
    group.sample_size(10);
    for scenario in Scenario::ALL {
        group.bench_function(scenario.name(), |b| {
            b.iter_batched(device, |mut dev| run(&mut dev, scenario, COMMANDS, 1), criterion::BatchSize::LargeInput)
        });
    }
    // `zonelab run` of 4 KiB writes at QD 1: the fio engine and host stack on top of the device.
    for engine in ["io_uring_cmd", "libaio"] {
        let args: Vec<String> = [
            "--name=bench",
            "--rw=write",
            "--bs=4k",
            "--iodepth=1",
            &format!("--ioengine={engine}"),
            "--direct=1",
            "--zonemode=zbd",
            &format!("--number_ios={COMMANDS}"),
            "--time_based",
            "--runtime=1h",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let set = parse_run(&args, &[]).expect("a valid job");
        group.bench_function(format!("fio {engine} write 4KiB QD1"), |b| {
            b.iter_batched(
                device,
                |mut dev| {
                    let engine = Engine::new(&mut dev, &set, &RunOptions::default()).expect("a valid run");
                    engine.run(&mut |_| {}).expect("the run completes")
                },
                criterion::BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, simulator);
criterion_main!(benches);
