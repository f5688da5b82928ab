//! Finish: the zone becomes full at once; its unwritten capacity is then
//! either padded with internal programs or only marked in the mapping.
//!
//! Padding is what makes a finish of a nearly empty ZN540 zone take most of
//! a second (seed 000 Obs 10): the rest of the capacity is programmed at the
//! device's write bandwidth. Seed 003 asks three questions of a padding
//! design, each a knob here: the request size (`pad_bytes`), the pause
//! between requests (`pause_ns`), and whether host I/O pre-empts padding
//! between requests (`preempt`).

use super::Phase;
use crate::backend::Backend;
use crate::config::FinishDesign;
use crate::ssd::Ssd;
use zonelab_sim::Nanos;

/// The work of finishing `zone`, accepted at `ready_ns` with `written_lbas`
/// written. The host data of partly filled program units is programmed
/// now (padding those units); the rest is queued.
pub(crate) fn finish_phases(
    core: &mut Backend,
    ssd: &mut Ssd,
    zone: u32,
    ready_ns: Nanos,
    written_lbas: u64,
) -> Vec<Phase> {
    assert!(written_lbas <= core.layout.zcap_lbas);
    core.flush_partial_units(ssd, zone, ready_ns);
    let m = &core.config.management;
    if written_lbas == 0 && !m.finish.pad_empty {
        return vec![Phase::Firmware { left_ns: m.close_ns }];
    }
    match m.finish.design {
        FinishDesign::Pad => {
            let per_request = m.finish.pad_bytes.div_ceil(core.program_unit_bytes()).max(1);
            let pad = Phase::Pad { zone, units_end: core.zone_units(), per_request, pause_ns: m.finish.pause_ns };
            vec![pad, Phase::Firmware { left_ns: m.finish_ns }]
        }
        FinishDesign::Metadata => {
            let unwritten_lbas = core.layout.zcap_lbas - written_lbas;
            let left_ns = m.finish_ns + m.finish.map_per_lba_ns.saturating_mul(unwritten_lbas);
            vec![Phase::Firmware { left_ns }]
        }
    }
}

/// One padding request from `start_ns`: up to `per_request` of the zone's
/// next units, each on its die. Returns when the last program ends.
pub(crate) fn pad_request(
    core: &mut Backend,
    ssd: &mut Ssd,
    zone: u32,
    units_end: u64,
    per_request: u64,
    start_ns: Nanos,
) -> Nanos {
    let mut end_ns = start_ns;
    for _ in 0..per_request {
        let unit = core.controller.flushed_units(zone);
        if unit >= units_end {
            break;
        }
        if !core.controller.is_preprogrammed(zone, unit) {
            core.count_pad_bytes(core.program_unit_bytes());
        }
        end_ns = end_ns.max(core.program_unit(ssd, zone, start_ns, 0));
    }
    debug_assert!(core.controller.flushed_units(zone) <= units_end);
    end_ns
}
