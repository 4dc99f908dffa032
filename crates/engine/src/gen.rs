//! Workload generators: which direction, offset and length the next I/O has.
//!
//! Everything is computed from fixed state set up at start-up: no allocation,
//! a few nanoseconds per I/O for uniform offsets.

use planner::{Distribution, RwMode, Workload};
use rand_xoshiro::rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::stats::Dir;

/// The workspace's one seeded generator: xoshiro256++ seeded through
/// SplitMix64 (`rand_xoshiro`'s `seed_from_u64`). A seed gives the same
/// sequence as numio's former hand-written copy, so saved seeds keep their
/// meaning (`rng_sequence_is_pinned`).
#[derive(Debug, Clone)]
pub struct Rng(Xoshiro256PlusPlus);

/// SplitMix64's output finalizer: a bijective 64-bit hash (verify pattern
/// words, zipf scrambling, per-job seeds), not a generator.
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Rng {
        Rng(Xoshiro256PlusPlus::seed_from_u64(seed))
    }
    /// The next 64 random bits.
    #[inline(always)]
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
    /// Uniform in `0..n` (n > 0), by multiply-high.
    #[inline(always)]
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
    /// Uniform in [0, 1).
    #[inline]
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// A full-cycle permutation of `0..n`: every value once per pass, in a
/// scrambled order (an LCG modulo the next power of two, a bijective mix of
/// its output, and cycle-walking past `n`). fio's random map without a map.
#[derive(Debug, Clone)]
pub struct Permutation {
    n: u64,
    mask: u64,
    bits: u32,
    state: u64,
}

const LCG_A: u64 = 6_364_136_223_846_793_005;
const LCG_C: u64 = 1_442_695_040_888_963_407;

impl Permutation {
    /// A permutation of `0..n` (n ≥ 1) starting from `seed`.
    pub fn new(n: u64, seed: u64) -> Permutation {
        let bits = (64 - (n.max(2) - 1).leading_zeros()).max(1);
        let mask = if bits == 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        Permutation {
            n: n.max(1),
            mask,
            bits,
            state: seed & mask,
        }
    }
    /// The next value of the cycle.
    #[inline]
    pub fn next_value(&mut self) -> u64 {
        loop {
            self.state = self.state.wrapping_mul(LCG_A).wrapping_add(LCG_C) & self.mask;
            // Bijective on `bits` bits: xorshift and odd multiply, masked.
            let mut y = self.state;
            y ^= y >> (self.bits / 2 + 1);
            y = y.wrapping_mul(0x9e37_79b9_7f4a_7c15 | 1) & self.mask;
            y ^= y >> (self.bits / 2 + 1);
            if y < self.n {
                return y;
            }
        }
    }
}

/// fio's zipf generator (Gray et al., as in fio's lib/zipf.c), with the
/// value scrambled over the range so that hot blocks are spread out.
#[derive(Debug, Clone)]
pub struct Zipf {
    n: u64,
    theta: f64,
    alpha: f64,
    eta: f64,
    zetan: f64,
    half_pow_theta: f64,
    rand_off: u64,
}

/// fio caps the zeta sum at this many terms.
const ZIPF_MAX_GEN: u64 = 10_000_000;

impl Zipf {
    /// A zipf distribution over `0..n` with exponent `theta` (> 0, ≠ 1).
    pub fn new(n: u64, theta: f64, seed: u64) -> Zipf {
        let n = n.max(1);
        let terms = n.min(ZIPF_MAX_GEN);
        let zetan: f64 = (1..=terms).map(|i| (1.0 / i as f64).powf(theta)).sum();
        let zeta2 = 1.0 + 0.5f64.powf(theta);
        let eta = (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan);
        Zipf {
            n,
            theta,
            alpha: 1.0 / (1.0 - theta),
            eta,
            zetan,
            half_pow_theta: 0.5f64.powf(theta),
            rand_off: mix64(seed) % n,
        }
    }
    /// The exponent.
    pub fn theta(&self) -> f64 {
        self.theta
    }
    /// The next value in `0..n`.
    #[inline]
    pub fn next(&mut self, rng: &mut Rng) -> u64 {
        let u = rng.unit();
        let z = u * self.zetan;
        let rank = if z < 1.0 {
            0
        } else if z < 1.0 + self.half_pow_theta {
            1
        } else {
            let v = self.n as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha);
            (v as u64).min(self.n - 1)
        };
        (mix64(rank).wrapping_add(self.rand_off)) % self.n
    }
}

#[derive(Debug, Clone)]
enum Offsets {
    Sequential { next_bytes: u64 },
    Uniform,
    Map(Permutation),
    Zipf(Zipf),
}

/// The next I/O to issue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NextIo {
    /// Direction.
    pub dir: Dir,
    /// Byte offset in the target.
    pub offset_bytes: u64,
    /// Length in bytes.
    pub len_bytes: u32,
}

/// Generates the I/Os of one job.
#[derive(Debug, Clone)]
pub struct IoGen {
    rng: Rng,
    rw: RwMode,
    read_percent: u64,
    start_bytes: u64,
    region_bytes: u64,
    bs_min_bytes: u64,
    bs_span: u64,
    align_bytes: u64,
    blocks: u64,
    offsets: Offsets,
}

impl IoGen {
    /// A generator for `w` over `start_bytes..start_bytes + region_bytes`,
    /// lengths aligned to `align_bytes`; `job` varies the seed per job.
    /// The caller has validated that the region holds at least one `bs_max`.
    pub fn new(
        w: &Workload,
        start_bytes: u64,
        region_bytes: u64,
        align_bytes: u64,
        job: u32,
    ) -> IoGen {
        let seed = w.randseed ^ mix64(job as u64 + 1);
        let bs_min = w.bs_min_bytes.max(1);
        let blocks = (region_bytes / bs_min).max(1);
        // As fio: the random map steers uniform offsets only. fio sets
        // norandommap for every other distribution (init.c fixup_options)
        // and its zipf generator never consults the map, so zipf ignores
        // `w.norandommap` here too.
        let offsets = if !w.rw.random() {
            Offsets::Sequential { next_bytes: 0 }
        } else {
            match w.random_distribution {
                Distribution::Zipf(theta) => Offsets::Zipf(Zipf::new(blocks, theta, seed)),
                Distribution::Uniform if w.norandommap => Offsets::Uniform,
                Distribution::Uniform => Offsets::Map(Permutation::new(blocks, mix64(seed))),
            }
        };
        let read_percent = match w.rw {
            RwMode::Read | RwMode::RandRead => 100,
            RwMode::Write | RwMode::RandWrite => 0,
            RwMode::ReadWrite | RwMode::RandRw => u64::from(w.rwmixread.min(100)),
        };
        IoGen {
            rng: Rng::new(seed),
            rw: w.rw,
            read_percent,
            start_bytes,
            region_bytes,
            bs_min_bytes: bs_min,
            bs_span: w.bs_max_bytes.max(bs_min) - bs_min,
            align_bytes: align_bytes.clamp(1, bs_min),
            blocks,
            offsets,
        }
    }

    /// The access pattern.
    pub fn rw(&self) -> RwMode {
        self.rw
    }

    /// Direction and length of every I/O, when they never vary (one
    /// direction, one block size): all a backend without offsets needs.
    pub fn fixed_shape(&self) -> Option<(Dir, u32)> {
        let dir = match self.read_percent {
            100 => Dir::Read,
            0 => Dir::Write,
            _ => return None,
        };
        (self.bs_span == 0).then_some((dir, self.bs_min_bytes as u32))
    }

    /// The next I/O.
    #[inline(always)]
    pub fn next_io(&mut self) -> NextIo {
        let dir = match self.read_percent {
            100 => Dir::Read,
            0 => Dir::Write,
            p if self.rng.below(100) < p => Dir::Read,
            _ => Dir::Write,
        };
        let len = if self.bs_span == 0 {
            self.bs_min_bytes
        } else {
            let l = self.bs_min_bytes + self.rng.below(self.bs_span + 1);
            (l / self.align_bytes * self.align_bytes).max(self.bs_min_bytes)
        };
        let rel = match &mut self.offsets {
            Offsets::Sequential { next_bytes } => {
                if *next_bytes + len > self.region_bytes {
                    *next_bytes = 0;
                }
                let o = *next_bytes;
                *next_bytes += len;
                o
            }
            Offsets::Uniform => self.rng.below(self.blocks) * self.bs_min_bytes,
            Offsets::Map(p) => p.next_value() * self.bs_min_bytes,
            Offsets::Zipf(z) => z.next(&mut self.rng) * self.bs_min_bytes,
        };
        let rel = if rel + len > self.region_bytes {
            (self.region_bytes - len) / self.align_bytes * self.align_bytes
        } else {
            rel
        };
        NextIo {
            dir,
            offset_bytes: self.start_bytes + rel,
            len_bytes: len as u32,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wl(rw: RwMode) -> Workload {
        Workload {
            rw,
            ..Workload::default()
        }
    }

    /// The first outputs of xoshiro256++ seeded through SplitMix64, as
    /// numio's own generator gave them before it came from `rand_xoshiro`
    /// (checked equal over 10⁶ outputs of six seeds when it moved).
    #[test]
    fn rng_sequence_is_pinned() {
        for (seed, want) in [
            (
                0,
                [
                    5_987_356_902_031_041_503,
                    7_051_070_477_665_621_255,
                    6_633_766_593_972_829_180,
                ],
            ),
            (
                42,
                [
                    15_021_278_609_987_233_951,
                    5_881_210_131_331_364_753,
                    18_149_643_915_985_481_100,
                ],
            ),
            (
                0x006e_756d_696f,
                [
                    2_110_147_034_165_908_639,
                    13_741_983_005_656_284_403,
                    6_897_284_876_784_524_467,
                ],
            ),
        ] {
            let mut rng = Rng::new(seed);
            assert_eq!(
                [rng.next_u64(), rng.next_u64(), rng.next_u64()],
                want,
                "seed {seed:#x}"
            );
        }
    }

    #[test]
    fn permutation_covers_every_value_once_per_pass() {
        for n in [1u64, 2, 3, 7, 64, 1000, 4097] {
            let mut p = Permutation::new(n, 42);
            let mut seen = vec![false; n as usize];
            for _ in 0..n {
                let v = p.next_value() as usize;
                assert!(!seen[v], "n={n}: {v} repeated within a pass");
                seen[v] = true;
            }
            assert!(seen.iter().all(|&s| s));
        }
    }

    #[test]
    fn sequential_wraps_inside_region() {
        let mut w = wl(RwMode::Read);
        w.bs_min_bytes = 4096;
        w.bs_max_bytes = 4096;
        let mut g = IoGen::new(&w, 8192, 3 * 4096, 512, 0);
        let offs: Vec<u64> = (0..4).map(|_| g.next_io().offset_bytes).collect();
        assert_eq!(offs, vec![8192, 12288, 16384, 8192]);
    }

    #[test]
    fn random_offsets_stay_in_region_and_aligned() {
        let mut w = wl(RwMode::RandRw);
        w.bs_min_bytes = 4096;
        w.bs_max_bytes = 16384;
        w.rwmixread = 70;
        let mut g = IoGen::new(&w, 1 << 20, 1 << 20, 4096, 3);
        let mut reads = 0;
        for _ in 0..10_000 {
            let io = g.next_io();
            assert!(io.offset_bytes >= 1 << 20);
            assert!(io.offset_bytes + io.len_bytes as u64 <= 2 << 20);
            assert_eq!(io.offset_bytes % 4096, 0);
            assert_eq!(io.len_bytes % 4096, 0);
            assert!((4096..=16384).contains(&io.len_bytes));
            if io.dir == Dir::Read {
                reads += 1;
            }
        }
        assert!(
            (6500..7500).contains(&reads),
            "rwmixread=70 gave {reads} reads of 10000"
        );
    }

    #[test]
    fn zipf_is_skewed() {
        let mut rng = Rng::new(1);
        let mut z = Zipf::new(10_000, 1.2, 7);
        let mut counts = vec![0u32; 10_000];
        for _ in 0..100_000 {
            counts[z.next(&mut rng) as usize] += 1;
        }
        counts.sort_unstable_by(|a, b| b.cmp(a));
        let top10: u32 = counts[..10].iter().sum();
        // Uniform would put ~100 hits in the top 10 blocks; zipf 1.2 far more.
        assert!(top10 > 30_000, "top 10 blocks got {top10} hits");
    }

    #[test]
    fn same_seed_same_sequence_different_jobs_differ() {
        let w = wl(RwMode::RandRead);
        let mut a = IoGen::new(&w, 0, 1 << 30, 4096, 0);
        let mut b = IoGen::new(&w, 0, 1 << 30, 4096, 0);
        let mut c = IoGen::new(&w, 0, 1 << 30, 4096, 1);
        let va: Vec<_> = (0..100).map(|_| a.next_io()).collect();
        let vb: Vec<_> = (0..100).map(|_| b.next_io()).collect();
        let vc: Vec<_> = (0..100).map(|_| c.next_io()).collect();
        assert_eq!(va, vb);
        assert_ne!(va, vc);
    }

    fn zipf_workload(norandommap: bool) -> Workload {
        Workload {
            rw: RwMode::RandRead,
            bs_min_bytes: 4096,
            bs_max_bytes: 4096,
            random_distribution: Distribution::Zipf(1.2),
            norandommap,
            ..Workload::default()
        }
    }

    #[test]
    fn randommap_covers_every_block_once_per_pass() {
        let mut w = zipf_workload(false);
        w.random_distribution = Distribution::Uniform;
        let blocks = 1000u64;
        let mut g = IoGen::new(&w, 1 << 20, blocks * 4096, 4096, 2);
        for pass in 0..3 {
            let mut hits = vec![0u32; blocks as usize];
            for _ in 0..blocks {
                let b = (g.next_io().offset_bytes - (1 << 20)) / 4096;
                hits[b as usize] += 1;
            }
            assert!(hits.iter().all(|&h| h == 1), "pass {pass}: {hits:?}");
        }
    }

    #[test]
    fn uniform_without_randommap_repeats_within_a_pass() {
        let mut w = zipf_workload(true);
        w.random_distribution = Distribution::Uniform;
        let mut g = IoGen::new(&w, 0, 1000 * 4096, 4096, 2);
        let mut hits = vec![0u32; 1000];
        for _ in 0..1000 {
            hits[(g.next_io().offset_bytes / 4096) as usize] += 1;
        }
        // About 1000/e blocks stay untouched by 1000 uniform draws.
        let untouched = hits.iter().filter(|&&h| h == 0).count();
        assert!((300..440).contains(&untouched), "{untouched} untouched");
    }

    /// fio sets norandommap for zipf (init.c fixup_options): the map must not
    /// flatten the skew, and the offsets are the same with or without it.
    #[test]
    fn zipf_ignores_randommap_like_fio() {
        let blocks = 10_000u64;
        let mut with_map = IoGen::new(&zipf_workload(false), 0, blocks * 4096, 4096, 0);
        let mut without = IoGen::new(&zipf_workload(true), 0, blocks * 4096, 4096, 0);
        let mut hits = vec![0u32; blocks as usize];
        for _ in 0..blocks {
            let io = with_map.next_io();
            assert_eq!(io, without.next_io());
            hits[(io.offset_bytes / 4096) as usize] += 1;
        }
        hits.sort_unstable_by(|a, b| b.cmp(a));
        let top10: u32 = hits[..10].iter().sum();
        assert!(
            top10 > 2_000,
            "one pass of zipf 1.2: top 10 blocks got {top10}"
        );
        assert!(hits.iter().filter(|&&h| h == 0).count() > 5_000);
    }
}
