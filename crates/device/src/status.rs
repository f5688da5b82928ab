//! NVMe completion statuses the zoned command set returns.

/// Completion status of a command: Status Code Type and Status Code as NVMe
/// defines them; every error carries Do Not Retry, as devices report zone errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    /// Successful Completion.
    Success,
    /// Invalid Field in Command.
    InvalidField,
    /// LBA Out of Range: the command addresses LBAs past the namespace.
    LbaOutOfRange,
    /// Invalid Zone Operation Request.
    InvalidZoneOperation,
    /// Zone Random Write Area Resources Unavailable (TP 4076): no ZRWA to
    /// allocate, or the write pointer is not on the flush granularity.
    ZrwaResourcesUnavailable,
    /// Zone Boundary Error: the command crosses into the next zone.
    ZoneBoundaryError,
    /// Zone Is Full.
    ZoneIsFull,
    /// Zone Is Read Only.
    ZoneIsReadOnly,
    /// Zone Is Offline.
    ZoneIsOffline,
    /// Zone Invalid Write: a write not at the write pointer.
    ZoneInvalidWrite,
    /// Too Many Active Zones.
    TooManyActiveZones,
    /// Too Many Open Zones.
    TooManyOpenZones,
    /// Zone Invalid State Transition.
    ZoneInvalidStateTransition,
    /// A namespace id the controller has no active namespace for.
    InvalidNamespace,
    /// FDP Disabled: an FDP command to a namespace without Flexible Data Placement.
    FdpDisabled,
    /// Invalid Placement Handle List: a placement identifier the namespace does not have.
    InvalidPlacementHandleList,
}

impl Status {
    /// Every status, in code order within each type.
    pub const ALL: [Status; 16] = [
        Status::Success,
        Status::InvalidField,
        Status::LbaOutOfRange,
        Status::InvalidZoneOperation,
        Status::ZrwaResourcesUnavailable,
        Status::ZoneBoundaryError,
        Status::ZoneIsFull,
        Status::ZoneIsReadOnly,
        Status::ZoneIsOffline,
        Status::ZoneInvalidWrite,
        Status::TooManyActiveZones,
        Status::TooManyOpenZones,
        Status::ZoneInvalidStateTransition,
        Status::InvalidNamespace,
        Status::FdpDisabled,
        Status::InvalidPlacementHandleList,
    ];

    /// Status Code Type: 0 generic, 1 command specific.
    pub fn sct(self) -> u8 {
        match self {
            Status::Success
            | Status::InvalidField
            | Status::LbaOutOfRange
            | Status::InvalidNamespace
            | Status::FdpDisabled
            | Status::InvalidPlacementHandleList => 0,
            _ => 1,
        }
    }

    /// Status Code (the low byte; the zoned codes are 0x1B6-0x1BF with SCT 1).
    pub fn sc(self) -> u8 {
        match self {
            Status::Success => 0x00,
            Status::InvalidField => 0x02,
            Status::LbaOutOfRange => 0x80,
            Status::InvalidZoneOperation => 0xB6,
            Status::ZrwaResourcesUnavailable => 0xB7,
            Status::ZoneBoundaryError => 0xB8,
            Status::ZoneIsFull => 0xB9,
            Status::ZoneIsReadOnly => 0xBA,
            Status::ZoneIsOffline => 0xBB,
            Status::ZoneInvalidWrite => 0xBC,
            Status::TooManyActiveZones => 0xBD,
            Status::TooManyOpenZones => 0xBE,
            Status::ZoneInvalidStateTransition => 0xBF,
            Status::InvalidNamespace => 0x0B,
            Status::FdpDisabled => 0x29,
            Status::InvalidPlacementHandleList => 0x2A,
        }
    }

    /// The combined code as docs/command-semantics.md writes it (SCT << 8 | SC).
    pub fn code(self) -> u16 {
        u16::from(self.sct()) << 8 | u16::from(self.sc())
    }

    /// Do Not Retry: set on every error.
    pub fn dnr(self) -> bool {
        self != Status::Success
    }

    /// Whether the command succeeded.
    pub fn is_success(self) -> bool {
        self == Status::Success
    }

    /// The name traces and reports use (`zone_is_full`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Status::Success => "success",
            Status::InvalidField => "invalid_field",
            Status::LbaOutOfRange => "lba_out_of_range",
            Status::InvalidZoneOperation => "invalid_zone_operation",
            Status::ZrwaResourcesUnavailable => "zrwa_resources_unavailable",
            Status::ZoneBoundaryError => "zone_boundary_error",
            Status::ZoneIsFull => "zone_is_full",
            Status::ZoneIsReadOnly => "zone_is_read_only",
            Status::ZoneIsOffline => "zone_is_offline",
            Status::ZoneInvalidWrite => "zone_invalid_write",
            Status::TooManyActiveZones => "too_many_active_zones",
            Status::TooManyOpenZones => "too_many_open_zones",
            Status::ZoneInvalidStateTransition => "zone_invalid_state_transition",
            Status::InvalidNamespace => "invalid_namespace",
            Status::FdpDisabled => "fdp_disabled",
            Status::InvalidPlacementHandleList => "invalid_placement_handle_list",
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The statuses of Namespace Management and Namespace Attachment (NVMe Base
/// 2.0, Figures 101 and 102) besides success.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AdminStatus {
    /// Invalid Command Opcode: the device has no Namespace Management.
    InvalidOpcode,
    /// Invalid Field in Command (a bad size, an unallocated NSID...).
    InvalidField,
    /// Invalid Namespace or Format: an NSID that is not valid (0, above NN).
    InvalidNamespace,
    /// I/O Command Set Not Supported: a CSI the drive cannot create.
    IoCommandSetNotSupported,
    /// Invalid Format: FLBAS names no LBA format of the controller.
    InvalidFormat,
    /// Namespace Insufficient Capacity: no free range of blocks fits it.
    InsufficientCapacity,
    /// Namespace Identifier Unavailable: every NSID is allocated.
    IdUnavailable,
    /// Namespace Already Attached.
    AlreadyAttached,
    /// Namespace Not Attached.
    NotAttached,
    /// Thin Provisioning Not Supported: NCAP below NSZE.
    ThinProvisioningNotSupported,
    /// Controller List Invalid.
    ControllerListInvalid,
}

impl AdminStatus {
    /// Status Code Type: 0 generic, 1 command specific.
    pub fn sct(self) -> u8 {
        match self {
            AdminStatus::InvalidOpcode
            | AdminStatus::InvalidField
            | AdminStatus::InvalidNamespace
            | AdminStatus::IoCommandSetNotSupported => 0,
            _ => 1,
        }
    }

    /// Status Code.
    pub fn sc(self) -> u8 {
        match self {
            AdminStatus::InvalidOpcode => 0x01,
            AdminStatus::InvalidField => 0x02,
            AdminStatus::InvalidNamespace => 0x0B,
            AdminStatus::IoCommandSetNotSupported => 0x29,
            AdminStatus::InvalidFormat => 0x0A,
            AdminStatus::InsufficientCapacity => 0x15,
            AdminStatus::IdUnavailable => 0x16,
            AdminStatus::AlreadyAttached => 0x18,
            AdminStatus::NotAttached => 0x1A,
            AdminStatus::ThinProvisioningNotSupported => 0x1B,
            AdminStatus::ControllerListInvalid => 0x1C,
        }
    }

    /// `SCT << 8 | SC`.
    pub fn code(self) -> u16 {
        u16::from(self.sct()) << 8 | u16::from(self.sc())
    }

    /// The name traces use.
    pub fn name(self) -> &'static str {
        match self {
            AdminStatus::InvalidOpcode => "invalid_opcode",
            AdminStatus::InvalidField => "invalid_field",
            AdminStatus::InvalidNamespace => "invalid_namespace",
            AdminStatus::IoCommandSetNotSupported => "io_command_set_not_supported",
            AdminStatus::InvalidFormat => "invalid_format",
            AdminStatus::InsufficientCapacity => "namespace_insufficient_capacity",
            AdminStatus::IdUnavailable => "namespace_id_unavailable",
            AdminStatus::AlreadyAttached => "namespace_already_attached",
            AdminStatus::NotAttached => "namespace_not_attached",
            AdminStatus::ThinProvisioningNotSupported => "thin_provisioning_not_supported",
            AdminStatus::ControllerListInvalid => "controller_list_invalid",
        }
    }
}

/// A refused Namespace Management or Attachment: its status and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminError {
    /// The status the controller answers.
    pub status: AdminStatus,
    /// What was wrong, for a person.
    pub detail: String,
}

impl AdminError {
    /// `status`, because of `detail`.
    pub fn new(status: AdminStatus, detail: impl Into<String>) -> Self {
        Self { status, detail: detail.into() }
    }
}

impl std::fmt::Display for AdminError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.status.name(), self.detail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_match_the_semantics_sheet() {
        let expected = [
            ("success", 0x000),
            ("invalid_field", 0x002),
            ("lba_out_of_range", 0x080),
            ("invalid_zone_operation", 0x1B6),
            ("zrwa_resources_unavailable", 0x1B7),
            ("zone_boundary_error", 0x1B8),
            ("zone_is_full", 0x1B9),
            ("zone_is_read_only", 0x1BA),
            ("zone_is_offline", 0x1BB),
            ("zone_invalid_write", 0x1BC),
            ("too_many_active_zones", 0x1BD),
            ("too_many_open_zones", 0x1BE),
            ("zone_invalid_state_transition", 0x1BF),
            ("invalid_namespace", 0x00B),
            ("fdp_disabled", 0x029),
            ("invalid_placement_handle_list", 0x02A),
        ];
        assert_eq!(Status::ALL.len(), expected.len());
        for (status, (name, code)) in Status::ALL.iter().zip(expected) {
            assert_eq!(status.name(), name);
            assert_eq!(status.code(), code, "{name}");
            assert_eq!(status.dnr(), name != "success");
        }
    }
}
