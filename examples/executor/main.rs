//! A small Countersign executor: the lease loop an n8n worker or a script runs, in full.
//!
//! ```sh
//! export COUNTERSIGN_EXECUTOR_TOKEN=...   # countersign token create --executor local --tools 'crm.*'
//! cargo run --example executor -- --url http://127.0.0.1:3000 --out /tmp/ran --tools 'crm.*'
//! ```
//!
//! It pins the server's grant key at start (`GET /api/v1/executor/public-key`), then loops:
//!
//! 1. lease with long-poll (`{"wait": 30, "tools": [...]}`); `204` means nothing yet: lease again;
//! 2. verify the grant *before* doing anything: the Ed25519 signature over the grant's
//!    canonical JSON (RFC 8785) without `signature`, then that the grant names exactly this
//!    command (id, tool, version, request hash, sha256 of the parameters) and has not expired.
//!    A grant that does not verify is reported as a failure with `side_effect: "none"`: nothing
//!    ran;
//! 3. heartbeat, run a harmless local action (write the parameters to `OUT/<command id>.json`,
//!    keyed by the idempotency key so a retry of the same command writes the same file), and
//! 4. report `complete` with the result, or `fail` saying whether anything happened. A
//!    `complete` also asks for the next command (`"next": {"tools": [...]}`): when one is
//!    ready it is answered right there, leased in the report's transaction, and handled from
//!    step 2 (its grant verified like any other); when none is, back to step 1.
//!
//! `--once` handles one command and exits; `--commands N` handles N (the CI test runs it so).
//! The last one's `complete` asks for nothing next: an executor that is about to stop must not
//! take a command it will not run.

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use ed25519_dalek::{Signature, Verifier, VerifyingKey};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

#[derive(Parser)]
struct Args {
    /// Countersign's base URL.
    #[arg(long, default_value = "http://127.0.0.1:3000")]
    url: String,
    /// The executor token.
    #[arg(long, env = "COUNTERSIGN_EXECUTOR_TOKEN", hide_env_values = true)]
    token: String,
    /// Where the harmless action writes.
    #[arg(long)]
    out: PathBuf,
    /// Tools to ask for (globs); default: whatever the token may run.
    #[arg(long, value_delimiter = ',')]
    tools: Vec<String>,
    /// Long-poll wait per lease, seconds (0-60).
    #[arg(long, default_value_t = 30)]
    wait: u64,
    /// Handle one command, then exit.
    #[arg(long)]
    once: bool,
    /// Handle this many commands, then exit (default: run until stopped).
    #[arg(long, conflicts_with = "once")]
    commands: Option<u64>,
}

type Failure = Box<dyn std::error::Error>;

#[tokio::main]
async fn main() -> Result<(), Failure> {
    let args = Args::parse();
    let http = reqwest::Client::new();
    let key = public_key(&http, &args).await?;
    std::fs::create_dir_all(&args.out)?;
    let mut left = if args.once { Some(1) } else { args.commands };
    // A command leased with the last report, handled next without a lease request.
    let mut next: Option<Value> = None;
    while left != Some(0) {
        let leased = match next.take() {
            Some(leased) => {
                let id = leased["command"]["id"].as_str().unwrap_or("?");
                eprintln!("command {id} came with the last report");
                leased
            }
            None => match lease(&http, &args).await? {
                Some(leased) => leased,
                None => continue,
            },
        };
        left = left.map(|n| n - 1);
        // Ask for the next command only if it will be run.
        next = handle(&http, &args, &key, &leased, left != Some(0)).await?;
    }
    Ok(())
}

fn api(args: &Args, path: &str) -> String {
    format!("{}/api/v1/executor{path}", args.url.trim_end_matches('/'))
}

async fn public_key(http: &reqwest::Client, args: &Args) -> Result<VerifyingKey, Failure> {
    let body: Value = http
        .get(api(args, "/public-key"))
        .bearer_auth(&args.token)
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    let hex_key = body["public_key"].as_str().ok_or("no public_key")?;
    let bytes: [u8; 32] = hex::decode(hex_key)?
        .try_into()
        .map_err(|_| "a public key is 32 bytes")?;
    Ok(VerifyingKey::from_bytes(&bytes)?)
}

async fn lease(http: &reqwest::Client, args: &Args) -> Result<Option<Value>, Failure> {
    let mut body = json!({"wait": args.wait});
    if !args.tools.is_empty() {
        body["tools"] = json!(args.tools);
    }
    let response = http
        .post(api(args, "/lease"))
        .bearer_auth(&args.token)
        .json(&body)
        .timeout(Duration::from_secs(args.wait + 10))
        .send()
        .await?
        .error_for_status()?;
    if response.status() == reqwest::StatusCode::NO_CONTENT {
        return Ok(None);
    }
    Ok(Some(response.json().await?))
}

/// Why the grant does not let this command run, if it does not.
fn grant_problem(key: &VerifyingKey, leased: &Value) -> Option<String> {
    let command = &leased["command"];
    let mut claims = leased["grant"].clone();
    let signature = claims
        .as_object_mut()
        .and_then(|c| c.remove("signature"))
        .and_then(|s| s.as_str().map(str::to_owned))?;
    let signature: [u8; 64] = hex::decode(signature).ok()?.try_into().ok()?;
    let message = serde_json_canonicalizer::to_vec(&claims).ok()?;
    if key
        .verify(&message, &Signature::from_bytes(&signature))
        .is_err()
    {
        return Some("the grant's signature does not verify".into());
    }
    let parameters = serde_json_canonicalizer::to_vec(&command["parameters"]).ok()?;
    let expected = [
        ("command_id", command["id"].clone()),
        ("tool", command["tool"]["name"].clone()),
        ("version", command["tool"]["version"].clone()),
        (
            "request_hash_sha256",
            command["request_hash_sha256"].clone(),
        ),
        (
            "parameters_sha256",
            json!(hex::encode(Sha256::digest(parameters))),
        ),
    ];
    for (field, value) in expected {
        if claims[field] != value {
            return Some(format!("the grant's {field} does not match the command"));
        }
    }
    let expires = claims["expires_at"].as_str().unwrap_or_default();
    let expires =
        time::OffsetDateTime::parse(expires, &time::format_description::well_known::Rfc3339)
            .ok()?;
    (expires <= time::OffsetDateTime::now_utc()).then(|| "the grant has expired".into())
}

/// Reports on (or heartbeats) command `id`; the answer.
async fn report(
    http: &reqwest::Client,
    args: &Args,
    id: &str,
    verb: &str,
    body: Value,
) -> Result<Value, Failure> {
    let answer = http
        .post(api(args, &format!("/commands/{id}/{verb}")))
        .bearer_auth(&args.token)
        .json(&body)
        .send()
        .await?
        .error_for_status()?;
    Ok(answer.json().await?)
}

/// Verifies, runs and reports one leased command; answers the next command if `ask_next` and
/// the server leased one with the report.
async fn handle(
    http: &reqwest::Client,
    args: &Args,
    key: &VerifyingKey,
    leased: &Value,
    ask_next: bool,
) -> Result<Option<Value>, Failure> {
    let command = &leased["command"];
    let id = command["id"].as_str().ok_or("no command id")?;
    let token = leased["lease_token"].as_str().ok_or("no lease token")?;
    if let Some(problem) = grant_problem(key, leased) {
        eprintln!("refusing command {id}: {problem}");
        let body =
            json!({"lease_token": token, "error": {"refused": problem}, "side_effect": "none"});
        report(http, args, id, "fail", body).await?;
        return Ok(None);
    }
    report(http, args, id, "heartbeat", json!({"lease_token": token})).await?;
    let file = args.out.join(format!("{id}.json"));
    let action = json!({
        "kind": command["kind"],
        "tool": command["tool"],
        "idempotency_key": command["idempotency_key"],
        "parameters": command["parameters"],
    });
    match std::fs::write(&file, serde_json::to_vec_pretty(&action)?) {
        Ok(()) => {
            eprintln!("ran command {id}: wrote {}", file.display());
            let mut body = json!({"lease_token": token, "result": {"file": file}});
            if ask_next {
                body["next"] = match args.tools.is_empty() {
                    true => json!({}),
                    false => json!({"tools": args.tools}),
                };
            }
            let done = report(http, args, id, "complete", body).await?;
            Ok(Some(done["next"].clone()).filter(|next| next.is_object()))
        }
        Err(e) => {
            // The write failed before any byte reached the file only if it could not be
            // opened; say `possible` otherwise and let a person decide.
            let body = json!({"lease_token": token, "error": {"io": e.to_string()}, "side_effect": "possible"});
            report(http, args, id, "fail", body).await?;
            Ok(None)
        }
    }
}
