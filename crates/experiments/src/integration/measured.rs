//! The drive's numbers behind seed 001's figures: the ZNS-Study rows of
//! `data/measurements/zn540.csv` (the study's own fio output), the paper's
//! values wherever its text gives none.

use crate::calibrate::rows::{parse, Metric, Op, Row, Stack};
use std::sync::OnceLock;

const FILE: &str = include_str!("../../../../data/measurements/zn540.csv");

fn rows() -> &'static [Row] {
    static ROWS: OnceLock<Vec<Row>> = OnceLock::new();
    ROWS.get_or_init(|| {
        let rows = parse("zn540.csv", FILE).expect("the shipped measurements parse");
        rows.into_iter().filter(|r| r.source == "ZNS-Study").collect()
    })
}

/// Which rows: a figure (by the start of its name in the file) and a job.
#[derive(Debug, Clone, Copy)]
pub struct Key<'a> {
    pub figure: &'a str,
    pub stack: Stack,
    pub op: Op,
    pub bs: u64,
    pub qd: u32,
    pub jobs: u32,
}

/// The measured `metric` of the job `key` names, if the study measured it.
pub fn value(key: Key, metric: Metric) -> Option<f64> {
    rows()
        .iter()
        .find(|r| {
            r.figure.starts_with(key.figure)
                && r.stack == key.stack
                && r.op == key.op
                && r.bs == Some(key.bs)
                && r.qd.unwrap_or(1) == key.qd
                && r.jobs.unwrap_or(1) == key.jobs
                && r.metric == metric
        })
        .map(|r| r.value)
}

/// A measured value as a CSV field (empty where the study has none).
pub fn field(v: Option<f64>) -> String {
    v.map_or(String::new(), |v| format!("{v}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_study_rows_of_each_figure_are_found() {
        let conv = Key {
            figure: "IOPS vs QD, conventional ns",
            stack: Stack::LibaioNone,
            op: Op::Randread,
            bs: 4096,
            qd: 64,
            jobs: 1,
        };
        assert_eq!(value(conv, Metric::Kiops), Some(295.4));
        let none = Key {
            figure: "Zoned ns: sequential write, mq-deadline 1 zone",
            stack: Stack::PsyncNone,
            op: Op::Write,
            bs: 4096,
            qd: 1,
            jobs: 13,
        };
        assert_eq!(value(none, Metric::LatP50Us), Some(252.9));
        assert_eq!(value(Key { qd: 2, ..conv }, Metric::Kiops), None);
    }
}
