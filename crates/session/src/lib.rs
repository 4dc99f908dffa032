//! Sessions: everything that runs plans on the engine more than once, or
//! more than one plan, and hands the runs back as `report`'s result sets.
//!
//! A session owns the schedule, not the numbers: it runs each arm's plan
//! (a policy, a saved plan, a fio job file; later a sweep point or a fleet
//! host) round after round, interleaved A B A B … so slow drift of the
//! machine hits every arm alike, and keeps every completed run. It owns
//! the rules between runs:
//! * the **task-run settlement** ([`settle`]): the first run's io_uring
//!   task-run trial settles the mode for the later runs of its arm (or of
//!   every arm on the same targets), so modes cannot flip between runs and
//!   later runs pay no trial;
//! * **interrupts** ([`interrupt`]): a first Ctrl-C or SIGTERM sets a flag
//!   the engine polls; the run it cuts short is left out, the completed
//!   runs are kept, and the session says where it stopped; a second one
//!   exits at once, after the hooks registered with
//!   [`interrupt::on_second_signal`] ran (a changed controller setting is
//!   put back);
//! * **events** ([`event`]): one callback hears each run start, pass the
//!   start barrier (set-up and trial done), progress and end, and each
//!   settlement; [`view`] turns them into the lines numio shows, and the
//!   caller writes them.
//!
//! It does not parse flags, print or save: the `numio` binary turns flags
//! into [`LiveArm`]s and [`Schedule`]s, displays the events, and exports
//! the [`report::ResultSet`] the outcome becomes.
//!
//! The way through: [`arms::prepare`] turns an arm as the user wrote it
//! into a plan (or a saved arm) → [`Schedule::run`] runs the live arms,
//! each run through [`run_once`] → [`Outcome`] → [`arms::assemble`] puts
//! saved and live arms back in A, B order. A sweep is a schedule with one
//! arm per point; what must happen around each run (a controller feature
//! set and restored, numio started on other hosts) is a [`Runner`] given
//! to [`Schedule::run_with`]: a coalescing sweep ([`coalesce`], planned
//! from its flags by [`coalesce_plan`], run and written out by
//! [`coalesce_sweep`]). Also around a run or a command: controllers
//! bound to vfio-pci for a run ([`vfio_run`]) and the kernel's fabrics
//! connection `numio connect` holds ([`connect`]); [`backend_arms`] binds a
//! `vfio` arm's controller for its runs, [`fleet`] runs each on other
//! hosts (a sweep over hosts, and [`fleet_bench`]'s bench and comparison
//! across hosts). [`agent`] is the other end of those runs: what `numio
//! agent` does on its host, its lines on stdout being the fleet protocol's.
//!
//! [`serve`] is `numio serve`'s runner: its configuration, reactor
//! placement, start-up, reloads and `--stats`, over `nvmf`'s target.
//! [`bench`] makes a bench run's plan from what the user gave, [`sweep`]
//! a sweep's on this machine ([`served`]: its `reactors` axis), and
//! [`fleet_points`] one over hosts.
#![deny(missing_docs)]

pub mod agent;
pub mod arms;
pub mod axes;
pub mod backend_arms;
pub mod bench;
pub mod coalesce;
pub mod coalesce_plan;
pub mod coalesce_sweep;
pub mod connect;
pub mod error;
pub mod event;
pub mod fleet;
pub mod fleet_bench;
pub mod fleet_points;
pub mod interrupt;
pub mod layout;
pub mod multipath_probe;
pub mod once;
pub mod precondition;
pub mod precondition_state;
pub mod schedule;
pub mod serve;
pub mod served;
pub mod settle;
pub mod sweep;
pub mod targets;
pub mod verify_run;
pub mod verify_state;
pub mod verify_state_file;
pub mod vfio_run;
pub mod view;

pub use error::{SessionError, SignalError, VerifyStateError};
pub use event::{Event, RunInfo};
pub use once::run_once;
pub use schedule::{Interruption, Kept, LiveArm, LocalRunner, Outcome, Partial, Runner, Schedule};

#[cfg(test)]
mod testutil;
