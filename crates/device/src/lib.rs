//! `device`: a ZNS SSD that follows the NVMe Zoned Namespace command set.
//!
//! Commands ([`Command`]) go to a [`ZonedDevice`]: the simulated SSD
//! [`Device`], built from a [`DeviceConfig`] (a preset or TOML), or the ideal
//! zero-latency [`ideal::IdealDevice`]. Each returns a [`Completion`] with its
//! NVMe status and its simulated submission and completion times. The SSD is
//! built from layers, each a module with its own state: [`front`] (command
//! checks, Identify, Report Zones), [`zone`] (state machine and resources),
//! [`controller`] (firmware, link, write buffers), [`translation`] (zone to
//! flash mapping, LogFBG, conventional FTL) and [`scheduler`] (flash timelines
//! and background work), assembled in `backend` (the layers' state and the
//! data path); [`management`], [`znsplus`], [`conventional`] and [`power`]
//! are clients of them, functions over that state, and [`Device`] is the NVMe
//! front that dispatches to them.

// Every narrowing `as` is checked or says why it may drop bits (issue 40).
#![deny(clippy::cast_possible_truncation)]

pub(crate) mod backend;
pub mod capacity;
pub mod config;
pub mod controller;
pub mod conventional;
pub mod counters;
pub mod data;
pub mod device;
pub mod fdp;
pub mod front;
pub mod ideal;
pub mod management;
pub mod namespaces;
pub mod options;
pub mod power;
pub mod presets;
pub mod scheduler;
pub(crate) mod ssd;
pub mod status;
pub mod tracking;
pub mod translation;
pub mod znsplus;
pub mod zone;
pub mod zoned;

pub use controller::buffer;
pub use front::command;
pub use translation::mapping;

pub use capacity::{scale_to_capacity, smallest_capacity_bytes, user_capacity_bytes};
pub use command::{
    CmdResult, Command, Completion, IdentifyData, MappingInfo, Payload, ReadPattern, ReportFilter, SourceRange,
    Started, Tag, ZoneAction, ZoneDescriptor, ZoneReport,
};
pub use config::fdp::{FdpConfig, HandleType};
pub use config::namespaces::{CommandSet, NamespaceEntry, NAMESPACES_MAX};
pub use config::{
    ConfigError, ConventionalConfig, DeviceConfig, EraseAt, EraseScope, FinishConfig, FinishDesign, HoldSpan, InFlight,
    Layout, ManagementConfig, Mode, Plugging, PoolRelease, ResetConfig, RoomOrder, StartDie, VictimPolicy,
    WriteBufferConfig, WriteCache, ZnsPlusConfig, ZoneMapping,
};
pub use conventional::FtlCounters;
pub use counters::DeviceCounters;
pub use device::Device;
pub use fdp::{FdpEvent, FdpEventKind, FdpLogs, FdpStats, RuhStatus};
pub use namespaces::{Namespace, Namespaces};
pub use options::{load_device, parse_size, DeviceOptions, ValueError};
pub use power::PowerCutReport;
pub use presets::{fdp_scale_model, preset, preset_description, with_seed001_namespaces, PRESET_NAMES};
pub use status::Status;
pub use tracking::Tracking;
pub use znsplus::ZnsPlusCounters;
pub use zone::{ZoneState, ZoneTable, ZoneType};
pub use zoned::ZonedDevice;
