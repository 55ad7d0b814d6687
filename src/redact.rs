//! Hides credentials in text a person will read (rendered arguments, kept
//! pod logs): every value of the Profile's credentials (keyPair ID and
//! secret, the credential Secret's keys) and of the Secrets an action names
//! is replaced by `<redacted>`. Values shorter than [`MIN_LEN`] characters are
//! left alone: replacing every `1` or `yes` would hide the text, not the
//! secret.

use serde_json::Value;

pub const MIN_LEN: usize = 4;
pub const MASK: &str = "<redacted>";

/// The secret values to hide, longest first (so a secret that contains
/// another is hidden whole).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Redactor {
    secrets: Vec<String>,
}

impl Redactor {
    pub fn new(values: impl IntoIterator<Item = String>) -> Redactor {
        let mut secrets: Vec<String> = values
            .into_iter()
            .filter(|v| v.trim().chars().count() >= MIN_LEN)
            .collect();
        secrets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        secrets.dedup();
        Redactor { secrets }
    }

    /// The credentials in Kanister-shaped template parameters: `.Profile`'s
    /// keyPair and credential Secret, and every Secret under `.Secrets`,
    /// `.Phases.<name>.Secrets`, `.CurrentPhase.Secrets` and `.DeferPhase.Secrets`.
    pub fn from_params(params: &Value) -> Redactor {
        let mut values = Vec::new();
        let cred = params.pointer("/Profile/Credential");
        for f in ["/KeyPair/ID", "/KeyPair/Secret"] {
            if let Some(s) = cred.and_then(|c| c.pointer(f)).and_then(Value::as_str) {
                values.push(s.to_string());
            }
        }
        if let Some(s) = cred.and_then(|c| c.get("Secret")) {
            secret_values(s, &mut values);
        }
        let mut secret_maps: Vec<&Value> = Vec::new();
        secret_maps.extend(params.get("Secrets"));
        for p in ["/CurrentPhase/Secrets", "/DeferPhase/Secrets"] {
            secret_maps.extend(params.pointer(p));
        }
        if let Some(phases) = params.get("Phases").and_then(Value::as_object) {
            secret_maps.extend(phases.values().filter_map(|p| p.get("Secrets")));
        }
        for m in secret_maps.iter().filter_map(|m| m.as_object()) {
            for s in m.values() {
                secret_values(s, &mut values);
            }
        }
        Redactor::new(values)
    }

    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        for s in &self.secrets {
            if out.contains(s.as_str()) {
                out = out.replace(s.as_str(), MASK);
            }
        }
        out
    }

    /// Every string (and map key) of `v` redacted.
    pub fn redact_json(&self, v: &Value) -> Value {
        match v {
            Value::String(s) => Value::String(self.redact(s)),
            Value::Array(a) => Value::Array(a.iter().map(|x| self.redact_json(x)).collect()),
            Value::Object(o) => Value::Object(
                o.iter()
                    .map(|(k, x)| (self.redact(k), self.redact_json(x)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
}

/// The decoded `data` values and the `stringData` values of a Secret as JSON.
fn secret_values(secret: &Value, out: &mut Vec<String>) {
    use base64::Engine;
    for (_, v) in secret
        .get("data")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        if let Some(bytes) = v
            .as_str()
            .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
        {
            out.push(String::from_utf8_lossy(&bytes).into_owned());
        }
    }
    for (_, v) in secret
        .get("stringData")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        out.extend(v.as_str().map(str::to_string));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn profile_credentials_and_named_secrets_are_hidden() {
        use base64::Engine;
        let b = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let params = json!({
            "Profile": {"Credential": {"KeyPair": {"ID": "AKIDEXAMPLE", "Secret": "s3cr3t-key"},
                "Secret": {"data": {"token": b("tok-123456")}}}},
            "Secrets": {"db": {"data": {"password": b("hunter22"), "short": b("no")}}},
            "Phases": {"dump": {"Secrets": {"x": {"stringData": {"k": "phase-secret"}}}}},
        });
        let r = Redactor::from_params(&params);
        let text = "id AKIDEXAMPLE key s3cr3t-key token tok-123456 pw hunter22 no phase-secret";
        assert_eq!(
            r.redact(text),
            "id <redacted> key <redacted> token <redacted> pw <redacted> no <redacted>"
        );
        let v = r.redact_json(&json!({"command": ["--password", "hunter22"], "n": 1}));
        assert_eq!(v, json!({"command": ["--password", "<redacted>"], "n": 1}));
    }

    #[test]
    fn the_longer_secret_is_hidden_whole() {
        let r = Redactor::new(["abcd".to_string(), "abcdefgh".to_string()]);
        assert_eq!(r.redact("x abcdefgh y abcd"), "x <redacted> y <redacted>");
        assert!(Redactor::new(["abc".to_string()]).is_empty());
    }
}
