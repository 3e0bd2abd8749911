//! The HTML form of a document: `report.html` beside `report.md` in every run
//! directory, and `--format html` of `compare`, `check` and `history`. One page from
//! the same Markdown the other formats render, so the two never disagree, made for a
//! browser:
//!
//! - self-contained: the style sheet and the script inline ([`assets`]), every chart
//!   the Markdown links (`plots/*.svg`) inlined as SVG with its hover titles, and a
//!   Content-Security-Policy that forbids the page any network access;
//! - one collapsible section per `##` heading (`<details>`, so it works with scripts
//!   off) and a table of contents linking each section and sub-section;
//! - tables sortable by a click on a column header; status and significance cells
//!   coloured by what they say ([`tone`]), with a symbol, so neither is carried by
//!   colour alone.

mod assets;

#[cfg(test)]
mod tests;

use std::collections::HashSet;
use std::path::Path;

use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd};

use crate::units::xml_escape;

/// The page's policy: nothing from the network, its own inline style, `data:`
/// images, and only the one script that carries the page's nonce (no inline event
/// handlers, no other script), no `<base>`, no form submission.
fn policy(nonce: &str) -> String {
    format!(
        "default-src 'none'; style-src 'unsafe-inline'; script-src 'nonce-{nonce}'; img-src data:; base-uri 'none'; form-action 'none'"
    )
}

/// A nonce no text of the run could have been written to match: drawn from the
/// process's random hash keys and the time.
fn nonce() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    format!("{:016x}", h.finish())
}

/// The HTML page of `markdown`, titled `title`. Images the Markdown links are read
/// from below `images` (the run directory) and inlined when they are SVG; with no
/// folder, or a file that cannot be read, the page says the chart is not there.
pub fn page(title: &str, markdown: &str, images: Option<&Path>) -> String {
    let body = Body::render(markdown, images, title);
    let mut out = String::with_capacity(body.html.len() + assets::STYLE.len() + 4096);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    let nonce = nonce();
    out.push_str(&format!(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">\n",
        policy(&nonce)
    ));
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    out.push_str(&format!("<title>{}</title>\n", xml_escape(title)));
    out.push_str("<style>");
    out.push_str(assets::STYLE);
    out.push_str("</style>\n</head>\n<body>\n");
    out.push_str(&body.html);
    out.push_str(&format!(
        "<footer>Written by nccl-bench {}. This page is self-contained: it loads nothing from the network.</footer>\n",
        env!("CARGO_PKG_VERSION")
    ));
    out.push_str(&format!("<script nonce=\"{nonce}\">"));
    out.push_str(assets::SCRIPT);
    out.push_str("</script>\n</body>\n</html>\n");
    out
}

/// Columns whose cells say a status or a significance (by their header): the only
/// cells coloured, so that a reason or a note that happens to start with "error" is
/// not.
const TONED_COLUMNS: [&str; 6] = [
    "status",
    "significant",
    "outcome",
    "result",
    "quality",
    "verdict",
];

/// How a table cell's words read: `bad` (slower, failed), `good` (faster, within,
/// ok), `warn` (not settled, flagged), or none. Drives the cell's colour and symbol
/// only; the words stay as they are.
pub fn tone(cell: &str) -> Option<&'static str> {
    let t = cell.trim().to_ascii_lowercase();
    const BAD: [&str; 10] = [
        "slower", "not-ok", "failed", "fail", "timeout", "crashed", "hung", "wrong", "error",
        "missing",
    ];
    const GOOD: [&str; 2] = ["faster", "within"];
    const WARN: [&str; 6] = [
        "not settled",
        "noisy",
        "outlier",
        "unsupported",
        "drift",
        "flagged",
    ];
    if t.is_empty() {
        None
    } else if BAD.iter().any(|w| t.starts_with(w)) || t.contains(" not ok") {
        Some("bad")
    } else if t == "ok" || GOOD.iter().any(|w| t.starts_with(w)) {
        Some("good")
    } else if WARN.iter().any(|w| t.starts_with(w)) {
        Some("warn")
    } else {
        None
    }
}

/// The page's body: the first heading, the table of contents, then the sections.
struct Body {
    html: String,
}

/// A heading of the table of contents: its level (2 or 3), anchor and text.
struct Entry {
    level: u8,
    id: String,
    text: String,
}

/// The renderer's state while it walks the Markdown's events.
struct Renderer<'a> {
    images: Option<&'a Path>,
    /// The HTML of the sections, without the first heading.
    out: String,
    title: String,
    /// Whether `title` came from the Markdown's first heading.
    own_title: bool,
    toc: Vec<Entry>,
    ids: HashSet<String>,
    /// Events waiting to go through pulldown-cmark's own HTML writer.
    pending: Vec<Event<'a>>,
    /// Where the first section starts in `out`: what comes before it (a banner such
    /// as "Simulated GPUs") stays above the contents.
    first_section: Option<usize>,
    section_open: bool,
    in_head: bool,
    /// The current table's column headers, and the body cell's column.
    headers: Vec<String>,
    column: usize,
}

impl Body {
    /// `title` heads the page when the Markdown has no `#` heading of its own.
    fn render(markdown: &str, images: Option<&Path>, title: &str) -> Body {
        let mut options = Options::empty();
        options.insert(Options::ENABLE_TABLES);
        options.insert(Options::ENABLE_STRIKETHROUGH);
        let mut r = Renderer {
            images,
            out: String::new(),
            title: xml_escape(title),
            own_title: false,
            toc: Vec::new(),
            ids: HashSet::new(),
            pending: Vec::new(),
            first_section: None,
            section_open: false,
            in_head: false,
            headers: Vec::new(),
            column: 0,
        };
        // Text from the run (an error message, a host name, a config) is never
        // markup: raw HTML in the Markdown is shown as the text it is.
        let mut events = Parser::new_ext(markdown, options).map(|e| match e {
            Event::Html(t) | Event::InlineHtml(t) => Event::Text(t),
            other => other,
        });
        while let Some(event) = events.next() {
            match event {
                Event::Start(Tag::Heading { level, .. }) => {
                    let inner = collect(&mut events, |e| matches!(e, TagEnd::Heading(_)));
                    r.heading(level, &inner);
                }
                Event::Start(Tag::Image { dest_url, .. }) => {
                    let alt = collect(&mut events, |e| matches!(e, TagEnd::Image));
                    r.image(&dest_url, &plain(&alt));
                }
                Event::Start(Tag::Table(_)) => {
                    r.flush();
                    r.headers.clear();
                    r.out
                        .push_str("<div class=\"scroll\"><table class=\"sortable\">\n");
                }
                Event::End(TagEnd::Table) => {
                    r.out.push_str("</tbody></table></div>\n");
                }
                Event::Start(Tag::TableHead) => {
                    r.in_head = true;
                    r.out.push_str("<thead><tr>");
                }
                Event::End(TagEnd::TableHead) => {
                    r.in_head = false;
                    r.out.push_str("</tr></thead>\n<tbody>\n");
                }
                Event::Start(Tag::TableRow) => {
                    r.column = 0;
                    r.out.push_str("<tr>");
                }
                Event::End(TagEnd::TableRow) => r.out.push_str("</tr>\n"),
                Event::Start(Tag::TableCell) => {
                    let inner = collect(&mut events, |e| matches!(e, TagEnd::TableCell));
                    r.cell(&inner);
                }
                other => r.pending.push(other),
            }
        }
        r.flush();
        if r.section_open {
            r.out.push_str("</div></details>\n");
        }
        Body { html: r.finish() }
    }
}

impl<'a> Renderer<'a> {
    /// Writes the events waiting for pulldown-cmark's writer.
    fn flush(&mut self) {
        if !self.pending.is_empty() {
            pulldown_cmark::html::push_html(&mut self.out, self.pending.drain(..));
        }
    }

    /// The first `#` heading is the page's; each `##` opens a collapsible section;
    /// deeper headings get an anchor. All but the first go into the contents.
    fn heading(&mut self, level: HeadingLevel, inner: &[Event<'a>]) {
        self.flush();
        let text = plain(inner);
        let html = inline_html(inner);
        match level {
            HeadingLevel::H1 if !self.own_title && self.out.is_empty() => {
                self.title = html;
                self.own_title = true;
            }
            HeadingLevel::H1 | HeadingLevel::H2 => {
                if self.section_open {
                    self.out.push_str("</div></details>\n");
                }
                self.first_section.get_or_insert(self.out.len());
                let id = self.anchor(&text);
                self.out.push_str(&format!(
                    "<details class=\"section\" id=\"{id}\" open><summary><h2>{html}</h2></summary><div>\n"
                ));
                self.section_open = true;
                self.toc.push(Entry { level: 2, id, text });
            }
            _ => {
                let id = self.anchor(&text);
                let n = level as usize;
                self.out
                    .push_str(&format!("<h{n} id=\"{id}\">{html}</h{n}>\n"));
                if n == 3 {
                    self.toc.push(Entry { level: 3, id, text });
                }
            }
        }
    }

    /// A unique anchor for a heading's text: lower case, words joined by `-`.
    fn anchor(&mut self, text: &str) -> String {
        let mut base = String::new();
        for c in text.chars() {
            if c.is_ascii_alphanumeric() {
                base.push(c.to_ascii_lowercase());
            } else if !base.ends_with('-') && !base.is_empty() {
                base.push('-');
            }
        }
        let base = base.trim_end_matches('-').to_string();
        let base = if base.is_empty() {
            "section".into()
        } else {
            base
        };
        let mut id = base.clone();
        let mut n = 2;
        while !self.ids.insert(id.clone()) {
            id = format!("{base}-{n}");
            n += 1;
        }
        id
    }

    /// A chart: its SVG inline, captioned, when it can be read; else a line saying so.
    fn image(&mut self, url: &str, alt: &str) {
        let plain = !url.contains(':')
            && Path::new(url)
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(_)));
        let svg = self
            .images
            .filter(|_| url.ends_with(".svg") && plain)
            .and_then(|dir| std::fs::read_to_string(dir.join(url)).ok())
            .and_then(|text| text.find("<svg").map(|at| text[at..].to_string()));
        let html = match svg {
            Some(svg) => format!(
                "<span class=\"plot\" role=\"group\" aria-label=\"{0}\">{svg}<span class=\"caption\">{0} (hover a point for its figures)</span></span>",
                xml_escape(alt)
            ),
            None => format!(
                "<span class=\"missing\">chart {} not included</span>",
                xml_escape(url)
            ),
        };
        self.pending.push(Event::Html(html.into()));
    }

    /// A table cell: `th` in the header, `td` in the body, with its tone in a
    /// column that says a status or a significance ([`TONED_COLUMNS`]).
    fn cell(&mut self, inner: &[Event<'a>]) {
        let html = inline_html(inner);
        if self.in_head {
            self.headers.push(plain(inner).to_ascii_lowercase());
            self.out.push_str(&format!("<th scope=\"col\">{html}</th>"));
        } else {
            let toned = self
                .headers
                .get(self.column)
                .is_some_and(|h| TONED_COLUMNS.iter().any(|t| h.contains(t)));
            self.column += 1;
            match tone(&plain(inner)).filter(|_| toned) {
                Some(class) => self
                    .out
                    .push_str(&format!("<td class=\"{class}\">{html}</td>")),
                None => self.out.push_str(&format!("<td>{html}</td>")),
            }
        }
    }

    /// The title, what precedes the first section, the contents (with a button to
    /// collapse every section, shown when scripts run) and the sections.
    fn finish(self) -> String {
        let mut html = String::with_capacity(self.out.len() + 4096);
        html.push_str(&format!("<h1>{}</h1>\n", self.title));
        let (preamble, sections) = self.out.split_at(self.first_section.unwrap_or(0));
        html.push_str(preamble);
        if !self.toc.is_empty() {
            html.push_str("<nav class=\"toc\" aria-label=\"contents\"><span class=\"tools\"><button type=\"button\" id=\"toggle-all\" hidden>collapse all sections</button></span><strong>Contents</strong>\n<ul>\n");
            let mut in_sub = false;
            for (i, e) in self.toc.iter().enumerate() {
                let link = format!("<a href=\"#{}\">{}</a>", e.id, xml_escape(&e.text));
                if e.level == 2 {
                    if in_sub {
                        html.push_str("</ul></li>\n");
                        in_sub = false;
                    } else if i > 0 {
                        html.push_str("</li>\n");
                    }
                    html.push_str(&format!("<li>{link}"));
                } else {
                    if !in_sub {
                        // A sub-section before any section gets an item to sit in.
                        html.push_str(if i == 0 { "<li><ul>" } else { "<ul>" });
                        in_sub = true;
                    }
                    html.push_str(&format!("<li>{link}</li>"));
                }
            }
            html.push_str(if in_sub { "</ul></li>\n" } else { "</li>\n" });
            html.push_str("</ul></nav>\n");
        }
        html.push_str(sections);
        html
    }
}

/// The events up to the end tag `is_end` matches, without it.
fn collect<'a>(
    events: &mut impl Iterator<Item = Event<'a>>,
    is_end: impl Fn(&TagEnd) -> bool,
) -> Vec<Event<'a>> {
    let mut inner = Vec::new();
    for e in events.by_ref() {
        if let Event::End(end) = &e {
            if is_end(end) {
                break;
            }
        }
        inner.push(e);
    }
    inner
}

/// Inline events as HTML.
fn inline_html(events: &[Event<'_>]) -> String {
    let mut html = String::new();
    pulldown_cmark::html::push_html(&mut html, events.iter().cloned());
    html
}

/// What inline events say, as plain text.
fn plain(events: &[Event<'_>]) -> String {
    let mut text = String::new();
    for e in events {
        match e {
            Event::Text(t) | Event::Code(t) => text.push_str(t),
            Event::SoftBreak | Event::HardBreak => text.push(' '),
            _ => {}
        }
    }
    text
}
