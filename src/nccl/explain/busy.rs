//! What a rank was doing while the others timed out in a collective, from what the
//! paste shows around the timeout: a progress bar of long work under way, or a
//! training bar that just finished an epoch.

use super::pasted::Pasted;

/// Long work one rank does alone, as its progress bar shows it beside a timeout: what
/// a line says, and the work in words.
const BUSY: &[(&str, &str)] = &[
    ("running tokenizer", "tokenizing the dataset"),
    ("tokenizing", "tokenizing the dataset"),
    ("loading checkpoint shards", "loading the checkpoint"),
    ("generating train split", "preparing the dataset"),
    ("map (num_proc", "preprocessing the dataset"),
];

/// A sentence naming the long work the paste shows a rank doing (`Running tokenizer on
/// dataset: 9%`), or else a training bar that finished just before the timeout, or
/// nothing.
pub(super) fn busy_words(pasted: &Pasted) -> String {
    pasted
        .lines
        .iter()
        .rev()
        .find_map(|l| {
            // A bar under way, not one that finished (`Loading checkpoint shards: 100%`).
            if l.lower.contains("100%") {
                return None;
            }
            let (phrase, work) = BUSY.iter().find(|(p, _)| l.lower.contains(p))?;
            let at = l.lower.find(phrase)?;
            let shown: String = l.text[at..].chars().take(40).collect();
            Some(format!(
                " The paste shows a rank still {work} (`{}`): one rank doing long work alone \
                 while the others wait in a collective until the timeout.",
                shown.trim_end()
            ))
        })
        .unwrap_or_else(|| epoch_end(pasted))
}

/// The last progress bar before the first timeout line, where it is a training bar (a
/// loss or an epoch) at 100 % (`1|16|Loss: 2.57: 100%|`): the end of an epoch, where
/// one rank often works alone.
fn epoch_end(pasted: &Pasted) -> String {
    let timeout = pasted.lines.iter().position(|l| {
        l.lower
            .contains("watchdog caught collective operation timeout")
    });
    let Some(timeout) = timeout else {
        return String::new();
    };
    // The last progress bar before the timeout: a training bar, and finished.
    let bar = pasted.lines[..timeout]
        .iter()
        .rev()
        .find(|l| l.lower.contains("%|"))
        .filter(|l| {
            l.lower.contains("100%|") && ["loss", "epoch"].iter().any(|w| l.lower.contains(w))
        });
    bar.map(|l| {
        let shown: String = l.text.chars().take(40).collect();
        format!(
            " A training bar had just reached 100 % (`{}`): at the end of an epoch one \
             rank often saves a checkpoint or evaluates alone while the others wait in the \
             next collective.",
            shown.trim_end()
        )
    })
    .unwrap_or_default()
}
