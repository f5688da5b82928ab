//! fio front end: fio job files and command lines in, fio's reports out.
//! `job` is the parsed form, `options`/`parse` read job files and command
//! lines (`help` answers `--cmdhelp`), `run` simulates the jobs against a device, `stats` keeps fio's
//! statistics and `report` prints them as fio does; `work` estimates
//! what a job asks the simulator to do before it runs; `device_report` is
//! the JSON report's `zonelab` key (what the device did).

pub mod blktrace;
pub mod device_report;
pub(crate) mod distribution;
pub mod help;
pub mod iolog;
pub mod iolog_write;
pub mod job;
mod log;
pub mod options;
pub mod parse;
pub mod report;
pub mod run;
pub mod stats;
pub mod verify;
pub mod work;
mod zbd;
