//! `zonelab._native`: the Python package's extension module. The glue
//! ([`glue`]) speaks JSON text with the simulator and has no Python in it,
//! so cargo tests it; the bindings (feature `python`, which maturin turns
//! on) wrap it for Python, releasing the GIL while a device simulates and
//! turning errors and panics into `zonelab.ZonelabError`.

#[cfg(feature = "python")]
mod bindings;
pub mod glue;
