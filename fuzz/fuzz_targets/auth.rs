//! Fuzzes DH-HMAC-CHAP: (a) `nvme_spec::auth::Message::decode` on the raw
//! input never panics, and a message that decodes re-encodes to one that
//! decodes to it; (b) an admin queue connected as a host that must
//! authenticate runs the input's operations (the first byte picks the
//! host, the rest are `numio_fuzz::auth_ops::Op`s: Negotiate, Receive,
//! Reply with a response computed over the last Challenge with a WRONG
//! key, Success2, Failure2, raw messages and SQEs, other commands, time
//! passing). Invariants: no command other than authentication completes
//! successfully, and a Property Get sent after the input does not succeed
//! (checked in the response capsules' status); no panic; once closing,
//! the queue stays closed; release leaves no controller.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use numio_fuzz::auth_ops::{check_message_round_trip, parse_ops};
use numio_fuzz::auth_session::{auth_target, AuthSession};
use nvmf::auth::Secret;

/// Not the hosts' secret (both are random, drawn once per process).
fn wrong_key() -> &'static Secret {
    static K: OnceLock<Secret> = OnceLock::new();
    K.get_or_init(|| Secret::generate(32, None))
}

fuzz_target!(|data: &[u8]| {
    check_message_round_trip(data);
    let Some((&knobs, rest)) = data.split_first() else {
        return;
    };
    check_message_round_trip(rest);
    assert_ne!(wrong_key(), &auth_target().host_secret);
    let mut s = AuthSession::open(knobs, wrong_key().clone());
    for op in parse_ops(rest) {
        if s.closing() {
            break;
        }
        s.run(&op);
    }
    assert_ne!(
        s.property_get_succeeds(),
        Some(true),
        "a Property Get succeeded on a queue that never authenticated"
    );
    assert!(
        !s.other_succeeded,
        "a command other than authentication succeeded on a queue that never authenticated"
    );
    s.release();
    assert_eq!(auth_target().target.controller_count(), 0);
});
