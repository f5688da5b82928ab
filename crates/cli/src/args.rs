//! Command-line options shared by every command that takes a device.

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::Args;
use zonelab_device::{load_device, parse_size, ConfigError, DeviceConfig, DeviceOptions, ValueError};

fn size_arg(s: &str) -> Result<u64, ValueError> {
    parse_size(s)
}

/// A `--set` argument that is not `PATH=VALUE`.
#[derive(Debug, thiserror::Error)]
enum SetArgError {
    #[error("'{0}' is not PATH=VALUE (e.g. flash_timing.program_ns=2ms)")]
    NoEquals(String),
    #[error("'{0}' has an empty PATH")]
    EmptyPath(String),
}

/// `--device`'s help, naming the presets the registry has.
fn device_help() -> String {
    format!("Device preset ({}) or a TOML device file", zonelab_device::PRESET_NAMES.join(", "))
}

fn set_arg(s: &str) -> Result<(String, String), SetArgError> {
    let (path, value) = s.split_once('=').ok_or_else(|| SetArgError::NoEquals(s.to_string()))?;
    if path.is_empty() {
        return Err(SetArgError::EmptyPath(s.to_string()));
    }
    Ok((path.trim().to_string(), value.to_string()))
}

#[derive(Debug, Args, Clone)]
pub struct DeviceArgs {
    /// Device preset (`zonelab device list`) or a TOML device file.
    #[arg(long, default_value = "zn540", help = device_help())]
    pub device: String,
    /// Override any device parameter by its TOML path, e.g. --set flash_timing.program_ns=2ms.
    #[arg(long = "set", value_name = "PATH=VALUE", value_parser = set_arg)]
    pub sets: Vec<(String, String)>,
    /// Number of zones (conventional ones included).
    #[arg(long)]
    pub zones: Option<u32>,
    /// Zone size (power of two of LBAs), e.g. 64m.
    #[arg(long, value_parser = size_arg)]
    pub zone_size: Option<u64>,
    /// Zone capacity, e.g. 48m.
    #[arg(long, value_parser = size_arg)]
    pub zone_capacity: Option<u64>,
    /// Max open zones (0 = unlimited).
    #[arg(long)]
    pub max_open: Option<u32>,
    /// Max active zones (0 = unlimited).
    #[arg(long)]
    pub max_active: Option<u32>,
    /// Conventional zones at the start of the namespace.
    #[arg(long)]
    pub conventional_zones: Option<u32>,
    /// LBA format (bytes).
    #[arg(long, value_parser = PossibleValuesParser::new(["512", "4096"]).map(|s| s.parse::<u32>().unwrap_or(0)))]
    pub lba_bytes: Option<u32>,
    /// Keep written data so that reads return it.
    #[arg(long)]
    pub data: bool,
    /// User capacity, e.g. 64g: the namespaces (whole zones, at least one each) and the flash's blocks per plane
    /// scaled together, keeping the geometry, zone size and over-provisioning; below the smallest capacity that
    /// keeps it, an error names that capacity.
    /// See docs/device-model.md, "A smaller drive: --capacity".
    #[arg(long, value_name = "SIZE", value_parser = size_arg)]
    pub capacity: Option<u64>,
}

impl DeviceArgs {
    pub fn config(&self) -> Result<DeviceConfig, ConfigError> {
        let base = load_device(&self.device)?;
        let opts = DeviceOptions {
            sets: self.sets.clone(),
            zones: self.zones,
            zone_size_bytes: self.zone_size,
            zone_capacity_bytes: self.zone_capacity,
            max_open_zones: self.max_open,
            max_active_zones: self.max_active,
            conventional_zones: self.conventional_zones,
            lba_bytes: self.lba_bytes,
            data: self.data,
            capacity_bytes: self.capacity,
        };
        opts.apply(base)
    }
}
