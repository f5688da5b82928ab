//! Choosing a device on the command line: a preset or a TOML file, `--set
//! PATH=VALUE` overrides, and shortcuts in the spirit of Linux null_blk's zoned
//! parameters. Shortcuts describe the namespace the user wants; where the
//! flash is too small for it, the flash grows (more blocks per plane).
//! `--capacity` scales the namespaces and the flash together
//! ([`crate::capacity`]).

use crate::config::{ConfigError, DeviceConfig, Mode};
use crate::presets::{preset, PRESET_NAMES};

/// Device options shared by every command that takes `--device`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeviceOptions {
    /// `(path, value)` pairs, applied in order.
    pub sets: Vec<(String, String)>,
    /// Zones in the namespace, conventional ones included.
    pub zones: Option<u32>,
    /// Zone size (ZSZE) in bytes: the LBA distance between zone starts.
    pub zone_size_bytes: Option<u64>,
    /// Zone capacity (ZCAP) in bytes: how much of a zone is writable; at most the zone size.
    pub zone_capacity_bytes: Option<u64>,
    /// Maximum open resources (MOR + 1); 0 means no limit.
    pub max_open_zones: Option<u32>,
    /// Maximum active resources (MAR + 1); 0 means no limit.
    pub max_active_zones: Option<u32>,
    /// Conventional (randomly writable) zones at the start of the namespace.
    pub conventional_zones: Option<u32>,
    /// Logical block size in bytes (the LBA format's data size).
    pub lba_bytes: Option<u32>,
    /// Keep written data so that reads return it (data mode instead of timing only).
    pub data: bool,
    /// User capacity in bytes: the namespaces and the flash scaled together,
    /// keeping the geometry and the over-provisioning ([`crate::capacity`]).
    pub capacity_bytes: Option<u64>,
}

fn err<T>(msg: impl Into<String>) -> Result<T, ConfigError> {
    Err(ConfigError(msg.into()))
}

/// Valid spellings, quoted by every size and duration error so that one
/// grammar is learnt once (device options, `--set`, fs-bench, ZINC's epoch).
const SIZE_EXAMPLES: &str = "e.g. 4096, 4k, 4Ki, 4KiB, 64m, 2g";
const DURATION_EXAMPLES: &str = "e.g. 500ns, 350us, 2ms, 1.5s";

/// A size, duration or parameter value on the command line that does not
/// parse. `text` is the value as the user wrote it; each message says what
/// would be valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    /// No leading digits where a byte count was expected.
    #[error("'{text}' is not a size: use bytes or a k, m, g or t suffix ({})", SIZE_EXAMPLES)]
    NotASize {
        /// The value as written.
        text: String,
    },
    /// A size suffix other than k, m, g or t (with optional i, b or ib).
    #[error("'{text}' has an unknown size suffix '{suffix}': use k, m, g or t ({})", SIZE_EXAMPLES)]
    UnknownSizeSuffix {
        /// The value as written.
        text: String,
        /// The part after the digits.
        suffix: String,
    },
    /// The number does not fit the parameter's integer type.
    #[error("'{text}' is too large")]
    TooLarge {
        /// The value as written.
        text: String,
    },
    /// The size in bytes exceeds `u64`.
    #[error("'{text}' overflows 64 bits")]
    SizeOverflow {
        /// The value as written.
        text: String,
    },
    /// Not a decimal number followed by a unit.
    #[error("'{text}' is not a duration: use a number and a unit ({})", DURATION_EXAMPLES)]
    NotADuration {
        /// The value as written.
        text: String,
    },
    /// A non-zero duration without a unit: it could mean any of them.
    #[error("'{text}' has no time unit: write ns, us, ms or s ({})", DURATION_EXAMPLES)]
    NoTimeUnit {
        /// The value as written.
        text: String,
    },
    /// A time unit other than ns, us, ms or s.
    #[error("'{text}' has an unknown time unit '{unit}': use ns, us, ms or s ({})", DURATION_EXAMPLES)]
    UnknownTimeUnit {
        /// The value as written.
        text: String,
        /// The part after the number.
        unit: String,
    },
    /// The duration exceeds `u64` nanoseconds.
    #[error("'{text}' overflows 64 bits of nanoseconds")]
    DurationOverflow {
        /// The value as written.
        text: String,
    },
    /// More decimals than the unit has nanoseconds (e.g. 1.5ns).
    #[error("'{text}' is finer than a nanosecond")]
    FinerThanNanosecond {
        /// The value as written.
        text: String,
    },
    /// An integer parameter given something other than digits.
    #[error("'{text}' is not a non-negative integer")]
    NotAnInteger {
        /// The value as written.
        text: String,
    },
    /// A boolean parameter given something other than true/false/1/0.
    #[error("'{text}' is not a boolean: use true or false")]
    NotABoolean {
        /// The value as written.
        text: String,
    },
    /// A floating-point parameter given something that is not a number.
    #[error("'{text}' is not a number")]
    NotANumber {
        /// The value as written.
        text: String,
    },
    /// The path names a whole section of the configuration, not a value.
    #[error("this parameter is a section; set one of its fields")]
    Section,
}

/// Parses a byte size: a number of bytes, or one with a binary suffix
/// (k, m, g, t; optionally followed by "i", "b" or "ib": 4k, 4Ki, 4KiB, 1077m, 2g).
pub fn parse_size(text: &str) -> Result<u64, ValueError> {
    let t = text.trim();
    let digits_end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, suffix) = t.split_at(digits_end);
    if number.is_empty() {
        return Err(ValueError::NotASize { text: text.to_string() });
    }
    let n: u64 = number.parse().map_err(|_| ValueError::TooLarge { text: text.to_string() })?;
    let shift = match suffix.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "ki" | "kb" | "kib" => 10,
        "m" | "mi" | "mb" | "mib" => 20,
        "g" | "gi" | "gb" | "gib" => 30,
        "t" | "ti" | "tb" | "tib" => 40,
        _ => return Err(ValueError::UnknownSizeSuffix { text: text.to_string(), suffix: suffix.to_string() }),
    };
    n.checked_mul(1u64 << shift).ok_or_else(|| ValueError::SizeOverflow { text: text.to_string() })
}

/// Parses a duration into nanoseconds: a number (decimals allowed) and a
/// unit, ns, us, ms or s. A bare number is refused, 0 aside: "2" could be
/// any unit, and read as nanoseconds it silently made a device 1000x faster.
pub fn parse_duration_ns(text: &str) -> Result<u64, ValueError> {
    let t = text.trim();
    let number_end = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (number, unit) = t.split_at(number_end);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() || fraction.contains('.') {
        return Err(ValueError::NotADuration { text: text.to_string() });
    }
    let scale: u64 = match unit {
        "ns" => 1,
        "us" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "" if number.chars().all(|c| c == '0' || c == '.') => 1,
        "" => return Err(ValueError::NoTimeUnit { text: text.to_string() }),
        _ => return Err(ValueError::UnknownTimeUnit { text: text.to_string(), unit: unit.to_string() }),
    };
    let too_large = || ValueError::DurationOverflow { text: text.to_string() };
    let whole: u64 = if whole.is_empty() { 0 } else { whole.parse().map_err(|_| too_large())? };
    let whole_ns = whole.checked_mul(scale).ok_or_else(too_large)?;
    // The fraction in integer arithmetic, digit by digit, so 1.5ms is exactly 1_500_000.
    let (mut fraction_ns, mut place) = (0u64, scale);
    for digit in fraction.bytes() {
        place /= 10;
        if place == 0 {
            return Err(ValueError::FinerThanNanosecond { text: text.to_string() });
        }
        fraction_ns += u64::from(digit - b'0') * place;
    }
    whole_ns.checked_add(fraction_ns).ok_or_else(too_large)
}

/// A preset name or the path of a TOML device file.
pub fn load_device(spec: &str) -> Result<DeviceConfig, ConfigError> {
    if let Some(config) = preset(spec) {
        return Ok(config);
    }
    let path = std::path::Path::new(spec);
    if !path.exists() {
        // A name with a directory or a .toml suffix was meant as a file.
        let as_file = spec.contains(std::path::MAIN_SEPARATOR) || spec.contains('/') || spec.ends_with(".toml");
        let what = if as_file { "no such device file" } else { "unknown device" };
        return err(format!(
            "{what} '{spec}': use a preset ({}) or the path of a TOML device file",
            PRESET_NAMES.join(", ")
        ));
    }
    let text = zonelab_sim::input::read_text(path, zonelab_sim::input::TEXT_BYTES_MAX)
        .map_err(|e| ConfigError(e.to_string()))?;
    DeviceConfig::from_toml(&text).map_err(|e| ConfigError(format!("{spec}: {e}")))
}

/// Sets the parameter at dotted `path` (e.g. `flash_timing.program_ns`) to
/// `value`, parsed according to the parameter's type; sizes and durations
/// take suffixes.
pub fn set_parameter(config: &DeviceConfig, path: &str, value: &str) -> Result<DeviceConfig, ConfigError> {
    let mut table = toml::Table::try_from(config).map_err(|e| ConfigError(format!("--set {path}: {e}")))?;
    let keys: Vec<&str> = path.split('.').collect();
    let (last, parents) = keys.split_last().expect("split yields at least one key");
    let mut node = &mut table;
    let mut walked = String::new();
    for key in parents {
        let valid = table_keys(node);
        if node.get(*key).is_none() {
            if let Some(section) = optional_section(&format!("{walked}{key}")) {
                node.insert((*key).to_string(), toml::Value::Table(section));
            }
        }
        node = match node.get_mut(*key) {
            Some(toml::Value::Table(t)) => t,
            _ => return err(format!("--set {path}: no section '{walked}{key}'; valid here: {valid}")),
        };
        walked.push_str(key);
        walked.push('.');
    }
    let valid = table_keys(node);
    let Some(old) = node.get(*last) else {
        return err(format!(
            "--set {path}: unknown parameter '{last}' in '{}'; valid: {valid}",
            walked.trim_end_matches('.')
        ));
    };
    let new = convert_value(last, old, value).map_err(|e| ConfigError(format!("--set {path}={value}: {e}")))?;
    node.insert((*last).to_string(), new);
    let updated: DeviceConfig =
        table.try_into().map_err(|e: toml::de::Error| ConfigError(format!("--set {path}={value}: {}", e.message())))?;
    Ok(updated)
}

/// A section a configuration may leave out (and prints only when present),
/// with its defaults, so that `--set` can reach into it: `namespace.zrwa`.
fn optional_section(path: &str) -> Option<toml::Table> {
    match path {
        "namespace.zrwa" => toml::Table::try_from(crate::config::zrwa::ZrwaConfig::default()).ok(),
        _ => None,
    }
}

fn table_keys(table: &toml::Table) -> String {
    table.keys().cloned().collect::<Vec<_>>().join(", ")
}

fn convert_value(key: &str, old: &toml::Value, value: &str) -> Result<toml::Value, ValueError> {
    match old {
        toml::Value::Integer(_) => {
            let n = if key.ends_with("_ns") {
                parse_duration_ns(value)?
            } else if key.contains("bytes") {
                parse_size(value)?
            } else {
                value.trim().parse::<u64>().map_err(|_| ValueError::NotAnInteger { text: value.to_string() })?
            };
            i64::try_from(n).map(toml::Value::Integer).map_err(|_| ValueError::TooLarge { text: value.to_string() })
        }
        toml::Value::Boolean(_) => match value.trim() {
            "true" | "1" => Ok(toml::Value::Boolean(true)),
            "false" | "0" => Ok(toml::Value::Boolean(false)),
            _ => Err(ValueError::NotABoolean { text: value.to_string() }),
        },
        toml::Value::String(_) => Ok(toml::Value::String(value.to_string())),
        toml::Value::Float(_) => value
            .trim()
            .parse::<f64>()
            .map(toml::Value::Float)
            .map_err(|_| ValueError::NotANumber { text: value.to_string() }),
        _ => Err(ValueError::Section),
    }
}

impl DeviceOptions {
    /// Applies `--set` overrides, then the shortcuts, then grows the flash
    /// to hold the namespace if a shortcut asked for more than it has, then
    /// scales the result to `capacity_bytes`.
    pub fn apply(&self, mut config: DeviceConfig) -> Result<DeviceConfig, ConfigError> {
        for (path, value) in &self.sets {
            config = set_parameter(&config, path, value)?;
        }
        let ns = &mut config.namespace;
        if let Some(lba) = self.lba_bytes {
            ns.lba_bytes = lba;
        }
        if let Some(size) = self.zone_size_bytes {
            ns.zone_size_bytes = size;
            if self.zone_capacity_bytes.is_none() && ns.zone_capacity_bytes > size {
                ns.zone_capacity_bytes = size;
            }
        }
        if let Some(cap) = self.zone_capacity_bytes {
            ns.zone_capacity_bytes = cap;
        }
        if let Some(n) = self.zones {
            ns.zones = n;
        }
        if let Some(n) = self.conventional_zones {
            ns.conventional_zones = n;
        }
        self.apply_resource_limits(&mut config);
        if self.data {
            config.mode = Mode::Data;
        }
        if self.changes_namespace_shape() {
            grow_flash_to_fit(&mut config);
        }
        if let Some(bytes) = self.capacity_bytes {
            if let Some(zones) = self.zones {
                return err(format!(
                    "--capacity {bytes} and --zones {zones} both set the namespace's size: give one of them"
                ));
            }
            config = crate::capacity::scale_to_capacity(&config, bytes)?;
        }
        config.validate()?;
        Ok(config)
    }

    fn changes_namespace_shape(&self) -> bool {
        self.zones.is_some() || self.zone_size_bytes.is_some() || self.zone_capacity_bytes.is_some()
    }

    /// Keeps MOR <= MAR when only one of the two is given.
    fn apply_resource_limits(&self, config: &mut DeviceConfig) {
        let ns = &mut config.namespace;
        match (self.max_open_zones, self.max_active_zones) {
            (Some(open), Some(active)) => {
                ns.max_open_zones = open;
                ns.max_active_zones = active;
            }
            (Some(open), None) => {
                ns.max_open_zones = open;
                if open == 0 || (ns.max_active_zones != 0 && ns.max_active_zones < open) {
                    ns.max_active_zones = open;
                }
            }
            (None, Some(active)) => {
                ns.max_active_zones = active;
                if active != 0 && (ns.max_open_zones == 0 || ns.max_open_zones > active) {
                    ns.max_open_zones = active;
                }
            }
            (None, None) => {}
        }
    }
}

/// Raises `flash.blocks_per_plane` (keeping the preset's spare blocks) when
/// the namespace needs more flash block groups than the flash has.
fn grow_flash_to_fit(config: &mut DeviceConfig) {
    let Some(fit) = config.zone_fit() else {
        return; // validation reports what is wrong
    };
    let blocks_per_plane = u64::from(config.flash.blocks_per_plane);
    if fit.blocks_per_plane_needed > blocks_per_plane {
        let preset_spare = blocks_per_plane % fit.fbg_blocks;
        let blocks = fit.blocks_per_plane_needed.saturating_add(preset_spare).min(u64::from(u32::MAX));
        config.flash.blocks_per_plane = u32::try_from(blocks).expect("clamped to u32");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_durations() {
        assert_eq!(parse_size("4k"), Ok(4096));
        assert_eq!(parse_size("1077m"), Ok(1077 << 20));
        assert_eq!(parse_size("2G"), Ok(2 << 30));
        assert_eq!(parse_size("512"), Ok(512));
        assert!(parse_size("4x").unwrap_err().to_string().contains("suffix"));
        assert!(parse_size("k").is_err());
        assert_eq!(parse_size("4Ki"), Ok(4096));
        assert_eq!(parse_size("64MiB"), Ok(64 << 20));
        assert_eq!(parse_duration_ns("3ms"), Ok(3_000_000));
        assert_eq!(parse_duration_ns("350us"), Ok(350_000));
        assert_eq!(parse_duration_ns("1.5ms"), Ok(1_500_000));
        assert_eq!(parse_duration_ns("0"), Ok(0), "zero is zero in any unit");
        assert!(parse_duration_ns("3h").is_err());
        assert!(parse_duration_ns("1.0000000001s").unwrap_err().to_string().contains("finer than a nanosecond"));
        assert!(parse_duration_ns("99999999999999999999s").unwrap_err().to_string().contains("overflows"));
        for bad in ["", "ms", ".", "1.2.3ms", "-1ms"] {
            assert!(parse_duration_ns(bad).is_err(), "{bad}");
        }
        let bare = parse_duration_ns("2").unwrap_err().to_string();
        assert!(bare.contains("no time unit") && bare.contains("2ms"), "{bare}");
    }

    #[test]
    fn set_parameter_by_path() {
        let c = preset("zn540").unwrap();
        let c = set_parameter(&c, "flash_timing.program_ns", "2ms").unwrap();
        assert_eq!(c.flash_timing.program_ns, 2_000_000);
        let c = set_parameter(&c, "namespace.zone_capacity_bytes", "1g").unwrap();
        assert_eq!(c.namespace.zone_capacity_bytes, 1 << 30);
        let c = set_parameter(&c, "mode", "data").unwrap();
        assert_eq!(c.mode, Mode::Data);
        let e = set_parameter(&c, "flash.pages", "3").unwrap_err().0;
        assert!(e.contains("unknown parameter 'pages'") && e.contains("pages_per_block"), "{e}");
        let e = set_parameter(&c, "nope.x", "3").unwrap_err().0;
        assert!(e.contains("no section 'nope'"), "{e}");
        let e = set_parameter(&c, "mode", "fast").unwrap_err().0;
        assert!(e.contains("mode"), "{e}");
        let e = set_parameter(&c, "flash_timing.program_ns", "2").unwrap_err().0;
        assert!(e.contains("flash_timing.program_ns") && e.contains("no time unit") && e.contains("350us"), "{e}");
        let e = set_parameter(&c, "namespace.cross_zone_read", "maybe").unwrap_err().0;
        assert!(e.contains("boolean"), "{e}");
    }

    #[test]
    fn shortcuts_grow_flash_for_more_zones() {
        let opts = DeviceOptions { zones: Some(3688), ..Default::default() };
        let c = opts.apply(preset("zn540").unwrap()).unwrap();
        assert_eq!(c.namespace.zones, 3688);
        assert!(c.flash.blocks_per_plane >= 3688);
    }

    #[test]
    fn zone_size_shortcut_clamps_capacity_and_limits_stay_ordered() {
        let opts = DeviceOptions { zone_size_bytes: Some(64 << 20), max_active_zones: Some(4), ..Default::default() };
        let c = opts.apply(preset("zn540").unwrap()).unwrap();
        assert_eq!(c.namespace.zone_capacity_bytes, 64 << 20);
        assert_eq!((c.namespace.max_open_zones, c.namespace.max_active_zones), (4, 4));
        let opts = DeviceOptions { max_open_zones: Some(20), ..Default::default() };
        let c = opts.apply(preset("zn540").unwrap()).unwrap();
        assert_eq!((c.namespace.max_open_zones, c.namespace.max_active_zones), (20, 20));
        let opts = DeviceOptions { max_open_zones: Some(20), max_active_zones: Some(10), ..Default::default() };
        let e = opts.apply(preset("zn540").unwrap()).unwrap_err().0;
        assert!(e.contains("MOR must be <= MAR"), "{e}");
    }

    #[test]
    fn shortcuts_on_a_degenerate_geometry_report_instead_of_panicking() {
        let opts = DeviceOptions {
            sets: vec![("flash.pages_per_block".into(), "0".into())],
            zones: Some(5),
            ..Default::default()
        };
        let e = opts.apply(preset("zn540").unwrap()).unwrap_err().0;
        assert!(e.contains("pages_per_block"), "{e}");
    }

    #[test]
    fn invalid_configurations_say_what_to_change() {
        let base = preset("zn540").unwrap();
        let cases = [
            ("namespace.zone_size_bytes", "3g", "power of two"),
            ("namespace.zone_capacity_bytes", "3g", "capacity must be at most the zone size"),
            ("namespace.lba_bytes", "1024", "use 512 or 4096"),
            ("mapping.d_zone", "3", "must divide"),
            ("mapping.stripe_chunks", "5", "must divide the 12 chunks of a program unit"),
            ("namespace.zones", "5000", "raise flash.blocks_per_plane"),
            ("write_buffer.zone_buffer_bytes", "1m", "super word line"),
            ("flash.pages_per_block", "1000", "oneshot_pages"),
            ("flash_timing.plane_interleave_bytes", "3000", "divide flash.page_bytes"),
            ("controller.read_ahead_streams", "0", "must be from 1 to 32"),
            ("controller.read_ahead_streams", "33", "must be from 1 to 32"),
        ];
        for (path, value, needle) in cases {
            let e = set_parameter(&base, path, value).and_then(|c| c.validate().map(|_| ())).unwrap_err().0;
            assert!(e.contains(needle), "{path}={value}: {e}");
        }
    }

    /// Geometries whose cost grows with a product of parameters: the first panicked (64-bit overflow), the second
    /// panicked at the first write, the third took 1.6 GB for 48 writes of 128 KiB, the fourth 17 s for a finish.
    /// Each is refused naming what to change and the bound.
    #[test]
    fn configurations_whose_cost_explodes_say_what_to_change() {
        let small_conventional =
            [("flash.blocks_per_plane", "8"), ("namespace.zones", "16"), ("namespace.conventional_zones", "16")];
        // (preset, --set pairs, what the error says)
        type Case = (&'static str, Vec<(&'static str, &'static str)>, &'static str);
        let cases: [Case; 4] = [
            (
                "sn640",
                vec![("flash.pages_per_block", "4294967295"), ("flash.page_bytes", "2147483648")],
                "fewer than 2^32 LBAs",
            ),
            ("sn640", vec![("write_buffer.zone_buffer_bytes", "65536")], "cannot hold one program unit (196608 bytes"),
            (
                "sn640",
                [("flash.pages_per_block", "1572864")].into_iter().chain(small_conventional).collect(),
                "at most 67108864 (256 MiB): use at most 262143 pages per block",
            ),
            (
                "tlc",
                vec![
                    ("flash.pages_per_block", "3221225472"),
                    ("flash.oneshot_pages", "3221225472"),
                    ("write_buffer.zone_buffer_bytes", "9000000000000000000"),
                ],
                "super word line of 51539607552 chunks",
            ),
        ];
        for (name, sets, needle) in cases {
            let sets = sets.iter().map(|(p, v)| (p.to_string(), v.to_string())).collect();
            let e = DeviceOptions { sets, ..Default::default() }.apply(preset(name).unwrap()).unwrap_err().0;
            assert!(e.contains(needle), "{name}: {e}");
        }
        // Just inside the bounds, the same devices run.
        let sets = [("flash.pages_per_block", "262143")].into_iter().chain(small_conventional);
        let sets = sets.map(|(p, v)| (p.to_string(), v.to_string())).collect();
        exercise(DeviceOptions { sets, ..Default::default() }.apply(preset("sn640").unwrap()).unwrap());
    }

    fn exercise(config: DeviceConfig) {
        use crate::{Command, Device, Payload, ReportFilter, ZoneAction};
        let mut dev = Device::new(config).expect("validated");
        let zslba = dev.zones().zslba(dev.layout().conventional_zones);
        let nlb = dev.layout().mdts_lbas.min(dev.layout().zcap_lbas).min(64) as u32;
        let mgmt = |action| Command::ZoneMgmtSend { action, slba: zslba, select_all: false };
        let cmds = [
            Command::Identify,
            Command::Write { slba: zslba, nlb, payload: Payload::Pattern(1), fua: false, placement: None },
            Command::Append { zslba, nlb: 1, payload: Payload::None, fua: false },
            Command::Read { slba: zslba, nlb },
            Command::ReportZones { slba: 0, filter: ReportFilter::All, max_zones: 4, partial: true },
            mgmt(ZoneAction::Finish),
            Command::Read { slba: zslba, nlb },
            mgmt(ZoneAction::Reset),
            Command::WriteZeroes { slba: zslba, nlb, placement: None },
            Command::ZoneMgmtSend { action: ZoneAction::Close, slba: 0, select_all: true },
        ];
        let mut now = 0;
        for cmd in &cmds {
            now = dev.submit(now, cmd, None).complete_ns;
        }
    }

    proptest::proptest! {
        /// Any value for any parameter gives a config or an error, never a panic.
        #[test]
        fn extreme_overrides_never_panic(
            overrides in proptest::collection::vec((0usize..64, proptest::sample::select(vec!["0", "1", "3", "4095", "65536", "4294967295", "18446744073709551615", "9223372036854775807", "1t", "abc", "-1", "true"])), 1..4),
            zones in proptest::option::of(proptest::sample::select(vec![0u32, 1, 7, 3688, 1 << 20, u32::MAX])),
        ) {
            let base = preset("zn540").unwrap();
            let table = toml::Table::try_from(&base).unwrap();
            let mut paths = Vec::new();
            for (section, v) in &table {
                match v {
                    toml::Value::Table(t) => paths.extend(t.keys().map(|k| format!("{section}.{k}"))),
                    _ => paths.push(section.clone()),
                }
            }
            let sets = overrides.iter().map(|(i, v)| (paths[i % paths.len()].clone(), v.to_string())).collect();
            let opts = DeviceOptions { sets, zones, ..Default::default() };
            if let Ok(config) = opts.apply(base) {
                proptest::prop_assert!(config.validate().is_ok());
                // Small enough to build: every command runs without panicking.
                if config.flash.blocks_total() <= 1 << 20 && config.namespace.zones <= 1 << 12 {
                    exercise(config);
                }
            }
        }
    }
}
