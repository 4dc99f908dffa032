//! Finite-field Diffie-Hellman over the RFC 7919 groups, as DH-HMAC-CHAP
//! uses them: public values and shared secrets are big-endian, zero-padded
//! to the size of the prime (what the kernel's `ffdheNNNN(dh)` gives).
//! Exponentiation is `crypto-bigint`'s constant-time Montgomery form.

use crypto_bigint::modular::{BoxedMontyForm, BoxedMontyParams};
use crypto_bigint::{BoxedUint, Odd};
use zeroize::Zeroizing;

use super::ffdhe;

/// Bytes of a private exponent: 512 bits, more than twice the strength of
/// the largest group (RFC 7919 §5.2 asks for at least twice).
const PRIVATE_BYTES: usize = 64;

/// A DH group of DH-HMAC-CHAP (DHGID).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DhGroup {
    /// No Diffie-Hellman exchange (id 0).
    Null,
    /// ffdhe2048 (id 1).
    Ffdhe2048,
    /// ffdhe3072 (id 2).
    Ffdhe3072,
    /// ffdhe4096 (id 3).
    Ffdhe4096,
    /// ffdhe6144 (id 4).
    Ffdhe6144,
    /// ffdhe8192 (id 5).
    Ffdhe8192,
}

/// A peer's public value that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DhError {
    /// Longer than the group's prime.
    #[error("DH public value of {got} bytes for a {bytes}-byte group")]
    Length {
        /// Bytes received.
        got: usize,
        /// The group's size.
        bytes: usize,
    },
    /// 0, 1, p-1 or p and above (RFC 7919 §5.1).
    #[error("DH public value out of range (it must lie in 2..p-2)")]
    Range,
    /// The null group has no exchange.
    #[error("the null DH group has no public value")]
    Null,
}

impl DhGroup {
    /// Every group, in the order numio prefers them (the null group last).
    pub const PREFERRED: [DhGroup; 6] = [
        DhGroup::Ffdhe2048,
        DhGroup::Ffdhe3072,
        DhGroup::Ffdhe4096,
        DhGroup::Ffdhe6144,
        DhGroup::Ffdhe8192,
        DhGroup::Null,
    ];

    /// Every group in DHGID order (what a host offers).
    pub const ALL: [DhGroup; 6] = [
        DhGroup::Null,
        DhGroup::Ffdhe2048,
        DhGroup::Ffdhe3072,
        DhGroup::Ffdhe4096,
        DhGroup::Ffdhe6144,
        DhGroup::Ffdhe8192,
    ];

    /// The DHGID.
    pub fn id(self) -> u8 {
        Self::ALL.iter().position(|g| *g == self).expect("listed") as u8
    }

    /// The group with this DHGID.
    pub fn from_id(id: u8) -> Option<Self> {
        Self::ALL.get(id as usize).copied()
    }

    /// Its name: `null`, `ffdhe2048` … `ffdhe8192`.
    pub fn name(self) -> &'static str {
        match self {
            DhGroup::Null => "null",
            DhGroup::Ffdhe2048 => "ffdhe2048",
            DhGroup::Ffdhe3072 => "ffdhe3072",
            DhGroup::Ffdhe4096 => "ffdhe4096",
            DhGroup::Ffdhe6144 => "ffdhe6144",
            DhGroup::Ffdhe8192 => "ffdhe8192",
        }
    }

    /// Parses a name (`null`, `ffdhe2048`, …).
    pub fn parse(name: &str) -> Result<Self, super::NameError> {
        let n = name.trim().to_ascii_lowercase();
        Self::ALL
            .into_iter()
            .find(|g| g.name() == n)
            .ok_or_else(|| super::NameError::DhGroup {
                name: name.to_string(),
            })
    }

    /// Bytes of the prime (and of public values and shared secrets); 0 for
    /// the null group.
    pub fn bytes(self) -> usize {
        self.prime_hex().len() / 2
    }

    fn prime_hex(self) -> &'static str {
        match self {
            DhGroup::Null => "",
            DhGroup::Ffdhe2048 => ffdhe::FFDHE2048,
            DhGroup::Ffdhe3072 => ffdhe::FFDHE3072,
            DhGroup::Ffdhe4096 => ffdhe::FFDHE4096,
            DhGroup::Ffdhe6144 => ffdhe::FFDHE6144,
            DhGroup::Ffdhe8192 => ffdhe::FFDHE8192,
        }
    }

    /// The prime, big-endian.
    pub fn prime(self) -> Vec<u8> {
        let h = self.prime_hex().as_bytes();
        h.chunks(2)
            .map(|c| u8::from_str_radix(std::str::from_utf8(c).expect("ascii"), 16).expect("hex"))
            .collect()
    }

    fn params(self) -> BoxedMontyParams {
        let p = BoxedUint::from_be_slice(&self.prime(), self.bits()).expect("prime fits");
        BoxedMontyParams::new(Odd::new(p).expect("the prime is odd"))
    }

    fn bits(self) -> u32 {
        (self.bytes() * 8) as u32
    }
}

impl std::fmt::Display for DhGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// An ephemeral key pair in one group.
pub struct KeyPair {
    group: DhGroup,
    private: Zeroizing<Vec<u8>>,
    public: Vec<u8>,
}

impl std::fmt::Debug for KeyPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KeyPair({})", self.group)
    }
}

impl KeyPair {
    /// A new random key pair; `None` for the null group.
    pub fn generate(group: DhGroup) -> Option<Self> {
        if group == DhGroup::Null {
            return None;
        }
        let mut private = super::random_bytes(PRIVATE_BYTES);
        private[0] |= 0x80; // a full-length exponent, never 0 or 1
        let public = modpow(group, &[2], &private);
        Some(Self {
            group,
            private,
            public: public.to_vec(),
        })
    }

    /// The group.
    pub fn group(&self) -> DhGroup {
        self.group
    }

    /// The public value g^x mod p, padded to the group's size.
    pub fn public(&self) -> &[u8] {
        &self.public
    }

    /// The shared secret (peer's value)^x mod p, padded to the group's size.
    pub fn shared(&self, peer: &[u8]) -> Result<Zeroizing<Vec<u8>>, DhError> {
        let n = self.group.bytes();
        if peer.len() > n || peer.is_empty() {
            return Err(DhError::Length {
                got: peer.len(),
                bytes: n,
            });
        }
        let mut y = vec![0u8; n];
        y[n - peer.len()..].copy_from_slice(peer);
        // 2 <= y <= p-2: p ends in 0xFF..., so p-1 is p with its last byte
        // one less, and big-endian bytes of equal length compare as numbers.
        let mut p_less_1 = self.group.prime();
        p_less_1[n - 1] -= 1;
        let at_most_one = y[..n - 1].iter().all(|&b| b == 0) && y[n - 1] <= 1;
        if at_most_one || y >= p_less_1 {
            return Err(DhError::Range);
        }
        Ok(modpow(self.group, &y, &self.private))
    }
}

/// base^exp mod p, padded to the group's size.
fn modpow(group: DhGroup, base: &[u8], exp: &[u8]) -> Zeroizing<Vec<u8>> {
    let bits = group.bits();
    let params = group.params();
    let mut b = vec![0u8; group.bytes()];
    b[group.bytes() - base.len()..].copy_from_slice(base);
    let base = BoxedUint::from_be_slice(&b, bits).expect("base fits");
    let exp_bits = (exp.len() * 8) as u32;
    let exp = BoxedUint::from_be_slice(exp, exp_bits).expect("exponent fits");
    let r = BoxedMontyForm::new(base, params)
        .pow_bounded_exp(&exp, exp_bits)
        .retrieve();
    Zeroizing::new(r.to_be_bytes().to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn primes_have_the_rfc_7919_shape() {
        for g in &DhGroup::ALL[1..] {
            let p = g.prime();
            assert_eq!(
                p.len() * 8,
                [2048, 3072, 4096, 6144, 8192][g.id() as usize - 1]
            );
            // The top and bottom 64 bits are all ones; the next digits are e's.
            assert!(
                p[..8].iter().chain(&p[p.len() - 8..]).all(|&b| b == 0xFF),
                "{g}"
            );
            assert_eq!(&p[8..12], &[0xAD, 0xF8, 0x54, 0x58], "{g}");
        }
        assert_eq!(DhGroup::Null.bytes(), 0);
    }

    #[test]
    fn primes_match_openssl_where_installed() {
        let Ok(out) = std::process::Command::new("openssl")
            .arg("version")
            .output()
        else {
            eprintln!("openssl is not installed: the primes are checked by their shape only");
            return;
        };
        assert!(out.status.success());
        for g in &DhGroup::ALL[1..] {
            let params = std::process::Command::new("sh")
                .arg("-c")
                .arg(format!(
                    "openssl genpkey -genparam -algorithm DH -pkeyopt group:{g} | openssl asn1parse"
                ))
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&params.stdout);
            let hex = text
                .lines()
                .nth(1)
                .and_then(|l| l.rsplit(':').next())
                .unwrap_or_default()
                .trim()
                .to_string();
            assert_eq!(hex, g.prime_hex(), "{g}");
        }
    }

    #[test]
    fn both_sides_agree_on_the_secret() {
        for g in [DhGroup::Ffdhe2048, DhGroup::Ffdhe3072] {
            let a = KeyPair::generate(g).unwrap();
            let b = KeyPair::generate(g).unwrap();
            assert_eq!(a.public().len(), g.bytes());
            let s1 = a.shared(b.public()).unwrap();
            let s2 = b.shared(a.public()).unwrap();
            assert_eq!(*s1, *s2);
            assert_eq!(s1.len(), g.bytes());
            assert_ne!(a.public(), b.public());
        }
        assert!(KeyPair::generate(DhGroup::Null).is_none());
    }

    #[test]
    fn small_exponent_known_answer() {
        // 2^10 mod p = 1024 for any large p.
        let r = modpow(DhGroup::Ffdhe2048, &[2], &[10]);
        assert_eq!(&r[254..], &[4, 0]);
        assert!(r[..254].iter().all(|&b| b == 0));
    }

    #[test]
    fn bad_public_values_are_refused() {
        let g = DhGroup::Ffdhe2048;
        let a = KeyPair::generate(g).unwrap();
        assert_eq!(a.shared(&[0]), Err(DhError::Range));
        assert_eq!(a.shared(&[1]), Err(DhError::Range));
        let p = g.prime();
        let mut pm1 = p.clone();
        pm1[255] -= 1;
        assert_eq!(a.shared(&pm1), Err(DhError::Range));
        assert_eq!(a.shared(&p), Err(DhError::Range));
        assert!(matches!(a.shared(&[1; 257]), Err(DhError::Length { .. })));
        assert!(a.shared(&[2]).is_ok());
        for (i, gr) in DhGroup::ALL.iter().enumerate() {
            assert_eq!(DhGroup::from_id(i as u8), Some(*gr));
            assert_eq!(DhGroup::parse(gr.name()), Ok(*gr));
        }
        let e = DhGroup::parse("ffdhe1024").unwrap_err();
        assert_eq!(
            e,
            super::super::NameError::DhGroup {
                name: "ffdhe1024".into()
            }
        );
        assert_eq!(
            e.to_string(),
            "\"ffdhe1024\" is not a DH group: use null, ffdhe2048, ffdhe3072, ffdhe4096, ffdhe6144 or ffdhe8192"
        );
    }
}
