//! fio interop: job files and fio's command-line form in, job files out.
//!
//! - [`load_job_file`] / [`parse_job_text`] read `[global]` and job
//!   sections, `include`, `key=value` and bare keys, `;`/`#` comments, fio's
//!   units (`4k`, `1m`, `30s`, `1h`, `100ms`) and ranges (`bs=4k-64k`);
//!   [`include`] holds what an `include` may read and how much in all.
//! - [`parse_command_line`] reads `--name=a --filename=… --name=b …`.
//! - [`JobFile::to_placement`] turns the jobs into a [`crate::Placement`], pinning
//!   exactly as fio would (including `cpus_allowed_policy=split`, which fio
//!   indexes by the job's global number), and with `numa_auto` planning
//!   jobs that have no CPUs with the `local` policy.
//! - [`to_job_file`] writes a placement as a job file whose jobs fio pins to
//!   exactly the planned CPUs.
//!
//! Options are a table ([`OPTIONS`]); an option outside it is an error with
//! file and line, or a warning with [`ParseOptions::ignore_unknown`]. The
//! words some options take are tables too (`values`: [`IOENGINES`],
//! [`CpusPolicy::ALL`], [`MEM_POLICIES`]), which a refused value's
//! [`OptionError`] lists from.

mod convert;
mod emit;
mod error;
pub mod include;
#[cfg(test)]
mod include_tests;
mod ini;
mod options;
pub mod units;
mod values;

use std::path::Path;

pub(crate) use emit::command_line_options as emit_command_line_options;
pub use emit::to_job_file;
pub use error::{FioError, Location, OptionError};
pub use options::{
    find_option, fio_default_workload, FioJob, Located, OptionSpec, FIO_DEFAULT_RANDSEED, OPTIONS,
};
pub use values::{CpusPolicy, EngineMapping, Ioengine, IOENGINES, MEM_POLICIES};

use ini::Section;

/// How to read a job file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParseOptions {
    /// Skip unsupported options with a warning instead of failing.
    pub ignore_unknown: bool,
    /// Run only these sections (fio's `--section`); empty: all.
    pub sections: Vec<String>,
}

/// A parsed job file: its jobs in file order.
#[derive(Debug, Clone, PartialEq)]
pub struct JobFile {
    /// The file (or `<command line>`).
    pub origin: String,
    /// Job sections, in order.
    pub jobs: Vec<FioJob>,
    /// Warnings: skipped options, engine substitutions.
    pub warnings: Vec<String>,
}

/// Reads a job file and its includes.
pub fn load_job_file(path: &Path, opts: &ParseOptions) -> Result<JobFile, FioError> {
    let sections = ini::read_job_file(path)?;
    build(path.display().to_string(), sections, Vec::new(), opts)
}

/// Reads job-file text; `origin` names it in errors and anchors includes.
pub fn parse_job_text(text: &str, origin: &Path, opts: &ParseOptions) -> Result<JobFile, FioError> {
    parse_job_text_with(text, origin, opts, &include::FsResolver)
}

/// [`parse_job_text`] with its includes read through `resolver`.
pub fn parse_job_text_with(
    text: &str,
    origin: &Path,
    opts: &ParseOptions,
    resolver: &dyn include::IncludeResolver,
) -> Result<JobFile, FioError> {
    let sections = ini::read_job_text(text, origin, resolver)?;
    build(origin.display().to_string(), sections, Vec::new(), opts)
}

/// Reads fio's command-line form (a leading `fio` is skipped).
pub fn parse_command_line(args: &[String], opts: &ParseOptions) -> Result<JobFile, FioError> {
    let needs_value = |k: &str| find_option(k).is_some_and(|o| o.takes_value);
    let (sections, warnings) = ini::read_command_line(args, needs_value)?;
    build("<command line>".into(), sections, warnings, opts)
}

fn build(
    origin: String,
    sections: Vec<Section>,
    mut warnings: Vec<String>,
    opts: &ParseOptions,
) -> Result<JobFile, FioError> {
    for wanted in &opts.sections {
        if !sections.iter().any(|s| &s.name == wanted) {
            let known: Vec<&str> = sections.iter().map(|s| s.name.as_str()).collect();
            return Err(FioError::UnknownSection {
                origin,
                name: wanted.clone(),
                known: known.join(", "),
            });
        }
    }
    let mut jobs = Vec::new();
    for s in sections {
        if !opts.sections.is_empty() && !opts.sections.contains(&s.name) {
            continue;
        }
        jobs.push(build_job(s, opts, &mut warnings)?);
    }
    if jobs.is_empty() {
        return Err(FioError::NoJobs { origin });
    }
    check_references(&jobs)?;
    // `[global]` options are applied to every job; say each thing once.
    let mut seen = std::collections::BTreeSet::new();
    warnings.retain(|w| seen.insert(w.clone()));
    Ok(JobFile {
        origin,
        jobs,
        warnings,
    })
}

fn build_job(
    s: Section,
    opts: &ParseOptions,
    warnings: &mut Vec<String>,
) -> Result<FioJob, FioError> {
    let mut job = FioJob::new(&s.name, s.at.clone());
    for e in s.inherited.iter().chain(s.entries.iter()) {
        let Some(spec) = find_option(&e.key) else {
            if opts.ignore_unknown {
                warnings.push(format!(
                    "{}: option `{}` ignored (not supported by numio)",
                    e.at, e.key
                ));
                continue;
            }
            return Err(FioError::UnknownOption {
                at: e.at.clone(),
                key: e.key.clone(),
                hint: options::suggestion(&e.key),
            });
        };
        (spec.apply)(&mut job, e, warnings).map_err(|reason| FioError::BadValue {
            at: e.at.clone(),
            key: e.key.clone(),
            value: e.value.clone().unwrap_or_default(),
            reason: Box::new(reason),
        })?;
    }
    // As fio's fixup_options: a non-uniform distribution has no random map.
    if !job.workload.random_distribution.uses_random_map() {
        job.workload.norandommap = true;
    }
    if job.filename.is_none() {
        return Err(FioError::MissingFilename {
            at: s.at,
            job: job.name,
        });
    }
    Ok(job)
}

/// Every `wait_for` must name a job defined before it.
fn check_references(jobs: &[FioJob]) -> Result<(), FioError> {
    for (i, job) in jobs.iter().enumerate() {
        let Some(w) = &job.wait_for else { continue };
        if !jobs[..i].iter().any(|j| j.name == w.value) {
            let known: Vec<&str> = jobs[..i].iter().map(|j| j.name.as_str()).collect();
            return Err(FioError::UnknownJobReference {
                at: w.at.clone(),
                name: w.value.clone(),
                known: if known.is_empty() {
                    "none".into()
                } else {
                    known.join(", ")
                },
            });
        }
    }
    Ok(())
}

/// The CPU fio's `cpus_allowed_policy=split` gives the job with global
/// number `index` (0-based) from `set`: the `index mod |set|`-th CPU in
/// ascending order. `None` for an empty set.
pub fn fio_split(set: &[CpuId], index: usize) -> Option<CpuId> {
    let mut sorted = set.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    if sorted.is_empty() {
        return None;
    }
    Some(sorted[index % sorted.len()])
}

use topology::CpuId;
