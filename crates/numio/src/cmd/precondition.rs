//! `numio precondition`: flags → `session::precondition::run` (each drive
//! on its node's CPUs) → `report::precondition::write`.

use session::interrupt;

/// Flags of `numio precondition`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The drives (block devices or files): they are overwritten.
    pub targets: Vec<String>,
    /// Sequential 128 KiB writes over this many capacities first (0: none).
    #[arg(long, value_name = "Nx", default_value = "2x")]
    pub fill: String,
    /// Length of a measured round.
    #[arg(long, value_name = "TIME", default_value = "60s")]
    pub round: String,
    /// Most rounds per drive.
    #[arg(long, value_name = "N", default_value_t = 25)]
    pub rounds: u32,
    /// Test over the last 5 rounds: snia, or fio's iops:P% or iops_slope:P%.
    #[arg(long, value_name = "TEST", default_value = "snia")]
    pub steady: String,
    /// Save the result to this file (reprint with `numio report`).
    #[arg(long, value_name = "FILE.json")]
    pub save: Option<std::path::PathBuf>,
    /// Print the result as JSON (schema numio-precondition).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub workload: super::flags::WorkloadArgs,
    #[command(flatten)]
    pub engine: super::engine_args::EngineArgs,
}

/// Runs `numio precondition`: exit 0 when every drive reached steady state, else 3.
pub fn run(args: Args) -> anyhow::Result<i32> {
    interrupt::install(super::display::on_signal)?;
    let ask = session::precondition::PreconditionAsk {
        targets: &args.targets,
        placing: &Default::default(),
        workload: &args.workload.flags(),
        fill: &args.fill,
        round: &args.round,
        rounds_max: args.rounds,
        steady: &args.steady,
        command: &super::report::command_line(),
        state_dir: None,
    };
    let say = &mut |line| eprintln!("numio: {line}");
    let p = session::precondition::run(&ask, &args.engine.run_options()?, interrupt::flag(), say)?;
    let (save, out) = (args.save.as_deref(), &mut std::io::stdout().lock());
    report::precondition::write(&p, args.json, save, out)?;
    Ok(interrupt::exit_code().unwrap_or(if p.all_steady() { 0 } else { 3 }))
}
