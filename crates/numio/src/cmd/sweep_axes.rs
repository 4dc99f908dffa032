//! The axes of `numio sweep` are `session::axes`; this applies one
//! point's value to the workload flags (checked as the flag is).

use anyhow::Context;
use clap::ValueEnum;

use super::flags::{RwArg, WorkloadArgs};

/// The workload flags with `axis` set to `value` (all but `devices` and
/// `reactors`, which the placement and the served target take).
pub fn apply(w: &mut WorkloadArgs, axis: &str, value: &str) -> anyhow::Result<()> {
    let num = |v: &str| -> anyhow::Result<i64> {
        v.parse()
            .with_context(|| format!("{axis}={v}: not a whole number"))
    };
    match axis {
        "jobs" | "initiator-cores" => w.numjobs = Some(num(value)?),
        "iodepth" => w.iodepth = Some(num(value)?),
        "bs" => w.bs = Some(value.to_string()),
        "rwmixread" => {
            w.rwmixread = Some(
                value
                    .parse()
                    .ok()
                    .filter(|p: &u8| *p <= 100)
                    .with_context(|| format!("rwmixread={value}: give a percentage 0-100"))?,
            )
        }
        "rw" => {
            w.rw = Some(RwArg::from_str(value, true).map_err(|_| {
                anyhow::anyhow!("rw={value}: give read, write, randread, randwrite, rw or randrw")
            })?)
        }
        _ => {}
    }
    Ok(())
}
