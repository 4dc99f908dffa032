//! The one latency histogram codec: numio's HdrHistograms (1 ns to 60 s,
//! 3 significant digits), their summaries, and their serialized form in
//! results (HdrHistogram V2 + deflate, hex encoded: [`encode_histogram`],
//! [`decode_histogram`]).
//!
//! It lives with the result model so that every reader of results (the
//! engine that writes them, `report`'s exporters, the fleet controller that
//! merges hosts' results) shares it without depending on the engine.
//!
//! Decoding is bounded: a serialized histogram comes from a file or from
//! another host, and hdrhistogram's deserializer trusts the lengths in its
//! header (a 40-byte input made it allocate and zero 4 GiB, issue #38).
//! [`decode_histogram`] inflates with a cap, checks each length against the
//! bytes present and the precision against numio's, then decodes.

use std::io::Read;

use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

use crate::{LatencySummary, Percentile};

/// Largest latency a histogram tracks exactly (60 s); larger values saturate.
pub const HIST_MAX_NS: u64 = 60_000_000_000;
/// Significant digits of every histogram numio records.
pub const HIST_SIGFIG: u8 = 3;

/// `V2_COOKIE` of hdrhistogram's serialization (base `0x1c84_9303`, word
/// size 8 in bits 4-7).
const V2_COOKIE: u32 = 0x1c84_9313;
/// `V2_COMPRESSED_COOKIE`: a zlib stream of a V2 histogram follows.
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9314;
/// Bytes of a V2 header: cookie, payload length, normalizing offset,
/// digits (4 each), lowest, highest, integer-to-double ratio (8 each).
const V2_HEADER_BYTES: usize = 40;
/// The most digits a decoded histogram may claim: numio writes 3; 3 digits
/// over the whole u64 range are 55 k counters (440 KiB), 5 would be 48 MB.
const MAX_SIGFIG: u32 = 3;
/// The most bytes an inflated histogram may take: every counter of a
/// 3-digit histogram over the u64 range as a 9-byte varint is under 500 KiB.
const MAX_INFLATED_BYTES: u64 = 1 << 20;

/// A fresh histogram with numio's bounds, auto-resize off.
pub fn new_histogram() -> Histogram<u64> {
    let mut h = Histogram::new_with_bounds(1, HIST_MAX_NS, HIST_SIGFIG)
        .expect("constant histogram bounds are valid");
    h.auto(false);
    h
}

/// Summary of one histogram with the given percentiles (0 < p ≤ 100).
pub fn summarize(h: &Histogram<u64>, percentiles: &[f64]) -> LatencySummary {
    if h.is_empty() {
        return LatencySummary {
            percentiles: percentiles
                .iter()
                .map(|&p| Percentile {
                    percentile: p,
                    latency_ns: 0,
                })
                .collect(),
            ..LatencySummary::default()
        };
    }
    LatencySummary {
        samples: h.len(),
        min_ns: h.min(),
        max_ns: h.max(),
        mean_ns: h.mean(),
        stdev_ns: h.stdev(),
        percentiles: percentiles
            .iter()
            .map(|&p| Percentile {
                percentile: p,
                latency_ns: h.value_at_quantile(p / 100.0),
            })
            .collect(),
    }
}

/// HdrHistogram V2 + deflate, hex encoded.
pub fn encode_histogram(h: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    if V2DeflateSerializer::new().serialize(h, &mut bytes).is_err() {
        return String::new();
    }
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// Inverse of [`encode_histogram`] (an uncompressed V2 histogram is taken
/// too); `None` on malformed input, on lengths the bytes do not hold, and
/// on a precision finer than numio's.
pub fn decode_histogram(hex: &str) -> Option<Histogram<u64>> {
    if hex.len() % 2 != 0 {
        return None;
    }
    let bytes: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect::<Option<_>>()?;
    let v2 = match be32(&bytes, 0)? {
        V2_COMPRESSED_COOKIE => {
            let len = be32(&bytes, 4)? as usize;
            let zlib = bytes.get(8..)?;
            if len != zlib.len() {
                return None;
            }
            let mut out = Vec::new();
            flate2::read::ZlibDecoder::new(zlib)
                .take(MAX_INFLATED_BYTES + 1)
                .read_to_end(&mut out)
                .ok()?;
            if out.len() as u64 > MAX_INFLATED_BYTES {
                return None;
            }
            out
        }
        V2_COOKIE => bytes,
        _ => return None,
    };
    if be32(&v2, 0)? != V2_COOKIE || v2.len() < V2_HEADER_BYTES {
        return None;
    }
    let payload = be32(&v2, 4)? as usize;
    if payload > v2.len() - V2_HEADER_BYTES || be32(&v2, 12)? > MAX_SIGFIG {
        return None;
    }
    let mut h: Histogram<u64> = Deserializer::new().deserialize(&mut v2.as_slice()).ok()?;
    h.auto(false);
    Some(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn zlib(bytes: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    }

    /// A V2 header claiming `payload` bytes and `digits`, with `body` after.
    fn v2(payload: u32, digits: u32, high: u64, body: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend(V2_COOKIE.to_be_bytes());
        b.extend(payload.to_be_bytes());
        b.extend(0u32.to_be_bytes());
        b.extend(digits.to_be_bytes());
        b.extend(1u64.to_be_bytes());
        b.extend(high.to_be_bytes());
        b.extend(1f64.to_be_bytes());
        b.extend(body);
        b
    }

    fn compressed(inner: &[u8]) -> Vec<u8> {
        let z = zlib(inner);
        let mut b = V2_COMPRESSED_COOKIE.to_be_bytes().to_vec();
        b.extend((z.len() as u32).to_be_bytes());
        b.extend(z);
        b
    }

    #[test]
    fn histogram_hex_round_trip() {
        let mut h = new_histogram();
        h.saturating_record_n(1234, 10);
        h.saturating_record(HIST_MAX_NS * 10);
        let back = decode_histogram(&encode_histogram(&h)).expect("decodes");
        assert_eq!(back.len(), 11);
        assert_eq!(back.max(), h.max());
        assert!(decode_histogram("zz").is_none());
        assert!(decode_histogram("").is_none());
    }

    /// Issue #38: a 40-byte histogram whose header claims a 4 GiB payload
    /// made the deserializer allocate and zero 4 GiB; refused now, plain
    /// and compressed, before anything is allocated for it.
    #[test]
    fn a_header_claiming_more_than_the_bytes_hold_is_refused() {
        let bomb = v2(u32::MAX, 3, HIST_MAX_NS, &[]);
        assert_eq!(bomb.len(), 40);
        assert!(decode_histogram(&hex(&bomb)).is_none());
        assert!(decode_histogram(&hex(&compressed(&bomb))).is_none());
        // A compressed length that is not the bytes present.
        let mut c = compressed(&v2(0, 3, HIST_MAX_NS, &[]));
        c[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(decode_histogram(&hex(&c)).is_none());
        // An empty but honest one decodes.
        assert!(decode_histogram(&hex(&compressed(&v2(0, 3, HIST_MAX_NS, &[])))).is_some());
    }

    /// A zip bomb (megabytes of zeroes in a few KiB) is not inflated past
    /// the cap; 5 digits over the u64 range (48 MB of counters) is refused.
    #[test]
    fn inflation_and_precision_are_capped() {
        let zeros = vec![0u8; 8 << 20];
        let big = v2(zeros.len() as u32, 3, HIST_MAX_NS, &zeros);
        let c = compressed(&big);
        assert!(c.len() < 64 << 10, "the bomb is small: {}", c.len());
        assert!(decode_histogram(&hex(&c)).is_none());
        assert!(decode_histogram(&hex(&compressed(&v2(0, 5, u64::MAX / 2, &[])))).is_none());
    }

    #[test]
    fn summary_of_an_empty_histogram_names_each_percentile() {
        let s = summarize(&new_histogram(), &[50.0, 99.0]);
        assert_eq!(s.samples, 0);
        assert_eq!(s.percentiles.len(), 2);
        assert_eq!(s.at(99.0), Some(0));
    }
}
