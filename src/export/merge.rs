//! The manifest of a run directory that several launches of `run` wrote into: what
//! each launch said, merged into one.

/// The manifest of a run directory that a `run` appended to: the earlier launches'
/// configs, rank counts, sizes, case counts and warnings, plus this launch's; the
/// start time of the first launch; the rest from this launch. `launches` keeps what
/// each launch alone said (command line, times, status, error, settings, cluster),
/// and an earlier launch that did not complete keeps the run's status from reading
/// `complete`.
pub fn merge_manifests(
    previous: &serde_json::Value,
    current: serde_json::Value,
) -> serde_json::Value {
    use serde_json::Value;
    let this_launch = launch_summary(&current);
    let mut out = current;
    let Some(obj) = out.as_object_mut() else {
        return out;
    };
    let union = |key: &str, obj: &mut serde_json::Map<String, Value>| {
        let mut values: Vec<Value> = previous[key].as_array().cloned().unwrap_or_default();
        for v in obj
            .get(key)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
        {
            if !values.contains(&v) {
                values.push(v);
            }
        }
        values.sort_by(|a, b| {
            a.as_f64()
                .partial_cmp(&b.as_f64())
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        obj.insert(key.to_string(), Value::Array(values));
    };
    union("gpu_counts", obj);
    union("sizes", obj);
    let mut configs: Vec<Value> = previous["configs"].as_array().cloned().unwrap_or_default();
    for c in obj
        .get("configs")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
    {
        if !configs.iter().any(|p| p["name"] == c["name"]) {
            configs.push(c);
        }
    }
    obj.insert("configs".into(), Value::Array(configs));
    let mut warnings: Vec<Value> = previous["warnings"].as_array().cloned().unwrap_or_default();
    for w in obj
        .get("warnings")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
    {
        if !warnings.contains(&w) {
            warnings.push(w);
        }
    }
    obj.insert("warnings".into(), Value::Array(warnings));
    if let (Some(prev), Some(Value::Object(cases))) =
        (previous["cases"].as_object(), obj.get_mut("cases"))
    {
        for (k, v) in cases.iter_mut() {
            let sum = v.as_u64().unwrap_or(0) + prev.get(k).and_then(Value::as_u64).unwrap_or(0);
            *v = Value::from(sum);
        }
    }
    if let Some(started) = previous.get("started_at") {
        obj.insert("started_at".into(), started.clone());
    }
    let mut launches: Vec<Value> = match previous["launches"].as_array() {
        Some(earlier) => earlier.clone(),
        None => vec![launch_summary(previous)],
    };
    launches.push(this_launch);
    let unfinished = launches[..launches.len() - 1]
        .iter()
        .map(|l| &l["status"])
        .find(|s| s.as_str().is_some_and(|s| s != "complete"))
        .cloned();
    if let (Some(status), Some("complete")) =
        (unfinished, obj.get("status").and_then(Value::as_str))
    {
        obj.insert("status".into(), status);
    }
    obj.insert("launches".into(), Value::Array(launches));
    out
}

/// What one launch alone said: its command line, times, status, error, settings,
/// cluster, and the names of its configs.
fn launch_summary(m: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    let mut l = serde_json::Map::new();
    for key in [
        "command_line",
        "started_at",
        "finished_at",
        "status",
        "error",
        "iterations",
        "warmup_iters",
        "graph_iters",
        "timeout_s",
        "cluster",
    ] {
        if let Some(v) = m.get(key).filter(|v| !v.is_null()) {
            l.insert(key.into(), v.clone());
        }
    }
    let names: Vec<Value> = m["configs"]
        .as_array()
        .map(|cs| cs.iter().map(|c| c["name"].clone()).collect())
        .unwrap_or_default();
    l.insert("configs".into(), Value::Array(names));
    Value::Object(l)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_appended_manifest_keeps_what_earlier_launches_said() {
        let previous = serde_json::json!({
            "started_at": "2026-01-01T00:00:00Z",
            "command_line": ["nccl-bench", "run", "--transports", "default"],
            "configs": [{"name": "default"}],
            "gpu_counts": [4], "sizes": [8, 1024],
            "cases": {"total": 2, "done": 2, "ok": 1, "failed": 1},
            "warnings": ["w1"],
        });
        let current = serde_json::json!({
            "started_at": "2026-01-01T00:05:00Z",
            "command_line": ["nccl-bench", "run", "--transports", "shm-off"],
            "configs": [{"name": "shm-off"}, {"name": "default"}],
            "gpu_counts": [2, 4], "sizes": [8, 4096],
            "cases": {"total": 2, "done": 1, "ok": 1, "failed": 0},
            "warnings": ["w1", "w2"],
            "status": "complete",
        });
        let m = merge_manifests(&previous, current);
        assert_eq!(m["started_at"], "2026-01-01T00:00:00Z");
        assert_eq!(
            m["configs"],
            serde_json::json!([{"name": "default"}, {"name": "shm-off"}])
        );
        assert_eq!(m["gpu_counts"], serde_json::json!([2, 4]));
        assert_eq!(m["sizes"], serde_json::json!([8, 1024, 4096]));
        assert_eq!(
            m["cases"],
            serde_json::json!({"total": 4, "done": 3, "ok": 2, "failed": 1})
        );
        assert_eq!(m["warnings"], serde_json::json!(["w1", "w2"]));
        assert_eq!(m["launches"][0]["command_line"][3], "default");
        assert_eq!(m["launches"][0]["configs"], serde_json::json!(["default"]));
        assert_eq!(
            m["launches"][1]["configs"],
            serde_json::json!(["shm-off", "default"])
        );
        // A third launch after an interrupted second: the earlier launches are kept
        // as they were, and the run does not read as complete.
        let mut second = m.clone();
        second["launches"][1]["status"] = "interrupted".into();
        let third = serde_json::json!({
            "command_line": ["nccl-bench", "run", "--transports", "p2p-off"],
            "configs": [{"name": "p2p-off"}], "status": "complete",
            "cases": {"total": 1}, "gpu_counts": [4], "sizes": [8], "warnings": [],
        });
        let m3 = merge_manifests(&second, third);
        assert_eq!(m3["launches"].as_array().unwrap().len(), 3);
        assert_eq!(m3["status"], "interrupted");
        assert_eq!(m3["cases"]["total"], 5);
        assert_eq!(m["command_line"][3], "shm-off");
        assert_eq!(m["status"], "complete");
    }
}
