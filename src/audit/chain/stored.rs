//! Rows as the database holds them, and the fast way to check one: `details` stays the stored
//! JSON text, and the canonical payload is written in place around it (see the module docs of
//! [`super`]). The facet columns come along, to be checked against their `details` keys.

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use uuid::Uuid;

use super::event::{ChainedEvent, trail_time};
use super::jcs::{Lite, write_str};

/// The facet columns: each holds the string under the `details` key of the same name, or NULL
/// when that key is absent or not a string; except that an agent's own event (an agent is the
/// actor) need not name the agent again: without an `agent` key, its `agent` column holds the
/// actor. Not hashed; [`Verifier::push_stored`] checks them.
pub const FACETS: [&str; 5] = ["agent", "tool", "domain", "risk", "decision"];

/// A facet's value: the string under `name` in `details`, if any, else `name`'s fallback
/// ([`fallback`]). The one rule for what a facet column holds, used where rows are appended
/// and where they are verified.
pub fn facet_of<'v>(
    details: &'v Value,
    name: &str,
    actor_kind: &str,
    actor: &'v str,
) -> Option<&'v str> {
    (details.get(name).and_then(Value::as_str)).or_else(|| fallback(name, actor_kind, actor))
}

/// What facet `name` holds when `details` has no string under it: the actor, for the `agent`
/// facet of an event an agent made; else nothing.
pub fn fallback<'a>(name: &str, actor_kind: &str, actor: &'a str) -> Option<&'a str> {
    (name == "agent" && actor_kind == "agent").then_some(actor)
}

/// A row as the database holds it, owned (see [`RowRef`] for the borrowed view).
#[derive(Debug, Clone, PartialEq)]
pub struct StoredRow {
    /// Position.
    pub seq: i64,
    /// Unique id.
    pub id: Uuid,
    /// When.
    pub at: OffsetDateTime,
    /// `user`, `agent`, `executor` or `system`.
    pub actor_kind: String,
    /// Who.
    pub actor: String,
    /// What.
    pub kind: String,
    /// What kind of thing it happened to.
    pub subject_type: String,
    /// Its id.
    pub subject_id: String,
    /// Status before.
    pub before_status: Option<String>,
    /// Status after.
    pub after_status: Option<String>,
    /// `details` as the stored JSON text, unparsed.
    pub details: String,
    /// The stored hash.
    pub hash: String,
    /// The facet columns, in the order of [`FACETS`].
    pub facets: [Option<String>; 5],
}

impl StoredRow {
    /// The borrowed view [`Verifier::push_stored`] checks.
    pub fn as_ref(&self) -> RowRef<'_> {
        RowRef {
            seq: self.seq,
            id: self.id,
            at: self.at,
            actor_kind: &self.actor_kind,
            actor: &self.actor,
            kind: &self.kind,
            subject_type: &self.subject_type,
            subject_id: &self.subject_id,
            before_status: self.before_status.as_deref(),
            after_status: self.after_status.as_deref(),
            details: &self.details,
            hash: &self.hash,
            facets: self.facets.each_ref().map(Option::as_deref),
        }
    }

    /// The row as exported (its `details` parsed).
    pub fn to_event(&self) -> Result<ChainedEvent, serde_json::Error> {
        Ok(ChainedEvent {
            seq: self.seq,
            id: self.id,
            at: self.at,
            actor_kind: self.actor_kind.clone(),
            actor: self.actor.clone(),
            kind: self.kind.clone(),
            subject_type: self.subject_type.clone(),
            subject_id: self.subject_id.clone(),
            before_status: self.before_status.clone(),
            after_status: self.after_status.clone(),
            details: serde_json::from_str(&self.details)?,
            hash: self.hash.clone(),
        })
    }
}

/// A stored row, borrowed: what [`Verifier::push_stored`] reads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RowRef<'a> {
    /// Position.
    pub seq: i64,
    /// Unique id.
    pub id: Uuid,
    /// When.
    pub at: OffsetDateTime,
    /// `user`, `agent`, `executor` or `system`.
    pub actor_kind: &'a str,
    /// Who.
    pub actor: &'a str,
    /// What.
    pub kind: &'a str,
    /// What kind of thing it happened to.
    pub subject_type: &'a str,
    /// Its id.
    pub subject_id: &'a str,
    /// Status before.
    pub before_status: Option<&'a str>,
    /// Status after.
    pub after_status: Option<&'a str>,
    /// `details` as the stored JSON text.
    pub details: &'a str,
    /// The stored hash.
    pub hash: &'a str,
    /// The facet columns, in the order of [`FACETS`].
    pub facets: [Option<&'a str>; 5],
}

/// The facet keys of a `details` object, as raw JSON (every other key is skipped, but parsed:
/// reading this checks the text is one whole JSON object).
#[derive(Deserialize)]
pub(super) struct FacetKeys<'a> {
    #[serde(borrow)]
    agent: Option<&'a RawValue>,
    #[serde(borrow)]
    tool: Option<&'a RawValue>,
    #[serde(borrow)]
    domain: Option<&'a RawValue>,
    #[serde(borrow)]
    risk: Option<&'a RawValue>,
    #[serde(borrow)]
    decision: Option<&'a RawValue>,
}

impl FacetKeys<'_> {
    /// The first facet column of `row` that is not the copy of its key (or its fallback).
    pub(super) fn first_mismatch(&self, row: &RowRef<'_>) -> Option<&'static str> {
        let keys = [self.agent, self.tool, self.domain, self.risk, self.decision];
        FACETS
            .into_iter()
            .zip(keys)
            .zip(&row.facets)
            .find(|((name, key), column)| {
                let otherwise = fallback(name, row.actor_kind, row.actor);
                !facet_matches(*key, **column, otherwise)
            })
            .map(|((name, _), _)| name)
    }
}

/// Whether a facet column holds the string `key` is (`otherwise` for any other JSON value, or
/// none).
fn facet_matches(key: Option<&RawValue>, column: Option<&str>, otherwise: Option<&str>) -> bool {
    let text = key.map(RawValue::get).filter(|t| t.starts_with('"'));
    match (text, column) {
        (None, column) => column == otherwise,
        (Some(t), Some(c)) => {
            // A string without escapes is its own content between the quotes.
            let inner = &t[1..t.len() - 1];
            if inner.contains('\\') {
                serde_json::from_str::<String>(t).is_ok_and(|s| s == c)
            } else {
                inner == c
            }
        }
        _ => false,
    }
}

/// The first facet column of `row` that is not the copy of its key in the parsed `details`.
pub(super) fn first_facet_mismatch(details: &Lite<'_>, row: &RowRef<'_>) -> Option<&'static str> {
    FACETS
        .into_iter()
        .zip(&row.facets)
        .find(|(name, column)| {
            let expected =
                (details.str_member(name)).or_else(|| fallback(name, row.actor_kind, row.actor));
            expected != **column
        })
        .map(|(name, _)| name)
}

/// Writes the canonical (RFC 8785) payload of `row` into `out`, with `details` (canonical JSON
/// text) as its details: members in key order, strings escaped as RFC 8785 escapes them.
pub(super) fn write_payload(out: &mut Vec<u8>, row: &RowRef<'_>, details: &[u8]) {
    out.clear();
    out.extend_from_slice(b"{\"actor\":");
    write_str(out, row.actor);
    out.extend_from_slice(b",\"actor_kind\":");
    write_str(out, row.actor_kind);
    out.extend_from_slice(b",\"after_status\":");
    json_option(out, row.after_status);
    out.extend_from_slice(b",\"at\":\"");
    let mark = out.len();
    if trail_time(row.at).format_into(out, &Rfc3339).is_err() {
        // As `canonical_payload`: a time RFC 3339 cannot show is an empty string.
        out.truncate(mark);
    }
    out.extend_from_slice(b"\",\"before_status\":");
    json_option(out, row.before_status);
    out.extend_from_slice(b",\"details\":");
    out.extend_from_slice(details);
    out.extend_from_slice(b",\"id\":\"");
    out.extend_from_slice(
        row.id
            .hyphenated()
            .encode_lower(&mut Uuid::encode_buffer())
            .as_bytes(),
    );
    out.extend_from_slice(b"\",\"kind\":");
    write_str(out, row.kind);
    out.extend_from_slice(b",\"subject_id\":");
    write_str(out, row.subject_id);
    out.extend_from_slice(b",\"subject_type\":");
    write_str(out, row.subject_type);
    out.push(b'}');
}

fn json_option(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        Some(s) => write_str(out, s),
        None => out.extend_from_slice(b"null"),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::{ChainError, GENESIS, Head, Verifier};
    use super::*;

    fn chain(n: i64) -> Vec<ChainedEvent> {
        crate::audit::chain::sample_chain(n)
    }

    /// `e` as a database holds it, `details` written by `text`, facets copied by the rule.
    fn stored(e: &ChainedEvent, text: fn(&Value) -> String) -> StoredRow {
        StoredRow {
            seq: e.seq,
            id: e.id,
            at: e.at,
            actor_kind: e.actor_kind.clone(),
            actor: e.actor.clone(),
            kind: e.kind.clone(),
            subject_type: e.subject_type.clone(),
            subject_id: e.subject_id.clone(),
            before_status: e.before_status.clone(),
            after_status: e.after_status.clone(),
            details: text(&e.details),
            hash: e.hash.clone(),
            facets: FACETS
                .map(|f| facet_of(&e.details, f, &e.actor_kind, &e.actor).map(str::to_owned)),
        }
    }

    /// SQLite's text: serde_json's compact form (keys in byte order).
    fn compact(v: &Value) -> String {
        serde_json::to_string(v).expect("json")
    }

    /// PostgreSQL's `jsonb` text: spaces after `:` and `,`, keys by length.
    fn spaced(v: &Value) -> String {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<_> = m.keys().collect();
                keys.sort_by_key(|k| (k.len(), *k));
                let members: Vec<String> = keys
                    .into_iter()
                    .map(|k| format!("{}: {}", compact(&json!(k)), spaced(&m[k])))
                    .collect();
                format!("{{{}}}", members.join(", "))
            }
            Value::Array(a) => {
                let items: Vec<String> = a.iter().map(spaced).collect();
                format!("[{}]", items.join(", "))
            }
            other => compact(other),
        }
    }

    fn verify_stored(rows: &[StoredRow]) -> Result<Head, ChainError> {
        let mut v = Verifier::new(vec![]);
        for r in rows {
            v.push_stored(&r.as_ref())?;
        }
        v.finish()
    }

    /// A chain whose rows carry odd strings, facets, nested details and a non-BMP key.
    fn odd_chain() -> Vec<ChainedEvent> {
        let odd: String = (0u8..=0x7f)
            .map(char::from)
            .chain("é€😀\u{2028}\u{e000}".chars())
            .collect();
        let details = [
            json!({"agent": "a\"b\\c", "tool": "crm.update", "n": 1}),
            json!({"tool": odd, "risk": 3, "x": [1, "two", {"b": null, "a": true}]}),
            json!({"😀": 1, "\u{e000}": 2, "decision": "accept", "domain": null}),
            json!({"score": 1.0, "big": 12345678901234567890u64, "neg": -0.5e-7}),
            json!({}),
        ];
        let mut prev = GENESIS.to_owned();
        let at =
            OffsetDateTime::from_unix_timestamp_nanos(1_795_000_000_123_456_789).expect("time");
        details
            .into_iter()
            .zip(1..)
            .map(|(details, seq)| {
                let mut e = ChainedEvent {
                    seq,
                    id: Uuid::now_v7(),
                    at: trail_time(at),
                    actor_kind: "user".into(),
                    actor: odd.clone(),
                    kind: "proposal.approved".into(),
                    subject_type: "proposal".into(),
                    subject_id: odd.clone(),
                    before_status: Some("pending".into()),
                    after_status: None,
                    details,
                    hash: String::new(),
                };
                e.hash = e.link_hash(&prev).expect("canonical");
                prev = e.hash.clone();
                e
            })
            .collect()
    }

    #[test]
    fn the_payload_written_in_place_is_the_canonical_payload() {
        let mut out = Vec::new();
        for e in odd_chain() {
            let row = stored(&e, compact);
            let details = serde_json_canonicalizer::to_string(&e.details).expect("jcs");
            write_payload(&mut out, &row.as_ref(), details.as_bytes());
            assert_eq!(
                String::from_utf8_lossy(&out),
                e.canonical_payload().expect("canonical")
            );
            // What the hash was defined over: the reference canonicaliser on the whole payload.
            let at = trail_time(e.at).format(&Rfc3339).expect("time");
            let reference = serde_json_canonicalizer::to_string(&json!({
                "id": e.id,
                "at": at,
                "actor_kind": e.actor_kind,
                "actor": e.actor,
                "kind": e.kind,
                "subject_type": e.subject_type,
                "subject_id": e.subject_id,
                "before_status": e.before_status,
                "after_status": e.after_status,
                "details": e.details,
            }))
            .expect("jcs");
            assert_eq!(e.canonical_payload().expect("canonical"), reference);
        }
    }

    #[test]
    fn stored_rows_verify_from_either_database_text() {
        let rows = odd_chain();
        for text in [compact, spaced, |v: &Value| format!(" {} ", compact(v))] {
            let stored: Vec<_> = rows.iter().map(|e| stored(e, text)).collect();
            assert_eq!(verify_stored(&stored).map(|h| h.seq), Ok(5));
        }
    }

    #[test]
    fn a_facet_that_is_not_its_key_is_named() {
        let rows: Vec<_> = odd_chain().iter().map(|e| stored(e, compact)).collect();
        let facet = |seq, facet| Err(ChainError::Facet { seq, facet });
        for (i, name, value) in [
            (0, "tool", Some("crm.delete")),
            (0, "agent", Some("a\"b")),
            (0, "domain", Some("")),
            (1, "risk", Some("3")),
            (2, "decision", None),
            (2, "domain", Some("null")),
        ] {
            let mut changed = rows.clone();
            let at = FACETS.iter().position(|f| *f == name).expect("facet");
            changed[i].facets[at] = value.map(str::to_owned);
            let seq = changed[i].seq;
            assert_eq!(verify_stored(&changed).map(|h| h.seq), facet(seq, name));
            // The same from PostgreSQL's text, which takes the slow path.
            for r in &mut changed {
                r.details = spaced(&serde_json::from_str(&r.details).expect("json"));
            }
            assert_eq!(verify_stored(&changed).map(|h| h.seq), facet(seq, name));
        }
    }

    #[test]
    fn an_agents_own_event_has_its_actor_as_agent_facet() {
        let mut rows = odd_chain();
        // Seq 2 and 3: an agent's own events, one naming no agent, one naming another.
        rows[1].actor_kind = "agent".into();
        rows[1].actor = "agent-7".into();
        rows[2].actor_kind = "agent".into();
        rows[2].actor = "agent-7".into();
        rows[2].details["agent"] = json!("agent-9");
        let mut prev = GENESIS.to_owned();
        for e in &mut rows {
            e.hash = e.link_hash(&prev).expect("canonical");
            prev = e.hash.clone();
        }
        let stored: Vec<_> = rows.iter().map(|e| stored(e, compact)).collect();
        assert_eq!(stored[1].facets[0].as_deref(), Some("agent-7"));
        assert_eq!(stored[2].facets[0].as_deref(), Some("agent-9"));
        assert_eq!(stored[3].facets[0], None, "a person's event names no agent");
        assert_eq!(verify_stored(&stored).map(|h| h.seq), Ok(5));
        let facet = |seq| {
            Err(ChainError::Facet {
                seq,
                facet: "agent",
            })
        };
        for (i, value) in [
            (1, None),
            (1, Some("agent-8")),
            (2, Some("agent-7")),
            (3, Some("x")),
        ] {
            let mut changed = stored.clone();
            changed[i].facets[0] = value.map(str::to_owned);
            let seq = changed[i].seq;
            assert_eq!(verify_stored(&changed).map(|h| h.seq), facet(seq));
            for r in &mut changed {
                r.details = spaced(&serde_json::from_str(&r.details).expect("json"));
            }
            assert_eq!(verify_stored(&changed).map(|h| h.seq), facet(seq));
        }
    }

    #[test]
    fn changed_details_text_is_a_hash_mismatch() {
        let rows: Vec<_> = chain(4).iter().map(|e| stored(e, compact)).collect();
        let id = rows[2].id;
        for text in [
            r#"{"n":4}"#.to_owned(),
            r#"{"n":3,"m":1}"#.to_owned(),
            // Text that would splice members into the payload is not one JSON value.
            format!(r#"{{"n":3}},"id":"{id}""#),
            r#"{"n":3"#.to_owned(),
            "not json".to_owned(),
        ] {
            let mut changed = rows.clone();
            changed[2].details = text;
            assert_eq!(
                verify_stored(&changed),
                Err(ChainError::HashMismatch { seq: 3 })
            );
        }
    }

    #[test]
    fn stored_rows_check_seq_and_checkpoints_as_exported_rows_do() {
        let rows = chain(6);
        let stored_rows: Vec<_> = rows.iter().map(|e| stored(e, compact)).collect();
        let mut gap = stored_rows.clone();
        gap.remove(3);
        assert_eq!(verify_stored(&gap).map_err(|e| e.seq()), Err(4));
        let mut v = Verifier::new(vec![Head {
            seq: 5,
            hash: rows[3].hash.clone(),
        }]);
        let walked: Result<(), ChainError> = stored_rows
            .iter()
            .try_for_each(|r| v.push_stored(&r.as_ref()));
        assert_eq!(walked, Err(ChainError::CheckpointMismatch { seq: 5 }));
    }
}
