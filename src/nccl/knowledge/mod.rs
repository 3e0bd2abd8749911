//! What `explain` knows, as data, each fact with its source: NCCL releases (the first
//! release for each GPU architecture, known bugs with the versions affected and fixed),
//! ibverbs completion statuses and vendor syndromes, CUDA error numbers, and every
//! finding's texts (cause, fix, what would be wrong, the lines that show it). The TOML
//! files beside this one are built into the binary and read once.

use std::sync::OnceLock;

use serde::Deserialize;

use super::NcclVersion;

/// A GPU architecture and the first NCCL release with kernels for it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Arch {
    /// Compute capability x 10 (sm_90 is 90).
    pub sm: u32,
    pub name: String,
    /// Product names as logs print them (`H100` in `NVIDIA H100 80GB HBM3`).
    pub gpus: Vec<String>,
    pub first_nccl: Option<String>,
    pub first_cuda: Option<String>,
    /// NCCL's support for it is recent (Blackwell and later): where a text shows no NCCL
    /// version, a fault inside NCCL on it reads first as a fault of an early release.
    #[serde(default)]
    pub recent: bool,
    pub source: String,
    pub note: Option<String>,
}

/// A known NCCL bug: what a log shows, the versions affected, the fix.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bug {
    pub id: String,
    /// First version known affected.
    pub first: Option<String>,
    /// First version with the fix.
    pub fixed: Option<String>,
    /// Substrings a log shows, every one of them (case-insensitive).
    pub shows: Vec<String>,
    /// The substrings alone name the bug, whatever the version (or where it is not in
    /// the log); otherwise the log's version must be in range.
    #[serde(default)]
    pub alone: bool,
    /// With no version in the text, say it as a possibility (its lines fit the
    /// versions it affects, such as a wording older releases print).
    #[serde(default)]
    pub hedge: bool,
    /// The lines also fit another cause (a peer that exited): said as a possibility,
    /// at any affected version.
    #[serde(default)]
    pub maybe: bool,
    /// GPUs the bug is on: a text naming one at an affected version shows the bug
    /// without its lines.
    #[serde(default)]
    pub gpus: Vec<String>,
    /// The bug is on its GPUs only: a text that names none of them does not show it,
    /// whatever its lines (a release's known issue of one platform).
    #[serde(default)]
    pub needs_gpu: bool,
    /// Variables the run sets, every one (any value): the bug is in the code they turn
    /// on, so a text whose run does not set them does not show it, whatever its lines.
    #[serde(default)]
    pub set: Vec<String>,
    pub what: String,
    pub fix: String,
    pub source: String,
}

/// An ibverbs work-completion status (`enum ibv_wc_status`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WcStatus {
    pub code: u32,
    pub name: String,
    /// `ibv_wc_status_str`'s text.
    pub text: String,
    pub means: String,
    pub usual: String,
    /// It follows another failure (a flush after the queue pair went to error) rather
    /// than causing one.
    pub consequence: bool,
    pub source: String,
    pub source_means: Option<String>,
    pub source_usual: Option<String>,
}

/// A vendor syndrome (`vendor err N`, decimal as NCCL prints it).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VendorErr {
    pub vendor: String,
    pub code: u32,
    pub means: String,
    pub source: String,
}

/// A CUDA error number: the runtime's `cudaError_t` or the driver's `CUresult`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CudaError {
    pub code: u32,
    pub name: String,
    /// The text `cudaGetErrorString` (or `cuGetErrorString`) prints.
    pub text: String,
    pub means: String,
    pub usual: String,
    pub source: String,
    pub source_text: Option<String>,
    pub source_usual: Option<String>,
    /// What to do about it, where one step fits most cases (its source in `source_usual`).
    #[serde(default)]
    pub fix: Option<String>,
    #[serde(default)]
    pub text_verified: Option<bool>,
    /// A driver-API `CUresult` rather than a runtime `cudaError_t`.
    pub driver: bool,
}

/// The texts of one finding, and for a finding matched on lines alone, the lines.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FindingText {
    pub id: String,
    /// `error`, `warning` or `info`.
    pub severity: String,
    pub title: String,
    /// Empty where the rule composes the cause itself.
    #[serde(default)]
    pub cause: String,
    #[serde(default)]
    pub fix: String,
    /// What would be wrong to do here, and why.
    #[serde(default)]
    pub avoid: String,
    /// Where the cause and fix come from.
    pub source: Vec<String>,
    /// For a finding matched on lines: any one of these alternatives, each a list of
    /// substrings one line holds all of (case-insensitive). Empty: a rule in code.
    #[serde(default)]
    pub lines: Vec<Vec<String>>,
    /// Substrings anywhere in the text that turn a line match off.
    #[serde(default)]
    pub unless: Vec<String>,
    /// Substrings anywhere in the text, one of which a line match needs (empty: none).
    #[serde(default)]
    pub with: Vec<String>,
    /// The fewest matching lines that raise it.
    #[serde(default = "one")]
    pub min_lines: usize,
    /// Findings this one follows from when they are present too (it is then their
    /// consequence, not a cause).
    #[serde(default)]
    pub follows: Vec<String>,
}

fn one() -> usize {
    1
}

/// Everything, read once.
#[derive(Debug)]
pub struct Knowledge {
    pub arch: Vec<Arch>,
    pub bugs: Vec<Bug>,
    pub wc_status: Vec<WcStatus>,
    pub vendor_err: Vec<VendorErr>,
    pub cuda: Vec<CudaError>,
    pub findings: Vec<FindingText>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Releases {
    arch: Vec<Arch>,
    bug: Vec<Bug>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Ibverbs {
    wc_status: Vec<WcStatus>,
    vendor_err: Vec<VendorErr>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Cuda {
    error: Vec<CudaError>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Findings {
    finding: Vec<FindingText>,
}

const RELEASES: &str = include_str!("releases.toml");
const IBVERBS: &str = include_str!("ibverbs.toml");
const CUDA: &str = include_str!("cuda.toml");
const FINDINGS: &str = include_str!("findings.toml");

fn parse<T: serde::de::DeserializeOwned>(name: &str, text: &str) -> T {
    // Built into the binary and read by a unit test: a parse error is a bug here.
    toml::from_str(text).unwrap_or_else(|e| panic!("src/nccl/knowledge/{name}: {e}"))
}

/// The knowledge, parsed on first use.
pub fn get() -> &'static Knowledge {
    static K: OnceLock<Knowledge> = OnceLock::new();
    K.get_or_init(|| {
        let r: Releases = parse("releases.toml", RELEASES);
        let i: Ibverbs = parse("ibverbs.toml", IBVERBS);
        let c: Cuda = parse("cuda.toml", CUDA);
        let f: Findings = parse("findings.toml", FINDINGS);
        Knowledge {
            arch: r.arch,
            bugs: r.bug,
            wc_status: i.wc_status,
            vendor_err: i.vendor_err,
            cuda: c.error,
            findings: f.finding,
        }
    })
}

/// The texts of finding `id`. Every finding `explain` raises has an entry (a unit test
/// checks each id it uses).
pub fn finding(id: &str) -> &'static FindingText {
    get()
        .findings
        .iter()
        .find(|f| f.id == id)
        .unwrap_or_else(|| panic!("no finding `{id}` in src/nccl/knowledge/findings.toml"))
}

/// Whether `name` appears in `text` as a whole word: not followed or preceded by a
/// letter or digit (`A10` is not in `A100`).
fn has_word(text: &str, name: &str) -> bool {
    let (t, n) = (text.to_ascii_lowercase(), name.to_ascii_lowercase());
    let alnum = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    t.match_indices(&n).any(|(at, _)| {
        !alnum(t[..at].chars().next_back()) && !alnum(t[at + n.len()..].chars().next())
    })
}

/// The architecture of a GPU named in `text` (`NVIDIA GeForce RTX 5090`), by the
/// longest product name it holds.
pub fn arch_of_gpu(text: &str) -> Option<&'static Arch> {
    get()
        .arch
        .iter()
        .flat_map(|a| a.gpus.iter().map(move |g| (a, g)))
        .filter(|(_, g)| has_word(text, g))
        .max_by_key(|(_, g)| g.len())
        .map(|(a, _)| a)
}

pub fn arch_of_sm(sm: u32) -> Option<&'static Arch> {
    get().arch.iter().find(|a| a.sm == sm)
}

/// How many minor series, from an architecture's first, are its early releases. Fixes
/// for a new architecture land in the releases after its first: Hopper's Tree/LL128
/// corruption was fixed in 2.18.3, three series after 2.15.1; sm_120 faults in 2.26.2.
pub const EARLY_SERIES: u32 = 4;

/// The first NCCL release for `arch`, or for the architecture of its major version that
/// NCCL added by release (sm_103 runs the sm_100 code).
pub fn first_release(arch: &Arch) -> Option<NcclVersion> {
    let first = |a: &Arch| a.first_nccl.as_deref().and_then(NcclVersion::parse);
    first(arch).or_else(|| {
        get()
            .arch
            .iter()
            .filter(|a| a.sm / 10 == arch.sm / 10 && a.sm < arch.sm)
            .find_map(first)
    })
}

/// Whether `version` is one of `arch`'s early releases: its first minor series or one
/// of the [`EARLY_SERIES`] - 1 after it.
pub fn is_early_release(arch: &Arch, version: NcclVersion) -> bool {
    first_release(arch).is_some_and(|f| {
        version >= f && version.major == f.major && version.minor < f.minor + EARLY_SERIES
    })
}

/// Whether `version` lies in `[first, fixed)` (an open end is no bound).
pub fn affected(bug: &Bug, version: NcclVersion) -> bool {
    let parse = |v: &Option<String>| v.as_deref().and_then(NcclVersion::parse);
    parse(&bug.first).is_none_or(|f| version >= f) && parse(&bug.fixed).is_none_or(|f| version < f)
}

/// The known bugs `text` shows (every substring of one, case-insensitive, or one of its
/// GPUs at an affected version) at `version`, in a run where `is_set` says each of its
/// variables is set: a bug whose substrings do not name it alone needs the version in
/// its range. With no version, a `hedge` bug comes back as a possibility (`true`).
pub fn bugs_shown(
    text: &str,
    version: Option<NcclVersion>,
    is_set: &dyn Fn(&str) -> bool,
) -> Vec<(&'static Bug, bool)> {
    let t = text.to_ascii_lowercase();
    get()
        .bugs
        .iter()
        .filter(|b| b.set.iter().all(|name| is_set(name)))
        .filter(|b| {
            let lines = b.shows.iter().all(|s| t.contains(&s.to_ascii_lowercase()));
            let named = b.gpus.iter().any(|g| t.contains(&g.to_ascii_lowercase()));
            let gpu = version.is_some_and(|v| affected(b, v)) && named;
            (lines && (named || !b.needs_gpu)) || gpu
        })
        .filter_map(|b| match version {
            Some(v) => affected(b, v).then_some((b, b.maybe)),
            None if b.alone => Some((b, false)),
            None => (b.hedge || b.maybe).then_some((b, true)),
        })
        .collect()
}

pub fn wc_status(code: u32) -> Option<&'static WcStatus> {
    get().wc_status.iter().find(|s| s.code == code)
}

/// A status by its enum name (`IBV_WC_RETRY_EXC_ERR`, as NCCL 2.28 and later print it).
pub fn wc_status_named(name: &str) -> Option<&'static WcStatus> {
    get().wc_status.iter().find(|s| s.name == name)
}

pub fn vendor_err(code: u32) -> Option<&'static VendorErr> {
    get().vendor_err.iter().find(|v| v.code == code)
}

/// The CUDA error a failure line names: by its number (a driver `CUresult` where
/// `driver`, else a runtime `cudaError_t`), else by its text.
pub fn cuda_error(code: Option<u32>, text: &str, driver: bool) -> Option<&'static CudaError> {
    let all = &get().cuda;
    if let Some(c) = code {
        if let Some(e) = all
            .iter()
            .find(|e| e.code == c && e.driver == driver)
            .or_else(|| all.iter().find(|e| e.code == c))
        {
            return Some(e);
        }
    }
    let t = text.to_ascii_lowercase();
    all.iter()
        .filter(|e| t.contains(&e.text.to_ascii_lowercase()))
        .max_by_key(|e| (e.text.len(), !e.driver))
}

#[cfg(test)]
mod tests;
