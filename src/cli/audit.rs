//! `countersign audit verify|checkpoint|export`: the compliance officer's commands. Verify
//! exits 0 and prints the count and head when the chain holds; otherwise it exits non-zero and
//! names the first bad sequence number and what is wrong.

use crate::domain::principal::Principal;
use std::path::{Path, PathBuf};

use clap::Subcommand;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::{Database, services};
use crate::audit::checkpoint::{self, Checkpoint, CheckpointKey, Trust};
use crate::config::DEFAULT_AUDIT_KEY;
use crate::service::verify_bundle;

#[derive(Debug, Subcommand)]
pub(crate) enum AuditCommand {
    /// Verify the chain in a database, or an export bundle (no database needed).
    Verify {
        #[command(flatten)]
        db: Database,
        /// Verify this export bundle instead of the database.
        #[arg(long)]
        bundle: Option<PathBuf>,
        /// A checkpoint kept outside the database (JSON from `audit checkpoint`): the trail
        /// must contain it and reach at least its seq.
        #[arg(long)]
        checkpoint: Option<PathBuf>,
        /// A checkpoint public key to trust (hex, the `public_key` of `audit checkpoint`'s
        /// JSON), kept outside the database; repeat it (or separate with commas) for the
        /// server's earlier keys. Every checkpoint must then be signed with one of them, and at
        /// least one must be, so a trail re-signed, or stripped of its checkpoints, by whoever
        /// rewrote the database fails. Without it, a kept checkpoint's key is the one trusted;
        /// without either, any key whose signature holds.
        #[arg(long, env = "COUNTERSIGN_AUDIT_PUBLIC_KEY", value_delimiter = ',')]
        public_key: Vec<String>,
    },
    /// Sign the current head (if it moved) and print the latest signed checkpoint as JSON.
    Checkpoint {
        #[command(flatten)]
        db: Database,
        /// The server's checkpoint key.
        #[arg(long, env = "COUNTERSIGN_AUDIT_KEY", default_value = DEFAULT_AUDIT_KEY)]
        audit_key: PathBuf,
        /// Sign even though the latest checkpoint was signed with another key (the key was
        /// replaced on purpose). Without it, a key that is not the last signer's is refused:
        /// a wrong `--audit-key` path would otherwise create a key and sign with it.
        #[arg(long)]
        new_key: bool,
    },
    /// Export the trail (optionally a time range) as a bundle: events.jsonl, events.csv,
    /// manifest.json.
    Export {
        #[command(flatten)]
        db: Database,
        /// Directory to write (created if missing).
        #[arg(long)]
        out: PathBuf,
        /// Only events at or after this time (RFC 3339).
        #[arg(long, value_parser = parse_time)]
        from: Option<OffsetDateTime>,
        /// Only events at or before this time (RFC 3339).
        #[arg(long, value_parser = parse_time)]
        to: Option<OffsetDateTime>,
    },
}

fn parse_time(s: &str) -> Result<OffsetDateTime, String> {
    OffsetDateTime::parse(s, &Rfc3339).map_err(|e| format!("not an RFC 3339 time: {e}"))
}

fn read_checkpoint(path: Option<&PathBuf>) -> Result<Option<Checkpoint>, String> {
    let Some(path) = path else { return Ok(None) };
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| format!("{}: not a checkpoint: {e}", path.display()))
}

/// A `--public-key` value, checked.
fn public_key_hex(key: &str) -> Result<String, String> {
    checkpoint::public_key_hex(key)
        .ok_or_else(|| "--public-key: 64 hex characters (an Ed25519 public key) expected".into())
}

pub(crate) async fn run(command: AuditCommand) -> Result<(), String> {
    match command {
        AuditCommand::Verify {
            db,
            bundle,
            checkpoint,
            public_key,
        } => {
            let kept = read_checkpoint(checkpoint.as_ref())?;
            let trust = if public_key.is_empty() {
                Trust::default()
            } else {
                let keys = public_key.iter().map(|k| public_key_hex(k));
                Trust::keys(keys.collect::<Result<_, _>>()?)
            };
            match bundle {
                Some(dir) => verify_a_bundle(&dir, kept.as_ref(), &trust),
                None => verify_the_database(&db, kept.as_ref(), trust).await,
            }
        }
        AuditCommand::Checkpoint {
            db,
            audit_key,
            new_key,
        } => checkpoint(&db, &audit_key, new_key).await,
        AuditCommand::Export { db, out, from, to } => {
            let manifest = services(&db.database_url)
                .await?
                .export_trail(&Principal::Operator, &out, from, to)
                .await
                .map_err(|e| e.to_string())?;
            eprintln!(
                "exported {} events (seq {}..{}) to {}",
                manifest.count,
                manifest.first_seq,
                manifest.last_seq,
                out.display()
            );
            Ok(())
        }
    }
}

/// `audit verify --bundle DIR`: no database needed.
fn verify_a_bundle(dir: &Path, kept: Option<&Checkpoint>, trust: &Trust) -> Result<(), String> {
    let (manifest, head) = verify_bundle(dir, kept, trust)
        .map_err(|e| format!("{}: verification failed: {e}", dir.display()))?;
    println!(
        "ok: {} events, seq {}..{}, head {}",
        manifest.count, manifest.first_seq, manifest.last_seq, head.hash
    );
    Ok(())
}

/// `audit verify`: the database's whole chain, in one snapshot.
async fn verify_the_database(
    db: &Database,
    kept: Option<&Checkpoint>,
    trust: Trust,
) -> Result<(), String> {
    let verified = services(&db.database_url)
        .await?
        .with_checkpoint_trust(trust)
        .verify_trail(&Principal::Operator, kept)
        .await
        .map_err(|e| format!("verification failed: {e}"))?;
    println!(
        "ok: {} events, head seq {} hash {}, {} signed checkpoints checked",
        verified.count, verified.head.seq, verified.head.hash, verified.checkpoints
    );
    if verified.chained_from > 1 {
        eprintln!(
            "note: rows 1..{} predate the hash chain and are not covered",
            verified.chained_from - 1
        );
    }
    Ok(())
}

/// `audit checkpoint`: signs the head if it moved (only with the key that signed the latest
/// checkpoint, unless `new_key`) and prints the latest signed checkpoint.
async fn checkpoint(db: &Database, audit_key: &Path, new_key: bool) -> Result<(), String> {
    let key = CheckpointKey::load_or_create(audit_key).map_err(|e| e.to_string())?;
    let services = services(&db.database_url).await?;
    let (last, _) = services
        .latest_checkpoint()
        .await
        .map_err(|e| e.to_string())?;
    if let Some(last) = last
        .as_ref()
        .filter(|c| c.public_key != key.public_key() && !new_key)
    {
        return Err(format!(
            "{}: not the key that signed the latest checkpoint (seq {}, public key {}); \
             give the server's --audit-key, or --new-key if it was replaced on purpose",
            audit_key.display(),
            last.seq,
            last.public_key
        ));
    }
    // A new checkpoint if the head moved since the last one, else the last one.
    let signed = services
        .sign_checkpoint(&Principal::Operator, &key)
        .await
        .map_err(|e| e.to_string())?;
    let latest = signed
        .or(last)
        .ok_or("the trail is empty: nothing to checkpoint yet")?;
    println!(
        "{}",
        serde_json::to_string_pretty(&latest).map_err(|e| e.to_string())?
    );
    Ok(())
}
