//! The S3 XML documents this client reads and writes, read with `quick-xml`
//! into a small element tree: ListBucketResult, DeleteResult, Error,
//! InitiateMultipartUploadResult; written: Delete, CompleteMultipartUpload.
//!
//! Text is kept as sent (entities decoded, not trimmed): an object key may
//! begin or end with spaces. Namespaces are ignored (S3 uses one default
//! namespace).

use http::StatusCode;
use quick_xml::events::Event;

/// Why an S3 answer is not the document expected; each quotes the start of what came.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum XmlError {
    #[error("not an XML document ({reason} at byte {at}): {snippet}")]
    NotXml {
        reason: String,
        at: u64,
        snippet: String,
    },
    #[error("expected a {root} document, got: {snippet}")]
    Unexpected { root: &'static str, snippet: String },
    #[error("a <Contents> element has no <Key>")]
    ContentsWithoutKey,
    #[error("<IsTruncated> is {0:?}, not true/false")]
    IsTruncated(String),
    #[error("the InitiateMultipartUploadResult has no UploadId")]
    NoUploadId,
}

/// One element: its local name, its text (entities decoded) and children.
#[derive(Debug, Default)]
pub struct Element {
    pub name: String,
    pub text: String,
    pub children: Vec<Element>,
}

impl Element {
    pub fn children<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Element> + 'a {
        self.children.iter().filter(move |c| c.name == name)
    }

    pub fn child(&self, name: &str) -> Option<&Element> {
        self.children.iter().find(|c| c.name == name)
    }

    /// The trimmed text of the first child `name`, if any.
    pub fn child_text(&self, name: &str) -> Option<String> {
        self.child(name).map(|c| c.text.trim().to_string())
    }
}

/// The root element of `xml`, or why it is not an XML document.
pub fn parse(xml: &str) -> Result<Element, XmlError> {
    let mut reader = quick_xml::Reader::from_str(xml);
    reader.config_mut().trim_text(false);
    let mut stack: Vec<Element> = Vec::new();
    let local = |name: &str| match name.split_once(':') {
        Some((_, l)) => l.to_string(),
        None => name.to_string(),
    };
    let bad = |e: &dyn std::fmt::Display, at: u64| XmlError::NotXml {
        reason: e.to_string(),
        at,
        snippet: snippet(xml),
    };
    loop {
        let event = reader
            .read_event()
            .map_err(|e| bad(&e, reader.error_position()))?;
        match event {
            Event::Start(s) => stack.push(Element {
                name: local(s.name().as_ref()),
                ..Element::default()
            }),
            Event::Empty(s) => {
                let e = Element {
                    name: local(s.name().as_ref()),
                    ..Element::default()
                };
                match stack.last_mut() {
                    Some(parent) => parent.children.push(e),
                    None => return Ok(e),
                }
            }
            Event::End(_) => {
                let Some(done) = stack.pop() else {
                    return Err(bad(&"unexpected end tag", reader.buffer_position()));
                };
                match stack.last_mut() {
                    Some(parent) => parent.children.push(done),
                    None => return Ok(done),
                }
            }
            Event::Text(t) => {
                if let Some(e) = stack.last_mut() {
                    e.text.push_str(&t.xml10_content());
                }
            }
            Event::CData(t) => {
                if let Some(e) = stack.last_mut() {
                    e.text.push_str(&t.xml10_content());
                }
            }
            Event::GeneralRef(r) => {
                let decoded = match r.resolve_char_ref() {
                    Ok(Some(c)) => c.to_string(),
                    _ => {
                        let name = r.xml10_content();
                        quick_xml::escape::resolve_predefined_entity(&name)
                            .ok_or_else(|| {
                                bad(
                                    &format!("unknown entity &{name};"),
                                    reader.buffer_position(),
                                )
                            })?
                            .to_string()
                    }
                };
                if let Some(e) = stack.last_mut() {
                    e.text.push_str(&decoded);
                }
            }
            Event::Eof => return Err(bad(&"no root element", reader.buffer_position())),
            Event::Comment(_) | Event::Decl(_) | Event::PI(_) | Event::DocType(_) => {}
        }
    }
}

/// The start of `s`, for messages.
pub fn snippet(s: &str) -> String {
    let s = s.trim();
    if s.len() <= 300 {
        return s.to_string();
    }
    let mut end = 300;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// `xml` parsed, with the root element named `root`.
fn document(xml: &str, root: &'static str) -> Result<Element, XmlError> {
    match parse(xml) {
        Ok(e) if e.name == root => Ok(e),
        _ => Err(XmlError::Unexpected {
            root,
            snippet: snippet(xml),
        }),
    }
}

/// One page of ListObjectsV2.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListPage {
    pub keys: Vec<String>,
    pub is_truncated: bool,
    pub next_continuation_token: Option<String>,
}

/// Parses a `ListBucketResult` document.
pub fn parse_list_page(xml: &str) -> Result<ListPage, XmlError> {
    let doc = document(xml, "ListBucketResult")?;
    let keys = doc
        .children("Contents")
        .map(|c| {
            c.child("Key")
                .map(|k| k.text.clone())
                .ok_or(XmlError::ContentsWithoutKey)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let is_truncated = match doc.child_text("IsTruncated").as_deref() {
        None | Some("false") | Some("") => false,
        Some("true") => true,
        Some(other) => return Err(XmlError::IsTruncated(other.to_string())),
    };
    let next_continuation_token = doc
        .child_text("NextContinuationToken")
        .filter(|t| !t.is_empty());
    Ok(ListPage {
        keys,
        is_truncated,
        next_continuation_token,
    })
}

/// A key DeleteObjects could not delete.
#[derive(Debug, Clone, PartialEq)]
pub struct DeleteFailure {
    pub key: String,
    pub code: String,
    pub message: String,
}

/// The `<Error>` entries of a `DeleteResult` document.
pub fn parse_delete_result(xml: &str) -> Result<Vec<DeleteFailure>, XmlError> {
    let doc = document(xml, "DeleteResult")?;
    Ok(doc
        .children("Error")
        .map(|e| DeleteFailure {
            key: e.child_text("Key").unwrap_or_default(),
            code: e.child_text("Code").unwrap_or_default(),
            message: e.child_text("Message").unwrap_or_default(),
        })
        .collect())
}

/// The `UploadId` of an `InitiateMultipartUploadResult`.
pub fn parse_upload_id(xml: &str) -> Result<String, XmlError> {
    document(xml, "InitiateMultipartUploadResult")?
        .child_text("UploadId")
        .filter(|id| !id.is_empty())
        .ok_or(XmlError::NoUploadId)
}

/// An S3 `<Error>` response.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServiceError {
    pub code: String,
    pub message: String,
    pub bucket: Option<String>,
    pub region: Option<String>,
    pub endpoint: Option<String>,
    pub request_id: Option<String>,
}

/// Decodes an error body; an empty or non-XML body gives a code from the status.
pub fn parse_error(status: StatusCode, body: &str) -> ServiceError {
    let doc = parse(body).ok().filter(|d| d.name == "Error");
    match doc.as_ref().and_then(|d| Some((d, d.child_text("Code")?))) {
        Some((d, code)) if !code.is_empty() => ServiceError {
            code,
            message: d.child_text("Message").unwrap_or_default(),
            bucket: d.child_text("BucketName"),
            region: d.child_text("Region"),
            endpoint: d.child_text("Endpoint"),
            request_id: d.child_text("RequestId"),
        },
        _ => ServiceError {
            code: match status {
                StatusCode::NOT_FOUND => "NotFound".into(),
                StatusCode::FORBIDDEN => "Forbidden".into(),
                StatusCode::METHOD_NOT_ALLOWED => "MethodNotAllowed".into(),
                StatusCode::NOT_IMPLEMENTED => "NotImplemented".into(),
                s => format!("HTTP{}", s.as_u16()),
            },
            message: snippet(body),
            ..ServiceError::default()
        },
    }
}

/// Text for an element: quick-xml's escaping, plus character references for
/// the control characters XML 1.0 cannot carry literally (keys may hold them).
fn escape(s: &str) -> String {
    let escaped = quick_xml::escape::escape(s);
    if !escaped.contains(|c: char| (c as u32) < 0x20 && c != '\t' && c != '\n') {
        return escaped.into_owned();
    }
    escaped
        .chars()
        .map(|c| match c {
            '\t' | '\n' => c.to_string(),
            c if (c as u32) < 0x20 => format!("&#x{:X};", c as u32),
            c => c.to_string(),
        })
        .collect()
}

/// The DeleteObjects request body (quiet mode: only failures come back).
pub fn delete_request_body(keys: &[String]) -> String {
    let mut s =
        String::from(r#"<?xml version="1.0" encoding="UTF-8"?><Delete><Quiet>true</Quiet>"#);
    for k in keys {
        s.push_str("<Object><Key>");
        s.push_str(&escape(k));
        s.push_str("</Key></Object>");
    }
    s.push_str("</Delete>");
    s
}

/// The CompleteMultipartUpload request body.
pub fn complete_request_body(parts: &[(u32, String)]) -> String {
    let mut s = String::from(r#"<?xml version="1.0" encoding="UTF-8"?><CompleteMultipartUpload>"#);
    for (n, etag) in parts {
        s.push_str(&format!(
            "<Part><PartNumber>{n}</PartNumber><ETag>{}</ETag></Part>",
            escape(etag)
        ));
    }
    s.push_str("</CompleteMultipartUpload>");
    s
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// S3's answer to a request on a bucket that does not exist.
    pub const NO_SUCH_BUCKET: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>NoSuchBucket</Code><Message>The specified bucket does not exist</Message>
<BucketName>missing-bucket</BucketName><RequestId>4442587FB7D0A2F9</RequestId></Error>"#;

    #[test]
    fn list_pages_are_parsed_with_entities_and_tokens() {
        let page1 = r#"<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Name>bucket</Name><Prefix>time-log/</Prefix><KeyCount>3</KeyCount><MaxKeys>3</MaxKeys>
  <IsTruncated>true</IsTruncated>
  <NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>
  <Contents><Key>time-log/a &amp; b.txt</Key><LastModified>2026-01-01T00:00:00.000Z</LastModified>
    <ETag>&quot;d41d8cd98f00b204e9800998ecf8427e&quot;</ETag><Size>0</Size><StorageClass>STANDARD</StorageClass></Contents>
  <Contents><Key>time-log/&lt;x&gt;&#233;&#x263A;</Key><Size>1</Size></Contents>
  <Contents>
    <Key>time-log/sub/c</Key><Owner><ID>x</ID></Owner>
  </Contents>
  <Contents><Key> spaced </Key></Contents>
</ListBucketResult>"#;
        let p = parse_list_page(page1).unwrap();
        assert_eq!(
            p.keys,
            vec![
                "time-log/a & b.txt",
                "time-log/<x>é☺",
                "time-log/sub/c",
                " spaced "
            ]
        );
        assert!(p.is_truncated);
        assert_eq!(
            p.next_continuation_token.as_deref(),
            Some("1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=")
        );
        let last = r#"<ListBucketResult><Name>b</Name><KeyCount>1</KeyCount>
            <IsTruncated>false</IsTruncated><Contents><Key>k</Key></Contents></ListBucketResult>"#;
        let p = parse_list_page(last).unwrap();
        assert_eq!(p.keys, vec!["k"]);
        assert!(!p.is_truncated);
        assert_eq!(p.next_continuation_token, None);
        // Empty listing.
        let empty = "<ListBucketResult><Name>b</Name><KeyCount>0</KeyCount><IsTruncated>false</IsTruncated></ListBucketResult>";
        assert_eq!(parse_list_page(empty).unwrap(), ListPage::default());
        // Not a listing, or a broken one.
        assert!(
            parse_list_page("<html>proxy error</html>")
                .unwrap_err()
                .to_string()
                .contains("ListBucketResult")
        );
        assert!(
            parse_list_page(
                "<ListBucketResult><Contents><Size>1</Size></Contents></ListBucketResult>"
            )
            .unwrap_err()
            .to_string()
            .contains("no <Key>")
        );
        assert!(
            parse_list_page(
                "<ListBucketResult><IsTruncated>maybe</IsTruncated></ListBucketResult>"
            )
            .is_err()
        );
    }

    #[test]
    fn elements_do_not_confuse_prefixes_of_names() {
        let x = parse(
            "<r><KeyCount>2</KeyCount><Key a=\"1\">x</Key><Key/><Keys>no</Keys><Key>y</Key></r>",
        )
        .unwrap();
        let keys: Vec<&str> = x.children("Key").map(|k| k.text.as_str()).collect();
        assert_eq!(keys, vec!["x", "", "y"]);
        assert!(parse("a &bogus; b").is_err());
        assert!(parse("<r>&bogus;</r>").is_err());
    }

    #[test]
    fn error_documents_are_decoded() {
        let se = parse_error(StatusCode::NOT_FOUND, NO_SUCH_BUCKET);
        assert_eq!(se.code, "NoSuchBucket");
        assert_eq!(se.message, "The specified bucket does not exist");
        assert_eq!(se.bucket.as_deref(), Some("missing-bucket"));
        assert_eq!(se.request_id.as_deref(), Some("4442587FB7D0A2F9"));
        // No body (HEAD, proxies): the status names it.
        let bare = parse_error(StatusCode::FORBIDDEN, "");
        assert_eq!(bare.code, "Forbidden");
        let html = parse_error(StatusCode::BAD_GATEWAY, "<html>bad gateway</html>");
        assert_eq!(html.code, "HTTP502");
        assert!(html.message.contains("bad gateway"));
    }

    #[test]
    fn delete_bodies_and_results() {
        let body = delete_request_body(&["a&b".into(), "c<d>".into(), "t\u{1}".into()]);
        assert!(body.contains("<Quiet>true</Quiet>"));
        assert!(
            body.contains(
                "<Object><Key>a&amp;b</Key></Object><Object><Key>c&lt;d&gt;</Key></Object>"
            )
        );
        assert!(body.contains("<Key>t&#x1;</Key>"));
        let ok = parse_delete_result("<DeleteResult></DeleteResult>").unwrap();
        assert!(ok.is_empty());
        let failed = parse_delete_result(
            "<DeleteResult><Deleted><Key>x</Key></Deleted><Error><Key>y</Key><Code>AccessDenied</Code><Message>Access Denied</Message></Error></DeleteResult>",
        )
        .unwrap();
        assert_eq!(
            failed,
            vec![DeleteFailure {
                key: "y".into(),
                code: "AccessDenied".into(),
                message: "Access Denied".into()
            }]
        );
        assert!(parse_delete_result("<Error><Code>x</Code></Error>").is_err());
    }
}
