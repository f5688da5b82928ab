//! Job files and fio command lines into a `JobSet`.
//!
//! Precedence, as fio 3.33 does it (`init.c`: `parse_options` calls
//! `parse_cmd_line`, then `parse_jobs_ini` for each file; checked with real fio):
//! 1. The whole command line is read first (getopt permutes, so where a job
//!    file sits among the options does not matter). Options before the first
//!    `--name` change the defaults (`def_thread`); each `--name` starts a job
//!    from those defaults and the options after it belong to that job. Those
//!    jobs are added as they end, so command-line jobs come before any job
//!    file's jobs.
//! 2. The first job file starts from those defaults. Its `[global]` sections
//!    override them for the jobs that follow (a later `[global]` only changes
//!    later jobs), and a job section overrides everything before it.
//! 3. Every further job file starts again from fio's built-in defaults
//!    (`if (i && fill_def_thread())`): command-line globals do not reach it.
//!
//! JSON "global options" are the defaults' options as the last file left them.
//! Within a section fio sorts options by priority (`kb_base` first, `filename`
//! last, otherwise as written); on the command line they apply as written.
//! An option given twice keeps its first position with the last value, and
//! options written without a value (`time_based`) are not listed, as in fio.

use std::cmp::Reverse;
use std::path::Path;

use super::job::{JobError, JobSet, JobSpec, OptionSource, RwKind, ZoneMode};
use super::options::{self, Class, OptionInfo};

const COMMAND_LINE: &str = "command line";
/// Nesting limit for `include`, so an include cycle is an error, not a hang.
const MAX_INCLUDE_DEPTH: usize = 16;

/// `args`: the fio-style options from the command line, in order, already
/// stripped of zonelab's own flags. `files`: (path, contents) of job files in
/// the order given. Returns the jobs in fio's order.
pub fn parse_run(args: &[String], files: &[(String, String)]) -> Result<JobSet, JobError> {
    let cli = parse_command_line(args)?;
    let mut jobs = cli.jobs;
    let mut global_options = cli.defaults.options.clone();
    for (index, (path, text)) in files.iter().enumerate() {
        let start = if index == 0 { cli.defaults.clone() } else { Defaults::fio() };
        let (file_jobs, defaults) = parse_file(path, text, start)?;
        jobs.extend(file_jobs);
        global_options = defaults.options;
    }
    if jobs.is_empty() {
        return Err(located(COMMAND_LINE, None, "no jobs defined: give a job file or --name=job".into()));
    }
    for job in &mut jobs {
        for name in &cli.ignored {
            note_ignored(job, name);
        }
    }
    Ok(JobSet { jobs, global_options })
}

/// One job file alone (used by tests and by parse_run).
pub fn parse_job_file(path: &str, text: &str) -> Result<JobSet, JobError> {
    let (jobs, defaults) = parse_file(path, text, Defaults::fio())?;
    if jobs.is_empty() {
        return Err(located(path, None, "no jobs defined: the file has no job section".into()));
    }
    Ok(JobSet { jobs, global_options: defaults.options })
}

/// fio's `def_thread`: what a new job starts from, and the options that made it.
#[derive(Clone)]
struct Defaults {
    spec: JobSpec,
    options: Vec<(String, String)>,
}

impl Defaults {
    fn fio() -> Self {
        Defaults { spec: JobSpec::new("", ""), options: Vec::new() }
    }

    fn new_job(&self, name: &str, origin: &str) -> JobSpec {
        let mut job = self.spec.clone();
        job.name = name.to_string();
        job.origin = origin.to_string();
        job.options.clear();
        job
    }
}

fn located(location: &str, option: Option<&str>, message: String) -> JobError {
    JobError { location: location.to_string(), option: option.map(str::to_string), message }
}

/// An option setting failed: (option as written, message).
type OptionError = (String, String);

/// Applies one option, written at `location`, to `spec`, recording it in `list` as fio's JSON does.
fn set_option(
    spec: &mut JobSpec,
    list: &mut Vec<(String, String)>,
    location: &str,
    name: &str,
    value: Option<&str>,
) -> Result<(), OptionError> {
    let info = lookup(name)?;
    let effective = options::apply(spec, &info, value).map_err(|e| (name.to_string(), e.to_string()))?;
    if !effective {
        note_ignored(spec, info.name);
    }
    let source = OptionSource {
        name: info.name,
        location: location.to_string(),
        value: value.map(str::trim).unwrap_or_default().to_string(),
    };
    match spec.sources.iter_mut().find(|s| s.name == info.name) {
        Some(entry) => *entry = source,
        None => spec.sources.push(source),
    }
    if let Some(value) = value.map(str::trim).filter(|v| !v.is_empty()) {
        match list.iter_mut().find(|(n, _)| n == info.name) {
            Some(entry) => entry.1 = value.to_string(),
            None => list.push((info.name.to_string(), value.to_string())),
        }
    }
    Ok(())
}

fn lookup(name: &str) -> Result<OptionInfo, OptionError> {
    options::lookup(name).ok_or_else(|| {
        let hint = options::suggest(name).map(|s| format!(" (did you mean '{s}'?)")).unwrap_or_default();
        (name.to_string(), format!("unknown option '{name}'{hint}"))
    })
}

fn note_ignored(spec: &mut JobSpec, name: &str) {
    if !spec.ignored.iter().any(|n| n == name) {
        spec.ignored.push(name.to_string());
    }
}

/// Checks that need the whole job (fio checks these after parsing too).
fn validate(job: &JobSpec) -> Result<(), JobError> {
    let writes = matches!(job.rw, RwKind::Write | RwKind::RandWrite | RwKind::ReadWrite | RwKind::RandRw);
    if job.zonemode == ZoneMode::Zbd && writes && !job.direct {
        // fio zbd.c: "Using direct I/O is mandatory for writing to ZBD drives".
        let message = "using direct I/O is mandatory for writing to ZBD drives: set direct=1 with zonemode=zbd";
        return Err(located(&job.origin, Some("direct"), message.into()));
    }
    Ok(())
}

// ---- command line --------------------------------------------------------

struct CommandLine {
    defaults: Defaults,
    jobs: Vec<JobSpec>,
    /// fio's own output/process switches (`--output-format`, `--eta`, ...).
    ignored: Vec<String>,
}

/// One `--option[=value]` with its value, if any, taken from the next argument.
fn next_option<'a>(args: &'a [String], index: &mut usize) -> Result<(&'a str, Option<&'a str>), JobError> {
    let arg = args[*index].as_str();
    *index += 1;
    // getopt_long_only: `-name` works like `--name`.
    let body = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-')).filter(|b| !b.is_empty());
    let Some(body) = body else {
        let message = format!("unexpected argument '{arg}': expected --option=value (job files are given separately)");
        return Err(located(COMMAND_LINE, None, message));
    };
    if let Some((name, value)) = body.split_once('=') {
        return Ok((name, Some(value)));
    }
    // getopt: options that need a value take the next argument (`--bs 4k`);
    // fio's FIO_OPT_STR_SET options (`--time_based`) never do.
    if !options::takes_value_on_cli(body).unwrap_or(false) {
        return Ok((body, None));
    }
    match args.get(*index) {
        Some(value) => {
            *index += 1;
            Ok((body, Some(value.as_str())))
        }
        None => Err(located(COMMAND_LINE, Some(body), format!("option '{body}' requires a value"))),
    }
}

fn parse_command_line(args: &[String]) -> Result<CommandLine, JobError> {
    let mut cli = CommandLine { defaults: Defaults::fio(), jobs: Vec::new(), ignored: Vec::new() };
    let mut current: Option<JobSpec> = None;
    let mut index = 0;
    while index < args.len() {
        let (name, value) = next_option(args, &mut index)?;
        if let Some((canonical, class, _)) = options::lookup_cli(name) {
            match class {
                Class::Unmodelled => {
                    return Err(located(COMMAND_LINE, Some(name), options::unmodelled(name).to_string()))
                }
                _ => cli.ignored.push(canonical.to_string()),
            }
            continue;
        }
        if name == "name" {
            cli.jobs.extend(current.take().map(finish_cli_job).transpose()?);
            current = Some(cli.defaults.new_job("", COMMAND_LINE));
        }
        let result = match current.as_mut() {
            Some(job) => {
                let mut list = std::mem::take(&mut job.options);
                let result = set_option(job, &mut list, COMMAND_LINE, name, value);
                job.options = list;
                result
            }
            None => set_option(&mut cli.defaults.spec, &mut cli.defaults.options, COMMAND_LINE, name, value),
        };
        result.map_err(|(option, message)| located(COMMAND_LINE, Some(&option), message))?;
    }
    cli.jobs.extend(current.map(finish_cli_job).transpose()?);
    Ok(cli)
}

fn finish_cli_job(mut job: JobSpec) -> Result<JobSpec, JobError> {
    job.fixup();
    validate(&job)?;
    Ok(job)
}

// ---- job files -----------------------------------------------------------

/// A job file line that matters: `file:line` and its text without comments.
struct Line {
    location: String,
    text: String,
}

/// Lines with comments stripped, `${VAR}` expanded and `include` files inlined.
fn read_lines(path: &str, text: &str, depth: usize, out: &mut Vec<Line>) -> Result<(), JobError> {
    for (number, raw) in text.lines().enumerate() {
        let location = format!("{path}:{}", number + 1);
        // fio's strip_blank_end cuts at the first ';' or '#', wherever it is.
        let text = raw.split([';', '#']).next().unwrap_or_default().trim();
        if text.is_empty() {
            continue;
        }
        let text = expand_env(text).map_err(|e| located(&location, None, e.to_string()))?;
        match text.strip_prefix("include").filter(|rest| rest.starts_with(char::is_whitespace)) {
            Some(included) => include(path, included.trim(), depth, &location, out)?,
            None => out.push(Line { location, text }),
        }
    }
    Ok(())
}

fn include(parent: &str, target: &str, depth: usize, location: &str, out: &mut Vec<Line>) -> Result<(), JobError> {
    if depth >= MAX_INCLUDE_DEPTH {
        return Err(located(location, None, format!("include nested more than {MAX_INCLUDE_DEPTH} deep (a cycle?)")));
    }
    // fio resolves a relative include against the including file's directory.
    let resolved = match Path::new(parent).parent() {
        Some(dir) if Path::new(target).is_relative() => dir.join(target),
        _ => Path::new(target).to_path_buf(),
    };
    let resolved = resolved.to_string_lossy().into_owned();
    let text = zonelab_sim::input::read_text(Path::new(&resolved), zonelab_sim::input::TEXT_BYTES_MAX)
        .map_err(|e| located(location, None, format!("cannot read include file: {e}")))?;
    if !looks_like_job_file(&text) {
        let message = format!("include file '{resolved}' is not a fio job file (its first line is neither a [section] nor a known option)");
        return Err(located(location, None, message));
    }
    read_lines(&resolved, &text, depth + 1, out)
}

/// Whether the first line that matters is a section header, an option fio
/// knows or an include: errors further on quote lines of the file, which
/// must not echo a file that is not a job file (`include /etc/shadow`).
fn looks_like_job_file(text: &str) -> bool {
    let first = text.lines().map(|l| l.split([';', '#']).next().unwrap_or_default().trim()).find(|l| !l.is_empty());
    let Some(first) = first else { return true };
    let name = first.split_once('=').map_or(first, |(name, _)| name).trim();
    first.starts_with('[')
        || first.starts_with("include ")
        || options::lookup(name).is_some()
        || options::lookup_cli(name).is_some()
}

/// A `${VAR}` in a job file line that cannot be expanded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum EnvError {
    /// `${` without the closing `}`; `line` is the whole line.
    #[error("unterminated '${{' in '{line}'")]
    Unterminated { line: String },
    /// The variable is not in the environment.
    #[error("environment variable '{name}' is not set")]
    Unset { name: String },
}

/// fio expands `${VAR}` from the environment in job files; an unset
/// variable is an error (fio would fail to parse the literal text).
fn expand_env(text: &str) -> Result<String, EnvError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find('}').ok_or_else(|| EnvError::Unterminated { line: text.to_string() })?;
        let name = &after[..end];
        let value = std::env::var(name).map_err(|_| EnvError::Unset { name: name.to_string() })?;
        out.push_str(&value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// An option line of a section: `key=value`, `key = value` or `key`.
struct Entry {
    location: String,
    name: String,
    value: Option<String>,
}

struct Section {
    name: String,
    location: String,
    entries: Vec<Entry>,
}

fn split_sections(lines: Vec<Line>) -> Result<Vec<Section>, JobError> {
    let mut sections: Vec<Section> = Vec::new();
    for line in lines {
        if line.text.starts_with('[') {
            let name = line.text.strip_prefix('[').and_then(|t| t.strip_suffix(']')).map(str::trim);
            let Some(name) = name.filter(|n| !n.is_empty() && !n.contains(['[', ']'])) else {
                let message = format!("malformed section header '{}': expected '[name]'", line.text);
                return Err(located(&line.location, None, message));
            };
            sections.push(Section { name: name.to_string(), location: line.location, entries: Vec::new() });
            continue;
        }
        let (name, value) = match line.text.split_once('=') {
            Some((name, value)) => (name.trim(), Some(value.trim().to_string())),
            None => (line.text.as_str(), None),
        };
        let Some(section) = sections.last_mut() else {
            let message = format!("option '{name}' is outside of a [section] (use [global] for defaults)");
            return Err(located(&line.location, Some(name), message));
        };
        if name.is_empty() {
            return Err(located(&line.location, None, format!("'{}' has no option name before '='", line.text)));
        }
        section.entries.push(Entry { location: line.location, name: name.to_string(), value });
    }
    Ok(sections)
}

/// Parses one file starting from `defaults`; returns its jobs and the defaults it leaves.
fn parse_file(path: &str, text: &str, mut defaults: Defaults) -> Result<(Vec<JobSpec>, Defaults), JobError> {
    let mut lines = Vec::new();
    read_lines(path, text, 0, &mut lines)?;
    let mut jobs = Vec::new();
    for mut section in split_sections(lines)? {
        // fio's sort_options: stable, by priority.
        section.entries.sort_by_key(|e| Reverse(options::lookup(&e.name).map_or(0, |info| info.prio())));
        if section.name == "global" {
            apply_entries(&mut defaults.spec, &mut defaults.options, &section.entries)?;
            continue;
        }
        let mut job = defaults.new_job(&section.name, &section.location);
        let mut list = Vec::new();
        apply_entries(&mut job, &mut list, &section.entries)?;
        job.options = list;
        job.fixup();
        validate(&job)?;
        jobs.push(job);
    }
    Ok((jobs, defaults))
}

fn apply_entries(spec: &mut JobSpec, list: &mut Vec<(String, String)>, entries: &[Entry]) -> Result<(), JobError> {
    for entry in entries {
        set_option(spec, list, &entry.location, &entry.name, entry.value.as_deref())
            .map_err(|(option, message)| located(&entry.location, Some(&option), message))?;
    }
    Ok(())
}
