//! What changed between a proposal and its revision: the parameters flattened to JSON paths
//! (`/address/city`), each added, removed or changed path with its value before and after.

use serde_json::{Map, Value};

/// One changed parameter: its path, the value before (`None`: added) and after (`None`:
/// removed), as compact JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// JSON pointer of the parameter.
    pub path: String,
    /// Before.
    pub before: Option<String>,
    /// After.
    pub after: Option<String>,
}

fn flatten(prefix: &str, v: &Value, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, v) in m {
                let key = k.replace('~', "~0").replace('/', "~1");
                flatten(&format!("{prefix}/{key}"), v, out);
            }
        }
        Value::Array(a) if !a.is_empty() => {
            for (i, v) in a.iter().enumerate() {
                flatten(&format!("{prefix}/{i}"), v, out);
            }
        }
        leaf => out.push((prefix.to_owned(), leaf.to_string())),
    }
}

/// The parameters that differ between `before` and `after`, by path, in path order.
pub fn parameter_changes(before: &Map<String, Value>, after: &Map<String, Value>) -> Vec<Change> {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    flatten("", &Value::Object(before.clone()), &mut a);
    flatten("", &Value::Object(after.clone()), &mut b);
    let before: std::collections::BTreeMap<_, _> = a.into_iter().collect();
    let after: std::collections::BTreeMap<_, _> = b.into_iter().collect();
    let mut paths: Vec<&String> = before.keys().chain(after.keys()).collect();
    paths.sort();
    paths.dedup();
    paths
        .into_iter()
        .filter(|p| before.get(*p) != after.get(*p))
        .map(|p| Change {
            path: p.clone(),
            before: before.get(p).cloned(),
            after: after.get(p).cloned(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().cloned().expect("object")
    }

    #[test]
    fn changed_added_and_removed_parameters_by_path() {
        let before =
            map(json!({"email": "a@x", "keep": 1, "addr": {"city": "Oslo"}, "gone": true}));
        let after = map(json!({"email": "b@x", "keep": 1, "addr": {"city": "Bergen"}, "new": [1]}));
        let changes = parameter_changes(&before, &after);
        let shown: Vec<(&str, Option<&str>, Option<&str>)> = changes
            .iter()
            .map(|c| (c.path.as_str(), c.before.as_deref(), c.after.as_deref()))
            .collect();
        assert_eq!(
            shown,
            [
                ("/addr/city", Some("\"Oslo\""), Some("\"Bergen\"")),
                ("/email", Some("\"a@x\""), Some("\"b@x\"")),
                ("/gone", Some("true"), None),
                ("/new/0", None, Some("1")),
            ]
        );
        assert!(parameter_changes(&before, &before).is_empty());
    }
}
