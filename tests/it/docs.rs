//! The documentation cannot drift from the program: `docs/reference/` is every command's
//! `--help` as the clap definitions render it (a test fails when the committed text
//! differs; `NCCL_BENCH_UPDATE_REFERENCE=1` writes it again), every `nccl-bench` command
//! line shown in README.md and docs/ parses with the real command line, and every
//! command's help ends with an example.

use std::path::{Path, PathBuf};

use clap::{CommandFactory, Parser};
use nccl_bench::cli::Cli;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The help clap prints for `nccl-bench` (`None`) or one command, at a fixed width.
fn help(name: Option<&str>) -> String {
    let mut cmd = Cli::command().term_width(100);
    cmd.build();
    let cmd = match name {
        Some(n) => cmd.find_subcommand_mut(n).unwrap().clone(),
        None => cmd,
    };
    cmd.clone().render_long_help().to_string()
}

/// The commands as the CLI lists them (not `help`, not hidden ones).
fn commands() -> Vec<(String, String)> {
    Cli::command()
        .get_subcommands()
        .filter(|c| !c.is_hide_set())
        .map(|c| {
            let about = c.get_about().map(|a| a.to_string()).unwrap_or_default();
            (c.get_name().to_string(), about)
        })
        .collect()
}

/// The reference as it should be: file name -> text.
fn reference() -> Vec<(String, String)> {
    let page = |title: &str, text: &str| {
        format!(
            "# {title}\n\n<!-- Generated from the clap definitions by tests/it/docs.rs \
             (NCCL_BENCH_UPDATE_REFERENCE=1); do not edit. -->\n\n```text\n{}\n```\n",
            text.trim_end()
        )
    };
    let mut files = vec![("nccl-bench.md".to_string(), page("nccl-bench", &help(None)))];
    let mut index = String::from(
        "# Command reference\n\n<!-- Generated from the clap definitions by tests/it/docs.rs \
         (NCCL_BENCH_UPDATE_REFERENCE=1); do not edit. -->\n\nEach page is the command's \
         `--help`, as this version of nccl-bench prints it.\n\n- [nccl-bench](nccl-bench.md): \
         the commands and global help\n",
    );
    for (name, about) in commands() {
        index.push_str(&format!("- [{name}]({name}.md): {about}\n"));
        files.push((
            format!("{name}.md"),
            page(&format!("nccl-bench {name}"), &help(Some(&name))),
        ));
    }
    files.push(("README.md".to_string(), index));
    files
}

#[test]
fn the_reference_is_what_the_cli_prints() {
    let dir = root().join("docs/reference");
    let want = reference();
    if std::env::var_os("NCCL_BENCH_UPDATE_REFERENCE").is_some() {
        std::fs::create_dir_all(&dir).unwrap();
        for e in std::fs::read_dir(&dir).unwrap() {
            std::fs::remove_file(e.unwrap().path()).unwrap();
        }
        for (name, text) in &want {
            std::fs::write(dir.join(name), text).unwrap();
        }
    }
    let mut stale = Vec::new();
    for (name, text) in &want {
        match std::fs::read_to_string(dir.join(name)) {
            Ok(have) if &have == text => {}
            Ok(_) => stale.push(format!("{name} differs")),
            Err(e) => stale.push(format!("{name}: {e}")),
        }
    }
    let names: Vec<&str> = want.iter().map(|(n, _)| n.as_str()).collect();
    for e in std::fs::read_dir(&dir).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().to_string();
        if !names.contains(&name.as_str()) {
            stale.push(format!("{name} is no command's page"));
        }
    }
    assert!(
        stale.is_empty(),
        "docs/reference is out of date ({}): run NCCL_BENCH_UPDATE_REFERENCE=1 scripts/test.sh \
         --test it -- the_reference_is",
        stale.join("; ")
    );
}

#[test]
fn every_commands_help_ends_with_an_example() {
    let mut without = Vec::new();
    for (name, _) in commands() {
        let text = help(Some(&name));
        let tail: Vec<&str> = text.trim_end().lines().rev().take(12).collect();
        let example = tail
            .iter()
            .any(|l| l.contains(&format!("nccl-bench {name}")));
        if !example {
            without.push(name);
        }
    }
    assert!(
        without.is_empty(),
        "these commands' --help ends without an example: {without:?}"
    );
}

/// Words of a shell line (quotes and backslash escapes as the shell has them), up to an
/// unquoted comment or a `|`, `;`, `&&`, `>` that ends the command.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, '\\') => {
                if let Some(n) = chars.next() {
                    word.push(n);
                    in_word = true;
                }
            }
            (None, '#') if !in_word => break,
            (None, '|' | ';' | '>' | '&') => break,
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// The markdown files of README.md and docs/.
fn markdown_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, into: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, into);
            } else if p.extension().is_some_and(|x| x == "md") {
                into.push(p);
            }
        }
    }
    let mut files = vec![root().join("README.md")];
    walk(&root().join("docs"), &mut files);
    files.sort();
    files
}

/// Every `nccl-bench ...` (or `cargo run --release -- ...`) line in a code block of the
/// README and the guide, other than a `text` block (what a command printed): (file, line
/// number, the arguments after the program).
fn shown_command_lines() -> Vec<(String, usize, Vec<String>)> {
    let mut found = Vec::new();
    for file in markdown_files() {
        if file.starts_with(root().join("docs/reference")) {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let (mut fenced, mut output) = (false, false);
        for (i, line) in text.lines().enumerate() {
            if let Some(info) = line.trim_start().strip_prefix("```") {
                fenced = !fenced;
                output = fenced && info.trim() == "text";
                continue;
            }
            if !fenced || output {
                continue;
            }
            let words = shell_words(line.trim());
            let at = words.iter().position(|w| w == "nccl-bench").or_else(|| {
                words
                    .windows(4)
                    .position(|w| w == ["cargo", "run", "--release", "--"])
                    .map(|p| p + 3)
            });
            if let Some(at) = at {
                let name = file.strip_prefix(root()).unwrap().display().to_string();
                found.push((name, i + 1, words[at + 1..].to_vec()));
            }
        }
    }
    found
}

/// The example lines of every command's help (`  nccl-bench sweep --gpus 8    what it
/// does`): the command before its description, which three spaces or more set apart.
fn help_examples() -> Vec<(String, usize, Vec<String>)> {
    let mut found = Vec::new();
    for (page, text) in reference() {
        for (i, line) in text.lines().enumerate() {
            // Examples are indented; the description's prose is not.
            if !line.starts_with("  ") || !line.trim_start().starts_with("nccl-bench ") {
                continue;
            }
            let line = line.trim();
            let command = line.split("   ").next().unwrap_or(line);
            let words = shell_words(command);
            found.push((format!("--help of {page}"), i + 1, words[1..].to_vec()));
        }
    }
    found
}

#[test]
fn every_command_line_in_the_readme_and_the_guide_parses() {
    let mut lines = shown_command_lines();
    let examples = help_examples();
    assert!(examples.len() > 20, "only {} help examples", examples.len());
    lines.extend(examples);
    assert!(lines.len() > 50, "only {} command lines found", lines.len());
    let mut wrong = Vec::new();
    for (file, number, args) in &lines {
        let argv = std::iter::once("nccl-bench".to_string()).chain(args.iter().cloned());
        if let Err(e) = Cli::try_parse_from(argv) {
            use clap::error::ErrorKind::{DisplayHelp, DisplayVersion};
            if !matches!(e.kind(), DisplayHelp | DisplayVersion) {
                let first = e.to_string().lines().next().unwrap_or_default().to_string();
                wrong.push(format!(
                    "{file}:{number}: nccl-bench {}: {first}",
                    args.join(" ")
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn shell_words_split_as_the_shell_does() {
    assert_eq!(
        shell_words(r#"nccl-bench sweep --label "a b" -n 5  # a comment"#),
        ["nccl-bench", "sweep", "--label", "a b", "-n", "5"]
    );
    assert_eq!(
        shell_words("nccl-bench check r --baseline b.json | tee out"),
        ["nccl-bench", "check", "r", "--baseline", "b.json"]
    );
    assert_eq!(shell_words("echo a\\ b 'c#d'"), ["echo", "a b", "c#d"]);
}

/// Every relative link of README.md and docs/ points at a file or folder that exists.
#[test]
fn every_link_of_the_readme_and_the_guide_resolves() {
    let mut broken = Vec::new();
    let mut links = 0;
    for file in markdown_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        let dir = file.parent().unwrap();
        for piece in text.split("](").skip(1) {
            let Some(target) = piece.split(')').next() else {
                continue;
            };
            let path = target.split('#').next().unwrap_or_default();
            let external = ["http://", "https://", "mailto:"]
                .iter()
                .any(|p| target.starts_with(p));
            if external || path.is_empty() || path.contains(char::is_whitespace) {
                continue;
            }
            links += 1;
            if !dir.join(path).exists() {
                let name = file.strip_prefix(root()).unwrap().display().to_string();
                broken.push(format!("{name}: {target}"));
            }
        }
    }
    assert!(links > 30, "only {links} links found");
    assert!(
        broken.is_empty(),
        "links to nothing:\n{}",
        broken.join("\n")
    );
}
