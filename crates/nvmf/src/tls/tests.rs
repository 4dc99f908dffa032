//! Known answers from an implementation that is not numio's: Python's
//! `hmac`/`hashlib` (HKDF written out from RFC 5869 and RFC 8446's
//! HkdfLabel), following libnvme's `derive_nvme_keys`; the interchange
//! text is what `nvme check-tls-key` (nvme-cli 2.3) accepts ("Key is
//! valid (HMAC 1, length 32, CRC 91267e8a)"). Inputs: the key bytes 0, 1,
//! 2, … and the lab's NQNs.

use super::*;

const HOST: &str = "nqn.2014-08.org.nvmexpress:uuid:6e756d69-6f6c-4000-8000-000000000001";
const SUB: &str = "nqn.2026-01.io.numio:lab";

struct Kat {
    text: &'static str,
    retained: &'static str,
    identity1: &'static str,
    psk1: &'static str,
    psk0: &'static str,
}

const KATS: [Kat; 2] = [
    Kat {
        text: "NVMeTLSkey-1:01:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:",
        retained: "e609f987c7ad3d3b9850107e1bbb708889bb94de48c76be4c278543879964021",
        identity1: "NVMe1R01 nqn.2014-08.org.nvmexpress:uuid:6e756d69-6f6c-4000-8000-000000000001 nqn.2026-01.io.numio:lab bQ/8tv47w9WRHlryu9dP46k5yMY1nnahSViQUzZPHuk=",
        psk1: "2eae1a7bf387ee71dce3e167cc62f60565c8f4f02fbac28c4bc62be1f8ead650",
        psk0: "71c2c3aaa686c96fe3a989029ebb607b30546bfa3d9a1b348812f7b8272a9f26",
    },
    Kat {
        text: "NVMeTLSkey-1:02:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vcSEgBQ==:",
        retained: "fee310258ebe03b65b427777d38ebd0666cca71fff1a5d6eee6aac62474cc328e0610d2ddaa57e941f3427d50de7f051",
        identity1: "NVMe1R02 nqn.2014-08.org.nvmexpress:uuid:6e756d69-6f6c-4000-8000-000000000001 nqn.2026-01.io.numio:lab 3JQJ1JaVu0MavpxFQGXuqBbl0fFHvJix9Kvx7hf9XQWddaAqM4wZ+Rep7IP2JjGY",
        psk1: "260bd3303be488332f5c649a686ce9675d6d3739430c68a70178d8d1e3566aa07b5b6644887cf62e34fc12e50445b4a3",
        psk0: "fa2a9a435024344f0dd74f8b470d95f3a8d961cdf4e4e50c3206d0439d023c25e3b63e807306be97abf1624617f01696",
    },
];

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn derivations_match_an_independent_implementation() {
    for k in &KATS {
        let key = ConfiguredPsk::parse(k.text).unwrap();
        assert_eq!(&*key.encode(), k.text, "round trip");
        assert_eq!(hex(&key.retained(HOST)), k.retained);
        let (id, psk) = key.for_host(1, HOST, SUB);
        assert_eq!(id.to_string(), k.identity1);
        assert_eq!(hex(&psk), k.psk1);
        let (id0, psk0) = key.for_host(0, HOST, SUB);
        assert_eq!(
            id0.to_string(),
            k.identity1[..k.identity1.rfind(' ').unwrap()].replace("NVMe1", "NVMe0")
        );
        assert_eq!(hex(&psk0), k.psk0);
        // The target's side: the identity parses back and yields the same PSK.
        let parsed = Identity::parse(k.identity1).unwrap();
        assert_eq!(parsed, id);
        assert_eq!(hex(&key.psk_for(&parsed).unwrap()), k.psk1);
        assert_eq!(
            hex(&key
                .psk_for(&Identity::parse(&id0.to_string()).unwrap())
                .unwrap()),
            k.psk0
        );
    }
}

#[test]
fn another_key_or_a_forged_digest_gives_no_psk() {
    let a = ConfiguredPsk::parse(KATS[0].text).unwrap();
    let b = ConfiguredPsk::generate(32);
    let (id, _) = b.for_host(1, HOST, SUB);
    assert!(a.psk_for(&id).is_none(), "digest of another key");
    let mut forged = Identity::parse(KATS[0].identity1).unwrap();
    forged.subnqn = "nqn.2026-01.io.numio:other".into();
    assert!(
        a.psk_for(&forged).is_none(),
        "digest names another subsystem"
    );
    let sha384 = ConfiguredPsk::parse(KATS[1].text).unwrap();
    assert!(sha384.psk_for(&id).is_none(), "hash of another length");
}

#[test]
fn bad_keys_and_identities_say_why() {
    let cases = [
        ("DHHC-1:01:AAAA:", "does not start with NVMeTLSkey-1:"),
        ("NVMeTLSkey-1:03:AAAA:", "is not 00, 01 or 02"),
        (
            "NVMeTLSkey-1:01:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR",
            "end with a colon",
        ),
        (
            "NVMeTLSkey-1:01:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaS:",
            "CRC-32",
        ),
        ("NVMeTLSkey-1:01:AAEC:", "holds 3 bytes"),
        (
            "NVMeTLSkey-1:02:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:",
            "needs a 48-byte key",
        ),
    ];
    for (text, want) in cases {
        let e = ConfiguredPsk::parse(text).unwrap_err().to_string();
        assert!(e.contains(want), "{text}: {e}");
    }
    let ids = [
        ("hello", "not an NVMe PSK identity"),
        ("NVMe2R01 a b", "version 2"),
        ("NVMe1G01 a b c", "generated PSK"),
        ("NVMe1R03 a b c", "not 01 (SHA-256) or 02"),
        ("NVMe1R01 a b", "and the PSK digest"),
        ("NVMe0R01 a b c", "separated by spaces"),
    ];
    for (text, want) in ids {
        let e = Identity::parse(text).unwrap_err().to_string();
        assert!(e.contains(want), "{text}: {e}");
    }
    // The variants carry what was wrong.
    assert_eq!(
        Identity::parse("NVMe1R03 a b c"),
        Err(IdentityError::Hash { hash: "03".into() })
    );
    assert_eq!(
        Identity::parse("NVMe1R03 a b c").unwrap_err().to_string(),
        "hash \"03\" is not 01 (SHA-256) or 02 (SHA-384)"
    );
    assert_eq!(
        Identity::parse("NVMe1R01 a b"),
        Err(IdentityError::Fields { version: 1 })
    );
    assert_eq!(
        Identity::parse("NVMe2R01 a b"),
        Err(IdentityError::Version {
            version: "2".into()
        })
    );
}

#[test]
fn key_files_must_be_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("numio-tls-key-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("key");
    std::fs::write(&p, format!("{}\n", KATS[0].text)).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
    let e = ConfiguredPsk::from_file(&p).unwrap_err().to_string();
    assert!(e.contains("chmod 600"), "{e}");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(
        &*ConfiguredPsk::from_file(&p).unwrap().encode(),
        KATS[0].text
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
