//! The queue page's side of the desk: reads the query string into a [`QueueQuery`], asks for a
//! page within the viewer's domains, and shapes rows, filters and page links.

use crate::domain::principal::Principal;
use app::dto::{AppError, QueueFilterView, QueueItem, QueueParams, QueueView, percent_encode};
use time::OffsetDateTime;

use super::{Flagged, internal, keys_only, moment, preview, rollback_words, targets};
use crate::domain::queue::{QueueKey, QueueQuery};
use crate::domain::record::ProposalRecord;
use crate::domain::review::batch;
use crate::service::{Facets, QueuePage, Services};

/// The query, or a notice naming each bad field.
pub fn parse(params: &QueueParams) -> Result<QueueQuery, AppError> {
    QueueQuery::parse(params.pairs()).map_err(|errors| {
        AppError::Invalid(
            errors
                .iter()
                .map(|e| format!("`{}` {}", e.field, e.message))
                .collect::<Vec<_>>()
                .join("; "),
        )
    })
}

/// A page of the queue for a viewer limited to `domains` (`None`: every domain).
pub async fn page(
    services: &Services,
    who: &Principal,
    q: &QueueQuery,
) -> Result<QueueView, AppError> {
    let page = services.queue_page(who, q).await.map_err(internal)?;
    let now = services.now();
    let domains = who.as_person().and_then(|p| p.domains.clone());
    Ok(view(q, page, now, domains, |p| services.step_up_needed(p)))
}

fn view(
    q: &QueueQuery,
    page: QueuePage,
    now: OffsetDateTime,
    domains: Option<Vec<String>>,
    step_up: impl Fn(&ProposalRecord) -> bool,
) -> QueueView {
    let QueuePage {
        items,
        next,
        matching,
        total,
        facets,
        head,
    } = page;
    QueueView {
        items: items
            .into_iter()
            .map(|p| {
                let step_up = step_up(&p);
                item(p, now, step_up)
            })
            .collect(),
        matching,
        total,
        filters: filters(q, &facets),
        sort: q.sort.as_str().to_owned(),
        next: next.map(|key| href(q, Some(key))),
        first: q.after.is_some().then(|| href(q, None)),
        limited_to: domains,
        head,
    }
}

/// The link to this view from `after` (`None`: its first page).
fn href(q: &QueueQuery, after: Option<QueueKey>) -> String {
    let mut pairs = q.pairs();
    if let Some(key) = after {
        pairs.push(("after", key.encode(q.sort)));
    }
    if pairs.is_empty() {
        return "/".to_owned();
    }
    let query: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{k}={}", percent_encode(v)))
        .collect();
    format!("/?{}", query.join("&"))
}

fn filters(q: &QueueQuery, facets: &Facets) -> Vec<QueueFilterView> {
    let f = &q.filter;
    let options = |m: &std::collections::BTreeMap<String, i64>| {
        m.iter().map(|(k, n)| (k.clone(), *n)).collect::<Vec<_>>()
    };
    // Risk reads best highest first; the rest alphabetically.
    let risks = ["high", "medium", "low"]
        .iter()
        .filter_map(|r| facets.risks.get(*r).map(|n| ((*r).to_owned(), *n)))
        .collect();
    let compliance = [("gdpr", facets.gdpr), ("hipaa", facets.hipaa)]
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .map(|(r, n)| (r.to_owned(), n))
        .collect();
    let filter = |name: &str, label: &str, chosen: Option<String>, options| QueueFilterView {
        name: name.to_owned(),
        label: label.to_owned(),
        chosen,
        options,
    };
    vec![
        filter("agent", "Agent", f.agent.clone(), options(&facets.agents)),
        filter(
            "domain",
            "Domain",
            f.domain.clone(),
            options(&facets.domains),
        ),
        filter("risk", "Risk", f.risk.map(|r| r.as_str().to_owned()), risks),
        filter("tool", "Tool", f.tool.clone(), options(&facets.tools)),
        filter(
            "route",
            "Route",
            f.route.map(|r| r.as_str().to_owned()),
            options(&facets.routes),
        ),
        filter(
            "compliance",
            "Regime",
            f.compliance.map(|c| c.as_str().to_owned()),
            compliance,
        ),
    ]
}

/// One row; the agent's text made visible and its hidden characters counted for the flag.
/// `step_up`: approving it needs a passkey (so never in a batch).
pub fn item(p: ProposalRecord, now: OffsetDateTime, step_up: bool) -> QueueItem {
    let c = &p.contract;
    let mut compliance = Vec::new();
    if c.compliance_context.gdpr {
        compliance.push("GDPR".to_owned());
    }
    if c.compliance_context.hipaa {
        compliance.push("HIPAA".to_owned());
    }
    let mut shown = Flagged::default();
    let affected = if c.compliance_context.gdpr || c.compliance_context.hipaa {
        // Personal or health data: the queue names the fields; the values are shown only
        // on the proposal page, to the reviewer who opens it to decide.
        keys_only(&c.parameters, 120)
    } else {
        preview(&c.parameters, 120)
    };
    QueueItem {
        id: p.id.to_string(),
        summary: shown.text(&c.intent.summary),
        tool: shown.text(&format!("{} {}", c.tool.name, c.tool.version)),
        targets: targets(&p).iter().map(|t| shown.text(t)).collect(),
        affected: shown.parameters(&affected, &c.parameters),
        rollback: rollback_words(&p),
        risk: c.risk_level.as_str().into(),
        arrived: moment(p.created_at, now),
        expires: p.expires_at.map(|t| moment(t, now)),
        proposed_by: p.agent.clone(),
        domain: c.domain.clone(),
        route: p.routing.route.as_str().into(),
        compliance,
        hidden: shown.hidden,
        batch_approvable: batch::approvable(
            p.routing.effective_risk,
            c.blast_radius,
            p.routing.required_approvals,
            step_up,
        )
        .is_ok(),
    }
}
