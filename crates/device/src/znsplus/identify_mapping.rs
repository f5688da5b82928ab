//! identify_mapping (ZNS+, seed 002 §3.3.1): the bit fields of a logical
//! chunk address that pick its flash chip group and its chip.
//!
//! Under the static mapping of [`crate::mapping`], zone `z` lives in FCG
//! `z mod N_FCG` and chunk `j` of a zone on die `j mod D_zone` of the group.
//! With power-of-two D_zone and N_FCG both are bit fields of the chunk
//! address (LBA / LBAs per chunk): the chip id is its low log2(D_zone) bits,
//! the FCG id the low log2(N_FCG) bits of the zone address above the chunk
//! offset. Otherwise the mapping has no bit fields and the command fails with
//! invalid_field.

use crate::backend::Backend;
use crate::front::command::{CmdResult, MappingInfo};
use crate::ssd::Ssd;
use crate::status::Status;
use zonelab_sim::Nanos;

/// Bytes the command returns (one identify page).
const IDENTIFY_MAPPING_BYTES: u64 = 4096;

/// The chip and FCG id fields, if the mapping has them.
pub(crate) fn identify_mapping(core: &Backend) -> Option<MappingInfo> {
    let l = &core.layout;
    let zone_chunks = l.zone_lbas / l.lbas_per_chunk;
    if !l.d_zone.is_power_of_two() || !l.fcgs.is_power_of_two() || zone_chunks < u64::from(l.d_zone) {
        return None;
    }
    Some(MappingInfo {
        lbas_per_chunk: l.lbas_per_chunk,
        chip_id_shift: 0,
        chip_id_bits: l.d_zone.trailing_zeros(),
        fcg_id_shift: zone_chunks.trailing_zeros(),
        fcg_id_bits: l.fcgs.trailing_zeros(),
    })
}

pub(crate) fn identify_mapping_command(
    core: &mut Backend,
    ssd: &mut Ssd,
    ready_ns: Nanos,
) -> (Status, Nanos, CmdResult) {
    let Some(info) = identify_mapping(core) else {
        return core.fail(ssd, ready_ns, Status::InvalidField);
    };
    let fw_end = ssd.reserve_firmware(ready_ns, core.config.controller.identify_ns);
    let done = ssd.link_reserve_to_host(fw_end, IDENTIFY_MAPPING_BYTES);
    (Status::Success, done, CmdResult::Mapping(Box::new(info)))
}

#[cfg(test)]
mod tests {
    use crate::{preset, Device, DeviceOptions};

    /// The fields give exactly the die the device maps each chunk to.
    #[test]
    fn bit_fields_name_the_die_of_every_chunk() {
        for (d_zone, zones) in [(16u32, 8u32), (4, 8), (8, 6)] {
            let opts = DeviceOptions {
                zones: Some(zones),
                sets: vec![("mapping.d_zone".into(), d_zone.to_string())],
                ..Default::default()
            };
            let dev = Device::new(opts.apply(preset("mlc").unwrap()).unwrap()).unwrap();
            let info = dev.identify_mapping().unwrap();
            let field = |chunk: u64, shift: u32, bits: u32| {
                u32::try_from((chunk >> shift) & ((1 << bits) - 1)).expect("an ID field of under 32 bits")
            };
            let per_chunk = info.lbas_per_chunk;
            for lba in (0..dev.nsze()).step_by(usize::try_from(per_chunk * 7 + 1).expect("a few chunks of LBAs")) {
                let zone = dev.zones().zone_of(lba);
                let chunk_in_zone = (lba - dev.zones().zslba(zone)) / per_chunk;
                let die = dev.mapping().die_of_chunk(zone, chunk_in_zone);
                let chunk = lba / per_chunk;
                let fcg = field(chunk, info.fcg_id_shift, info.fcg_id_bits);
                let chip = field(chunk, info.chip_id_shift, info.chip_id_bits);
                assert_eq!(fcg * d_zone + chip, die, "d_zone {d_zone} lba {lba}");
            }
        }
    }
}
