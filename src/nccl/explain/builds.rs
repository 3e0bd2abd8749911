//! The NCCL builds a paste names: pip wheels (`nvidia-nccl-cu12 2.18.1`), rpm and deb
//! packages (`libnccl-2.9.9-1+cuda11.3`, `libnccl2 2.18.3-1+cuda12.2`) and library files
//! (`libnccl.so.2.9.9`). Two builds on one machine is a common cause of an NCCL that
//! fails at start.

use super::finding::{Finding, FindingKind};
use super::pasted::{Pasted, PastedLine};
use crate::nccl::NcclVersion;

/// One build: its version, the CUDA it was built for where the name says, and the name
/// as written.
#[derive(Debug, PartialEq)]
struct Build {
    version: String,
    cuda: Option<String>,
    written: String,
}

fn is_version(s: &str) -> bool {
    let parts: Vec<&str> = s.split('.').collect();
    parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

/// `2.9.9-1+cuda11.3.x86_64` -> (`2.9.9`, `cuda11.3`).
fn version_and_cuda(s: &str) -> Option<(String, Option<String>)> {
    let (version, rest) = s.split_once('-').unwrap_or((s, ""));
    if !is_version(version) {
        return None;
    }
    let cuda = rest.split_once("+cuda").map(|(_, c)| {
        let digits: String = c
            .chars()
            .take_while(|ch| ch.is_ascii_digit() || *ch == '.')
            .collect();
        format!("cuda{}", digits.trim_end_matches('.'))
    });
    Some((version.to_string(), cuda))
}

/// A package's build from its version field (`2.9.9-1+cuda11.3`), written after `name`.
fn package(name: &str, spec: &str) -> Option<Build> {
    let (version, cuda) = version_and_cuda(spec)?;
    let suffix = cuda.as_ref().map(|c| format!("+{c}")).unwrap_or_default();
    Some(Build {
        written: format!("{name}{version}{suffix}"),
        version,
        cuda,
    })
}

/// The builds one line names.
fn builds_of(line: &PastedLine) -> Vec<Build> {
    // A pip upgrade names the build it replaces, a resolver the one it wants.
    let replaced = [
        "uninstall",
        "existing installation",
        "requires",
        "but you have",
    ];
    if replaced.iter().any(|r| line.lower.contains(r)) {
        return Vec::new();
    }
    let words: Vec<&str> = line.text.split_whitespace().collect();
    let mut out = Vec::new();
    for (i, word) in words.iter().enumerate() {
        let base = word.rsplit('/').next().unwrap_or(word);
        // pip list: `nvidia-nccl-cu12  2.18.1`; pip freeze: `nvidia-nccl-cu12==2.18.1`.
        if let Some(rest) = base
            .strip_prefix("nvidia-nccl-cu")
            .or_else(|| base.strip_prefix("nvidia_nccl_cu"))
        {
            let (cu, version) = match rest.split_once("==").or_else(|| rest.split_once('-')) {
                Some((cu, v)) => (cu, v.to_string()),
                None => (rest, words.get(i + 1).copied().unwrap_or("").to_string()),
            };
            if is_version(&version) {
                out.push(Build {
                    version: version.clone(),
                    cuda: Some(format!("cu{cu}")),
                    written: format!("nvidia-nccl-cu{cu} {version}"),
                });
            }
            continue;
        }
        // dpkg -l: `libnccl2  2.18.3-1+cuda12.2` (and libnccl-dev).
        if base == "libnccl2" || base == "libnccl-dev" {
            out.extend(words.get(i + 1).and_then(|v| package("libnccl2 ", v)));
            continue;
        }
        // rpm: `libnccl-2.9.9-1+cuda11.3.x86_64` (and -devel-, -static-).
        if let Some(rest) = base.strip_prefix("libnccl-") {
            let rest = rest
                .strip_prefix("devel-")
                .or_else(|| rest.strip_prefix("static-"))
                .unwrap_or(rest);
            out.extend(package("libnccl-", rest));
            continue;
        }
        // A library file: `libnccl.so.2.9.9`.
        if let Some(version) = base.strip_prefix("libnccl.so.") {
            if is_version(version) {
                out.push(Build {
                    version: version.to_string(),
                    cuda: None,
                    written: format!("libnccl.so.{version}"),
                });
            }
        }
    }
    out
}

/// Two or more NCCL builds in the paste (a library file counts with the package of its
/// version); the version the log shows loaded, where it does.
pub(super) fn nccl_builds_rule(pasted: &Pasted, loaded: Option<NcclVersion>) -> Option<Finding> {
    let mut builds: Vec<(Build, &PastedLine)> = Vec::new();
    // `strings FILE | grep "NCCL version"`: the banners under it, up to the next prompt,
    // are that file's builds.
    let mut inspected: Option<&str> = None;
    for line in &pasted.lines {
        let t = line.text.trim();
        if line.lower.contains("strings ") {
            inspected = line
                .text
                .split_whitespace()
                .skip_while(|w| *w != "strings")
                .skip(1)
                .find(|w| !w.starts_with('-'));
        } else if t.starts_with('$') || t.starts_with("# ") {
            inspected = None;
        }
        let banner = inspected.and_then(|f| {
            let rest = t.strip_prefix("NCCL version ")?;
            let (version, cuda) = rest.split_once("+cuda")?;
            is_version(version).then(|| Build {
                version: version.to_string(),
                cuda: Some(format!("cuda{}", cuda.trim())),
                written: format!("NCCL version {} in {f}", rest.trim()),
            })
        });
        for b in builds_of(line).into_iter().chain(banner) {
            let same = builds
                .iter()
                .any(|(k, _)| k.version == b.version && (k.cuda == b.cuda || b.cuda.is_none()));
            if !same {
                // A package after its library file names the build better.
                builds.retain(|(k, _)| !(k.version == b.version && k.cuda.is_none()));
                builds.push((b, line));
            }
        }
    }
    if builds.len() < 2 {
        return None;
    }
    let loaded = loaded
        .map(|v| format!("; the log shows NCCL {v} loaded"))
        .unwrap_or_default();
    let names: Vec<&str> = builds.iter().map(|(b, _)| b.written.as_str()).collect();
    // One version built for two CUDAs (`+cudaX.Y`, not a wheel's `cu12`), the older
    // before 12.8: it may lack the code of a Blackwell GPU.
    let cuda_of = |b: &Build| -> Option<(u32, u32)> {
        let (major, minor) = b.cuda.as_deref()?.strip_prefix("cuda")?.split_once('.')?;
        Some((major.parse().ok()?, minor.parse().ok()?))
    };
    let same_version = builds.iter().any(|(a, _)| {
        builds.iter().any(|(b, _)| {
            a.version == b.version
                && matches!((cuda_of(a), cuda_of(b)), (Some(x), Some(y)) if x < y && x < (12, 8))
        })
    });
    let mut f = Finding::new(
        FindingKind::NcclBuilds,
        builds
            .iter()
            .take(4)
            .map(|(_, l)| pasted.evidence(l))
            .collect(),
        &[
            ("count", builds.len().to_string()),
            ("builds", names.join(", ")),
            ("loaded", loaded),
        ],
    );
    if same_version {
        f.cause.push_str(
            " Builds of one version for two CUDAs carry different GPU code: on a GPU newer \
             than the older build's CUDA knows (Blackwell needs CUDA 12.8), that build has no \
             kernels for it, and the driver JIT-compiles them at start (tens of seconds) unless \
             its JIT cache keeps them.",
        );
    }
    Some(f)
}

#[cfg(test)]
mod tests {
    use super::super::pasted::Input;
    use super::*;

    fn builds(text: &str) -> Vec<String> {
        let pasted = Pasted::new(&[Input { name: "-", text }]);
        pasted
            .lines
            .iter()
            .flat_map(builds_of)
            .map(|b| b.written)
            .collect()
    }

    #[test]
    fn wheels_packages_and_library_files_are_read() {
        assert_eq!(
            builds("nvidia-nccl-cu11          2.14.3\nnvidia-nccl-cu12==2.18.1"),
            ["nvidia-nccl-cu11 2.14.3", "nvidia-nccl-cu12 2.18.1"]
        );
        assert_eq!(
            builds(
                "libnccl-devel-2.9.9-1+cuda11.3.x86_64\n/var/r/libnccl-2.8.3-1+cuda10.1.x86_64.rpm"
            ),
            ["libnccl-2.9.9+cuda11.3", "libnccl-2.8.3+cuda10.1"]
        );
        assert_eq!(
            builds("ii  libnccl2  2.18.3-1+cuda12.2  amd64\nii  libnccl-dev  2.18.3-1+cuda12.2  amd64\n/usr/lib64/libnccl.so.2.9.9\n/usr/lib64/libnccl.so.2"),
            ["libnccl2 2.18.3+cuda12.2", "libnccl2 2.18.3+cuda12.2", "libnccl.so.2.9.9"]
        );
    }

    #[test]
    fn one_build_named_twice_is_not_two() {
        let text = "libnccl-2.9.9-1+cuda11.3.x86_64\nlibnccl-devel-2.9.9-1+cuda11.3.x86_64\n\
                    /usr/lib64/libnccl.so.2.9.9";
        let pasted = Pasted::new(&[Input { name: "-", text }]);
        assert!(nccl_builds_rule(&pasted, None).is_none());
        let text = "nvidia-nccl-cu11 2.14.3\nnvidia-nccl-cu12 2.18.1";
        let pasted = Pasted::new(&[Input { name: "-", text }]);
        let f = nccl_builds_rule(&pasted, NcclVersion::parse("2.14.3")).unwrap();
        assert!(f
            .cause
            .contains("nvidia-nccl-cu11 2.14.3, nvidia-nccl-cu12 2.18.1"));
        assert!(f.cause.contains("NCCL 2.14.3 loaded"), "{}", f.cause);
    }
}
