//! `cargo bench -p zonelab-workload`: simulated commands per wall-clock second
//! for the scenarios of `zonelab bench`.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use zonelab_device::{preset, Device, Tracking};
use zonelab_workload::bench::{run, Scenario};

const COMMANDS: u64 = 200_000;

fn simulator(c: &mut Criterion) {
    let mut group = c.benchmark_group("simulator");
    group.throughput(Throughput::Elements(COMMANDS));
    group.sample_size(10);
    for scenario in Scenario::ALL {
        group.bench_function(scenario.name(), |b| {
            b.iter_batched(
                || Device::with_tracking(preset("zn540").expect("preset"), Tracking::NONE).expect("valid preset"),
                |mut dev| run(&mut dev, scenario, COMMANDS, 1),
                criterion::BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, simulator);
criterion_main!(benches);
