//! A fleet run's whole outcome, as `numio bench --hosts --json` writes it
//! (schema `numio-fleet`) and `numio report` reads it back: each host's
//! part (its result, or why it has none; its clock offset and start skew)
//! and the merged result of the hosts that ran ([`crate::merge`]).

use serde::{Deserialize, Serialize};

use crate::merge::{merge, MergeError};
use crate::run::{HostOutcome, HostRun};

/// The schema name of a fleet run's JSON.
pub const FLEET_SCHEMA: &str = "numio-fleet";

/// One host's part of a fleet run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HostReport {
    /// The host's label.
    pub host: String,
    /// Whether it ran and reported.
    pub ok: bool,
    /// Why not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Its clock against the controller's, ns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clock_offset_ns: Option<i64>,
    /// The round trip that offset was measured over, ns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clock_rtt_ns: Option<u64>,
    /// When it began measuring after the host that began first, ns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_skew_ns: Option<i64>,
    /// Its result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<results::RunResult>,
}

/// A fleet run's whole outcome.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FleetReport {
    /// [`FLEET_SCHEMA`].
    pub schema: String,
    /// Whether a host did not report.
    pub partial: bool,
    /// Each host's part, in the order given.
    pub hosts: Vec<HostReport>,
    /// The hosts' results merged (histograms merged, never percentiles
    /// averaged); `None` when no host ran.
    pub merged: Option<results::RunResult>,
}

impl FleetReport {
    /// The report of `runs` from their `outcomes` (in the same order), with
    /// the merged result's `percentiles`.
    pub fn new(
        runs: &[HostRun],
        outcomes: Vec<HostOutcome>,
        percentiles: &[f64],
    ) -> Result<FleetReport, MergeError> {
        let mut hosts = Vec::new();
        for (r, o) in runs.iter().zip(outcomes) {
            hosts.push(match o {
                HostOutcome::Done {
                    result,
                    offset,
                    start_skew_ns,
                } => HostReport {
                    host: r.host.label.clone(),
                    ok: true,
                    reason: None,
                    clock_offset_ns: Some(offset.offset_ns),
                    clock_rtt_ns: Some(offset.rtt_ns),
                    start_skew_ns,
                    result: Some(*result),
                },
                HostOutcome::Failed { reason } => HostReport {
                    host: r.host.label.clone(),
                    ok: false,
                    reason: Some(reason),
                    clock_offset_ns: None,
                    clock_rtt_ns: None,
                    start_skew_ns: None,
                    result: None,
                },
            });
        }
        // Each host began measuring after its own set-up; what matters is how
        // far apart: the skew is from the host that began first (set-up
        // included, in the controller's clock).
        if let Some(first) = hosts.iter().filter_map(|h| h.start_skew_ns).min() {
            for h in &mut hosts {
                h.start_skew_ns = h.start_skew_ns.map(|s| s - first);
            }
        }
        let parts: Vec<(&str, &results::RunResult)> = hosts
            .iter()
            .filter_map(|h| Some((h.host.as_str(), h.result.as_ref()?)))
            .collect();
        let merged = if parts.is_empty() {
            None
        } else {
            Some(merge(&parts, percentiles)?)
        };
        Ok(FleetReport {
            schema: FLEET_SCHEMA.to_string(),
            partial: hosts.iter().any(|h| !h.ok),
            hosts,
            merged,
        })
    }

    /// The result of each host that sent one.
    pub fn host_results(&self) -> impl Iterator<Item = &results::RunResult> {
        self.hosts.iter().filter_map(|h| h.result.as_ref())
    }

    /// The hosts that did not report, and why: `a: why; b: why`.
    pub fn failures(&self) -> String {
        self.hosts
            .iter()
            .filter_map(|h| Some(format!("{}: {}", h.host, h.reason.as_ref()?)))
            .collect::<Vec<_>>()
            .join("; ")
    }
}
