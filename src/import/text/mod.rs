//! The table that nccl-tests (`all_reduce_perf` and its siblings) prints on stdout, found by its header line
//! (`#  size  count  type  redop  root  time  algbw  busbw  #wrong ...`), in every layout
//! nccl-tests has printed: the 2017 one (`bytes N type op ... res`, time in ms), the
//! 2019-2022 one (`redop` but no `root`, an `error` column), the current one (`root`,
//! `#wrong`, `N/A` without validation), `-I` per-iteration columns (`i_min i_max i_p99
//! i_cv%`), `-C` (`cputime`) and `-S` (a trailing timestamp). Everything around the
//! table is skipped except what describes the run (NCCL and nccl-tests versions, rank
//! lines, `NCCL_*` variables, the command, the binary that nccl-tests' banner and the
//! command lines name). Every binary's rows are read: the ones that do not reduce
//! print `none` as their redop (sendrecv the op it was given), the unrooted ones root
//! `-1`, and before 2022 alltoall left its redop blank. Lines may carry launcher prefixes:
//! mpirun `--tag-output` (`[1,0]<stdout>:`), MPICH `-prepend-rank` (`[0] `) and
//! `srun -l` (` 0: `); only the lines of the first prefix that prints the table header
//! are read as the table, so ranks that all print the same table yield each row once.
//! A row printed again with the same (size, type, redop, root), as with `-N` repeats,
//! is kept once: the first. Only the first table is read.

use super::binary::{binary_name, named_binary, Mention};
use super::run::{
    is_nccl_var, version_from_code, Format, ImportError, ImportedRank, ImportedRun, NO_PATH,
};
use crate::ops::collective::Collective;

mod lines;
mod table;

use lines::{is_nccl_log, split_prefix, Line};
use table::read_table;

/// Reads the table nccl-tests prints on stdout (see the module documentation).
pub fn parse_text(text: &str) -> Result<ImportedRun, ImportError> {
    let lines: Vec<Line> = text
        .lines()
        .enumerate()
        .map(|(i, raw)| {
            let (key, body) = split_prefix(raw);
            Line {
                no: i + 1,
                key,
                body,
            }
        })
        .collect();
    let mut meta = Meta::default();
    for l in &lines {
        meta.scan(l.no, l.body.trim());
    }
    let commands = commands(&lines);
    let command = commands.first().map(|(_, cmd)| cmd.clone());
    if let Some(cmd) = &command {
        for word in cmd.split_whitespace() {
            meta.add_assignments(word);
        }
    }
    let table = read_table(&lines)?.ok_or_else(|| ImportError::NoTable {
        path_hint: NO_PATH.to_string(),
    })?;
    let mut mentions = meta.banners;
    mentions.extend(commands.iter().filter_map(|(no, cmd)| {
        let binary = cmd.split_whitespace().find_map(binary_name)?;
        Some((*no, binary.to_string()))
    }));
    mentions.sort_by_key(|(no, _)| *no);
    let mentions: Vec<Mention> = mentions
        .into_iter()
        .map(|(no, binary)| Mention {
            at: format!("line {no}"),
            binary,
        })
        .collect();
    let named = named_binary(&mentions)?;
    Ok(ImportedRun {
        rows: table.rows,
        nranks: meta.max_rank.map(|r| r + 1).or(meta.info_nranks),
        nccl_version: meta
            .nccl_version
            .or_else(|| meta.library_code.map(version_from_code)),
        nccl_tests_version: meta.tests_version,
        env: meta.env,
        command,
        collective: named.as_ref().map_or(Collective::AllReduce, |n| n.0),
        binary: named.map(|n| n.1),
        format: Format::Text,
        per_iteration: table.schema.per_iter,
        cpu_time: table.schema.cpu_time,
        avg_busbw_gbps: table.avg,
        out_of_bounds: table.oob,
        ranks: meta.ranks,
        started_at: table.first_stamp,
    })
}

/// `Rank 0 Group 0 Pid 291005 on node005 device 0 [0x18] NVIDIA H100 80GB HBM3`, in
/// words (after the `#`).
fn rank_line(words: &[&str]) -> Option<ImportedRank> {
    let after = |key: &str| {
        let i = words.iter().position(|w| *w == key)?;
        words.get(i + 1).copied()
    };
    let device_at = words.iter().position(|w| *w == "device")?;
    let bus = words.get(device_at + 2)?;
    let bus_id = bus.strip_prefix('[')?.strip_suffix(']')?;
    Some(ImportedRank {
        rank: after("Rank")?.parse().ok()?,
        pid: after("Pid")?.parse().ok()?,
        host: after("on")?.to_string(),
        device: after("device")?.parse().ok()?,
        bus_id: bus_id.to_string(),
        gpu: words.get(device_at + 3..)?.join(" "),
    })
}

#[derive(Default)]
struct Meta {
    nccl_version: Option<String>,
    library_code: Option<u64>,
    tests_version: Option<String>,
    max_rank: Option<u32>,
    ranks: Vec<ImportedRank>,
    info_nranks: Option<u32>,
    env: Vec<(String, String)>,
    /// (line, binary) of nccl-tests' `# Collective test starting: X` and
    /// `# Collective test concluded: X` banners.
    banners: Vec<(usize, String)>,
}

impl Meta {
    fn scan(&mut self, no: usize, t: &str) {
        if let Some(rest) = t.strip_prefix('#') {
            let words: Vec<&str> = rest.split_whitespace().collect();
            match words.as_slice() {
                ["Collective", "test", "starting:" | "concluded:", program, ..] => {
                    self.banners.push((no, program.to_string()));
                }
                ["nccl-tests", "version", version, more @ ..] => {
                    self.tests_version
                        .get_or_insert_with(|| version.to_string());
                    let code = more.iter().find_map(|w| w.strip_prefix("nccl-library="));
                    if let Some(code) = code.and_then(|c| c.parse().ok()) {
                        self.library_code.get_or_insert(code);
                    }
                }
                ["Rank", rank, ..] if words.contains(&"device") => {
                    if let Ok(rank) = rank.parse::<u32>() {
                        self.max_rank = Some(self.max_rank.map_or(rank, |m| m.max(rank)));
                    }
                    if let Some(r) = rank_line(&words) {
                        if !self.ranks.iter().any(|k| k.rank == r.rank) {
                            let at = self.ranks.partition_point(|k| k.rank < r.rank);
                            self.ranks.insert(at, r);
                        }
                    }
                }
                _ => {}
            }
            return;
        }
        // "... NCCL INFO NCCL version 2.19.3+cuda12.3" (or without the log prefix)
        if let Some(i) = t
            .find("NCCL version ")
            .filter(|_| self.nccl_version.is_none())
        {
            let v = t[i + "NCCL version ".len()..].split_whitespace().next();
            if let Some(v) = v.filter(|v| v.starts_with(|c: char| c.is_ascii_digit())) {
                self.nccl_version = Some(v.to_string());
            }
        }
        if is_nccl_log(t) {
            let mut words = t.split_whitespace();
            if words.any(|w| w == "nranks" || w == "nRanks") {
                if let Some(n) = words.next().and_then(|w| w.parse::<u32>().ok()) {
                    self.info_nranks = Some(self.info_nranks.map_or(n, |m| m.max(n)));
                }
            }
            const SET: &str = " set by environment to ";
            if let Some(i) = t.find(SET) {
                let name = t[..i].split_whitespace().last().unwrap_or("");
                let value = t[i + SET.len()..].trim();
                // NCCL prints integer parameters with a trailing period: "to 1."
                let value = match value.strip_suffix('.') {
                    Some(v) if v.parse::<i64>().is_ok() => v,
                    _ => value,
                };
                if is_nccl_var(name) {
                    self.add_env(name, value);
                }
            }
            return;
        }
        if let Some(rest) = t.strip_prefix("export ") {
            for word in rest.split_whitespace() {
                self.add_assignments(word);
            }
        }
    }

    /// `NCCL_X=1`, also inside `--export=ALL,NCCL_X=1` or quotes. A part without `=`
    /// continues the value before it: `NCCL_IB_HCA=mlx5_0,mlx5_1` is one list.
    fn add_assignments(&mut self, word: &str) {
        // The variable this word added last, whose value a list may continue.
        let mut open: Option<usize> = None;
        for part in word.split(',') {
            let part = part.trim_matches(|c| c == '"' || c == '\'' || c == '`');
            match part.split_once('=') {
                Some((name, value)) => {
                    open = None;
                    let known = self.env.iter().any(|(n, _)| n == name);
                    if is_nccl_var(name) && !known {
                        let value = value.trim_matches(|c| c == '"' || c == '\'');
                        self.add_env(name, value);
                        open = Some(self.env.len() - 1);
                    }
                }
                None if part.is_empty() => {}
                None => {
                    if let Some(i) = open {
                        let value = &mut self.env[i].1;
                        value.push(',');
                        value.push_str(part);
                    }
                }
            }
        }
    }

    fn add_env(&mut self, name: &str, value: &str) {
        if !self.env.iter().any(|(n, _)| n == name) {
            self.env.push((name.to_string(), value.to_string()));
        }
    }
}

/// Words of `s` with their byte offsets.
fn words(s: &str) -> impl Iterator<Item = (usize, &str)> {
    s.split_whitespace()
        .map(move |w| (w.as_ptr() as usize - s.as_ptr() as usize, w))
}

const LAUNCHERS: &[&str] = &[
    "mpirun", "mpiexec", "orterun", "srun", "jsrun", "aprun", "env", "sudo", "time", "nohup",
    "numactl", "taskset", "timeout", "stdbuf", "nsys", "ncu", "docker", "kubectl",
];

fn is_perf_binary(word: &str) -> bool {
    binary_name(word).is_some()
}

/// Every shell command line (joined over `\` continuations) that runs a `*_perf`
/// binary, without a shell prompt or prose before it, with the line it starts on.
fn commands(lines: &[Line]) -> Vec<(usize, String)> {
    let mut found: Vec<(usize, String)> = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let t = l.body.trim();
        if t.starts_with('#') || is_nccl_log(t) || !t.split_whitespace().any(is_perf_binary) {
            continue;
        }
        let continued = |j: usize| lines[j].body.trim_end().ends_with('\\');
        let mut start = i;
        while start > 0 && continued(start - 1) {
            start -= 1;
        }
        let mut end = i;
        while end + 1 < lines.len() && continued(end) {
            end += 1;
        }
        let joined = lines[start..=end]
            .iter()
            .map(|l| l.body.trim().trim_end_matches('\\').trim())
            .collect::<Vec<_>>()
            .join(" ");
        if let Some(cmd) = command_in(&joined) {
            let no = lines[start].no;
            if found.last().is_none_or(|(last, _)| *last != no) {
                found.push((no, cmd));
            }
        }
    }
    found
}

fn command_in(line: &str) -> Option<String> {
    let (pos, program) = words(line).find(|(_, w)| is_perf_binary(w))?;
    let head = &line[..pos];
    let after_prompt = ["$ ", "# ", "% ", "> "]
        .iter()
        .filter_map(|p| head.rfind(p).map(|i| i + p.len()))
        .max()
        .unwrap_or(0);
    let mut cmd = line[after_prompt..].trim_start();
    let first = cmd.split_whitespace().next().unwrap_or("");
    let first_base = first.rsplit('/').next().unwrap_or(first);
    let launched = LAUNCHERS.contains(&first_base) || is_perf_binary(first);
    if !launched && !first.contains('=') {
        // prose before the program ("We ran ./build/all_reduce_perf ...")
        if !program.contains('/') && !program.starts_with('`') {
            return None;
        }
        cmd = &line[pos..];
    }
    if let Some(quoted) = cmd.strip_prefix('`') {
        cmd = quoted.split('`').next().unwrap_or(quoted);
    }
    let cmd = cmd.trim();
    (!cmd.is_empty()).then(|| cmd.to_string())
}
