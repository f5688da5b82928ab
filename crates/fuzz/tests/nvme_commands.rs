//! The generated NVMe/TCP command streams get past the transport: every
//! command is answered, and most of the I/O reaches the model and succeeds.

use zonelab_fuzz::nvme_commands::generate;
use zonelab_fuzz::targets::nvme_tcp_replies;
use zonelab_serve::nvme_tcp::pdu::{read_pdu, Digests, Pdu};
use zonelab_sim::SimRng;

/// (commands answered, of them successes) in a stream's replies, by CID;
/// CIDs below 16 are the Connect's.
fn answers(replies: &[u8]) -> (u64, u64) {
    let mut r = replies;
    let (mut answered, mut succeeded) = (0, 0);
    // Bound: each PDU consumes at least a common header.
    for _ in 0..=replies.len() / 8 {
        match read_pdu(&mut r, Digests::default(), 1 << 24) {
            Ok(Pdu::CapsuleResp { cqe }) if u16::from_le_bytes([cqe[12], cqe[13]]) >= 16 => {
                answered += 1;
                succeeded += u64::from(u16::from_le_bytes([cqe[14], cqe[15]]) >> 1 == 0);
            }
            Ok(Pdu::C2HData { cccid, success: true, .. }) if cccid >= 16 => {
                (answered, succeeded) = (answered + 1, succeeded + 1)
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    (answered, succeeded)
}

#[test]
fn generated_commands_are_answered_and_mostly_reach_the_model() {
    let (mut sent, mut answered, mut succeeded) = (0, 0, 0);
    for i in 0..40 {
        let stream = generate(&mut SimRng::fork(9, i));
        sent += stream.lines().filter(|l| l.starts_with("# ")).count() as u64 - 2; // not the ICReq and Connect
        let (a, s) = answers(&nvme_tcp_replies(&stream));
        answered += a;
        succeeded += s;
    }
    eprintln!("{sent} commands sent, {answered} answered, {succeeded} succeeded");
    assert_eq!(answered, sent, "every command is answered");
    assert!(succeeded * 3 >= sent, "{succeeded} of {sent} succeeded");
}
