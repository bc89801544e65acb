//! The drawing of src/'s imports, checked: no import circle between files (inside a folder
//! too, and between the folders of one folder), and no import that runs up a floor of
//! docs/architecture.md; and no source file over 900 lines.
//!
//! It reads the sources, not the compiler's view: the module tree from `mod` declarations,
//! then every `use` (`crate::`, `super::`, `self::`, a child module's name, `sieved::` in the
//! binary) and every path in code that starts with one of those or with a module a `use`
//! named. A path to an item a `mod.rs` re-exports is followed to the file that defines it, so
//! a folder's `mod.rs` that only declares and re-exports is no party to its children's
//! imports; a `pub use` counts as an import of its own file only where that file uses the
//! name too. The parent that declares a module (`mod x;`) does not import it by that.
//!
//! `SIEVED_IMPORT_GRAPH=1 cargo test --test architecture -- --nocapture` prints the drawing:
//! the floors with what each top-level module imports, then every file with the files it
//! imports.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The floors of docs/architecture.md, top first. A file may import its own top-level module
/// and any module on a lower floor; on a floor marked `apart` the modules never import each
/// other, on the others they may, as long as no circle forms (checked below).
const FLOORS: &[Floor] = &[
    Floor {
        // The binary, and the harnesses the fuzz targets run: they start things.
        modules: &["main", "fuzz_support"],
        apart: true,
    },
    Floor {
        // The server, and the driver of `sieved import-rdb` beside it.
        modules: &["server", "import_rdb"],
        apart: true,
    },
    Floor {
        modules: &["cmd", "persist", "observe"],
        apart: true,
    },
    Floor {
        modules: &[
            "store", "frontier", "filter", "json", "rdb", "acl", "lua", "protocol", "config",
        ],
        apart: false,
    },
    Floor {
        // Leaves any floor may use: the counting allocator, per-thread counters, systemd's
        // notification, the open-files limit; and lib.rs's version constants.
        modules: &["memory", "stripes", "notify", "open_files", "lib"],
        apart: false,
    },
];

struct Floor {
    modules: &'static [&'static str],
    apart: bool,
}

/// Circles tolerated while a renovation removes them, each written as the files of the circle,
/// sorted. Issue 32's renovation of `cmd/` removed the last ones; a circle listed here that is
/// gone fails too, so the list stays true.
const CIRCLES_BEING_REMOVED: &[&[&str]] = &[];

/// The most lines a source file may have: past it, a file holds more than one concern.
const MAX_LINES: usize = 900;

// ---------------------------------------------------------------------------------------------
// Reading the sources

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    /// `::`
    Path,
    Punct(char),
}

/// The tokens that matter for paths: identifiers, `::` and punctuation, with comments, string
/// and character literals and numbers left out.
fn tokens(text: &str) -> Vec<Token> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let ident_start = |c: char| c.is_alphabetic() || c == '_';
    let ident_char = |c: char| c.is_alphanumeric() || c == '_';
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c.is_whitespace() {
            i += 1;
        } else if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if let Some(end) = raw_string_end(&chars, i) {
            i = end;
        } else if c == '"' || (c == 'b' && next == Some('"')) {
            i += if c == 'b' { 2 } else { 1 };
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
        } else if c == '\'' || (c == 'b' && next == Some('\'')) {
            let start = if c == 'b' { i + 1 } else { i };
            if chars.get(start + 1) == Some(&'\\') {
                // An escaped character literal: up to its closing quote.
                i = start + 3;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if chars.get(start + 2) == Some(&'\'') {
                i = start + 3;
            } else {
                // A lifetime or a label: its name is read as an identifier next.
                i = start + 1;
            }
        } else if c == 'r' && next == Some('#') && chars.get(i + 2).is_some_and(|&c| ident_start(c))
        {
            i += 2;
        } else if ident_start(c) {
            let start = i;
            while i < chars.len() && ident_char(chars[i]) {
                i += 1;
            }
            out.push(Token::Ident(chars[start..i].iter().collect()));
        } else if c.is_ascii_digit() {
            while i < chars.len() && (ident_char(chars[i]) || chars[i] == '.') {
                if chars[i] == '.' && chars.get(i + 1) == Some(&'.') {
                    break;
                }
                i += 1;
            }
        } else if c == ':' && next == Some(':') {
            out.push(Token::Path);
            i += 2;
        } else {
            out.push(Token::Punct(c));
            i += 1;
        }
    }
    out
}

/// Where a raw string literal (`r"…"`, `r#"…"#`, `br#"…"#`) starting at `i` ends, if one does.
fn raw_string_end(chars: &[char], i: usize) -> Option<usize> {
    let mut j = i;
    if chars.get(j) == Some(&'b') {
        j += 1;
    }
    if chars.get(j) != Some(&'r') {
        return None;
    }
    j += 1;
    let hashes = chars[j..].iter().take_while(|&&c| c == '#').count();
    j += hashes;
    if chars.get(j) != Some(&'"') {
        return None;
    }
    j += 1;
    while j < chars.len() {
        if chars[j] == '"'
            && chars[j + 1..]
                .iter()
                .take(hashes)
                .filter(|&&c| c == '#')
                .count()
                == hashes
        {
            return Some(j + 1 + hashes);
        }
        j += 1;
    }
    Some(j)
}

/// One name a `use` brings in: the path as written, and the name it goes by (`None` for a
/// glob).
#[derive(Debug, Clone)]
struct UseLeaf {
    path: Vec<String>,
    name: Option<String>,
    public: bool,
}

/// The leaves of the use tree starting at `tokens[i]` (just after `use`), and where it ends.
fn use_tree(
    tokens: &[Token],
    mut i: usize,
    prefix: &[String],
    public: bool,
) -> (Vec<UseLeaf>, usize) {
    let mut path = prefix.to_vec();
    let mut leaves = Vec::new();
    if tokens.get(i) == Some(&Token::Path) {
        // `::std::…`: an external crate.
        path.push("::".into());
        i += 1;
    }
    loop {
        match tokens.get(i) {
            Some(Token::Ident(name)) => {
                path.push(name.clone());
                i += 1;
                if tokens.get(i) == Some(&Token::Path) {
                    i += 1;
                    continue;
                }
                let mut local = name.clone();
                if tokens.get(i) == Some(&Token::Ident("as".into())) {
                    if let Some(Token::Ident(alias)) = tokens.get(i + 1) {
                        local = alias.clone();
                    }
                    i += 2;
                }
                if local == "self" {
                    path.pop();
                    local = path.last().cloned().unwrap_or_default();
                }
                leaves.push(UseLeaf {
                    path,
                    name: Some(local),
                    public,
                });
                return (leaves, i);
            }
            Some(Token::Punct('*')) => {
                leaves.push(UseLeaf {
                    path,
                    name: None,
                    public,
                });
                return (leaves, i + 1);
            }
            Some(Token::Punct('{')) => {
                i += 1;
                loop {
                    match tokens.get(i) {
                        Some(Token::Punct('}')) | None => return (leaves, i + 1),
                        Some(Token::Punct(',')) => i += 1,
                        _ => {
                            let (inner, next) = use_tree(tokens, i, &path, public);
                            leaves.extend(inner);
                            i = next;
                        }
                    }
                }
            }
            _ => return (leaves, i),
        }
    }
}

type ModId = usize;

#[derive(Debug)]
struct Module {
    /// The file the module's text is in (an inline module's is its parent's).
    file: usize,
    parent: Option<ModId>,
    children: BTreeMap<String, ModId>,
    uses: Vec<UseLeaf>,
    /// Paths in code (not in a `use`) that start with a module's name, `crate`, `super` or
    /// `self`.
    paths: Vec<Vec<String>>,
    /// The items the module defines itself.
    defines: BTreeSet<String>,
}

struct Crate {
    /// Relative to the repository: `src/store/db.rs`.
    files: Vec<String>,
    file_tokens: Vec<Vec<Token>>,
    modules: Vec<Module>,
    lib_root: ModId,
}

impl Crate {
    fn read(root: &Path) -> Crate {
        let mut krate = Crate {
            files: Vec::new(),
            file_tokens: Vec::new(),
            modules: Vec::new(),
            lib_root: 0,
        };
        krate.lib_root = krate.load_file(root, "src/lib.rs", None);
        krate.load_file(root, "src/main.rs", None);
        krate
    }

    /// Reads a file as a module, and the files of the modules it declares.
    fn load_file(&mut self, root: &Path, file: &str, parent: Option<ModId>) -> ModId {
        let text = std::fs::read_to_string(root.join(file))
            .unwrap_or_else(|error| panic!("cannot read {file}: {error}"));
        let file_index = self.files.len();
        self.files.push(file.to_string());
        let tokens = tokens(&text);
        self.file_tokens.push(tokens.clone());
        let module = self.new_module(file_index, parent);
        // Where a file's child modules live: beside a mod.rs, lib.rs or main.rs, else in the
        // folder named after the file.
        let dir = match Path::new(file).file_name().and_then(|n| n.to_str()) {
            Some("mod.rs" | "lib.rs" | "main.rs") => {
                Path::new(file).parent().unwrap().to_path_buf()
            }
            _ => Path::new(file).with_extension(""),
        };
        // Inline modules open at a brace depth; the innermost is the current module.
        let mut stack: Vec<(ModId, usize)> = vec![(module, 0)];
        let mut depth = 0;
        let mut i = 0;
        while i < tokens.len() {
            let current = stack.last().unwrap().0;
            match &tokens[i] {
                Token::Punct('{') => depth += 1,
                Token::Punct('}') => {
                    depth -= 1;
                    if stack.len() > 1 && stack.last().unwrap().1 == depth {
                        stack.pop();
                    }
                }
                Token::Ident(word) if word == "mod" => {
                    if let Some(Token::Ident(child)) = tokens.get(i + 1) {
                        match tokens.get(i + 2) {
                            Some(Token::Punct(';')) => {
                                let path = child_file(root, &dir, child)
                                    .unwrap_or_else(|| panic!("{file}: no file for mod {child}"));
                                let id = self.load_file(root, &path, Some(current));
                                self.modules[current].children.insert(child.clone(), id);
                                i += 3;
                                continue;
                            }
                            Some(Token::Punct('{')) => {
                                let id = self.new_module(file_index, Some(current));
                                self.modules[current].children.insert(child.clone(), id);
                                self.modules[current].defines.insert(child.clone());
                                stack.push((id, depth));
                                depth += 1;
                                i += 3;
                                continue;
                            }
                            _ => {}
                        }
                    }
                }
                Token::Ident(word) if word == "use" => {
                    let public = is_public(&tokens, i);
                    let (leaves, end) = use_tree(&tokens, i + 1, &[], public);
                    self.modules[current].uses.extend(leaves);
                    i = end;
                    continue;
                }
                Token::Ident(word)
                    if matches!(
                        word.as_str(),
                        "fn" | "struct" | "enum" | "trait" | "type" | "const" | "static" | "union"
                    ) =>
                {
                    if let Some(Token::Ident(item)) = tokens.get(i + 1) {
                        self.modules[current].defines.insert(item.clone());
                    }
                }
                Token::Ident(word) if word == "macro_rules" => {
                    if let Some(Token::Ident(item)) = tokens.get(i + 2) {
                        self.modules[current].defines.insert(item.clone());
                    }
                }
                Token::Ident(first)
                    if tokens.get(i + 1) == Some(&Token::Path)
                        && (i == 0 || tokens[i - 1] != Token::Path) =>
                {
                    let mut path = vec![first.clone()];
                    let mut j = i + 1;
                    while tokens.get(j) == Some(&Token::Path) {
                        match tokens.get(j + 1) {
                            Some(Token::Ident(segment)) => path.push(segment.clone()),
                            _ => break,
                        }
                        j += 2;
                    }
                    if first != "Self" {
                        self.modules[current].paths.push(path);
                    }
                    i = j;
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
        module
    }

    fn new_module(&mut self, file: usize, parent: Option<ModId>) -> ModId {
        self.modules.push(Module {
            file,
            parent,
            children: BTreeMap::new(),
            uses: Vec::new(),
            paths: Vec::new(),
            defines: BTreeSet::new(),
        });
        self.modules.len() - 1
    }

    fn root_of(&self, mut module: ModId) -> ModId {
        while let Some(parent) = self.modules[module].parent {
            module = parent;
        }
        module
    }

    /// Where the first segment of a path written in `module` leads, if into this crate.
    fn start(&self, module: ModId, first: &str, depth: usize) -> Option<Target> {
        match first {
            "crate" => Some(Target::Module(self.root_of(module))),
            "sieved" if self.root_of(module) != self.lib_root => {
                Some(Target::Module(self.lib_root))
            }
            "super" => self.modules[module].parent.map(Target::Module),
            "self" => Some(Target::Module(module)),
            _ => {
                if let Some(&child) = self.modules[module].children.get(first) {
                    return Some(Target::Module(child));
                }
                // A name a `use` of this module brings in.
                let leaf = self.modules[module]
                    .uses
                    .iter()
                    .find(|leaf| leaf.name.as_deref() == Some(first))?;
                self.resolve(module, &leaf.path, depth + 1)
            }
        }
    }

    /// What a path written in `module` names: a module, or an item of one.
    fn resolve(&self, module: ModId, path: &[String], depth: usize) -> Option<Target> {
        if depth > 16 || path.is_empty() || path[0] == "::" {
            return None;
        }
        let mut target = self.start(module, &path[0], depth)?;
        for segment in &path[1..] {
            target = match target {
                Target::Module(current) if segment == "super" => {
                    Target::Module(self.modules[current].parent?)
                }
                Target::Module(current) => match self.modules[current].children.get(segment) {
                    Some(&child) => Target::Module(child),
                    None => self.item(current, segment, depth + 1),
                },
                // The rest of the path is inside an item (a variant, an associated item).
                item @ Target::Item(..) => return Some(item),
            };
        }
        Some(target)
    }

    /// The module that defines `name`, reached from `module` by following its `use`s.
    fn item(&self, module: ModId, name: &str, depth: usize) -> Target {
        let here = &self.modules[module];
        if !here.defines.contains(name) && depth <= 16 {
            if let Some(leaf) = here.uses.iter().find(|l| l.name.as_deref() == Some(name)) {
                if let Some(target) = self.resolve(module, &leaf.path, depth + 1) {
                    return target;
                }
            }
            for leaf in here.uses.iter().filter(|l| l.name.is_none()) {
                if let Some(Target::Module(glob)) = self.resolve(module, &leaf.path, depth + 1) {
                    if self.modules[glob].defines.contains(name) {
                        return Target::Item(glob);
                    }
                }
            }
        }
        Target::Item(module)
    }

    fn file_of(&self, target: Target) -> usize {
        match target {
            Target::Module(module) | Target::Item(module) => self.modules[module].file,
        }
    }

    /// Every import between two files: (importing file, imported file), and whether the
    /// imported file is the importer's parent (or an ancestor).
    fn file_edges(&self) -> BTreeMap<(usize, usize), bool> {
        let mut edges = BTreeSet::new();
        let mut ancestral = BTreeSet::new();
        for (id, module) in self.modules.iter().enumerate() {
            let from = module.file;
            let mut parent = module.parent;
            while let Some(ancestor) = parent {
                ancestral.insert((from, self.modules[ancestor].file));
                parent = self.modules[ancestor].parent;
            }
            let body_names = names_outside_uses(&self.file_tokens[from]);
            for leaf in &module.uses {
                // A re-export the file does not use itself is a door, not an import.
                if leaf.public && leaf.name.as_ref().is_some_and(|n| !body_names.contains(n)) {
                    continue;
                }
                match self.resolve(id, &leaf.path, 0) {
                    // A module named to write paths through it: those paths are the imports.
                    Some(Target::Module(_)) if leaf.name.is_some() => {}
                    Some(target) => {
                        edges.insert((from, self.file_of(target)));
                    }
                    None => {}
                }
            }
            for path in &module.paths {
                if let Some(target) = self.resolve(id, path, 0) {
                    edges.insert((from, self.file_of(target)));
                }
            }
        }
        edges
            .into_iter()
            .filter(|(from, to)| from != to)
            .map(|edge| (edge, ancestral.contains(&edge)))
            .collect()
    }
}

#[derive(Debug, Clone, Copy)]
enum Target {
    Module(ModId),
    /// An item defined in this module.
    Item(ModId),
}

fn child_file(root: &Path, dir: &Path, name: &str) -> Option<String> {
    [
        dir.join(format!("{name}.rs")),
        dir.join(name).join("mod.rs"),
    ]
    .into_iter()
    .find(|path| root.join(path).is_file())
    .map(|path| path.to_string_lossy().into_owned())
}

/// Whether the `use` at `tokens[i]` is `pub` or `pub(…)`.
fn is_public(tokens: &[Token], i: usize) -> bool {
    let pub_word = Token::Ident("pub".into());
    if i >= 1 && tokens[i - 1] == pub_word {
        return true;
    }
    if i >= 1 && tokens[i - 1] == Token::Punct(')') {
        let open = tokens[..i].iter().rposition(|t| *t == Token::Punct('('));
        return open.is_some_and(|open| open >= 1 && tokens[open - 1] == pub_word);
    }
    false
}

/// The identifiers of a file outside its `use` declarations.
fn names_outside_uses(tokens: &[Token]) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut in_use = false;
    for token in tokens {
        match token {
            Token::Ident(word) if word == "use" => in_use = true,
            Token::Punct(';') => in_use = false,
            Token::Ident(word) if !in_use => {
                names.insert(word.clone());
            }
            _ => {}
        }
    }
    names
}

// ---------------------------------------------------------------------------------------------
// The drawing

/// The top-level module a file belongs to: `store` for src/store/db.rs, `main` for
/// src/main.rs, `lib` for src/lib.rs.
fn top_module(file: &str) -> &str {
    let rest = file.strip_prefix("src/").unwrap_or(file);
    let first = rest.split('/').next().unwrap_or(rest);
    first.strip_suffix(".rs").unwrap_or(first)
}

fn floor_of(module: &str) -> Option<(usize, bool)> {
    FLOORS
        .iter()
        .enumerate()
        .find(|(_, floor)| floor.modules.contains(&module))
        .map(|(index, floor)| (index, floor.apart))
}

/// The circles of a graph: its strongly connected components of more than one node (Tarjan).
fn circles<N: Ord + Clone>(edges: &BTreeSet<(N, N)>) -> Vec<Vec<N>> {
    let nodes: BTreeSet<N> = edges
        .iter()
        .flat_map(|(a, b)| [a.clone(), b.clone()])
        .collect();
    let nodes: Vec<N> = nodes.into_iter().collect();
    let index_of = |n: &N| nodes.binary_search(n).unwrap();
    let mut next: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    for (a, b) in edges {
        next[index_of(a)].push(index_of(b));
    }
    struct State {
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        counter: usize,
        found: Vec<Vec<usize>>,
    }
    fn visit(v: usize, next: &[Vec<usize>], s: &mut State) {
        s.index[v] = Some(s.counter);
        s.low[v] = s.counter;
        s.counter += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in &next[v] {
            match s.index[w] {
                None => {
                    visit(w, next, s);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(index) if s.on_stack[w] => s.low[v] = s.low[v].min(index),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut component = Vec::new();
            loop {
                let w = s.stack.pop().unwrap();
                s.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.found.push(component);
            }
        }
    }
    let mut state = State {
        index: vec![None; nodes.len()],
        low: vec![0; nodes.len()],
        on_stack: vec![false; nodes.len()],
        stack: Vec::new(),
        counter: 0,
        found: Vec::new(),
    };
    for v in 0..nodes.len() {
        if state.index[v].is_none() {
            visit(v, &next, &mut state);
        }
    }
    let mut found: Vec<Vec<N>> = state
        .found
        .into_iter()
        .map(|c| c.into_iter().map(|i| nodes[i].clone()).collect())
        .collect();
    found.sort();
    found
}

struct Drawing {
    files: Vec<String>,
    /// Each import between two files, and whether the imported file is the importer's
    /// folder's own (its parent module's, or an ancestor's).
    edges: BTreeMap<(usize, usize), bool>,
}

impl Drawing {
    fn of_this_repository() -> Drawing {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let krate = Crate::read(&root);
        let edges = krate.file_edges();
        Drawing {
            files: krate.files,
            edges,
        }
    }

    /// Every import, as (importing file, imported file, to an ancestor).
    fn named_edges(&self) -> impl Iterator<Item = (&str, &str, bool)> {
        self.edges
            .iter()
            .map(|(&(a, b), &up)| (self.files[a].as_str(), self.files[b].as_str(), up))
    }

    /// The imports a circle may run through: a child's use of its own folder's `mod.rs` (or
    /// an ancestor's) is left out. A child is inside its parent, which Rust lets it see, and
    /// a folder's `mod.rs` that keeps what its children share (`server::Shared`,
    /// `config::Config`, `store::Store`) is that folder's own ground; what a `mod.rs` imports
    /// of its children counts, so that two children never go back and forth through it.
    fn circle_edges(&self) -> BTreeSet<(String, String)> {
        self.named_edges()
            .filter(|&(_, _, up)| !up)
            .map(|(a, b, _)| (a.to_string(), b.to_string()))
            .collect()
    }

    /// The circles between the members of every folder: its files and its sub-folders, each
    /// sub-folder standing for everything under it.
    fn folder_circles(&self) -> Vec<Vec<String>> {
        let mut found = Vec::new();
        let mut folders: BTreeSet<String> = BTreeSet::new();
        for file in &self.files {
            let mut path = Path::new(file).parent();
            while let Some(folder) = path {
                folders.insert(folder.to_string_lossy().into_owned());
                path = folder.parent();
            }
        }
        let edges = self.circle_edges();
        for folder in folders.iter().filter(|f| !f.is_empty()) {
            let member = |file: &str| -> Option<String> {
                let rest = file.strip_prefix(folder.as_str())?.strip_prefix('/')?;
                Some(match rest.split_once('/') {
                    Some((sub, _)) => format!("{folder}/{sub}/"),
                    None => file.to_string(),
                })
            };
            let members: BTreeSet<(String, String)> = edges
                .iter()
                .filter_map(|(a, b)| Some((member(a)?, member(b)?)))
                .filter(|(a, b)| a != b && (a.ends_with('/') || b.ends_with('/')))
                .collect();
            found.extend(circles(&members));
        }
        found
    }

    /// Every circle: between files, between the members of a folder, between top-level
    /// modules.
    fn circles(&self) -> Vec<Vec<String>> {
        let files = self.circle_edges();
        let modules: BTreeSet<(String, String)> = files
            .iter()
            .map(|(a, b)| (top_module(a).to_string(), top_module(b).to_string()))
            .filter(|(a, b)| a != b)
            .collect();
        let mut found = circles(&files);
        found.extend(self.folder_circles());
        found.extend(circles(&modules));
        found.sort();
        found.dedup();
        found
    }

    fn render(&self) -> String {
        let mut out = String::new();
        let mut modules: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for (a, b, _) in self.named_edges() {
            let (a, b) = (top_module(a), top_module(b));
            if a != b {
                modules.entry(a).or_default().insert(b);
            }
        }
        let _ = writeln!(out, "Floors, top first, with what each module imports:");
        for (index, floor) in FLOORS.iter().enumerate() {
            let apart = if floor.apart { " (apart)" } else { "" };
            let _ = writeln!(out, "floor {}{apart}", FLOORS.len() - index);
            for module in floor.modules {
                let imports: Vec<&str> =
                    modules.get(module).into_iter().flatten().copied().collect();
                let _ = writeln!(out, "  {module:<13} -> {}", imports.join(", "));
            }
        }
        let _ = writeln!(out, "\nCircles still allowed (CIRCLES_BEING_REMOVED):");
        for circle in self.circles().iter().filter(|c| allowed(c)) {
            let _ = writeln!(out, "  {}", circle.join(" <-> "));
        }
        let _ = writeln!(
            out,
            "\nFiles, with the files each imports (^: its own folder's mod.rs or an ancestor's):"
        );
        let mut by_file: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for file in &self.files {
            by_file.entry(file).or_default();
        }
        for (a, b, up) in self.named_edges() {
            let mark = if up { "^ " } else { "" };
            by_file.entry(a).or_default().push(format!("{mark}{b}"));
        }
        for (file, imports) in by_file {
            let _ = writeln!(out, "{file}");
            for import in imports {
                let _ = writeln!(out, "    -> {import}");
            }
        }
        out
    }
}

fn allowed(circle: &[String]) -> bool {
    CIRCLES_BEING_REMOVED.iter().any(|allowed| {
        allowed
            .iter()
            .copied()
            .eq(circle.iter().map(String::as_str))
    })
}

#[test]
fn no_file_imports_up_a_floor_or_across_an_apart_floor() {
    let drawing = Drawing::of_this_repository();
    if std::env::var_os("SIEVED_IMPORT_GRAPH").is_some() {
        println!("{}", drawing.render());
    }
    let mut wrong = Vec::new();
    for (a, b, _) in drawing.named_edges() {
        let (from, to) = (top_module(a), top_module(b));
        if from == to {
            continue;
        }
        let (Some((from_floor, apart)), Some((to_floor, _))) = (floor_of(from), floor_of(to))
        else {
            wrong.push(format!(
                "{a} -> {b}: {from} or {to} is on no floor of FLOORS"
            ));
            continue;
        };
        if to_floor < from_floor {
            wrong.push(format!("{a} -> {b}: up from {from} to {to}"));
        } else if to_floor == from_floor && apart {
            wrong.push(format!(
                "{a} -> {b}: {from} and {to} never import each other"
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "imports against the floors:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn no_import_circle() {
    let drawing = Drawing::of_this_repository();
    let found: Vec<String> = drawing
        .circles()
        .iter()
        .filter(|circle| !allowed(circle))
        .map(|circle| circle.join(" <-> "))
        .collect();
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

#[test]
fn every_circle_allowed_is_still_there() {
    let circles = Drawing::of_this_repository().circles();
    let gone: Vec<String> = CIRCLES_BEING_REMOVED
        .iter()
        .filter(|allowed| {
            !circles.iter().any(|circle| {
                allowed
                    .iter()
                    .copied()
                    .eq(circle.iter().map(String::as_str))
            })
        })
        .map(|allowed| allowed.join(" <-> "))
        .collect();
    assert!(
        gone.is_empty(),
        "CIRCLES_BEING_REMOVED lists circles that are gone or have changed; write what is left:\n{}",
        gone.join("\n")
    );
}

#[test]
fn no_source_file_is_too_long() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let drawing = Drawing::of_this_repository();
    let long: Vec<String> = drawing
        .files
        .iter()
        .filter_map(|file| {
            let text = std::fs::read_to_string(root.join(file)).expect("a source file");
            let lines = text.lines().count();
            (lines > MAX_LINES).then(|| format!("{file}: {lines} lines"))
        })
        .collect();
    assert!(
        long.is_empty(),
        "over {MAX_LINES} lines:\n{}",
        long.join("\n")
    );
}

#[test]
fn the_reader_sees_what_the_compiler_sees() {
    // The parts of the reading a wrong turn would make the checks above pass silently.
    let tokens =
        tokens("use crate::a::{self, b::C as D, e::*}; // use crate::x;\nlet s = \"crate::y\";");
    let (leaves, _) = use_tree(&tokens, 1, &[], false);
    let leaves: Vec<(String, Option<String>)> = leaves
        .into_iter()
        .map(|leaf| (leaf.path.join("::"), leaf.name))
        .collect();
    assert_eq!(
        leaves,
        [
            ("crate::a".to_string(), Some("a".to_string())),
            ("crate::a::b::C".to_string(), Some("D".to_string())),
            ("crate::a::e".to_string(), None),
        ]
    );
    assert!(!tokens.contains(&Token::Ident("x".into())));
    assert!(!tokens.contains(&Token::Ident("y".into())));
    let drawing = Drawing::of_this_repository();
    assert!(drawing.files.len() > 100, "{} files", drawing.files.len());
    assert!(
        drawing
            .named_edges()
            .any(|(a, b, _)| a == "src/main.rs" && b.starts_with("src/server/")),
        "main.rs's imports of the server are seen"
    );
}
