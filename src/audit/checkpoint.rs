//! Signed checkpoints of the chain head. The server holds an Ed25519 key in a file outside
//! the database (created on first start, mode 0600) and signs `(seq, hash, time)` of the head
//! every so many events or seconds. A checkpoint kept where the database's owner cannot reach
//! it proves the trail up to its seq was not recomputed or cut short.

use std::io::Write;
use std::path::Path;

use ed25519_dalek::{Signature, Signer, SigningKey, Verifier as _, VerifyingKey};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::chain::Uncanonical;
use super::chain::{FORMAT, Head};

/// Which keys a verifier takes checkpoints from. A signature proves only that its key's holder
/// made it; whoever can rewrite the database can sign with a key of their own. So verifying
/// trusts the keys it is given (kept outside the database), or without any the kept
/// checkpoint's key, or without that, any key whose signature holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trust {
    /// Public keys (hex, lowercase): the current one and any earlier ones still vouching for
    /// older checkpoints.
    pub keys: Vec<String>,
    /// Fail unless at least one checkpoint is signed with a trusted key (an operator who names
    /// keys expects them to vouch for something; a database stripped of its checkpoints fails).
    pub require_one: bool,
}

impl Trust {
    /// Trust exactly `keys`, and require a checkpoint under one of them.
    pub fn keys(keys: Vec<String>) -> Self {
        Self {
            keys,
            require_one: true,
        }
    }

    /// Whether checkpoint `cp` counts, next to the kept checkpoint `kept` if there is one.
    pub fn admits(&self, cp: &Checkpoint, kept: Option<&Checkpoint>) -> bool {
        if self.keys.is_empty() {
            kept.is_none_or(|k| k.public_key == cp.public_key)
        } else {
            self.keys.contains(&cp.public_key)
        }
    }
}

/// A public key as an operator gives it: 64 hex characters (an Ed25519 key), lowercased as
/// checkpoints carry it; `None` if it is not one.
pub fn public_key_hex(key: &str) -> Option<String> {
    let key = key.trim().to_ascii_lowercase();
    let bytes = hex::decode(&key)
        .ok()
        .and_then(|b| <[u8; 32]>::try_from(b).ok())?;
    VerifyingKey::from_bytes(&bytes).ok().map(|_| key)
}

/// The server's checkpoint signing key. Deliberately not `Debug`.
pub struct CheckpointKey {
    key: SigningKey,
}

/// Why a key file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// Reading or writing the file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a key this server wrote.
    #[error("{0}: not a signing key (64 hex characters expected)")]
    Malformed(String),
}

impl CheckpointKey {
    /// Reads the key at `path`, creating it (mode 0600) if the file does not exist.
    pub fn load_or_create(path: &Path) -> Result<Self, KeyError> {
        load_or_create_key(path).map(|key| Self { key })
    }
}

/// Reads the Ed25519 signing key at `path` (hex), creating it (mode 0600) if the file does not
/// exist. Checkpoints and executor grants each have their own file.
pub fn load_or_create_key(path: &Path) -> Result<SigningKey, KeyError> {
    let shown = path.display().to_string();
    let io = |source| KeyError::Io {
        path: shown.clone(),
        source,
    };
    match std::fs::read_to_string(path) {
        Ok(text) => parse_key(&text).ok_or(KeyError::Malformed(shown)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => match create_key(path) {
            Ok(Some(key)) => Ok(key),
            Ok(None) => Err(KeyError::Malformed(shown)),
            Err(e) => Err(io(e)),
        },
        Err(e) => Err(io(e)),
    }
}

/// Writes a new key beside `path` and links it into place without replacing a file already
/// there: when two processes start at once, both end up with the key that won, never with a
/// half-written file or two different keys. `None` when the file that won is not a key.
fn create_key(path: &Path) -> std::io::Result<Option<SigningKey>> {
    let key = SigningKey::generate(&mut rand::rngs::OsRng);
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let mut file = tempfile::NamedTempFile::new_in(dir)?;
    // NamedTempFile is created mode 0600 on unix.
    writeln!(file, "{}", hex::encode(key.to_bytes()))?;
    file.as_file().sync_all()?;
    match file.persist_noclobber(path) {
        Ok(_) => Ok(Some(key)),
        Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => {
            Ok(parse_key(&std::fs::read_to_string(path)?))
        }
        Err(e) => Err(e.error),
    }
}

/// A key file's text: 64 hex characters, surrounding whitespace ignored.
fn parse_key(text: &str) -> Option<SigningKey> {
    let bytes = hex::decode(text.trim()).ok()?;
    <[u8; 32]>::try_from(bytes)
        .ok()
        .map(|b| SigningKey::from_bytes(&b))
}

impl CheckpointKey {
    /// The public half, hex.
    pub fn public_key(&self) -> String {
        hex::encode(self.key.verifying_key().to_bytes())
    }

    /// Signs the head at time `at` (RFC 3339); an error if the message has no canonical form
    /// (never a signature over something else).
    pub fn sign(&self, head: &Head, at: &str) -> Result<Checkpoint, Uncanonical> {
        let signature = self.key.sign(message(head, at)?.as_bytes());
        Ok(Checkpoint {
            seq: head.seq,
            hash: head.hash.clone(),
            at: at.to_owned(),
            public_key: self.public_key(),
            signature: hex::encode(signature.to_bytes()),
        })
    }
}

/// A signed chain head, as stored, printed by `countersign audit checkpoint` and put into
/// export manifests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// The head's seq.
    pub seq: i64,
    /// The head's hash.
    pub hash: String,
    /// When it was signed (RFC 3339).
    pub at: String,
    /// The signer's Ed25519 public key, hex.
    pub public_key: String,
    /// Ed25519 signature over the canonical `{format, seq, hash, at}`, hex.
    pub signature: String,
}

impl Checkpoint {
    /// Whether the signature holds for this checkpoint's own public key.
    pub fn signature_holds(&self) -> bool {
        let key = hex::decode(&self.public_key)
            .ok()
            .and_then(|b| <[u8; 32]>::try_from(b).ok())
            .and_then(|b| VerifyingKey::from_bytes(&b).ok());
        let signature = hex::decode(&self.signature)
            .ok()
            .and_then(|b| <[u8; 64]>::try_from(b).ok())
            .map(|b| Signature::from_bytes(&b));
        let head = Head {
            seq: self.seq,
            hash: self.hash.clone(),
        };
        match (key, signature) {
            (Some(k), Some(s)) => message(&head, &self.at)
                .is_ok_and(|message| k.verify(message.as_bytes(), &s).is_ok()),
            _ => false,
        }
    }

    /// The head it vouches for.
    pub fn head(&self) -> Head {
        Head {
            seq: self.seq,
            hash: self.hash.clone(),
        }
    }
}

/// What is signed: the canonical JSON of the format, seq, hash and time.
fn message(head: &Head, at: &str) -> Result<String, Uncanonical> {
    let value = json!({"format": FORMAT, "seq": head.seq, "hash": head.hash, "at": at});
    crate::audit::chain::canonical_text(&value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checkpoint_verifies_and_fails_after_any_change() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("audit.key");
        let key = CheckpointKey::load_or_create(&path).expect("create");
        let again = CheckpointKey::load_or_create(&path).expect("load");
        assert_eq!(key.public_key(), again.public_key());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let head = Head {
            seq: 42,
            hash: "ab".repeat(32),
        };
        let cp = key.sign(&head, "2026-11-23T12:00:00Z").expect("canonical");
        assert!(cp.signature_holds());
        let mut moved = cp.clone();
        moved.seq = 43;
        assert!(!moved.signature_holds());
        let mut rehashed = cp;
        rehashed.hash = "cd".repeat(32);
        assert!(!rehashed.signature_holds());
    }

    #[test]
    fn processes_starting_at_once_share_one_key() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("audit.key");
        let keys: Vec<String> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..8)
                .map(|_| {
                    scope.spawn(|| CheckpointKey::load_or_create(&path).map(|k| k.public_key()))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("thread").expect("every caller gets a key"))
                .collect()
        });
        assert!(keys.iter().all(|k| *k == keys[0]), "{keys:?}");
        let leftovers = std::fs::read_dir(dir.path()).expect("read dir").count();
        assert_eq!(leftovers, 1, "no temporary files are left beside the key");
    }
}
