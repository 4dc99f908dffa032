//! numio across hosts, through OpenSSH: the controlling numio starts
//! `numio agent` on every host over the user's own ssh (keys,
//! `~/.ssh/config`, host key checking as configured), measures each
//! host's clock offset, waits until every host has planned and opened its
//! targets (the barrier), starts them all at one instant, and merges what
//! they send back. Nothing listens on the network for coordination.
//!
//! - `hosts.rs`: host lists and hosts files, and each host's targets.
//! - `proto.rs`: the line protocol between controller and agent.
//! - `agent.rs`: the agent's side of it (`numio agent`; the host's work
//!   through a trait).
//! - `lines.rs`: bounded lines on that channel, and a host's capped tail.
//! - `clock.rs`: clock offsets from ping round trips.
//! - `ssh.rs`: one host's ssh child and its channel.
//! - `run.rs`: the controller's side of a fleet run.
//! - `merge.rs`: one result from the hosts' results (merged histograms).
//! - `target.rs`: a target host of an NVMe-oF study (`numio serve` there).
//! - `report.rs`: a fleet run's outcome (`numio bench --hosts --json`).
//! - `study.rs`: the study an older `numio fabric` saved (read only: the
//!   NVMe-oF study is now a sweep over hosts, `session::fleet`).

pub mod agent;
pub mod clock;
pub mod hosts;
pub mod lines;
pub mod merge;
pub mod proto;
pub mod report;
pub mod run;
pub mod ssh;
pub mod study;
pub mod target;

pub use hosts::{
    parse_host, parse_host_list, parse_hosts_file, targets_per_host, EntryProblem, Host, HostsError,
};
pub use merge::MergeError;
pub use proto::{FromAgent, HelloMismatch, ToAgent, PROTOCOL};
pub use run::{FleetEvent, FleetOptions, HostOutcome, HostRun, LoginFailure};
pub use ssh::PushError;
pub use target::TargetError;
