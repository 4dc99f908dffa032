//! What a sweep hands back, on this machine or across hosts: the kept runs
//! and the result set (`session::sweep`'s, said on stderr and stamped with
//! this command line) and the outputs (`report::sweep::output`'s).

use session::axes::Axis;

/// [`session::sweep::keep_measured`], said on stderr.
pub fn keep_measured(outcome: session::Outcome) -> (Vec<report::Arm>, bool) {
    session::sweep::keep_measured(outcome, &mut |line| eprintln!("numio: {line}"))
}

/// [`session::sweep::result_set`] made now, by this command line.
pub fn result_set(
    axes: &[Axis],
    arms: Vec<report::Arm>,
    cores: Vec<usize>,
    knee: f64,
    goal: Option<report::SweepGoal>,
    interrupted: bool,
) -> report::ResultSet {
    let made = (super::report::command_line(), super::report::now_unix_s());
    session::sweep::result_set(axes, arms, cores, knee, goal, interrupted, made)
}

/// Prints, saves and exports a sweep's `set` (`report::sweep::output`).
pub fn write(set: &report::ResultSet, out: &report::sweep::output::Outputs) -> anyhow::Result<()> {
    let mut say = |line: String| eprintln!("numio: {line}");
    report::sweep::output::write(set, out, &mut std::io::stdout().lock(), &mut say)?;
    Ok(())
}
