//! EDHOC method 3, suite 2, credentials by kid (RFC 9529 trace 2's keys and credentials), initiator
//! and responder in one guest process. The initiator's work is marked per message for the counting
//! plugin (marker.h: OP_BEGIN/OP_END with arg 1 = message_1 (ephemeral key and message), 2 =
//! message_2 parsed and verified (the ECDHs with the responder's keys), 3 = message_3 prepared, 4 =
//! the OSCORE master secret and salt exported); the responder's work lies outside the marks.
#![no_std]

use lakers::*;
use lakers_crypto_rustcrypto::Crypto;

extern "C" {
    fn sp_mark(kind: u32, arg: u32);
}

const OP_BEGIN: u32 = 9;
const OP_END: u32 = 10;

/// A deterministic generator (xorshift): instruction counts do not depend on the key values, and the
/// guest has no entropy source worth counting.
struct Xorshift(u64);

impl rand_core::RngCore for Xorshift {
    fn next_u32(&mut self) -> u32 {
        self.next_u64() as u32
    }
    fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        for b in dest.iter_mut() {
            *b = self.next_u64() as u8;
        }
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand_core::Error> {
        self.fill_bytes(dest);
        Ok(())
    }
}

impl rand_core::CryptoRng for Xorshift {}

const fn nibble(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        b'A'..=b'F' => c - b'A' + 10,
        _ => 0,
    }
}

const fn unhex<const N: usize>(s: &str) -> [u8; N] {
    let b = s.as_bytes();
    let mut out = [0u8; N];
    let mut i = 0;
    while i < N {
        out[i] = nibble(b[2 * i]) << 4 | nibble(b[2 * i + 1]);
        i += 1;
    }
    out
}

// RFC 9529 trace 2: the initiator's and responder's static keys and CCS credentials
const CRED_I: [u8; 107] = unhex("A2027734322D35302D33312D46462D45462D33372D33322D333908A101A5010202412B2001215820AC75E9ECE3E50BFC8ED60399889522405C47BF16DF96660A41298CB4307F7EB62258206E5DE611388A4B8A8211334AC7D37ECB52A387D257E6DB3C2A93DF21FF3AFFC8");
const I: [u8; 32] = unhex("fb13adeb6518cee5f88417660841142e830a81fe334380a953406a1305e8706b");
const R: [u8; 32] = unhex("72cc4761dbd4c78f758931aa589d348d1ef874a7e303ede2f140dcf3e6aa4aac");
const CRED_R: [u8; 84] = unhex("A2026008A101A5010202410A2001215820BBC34960526EA4D32E940CAD2A234148DDC21791A12AFBCBAC93622046DD44F02258204519E257236B2A0CE2023F0931F1F386CA7AFDA64FCDE0108C224C51EABF6072");

fn mark(kind: u32, arg: u32) {
    unsafe { sp_mark(kind, arg) }
}

/// One handshake; > 0: the three message sizes packed (m1 << 16 | m2 << 8 | m3), < 0: the step that failed.
#[no_mangle]
pub extern "C" fn sp_edhoc_handshake(seed: u32) -> i32 {
    let Ok(cred_i) = CredentialRPK::new(CRED_I[..].try_into().unwrap()) else { return -1 };
    let Ok(cred_r) = CredentialRPK::new(CRED_R[..].try_into().unwrap()) else { return -1 };
    let responder = EdhocResponder::new(Crypto::new(Xorshift(0x1234_5678_9abc_def1 ^ seed as u64)), &R, cred_r.clone());

    mark(OP_BEGIN, 1);
    let initiator = EdhocInitiator::new(Crypto::new(Xorshift(0x9e37_79b9_7f4a_7c15 ^ seed as u64)));
    let Ok((initiator, m1)) = initiator.prepare_message_1(None, &None) else { return -2 };
    mark(OP_END, 1);

    let Ok((responder, _c_i, _)) = responder.process_message_1(&m1) else { return -3 };
    let Ok((responder, m2)) = responder.prepare_message_2(CredentialTransfer::ByReference, None, &None) else {
        return -4;
    };

    mark(OP_BEGIN, 2);
    let Ok((initiator, _c_r, id_cred_r, _)) = initiator.parse_message_2(&m2) else { return -5 };
    let Ok(valid_r) = credential_check_or_fetch(Some(cred_r), id_cred_r) else { return -6 };
    let Ok(initiator) = initiator.verify_message_2(&I, cred_i.clone(), valid_r) else { return -7 };
    mark(OP_END, 2);

    mark(OP_BEGIN, 3);
    let Ok((mut initiator, m3, _prk_out)) = initiator.prepare_message_3(CredentialTransfer::ByReference, &None) else {
        return -8;
    };
    mark(OP_END, 3);

    mark(OP_BEGIN, 4);
    let secret = initiator.edhoc_exporter(0u8, &[], 16);
    let salt = initiator.edhoc_exporter(1u8, &[], 8);
    mark(OP_END, 4);

    let Ok((responder, id_cred_i, _)) = responder.parse_message_3(&m3) else { return -9 };
    let Ok(valid_i) = credential_check_or_fetch(Some(cred_i), id_cred_i) else { return -10 };
    let Ok((mut responder, _)) = responder.verify_message_3(valid_i) else { return -11 };
    if responder.edhoc_exporter(0u8, &[], 16)[..16] != secret[..16] || responder.edhoc_exporter(1u8, &[], 8)[..8] != salt[..8] {
        return -12;
    }
    (m1.len as i32) << 16 | (m2.len as i32) << 8 | m3.len as i32
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    loop {}
}
