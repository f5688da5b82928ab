//! A device as a run specification names it: the command line's device
//! options (`--device`, `--zones`, `--set`, ...) as serializable data.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use zonelab_device::{load_device, parse_size, DeviceConfig, DeviceOptions};

/// The CLI's device options; sizes are text in the CLI's grammar (`64m`, `4096`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceSpec {
    /// A preset name or the path of a TOML device file.
    #[serde(default = "default_preset")]
    pub preset: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Zone count (`--zones`).
    pub zones: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Zone size with a unit (`--zone-size`, e.g. 64m).
    pub zone_size: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Zone capacity with a unit (`--zone-capacity`).
    pub zone_capacity: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Most open zones (`--max-open`).
    pub max_open: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Most active zones (`--max-active`).
    pub max_active: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Conventional zones before the sequential ones.
    pub conventional_zones: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// LBA format in bytes (512 or 4096).
    pub lba_bytes: Option<u32>,
    #[serde(default)]
    /// Data mode: the device keeps written bytes.
    pub data: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// User capacity with a unit (`--capacity`, e.g. 64g): namespaces and flash scaled together.
    pub capacity: Option<String>,
    /// `--set PATH=VALUE` pairs, applied in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub set: Vec<(String, String)>,
}

fn default_preset() -> String {
    "zn540".into()
}

impl Default for DeviceSpec {
    fn default() -> Self {
        DeviceSpec::preset("zn540")
    }
}

impl DeviceSpec {
    /// Preset `name` with no options.
    pub fn preset(name: &str) -> Self {
        DeviceSpec {
            preset: name.into(),
            zones: None,
            zone_size: None,
            zone_capacity: None,
            max_open: None,
            max_active: None,
            conventional_zones: None,
            lba_bytes: None,
            data: false,
            capacity: None,
            set: Vec::new(),
        }
    }

    /// The configuration, with the CLI's error messages (an option's name first).
    pub fn config(&self) -> Result<DeviceConfig> {
        let size = |name: &str, text: &Option<String>| -> Result<Option<u64>> {
            text.as_deref().map(|t| parse_size(t).map_err(|e| Error::Value(e).within(name))).transpose()
        };
        if let Some(bytes) = self.lba_bytes.filter(|b| ![512, 4096].contains(b)) {
            return Err(Error::Invalid(format!("lba_bytes: {bytes} is not a supported LBA format: use 512 or 4096")));
        }
        let options = DeviceOptions {
            sets: self.set.clone(),
            zones: self.zones,
            zone_size_bytes: size("zone_size", &self.zone_size)?,
            zone_capacity_bytes: size("zone_capacity", &self.zone_capacity)?,
            max_open_zones: self.max_open,
            max_active_zones: self.max_active,
            conventional_zones: self.conventional_zones,
            lba_bytes: self.lba_bytes,
            data: self.data,
            capacity_bytes: size("capacity", &self.capacity)?,
        };
        let base = load_device(&self.preset)?;
        Ok(options.apply(base)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_map_onto_the_configuration() {
        let spec = DeviceSpec {
            zones: Some(8),
            zone_size: Some("64m".into()),
            zone_capacity: Some("48m".into()),
            set: vec![("management.finish_ns".into(), "2ms".into())],
            ..DeviceSpec::default()
        };
        let config = spec.config().unwrap();
        assert_eq!(config.namespace.zones, 8);
        assert_eq!(config.namespace.zone_capacity_bytes, 48 << 20);
        assert_eq!(config.management.finish_ns, 2_000_000);
    }

    #[test]
    fn bad_options_name_the_option() {
        let spec = DeviceSpec { zone_size: Some("64x".into()), ..DeviceSpec::default() };
        assert!(spec.config().unwrap_err().to_string().starts_with("zone_size: '64x'"));
        let err = DeviceSpec::preset("nope").config().unwrap_err().to_string();
        assert!(err.contains("unknown device 'nope'"), "{err}");
        let spec = DeviceSpec { capacity: Some("1m".into()), ..DeviceSpec::preset("sn640") };
        let err = spec.config().unwrap_err().to_string();
        assert!(err.contains("--capacity 1048576 (1 MiB): sn640 holds at least one zone"), "{err}");
    }

    #[test]
    fn capacity_scales_the_preset() {
        let spec = DeviceSpec { capacity: Some("64g".into()), ..DeviceSpec::preset("sn640") };
        let config = spec.config().unwrap();
        assert_eq!(config.namespace.zones, 32);
        assert_eq!(zonelab_device::user_capacity_bytes(&config), 64 << 30);
    }
}
