//! `GET /healthz`: `200` when the database answers, `503` when it does not.

use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::ApiState;
use super::error::ApiError;
use crate::service::Backend;

pub fn router() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(healthz))
}

/// Whether the server and its database answer.
#[utoipa::path(
    get,
    path = "/healthz",
    tag = "contracts",
    responses(
        (status = 200, description = "`{\"status\": \"ok\", \"database\": \"sqlite\"|\"postgres\"}`, and with a gateway `\"gateway\": {\"UPSTREAM\": \"starting\"|\"up\"|\"down\"|\"restarting\"}`", body = super::openapi::JsonSchemaDocument),
        (status = 503, description = "The database does not answer", body = super::openapi::ErrorBody),
    )
)]
async fn healthz(State(state): State<ApiState>) -> Result<Json<Value>, ApiError> {
    state.services.store().ping().await.map_err(|e| {
        tracing::warn!(error = %e, "health check: database not answering");
        ApiError::Unavailable
    })?;
    let database = match state.services.store().backend() {
        Backend::Sqlite => "sqlite",
        Backend::Postgres => "postgres",
    };
    let mut body = json!({ "status": "ok", "database": database });
    if let Some(gateway) = &state.gateway {
        let states: serde_json::Map<String, Value> = gateway
            .states()
            .into_iter()
            .map(|(name, s)| (name, Value::from(s.as_str())))
            .collect();
        body["gateway"] = Value::Object(states);
    }
    Ok(Json(body))
}
