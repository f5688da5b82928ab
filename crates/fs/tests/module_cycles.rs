//! The file system crate's modules form no import cycle: the operations
//! (log, write, checkpoint, victim, gc, ops, mount, fsck) are functions over
//! `state::FsState`, not `impl Fs` blocks, so `fs.rs` imports them and
//! nothing imports `fs.rs` back. The check is the device crate's test,
//! which runs `scripts/module-cycles` on the sources of the crate that
//! compiles it.

#[path = "../../device/tests/module_cycles.rs"]
mod module_cycles;
