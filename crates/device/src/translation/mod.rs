//! The flash translation: where each block of the namespace lives in flash.
//!
//! - [`mapping`]: the static zone-to-flash-block-group mapping of ZNS+ §2.2
//!   (chip groups, block groups, program units).
//! - [`log_fbg`]: ZNS+ threaded logging's LogFBG per TL_opened zone.
//! - [`ftl`]: the page-mapping FTL of a conventional (block-interface) device.

pub mod ftl;
pub mod log_fbg;
pub mod mapping;

use log_fbg::TlZone;
use mapping::Mapping;
use std::collections::BTreeMap;

/// Zone translation state of one namespace (a page-mapped namespace's FTL
/// state is its data path's, in `crate::conventional`).
#[derive(Debug, Clone)]
pub(crate) struct Translation {
    pub(crate) mapping: Mapping,
    /// TL_opened zones.
    pub(crate) tl: BTreeMap<u32, TlZone>,
}
