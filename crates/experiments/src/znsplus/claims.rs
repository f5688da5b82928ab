//! Which of seed 002's claims hold, figure by figure, checked on the same
//! runs as the figures: the `claims` table (first in the README) and the
//! claims listed under each figure's own table.

use super::figures::*;
use crate::plot::{csv_text, Axis};
use std::fmt::Write;
use zonelab_workload::fsbench::FsWorkload;

/// One checked claim of the paper: figure, the claim, what zonelab measured, whether it holds.
pub(super) struct Claim {
    /// "Fig 6", "Table 4", "Fig 7a", ...
    pub figure: &'static str,
    claim: String,
    zonelab: String,
    holds: bool,
}

fn claim(figure: &'static str, claim: &str, zonelab: String, holds: bool) -> Claim {
    Claim { figure, claim: claim.to_string(), zonelab, holds }
}

/// `x` is within `share` of the paper's value.
fn within(x: f64, paper: f64, share: f64) -> bool {
    (x - paper).abs() <= share * paper.abs()
}

/// Each value at least the one before.
fn rising(v: &[f64]) -> bool {
    v.windows(2).all(|w| w[1] >= w[0])
}

/// `n` of the total, e.g. "3 of 5".
fn of(n: usize, total: usize) -> String {
    format!("{n} of {total}")
}

/// Every claim of every figure, in the paper's order.
pub(super) fn check(r: &Runs) -> Vec<Claim> {
    let figures: [fn(&Runs) -> Vec<Claim>; 9] = [fig6, table4, fig7a, fig7b, table5, fig8, fig9_10, fig11, fig12];
    figures.iter().flat_map(|f| f(r)).collect()
}

const OLTP: [FsWorkload; 3] = [FsWorkload::Tpcc, FsWorkload::YcsbA, FsWorkload::YcsbF];
const FILEBENCH: [FsWorkload; 2] = [FsWorkload::Fileserver, FsWorkload::Varmail];

fn fig6(r: &Runs) -> Vec<Claim> {
    let ws = FsWorkload::ALL;
    let cuts: Vec<f64> =
        ws.iter().map(|&w| (1.0 - total_ms(r.base(w, IZC)) / total_ms(r.base(w, ZNS)).max(1e-9)) * 100.0).collect();
    let n_cut = cuts.iter().filter(|&&x| (28.2 * 0.75..=51.7 * 1.25).contains(&x)).count();
    let cb: Vec<f64> = ws.iter().map(|&w| r.base(w, IZC).copyback_ratio() * 100.0).collect();
    let n_cb = cb.iter().zip(PAPER_COPYBACK_PERCENT).filter(|(x, p)| (*x - p).abs() <= 10.0).count();
    let cp = |w, v| mean_ms(r.base(w, v), |c| c.checkpoint_ns);
    let longer = OLTP.iter().filter(|&&w| cp(w, IZC) > cp(w, ZNS)).count();
    vec![
        claim(
            "Fig 6",
            "IZC cuts compaction time by 28.2-51.7% (±25%) on every workload",
            format!("{}%, {}", range(&cuts), of(n_cut, 5)),
            n_cut == 5,
        ),
        claim(
            "Fig 6",
            "copyback makes 87, 74, 81, 83, 83% of IZC's copies (within 10 points)",
            format!("{}%, {}", range(&cb), of(n_cb, 5)),
            n_cb == 5,
        ),
        claim(
            "Fig 6",
            "IZC's checkpoint phase is longer than ZNS's on the OLTP workloads",
            of(longer, OLTP.len()),
            longer == OLTP.len(),
        ),
    ]
}

fn table4(r: &Runs) -> Vec<Claim> {
    let (mut cells, mut worst) = (0, 0.0f64);
    for (m, p) in MEDIA.iter().zip(PAPER_TABLE4_MB_S) {
        for (v, paper) in [ZNS, IZC, IZC_D].into_iter().zip(p) {
            let x = r.medium(m, v).throughput_mb_s();
            cells += usize::from(within(x, paper, 0.25));
            worst = worst.max((x / paper - 1.0).abs());
        }
    }
    let mb_s = |m, v| r.medium(m, v).throughput_mb_s();
    let gains: Vec<f64> = MEDIA.iter().map(|&m| mb_s(m, IZC) / mb_s(m, ZNS)).collect();
    let (tlc, znand) = (mb_s("tlc", IZC) / mb_s("tlc", IZC_D), mb_s("znand", IZC) / mb_s("znand", IZC_D));
    vec![
        claim(
            "Table 4",
            "absolute MB/s within 25% on every medium and scheme",
            format!("{} cells, worst off by {:.0}%", of(cells, 9), worst * 100.0),
            cells == 9,
        ),
        claim(
            "Table 4",
            "IZC-H's gain over ZNS grows with faster media (TLC < MLC < ZNAND)",
            format!("{}× (TLC, MLC, ZNAND)", gains.iter().map(|g| format!("{g:.2}")).collect::<Vec<_>>().join(", ")),
            rising(&gains),
        ),
        claim(
            "Table 4",
            "IZC-H beats IZC-D on TLC, IZC-D beats IZC-H on ZNAND",
            format!("IZC-H / IZC-D: TLC {tlc:.2}×, ZNAND {znand:.2}×"),
            tlc > 1.0 && znand < 1.0,
        ),
    ]
}

/// Throughput of `v` over ZNS's on each workload.
fn gains(r: &Runs, v: Variant, ws: &[FsWorkload]) -> Vec<f64> {
    ws.iter().map(|&w| r.base(w, v).throughput_mb_s() / r.base(w, ZNS).throughput_mb_s()).collect()
}

fn fig7a(r: &Runs) -> Vec<Claim> {
    let (izc, zp) = (gains(r, IZC, &FsWorkload::ALL), gains(r, ZP, &FsWorkload::ALL));
    let in_range = |v: &[f64], lo: f64, hi: f64| v.iter().filter(|&&g| (lo * 0.75..=hi * 1.25).contains(&g)).count();
    let best = zp.iter().copied().fold(0.0, f64::max);
    let zp_over_izc = zp.iter().zip(&izc).filter(|(a, b)| a > b).count();
    let max_oltp = gains(r, IZC, &OLTP).into_iter().fold(0.0, f64::max);
    let min_filebench = gains(r, IZC, &FILEBENCH).into_iter().fold(f64::INFINITY, f64::min);
    vec![
        claim(
            "Fig 7a",
            "IZC / ZNS within 1.21-1.77× (±25%) on every workload",
            format!("{}×, {}", range(&izc), of(in_range(&izc, 1.21, 1.77), 5)),
            in_range(&izc, 1.21, 1.77) == 5,
        ),
        claim(
            "Fig 7a",
            "ZNS+ / ZNS within 1.33-2.91× (±25%) on every workload",
            format!("{}×, {}", range(&zp), of(in_range(&zp, 1.33, 2.91), 5)),
            in_range(&zp, 1.33, 2.91) == 5,
        ),
        claim(
            "Fig 7a",
            "ZNS+ / ZNS up to 2.91× (at least 2.3× on its best workload)",
            format!("best {best:.2}×"),
            best >= 2.3,
        ),
        claim("Fig 7a", "ZNS+ outperforms IZC on every workload", of(zp_over_izc, 5), zp_over_izc == 5),
        claim(
            "Fig 7a",
            "IZC gains less on the OLTP workloads than on the filebench ones",
            format!("OLTP at most {max_oltp:.2}×, filebench at least {min_filebench:.2}×"),
            max_oltp < min_filebench,
        ),
    ]
}

fn fig7b(r: &Runs) -> Vec<Claim> {
    let ws = FsWorkload::ALL;
    let ovh = |w, v| r.base(w, v).metadata_overhead();
    let same = ws.iter().filter(|&&w| within(ovh(w, ZNS), ovh(w, IZC), 0.1)).count();
    let fewer = ws.iter().filter(|&&w| ovh(w, ZP) < ovh(w, IZC)).count();
    let vm = |v| ovh(FsWorkload::Varmail, v);
    let cut = (vm(ZP) / vm(IZC).max(1e-9) - 1.0) * 100.0;
    vec![
        claim(
            "Fig 7b",
            "ZNS and IZC have about the same node and metadata overhead (within 10%)",
            of(same, 5),
            same == 5,
        ),
        claim(
            "Fig 7b",
            "ZNS+ writes fewer node and metadata blocks than IZC on every workload",
            of(fewer, 5),
            fewer == 5,
        ),
        claim(
            "Fig 7b",
            "ZNS+ cuts node and metadata traffic by 48% against IZC on varmail (within 25%)",
            format!("{cut:+.0}% (ZNS {:.3}, IZC {:.3}, ZNS+ {:.3} per user block)", vm(ZNS), vm(IZC), vm(ZP)),
            within(cut, -48.0, 0.25),
        ),
    ]
}

fn table5(r: &Runs) -> Vec<Claim> {
    let ws = FsWorkload::ALL;
    let tl: Vec<f64> = ws.iter().map(|&w| r.base(w, ZP).tl_ratio() * 100.0).collect();
    let bp: Vec<f64> = ws.iter().map(|&w| r.base(w, ZP).background_plugging_ratio() * 100.0).collect();
    let mean_bp = bp.iter().sum::<f64>() / bp.len() as f64;
    // Fileserver first: the fsync-intensive workloads are the other four.
    let above = bp[1..].iter().filter(|&&b| b > bp[0]).count();
    vec![
        claim(
            "Table 5",
            "threaded logging reclaims at least 85% of the segments on every workload",
            format!("{}%", range(&tl)),
            tl.iter().all(|&t| t >= 85.0),
        ),
        claim(
            "Table 5",
            "background plugging copies more on the fsync-intensive workloads (varmail, tpcc, YCSB) than on fileserver",
            format!("fileserver {:.1}%, {} above it", bp[0], of(above, 4)),
            above == 4,
        ),
        claim(
            "Table 5",
            "background plugging does about 27% of the copies on average (within 25%)",
            format!("{mean_bp:.1}%"),
            within(mean_bp, 27.0, 0.25),
        ),
    ]
}

fn fig8(r: &Runs) -> Vec<Claim> {
    let per = |f: &dyn Fn(f64) -> f64| UTILIZATIONS.iter().map(|&u| f(u)).collect::<Vec<f64>>();
    let mb_s = |u, v| r.util(u, v).throughput_mb_s();
    let waf = |u, v| r.util(u, v).waf();
    let zp_gain = per(&|u| mb_s(u, ZP) / mb_s(u, ZNS));
    let izc_gain = per(&|u| mb_s(u, IZC) / mb_s(u, ZNS));
    let lowest = UTILIZATIONS.iter().filter(|&&u| waf(u, ZP) <= waf(u, ZNS).min(waf(u, IZC))).count();
    let alike = UTILIZATIONS.iter().filter(|&&u| within(waf(u, IZC), waf(u, ZNS), 0.1)).count();
    let waf_rises = [ZNS, IZC, ZP].iter().filter(|&&v| rising(&per(&|u| waf(u, v)))).count();
    let n = UTILIZATIONS.len();
    vec![
        claim(
            "Fig 8",
            "the gain of IZC and ZNS+ over ZNS grows with utilization",
            format!("IZC {}×, ZNS+ {}×", range(&izc_gain), range(&zp_gain)),
            rising(&izc_gain) && rising(&zp_gain),
        ),
        claim("Fig 8", "WAF grows with utilization (ZNS, IZC, ZNS+)", of(waf_rises, 3), waf_rises == 3),
        claim("Fig 8", "IZC's WAF is about ZNS's (within 10%)", of(alike, n), alike == n),
        claim("Fig 8", "ZNS+ has the lowest WAF at every utilization", of(lowest, n), lowest == n),
    ]
}

fn fig9_10(r: &Runs) -> Vec<Claim> {
    let ws = FsWorkload::ALL;
    let util = |w, v| r.base(w, v).chip_utilization;
    let ordered = ws
        .iter()
        .filter(|&&w| util(w, ZNS) < util(w, IZC) && util(w, IZC) < util(w, ZP_LP) && util(w, ZP_LP) < util(w, ZP))
        .count();
    let above = ws.iter().filter(|&&w| util(w, ZNS) < util(w, IZC).min(util(w, ZP))).count();
    let pp_over_lp = ws.iter().filter(|&&w| util(w, ZP) > util(w, ZP_LP)).count();
    let fs = |v| r.base(FsWorkload::Fileserver, v);
    let low = |v| fs(v).chip_utilization_series.iter().filter(|p| p.1 < 0.2).count();
    let zn = fs(ZNS).chip_utilization_series.len();
    let means = [ZNS, IZC, ZP].map(|v| fs(v).chip_utilization * 100.0);
    vec![
        claim(
            "Fig 9",
            "chip utilization ZNS < IZC < ZNS+(LP) < ZNS+(PP) (on at least 3 of 5)",
            of(ordered, 5),
            ordered >= 3,
        ),
        claim("Fig 9", "IZC and ZNS+ use the chips more than ZNS on every workload", of(above, 5), above == 5),
        claim("Fig 9", "PPA-ordered plugging uses the chips more than LBA-ordered", of(pp_over_lp, 5), pp_over_lp == 5),
        claim(
            "Fig 10",
            "ZNS shows 100 ms intervals under 20% utilization; IZC removes most",
            format!("ZNS {} of {zn}, IZC {}", low(ZNS), low(IZC)),
            low(ZNS) > 0 && 2 * low(IZC) < low(ZNS),
        ),
        claim(
            "Fig 10",
            "ZNS+ uses the chips most (fileserver)",
            format!("mean ZNS {:.1}%, IZC {:.1}%, ZNS+ {:.1}%", means[0], means[1], means[2]),
            means[2] > means[0].max(means[1]),
        ),
    ]
}

fn fig11(r: &Runs) -> Vec<Claim> {
    let mb_s = |n, v| r.hw(n, 2, v).throughput_mb_s();
    let cab = CHIPS.iter().all(|&n| r.hw(n, 2, IZC).copyback_ratio() > 0.8);
    let cub: Vec<f64> = CHIPS.iter().map(|&n| r.hw(n, 2, IZC_CUB).copyback_ratio() * 100.0).collect();
    let most = *CHIPS.last().expect("chip counts");
    let cab_gain = mb_s(most, IZC) / mb_s(most, IZC_CUB);
    let zp_alike = CHIPS.iter().filter(|&&n| within(mb_s(n, ZP_CUB), mb_s(n, ZP), 0.1)).count();
    let zp_cub: Vec<f64> = CHIPS.iter().map(|&n| r.hw(n, 2, ZP_CUB).copyback_ratio() * 100.0).collect();
    let gap: Vec<f64> = CHIPS.iter().map(|&n| mb_s(n, ZP) / mb_s(n, IZC)).collect();
    vec![
        claim(
            "Fig 11",
            "CAB keeps copyback above 80% at every chip count; CUB's falls with chips",
            format!("CAB > 80%: {cab}; CUB {}%", range(&cub)),
            cab && cub.windows(2).all(|x| x[1] <= x[0]),
        ),
        claim(
            "Fig 11",
            "IZC-CAB / IZC-CUB about 1.13× at 32 chips (within 10%)",
            format!("{cab_gain:.2}×"),
            within(cab_gain, 1.13, 0.1),
        ),
        claim(
            "Fig 11",
            "ZNS+ keeps copyback high without CAB (above 80%), so ZNS+-CUB ≈ ZNS+-CAB (within 10%)",
            format!("ZNS+-CUB copyback {}%, bandwidth alike at {}", range(&zp_cub), of(zp_alike, CHIPS.len())),
            zp_cub.iter().all(|&c| c > 80.0) && zp_alike == CHIPS.len(),
        ),
        claim("Fig 11", "the gap between IZC and ZNS+ grows with chips", format!("{}×", range(&gap)), rising(&gap)),
    ]
}

fn fig12(r: &Runs) -> Vec<Claim> {
    let gain: Vec<f64> = LANES_CHIPS
        .iter()
        .map(|&(l, n)| r.hw(n, l, ZP).throughput_mb_s() / r.hw(n, l, ZNS).throughput_mb_s())
        .collect();
    let zns_util: Vec<f64> = LANES_CHIPS.iter().map(|&(l, n)| r.hw(n, l, ZNS).chip_utilization * 100.0).collect();
    vec![
        claim(
            "Fig 12",
            "the gain of ZNS+ over ZNS grows with PCIe lanes and chips",
            format!("{}×", range(&gain)),
            rising(&gain),
        ),
        claim(
            "Fig 12",
            "ZNS's chip utilization falls as lanes and chips grow",
            format!("{}%", zns_util.iter().map(|u| format!("{u:.0}")).collect::<Vec<_>>().join(", ")),
            zns_util.windows(2).all(|u| u[1] <= u[0]),
        ),
    ]
}

/// Whether `claim` belongs to the output whose file stem starts with `stem`
/// (`fig7_...` holds Fig 7a and 7b, `table5_...` Table 5).
pub(super) fn belongs(claim: &Claim, stem: &str) -> bool {
    let head = stem.split('_').next().unwrap_or(stem);
    let (kind, number) = head.split_at(head.find(|c: char| c.is_ascii_digit()).unwrap_or(head.len()));
    let label = match kind {
        "fig" => format!("Fig {number}"),
        "table" => format!("Table {number}"),
        _ => return false,
    };
    claim.figure.strip_prefix(&label).is_some_and(|rest| rest.chars().all(|c| c.is_ascii_lowercase()))
}

fn verdict(c: &Claim) -> &'static str {
    if c.holds {
        "yes"
    } else {
        "no"
    }
}

/// The claims of the output `stem` as a markdown table, for under its own table.
pub(super) fn section(claims: &[Claim], stem: &str) -> String {
    let mine: Vec<&Claim> = claims.iter().filter(|c| belongs(c, stem)).collect();
    if mine.is_empty() {
        return String::new();
    }
    let held = mine.iter().filter(|c| c.holds).count();
    let mut out = format!(
        "\nThe paper's claims here ({} hold):\n\n| paper's claim | zonelab | holds |\n|---|---|---|\n",
        of(held, mine.len())
    );
    for c in mine {
        let _ = writeln!(out, "| {} | {} | {} |", c.claim, c.zonelab, verdict(c));
    }
    out
}

/// The `claims` output: every claim, and the share that holds per figure as bars.
pub(super) fn output(c: &[Claim]) -> Output {
    let mut table = String::from("| figure | paper's claim | zonelab | holds |\n|---|---|---|---|\n");
    let mut rows = Vec::new();
    for x in c {
        let _ = writeln!(table, "| {} | {} | {} | {} |", x.figure, x.claim, x.zonelab, verdict(x));
        rows.push(vec![x.figure.to_string(), x.claim.clone(), x.zonelab.clone(), x.holds.to_string()]);
    }
    let held = c.iter().filter(|x| x.holds).count();
    let _ = writeln!(table, "\n{} claims hold at this scale.", of(held, c.len()));
    let mut figs: Vec<String> = Vec::new();
    for x in c {
        if !figs.iter().any(|f| f == x.figure) {
            figs.push(x.figure.to_string());
        }
    }
    let share: Vec<f64> = figs
        .iter()
        .map(|f| {
            let mine: Vec<&Claim> = c.iter().filter(|x| x.figure == f.as_str()).collect();
            mine.iter().filter(|x| x.holds).count() as f64 * 100.0 / mine.len() as f64
        })
        .collect();
    let y = Axis::linear("claims that hold (%)").range(0.0, 104.0).ticks(percent_ticks());
    let figure = bars("Seed 002's claims that hold on zonelab", "figure", y, &figs, vec![scheme("zonelab", share)]);
    Output { name: "claims", csv: csv_text(&["figure", "claim", "zonelab", "holds"], &rows), figure, table }
}
