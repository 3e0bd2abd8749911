//! The layering of `src/`, checked (the architecture map in `src/lib.rs` states it).
//!
//! The import graph is read from the sources, file by file: every path that starts
//! with `crate::`, `super::`, `self::` or the name of a child module, in `use` items,
//! in code and in macro arguments, is resolved to the file that defines what it names
//! (re-exports followed). On that graph:
//!
//! - no import cycle between files;
//! - imports between top-level modules only point down the layers of `LAYERS`, and
//!   modules side by side in one layer do not import each other; the few exceptions
//!   are listed in `ALLOWED` with the reason they must stay;
//! - every top-level module has its place in `LAYERS`.
//!
//! And on the files: no `#[path]` split (a module that outgrows a file becomes a
//! folder), none over 600 lines, and each opens with a `//!` paragraph.
//!
//! `cargo test --test architecture -- --nocapture` also prints the module-level
//! graph.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

/// The layers, top to bottom. A module imports only modules of layers below its own;
/// modules in one layer are side by side and do not import each other.
const LAYERS: &[&[&str]] = &[
    &["main"],
    &["cmd"],
    &["cli"],
    &["cluster"],
    &["sweep"],
    &["report"],
    &["plot"],
    &["backend", "doctor", "analysis", "import"],
    &["export", "machine", "workload"],
    &["model"],
    &["config"],
    &["nccl"],
    &["stats"],
    &["ops"],
    &["units", "parallel", "test_inputs"],
];

/// Imports against the layers that must stay: (importing file, imported module path,
/// why). At most three.
const ALLOWED: &[(&str, &str, &str)] = &[];

const MAX_LINES: usize = 600;

/// One file of `src/` and the module it is.
struct Source {
    file: PathBuf,
    /// `analysis::history` for src/analysis/history.rs; `[]` for lib.rs.
    module: Vec<String>,
    /// Names of the items it defines at its top level.
    defines: BTreeSet<String>,
    /// `pub use` re-exports: the name it makes visible -> the absolute path.
    reexports: BTreeMap<String, Vec<String>>,
    /// Absolute paths of `pub use x::*` globs.
    globs: Vec<Vec<String>>,
    /// Paths it names: (absolute path, line, from test code).
    refs: Vec<(Vec<String>, usize, bool)>,
    /// Child modules declared with `#[path = ...]`.
    path_attrs: Vec<usize>,
    lines: usize,
    has_module_doc: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Edge {
    from: usize,
    to: usize,
    line: usize,
    test: bool,
}

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

type Allowed<'a> = &'a [(&'a str, &'a str, &'a str)];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module a file is, from its place under src/ (`main` for the binary's root).
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).expect("a file under src/");
    let mut parts: Vec<String> = rel
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().map(String::as_str) == Some("mod") {
        parts.pop();
    }
    if parts == ["lib"] {
        parts.clear();
    }
    parts
}

/// Every path of a `use` tree, with the prefix it sits under.
fn use_paths(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<(Vec<String>, String)>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_paths(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let name = n.ident.to_string();
            let mut path = prefix.clone();
            if name != "self" {
                path.push(name.clone());
            }
            let visible = if name == "self" {
                prefix.last().cloned().unwrap_or_default()
            } else {
                name
            };
            out.push((path, visible));
        }
        syn::UseTree::Rename(r) => {
            let mut path = prefix.clone();
            if r.ident != "self" {
                path.push(r.ident.to_string());
            }
            out.push((path, r.rename.to_string()));
        }
        syn::UseTree::Glob(_) => out.push((prefix.clone(), "*".to_string())),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                use_paths(t, prefix, out);
            }
        }
    }
}

fn is_test_attr(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        let path = a.path();
        if path.is_ident("test") {
            return true;
        }
        if path.is_ident("cfg") {
            if let syn::Meta::List(list) = &a.meta {
                return list.tokens.to_string() == "test";
            }
        }
        false
    })
}

/// Walks one file: the module path at each point (inline modules included), whether
/// inside test code, and every path that may name something of this crate.
struct Walker<'a> {
    /// The module path of the file, then inline modules.
    scope: Vec<String>,
    /// How much of `scope` is the file's own module.
    file_scope_len: usize,
    /// Inline and file child modules of each scope (to read `child::x` paths).
    children: &'a BTreeMap<Vec<String>, BTreeSet<String>>,
    test_depth: usize,
    binary: bool,
    refs: Vec<(Vec<String>, usize, bool)>,
    reexports: BTreeMap<String, Vec<String>>,
    globs: Vec<Vec<String>>,
    path_attrs: Vec<usize>,
    /// Inline modules at the file's top level and below, with their scope.
    inline: BTreeMap<Vec<String>, BTreeSet<String>>,
}

impl Walker<'_> {
    /// The absolute path (from the crate root) a path written in the current scope
    /// names, when it can name an item of this crate.
    fn absolute(&self, segments: &[String]) -> Option<Vec<String>> {
        let first = segments.first()?;
        let (mut base, rest): (Vec<String>, &[String]) = match first.as_str() {
            "crate" if !self.binary => (Vec::new(), &segments[1..]),
            "nccl_bench" if self.binary => (Vec::new(), &segments[1..]),
            "self" => (self.scope.clone(), &segments[1..]),
            "super" => {
                let mut base = self.scope.clone();
                let mut i = 0;
                while segments.get(i).map(String::as_str) == Some("super") {
                    base.pop()?;
                    i += 1;
                }
                (base, &segments[i..])
            }
            name => {
                let child = |scope: &Vec<String>| {
                    self.children.get(scope).is_some_and(|c| c.contains(name))
                        || self.inline.get(scope).is_some_and(|c| c.contains(name))
                };
                if !self.binary && child(&self.scope) {
                    (self.scope.clone(), segments)
                } else {
                    return None;
                }
            }
        };
        base.extend(rest.iter().cloned());
        Some(base)
    }

    fn line_of(span: proc_macro2::Span) -> usize {
        span.start().line
    }

    fn add(&mut self, segments: &[String], line: usize) {
        if let Some(abs) = self.absolute(segments) {
            self.refs.push((abs, line, self.test_depth > 0));
        }
    }

    /// `crate::a::b` (and `super::`, `nccl_bench::`) inside macro arguments.
    fn scan_tokens(&mut self, tokens: TokenStream) {
        let trees: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < trees.len() {
            match &trees[i] {
                TokenTree::Group(g) => self.scan_tokens(g.stream()),
                TokenTree::Ident(id)
                    if ["crate", "super", "nccl_bench"].contains(&id.to_string().as_str()) =>
                {
                    let line = Self::line_of(id.span());
                    let mut segments = vec![id.to_string()];
                    let mut j = i + 1;
                    // `::` is two `:` puncts, then an identifier.
                    while j + 2 < trees.len() + 1 {
                        let colons = matches!((&trees.get(j), &trees.get(j + 1)),
                            (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b))) if a.as_char() == ':' && b.as_char() == ':');
                        match (colons, trees.get(j + 2)) {
                            (true, Some(TokenTree::Ident(next))) => {
                                segments.push(next.to_string());
                                j += 3;
                            }
                            _ => break,
                        }
                    }
                    if segments.len() > 1 {
                        self.add(&segments, line);
                    }
                    i = j;
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
    }
}

impl<'ast> Visit<'ast> for Walker<'_> {
    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        let mut paths = Vec::new();
        use_paths(&item.tree, &mut Vec::new(), &mut paths);
        let line = Self::line_of(item.use_token.span);
        let reexport = !matches!(item.vis, syn::Visibility::Inherited)
            && self.scope.len() == self.file_scope_len;
        for (path, visible) in paths {
            let Some(abs) = self.absolute(&path) else {
                continue;
            };
            if reexport {
                if visible == "*" {
                    self.globs.push(abs);
                } else {
                    self.reexports.insert(visible, abs);
                }
            } else {
                self.refs
                    .push((abs, line, self.test_depth > 0 || is_test_attr(&item.attrs)));
            }
        }
    }

    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        let test = is_test_attr(&item.attrs);
        if item.attrs.iter().any(|a| a.path().is_ident("path")) {
            self.path_attrs.push(Self::line_of(item.mod_token.span));
        }
        if let Some((_, items)) = &item.content {
            self.inline
                .entry(self.scope.clone())
                .or_default()
                .insert(item.ident.to_string());
            self.scope.push(item.ident.to_string());
            self.test_depth += usize::from(test);
            for it in items {
                self.visit_item(it);
            }
            self.test_depth -= usize::from(test);
            self.scope.pop();
        }
    }

    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        let test = is_test_attr(&item.attrs);
        self.test_depth += usize::from(test);
        syn::visit::visit_item_fn(self, item);
        self.test_depth -= usize::from(test);
    }

    fn visit_item_impl(&mut self, item: &'ast syn::ItemImpl) {
        let test = is_test_attr(&item.attrs);
        self.test_depth += usize::from(test);
        syn::visit::visit_item_impl(self, item);
        self.test_depth -= usize::from(test);
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        if segments.len() > 1 {
            let line = path
                .segments
                .first()
                .map(|s| Self::line_of(s.ident.span()))
                .unwrap_or(0);
            self.add(&segments, line);
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        syn::visit::visit_macro(self, mac);
        self.scan_tokens(mac.tokens.clone());
    }
}

struct Tree {
    src: PathBuf,
    sources: Vec<Source>,
    by_module: BTreeMap<Vec<String>, usize>,
}

fn read_tree(src: &Path) -> Tree {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let modules: Vec<Vec<String>> = files.iter().map(|f| module_of(src, f)).collect();
    let mut children: BTreeMap<Vec<String>, BTreeSet<String>> = BTreeMap::new();
    for m in &modules {
        if let Some((last, parent)) = m.split_last() {
            if m != &["main"] {
                children
                    .entry(parent.to_vec())
                    .or_default()
                    .insert(last.clone());
            }
        }
    }
    let mut sources = Vec::new();
    for (file, module) in files.iter().zip(&modules) {
        let text = std::fs::read_to_string(file).expect("read a source file");
        let parsed = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let binary = module == &["main"];
        let mut walker = Walker {
            scope: if binary { Vec::new() } else { module.clone() },
            file_scope_len: if binary { 0 } else { module.len() },
            children: &children,
            test_depth: 0,
            binary,
            refs: Vec::new(),
            reexports: BTreeMap::new(),
            globs: Vec::new(),
            path_attrs: Vec::new(),
            inline: BTreeMap::new(),
        };
        walker.visit_file(&parsed);
        let defines = parsed.items.iter().filter_map(item_name).collect();
        sources.push(Source {
            file: file.clone(),
            module: module.clone(),
            defines,
            reexports: walker.reexports,
            globs: walker.globs,
            refs: walker.refs,
            path_attrs: walker.path_attrs,
            lines: text.lines().count(),
            has_module_doc: text.trim_start().starts_with("//!"),
        });
    }
    let by_module = sources
        .iter()
        .enumerate()
        .filter(|(_, s)| s.module != ["main"])
        .map(|(i, s)| (s.module.clone(), i))
        .collect();
    Tree {
        src: src.to_path_buf(),
        sources,
        by_module,
    }
}

fn item_name(item: &syn::Item) -> Option<String> {
    let id = match item {
        syn::Item::Const(i) => &i.ident,
        syn::Item::Enum(i) => &i.ident,
        syn::Item::Fn(i) => &i.sig.ident,
        syn::Item::Macro(i) => i.ident.as_ref()?,
        syn::Item::Mod(i) => &i.ident,
        syn::Item::Static(i) => &i.ident,
        syn::Item::Struct(i) => &i.ident,
        syn::Item::Trait(i) => &i.ident,
        syn::Item::Type(i) => &i.ident,
        syn::Item::Union(i) => &i.ident,
        _ => return None,
    };
    Some(id.to_string())
}

impl Tree {
    /// The file that defines what `path` names: the deepest file module on the path,
    /// then through its re-exports.
    fn resolve(&self, path: &[String], depth: usize) -> Option<usize> {
        let (idx, rest) = (0..=path.len())
            .rev()
            .find_map(|n| self.by_module.get(&path[..n]).map(|&i| (i, &path[n..])))?;
        let Some(name) = rest.first() else {
            return Some(idx);
        };
        let source = &self.sources[idx];
        if depth > 8 || source.defines.contains(name) {
            return Some(idx);
        }
        if let Some(target) = source.reexports.get(name) {
            let mut full = target.clone();
            full.extend(rest[1..].iter().cloned());
            return self.resolve(&full, depth + 1).or(Some(idx));
        }
        for glob in &source.globs {
            let mut full = glob.clone();
            full.extend(rest.iter().cloned());
            if let Some(found) = self.resolve(&full, depth + 1) {
                if found != idx && self.sources[found].defines.contains(name) {
                    return Some(found);
                }
            }
        }
        Some(idx)
    }

    fn edges(&self) -> Vec<Edge> {
        let mut edges = BTreeSet::new();
        for (from, s) in self.sources.iter().enumerate() {
            for (path, line, test) in &s.refs {
                if let Some(to) = self.resolve(path, 0) {
                    if to != from {
                        edges.insert(Edge {
                            from,
                            to,
                            line: *line,
                            test: *test,
                        });
                    }
                }
            }
        }
        edges.into_iter().collect()
    }

    fn name(&self, i: usize) -> String {
        let s = &self.sources[i];
        s.file
            .strip_prefix(self.src.parent().expect("the crate directory"))
            .unwrap_or(&s.file)
            .display()
            .to_string()
    }

    /// The top-level module of a file (`main` for the binary, `lib` for lib.rs).
    fn top(&self, i: usize) -> String {
        self.sources[i]
            .module
            .first()
            .cloned()
            .unwrap_or_else(|| "lib".to_string())
    }
}

/// The strongly connected components with more than one file (Tarjan).
fn cycles(n: usize, edges: &[Edge]) -> Vec<Vec<usize>> {
    let mut adj = vec![Vec::new(); n];
    for e in edges {
        adj[e.from].push(e.to);
    }
    struct State {
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn connect(v: usize, adj: &[Vec<usize>], s: &mut State) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in &adj[v] {
            match s.index[w] {
                None => {
                    connect(w, adj, s);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on_stack[w] => s.low[v] = s.low[v].min(iw),
                _ => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut component = Vec::new();
            loop {
                let w = s.stack.pop().expect("v is on the stack");
                s.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.out.push(component);
            }
        }
    }
    let mut s = State {
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if s.index[v].is_none() {
            connect(v, &adj, &mut s);
        }
    }
    s.out
}

/// Cycles, and imports against `layers` not excused by `allowed`; and the
/// module-level graph (importing module, imported module) -> file edges.
fn layering_problems(
    tree: &Tree,
    layers: &[&[&str]],
    allowed: Allowed,
) -> (Vec<String>, BTreeMap<(String, String), usize>) {
    let edges = tree.edges();
    let mut problems = Vec::new();
    let layer_of = |module: &str| layers.iter().position(|l| l.contains(&module));

    for component in cycles(tree.sources.len(), &edges) {
        let inside: Vec<String> = edges
            .iter()
            .filter(|e| component.contains(&e.from) && component.contains(&e.to))
            .map(|e| {
                let test = if e.test { " (test code)" } else { "" };
                format!(
                    "    {}:{} -> {}{test}",
                    tree.name(e.from),
                    e.line,
                    tree.name(e.to)
                )
            })
            .collect();
        problems.push(format!(
            "import cycle through {} files:\n{}",
            component.len(),
            inside.join("\n")
        ));
    }

    let tops: BTreeSet<String> = (0..tree.sources.len())
        .map(|i| tree.top(i))
        .filter(|t| t != "lib")
        .collect();
    for t in &tops {
        if layer_of(t).is_none() {
            problems.push(format!(
                "module `{t}` has no place in LAYERS (tests/it/architecture.rs) nor in the architecture map of src/lib.rs"
            ));
        }
    }
    for layer in layers {
        for m in *layer {
            if !tops.contains(*m) {
                problems.push(format!("LAYERS names `{m}`, which is not a module of src/"));
            }
        }
    }

    let mut used = vec![false; allowed.len()];
    let mut graph: BTreeMap<(String, String), usize> = BTreeMap::new();
    for e in &edges {
        let (a, b) = (tree.top(e.from), tree.top(e.to));
        if a == b || a == "lib" || b == "lib" {
            continue;
        }
        *graph.entry((a.clone(), b.clone())).or_default() += 1;
        let (Some(la), Some(lb)) = (layer_of(&a), layer_of(&b)) else {
            continue;
        };
        if la < lb {
            continue;
        }
        let to_module = tree.sources[e.to].module.join("::");
        if let Some(k) = allowed.iter().position(|(file, module, _)| {
            tree.name(e.from) == *file && to_module.starts_with(module)
        }) {
            used[k] = true;
            continue;
        }
        let how = if la == lb {
            "side by side with it"
        } else {
            "above it"
        };
        problems.push(format!(
            "{}:{} imports {} (`{b}` is {how}: `{a}` may only import the layers below it){}",
            tree.name(e.from),
            e.line,
            tree.name(e.to),
            if e.test { " [test code]" } else { "" }
        ));
    }
    if allowed.len() > 3 {
        problems.push(format!(
            "{} exceptions in ALLOWED: at most three",
            allowed.len()
        ));
    }
    for (k, (file, module, _)) in allowed.iter().enumerate() {
        if !used[k] {
            problems.push(format!(
                "ALLOWED lists {file} -> {module}, which is no longer imported: remove it"
            ));
        }
    }
    (problems, graph)
}

#[test]
fn the_import_graph_has_no_cycle_and_points_down_the_layers() {
    let _machine = crate::common::shared();
    let tree = read_tree(&src_dir());
    let (problems, graph) = layering_problems(&tree, LAYERS, ALLOWED);
    println!("module-level imports (file edges):");
    for ((a, b), n) in &graph {
        println!("  {a:>12} -> {b:<12} {n}");
    }
    assert!(
        problems.is_empty(),
        "{} problems in the layering of src/:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn files_are_folders_not_path_splits_short_and_documented() {
    let _machine = crate::common::shared();
    let tree = read_tree(&src_dir());
    let mut problems = Vec::new();
    for (i, s) in tree.sources.iter().enumerate() {
        for line in &s.path_attrs {
            problems.push(format!(
                "{}:{line}: a #[path] module: make the module a folder",
                tree.name(i)
            ));
        }
        if s.lines > MAX_LINES {
            problems.push(format!(
                "{}: {} lines (at most {MAX_LINES}: split it by responsibility)",
                tree.name(i),
                s.lines
            ));
        }
        if !s.has_module_doc {
            problems.push(format!(
                "{}: no //! paragraph saying what the file owns",
                tree.name(i)
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Writes a small crate: `high` above `mid` above `low`, with `low` importing `mid`
/// through a re-export and `mid` naming `high` inside a macro: two imports up the
/// layers and a cycle of three files.
fn sample_crate(dir: &Path) -> PathBuf {
    let src = dir.join("src");
    let files = [
        ("lib.rs", "//! root\npub mod high;\npub mod low;\npub mod mid;\n"),
        ("low.rs", "//! low\nuse crate::mid::Thing;\npub fn f(_: Thing) {}\n"),
        ("mid/mod.rs", "//! mid\nmod inner;\npub use inner::Thing;\n"),
        (
            "mid/inner.rs",
            "//! inner\npub struct Thing;\npub fn g() -> String {\n    format!(\"{}\", crate::high::VALUE)\n}\n",
        ),
        (
            "high.rs",
            "//! high\nuse super::low;\npub const VALUE: u8 = 1;\npub fn h() { low::f(crate::mid::Thing) }\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n",
        ),
    ];
    for (name, text) in files {
        let path = src.join(name);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }
    src
}

#[test]
fn the_checker_finds_cycles_and_upward_imports_through_reexports_and_macros() {
    let _machine = crate::common::shared();
    let dir = tempfile::tempdir().expect("a temp dir");
    let tree = read_tree(&sample_crate(dir.path()));
    let layers: &[&[&str]] = &[&["high"], &["mid"], &["low"]];
    let (problems, graph) = layering_problems(&tree, layers, &[]);
    let all = problems.join("\n");
    assert!(
        all.contains("src/low.rs:2 imports src/mid/inner.rs"),
        "{all}"
    );
    assert!(
        all.contains("src/mid/inner.rs:4 imports src/high.rs"),
        "{all}"
    );
    assert!(all.contains("import cycle through 3 files"), "{all}");
    assert_eq!(problems.len(), 3, "{all}");
    // high -> low and high -> mid point down; re-exports and `use super::*` in a
    // test module are not edges.
    assert_eq!(graph.get(&("high".into(), "low".into())), Some(&1));
    assert_eq!(graph.get(&("high".into(), "mid".into())), Some(&1));
    assert!(!graph.keys().any(|(a, _)| a == "lib"));

    // An allowed import is excused, and one that is not imported is stale.
    let allowed: Allowed = &[
        ("src/low.rs", "mid", "why"),
        ("src/high.rs", "nowhere", "why"),
    ];
    let (problems, _) = layering_problems(&tree, layers, allowed);
    let all = problems.join("\n");
    assert!(!all.contains("src/low.rs:2 imports"), "{all}");
    assert!(
        all.contains("ALLOWED lists src/high.rs -> nowhere"),
        "{all}"
    );

    // Turned upside down, high's two imports are the ones pointing up.
    let layers: &[&[&str]] = &[&["low"], &["mid"], &["high"]];
    let (problems, _) = layering_problems(&tree, layers, &[]);
    let up: Vec<&String> = problems
        .iter()
        .filter(|p| p.starts_with("src/high.rs"))
        .collect();
    assert_eq!((up.len(), problems.len()), (2, 3), "{problems:?}");
    let layers: &[&[&str]] = &[&["high", "low"], &["mid"]];
    let (problems, _) = layering_problems(&tree, layers, &[]);
    assert!(
        problems.iter().any(|p| p.contains("side by side")),
        "{problems:?}"
    );
}

#[test]
fn the_architecture_map_names_every_module_and_layer() {
    let _machine = crate::common::shared();
    let tree = read_tree(&src_dir());
    let lib = std::fs::read_to_string(src_dir().join("lib.rs")).expect("src/lib.rs");
    let map: String = lib
        .lines()
        .filter_map(|l| l.strip_prefix("//!"))
        .collect::<Vec<_>>()
        .join("\n");
    let missing: BTreeSet<String> = (0..tree.sources.len())
        .map(|i| tree.top(i))
        .filter(|t| t != "lib" && t != "main" && t != "test_inputs")
        .filter(|t| !map.contains(&format!("`{t}`")) && !map.contains(&format!("{t}/")))
        .collect();
    assert!(
        missing.is_empty(),
        "modules the architecture map in src/lib.rs does not mention: {missing:?}"
    );
}
