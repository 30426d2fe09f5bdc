//! The pages: sign-in (and the page of an account without a role), the review queue, one proposal, the compliance officer's audit trail,
//! timelines and charts, and the header around them.

mod account;
mod admin;
mod audit;
mod charts;
mod common;
mod grants;
mod insights;
mod login;
mod policy;
mod proposal;
mod queue;
mod runs;
mod timeline;

pub use account::AccountPage;
pub use admin::{AdminGatewayPage, AdminTokensPage, AdminUsersPage, AdminWebhooksPage};
pub use audit::AuditTrailPage;
pub use charts::ChartsPage;
pub use common::{Flash, Header, NotFound, SessionResource, error_view, use_session};
pub use grants::GrantsPage;
pub use insights::InsightsPage;
pub use login::{LoginPage, NoRolePage};
pub use policy::{PolicyChangePage, PolicyPage};
pub use proposal::ProposalPage;
pub use queue::QueuePage;
pub use runs::RunsPage;
pub use timeline::TimelinePage;
