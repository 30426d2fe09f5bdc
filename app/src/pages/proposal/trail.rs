//! Why the proposal is in front of a human (route, rule, blockers — each said once) and its
//! audit trail, a page at a time.

use leptos::prelude::*;

use crate::dto::{AuditView, ProposalView};
use crate::time::When;

/// Why the proposal needs a human: category, risk, approvals, route, rule and blockers.
pub fn why_here(p: &ProposalView) -> impl IntoView + use<> {
    let p = p.clone();
    let approvals = p
        .approvals
        .iter()
        .map(|a| view! { <li>"Approved by " {a.by.clone()} " " <When at=a.at/></li> })
        .collect_view();
    // A proposal accepted under a standing grant links to the grant.
    let rule = match p.rule.strip_prefix("grant:") {
        Some(grant) => view! {
            <a href=format!("/grants#grant-{grant}") data-testid="proposal-grant"><em>{p.rule.clone()}</em></a>
        }
        .into_any(),
        None => view! { <em>{p.rule.clone()}</em> }.into_any(),
    };
    view! {
        <section class="routing" aria-labelledby="routing-h">
            <h2 id="routing-h">"Why it is here"</h2>
            <p>"Category " <strong>{p.category.to_uppercase()}</strong> " · effective risk "
               <strong data-testid="proposal-effective-risk">{p.effective_risk}</strong>
               " · approvals " <strong data-testid="proposal-approvals">{p.approvals.len()} " of " {p.required_approvals}</strong></p>
            <ul>{approvals}</ul>
            {(!p.escalations.is_empty()).then(|| view! {
                <ul class="escalations" data-testid="proposal-escalations">
                    {p.escalations.iter().map(|e| view! {
                        <li>"Escalated to " <strong>{e.to.clone()}</strong> " (tier " {e.tier}
                            ") " <When at=e.at/> ": nobody had decided"</li>
                    }).collect_view()}
                </ul>
            })}
            <p>"Route " <strong data-testid="proposal-route">{p.route}</strong> " by rule " {rule}
               " (policy " <code>{p.policy_version}</code> ")"</p>
            <ul class="blockers" data-testid="proposal-blockers">
                {p.blockers.into_iter().map(|b| view! { <li><code>{b.code}</code> " " {b.message}</li> }).collect_view()}
            </ul>
            <ul class="reasons">{p.reasons.into_iter().map(|r| view! { <li>{r}</li> }).collect_view()}</ul>
        </section>
    }
}

/// What the trail section shows: a page of events and where the others are.
pub struct Trail {
    id: String,
    audit: Vec<AuditView>,
    older: Option<i64>,
    newer: Option<i64>,
    request_hash: String,
    idempotency_key: String,
}

impl Trail {
    /// The trail part of a proposal.
    pub fn of(p: &ProposalView) -> Self {
        Self {
            id: p.id.clone(),
            audit: p.audit.clone(),
            older: p.audit_older,
            newer: p.audit_newer,
            request_hash: p.request_hash.clone(),
            idempotency_key: p.idempotency_key.clone(),
        }
    }
}

/// The proposal's audit trail (the most recent events, newest first, a page at a time), with
/// the request hash and idempotency key.
pub fn trail(t: Trail) -> impl IntoView {
    let base = format!("/proposals/{}", t.id);
    let newest = t.newer.map(|_| {
        view! { <a href=base.clone() data-testid="trail-newest">"← Most recent"</a> }
    });
    let older = t.older.map(|s| {
        let href = format!("{base}?trail_before={s}");
        view! { <a href=href data-testid="trail-older">"Older events →"</a> }
    });
    view! {
        <section class="audit" aria-labelledby="trail-h">
            <h2 id="trail-h">"Audit trail " <small class="muted">"newest first"</small></h2>
            <div class="scroll" tabindex="0" role="region" aria-label="Audit trail of this proposal">
                <table data-testid="proposal-trail">
                    <tbody>
                        {t.audit.into_iter().map(|a| {
                            let glass = a.action == "proposal.break_glass";
                            view! {
                            <tr data-testid="trail-row" class:break-glass=glass><td><When at=a.at/></td><td>{a.actor}</td><td><code>{a.action}</code></td><td>{a.change}</td></tr>
                        }}).collect_view()}
                    </tbody>
                </table>
            </div>
            <p class="pager">{newest}" "{older}</p>
            <p class="hash">"Request hash " <code>{t.request_hash}</code> " · idempotency key " <code>{t.idempotency_key}</code></p>
        </section>
    }
}
