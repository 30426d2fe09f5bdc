//! Standing grants' events: made (with the approval that made it), used (by a proposal it
//! accepted), revoked and expired. The approved parameters and bounds are recorded as keyed
//! hashes, field names as audit-safe names, never their values.

use std::collections::BTreeMap;

use serde::Serialize;
use uuid::Uuid;

use super::payload::Payload;
use crate::audit::safe::{self, ParameterDigest, Salt};
use crate::domain::contract::canonical::Uncanonical;
use crate::domain::record::GrantRecord;
use crate::domain::routing::scan::audit_safe_name;

/// Whose calls of which tool, where: the trail's facets of a grant.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GrantFacets {
    /// The agent it covers.
    pub agent: String,
    /// The tool.
    pub tool: String,
    /// The domain.
    pub domain: String,
}

impl GrantFacets {
    /// The facets of grant `g`.
    pub fn of(g: &GrantRecord) -> Self {
        Self {
            agent: safe::name(&g.agent),
            tool: safe::name(&g.tool),
            domain: safe::name(&g.domain),
        }
    }
}

/// Payload of `grant.made`: a reviewer approved a proposal and let similar calls through.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GrantMade {
    /// The grant.
    #[serde(skip)]
    pub grant_id: Uuid,
    /// Whose calls, of which tool, where.
    #[serde(flatten)]
    pub facets: GrantFacets,
    /// The proposal whose approval made it.
    pub proposal_id: Uuid,
    /// The approved parameters: keys and keyed hashes.
    pub parameters: ParameterDigest,
    /// `exact`, or `similar` when fields are free or bounded.
    pub scope: &'static str,
    /// Fields whose values may differ.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub free: Vec<String>,
    /// Bounded fields and the keyed hash of each bound.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub bounds: BTreeMap<String, String>,
    /// When it ends.
    pub expires_at: Option<String>,
    /// At most this many uses.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_uses: Option<u32>,
}

impl GrantMade {
    /// The event for grant `g`; an error if a value has no canonical form to hash.
    pub fn new(
        salt: &Salt,
        g: &GrantRecord,
        expires_at: Option<String>,
    ) -> Result<Self, Uncanonical> {
        let field = |pointer: &str| audit_safe_name(pointer).to_owned();
        let mut bounds = BTreeMap::new();
        for b in &g.scope.bounds {
            let max =
                serde_json::Number::from_f64(b.max).map_or(serde_json::Value::Null, Into::into);
            bounds.insert(field(&b.field), salt.value(&max)?);
        }
        Ok(Self {
            grant_id: g.id,
            facets: GrantFacets::of(g),
            proposal_id: g.proposal_id,
            parameters: salt.parameters(&g.parameters)?,
            scope: if g.scope.is_exact() {
                "exact"
            } else {
                "similar"
            },
            free: safe::bounded(g.scope.free.iter().map(|f| field(f))),
            bounds,
            expires_at,
            max_uses: g.max_uses,
        })
    }
}

impl Payload for GrantMade {
    fn kind(&self) -> &'static str {
        "grant.made"
    }
    fn subject(&self) -> (&'static str, String) {
        ("grant", self.grant_id.to_string())
    }
    fn change(&self) -> (Option<String>, Option<String>) {
        (None, Some("live".into()))
    }
}

/// Payload of `grant.used`: a proposal inside the grant was accepted under it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GrantUsed {
    /// The grant.
    #[serde(skip)]
    pub grant_id: Uuid,
    /// Whose calls, of which tool, where.
    #[serde(flatten)]
    pub facets: GrantFacets,
    /// The proposal it accepted.
    pub proposal_id: Uuid,
    /// The reviewer who made the grant.
    pub granted_by: String,
    /// Uses so far, this one included.
    pub uses: u32,
    /// Its limit, if it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_uses: Option<u32>,
    /// `live`, or `used_up` after its last use.
    #[serde(skip)]
    pub after: &'static str,
}

impl Payload for GrantUsed {
    fn kind(&self) -> &'static str {
        "grant.used"
    }
    fn subject(&self) -> (&'static str, String) {
        ("grant", self.grant_id.to_string())
    }
    fn change(&self) -> (Option<String>, Option<String>) {
        (Some("live".into()), Some(self.after.into()))
    }
}

/// Payload of `grant.revoked` (by the actor) or `grant.expired` (its time ran out).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GrantEnded {
    /// The grant.
    #[serde(skip)]
    pub grant_id: Uuid,
    /// Whose calls, of which tool, where.
    #[serde(flatten)]
    pub facets: GrantFacets,
    /// `revoked` or `expired`.
    #[serde(skip)]
    pub ended: &'static str,
    /// Uses it had.
    pub uses: u32,
}

impl Payload for GrantEnded {
    fn kind(&self) -> &'static str {
        if self.ended == "revoked" {
            "grant.revoked"
        } else {
            "grant.expired"
        }
    }
    fn subject(&self) -> (&'static str, String) {
        ("grant", self.grant_id.to_string())
    }
    fn change(&self) -> (Option<String>, Option<String>) {
        (Some("live".into()), Some(self.ended.into()))
    }
}
