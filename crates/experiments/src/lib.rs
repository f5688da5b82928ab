//! `experiments`: reruns of the seed papers' experiments (`zonelab
//! reproduce`), each printing paper-vs-model tables and plots.
//!
//! - [`characterization`]: seed 000's observations of the ZN540 and seed
//!   003's findings on I/O management interference, ZINC and softFinish.
//! - [`copy_offload`]: ZNS+ in-storage copy against a host read-then-write
//!   (seed 002).
//! - [`integration`]: seed 001's block-level experiments (Fig 4-6) and its
//!   multi-tenancy experiment on the ZN540 model.
//! - [`znsplus`]: seed 002's file-system results on `zonelab-fs` (Fig 6-12,
//!   Tables 4-5).
//! - [`plan`]: plan → run → render: serializable run specifications, a
//!   sharded runner, a result store and renderers.
//! - [`plot`]: both reproductions' plots, as SVG and PNG.

pub mod calibrate;
pub mod characterization;
pub mod copy_offload;
pub mod error;
pub mod integration;
pub mod out_dir;
pub mod placement;
pub mod plan;
pub mod plot;
mod serde_float;
pub mod znsplus;

pub use error::{Error, Result};
