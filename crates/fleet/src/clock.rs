//! Each host's clock offset from the controller's, from ping round trips:
//! the offset of the round trip with the smallest delay, assuming the two
//! halves of that trip took equally long (as NTP does); its error is at
//! most half that delay.

/// One round trip: the controller's clock at send and at receipt, the
/// agent's when it answered (ns since the epoch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// Controller, at send.
    pub sent_ns: u64,
    /// Agent, when it answered.
    pub agent_ns: u64,
    /// Controller, at receipt.
    pub received_ns: u64,
}

/// A host's clock against the controller's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Offset {
    /// Agent's clock minus the controller's, ns.
    pub offset_ns: i64,
    /// The smallest round trip, ns: the offset is good to half of it.
    pub rtt_ns: u64,
}

impl Offset {
    /// The agent's clock reading at the controller's `t_ns`.
    pub fn to_agent(&self, t_ns: u64) -> u64 {
        (t_ns as i64 + self.offset_ns).max(0) as u64
    }

    /// The controller's clock reading at the agent's `t_ns`.
    pub fn to_controller(&self, t_ns: u64) -> u64 {
        (t_ns as i64 - self.offset_ns).max(0) as u64
    }
}

/// The offset from `samples` (`None` without any).
pub fn estimate(samples: &[Sample]) -> Option<Offset> {
    let best = samples
        .iter()
        .filter(|s| s.received_ns >= s.sent_ns)
        .min_by_key(|s| s.received_ns - s.sent_ns)?;
    let mid = best.sent_ns as i128 + (best.received_ns - best.sent_ns) as i128 / 2;
    Some(Offset {
        offset_ns: (best.agent_ns as i128 - mid) as i64,
        rtt_ns: best.received_ns - best.sent_ns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shortest_round_trip_gives_the_offset() {
        // The agent runs 5 ms ahead; the first trip was delayed one way.
        let s = [
            Sample {
                sent_ns: 1_000_000,
                agent_ns: 1_000_000 + 5_000_000 + 900_000,
                received_ns: 2_000_000,
            },
            Sample {
                sent_ns: 3_000_000,
                agent_ns: 3_000_000 + 5_000_000 + 100_000,
                received_ns: 3_200_000,
            },
        ];
        let o = estimate(&s).unwrap();
        assert_eq!((o.offset_ns, o.rtt_ns), (5_000_000, 200_000));
        assert_eq!(o.to_agent(10), 5_000_010);
        assert_eq!(o.to_controller(5_000_010), 10);
        assert_eq!(estimate(&[]), None);
    }
}
