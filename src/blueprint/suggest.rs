//! "Did you mean": the known name closest to a misspelt one, as kubectl
//! suggests for unknown fields.

/// The candidate closest to `name`, when it is close enough to be a typo:
/// equal ignoring case, or at most two edits away (one for short names).
pub fn closest<'c>(name: &str, candidates: impl IntoIterator<Item = &'c str>) -> Option<&'c str> {
    let lower = name.to_lowercase();
    let mut best: Option<(usize, &str)> = None;
    for c in candidates {
        if c == name {
            continue;
        }
        let d = strsim::damerau_levenshtein(&lower, &c.to_lowercase());
        if best.is_none_or(|(b, _)| d < b) {
            best = Some((d, c));
        }
    }
    // Two edits turn any short name into another ("ID" into "Pods"): allow fewer.
    let limit = if name.chars().count() <= 4 { 1 } else { 2 };
    best.filter(|(d, _)| *d <= limit).map(|(_, c)| c)
}

/// ` (did you mean X?)`, or nothing.
pub fn hint<'c>(name: &str, candidates: impl IntoIterator<Item = &'c str>) -> String {
    closest(name, candidates)
        .map(|c| format!(" (did you mean {c}?)"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_names_are_suggested_far_ones_are_not() {
        let names = ["KubeTask", "KubeExec", "KubeOps", "ScaleWorkload"];
        assert_eq!(closest("KubeTsk", names), Some("KubeTask"));
        assert_eq!(closest("kubetask", names), Some("KubeTask"));
        assert_eq!(closest("KubeExce", names), Some("KubeExec"));
        assert_eq!(closest("BackupData", names), None);
        assert_eq!(closest("Nme", ["Name", "Namespace"]), Some("Name"));
        assert_eq!(closest("ID", ["Pods", "Name"]), None);
        assert_eq!(closest("Name", ["Name"]), None);
        assert_eq!(
            hint("Locaton", ["Location", "Credential"]),
            " (did you mean Location?)"
        );
        assert_eq!(hint("zzz", ["Location"]), "");
    }
}
