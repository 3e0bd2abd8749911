//! A family's answer in one sentence, with its rate.

use super::{Answer, Family, MOST_ROUNDS};

/// A level as a percentage: two decimals, more where two would round to 100.
fn percent(level: f64) -> String {
    (2..8)
        .map(|d| format!("{:.d$}", level * 100.0))
        .find(|t| !t.starts_with("100"))
        .unwrap_or_else(|| format!("{:.8}", level * 100.0))
}

impl Family {
    /// The family's answer in one sentence (Markdown), `what` naming the change
    /// ("disabling SHM"); empty for a family without members.
    pub fn sentence(&self, what: &str) -> String {
        let pct = |x: f64| format!("{:+.1}%", x * 100.0);
        let band = format!("+-{:.1}%", self.margin * 100.0);
        let range = match (self.most_faster, self.most_slower) {
            (Some(lo), Some(hi)) => format!("between {} and {}", pct(lo), pct(hi)),
            _ => String::new(),
        };
        // 95, 99.9: as many decimals as the rate has (up to three).
        let level = format!("{:.3}", (1.0 - self.alpha) * 100.0);
        let level = level.trim_end_matches('0').trim_end_matches('.');
        let each = percent(self.per_case);
        let looks = if self.looks > 1 {
            format!(
                " at any of {} looks while measuring until settled",
                self.looks
            )
        } else {
            String::new()
        };
        // Each member's own interval, on which equivalence and the bounds rest.
        let own = format!(
            "each case's own interval at {}%, each end at {}%{looks}",
            percent(self.own_level),
            percent(1.0 - self.alpha / self.looks as f64),
        );
        let or_more = if self.per_case_alike { "" } else { " or more" };
        // Relabelling whole rounds showed the cases moving together: say what
        // Bonferroni alone would have asked.
        let joint = if self.bonferroni - self.per_case > 5e-5 {
            format!(
                ", not the {}% that Bonferroni asks, as relabelling whole rounds shows the cases moving together",
                percent(self.bonferroni)
            )
        } else {
            String::new()
        };
        let family = format!(
            "{} cases decided together, each interval at {each}%{or_more} so that all hold at once{looks} with at least {level}%{joint}",
            self.cases,
        );
        match &self.answer {
            Answer::Empty => String::new(),
            Answer::Different { slower, faster } => {
                let mut parts = Vec::new();
                if *slower > 0 {
                    parts.push(format!("slower beyond {band} at {slower}"));
                }
                if *faster > 0 {
                    parts.push(format!("faster beyond {band} at {faster}"));
                }
                format!(
                    "Over the family ({family}): {what} is {} of them.",
                    parts.join(" and ")
                )
            }
            Answer::Equivalent => format!(
                "Over the family ({} cases, {own}, every one inside {band}, so that all are within at once with at least {level}%: a case truly beyond would have had to show inside its own): {what} changes the time by at most {band} at every case measured (every change {range}).",
                self.cases
            ),
            Answer::NotSettled { rounds } => {
                let short = self.cases - self.bounded;
                let mut s = format!("Over the family ({family}): not settled");
                if !range.is_empty() {
                    s.push_str(&format!(
                        "; the changes lie {range} ({own}: each bound holds over all cases with at least {level}%), so {what} costs at most {} where measured",
                        pct(self.most_slower.unwrap_or(0.0).max(0.0))
                    ));
                }
                if short > 0 {
                    s.push_str(&format!(
                        "; {short} case(s) have too few rounds for an interval at that level"
                    ));
                }
                match rounds {
                    Some(r) if *r > MOST_ROUNDS => s.push_str(&format!(
                        "; more than {MOST_ROUNDS} rounds would be needed: a change this close to {band}, or this noisy, is not settled by measuring longer (a wider --threshold is)"
                    )),
                    Some(r) => s.push_str(&format!(
                        "; about {r} rounds (--rounds {r}) would settle it within {band}"
                    )),
                    None => {}
                }
                s.push('.');
                s
            }
        }
    }
}
