//! Progress bars with an ETA for the long commands. indicatif draws only
//! when stderr is a terminal; elsewhere (CI logs, pipes) each step is one
//! plain line instead, so logs still say what ran.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Progress as plain lines, one per tenth of the work, for a stderr that is
/// not a terminal (where a bar is not drawn): a log of a long run still shows
/// that it moves. Safe to update from several threads.
pub struct Tenths {
    label: &'static str,
    unit: &'static str,
    /// One more than the last tenth printed (0: none yet).
    printed: AtomicUsize,
}

impl Tenths {
    pub fn new(label: &'static str, unit: &'static str) -> Self {
        Tenths { label, unit, printed: AtomicUsize::new(0) }
    }

    /// `done` of `total` are done: a line when that starts a new tenth.
    /// Returns whether it printed one.
    pub fn update(&self, done: usize, total: usize) -> bool {
        if total == 0 {
            return false;
        }
        let tenth = done.min(total) * 10 / total;
        let new_tenth = self.printed.fetch_max(tenth + 1, Ordering::Relaxed) <= tenth;
        if new_tenth {
            eprintln!("zonelab: {}: {done}/{total} {} ({}%)", self.label, self.unit, done.min(total) * 100 / total);
        }
        new_tenth
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenths_print_a_line_per_tenth_whatever_the_order() {
        let t = Tenths::new("test", "runs");
        let printed = (1..=100).filter(|&done| t.update(done, 100)).count();
        assert_eq!(printed, 11, "the first run and each tenth from 10% to 100%");
        // Threads report out of order: a tenth already passed prints nothing.
        let t = Tenths::new("test", "runs");
        assert!(t.update(55, 100));
        assert!(!t.update(51, 100));
        assert!(!t.update(0, 0), "nothing to do prints nothing");
    }
}

/// Steps of a long command: `len` of them, shown as a bar with an ETA.
pub struct Steps {
    bar: ProgressBar,
}

impl Steps {
    pub fn new(len: u64, unit: &str) -> Self {
        let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
        let template = format!("{{bar:30}} {{pos}}/{{len}} {unit}, {{elapsed}} elapsed, ETA {{eta}}  {{msg}}");
        bar.set_style(ProgressStyle::with_template(&template).expect("valid template"));
        Steps { bar }
    }

    /// Step `done` (0-based) begins; `what` names it.
    pub fn start(&self, done: u64, what: &str) {
        if self.bar.is_hidden() {
            eprintln!("zonelab: {what}");
            return;
        }
        self.bar.set_message(what.to_string());
        self.bar.set_position(done);
    }

    pub fn finish(self) {
        self.bar.finish_and_clear();
    }
}

/// Bytes written through the phases of one run (fs-bench's warm-up, then its
/// measured part): a bar per phase, whose ETA is the phase's. The bar appears
/// with the first phase, so a run that fails at once draws nothing.
#[derive(Default)]
pub struct Phases {
    bar: Option<ProgressBar>,
    phase: String,
}

impl Phases {
    /// `done` of at most `total` bytes written in `phase`.
    pub fn update(&mut self, phase: &str, done: u64, total: u64) {
        if phase != self.phase {
            self.phase = phase.to_string();
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            if bar.is_hidden() {
                eprintln!("zonelab: {phase}");
            }
            let template = "{msg:>8} {bar:30} {bytes}/{total_bytes}, {elapsed} elapsed, ETA {eta}";
            bar.set_style(ProgressStyle::with_template(template).expect("valid template"));
            bar.set_message(phase.to_string());
            // A new bar per phase: the ETA is computed from the phase's own start.
            if let Some(previous) = self.bar.replace(bar) {
                previous.finish_and_clear();
            }
        }
        if let Some(bar) = &self.bar {
            bar.set_position(done);
        }
    }

    pub fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}
